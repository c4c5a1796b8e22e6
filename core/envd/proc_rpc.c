/* envd: the process service's unary methods (List, SendInput, SendSignal,
 * CloseStdin, Update), the StreamInput client stream, and the method table
 * of process.Process. SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "proc.h"
#include "proc_io.h"
#include "proc_rpc.h"
#include "proc_tab.h"
#include "proto/pjson.h"

/* ---- unary methods ----------------------------------------------------- */

static int list_fn(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  (void)c;
  (void)req;
  (void)e;
  cJSON *arr = cJSON_CreateArray();
  envd_ptab_lock();
  for (envd_proc *p = envd_ptab_live(); p; p = p->next) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "config", cJSON_Duplicate(p->config, 1));
    asbi_pj_add_u32(o, "pid", (uint32_t)p->pid);
    if (p->tag) cJSON_AddStringToObject(o, "tag", p->tag);
    cJSON_AddItemToArray(arr, o);
  }
  envd_ptab_unlock();
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
static int do_input(envd_proc *p, const cJSON *in, envd_err *e) {
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
  int rc = 0, no_stdin = 0;
  pthread_mutex_lock(&p->in_lock);
  if (sj) {
    if (p->is_pty) {
      envd_err_set(e, "internal",
                   "error writing to stdin: tty assigned to process — input "
                   "should be written to the pty, not the stdin");
      rc = -1;
    } else if (p->fd_in < 0) {
      no_stdin = 1;
      rc = -1;
    } else if (write_all(p->fd_in, data, n) != 0) {
      envd_err_set(e, "internal",
                   "error writing to stdin: error writing to stdin of process "
                   "'%d': %s",
                   p->pid, strerror(errno));
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
                   "'%d': %s",
                   p->pid, strerror(errno));
      rc = -1;
    }
  }
  pthread_mutex_unlock(&p->in_lock);
  if (no_stdin) {
    /* The end closes stdin after marking the process ended, and only then
     * moves it out of the live table: input in that window is for a
     * process that is gone, as it would be a moment later (not_found,
     * which clients take as "it ended before reading its input"), not a
     * process without stdin. */
    pthread_mutex_lock(&p->lock);
    int ended = p->ended;
    pthread_mutex_unlock(&p->lock);
    if (ended)
      envd_err_set(e, "not_found", "process with pid %d not found", (int)p->pid);
    else
      envd_err_set(e, "internal", "error writing to stdin: stdin not enabled or closed");
  }
  free(data);
  return rc;
}

static int send_input_fn(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  (void)c;
  envd_proc *p = envd_ptab_find(asbi_pj_field(req, "process"), 0, e);
  if (!p) return -1;
  int rc = do_input(p, asbi_pj_field(req, "input"), e);
  envd_ptab_unref(p);
  if (rc == 0) *resp = cJSON_CreateObject();
  return rc;
}

static int signal_fn(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  (void)c;
  static const asbi_pj_enum sigs[] = {
      {0, "SIGNAL_UNSPECIFIED"}, {15, "SIGNAL_SIGTERM"}, {9, "SIGNAL_SIGKILL"}, {0, NULL}};
  int sig = 0;
  if (asbi_pj_get_enum(req, "signal", sigs, &sig) != 0) {
    envd_err_set(e, "invalid_argument", "invalid signal");
    return -1;
  }
  envd_proc *p = envd_ptab_find(asbi_pj_field(req, "process"), 0, e);
  if (!p) return -1;
  if (sig != SIGKILL && sig != SIGTERM) {
    envd_ptab_unref(p);
    envd_err_set(
        e, "unimplemented", "invalid signal: %s",
        asbi_pj_enum_name(sigs, sig) ? asbi_pj_enum_name(sigs, sig) : "SIGNAL_UNSPECIFIED");
    return -1;
  }
  envd_ptab_lock();
  /* Only a kill stops the wait for the output to drain: a process may
   * handle SIGTERM and go on writing. */
  if (sig == SIGKILL) p->kill_req = 1;
  /* The whole process group, once (the process leads it; signalling both
   * would deliver the signal twice to the leader). */
  if (!p->ended && kill(-p->pid, sig) != 0) kill(p->pid, sig);
  envd_ptab_unlock();
  envd_pio_wake();
  envd_ptab_unref(p);
  *resp = cJSON_CreateObject();
  return 0;
}

