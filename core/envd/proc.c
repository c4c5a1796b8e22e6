/* envd: the process service (process.Process). One I/O thread owns every
 * child's output descriptors (epoll), reaps children (signalfd SIGCHLD),
 * enforces lifetimes (Connect-Timeout-Ms on Start) and fans output out to
 * the streams watching a process, each through its own queue.
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
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "envd.h"
#include "proto/connect.h"
#include "proto/pjson.h"
#include "spawn.h"
#include "util/base64.h"
#include "util/util.h"

#define RETAIN_MS 30000u      /* E2B keeps an ended process 30 s for Connect */
#define READ_CHUNK (64u * 1024u)
#define EVENT_RAW_MAX (1u << 20) /* bytes of output coalesced in one event */

enum { K_STDOUT = 1, K_STDERR = 2, K_PTY = 3 };

typedef struct chunk {
  struct chunk *next;
  int kind;
  size_t len;
  char data[];
} chunk;

typedef struct proc proc;

typedef struct sub {
  struct sub *next;
  int wake; /* eventfd */
  chunk *head, *tail;
  size_t queued;
  int overflow;
} sub;

typedef struct ioref {
  proc *p;
  int kind;
} ioref;

struct proc {
  int refs; /* atomic */
  proc *next;
  pid_t pid;
  char *tag;
  cJSON *config;
  int is_pty;
  int fd_out, fd_err, fd_pty; /* owned by the I/O thread */
  int pty_eof;
  int fd_in;                  /* guarded by in_lock (also the pty writes) */
  int pty_w;                  /* pty fd for writes/resizes, under in_lock */
  pthread_mutex_t in_lock;
  pthread_mutex_t lock; /* subs, ended and end info */
  sub *subs;
  ioref io[3];
  int exited, wstatus;
  int kill_req;
  int timed_out;
  int throttled;            /* output not read: a reader is full (under lock) */
  uint64_t throttled_since;
  int ended;
  uint64_t deadline_ms; /* lifetime, 0 = none */
  uint64_t retain_until;
  uint64_t oom_before;
  /* end info */
  int exit_code;
  int exited_normally;
  char status[96];
  char error[128];
};

static pthread_mutex_t g_tab = PTHREAD_MUTEX_INITIALIZER;
static proc *g_live, *g_retained;
static int g_ep = -1, g_wake = -1, g_sfd = -1;
static pthread_t g_io;
static volatile int g_stop;
static int g_tag_sig, g_tag_wake;

static void proc_ref(proc *p) { __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED); }

/* Procs whose last reference went while the I/O thread runs: it frees them
 * between epoll rounds, never during one, because the batch it is working
 * through may still hold events pointing at them (a process reaped and
 * retained early in a batch, then dropped by a Start in another thread
 * whose child got the same pid, while a stale pipe event for it waited
 * later in the batch: a use after free under ASan in envd.stress). */
static pthread_mutex_t g_grave_mu = PTHREAD_MUTEX_INITIALIZER;
static proc *g_grave;
static int g_io_running; /* atomic: the I/O thread exists (set before it starts) */

static void proc_free(proc *p);
static void wake_io(void);

static void proc_unref(proc *p) {
  if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (__atomic_load_n(&g_io_running, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&g_grave_mu);
    p->next = g_grave;
    g_grave = p;
    pthread_mutex_unlock(&g_grave_mu);
    wake_io(); /* so its fds do not wait for the next timer */
    return;
  }
  proc_free(p);
}

static void free_grave(void) {
  pthread_mutex_lock(&g_grave_mu);
  proc *p = g_grave;
  g_grave = NULL;
  pthread_mutex_unlock(&g_grave_mu);
  while (p) {
    proc *n = p->next;
    proc_free(p);
    p = n;
  }
}

static void proc_free(proc *p) {
  if (p->fd_out >= 0) close(p->fd_out);
  if (p->fd_err >= 0) close(p->fd_err);
  if (p->fd_pty >= 0) close(p->fd_pty);
  if (p->fd_in >= 0) close(p->fd_in);
  pthread_mutex_destroy(&p->lock);
  pthread_mutex_destroy(&p->in_lock);
  cJSON_Delete(p->config);
  free(p->tag);
  free(p);
}

static void wake_io(void) {
  uint64_t one = 1;
  if (g_wake >= 0 && write(g_wake, &one, sizeof one) < 0) { /* full: fine */ }
}

static void wake_sub(sub *s) {
  uint64_t one = 1;
  if (write(s->wake, &one, sizeof one) < 0) { /* counter saturated: fine */ }
}

static void free_chunks(chunk *c) {
  while (c) {
    chunk *n = c->next;
    free(c);
    c = n;
  }
}

/* ---- Go-compatible exit descriptions ----------------------------------- */

static const char *go_signame(int sig) {
  switch (sig) {
  case SIGHUP: return "hangup";
  case SIGINT: return "interrupt";
  case SIGQUIT: return "quit";
  case SIGILL: return "illegal instruction";
  case SIGTRAP: return "trace/breakpoint trap";
  case SIGABRT: return "aborted";
  case SIGBUS: return "bus error";
  case SIGFPE: return "floating point exception";
  case SIGKILL: return "killed";
  case SIGUSR1: return "user defined signal 1";
  case SIGSEGV: return "segmentation fault";
  case SIGUSR2: return "user defined signal 2";
  case SIGPIPE: return "broken pipe";
  case SIGALRM: return "alarm clock";
  case SIGTERM: return "terminated";
  case SIGSTKFLT: return "stack fault";
  case SIGCHLD: return "child exited";
  case SIGCONT: return "continued";
  case SIGSTOP: return "stopped (signal)";
  case SIGTSTP: return "stopped";
  case SIGTTIN: return "stopped (tty input)";
  case SIGTTOU: return "stopped (tty output)";
  case SIGURG: return "urgent I/O condition";
  case SIGXCPU: return "CPU time limit exceeded";
  case SIGXFSZ: return "file size limit exceeded";
  case SIGVTALRM: return "virtual timer expired";
  case SIGPROF: return "profiling timer expired";
  case SIGWINCH: return "window changed";
  case SIGIO: return "I/O possible";
  case SIGPWR: return "power failure";
  case SIGSYS: return "bad system call";
  default: return NULL;
  }
}

