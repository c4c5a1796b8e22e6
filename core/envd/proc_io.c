/* envd: the process service's I/O thread. It owns every child's output
 * descriptors (epoll), reaps children (signalfd SIGCHLD), enforces lifetimes
 * (Connect-Timeout-Ms on Start) and fans output out to the streams watching
 * a process, each through its own queue.
 *
 * Back-pressure, never loss: when a watching stream has more than the
 * stream buffer (16 MiB) queued, envd stops reading the process's output
 * (the pipe fills and the writer blocks, as with a slow terminal) until the
 * readers drain to half of it. Output nobody watches is read and dropped,
 * so a process without a client never blocks. A reader that stays stuck
 * for --stream-stall-ms (60 s) while holding the process up is cut off (resource_exhausted,
 * "reattach with Connect") so one dead client cannot stall a process
 * forever.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "prestart.h"
#include "proc_io.h"
#include "state.h"
#include "util/util.h"

#define READ_CHUNK (64u * 1024u)

/* The I/O thread's state: everything this file keeps process-wide. */
static struct {
  int ep;   /* epoll: the output fds, sfd and wake */
  int wake; /* eventfd: a deadline, kill or grave to look at */
  int sfd;  /* signalfd of SIGCHLD */
  pthread_t thread;
  int started;            /* the thread was created */
  volatile int stop;      /* set by envd_pio_stop */
  uint64_t wake_at;       /* when its epoll_wait ends by itself, 0 never (table lock) */
  char tag_sig, tag_wake; /* their addresses tag sfd's and wake's events */
} g_pio = {.ep = -1, .wake = -1, .sfd = -1};

void envd_pio_wake(void) {
  uint64_t one = 1;
  if (g_pio.wake >= 0 && write(g_pio.wake, &one, sizeof one) < 0) { /* full: fine */
  }
}

static int *io_fdp(envd_proc *p, int kind);

/* Stop or resume epoll interest in the process's output. p->lock held. */
static void set_reading(envd_proc *p, int on) {
  if (p->ended) { /* its descriptors are being closed */
    p->throttled = 0;
    return;
  }
  for (int kind = ENVD_OUT_STDOUT; kind <= ENVD_OUT_PTY; kind++) {
    int fd = *io_fdp(p, kind);
    if (fd < 0 || (kind == ENVD_OUT_PTY && p->pty_eof)) continue;
    struct epoll_event e = {.events = on ? EPOLLIN : 0, .data.ptr = &p->io[kind - 1]};
    epoll_ctl(g_pio.ep, EPOLL_CTL_MOD, fd, &e); /* ENOENT once closed: fine */
  }
  p->throttled = !on;
  if (!on) p->throttled_since = asbi_now_ms();
}

/* Resume reading once every reader is at most half full. p->lock held. */
void envd_pio_maybe_resume(envd_proc *p) {
  if (!p->throttled) return;
  for (envd_sub *s = p->subs; s; s = s->next)
    if (!s->overflow && s->queued > g_envd.sub_buffer / 2) return;
  set_reading(p, 1);
  envd_pio_wake();
}

static void fanout(envd_proc *p, int kind, const char *data, size_t n) {
  pthread_mutex_lock(&p->lock);
  int full = 0;
  for (envd_sub *s = p->subs; s; s = s->next) {
    if (s->overflow) continue;
    envd_chunk *c = malloc(sizeof *c + n);
    if (!c) {
      s->overflow = 1;
      envd_ptab_wake_sub(s);
      continue;
    }
    c->next = NULL;
    c->kind = kind;
    c->len = n;
    memcpy(c->data, data, n);
    if (s->tail)
      s->tail->next = c;
    else
      s->head = c;
    s->tail = c;
    s->queued += n;
    if (s->queued > g_envd.sub_buffer) full = 1;
    envd_ptab_wake_sub(s);
  }
  if (full && !p->throttled) set_reading(p, 0);
  pthread_mutex_unlock(&p->lock);
}

static int *io_fdp(envd_proc *p, int kind) {
  return kind == ENVD_OUT_STDOUT ? &p->fd_out : kind == ENVD_OUT_STDERR ? &p->fd_err : &p->fd_pty;
}