static int close_stdin_fn(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  (void)c;
  envd_proc *p = envd_ptab_find(asbi_pj_field(req, "process"), 0, e);
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
  envd_ptab_unref(p);
  if (rc == 0) *resp = cJSON_CreateObject();
  return rc;
}

static int update_fn(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  (void)c;
  const cJSON *pty = asbi_pj_field(req, "pty");
  uint32_t cols = 0, rows = 0;
  if (pty) {
    const cJSON *size = asbi_pj_field(pty, "size");
    if (!cJSON_IsObject(pty) || asbi_pj_get_u32(size, "cols", &cols) != 0 ||
        asbi_pj_get_u32(size, "rows", &rows) != 0 || cols > 65535 || rows > 65535) {
      envd_err_set(e, "invalid_argument", "invalid pty size");
      return -1;
    }
  }
  envd_proc *p = envd_ptab_find(asbi_pj_field(req, "process"), 0, e);
  if (!p) return -1;
  int rc = 0;
  if (pty) {
    pthread_mutex_lock(&p->in_lock);
    struct winsize ws = {(unsigned short)rows, (unsigned short)cols, 0, 0};
    if (!p->is_pty || p->pty_w < 0) {
      envd_err_set(e, "internal", "error resizing tty: tty not assigned to process");
      rc = -1;
    } else if (ioctl(p->pty_w, TIOCSWINSZ, &ws) != 0) {
      envd_err_set(e, "internal", "error resizing tty: %s", strerror(errno));
      rc = -1;
    }
    pthread_mutex_unlock(&p->in_lock);
  }
  envd_ptab_unref(p);
  if (rc == 0) *resp = cJSON_CreateObject();
  return rc;
}

/* ---- StreamInput (client stream) --------------------------------------- */

typedef struct instream {
  envd_cstream base;
  envd_proc *p;
} instream;

static int in_message(envd_cstream *base, const cJSON *msg, envd_err *e) {
  instream *s = (instream *)base;
  const cJSON *start = asbi_pj_field(msg, "start");
  const cJSON *data = asbi_pj_field(msg, "data");
  const cJSON *ka = asbi_pj_field(msg, "keepalive");
  if (start) {
    envd_proc *p = envd_ptab_find(asbi_pj_field(start, "process"), 0, e);
    if (!p) return -1;
    if (s->p) envd_ptab_unref(s->p);
    s->p = p;
    return 0;
  }
  if (data) {
    if (!s->p) {
      envd_err_set(e, "failed_precondition", "input data received before the start event");
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
  if (s->p) envd_ptab_unref(s->p);
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
    {"/process.Process/Start", ENVD_SERVER_STREAM, NULL, envd_proc_start, NULL, 0},
    {"/process.Process/Connect", ENVD_SERVER_STREAM, NULL, envd_proc_connect, NULL, 0},
    {"/process.Process/List", ENVD_UNARY, list_fn, NULL, NULL, 0},
    {"/process.Process/SendInput", ENVD_UNARY, send_input_fn, NULL, NULL, 0},
    {"/process.Process/StreamInput", ENVD_CLIENT_STREAM, NULL, NULL, stream_input, 0},
    {"/process.Process/SendSignal", ENVD_UNARY, signal_fn, NULL, NULL, 0},
    {"/process.Process/CloseStdin", ENVD_UNARY, close_stdin_fn, NULL, NULL, 0},
    {"/process.Process/Update", ENVD_UNARY, update_fn, NULL, NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};