static uint64_t oom_count(void) {
  if (!g_envd.oom_counter) return 0;
  FILE *f = fopen(g_envd.oom_counter, "re");
  if (!f) return 0;
  char line[256];
  uint64_t v = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long x;
    if (sscanf(line, "oom_kill %llu", &x) == 1) v = x;
  }
  fclose(f);
  return v;
}

static void describe_exit(proc *p) {
  int st = p->wstatus;
  if (WIFEXITED(st)) {
    p->exit_code = WEXITSTATUS(st);
    p->exited_normally = 1;
    snprintf(p->status, sizeof p->status, "exit status %d", p->exit_code);
    if (p->exit_code) snprintf(p->error, sizeof p->error, "%s", p->status);
  } else if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    const char *nm = go_signame(sig);
    p->exit_code = -1;
    if (nm)
      snprintf(p->status, sizeof p->status, "signal: %s", nm);
    else
      snprintf(p->status, sizeof p->status, "signal: signal %d", sig);
    if (WCOREDUMP(st))
      snprintf(p->status + strlen(p->status),
               sizeof p->status - strlen(p->status), " (core dumped)");
    snprintf(p->error, sizeof p->error, "%s", p->status);
    if (sig == SIGKILL && g_envd.oom_counter && oom_count() > p->oom_before)
      snprintf(p->error, sizeof p->error, "%s (out of memory)", p->status);
  } else {
    p->exit_code = -1;
    snprintf(p->status, sizeof p->status, "exit status -1");
    snprintf(p->error, sizeof p->error, "%s", p->status);
  }
}

/* ---- I/O thread -------------------------------------------------------- */

static int *io_fdp(proc *p, int kind);

/* Stop or resume epoll interest in the process's output. p->lock held. */
static void set_reading(proc *p, int on) {
  if (p->ended) { /* its descriptors are being closed */
    p->throttled = 0;
    return;
  }
  for (int kind = K_STDOUT; kind <= K_PTY; kind++) {
    int fd = *io_fdp(p, kind);
    if (fd < 0 || (kind == K_PTY && p->pty_eof)) continue;
    struct epoll_event e = {.events = on ? EPOLLIN : 0, .data.ptr = &p->io[kind - 1]};
    epoll_ctl(g_ep, EPOLL_CTL_MOD, fd, &e); /* ENOENT once closed: fine */
  }
  p->throttled = !on;
  if (!on) p->throttled_since = asbi_now_ms();
}

/* Resume reading once every reader is at most half full. p->lock held. */
static void maybe_resume(proc *p) {
  if (!p->throttled) return;
  for (sub *s = p->subs; s; s = s->next)
    if (!s->overflow && s->queued > g_envd.sub_buffer / 2) return;
  set_reading(p, 1);
  wake_io();
}

static void fanout(proc *p, int kind, const char *data, size_t n) {
  pthread_mutex_lock(&p->lock);
  int full = 0;
  for (sub *s = p->subs; s; s = s->next) {
    if (s->overflow) continue;
    chunk *c = malloc(sizeof *c + n);
    if (!c) {
      s->overflow = 1;
      wake_sub(s);
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
    wake_sub(s);
  }
  if (full && !p->throttled) set_reading(p, 0);
  pthread_mutex_unlock(&p->lock);
}

static int *io_fdp(proc *p, int kind) {
  return kind == K_STDOUT ? &p->fd_out : kind == K_STDERR ? &p->fd_err : &p->fd_pty;
}

static void io_close(proc *p, int kind) {
  /* Under p->lock: set_reading() looks at these fds from stream threads. */
  pthread_mutex_lock(&p->lock);
  int *fdp = io_fdp(p, kind);
  if (*fdp >= 0) {
    epoll_ctl(g_ep, EPOLL_CTL_DEL, *fdp, NULL);
    if (kind == K_PTY) {
      p->pty_eof = 1; /* the fd stays open for input until the end */
    } else {
      close(*fdp);
      *fdp = -1;
    }
  }
  pthread_mutex_unlock(&p->lock);
}

/* Read what is there. Returns 1 at EOF. */
static int io_read(proc *p, int kind, int budget) {
  static char buf[READ_CHUNK];
  int fd = *io_fdp(p, kind);
  if (fd < 0 || (kind == K_PTY && p->pty_eof)) return 1;
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

static int outputs_open(const proc *p) {
  return p->fd_out >= 0 || p->fd_err >= 0 || (p->is_pty && !p->pty_eof);
}

static void finalize(proc *p) {
  describe_exit(p);
  pthread_mutex_lock(&p->lock);
  p->ended = 1;
  for (sub *s = p->subs; s; s = s->next) wake_sub(s);
  pthread_mutex_unlock(&p->lock);
  pthread_mutex_lock(&p->in_lock);
  if (p->fd_in >= 0) close(p->fd_in);
  p->fd_in = -1;
  if (p->fd_pty >= 0) close(p->fd_pty);
  p->fd_pty = -1;
  p->pty_w = -1;
  pthread_mutex_unlock(&p->in_lock);
  /* live → retained (the table lock is held by the caller) */
  for (proc **pp = &g_live; *pp; pp = &(*pp)->next) {
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  }
  p->retain_until = asbi_now_ms() + RETAIN_MS;
  p->next = g_retained;
  g_retained = p;
}

/* Table lock held. */
static void maybe_finalize(proc *p) {
  if (p->ended || !p->exited) return;
  if (outputs_open(p)) {
    if (!p->kill_req) return; /* drain to EOF first */
    /* Killed: take what is buffered, then stop waiting for descendants
     * that escaped the process group and still hold the pipes. */
    if (p->fd_out >= 0 && io_read(p, K_STDOUT, 64) == 0) io_close(p, K_STDOUT);
    if (p->fd_err >= 0 && io_read(p, K_STDERR, 64) == 0) io_close(p, K_STDERR);
    if (p->is_pty && !p->pty_eof && io_read(p, K_PTY, 64) == 0)
      io_close(p, K_PTY);
  }
  finalize(p);
}

static void reap_all(void) {
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
        si.si_pid == 0)
      break;
    pthread_mutex_lock(&g_tab);
    int st = 0;
    pid_t r = waitpid(si.si_pid, &st, WNOHANG);
    if (r == si.si_pid) {
      for (proc *p = g_live; p; p = p->next) {
        if (p->pid == r && !p->exited) {
          p->exited = 1;
          p->wstatus = st;
          /* Usually the pipes are at EOF already: see it now rather than
           * on the next epoll round. */
          if (p->fd_out >= 0) io_read(p, K_STDOUT, 16);
          if (p->fd_err >= 0) io_read(p, K_STDERR, 16);
          if (p->is_pty && !p->pty_eof) io_read(p, K_PTY, 16);
          maybe_finalize(p);
          break;
        }
      }
    }
    pthread_mutex_unlock(&g_tab);
  }
}

