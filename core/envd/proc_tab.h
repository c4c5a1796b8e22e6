/* envd: the process table of the process service: the record of each
 * process envd started (envd_proc), the output queued for each stream that
 * watches it (envd_sub, envd_chunk), the live and retained lists under one
 * lock, reference counting, and Go-compatible exit descriptions. Knows
 * nothing of the I/O thread (proc_io.c) or of the RPCs (proc.c,
 * proc_rpc.c). Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_PROC_TAB_H
#define ASB_ENVD_PROC_TAB_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rpc.h"

/* E2B keeps an ended process 30 s for a late Connect. */
#define ENVD_PTAB_RETAIN_MS 30000u

/* Which output of a process: envd_chunk.kind, envd_ioref.kind. */
enum { ENVD_OUT_STDOUT = 1, ENVD_OUT_STDERR = 2, ENVD_OUT_PTY = 3 };

/* Output read from a process, queued for one stream. */
typedef struct envd_chunk {
  struct envd_chunk *next;
  int kind;
  size_t len;
  char data[];
} envd_chunk;

typedef struct envd_proc envd_proc;

/* A stream watching a process: its queue and the eventfd that wakes it. */
typedef struct envd_sub {
  struct envd_sub *next;
  int wake; /* eventfd */
  envd_chunk *head, *tail;
  size_t queued;
  int overflow;
} envd_sub;

/* The epoll tag of one of a process's output descriptors. */
typedef struct envd_ioref {
  envd_proc *p;
  int kind;
} envd_ioref;

struct envd_proc {
  int refs; /* atomic */
  envd_proc *next;
  pid_t pid;
  char *tag;
  cJSON *config;
  int is_pty;
  int fd_out, fd_err, fd_pty; /* owned by the I/O thread */
  int pty_eof;
  int fd_in; /* guarded by in_lock (also the pty writes) */
  int pty_w; /* pty fd for writes/resizes, under in_lock */
  pthread_mutex_t in_lock;
  pthread_mutex_t lock; /* subs, ended and end info */
  envd_sub *subs;
  envd_ioref io[3];
  int exited, wstatus;
  int kill_req;
  int timed_out;
  int throttled; /* output not read: a reader is full (under lock) */
  uint64_t throttled_since;
  int ended;
  uint64_t deadline_ms; /* lifetime, 0 = none */
  uint64_t retain_until;
  uint64_t oom_before;
  uint64_t t_exit, t_ended; /* ASB_TIMING: ns when reaped, when ended; 0 off */
  /* end info */
  int exit_code;
  int exited_normally;
  char status[96];
  char error[128];
};

/* A new record (one reference, the caller's; every fd -1), or NULL. */
envd_proc *envd_ptab_new(const char *tag, int is_pty);
void envd_ptab_ref(envd_proc *p);
/* Drops a reference; the last one frees the record (its fds closed), at
 * once or, while an I/O thread is attached, on that thread between two
 * epoll rounds (envd_ptab_free_grave). */
void envd_ptab_unref(envd_proc *p);

/* The table lock: guards the lists and each record's pid, exited, wstatus,
 * kill_req, timed_out, deadline_ms and retain_until. */
void envd_ptab_lock(void);
void envd_ptab_unlock(void);
/* Heads of the live and retained lists (linked through next). Lock held. */
envd_proc *envd_ptab_live(void);
envd_proc *envd_ptab_retained(void);
/* Adds p (pid set) to the live list; the table takes over the caller's
 * reference. A retained record with the same pid or tag is stale and is
 * dropped. Lock held. */
void envd_ptab_insert(envd_proc *p);
/* p has exited and its output is drained: describes its exit, marks it
 * ended, wakes its streams, closes its stdin and pty, and moves it from the
 * live to the retained list until now + ENVD_PTAB_RETAIN_MS. Lock held. */
void envd_ptab_retire(envd_proc *p);
/* Drops the retained records whose time is up; returns the earliest
 * retain_until of those left (0 = none). Lock held. */
uint64_t envd_ptab_expire(uint64_t now_ms);
/* The live process a ProcessSelector ({"pid"} or {"tag"}) names, or with
 * retained also an ended one kept for late Connects; a reference is taken.
 * NULL and e (invalid_argument, unimplemented, not_found). Takes the lock. */
envd_proc *envd_ptab_find(const cJSON *sel, int retained, envd_err *e);
/* Number of live processes. Takes the lock. */
size_t envd_ptab_count(void);
/* Drops every live and retained record (at shutdown). Takes the lock. */
void envd_ptab_clear(void);

/* While an I/O thread is attached, last references go to a grave that the
 * thread empties (envd_ptab_free_grave) between epoll rounds, never during
 * one, and wake_fd (an eventfd) is written to wake it. Detach empties the
 * grave. */
void envd_ptab_attach(int wake_fd);
void envd_ptab_detach(void);
void envd_ptab_free_grave(void);

/* Sets p's exit_code, exited_normally, status and error from p->wstatus as
 * Go's os.ProcessState does ("exit status 1", "signal: killed", " (core
 * dumped)"); a SIGKILL while the ASB_OOM_COUNTER's oom_kill count went up
 * since p->oom_before is reported "(out of memory)". */
void envd_ptab_describe_exit(envd_proc *p);
/* The oom_kill count of the ASB_OOM_COUNTER file (0 without one). */
uint64_t envd_ptab_oom_count(void);

/* Wakes a stream; frees a chunk list. */
void envd_ptab_wake_sub(envd_sub *s);
void envd_ptab_free_chunks(envd_chunk *c);

#endif