static void io_close(envd_proc *p, int kind) {
  /* Under p->lock: set_reading() looks at these fds from stream threads. */
  pthread_mutex_lock(&p->lock);
  int *fdp = io_fdp(p, kind);
  if (*fdp >= 0) {
    epoll_ctl(g_pio.ep, EPOLL_CTL_DEL, *fdp, NULL);
    if (kind == ENVD_OUT_PTY) {
      p->pty_eof = 1; /* the fd stays open for input until the end */
    } else {
      close(*fdp);
      *fdp = -1;
    }
  }
  pthread_mutex_unlock(&p->lock);
}

/* Read what is there. Returns 1 at EOF. */
static int io_read(envd_proc *p, int kind, int budget) {
  static char buf[READ_CHUNK];
  int fd = *io_fdp(p, kind);
  if (fd < 0 || (kind == ENVD_OUT_PTY && p->pty_eof)) return 1;
  for (int i = 0; budget < 0 || i < budget; i++) {
    if (p->throttled && !p->kill_req) return 0; /* a reader is full */
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      fanout(p, kind, buf, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 0;
    io_close(p, kind); /* EOF, or EIO once a pty's slave side is gone */
    return 1;
  }
  return 0;
}

static int outputs_open(const envd_proc *p) {
  return p->fd_out >= 0 || p->fd_err >= 0 || (p->is_pty && !p->pty_eof);
}

/* Table lock held. */
static void maybe_finalize(envd_proc *p) {
  if (p->ended || !p->exited) return;
  if (outputs_open(p)) {
    if (!p->kill_req) return; /* drain to EOF first */
    /* Killed: take what is buffered, then stop waiting for descendants
     * that escaped the process group and still hold the pipes. */
    if (p->fd_out >= 0 && io_read(p, ENVD_OUT_STDOUT, 64) == 0) io_close(p, ENVD_OUT_STDOUT);
    if (p->fd_err >= 0 && io_read(p, ENVD_OUT_STDERR, 64) == 0) io_close(p, ENVD_OUT_STDERR);
    if (p->is_pty && !p->pty_eof && io_read(p, ENVD_OUT_PTY, 64) == 0) io_close(p, ENVD_OUT_PTY);
  }
  p->t_ended = envd_tns(); /* published by retire's lock */
  envd_ptab_retire(p);
}

static void reap_all(void) {
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) break;
    envd_ptab_lock();
    int st = 0;
    pid_t r = waitpid(si.si_pid, &st, WNOHANG);
    if (r == si.si_pid) {
      envd_proc *p = envd_ptab_live();
      for (; p; p = p->next) {
        if (p->pid == r && !p->exited) {
          p->exited = 1;
          p->wstatus = st;
          p->t_exit = envd_tns();
          /* Usually the pipes are at EOF already: see it now rather than
           * on the next epoll round. */
          if (p->fd_out >= 0) io_read(p, ENVD_OUT_STDOUT, 16);
          if (p->fd_err >= 0) io_read(p, ENVD_OUT_STDERR, 16);
          if (p->is_pty && !p->pty_eof) io_read(p, ENVD_OUT_PTY, 16);
          maybe_finalize(p);
          break;
        }
      }
      if (!p) envd_pre_reaped(r); /* the pre-started shell, or a failed spawn */
    }
    envd_ptab_unlock();
  }
}

/* Table lock held. Returns ms until the next deadline (-1 none). */
static int timers(void) {
  uint64_t now = asbi_now_ms();
  uint64_t next = 0;
  for (envd_proc *p = envd_ptab_live(); p; p = p->next) {
    pthread_mutex_lock(&p->lock);
    if (p->throttled && now >= p->throttled_since + g_envd.stall_ms) {
      /* Cut off the readers that still hold the process up. */
      for (envd_sub *s = p->subs; s; s = s->next) {
        if (s->overflow || s->queued <= g_envd.sub_buffer / 2) continue;
        envd_ptab_free_chunks(s->head);
        s->head = s->tail = NULL;
        s->queued = 0;
        s->overflow = 1;
        envd_ptab_wake_sub(s);
      }
      envd_pio_maybe_resume(p);
    } else if (p->throttled) {
      uint64_t at = p->throttled_since + g_envd.stall_ms;
      if (!next || at < next) next = at;
    }
    pthread_mutex_unlock(&p->lock);
    if (p->deadline_ms && !p->timed_out) {
      if (now >= p->deadline_ms) {
        p->timed_out = 1;
        p->kill_req = 1;
        kill(-p->pid, SIGKILL);
        kill(p->pid, SIGKILL);
      } else if (!next || p->deadline_ms < next) {
        next = p->deadline_ms;
      }
    }
    if (p->exited && p->kill_req && !p->ended) {
      /* handled below, after the loop (finalize edits the list) */
    }
  }
  for (envd_proc *p = envd_ptab_live(), *n; p; p = n) {
    n = p->next;
    if (p->exited && p->kill_req && !p->ended) maybe_finalize(p);
  }
  uint64_t kept = envd_ptab_expire(now);
  if (kept && (!next || kept < next)) next = kept;
  g_pio.wake_at = 0;
  if (!next) return -1;
  uint64_t d = next > now ? next - now : 0;
  int to = d > 60000 ? 60000 : (int)d + 1;
  g_pio.wake_at = now + (uint64_t)to;
  return to;
}