/* Table lock held. Returns ms until the next deadline (-1 none). */
static int timers(void) {
  uint64_t now = asbi_now_ms();
  uint64_t next = 0;
  for (proc *p = g_live; p; p = p->next) {
    pthread_mutex_lock(&p->lock);
    if (p->throttled && now >= p->throttled_since + g_envd.stall_ms) {
      /* Cut off the readers that still hold the process up. */
      for (sub *s = p->subs; s; s = s->next) {
        if (s->overflow || s->queued <= g_envd.sub_buffer / 2) continue;
        free_chunks(s->head);
        s->head = s->tail = NULL;
        s->queued = 0;
        s->overflow = 1;
        wake_sub(s);
      }
      maybe_resume(p);
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
  for (proc *p = g_live, *n; p; p = n) {
    n = p->next;
    if (p->exited && p->kill_req && !p->ended) maybe_finalize(p);
  }
  for (proc **pp = &g_retained; *pp;) {
    proc *p = *pp;
    if (now >= p->retain_until) {
      *pp = p->next;
      proc_unref(p);
      continue;
    }
    if (!next || p->retain_until < next) next = p->retain_until;
    pp = &p->next;
  }
  if (!next) return -1;
  uint64_t d = next > now ? next - now : 0;
  return d > 60000 ? 60000 : (int)d + 1;
}

static void *io_main(void *arg) {
  (void)arg;
  struct epoll_event ev[64];
  for (;;) {
    free_grave(); /* no event of the last round points anywhere now */
    pthread_mutex_lock(&g_tab);
    int to = timers();
    pthread_mutex_unlock(&g_tab);
    if (g_stop) break;
    int n = epoll_wait(g_ep, ev, 64, to);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; i++) {
      void *ptr = ev[i].data.ptr;
      if (ptr == &g_tag_sig) {
        struct signalfd_siginfo si;
        while (read(g_sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        }
        reap_all();
      } else if (ptr == &g_tag_wake) {
        uint64_t v;
        if (read(g_wake, &v, sizeof v) < 0) { /* spurious */ }
      } else {
        ioref *io = ptr;
        pthread_mutex_lock(&g_tab);
        if (io_read(io->p, io->kind, 16)) maybe_finalize(io->p);
        pthread_mutex_unlock(&g_tab);
      }
    }
  }
  return NULL;
}

int envd_proc_init(void) {
  sigset_t ss;
  sigemptyset(&ss);
  sigaddset(&ss, SIGCHLD);
  g_sfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
  g_ep = epoll_create1(EPOLL_CLOEXEC);
  g_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (g_sfd < 0 || g_ep < 0 || g_wake < 0) return -1;
  struct epoll_event e = {.events = EPOLLIN, .data.ptr = &g_tag_sig};
  epoll_ctl(g_ep, EPOLL_CTL_ADD, g_sfd, &e);
  e.data.ptr = &g_tag_wake;
  epoll_ctl(g_ep, EPOLL_CTL_ADD, g_wake, &e);
  pthread_attr_t a;
  pthread_attr_init(&a);
#if !defined(__SANITIZE_ADDRESS__)
  pthread_attr_setstacksize(&a, 256u << 10);
#endif
  __atomic_store_n(&g_io_running, 1, __ATOMIC_RELEASE);
  int rc = pthread_create(&g_io, &a, io_main, NULL);
  pthread_attr_destroy(&a);
  if (rc != 0) {
    __atomic_store_n(&g_io_running, 0, __ATOMIC_RELEASE);
    return -1;
  }
  return 0;
}

void envd_proc_shutdown(void) {
  pthread_mutex_lock(&g_tab);
  for (proc *p = g_live; p; p = p->next) {
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
  }
  pthread_mutex_unlock(&g_tab);
  if (__atomic_load_n(&g_io_running, __ATOMIC_ACQUIRE)) {
    /* Let the I/O thread reap and finalize what just died. */
    for (int i = 0; i < 100; i++) {
      pthread_mutex_lock(&g_tab);
      int live = g_live != NULL;
      pthread_mutex_unlock(&g_tab);
      if (!live) break;
      usleep(10000);
    }
    g_stop = 1;
    wake_io();
    pthread_join(g_io, NULL);
  }
  __atomic_store_n(&g_io_running, 0, __ATOMIC_RELEASE);
  free_grave();
  pthread_mutex_lock(&g_tab);
  while (g_live) {
    proc *p = g_live;
    g_live = p->next;
    proc_unref(p);
  }
  while (g_retained) {
    proc *p = g_retained;
    g_retained = p->next;
    proc_unref(p);
  }
  pthread_mutex_unlock(&g_tab);
  if (g_ep >= 0) close(g_ep);
  if (g_wake >= 0) close(g_wake);
  if (g_sfd >= 0) close(g_sfd);
  g_ep = g_wake = g_sfd = -1;
}

size_t envd_proc_count(void) {
  size_t n = 0;
  pthread_mutex_lock(&g_tab);
  for (proc *p = g_live; p; p = p->next) n++;
  pthread_mutex_unlock(&g_tab);
  return n;
}

/* ---- lookups ----------------------------------------------------------- */

/* Finds a live process (ref taken) or, with retained, an ended one kept
 * for late Connects. sel is a ProcessSelector. */
static proc *find_proc(const cJSON *sel, int retained, envd_err *e) {
  const cJSON *pidj = asbi_pj_field(sel, "pid");
  const cJSON *tagj = asbi_pj_field(sel, "tag");
  uint32_t pid = 0;
  const char *tag = NULL;
  if (pidj) {
    if (asbi_pj_get_u32(sel, "pid", &pid) != 0) {
      envd_err_set(e, "invalid_argument", "invalid pid");
      return NULL;
    }
  } else if (tagj) {
    if (asbi_pj_get_str(sel, "tag", &tag) != 0) {
      envd_err_set(e, "invalid_argument", "invalid tag");
      return NULL;
    }
  } else {
    envd_err_set(e, "unimplemented", "invalid input type <nil>");
    return NULL;
  }
  proc *found = NULL;
  pthread_mutex_lock(&g_tab);
  for (int pass = 0; pass < (retained ? 2 : 1) && !found; pass++) {
    for (proc *p = pass ? g_retained : g_live; p; p = p->next) {
      if (pidj ? p->pid == (pid_t)pid : (p->tag && strcmp(p->tag, tag) == 0)) {
        found = p;
        break;
      }
    }
  }
  if (found) proc_ref(found);
  pthread_mutex_unlock(&g_tab);
  if (!found) {
    if (pidj)
      envd_err_set(e, "not_found", "process with pid %u not found", pid);
    else
      envd_err_set(e, "not_found", "process with tag %s not found", tag);
  }
  return found;
}

/* ---- streams (Start, Connect) ------------------------------------------ */

typedef struct pstream {
  envd_stream base;
  proc *p;
  sub *s;
  int sent_start;
  uint64_t deadline_ms;
  int ka_ms;
  uint64_t next_ka;
  int sock;
} pstream;

static void put_event(asbi_buf *out, const char *json, size_t len) {
  envd_env_msg(out, json, len);
}

static void encode_data(asbi_buf *out, int kind, const char *data, size_t n) {
  static const char *names[] = {"", "stdout", "stderr", "pty"};
  asbi_buf j = ASBI_BUF_INIT;
  size_t b64 = asbi_b64_encoded_len(n);
  if (asbi_buf_reserve(&j, b64 + 64) != 0) return;
  j.len = (size_t)snprintf(j.data, 64, "{\"event\":{\"data\":{\"%s\":\"",
                           names[kind]);
  j.len += asbi_b64_encode(data, n, j.data + j.len, 0, 1);
  asbi_buf_puts(&j, "\"}}}");
  put_event(out, j.data, j.len);
  asbi_buf_free(&j);
}

static void encode_chunks(asbi_buf *out, chunk *c) {
  asbi_buf acc = ASBI_BUF_INIT;
  int kind = 0;
  for (; c; c = c->next) {
    if (acc.len && (c->kind != kind || acc.len + c->len > EVENT_RAW_MAX)) {
      encode_data(out, kind, acc.data, acc.len);
      asbi_buf_clear(&acc);
    }
    kind = c->kind;
    asbi_buf_append(&acc, c->data, c->len);
  }
  if (acc.len) encode_data(out, kind, acc.data, acc.len);
  asbi_buf_free(&acc);
}

static void encode_end(asbi_buf *out, const proc *p) {
  cJSON *end = cJSON_CreateObject();
  asbi_pj_add_i32(end, "exitCode", p->exit_code);
  asbi_pj_add_bool(end, "exited", p->exited_normally);
  asbi_pj_add_str(end, "status", p->status);
  if (p->error[0]) cJSON_AddStringToObject(end, "error", p->error);
  cJSON *ev = cJSON_CreateObject();
  cJSON_AddItemToObject(ev, "end", end);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddItemToObject(root, "event", ev);
  char *s = asbi_pj_print(root);
  if (s) put_event(out, s, strlen(s));
  free(s);
  cJSON_Delete(root);
}

static int pstream_next(envd_stream *base, asbi_buf *out) {
  pstream *ps = (pstream *)base;
  proc *p = ps->p;
  if (!ps->sent_start) {
    char j[96];
    int n = snprintf(j, sizeof j, "{\"event\":{\"start\":{\"pid\":%d}}}", p->pid);
    put_event(out, j, (size_t)n);
    ps->sent_start = 1;
    ps->next_ka = asbi_now_ms() + (uint64_t)ps->ka_ms;
    return 1;
  }
  for (;;) {
    uint64_t now = asbi_now_ms();
    if (ps->deadline_ms && now >= ps->deadline_ms) {
      envd_env_end(out, "deadline_exceeded", "context deadline exceeded");
      return 0;
    }
    chunk *c = NULL;
    int of = 0, ended;
    pthread_mutex_lock(&p->lock);
    if (ps->s) {
      c = ps->s->head;
      ps->s->head = ps->s->tail = NULL;
      ps->s->queued = 0;
      of = ps->s->overflow;
      maybe_resume(p);
    }
    ended = p->ended;
    pthread_mutex_unlock(&p->lock);
    if (of) {
      free_chunks(c);
      char m[200];
      snprintf(m, sizeof m,
               "stream reader stuck: more than %zu bytes of output waited "
               "%u s; the process keeps running (reattach with Connect)",
               g_envd.sub_buffer, g_envd.stall_ms / 1000);
      envd_env_end(out, "resource_exhausted", m);
      return 0;
    }
    if (c) {
      encode_chunks(out, c);
      free_chunks(c);
      ps->next_ka = now + (uint64_t)ps->ka_ms;
      return 1;
    }
    if (ended) {
      encode_end(out, p);
      envd_env_end(out, NULL, NULL);
      return 0;
    }
    uint64_t until = ps->next_ka;
    if (ps->deadline_ms && ps->deadline_ms < until) until = ps->deadline_ms;
    int to = until > now ? (int)(until - now) : 0;
    int rc = envd_wait(ps->s ? ps->s->wake : -1, ps->sock, to);
    if (rc < 0) return -1; /* client gone: the process keeps running */
    if (rc > 0 && ps->s) {
      uint64_t v;
      if (read(ps->s->wake, &v, sizeof v) < 0) { /* nothing */ }
    }
    now = asbi_now_ms();
    if (now >= ps->next_ka) {
      static const char ka[] = "{\"event\":{\"keepalive\":{}}}";
      put_event(out, ka, sizeof ka - 1);
      ps->next_ka = now + (uint64_t)ps->ka_ms;
      return 1;
    }
  }
}

static void pstream_destroy(envd_stream *base) {
  pstream *ps = (pstream *)base;
  if (ps->s) {
    pthread_mutex_lock(&ps->p->lock);
    for (sub **pp = &ps->p->subs; *pp; pp = &(*pp)->next) {
      if (*pp == ps->s) {
        *pp = ps->s->next;
        break;
      }
    }
    maybe_resume(ps->p); /* a reader that leaves no longer holds it up */
    pthread_mutex_unlock(&ps->p->lock);
    free_chunks(ps->s->head);
    close(ps->s->wake);
    free(ps->s);
  }
  proc_unref(ps->p);
  free(ps);
}

/* Subscribes a new stream to p (ref transferred to the stream). */
static pstream *pstream_new(proc *p, const envd_call *c) {
  pstream *ps = calloc(1, sizeof *ps);
  sub *s = calloc(1, sizeof *s);
  int wfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (!ps || !s || wfd < 0) {
    free(ps);
    free(s);
    if (wfd >= 0) close(wfd);
    return NULL;
  }
  s->wake = wfd;
  ps->base.next = pstream_next;
  ps->base.destroy = pstream_destroy;
  ps->p = p;
  ps->s = s;
  ps->sock = c->sock;
  ps->ka_ms = c->keepalive_s * 1000;
  if (c->timeout_ms) ps->deadline_ms = asbi_now_ms() + (uint64_t)c->timeout_ms;
  pthread_mutex_lock(&p->lock);
  s->next = p->subs;
  p->subs = s;
  pthread_mutex_unlock(&p->lock);
  return ps;
}

/* ---- Start ------------------------------------------------------------- */

static int find_exec(const char *cmd, const char *pathenv, char *out,
                     size_t n) {
  if (strchr(cmd, '/')) {
    snprintf(out, n, "%s", cmd);
    return 0;
  }
  const char *p = pathenv ? pathenv : "/usr/local/bin:/usr/bin:/bin";
  while (*p) {
    const char *e = strchr(p, ':');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == 0)
      snprintf(out, n, "./%s", cmd);
    else
      snprintf(out, n, "%.*s/%s", (int)l, p, cmd);
    struct stat st;
    if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
      return 0;
    if (!e) break;
    p = e + 1;
  }
  snprintf(out, n, "%s", cmd);
  return -1;
}

typedef struct kv {
  char *s; /* "K=V" */
  size_t klen;
} kv;

static void env_put(kv *v, size_t *n, const char *k, const char *val) {
  size_t kl = strlen(k);
  for (size_t i = 0; i < *n; i++) {
    if (v[i].klen == kl && strncmp(v[i].s, k, kl) == 0) {
      free(v[i].s);
      v[i].s = NULL;
      asbi_buf b = ASBI_BUF_INIT;
      asbi_buf_printf(&b, "%s=%s", k, val);
      v[i].s = asbi_buf_detach(&b, NULL);
      return;
    }
  }
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "%s=%s", k, val);
  v[*n].s = asbi_buf_detach(&b, NULL);
  v[*n].klen = kl;
  (*n)++;
}

