/* envd: the process table (see proc_tab.h).
 * SPDX-License-Identifier: Apache-2.0 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_tab.h"
#include "proto/pjson.h"
#include "state.h"
#include "util/util.h"

/* The process table's state: everything this file keeps process-wide. */
static struct {
  pthread_mutex_t lock;       /* the table lock (envd_ptab_lock) */
  envd_proc *live, *retained; /* linked through next, under lock */
  /* Procs whose last reference went while the I/O thread runs: it frees
   * them between epoll rounds, never during one, because the batch it is
   * working through may still hold events pointing at them (a process
   * reaped and retained early in a batch, then dropped by a Start in
   * another thread whose child got the same pid, while a stale pipe event
   * for it waited later in the batch: a use after free under ASan in
   * envd.stress). */
  pthread_mutex_t grave_lock;
  envd_proc *grave;
  int io_attached; /* atomic: the I/O thread exists (set before it starts) */
  int io_wake;     /* its eventfd while it is attached */
} g_ptab = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, PTHREAD_MUTEX_INITIALIZER, NULL, 0, -1};

static void proc_free(envd_proc *p);
static void wake_io(void);

envd_proc *envd_ptab_new(const char *tag, int is_pty) {
  envd_proc *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->refs = 1;
  p->fd_out = p->fd_err = p->fd_pty = p->fd_in = p->pty_w = -1;
  pthread_mutex_init(&p->lock, NULL);
  pthread_mutex_init(&p->in_lock, NULL);
  p->tag = asbi_strdup(tag);
  p->is_pty = is_pty;
  return p;
}

void envd_ptab_ref(envd_proc *p) {
  __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
}

void envd_ptab_unref(envd_proc *p) {
  if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (__atomic_load_n(&g_ptab.io_attached, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&g_ptab.grave_lock);
    p->next = g_ptab.grave;
    g_ptab.grave = p;
    pthread_mutex_unlock(&g_ptab.grave_lock);
    wake_io(); /* so its fds do not wait for the next timer */
    return;
  }
  proc_free(p);
}

void envd_ptab_free_grave(void) {
  pthread_mutex_lock(&g_ptab.grave_lock);
  envd_proc *p = g_ptab.grave;
  g_ptab.grave = NULL;
  pthread_mutex_unlock(&g_ptab.grave_lock);
  while (p) {
    envd_proc *n = p->next;
    proc_free(p);
    p = n;
  }
}

static void proc_free(envd_proc *p) {
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
  if (g_ptab.io_wake >= 0 && write(g_ptab.io_wake, &one, sizeof one) < 0) { /* full: fine */
  }
}

void envd_ptab_wake_sub(envd_sub *s) {
  uint64_t one = 1;
  if (write(s->wake, &one, sizeof one) < 0) { /* counter saturated: fine */
  }
}

void envd_ptab_free_chunks(envd_chunk *c) {
  while (c) {
    envd_chunk *n = c->next;
    free(c);
    c = n;
  }
}

void envd_ptab_attach(int wake_fd) {
  g_ptab.io_wake = wake_fd;
  __atomic_store_n(&g_ptab.io_attached, 1, __ATOMIC_RELEASE);
}

void envd_ptab_detach(void) {
  __atomic_store_n(&g_ptab.io_attached, 0, __ATOMIC_RELEASE);
  envd_ptab_free_grave();
  g_ptab.io_wake = -1;
}

/* ---- the lists ----------------------------------------------------------- */

void envd_ptab_lock(void) {
  pthread_mutex_lock(&g_ptab.lock);
}
void envd_ptab_unlock(void) {
  pthread_mutex_unlock(&g_ptab.lock);
}
envd_proc *envd_ptab_live(void) {
  return g_ptab.live;
}
envd_proc *envd_ptab_retained(void) {
  return g_ptab.retained;
}

void envd_ptab_insert(envd_proc *p) {
  /* A retained exit of an earlier process with this pid or tag is stale. */
  for (envd_proc **pp = &g_ptab.retained; *pp;) {
    envd_proc *q = *pp;
    if (q->pid == p->pid || (p->tag && q->tag && strcmp(q->tag, p->tag) == 0)) {
      *pp = q->next;
      envd_ptab_unref(q);
      continue;
    }
    pp = &q->next;
  }
  p->next = g_ptab.live;
  g_ptab.live = p;
}

void envd_ptab_retire(envd_proc *p) {
  envd_ptab_describe_exit(p);
  pthread_mutex_lock(&p->lock);
  p->ended = 1;
  for (envd_sub *s = p->subs; s; s = s->next) envd_ptab_wake_sub(s);
  pthread_mutex_unlock(&p->lock);
  pthread_mutex_lock(&p->in_lock);
  if (p->fd_in >= 0) close(p->fd_in);
  p->fd_in = -1;
  if (p->fd_pty >= 0) close(p->fd_pty);
  p->fd_pty = -1;
  p->pty_w = -1;
  pthread_mutex_unlock(&p->in_lock);
  /* live → retained (the table lock is held by the caller) */
  for (envd_proc **pp = &g_ptab.live; *pp; pp = &(*pp)->next) {
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  }
  p->retain_until = asbi_now_ms() + ENVD_PTAB_RETAIN_MS;
  p->next = g_ptab.retained;
  g_ptab.retained = p;
}

