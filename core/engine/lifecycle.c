/* Lifecycle: one thread waits on every sandbox's init (pidfd) and on the
 * nearest deadline; it kills (or pauses, with autoPause) sandboxes whose
 * lifetime ran out, records sandboxes that died on their own, and samples
 * metrics every few seconds.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lifecycle.h"
#include "registry.h"
#include "sbxnet.h"
#include "swap.h"
#include "util/log.h"
#include "util/util.h"

#define SAMPLE_EVERY_MS 5000

void lifecycle_kick(engine *e) {
  if (e->lc_kick_fd >= 0) {
    uint64_t one = 1;
    if (write(e->lc_kick_fd, &one, sizeof one) < 0) { /* full: already kicked */
    }
  }
}

void lifecycle_sample(engine *e, sbx *s) {
  asbe_stats st;
  pthread_mutex_lock(&s->mu);
  if (s->state != SBX_RUNNING || !s->iso || asbe_sandbox_stats(s->iso, &st) != 0) {
    pthread_mutex_unlock(&s->mu);
    return;
  }
  int64_t now = asbi_unix_ms();
  double pct = 0;
  if (s->last_cpu_ts_ms && now > s->last_cpu_ts_ms && st.cpu_usage_ns >= s->last_cpu_ns) {
    double wall_ns = (double)(now - s->last_cpu_ts_ms) * 1e6;
    pct = 100.0 * (double)(st.cpu_usage_ns - s->last_cpu_ns) /
          (wall_ns * (s->cpu_count > 0 ? s->cpu_count : 1));
    if (pct > 100) pct = 100;
  }
  s->last_cpu_ns = st.cpu_usage_ns;
  s->last_cpu_ts_ms = now;
  sbx_metric *m = &s->ring[s->ring_at];
  m->ts = now / 1000;
  m->cpu_pct = pct;
  m->mem_used = st.memory_bytes;
  m->mem_total = st.memory_limit_bytes ? st.memory_limit_bytes : (uint64_t)s->memory_mb << 20;
  m->mem_cache = 0;
  m->disk_used = st.disk_used_bytes;
  m->disk_total = st.disk_total_bytes;
  sbxnet_counters(e, s, &m->net_bytes_out, &m->net_bytes_in);
  s->ring_at = (s->ring_at + 1) % ENGINE_METRICS_RING;
  if (s->ring_n < ENGINE_METRICS_RING) s->ring_n++;
  if (st.oom_kills > s->oom_kills) {
    asbi_log("sandbox %s: %llu OOM kill(s) in its workload", s->id,
             (unsigned long long)(st.oom_kills - s->oom_kills));
    s->oom_kills = st.oom_kills;
  }
  pthread_mutex_unlock(&s->mu);
}

void lifecycle_kill(engine *e, sbx *s, const char *reason) {
  /* not while a resume boots it (the sandbox it makes would outlive the
   * kill); a boot takes seconds, and nothing waits on a kill meanwhile */
  pthread_mutex_lock(&s->boot_mu);
  pthread_mutex_lock(&s->mu);
  if (s->state != SBX_DEAD) {
    s->state = SBX_DEAD;
    snprintf(s->end_reason, sizeof s->end_reason, "%s", reason);
    sbxnet_detach(e, s, 1); /* its rules go before it does */
    if (s->iso)
      asbe_sandbox_kill(s->iso, 1); /* a paused one's dead handle removes what it kept */
    else if (s->paused_nomem && asbe_paused_remove(e->iso, s->id))
      asbi_log("sandbox %s: %s", s->id, asbe_errmsg());
    asbi_log("sandbox %s: ended (%s)", s->id, reason);
  }
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_unlock(&s->boot_mu);
  reg_remove(e, s, reason);
}

/* Its pooled upstream connections: a stopped sandbox's are dead. */
static void drop_idle(sbx *s) {
  while (s->idle) {
    upstream *u = s->idle;
    s->idle = u->next;
    close(u->fd);
    free(u);
  }
}