static int set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void reg_fd(proc *p, int kind, int fd) {
  p->io[kind - 1] = (ioref){p, kind};
  struct epoll_event e = {.events = EPOLLIN, .data.ptr = &p->io[kind - 1]};
  epoll_ctl(g_ep, EPOLL_CTL_ADD, fd, &e);
}

static envd_stream *start_stream(const envd_call *c, const cJSON *req,
                                 envd_err *e) {
  const cJSON *pj = asbi_pj_field(req, "process");
  if (pj && !cJSON_IsObject(pj)) {
    envd_err_set(e, "invalid_argument", "process must be an object");
    return NULL;
  }
  const char *cmd = NULL, *cwd = NULL, *tag = NULL;
  if (asbi_pj_get_str(pj, "cmd", &cmd) != 0 ||
      asbi_pj_get_str(pj, "cwd", &cwd) != 0 ||
      asbi_pj_get_str(req, "tag", &tag) != 0) {
    envd_err_set(e, "invalid_argument", "invalid process configuration");
    return NULL;
  }
  if (asbi_empty(cmd)) {
    envd_err_set(e, "invalid_argument", "process.cmd is required");
    return NULL;
  }
  const cJSON *args = asbi_pj_field(pj, "args");
  const cJSON *envs = asbi_pj_field(pj, "envs");
  const cJSON *pty = asbi_pj_field(req, "pty");
  const cJSON *stdinj = asbi_pj_field(req, "stdin");
  if ((args && !cJSON_IsArray(args)) || (envs && !cJSON_IsObject(envs)) ||
      (pty && !cJSON_IsObject(pty)) || (stdinj && !cJSON_IsBool(stdinj))) {
    envd_err_set(e, "invalid_argument", "invalid start request");
    return NULL;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, args) {
    if (!cJSON_IsString(it)) {
      envd_err_set(e, "invalid_argument", "process.args must be strings");
      return NULL;
    }
  }
  cJSON_ArrayForEach(it, envs) {
    if (!cJSON_IsString(it) || strchr(it->string, '=') || !it->string[0]) {
      envd_err_set(e, "invalid_argument", "invalid environment variable '%s'",
                   it->string);
      return NULL;
    }
  }
  uint32_t cols = 0, rows = 0;
  if (pty) {
    const cJSON *size = asbi_pj_field(pty, "size");
    if (asbi_pj_get_u32(size, "cols", &cols) != 0 ||
        asbi_pj_get_u32(size, "rows", &rows) != 0 || cols > 65535 ||
        rows > 65535) {
      envd_err_set(e, "invalid_argument", "invalid pty size");
      return NULL;
    }
  }
  int want_stdin = !stdinj || cJSON_IsTrue(stdinj);

  const envd_user *u = c->user;
  const char *perr = NULL;
  char *dir = envd_resolve_path(cwd ? cwd : "", u, &perr);
  if (!dir) {
    envd_err_set(e, "invalid_argument",
                 "failed to expand path '%s' for user '%s': %s",
                 cwd ? cwd : "", u->name, perr);
    return NULL;
  }
  struct stat st;
  if (stat(dir, &st) != 0 && errno == ENOENT) {
    envd_err_set(e, "invalid_argument", "cwd '%s' does not exist", dir);
    free(dir);
    return NULL;
  }

  /* Environment: PATH, HOME, USER, LOGNAME, /init vars, request vars. */
  size_t ninit = 0;
  char **initv = envd_env_snapshot(&ninit);
  size_t cap = 8 + ninit + (size_t)cJSON_GetArraySize(envs);
  kv *ev = calloc(cap, sizeof *ev);
  size_t nev = 0;
  env_put(ev, &nev, "PATH", g_envd.path_env ? g_envd.path_env : "");
  env_put(ev, &nev, "HOME", u->home);
  env_put(ev, &nev, "USER", u->name);
  env_put(ev, &nev, "LOGNAME", u->name);
  for (size_t i = 0; i < ninit; i++) {
    char *eq = strchr(initv[i], '=');
    if (!eq) continue;
    *eq = '\0';
    env_put(ev, &nev, initv[i], eq + 1);
    *eq = '=';
  }
  envd_strv_free(initv);
  cJSON_ArrayForEach(it, envs) env_put(ev, &nev, it->string, it->valuestring);
  char **envp = calloc(nev + 1, sizeof *envp);
  const char *child_path = NULL;
  for (size_t i = 0; i < nev; i++) {
    envp[i] = ev[i].s;
    if (ev[i].klen == 4 && strncmp(ev[i].s, "PATH", 4) == 0)
      child_path = ev[i].s + 5;
  }
  size_t nargs = (size_t)cJSON_GetArraySize(args);
  char **argv = calloc(nargs + 2, sizeof *argv);
  argv[0] = (char *)cmd;
  size_t ai = 1;
  cJSON_ArrayForEach(it, args) argv[ai++] = it->valuestring;
  char exe[4096];
  find_exec(cmd, child_path, exe, sizeof exe);
  char msg_noent[512], msg_acces[512];
  snprintf(msg_noent, sizeof msg_noent, "exec: %s: not found\n", cmd);
  snprintf(msg_acces, sizeof msg_acces, "exec: %s: Permission denied\n", cmd);

  proc *p = calloc(1, sizeof *p);
  p->refs = 1; /* the table's */
  p->fd_out = p->fd_err = p->fd_pty = p->fd_in = p->pty_w = -1;
  pthread_mutex_init(&p->lock, NULL);
  pthread_mutex_init(&p->in_lock, NULL);
  p->tag = asbi_strdup(tag);
  p->is_pty = pty != NULL;
  /* List reports the configuration as given. */
  p->config = cJSON_CreateObject();
  cJSON_AddStringToObject(p->config, "cmd", cmd);
  if (nargs) cJSON_AddItemToObject(p->config, "args", cJSON_Duplicate(args, 1));
  if (envs && cJSON_GetArraySize(envs))
    cJSON_AddItemToObject(p->config, "envs", cJSON_Duplicate(envs, 1));
  if (cwd) cJSON_AddStringToObject(p->config, "cwd", cwd);

  int child_in = -1, child_out = -1, child_err = -1, devnull = -1;
  int ok = 1;
  const char *fail_what = "pipe";
  if (pty) {
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char sname[128];
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0 ||
        ptsname_r(m, sname, sizeof sname) != 0) {
      ok = 0;
      fail_what = "pty";
      if (m >= 0) close(m);
    } else {
      int s = open(sname, O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (s < 0) {
        ok = 0;
        fail_what = "pty";
        close(m);
      } else {
        struct winsize ws = {(unsigned short)rows, (unsigned short)cols, 0, 0};
        ioctl(m, TIOCSWINSZ, &ws);
        p->fd_pty = m;
        p->pty_w = m;
        set_nonblock(m);
        child_in = child_out = child_err = s;
      }
    }
  } else {
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1};
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0 ||
        (want_stdin && pipe2(pi, O_CLOEXEC) != 0)) {
      ok = 0;
      for (int i = 0; i < 2; i++) {
        if (po[i] >= 0) close(po[i]);
        if (pe[i] >= 0) close(pe[i]);
        if (pi[i] >= 0) close(pi[i]);
      }
    } else {
      p->fd_out = po[0];
      p->fd_err = pe[0];
      set_nonblock(po[0]);
      set_nonblock(pe[0]);
      child_out = po[1];
      child_err = pe[1];
      if (want_stdin) {
        p->fd_in = pi[1];
        child_in = pi[0];
      } else {
        devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        child_in = devnull;
        if (devnull < 0) ok = 0;
      }
    }
  }
  pstream *ps = NULL;
  if (ok) {
    proc_ref(p); /* the stream's */
    ps = pstream_new(p, c);
    if (!ps) {
      proc_unref(p);
      ok = 0;
      fail_what = "stream";
    }
  }
  if (!ok) {
    envd_err_set(e, "internal", "error creating %s for command '%s': %s",
                 fail_what, cmd, strerror(errno));
    goto fail;
  }

  envd_spawn sp;
  memset(&sp, 0, sizeof sp);
  sp.path = exe;
  sp.argv = argv;
  sp.envp = envp;
  sp.cwd = dir;
  sp.fd_in = child_in;
  sp.fd_out = child_out;
  sp.fd_err = child_err;
  sp.pty = p->is_pty;
  sp.set_ids = geteuid() == 0;
  sp.uid = u->uid;
  sp.gid = u->gid;
  sp.groups = u->groups;
  sp.ngroups = u->ngroups;
  char **cgp = NULL;
  if (g_envd.n_cgroups) {
    cgp = calloc(g_envd.n_cgroups + 1, sizeof *cgp);
    for (size_t i = 0; i < g_envd.n_cgroups; i++) {
      asbi_buf b = ASBI_BUF_INIT;
      asbi_buf_printf(&b, "%s/cgroup.procs", g_envd.cgroups[i]);
      cgp[i] = asbi_buf_detach(&b, NULL);
    }
    sp.cgroup_procs = cgp;
  }
  sp.oom_score_adj = 100;
  sp.nofile_cur = g_envd.nofile_cur;
  sp.nofile_max = g_envd.nofile_max;
  sp.msg_noent = msg_noent;
  sp.msg_acces = msg_acces;
  p->oom_before = oom_count();

  pthread_mutex_lock(&g_tab);
  pid_t pid = envd_spawn_run(&sp);
  int serr = errno;
  if (pid > 0 && sp.fail_errno) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  if (pid > 0 && !sp.fail_errno) {
    p->pid = pid;
    /* A retained exit of an earlier process with this pid or tag is stale. */
    for (proc **pp = &g_retained; *pp;) {
      proc *q = *pp;
      if (q->pid == pid || (p->tag && q->tag && strcmp(q->tag, p->tag) == 0)) {
        *pp = q->next;
        proc_unref(q);
        continue;
      }
      pp = &q->next;
    }
    p->next = g_live;
    g_live = p;
    if (c->timeout_ms) p->deadline_ms = asbi_now_ms() + (uint64_t)c->timeout_ms;
    if (p->is_pty)
      reg_fd(p, K_PTY, p->fd_pty);
    else {
      reg_fd(p, K_STDOUT, p->fd_out);
      reg_fd(p, K_STDERR, p->fd_err);
    }
  }
  pthread_mutex_unlock(&g_tab);
  if (cgp) {
    for (size_t i = 0; cgp[i]; i++) free(cgp[i]);
    free(cgp);
  }
  if (pid > 0 && !sp.fail_errno) {
    if (p->deadline_ms) wake_io();
    /* Close the child's ends. */
    if (child_in >= 0) close(child_in);
    if (child_out >= 0 && child_out != child_in) close(child_out);
    if (child_err >= 0 && child_err != child_out && child_err != child_in)
      close(child_err);
    for (size_t i = 0; i < nev; i++) free(ev[i].s);
    free(ev);
    free(envp);
    free(argv);
    free(dir);
    return &ps->base;
  }
  if (pid < 0)
    envd_err_set(e, "invalid_argument", "error starting process '%s': fork: %s",
                 cmd, strerror(serr));
  else
    envd_err_set(e, "invalid_argument",
                 "error starting process '%s': %s%s%s: %s", cmd, sp.fail_stage,
                 strcmp(sp.fail_stage, "chdir") == 0 ? " " : "",
                 strcmp(sp.fail_stage, "chdir") == 0 ? dir : "",
                 strerror(sp.fail_errno));