int envd_pio_deadline_wakes(uint64_t deadline_ms) {
  return !g_pio.wake_at || deadline_ms < g_pio.wake_at;
}

static void *io_main(void *arg) {
  (void)arg;
  struct epoll_event ev[64];
  for (;;) {
    envd_ptab_free_grave(); /* no event of the last round points anywhere now */
    envd_ptab_lock();
    int to = timers();
    envd_ptab_unlock();
    if (g_pio.stop) break;
    int n = epoll_wait(g_pio.ep, ev, 64, to);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; i++) {
      void *ptr = ev[i].data.ptr;
      if (ptr == &g_pio.tag_sig) {
        struct signalfd_siginfo si;
        while (read(g_pio.sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        }
        reap_all();
      } else if (ptr == &g_pio.tag_wake) {
        uint64_t v;
        if (read(g_pio.wake, &v, sizeof v) < 0) { /* spurious */
        }
      } else {
        envd_ioref *io = ptr;
        envd_ptab_lock();
        if (io_read(io->p, io->kind, 16)) maybe_finalize(io->p);
        envd_ptab_unlock();
      }
    }
  }
  return NULL;
}

int envd_pio_start(void) {
  sigset_t ss;
  sigemptyset(&ss);
  sigaddset(&ss, SIGCHLD);
  g_pio.sfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
  g_pio.ep = epoll_create1(EPOLL_CLOEXEC);
  g_pio.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (g_pio.sfd < 0 || g_pio.ep < 0 || g_pio.wake < 0) return -1;
  struct epoll_event e = {.events = EPOLLIN, .data.ptr = &g_pio.tag_sig};
  epoll_ctl(g_pio.ep, EPOLL_CTL_ADD, g_pio.sfd, &e);
  e.data.ptr = &g_pio.tag_wake;
  epoll_ctl(g_pio.ep, EPOLL_CTL_ADD, g_pio.wake, &e);
  pthread_attr_t a;
  pthread_attr_init(&a);
#if !defined(__SANITIZE_ADDRESS__)
  pthread_attr_setstacksize(&a, 256u << 10);
#endif
  envd_ptab_attach(g_pio.wake);
  int rc = pthread_create(&g_pio.thread, &a, io_main, NULL);
  pthread_attr_destroy(&a);
  if (rc != 0) {
    envd_ptab_detach();
    return -1;
  }
  g_pio.started = 1;
  return 0;
}

void envd_pio_stop(void) {
  if (g_pio.started) {
    /* Let the I/O thread reap and finalize what just died. */
    for (int i = 0; i < 100; i++) {
      envd_ptab_lock();
      int live = envd_ptab_live() != NULL;
      envd_ptab_unlock();
      if (!live) break;
      usleep(10000);
    }
    g_pio.stop = 1;
    envd_pio_wake();
    pthread_join(g_pio.thread, NULL);
    g_pio.started = 0;
  }
  envd_ptab_detach();
  if (g_pio.ep >= 0) close(g_pio.ep);
  if (g_pio.wake >= 0) close(g_pio.wake);
  if (g_pio.sfd >= 0) close(g_pio.sfd);
  g_pio.ep = g_pio.wake = g_pio.sfd = -1;
}

static void reg_fd(envd_proc *p, int kind, int fd) {
  p->io[kind - 1] = (envd_ioref){p, kind};
  struct epoll_event e = {.events = EPOLLIN, .data.ptr = &p->io[kind - 1]};
  epoll_ctl(g_pio.ep, EPOLL_CTL_ADD, fd, &e);
}

void envd_pio_watch(envd_proc *p) {
  if (p->is_pty) {
    reg_fd(p, ENVD_OUT_PTY, p->fd_pty);
  } else {
    reg_fd(p, ENVD_OUT_STDOUT, p->fd_out);
    reg_fd(p, ENVD_OUT_STDERR, p->fd_err);
  }
}