uint64_t envd_ptab_expire(uint64_t now) {
  uint64_t next = 0;
  for (envd_proc **pp = &g_ptab.retained; *pp;) {
    envd_proc *p = *pp;
    if (now >= p->retain_until) {
      *pp = p->next;
      envd_ptab_unref(p);
      continue;
    }
    if (!next || p->retain_until < next) next = p->retain_until;
    pp = &p->next;
  }
  return next;
}

/* Finds a live process (ref taken) or, with retained, an ended one kept
 * for late Connects. sel is a ProcessSelector. */
envd_proc *envd_ptab_find(const cJSON *sel, int retained, envd_err *e) {
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
  envd_proc *found = NULL;
  envd_ptab_lock();
  for (int pass = 0; pass < (retained ? 2 : 1) && !found; pass++) {
    for (envd_proc *p = pass ? g_ptab.retained : g_ptab.live; p; p = p->next) {
      if (pidj ? p->pid == (pid_t)pid : (p->tag && strcmp(p->tag, tag) == 0)) {
        found = p;
        break;
      }
    }
  }
  if (found) envd_ptab_ref(found);
  envd_ptab_unlock();
  if (!found) {
    if (pidj)
      envd_err_set(e, "not_found", "process with pid %u not found", pid);
    else
      envd_err_set(e, "not_found", "process with tag %s not found", tag);
  }
  return found;
}

size_t envd_ptab_count(void) {
  size_t n = 0;
  pthread_mutex_lock(&g_ptab.lock);
  for (envd_proc *p = g_ptab.live; p; p = p->next) n++;
  pthread_mutex_unlock(&g_ptab.lock);
  return n;
}

void envd_ptab_clear(void) {
  pthread_mutex_lock(&g_ptab.lock);
  while (g_ptab.live) {
    envd_proc *p = g_ptab.live;
    g_ptab.live = p->next;
    envd_ptab_unref(p);
  }
  while (g_ptab.retained) {
    envd_proc *p = g_ptab.retained;
    g_ptab.retained = p->next;
    envd_ptab_unref(p);
  }
  pthread_mutex_unlock(&g_ptab.lock);
}

/* ---- Go-compatible exit descriptions ----------------------------------- */

static const char *go_signame(int sig) {
  switch (sig) {
    case SIGHUP:
      return "hangup";
    case SIGINT:
      return "interrupt";
    case SIGQUIT:
      return "quit";
    case SIGILL:
      return "illegal instruction";
    case SIGTRAP:
      return "trace/breakpoint trap";
    case SIGABRT:
      return "aborted";
    case SIGBUS:
      return "bus error";
    case SIGFPE:
      return "floating point exception";
    case SIGKILL:
      return "killed";
    case SIGUSR1:
      return "user defined signal 1";
    case SIGSEGV:
      return "segmentation fault";
    case SIGUSR2:
      return "user defined signal 2";
    case SIGPIPE:
      return "broken pipe";
    case SIGALRM:
      return "alarm clock";
    case SIGTERM:
      return "terminated";
    case SIGSTKFLT:
      return "stack fault";
    case SIGCHLD:
      return "child exited";
    case SIGCONT:
      return "continued";
    case SIGSTOP:
      return "stopped (signal)";
    case SIGTSTP:
      return "stopped";
    case SIGTTIN:
      return "stopped (tty input)";
    case SIGTTOU:
      return "stopped (tty output)";
    case SIGURG:
      return "urgent I/O condition";
    case SIGXCPU:
      return "CPU time limit exceeded";
    case SIGXFSZ:
      return "file size limit exceeded";
    case SIGVTALRM:
      return "virtual timer expired";
    case SIGPROF:
      return "profiling timer expired";
    case SIGWINCH:
      return "window changed";
    case SIGIO:
      return "I/O possible";
    case SIGPWR:
      return "power failure";
    case SIGSYS:
      return "bad system call";
    default:
      return NULL;
  }
}

uint64_t envd_ptab_oom_count(void) {
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

void envd_ptab_describe_exit(envd_proc *p) {
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
      snprintf(p->status + strlen(p->status), sizeof p->status - strlen(p->status),
               " (core dumped)");
    snprintf(p->error, sizeof p->error, "%s", p->status);
    if (sig == SIGKILL && g_envd.oom_counter && envd_ptab_oom_count() > p->oom_before)
      snprintf(p->error, sizeof p->error, "%s (out of memory)", p->status);
  } else {
    p->exit_code = -1;
    snprintf(p->status, sizeof p->status, "exit status -1");
    snprintf(p->error, sizeof p->error, "%s", p->status);
  }
}