fail:
  if (child_in >= 0) close(child_in);
  if (child_out >= 0 && child_out != child_in) close(child_out);
  if (child_err >= 0 && child_err != child_out && child_err != child_in)
    close(child_err);
  if (ps) ps->base.destroy(&ps->base);
  proc_unref(p);
  for (size_t i = 0; i < nev; i++) free(ev[i].s);
  free(ev);
  free(envp);
  free(argv);
  free(dir);
  return NULL;
}

/* ---- Connect ----------------------------------------------------------- */

static envd_stream *connect_stream(const envd_call *c, const cJSON *req,
                                   envd_err *e) {
  proc *p = find_proc(asbi_pj_field(req, "process"), 1, e);
  if (!p) return NULL;
  pstream *ps = pstream_new(p, c);
  if (!ps) {
    proc_unref(p);
    envd_err_set(e, "internal", "out of memory");
    return NULL;
  }
  return &ps->base;
}

/* ---- unary methods ----------------------------------------------------- */

static int list_fn(const envd_call *c, const cJSON *req, cJSON **resp,
                   envd_err *e) {
  (void)c;
  (void)req;
  (void)e;
  cJSON *arr = cJSON_CreateArray();
  pthread_mutex_lock(&g_tab);
  for (proc *p = g_live; p; p = p->next) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "config", cJSON_Duplicate(p->config, 1));
    asbi_pj_add_u32(o, "pid", (uint32_t)p->pid);
    if (p->tag) cJSON_AddStringToObject(o, "tag", p->tag);
    cJSON_AddItemToArray(arr, o);
  }
  pthread_mutex_unlock(&g_tab);
  *resp = cJSON_CreateObject();
  if (cJSON_GetArraySize(arr))
    cJSON_AddItemToObject(*resp, "processes", arr);
  else
    cJSON_Delete(arr);
  return 0;
}