/* --pause-swap: the frozen sandbox's memory out to the engine's swap file
 * (under s->mu, taking about as long as writing it to the disk: the pause
 * returns once it is out). What does not fit stays in RAM; the sandbox is
 * paused either way. */
static void swap_out(engine *e, sbx *s) {
  asbe_stats st;
  memset(&st, 0, sizeof st);
  int64_t t0 = asbi_unix_ms();
  if (asbe_sandbox_stats(s->iso, &st) == 0) s->swap_mem_before = st.memory_bytes;
  uint64_t room = swap_free_bytes(e);
  if (room < st.anon_bytes)
    asbi_log("sandbox %s: %llu MiB to swap out, %llu MiB free in %s: the rest stays in RAM", s->id,
             (unsigned long long)(st.anon_bytes >> 20), (unsigned long long)(room >> 20),
             e->swap_path);
  uint64_t moved = 0;
  if (asbe_sandbox_swap_out(s->iso, &moved))
    asbi_log("sandbox %s: swap out: %s", s->id, asbe_errmsg());
  s->swap_moved = moved;
  asbe_stats after;
  if (asbe_sandbox_stats(s->iso, &after) == 0)
    asbi_log("sandbox %s: %llu MiB swapped out in %lld ms; resident %llu -> %llu MiB", s->id,
             (unsigned long long)(moved >> 20), (long long)(asbi_unix_ms() - t0),
             (unsigned long long)(s->swap_mem_before >> 20),
             (unsigned long long)(after.memory_bytes >> 20));
}

/* Its pooled upstream connections ended and their other ends closed: a
 * shutdown of the write side, then each read to its end (the server in
 * the sandbox closes on the EOF; its socket, made in the engine's netns
 * by our connect, is one criu cannot dump), at most ~5 s in all; then
 * closed. How many there were. */
static int drop_idle_waited(sbx *s) {
  int n = 0;
  int64_t end = asbi_unix_ms() + 5000;
  for (upstream *u = s->idle; u; u = u->next, n++) shutdown(u->fd, SHUT_WR);
  while (s->idle) {
    upstream *u = s->idle;
    s->idle = u->next;
    char buf[4096];
    for (;;) {
      int64_t left = end - asbi_unix_ms();
      struct pollfd pf = {.fd = u->fd, .events = POLLIN};
      if (left <= 0 || poll(&pf, 1, (int)left) <= 0) break;
      ssize_t r = read(u->fd, buf, sizeof buf);
      if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) break;
    }
    close(u->fd);
    free(u);
  }
  return n;
}

int lifecycle_unlink_for_dump(engine *e, sbx *s, int *idle) {
  sbxnet_detach(e, s, 0);
  if (idle)
    *idle = drop_idle_waited(s);
  else
    drop_idle(s);
  return reg_shut_busy(s);
}

/* Under s->mu: a sandbox whose pause failed gets its link back, with its
 * policy (applied without s->mu, as sbxnet_apply wants). */
void lifecycle_relink(engine *e, sbx *s) {
  char why[512];
  if (sbxnet_attach(e, s, why, sizeof why) == 0) {
    pthread_mutex_unlock(&s->mu);
    sbxnet_apply(e, s, NULL, why, sizeof why);
    pthread_mutex_lock(&s->mu);
  }
}

/* auto: an autoPause; a failed checkpoint then freezes it instead (its
 * lifetime is over: left running, it would be paused again at once). */