static int write_all(int fd, const unsigned char *d, size_t n) {
  while (n) {
    ssize_t w = write(fd, d, n);
    if (w > 0) {
      d += w;
      n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      struct pollfd pf = {fd, POLLOUT, 0};
      poll(&pf, 1, 1000);
      continue;
    }
    return -1;
  }
  return 0;
}

/* Applies one ProcessInput. */
static int do_input(proc *p, const cJSON *in, envd_err *e) {
  const cJSON *sj = asbi_pj_field(in, "stdin");
  const cJSON *pj = asbi_pj_field(in, "pty");
  unsigned char *data = NULL;
  size_t n = 0;
  if (!sj && !pj) {
    envd_err_set(e, "unimplemented", "invalid input type <nil>");
    return -1;
  }
  if (asbi_pj_get_bytes(in, sj ? "stdin" : "pty", &data, &n) != 0) {
    envd_err_set(e, "invalid_argument", "input is not valid base64");
    return -1;
  }
  int rc = 0;
  pthread_mutex_lock(&p->in_lock);
  if (sj) {
    if (p->is_pty) {
      envd_err_set(e, "internal",
                   "error writing to stdin: tty assigned to process — input "
                   "should be written to the pty, not the stdin");
      rc = -1;
    } else if (p->fd_in < 0) {
      envd_err_set(e, "internal",
                   "error writing to stdin: stdin not enabled or closed");
      rc = -1;
    } else if (write_all(p->fd_in, data, n) != 0) {
      envd_err_set(e, "internal",
                   "error writing to stdin: error writing to stdin of process "
                   "'%d': %s", p->pid, strerror(errno));
      rc = -1;
    }
  } else {
    if (!p->is_pty || p->pty_w < 0) {
      envd_err_set(e, "internal",
                   "error writing to tty: tty not assigned to process — input "
                   "should be written to the stdin, not the tty");
      rc = -1;
    } else if (write_all(p->pty_w, data, n) != 0) {
      envd_err_set(e, "internal",
                   "error writing to tty: error writing to tty of process "
                   "'%d': %s", p->pid, strerror(errno));
      rc = -1;
    }
  }
  pthread_mutex_unlock(&p->in_lock);
  free(data);
  return rc;
}

static int send_input_fn(const envd_call *c, const cJSON *req, cJSON **resp,
                         envd_err *e) {
  (void)c;
  proc *p = find_proc(asbi_pj_field(req, "process"), 0, e);
  if (!p) return -1;
  int rc = do_input(p, asbi_pj_field(req, "input"), e);
  proc_unref(p);
  if (rc == 0) *resp = cJSON_CreateObject();
  return rc;
}

static int signal_fn(const envd_call *c, const cJSON *req, cJSON **resp,
                     envd_err *e) {
  (void)c;
  static const asbi_pj_enum sigs[] = {{0, "SIGNAL_UNSPECIFIED"},
                                      {15, "SIGNAL_SIGTERM"},
                                      {9, "SIGNAL_SIGKILL"},
                                      {0, NULL}};
  int sig = 0;
  if (asbi_pj_get_enum(req, "signal", sigs, &sig) != 0) {
    envd_err_set(e, "invalid_argument", "invalid signal");
    return -1;
  }
  proc *p = find_proc(asbi_pj_field(req, "process"), 0, e);
  if (!p) return -1;
  if (sig != SIGKILL && sig != SIGTERM) {
    proc_unref(p);
    envd_err_set(e, "unimplemented", "invalid signal: %s",
                 asbi_pj_enum_name(sigs, sig) ? asbi_pj_enum_name(sigs, sig)
                                              : "SIGNAL_UNSPECIFIED");
    return -1;
  }
  pthread_mutex_lock(&g_tab);
  /* Only a kill stops the wait for the output to drain: a process may
   * handle SIGTERM and go on writing. */
  if (sig == SIGKILL) p->kill_req = 1;
  /* The whole process group, once (the process leads it; signalling both
   * would deliver the signal twice to the leader). */
  if (!p->ended && kill(-p->pid, sig) != 0) kill(p->pid, sig);
  pthread_mutex_unlock(&g_tab);
  wake_io();
  proc_unref(p);
  *resp = cJSON_CreateObject();
  return 0;
}