static int pause_impl(engine *e, sbx *s, int memory, int autop) {
  pthread_mutex_lock(&s->mu);
  int rc, frozen_instead = 0;
  if (s->state == SBX_PAUSED) {
    rc = -EALREADY;
  } else if (s->state != SBX_RUNNING) {
    rc = -ESRCH;
  } else if (memory && e->criu_path) {
    /* --pause-criu: its processes and memory to its disk. Its link goes
     * first (criu restores no veth: a new one is attached at resume), and
     * the engine's connections to envd (criu cannot dump a socket whose
     * peer is in the engine): the pooled ones, and those of requests in
     * flight (an open stream: a command's output, a pty, a file watch;
     * its caller sees it end, the process goes on). Their other ends
     * close as the sandbox sees them shut, which may be just after criu
     * looked: then criu's dump is tried again, a few times. A failed
     * dump leaves it running as it was. */
    int64_t t0 = asbi_unix_ms();
    int shut = lifecycle_unlink_for_dump(e, s, NULL);
    for (int again = 0;; again++) {
      rc = asbe_sandbox_checkpoint(s->iso, e->criu_path);
      if (rc == 0 || !shut || again == 3 || !asbe_sandbox_alive(s->iso)) break;
      asbi_log("sandbox %s: checkpoint (%d open streams shut): %s; trying again", s->id, shut,
               asbe_errmsg());
      struct timespec ts = {0, 100000000L * (again + 1)};
      nanosleep(&ts, NULL);
    }
    if (rc == 0) {
      s->state = SBX_PAUSED;
      s->paused_nomem = 1;
      s->paused_ckpt = 1;
      asbi_log("sandbox %s: checkpointed in %lld ms", s->id, (long long)(asbi_unix_ms() - t0));
    } else {
      asbi_log("sandbox %s: checkpoint: %s", s->id, asbe_errmsg());
      if (asbe_sandbox_alive(s->iso)) lifecycle_relink(e, s);
      if (autop && asbe_sandbox_alive(s->iso) && s->state == SBX_RUNNING &&
          (rc = asbe_sandbox_freeze(s->iso)) == 0) {
        s->state = SBX_PAUSED;
        s->paused_nomem = 0;
        frozen_instead = 1;
        asbi_log("sandbox %s: paused by a freeze instead (its memory stays in RAM)", s->id);
      }
    }
  } else if (memory) {
    if ((rc = asbe_sandbox_freeze(s->iso)) == 0) {
      s->state = SBX_PAUSED;
      s->paused_nomem = 0;
      s->swap_moved = s->swap_mem_before = 0;
      if (e->swap_path) swap_out(e, s);
    }
  } else {
    /* Without memory: every process goes, the writable layer (its files)
     * and uid slot stay; resume boots it again. Its network link goes with
     * its netns; the router refuses it from here. */
    sbxnet_detach(e, s, 1);
    drop_idle(s);
    if ((rc = asbe_sandbox_stop(s->iso)) == 0 || asbe_sandbox_alive(s->iso) == 0) {
      if (rc) asbi_log("sandbox %s: stop: %s", s->id, asbe_errmsg());
      rc = 0;
      s->state = SBX_PAUSED;
      s->paused_nomem = 1;
      s->paused_ckpt = 0;
      s->codei_started = 0;
    } else {
      lifecycle_relink(e, s); /* still running: as it was */
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (rc == 0) {
    reg_save(e, s);
    asbi_log("sandbox %s: paused (%s)", s->id,
             !memory                           ? "files only"
             : e->criu_path && !frozen_instead ? "memory checkpointed to disk"
                                               : "memory kept");
  }
  return rc;
}

int lifecycle_resume(engine *e, sbx *s) {
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  if (s->state == SBX_PAUSED && s->paused_nomem) {
    rc = -EOPNOTSUPP;
  } else if (s->state == SBX_PAUSED) {
    /* --pause-swap: no swapping from before it runs; what is out faults
     * back in as it is touched */
    if (e->swap_path && asbe_sandbox_swap_block(s->iso))
      asbi_log("sandbox %s: %s", s->id, asbe_errmsg());
    /* --pause-swap-prefetch: the reads start before the thaw; the first
     * command then waits for them, a process reading all of its memory
     * waits less */
    if (e->swap_path && e->swap_prefetch && asbe_sandbox_swap_prefetch(s->iso))
      asbi_log("sandbox %s: prefetch: %s", s->id, asbe_errmsg());
    if ((rc = asbe_sandbox_thaw(s->iso)) == 0) s->state = SBX_RUNNING;
  } else if (s->state != SBX_RUNNING) {
    rc = -ESRCH;
  }
  pthread_mutex_unlock(&s->mu);
  if (rc == 0) {
    reg_save(e, s);
    lifecycle_kick(e);
  }
  return rc;
}

int lifecycle_pause(engine *e, sbx *s, int memory) {
  return pause_impl(e, s, memory, 0);
}

static void *loop(void *arg) {
  engine *e = arg;
  int64_t next_sample = asbi_unix_ms() + SAMPLE_EVERY_MS;
  for (;;) {
    pthread_mutex_lock(&e->mu);
    int stopping = e->stopping;
    pthread_mutex_unlock(&e->mu);
    if (stopping) break;
    size_t n = 0;
    sbx **v = reg_list(e, &n);
    if (!v) {
      usleep(100000);
      continue;
    }
    int64_t now = asbi_unix_ms();
    int64_t wake = next_sample;
    /* Deadlines and deaths. */
    for (size_t i = 0; i < n; i++) {
      sbx *s = v[i];
      pthread_mutex_lock(&s->mu);
      sbx_state st = s->state;
      int64_t end = s->end_ms;
      int alive = s->iso && asbe_sandbox_alive(s->iso);
      int autop = s->auto_pause, apmem = s->auto_pause_memory, nomem = s->paused_nomem;
      pthread_mutex_unlock(&s->mu);
      if (st == SBX_DEAD || (st == SBX_PAUSED && nomem)) continue; /* no process to watch */
      if (!alive) {
        asbe_stats stats;
        int oom = s->iso && asbe_sandbox_stats(s->iso, &stats) == 0 && stats.agent_oom_kills > 0;
        lifecycle_kill(e, s, oom ? "oom" : "crashed");
        continue;
      }
      if (st == SBX_RUNNING && end && now >= end) {
        if (autop) {
          asbi_log("sandbox %s: lifetime over, pausing (autoPause)", s->id);
          pause_impl(e, s, apmem, 1);
        } else {
          lifecycle_kill(e, s, "timeout");
        }
        continue;
      }
      if (st == SBX_RUNNING && end && end < wake) wake = end;
    }
    if (now >= next_sample) {
      for (size_t i = 0; i < n; i++) lifecycle_sample(e, v[i]);
      next_sample = now + SAMPLE_EVERY_MS;
      if (next_sample < wake) wake = next_sample;
    }
    /* Wait for a death (pidfd readable), a kick, or the next deadline. */
    struct pollfd *fds = calloc(n + 1, sizeof *fds);
    size_t nf = 0;
    if (fds) {
      fds[nf].fd = e->lc_kick_fd;
      fds[nf++].events = POLLIN;
      for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&v[i]->mu);
        if (v[i]->state != SBX_DEAD && v[i]->iso && !v[i]->paused_nomem) {
          fds[nf].fd = asbe_sandbox_pidfd(v[i]->iso);
          fds[nf++].events = POLLIN;
        }
        pthread_mutex_unlock(&v[i]->mu);
      }
    }
    reg_put_all(e, v, n);
    int64_t ms = wake - asbi_unix_ms();
    if (ms < 0) ms = 0;
    if (ms > SAMPLE_EVERY_MS) ms = SAMPLE_EVERY_MS;
    if (fds) {
      poll(fds, nf, (int)ms + 1);
      if (fds[0].revents & POLLIN) {
        uint64_t x;
        if (read(e->lc_kick_fd, &x, sizeof x) < 0) { /* nothing to drain */
        }
      }
      free(fds);
    } else {
      usleep(100000);
    }
  }
  return NULL;
}

int lifecycle_start(engine *e) {
  e->lc_kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (e->lc_kick_fd < 0) return -errno;
  int rc = pthread_create(&e->lc_thread, NULL, loop, e);
  if (rc) {
    close(e->lc_kick_fd);
    e->lc_kick_fd = -1;
  }
  return rc ? -rc : 0;
}

void lifecycle_stop(engine *e) {
  pthread_mutex_lock(&e->mu);
  e->stopping = 1;
  pthread_mutex_unlock(&e->mu);
  lifecycle_kick(e);
  pthread_join(e->lc_thread, NULL);
  close(e->lc_kick_fd);
  e->lc_kick_fd = -1;
}