static int close_stdin_fn(const envd_call *c, const cJSON *req, cJSON **resp,
                          envd_err *e) {
  (void)c;
  proc *p = find_proc(asbi_pj_field(req, "process"), 0, e);
  if (!p) return -1;
  int rc = 0;
  pthread_mutex_lock(&p->in_lock);
  if (p->is_pty) {
    envd_err_set(e, "unknown",
                 "error closing stdin: cannot close stdin for PTY process — "
                 "send Ctrl+D (0x04) instead");
    rc = -1;
  } else if (p->fd_in >= 0) {
    close(p->fd_in);
    p->fd_in = -1;
  }
  pthread_mutex_unlock(&p->in_lock);
  proc_unref(p);
  if (rc == 0) *resp = cJSON_CreateObject();
  return rc;
}

static int update_fn(const envd_call *c, const cJSON *req, cJSON **resp,
                     envd_err *e) {
  (void)c;
  const cJSON *pty = asbi_pj_field(req, "pty");
  uint32_t cols = 0, rows = 0;
  if (pty) {
    const cJSON *size = asbi_pj_field(pty, "size");
    if (!cJSON_IsObject(pty) || asbi_pj_get_u32(size, "cols", &cols) != 0 ||
        asbi_pj_get_u32(size, "rows", &rows) != 0 || cols > 65535 ||
        rows > 65535) {
      envd_err_set(e, "invalid_argument", "invalid pty size");
      return -1;
    }
  }
  proc *p = find_proc(asbi_pj_field(req, "process"), 0, e);
  if (!p) return -1;
  int rc = 0;
  if (pty) {
    pthread_mutex_lock(&p->in_lock);
    struct winsize ws = {(unsigned short)rows, (unsigned short)cols, 0, 0};
    if (!p->is_pty || p->pty_w < 0) {
      envd_err_set(e, "internal",
                   "error resizing tty: tty not assigned to process");
      rc = -1;
    } else if (ioctl(p->pty_w, TIOCSWINSZ, &ws) != 0) {
      envd_err_set(e, "internal", "error resizing tty: %s", strerror(errno));
      rc = -1;
    }
    pthread_mutex_unlock(&p->in_lock);
  }
  proc_unref(p);
  if (rc == 0) *resp = cJSON_CreateObject();
  return rc;
}

/* ---- StreamInput (client stream) --------------------------------------- */

typedef struct instream {
  envd_cstream base;
  proc *p;
} instream;

static int in_message(envd_cstream *base, const cJSON *msg, envd_err *e) {
  instream *s = (instream *)base;
  const cJSON *start = asbi_pj_field(msg, "start");
  const cJSON *data = asbi_pj_field(msg, "data");
  const cJSON *ka = asbi_pj_field(msg, "keepalive");
  if (start) {
    proc *p = find_proc(asbi_pj_field(start, "process"), 0, e);
    if (!p) return -1;
    if (s->p) proc_unref(s->p);
    s->p = p;
    return 0;
  }
  if (data) {
    if (!s->p) {
      envd_err_set(e, "failed_precondition",
                   "input data received before the start event");
      return -1;
    }
    return do_input(s->p, asbi_pj_field(data, "input"), e);
  }
  if (ka) return 0;
  envd_err_set(e, "unimplemented", "invalid event type <nil>");
  return -1;
}

static int in_finish(envd_cstream *base, cJSON **resp, envd_err *e) {
  (void)base;
  (void)e;
  *resp = cJSON_CreateObject();
  return 0;
}

static void in_destroy(envd_cstream *base) {
  instream *s = (instream *)base;
  if (s->p) proc_unref(s->p);
  free(s);
}

static envd_cstream *stream_input(const envd_call *c, envd_err *e) {
  (void)c;
  instream *s = calloc(1, sizeof *s);
  if (!s) {
    envd_err_set(e, "internal", "out of memory");
    return NULL;
  }
  s->base.message = in_message;
  s->base.finish = in_finish;
  s->base.destroy = in_destroy;
  return &s->base;
}

const envd_method envd_process_methods[] = {
    {"/process.Process/Start", 1, NULL, start_stream, NULL, 0},
    {"/process.Process/Connect", 1, NULL, connect_stream, NULL, 0},
    {"/process.Process/List", 0, list_fn, NULL, NULL, 0},
    {"/process.Process/SendInput", 0, send_input_fn, NULL, NULL, 0},
    {"/process.Process/StreamInput", 2, NULL, NULL, stream_input, 0},
    {"/process.Process/SendSignal", 0, signal_fn, NULL, NULL, 0},
    {"/process.Process/CloseStdin", 0, close_stdin_fn, NULL, NULL, 0},
    {"/process.Process/Update", 0, update_fn, NULL, NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};
