/* Commands, processes and PTYs: envd's process service.
 * SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/pjson.h"
#include "util/base64.h"
#include "util/util.h"
#include "envd.h"

#define DEFAULT_COMMAND_TIMEOUT_MS 60000L

struct asb_command_result {
  asbi_buf out, err;
  int exit_code;
  char *error;
  char *status;
};

/* A process handle's life (docs/abi.md, Lifecycle): `life` counts the
 * user's reference and one per call in flight; its stop token, requested by
 * asb_process_free, rides on every request made for the handle. `halt`
 * (asb_process_stop, disconnect, free) ends waits: the output stream carries
 * it. Neither stop, disconnect nor free takes `mu`, which a wait holds while
 * it runs callbacks: they never wait for a call. */
struct asb_process {
  asbi_life life;
  asb_cancel *halt;
  asb_cancel *ends; /* what ends waits: halt, or for asb_commands_run's own
                       process the sandbox handle's stop */
  asb_sandbox *sb;
  unsigned pid;
  int is_pty;
  pthread_mutex_t mu;  /* one waiter at a time */
  pthread_mutex_t smu; /* guards stream, waiting, disconnected; never held
                          across I/O or a callback */
  int waiting;         /* a wait owns the stream */
  int disconnected;    /* close the stream when the wait gives it back */
  asbi_envd_stream *stream;
  asb_data_fn on_stdout, on_stderr;
  void *userdata;
  int discard;
  char *user;
  asb_command_result *result; /* filled as events arrive */
  int ended;
  /* asb_process_read: the chunk it hands out (valid until the next call) */
  int want_chunk, chunk_kind;
  asbi_buf chunk;
};

/* ---- options ----------------------------------------------------------------- */

/* Version 1 ended before stdin_data. */
static size_t command_options_size(unsigned int version) {
  return version >= 2 ? sizeof(asb_command_options) : offsetof(asb_command_options, stdin_data);
}

ASBI_DEFINE_OPTIONS_INIT_SIZED(asb_command_options, ASB_COMMAND_OPTIONS_VERSION,
                               ASB_COMMAND_OPTIONS_INIT, command_options_size)

ASBI_DEFINE_OPTIONS_INIT(asb_pty_options, ASB_PTY_OPTIONS_VERSION, ASB_PTY_OPTIONS_INIT)

/* ---- results ------------------------------------------------------------------ */

static asb_command_result *result_new(void) {
  asb_command_result *r = calloc(1, sizeof *r);
  if (r) {
    asbi_buf_init(&r->out, 0);
    asbi_buf_init(&r->err, 0);
  }
  return r;
}

static asb_command_result *result_dup(const asb_command_result *r) {
  asb_command_result *d = result_new();
  if (!d) return NULL;
  d->exit_code = r->exit_code;
  d->error = asbi_strdup(r->error);
  d->status = asbi_strdup(r->status);
  if (asbi_buf_append(&d->out, r->out.data ? r->out.data : "", r->out.len) ||
      asbi_buf_append(&d->err, r->err.data ? r->err.data : "", r->err.len) ||
      (r->error && !d->error) || (r->status && !d->status)) {
    asb_command_result_free(d);
    return NULL;
  }
  return d;
}

void asb_command_result_free(asb_command_result *r) {
  if (!r) return;
  asbi_buf_free(&r->out);
  asbi_buf_free(&r->err);
  free(r->error);
  free(r->status);
  free(r);
}

const char *asb_command_result_stdout(const asb_command_result *r, size_t *len) {
  if (len) *len = r ? r->out.len : 0;
  return r && r->out.data ? r->out.data : "";
}

const char *asb_command_result_stderr(const asb_command_result *r, size_t *len) {
  if (len) *len = r ? r->err.len : 0;
  return r && r->err.data ? r->err.data : "";
}

int asb_command_result_exit_code(const asb_command_result *r) {
  return r ? r->exit_code : -1;
}

const char *asb_command_result_error(const asb_command_result *r) {
  return r ? r->error : NULL;
}

/* ---- request building ---------------------------------------------------------- */

static int add_envs(cJSON *proc, const char *const *envs) {
  if (!envs || !*envs) return 0;
  cJSON *m = cJSON_AddObjectToObject(proc, "envs");
  if (!m) return -1;
  for (; *envs; envs++) {
    const char *eq = strchr(*envs, '=');
    if (!eq || eq == *envs) {
      asbi_err(ASB_EINVAL, "environment entry '%s' is not KEY=VALUE", *envs);
      return -2;
    }
    char *k = asbi_strndup(*envs, (size_t)(eq - *envs));
    if (!k || !cJSON_AddStringToObject(m, k, eq + 1)) {
      free(k);
      return -1;
    }
    free(k);
  }
  return 0;
}

/* {"process":{"cmd","args","envs","cwd"},"stdin"?,"tag"?,"pty"?} */
static cJSON *start_request(asb_sandbox *sb, const char *cmd, const char *const *args,
                            const char *const *envs, const char *cwd, const char *tag, int stdin_on,
                            unsigned cols, unsigned rows, int *rc) {
  cJSON *req = cJSON_CreateObject();
  cJSON *proc = req ? cJSON_AddObjectToObject(req, "process") : NULL;
  cJSON *argv = proc ? cJSON_CreateArray() : NULL;
  *rc = ASB_ENOMEM;
  if (!argv) goto fail;
  cJSON_AddItemToObject(proc, "cmd", cJSON_CreateString(cmd));
  for (; args && *args; args++) cJSON_AddItemToArray(argv, cJSON_CreateString(*args));
  cJSON_AddItemToObject(proc, "args", argv);
  int e = add_envs(proc, envs);
  if (e == -2) {
    *rc = ASB_EINVAL;
    cJSON_Delete(req);
    return NULL;
  }
  if (e) goto fail;
  if (cwd && *cwd) cJSON_AddStringToObject(proc, "cwd", cwd);
  if (tag && *tag) cJSON_AddStringToObject(req, "tag", tag);
  if (cols) {
    cJSON *pty = cJSON_AddObjectToObject(req, "pty");
    cJSON *size = pty ? cJSON_AddObjectToObject(pty, "size") : NULL;
    if (!size) goto fail;
    cJSON_AddNumberToObject(size, "cols", cols);
    cJSON_AddNumberToObject(size, "rows", rows);
  }
  /* The stdin flag exists from envd 0.3.0; older ones always kept stdin. */
  if (asbi_envd_at_least(sb, 0, 3, 0)) cJSON_AddBoolToObject(req, "stdin", stdin_on);
  *rc = ASB_OK;
  return req;
fail:
  cJSON_Delete(req);
  asbi_oom();
  return NULL;
}

static cJSON *pid_request(unsigned pid) {
  cJSON *req = cJSON_CreateObject();
  cJSON *sel = req ? cJSON_AddObjectToObject(req, "process") : NULL;
  if (!sel || !cJSON_AddNumberToObject(sel, "pid", pid)) {
    cJSON_Delete(req);
    return NULL;
  }
  return req;
}

/* ---- events ---------------------------------------------------------------------- */

static const cJSON *event_of(const cJSON *msg, const char *kind) {
  return asbi_pj_field(asbi_pj_field(msg, "event"), kind);
}

/* Wait for the `start` event of a freshly opened stream. */
static int read_start(asb_process *p, const char *what) {
  for (;;) {
    cJSON *msg = NULL;
    int rc = asbi_envd_stream_next(p->stream, &msg, 0, NULL);
    if (rc) return rc;
    if (!msg) return asbi_err(ASB_EPROTOCOL, "%s: stream ended before the process started", what);
    const cJSON *start = event_of(msg, "start");
    if (start) {
      uint32_t pid = 0;
      if (asbi_pj_get_u32(start, "pid", &pid) != 0 || pid == 0) {
        cJSON_Delete(msg);
        return asbi_err(ASB_EPROTOCOL, "%s: start event without a pid", what);
      }
      p->pid = pid;
      cJSON_Delete(msg);
      return ASB_OK;
    }
    int keepalive = event_of(msg, "keepalive") != NULL;
    cJSON_Delete(msg);
    if (!keepalive) return asbi_err(ASB_EPROTOCOL, "%s: the first event was not 'start'", what);
  }
}

static int deliver(asb_process *p, const cJSON *data, const char *kind, int out_kind,
                   asb_data_fn fn, asbi_buf *keep) {
  unsigned char *bytes = NULL;
  const char *view;
  size_t n = 0;
  if (!p->discard) {
    /* Decode straight onto the kept output; the callback sees it there
     * (keep only grows in pump, which holds p->mu, so it stays put). */
    size_t at = keep->len;
    int r = asbi_pj_append_bytes(data, kind, keep, &n);
    if (r == -2) return asbi_oom();
    if (r != 0) return asbi_err(ASB_EPROTOCOL, "process %u: invalid base64 output", p->pid);
    view = keep->data + at;
  } else {
    if (asbi_pj_get_bytes(data, kind, &bytes, &n) != 0)
      return asbi_err(ASB_EPROTOCOL, "process %u: invalid base64 output", p->pid);
    view = (const char *)bytes;
  }
  int rc = ASB_OK;
  if (asb_cancel_is_requested(p->ends)) {
    rc = asbi_err(ASB_ECANCELED, "process %u: stopped", p->pid); /* no callback after */
  } else if (n && fn) {
    int cb = fn(view, n, p->userdata);
    if (cb) {
      rc = cb < 0 ? cb : ASB_EUSER;
      if (asb_error_last()->code != rc) asbi_err(rc, "process %u: output callback aborted", p->pid);
    }
  }
  if (rc == ASB_OK && n && p->want_chunk) {
    asbi_buf_clear(&p->chunk);
    if (asbi_buf_append(&p->chunk, view, n)) rc = asbi_oom();
    p->chunk_kind = out_kind;
    p->want_chunk = 0; /* got it: pump returns */
  }
  free(bytes);
  return rc;
}

/* Consume events until `end` (or wait_ms). */
static int pump(asb_process *p, long wait_ms, asb_cancel *extra) {
  uint64_t deadline = wait_ms > 0 ? asbi_now_ms() + (uint64_t)wait_ms : 0;
  while (!p->ended) {
    if (!p->stream)
      return asbi_err(ASB_EINVAL,
                      "process %u: disconnected; reattach with "
                      "asb_commands_connect",
                      p->pid);
    if (asb_cancel_is_requested(p->ends))
      return asbi_err(ASB_ECANCELED,
                      "process %u: stopped (asb_process_stop, "
                      "disconnect or free)",
                      p->pid);
    long left = 0;
    if (deadline) {
      uint64_t now = asbi_now_ms();
      if (now >= deadline)
        return asbi_err(ASB_ETIMEOUT, "process %u: still running after %ld ms", p->pid, wait_ms);
      left = (long)(deadline - now);
    }
    cJSON *msg = NULL;
    int rc = asbi_envd_stream_next(p->stream, &msg, left, extra);
    if (rc == ASB_ECANCELED && asb_cancel_is_requested(p->ends))
      return asbi_err(ASB_ECANCELED,
                      "process %u: stopped (asb_process_stop, "
                      "disconnect or free)",
                      p->pid);
    if (rc) {
      if (rc == ASB_ETIMEOUT && strcmp(asb_error_last()->remote_code, "deadline_exceeded") == 0)
        asbi_err_prefix("process %u reached its timeout and was killed", p->pid);
      return rc;
    }
    if (!msg)
      return asbi_err(ASB_EPROTOCOL, "process %u: command ended without an end event", p->pid);
    const cJSON *ev = asbi_pj_field(msg, "event");
    const cJSON *data = asbi_pj_field(ev, "data");
    const cJSON *end = asbi_pj_field(ev, "end");
    if (data) {
      if (asbi_pj_field(data, "stdout"))
        rc = deliver(p, data, "stdout", ASB_OUTPUT_STDOUT, p->on_stdout, &p->result->out);
      else if (asbi_pj_field(data, "stderr"))
        rc = deliver(p, data, "stderr", ASB_OUTPUT_STDERR, p->on_stderr, &p->result->err);
      else if (asbi_pj_field(data, "pty"))
        rc = deliver(p, data, "pty", ASB_OUTPUT_PTY, p->on_stdout, &p->result->out);
    } else if (end) {
      int32_t code = 0;
      const char *err = NULL, *status = NULL;
      asbi_pj_get_i32(end, "exitCode", &code);
      asbi_pj_get_str(end, "error", &err);
      asbi_pj_get_str(end, "status", &status);
      p->result->exit_code = code;
      p->result->error = asbi_strdup(err && *err ? err : NULL);
      p->result->status = asbi_strdup(status);
      p->ended = 1;
    }
    cJSON_Delete(msg);
    if (rc) return rc;
    if (p->chunk_kind) return ASB_OK; /* asb_process_read got its chunk */
  }
  /* Drain to the end-stream frame so the connection can be reused. */
  if (p->stream) {
    cJSON *msg = NULL;
    while (asbi_envd_stream_next(p->stream, &msg, 1000, extra) == ASB_OK && msg) cJSON_Delete(msg);
    asbi_envd_stream_close(p->stream);
    p->stream = NULL;
  }
  return ASB_OK;
}

/* take: hand over p's own result rather than a copy of it (for callers
 * that free p next; the output is not copied a second time). */
static int finish_result(asb_process *p, asb_command_result **out, int take) {
  asb_command_result *r = p->result;
  int rc = ASB_OK;
  if (r->exit_code != 0) {
    const char *why = r->error ? r->error : (r->status ? r->status : "");
    rc = asbi_err(ASB_ECOMMANDEXIT, "process %u exited with code %d%s%s", p->pid, r->exit_code,
                  *why ? ": " : "", why);
    if (r->error && strstr(r->error, "out of memory")) asbi_err_set_reason("oom");
  }
  if (out && take) {
    *out = r;
    p->result = NULL;
  } else if (out && !(*out = result_dup(r))) {
    rc = asbi_oom();
  }
  return rc;
}

/* ---- handles --------------------------------------------------------------------- */

static asb_process *process_new(asb_sandbox *sb, const char *user) {
  asb_process *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->result = result_new();
  if (!p->result || asbi_life_init(&p->life) || asb_cancel_new(&p->halt)) {
    asb_command_result_free(p->result);
    asbi_life_fini(&p->life);
    free(p);
    return NULL;
  }
  p->ends = p->halt;
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->smu, NULL);
  asbi_sandbox_ref(sb);
  p->sb = sb;
  p->user = asbi_strdup(user);
  return p;
}

static void process_unref(asb_process *p) {
  if (!asbi_life_drop(&p->life)) return;
  asbi_envd_stream_close(p->stream);
  asb_command_result_free(p->result);
  asbi_sandbox_unref(p->sb);
  asb_cancel_free(p->halt);
  asbi_life_fini(&p->life);
  asbi_buf_free(&p->chunk);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->smu);
  free(p->user);
  free(p);
}

/* Hold p for a call on it (ASBI_PROCESS_CALL: released at every return). */
static asb_process *process_hold(asb_process *p) {
  if (p) asbi_life_hold(&p->life);
  return p;
}
static void process_release_(asb_process *const *p) {
  if (*p) process_unref(*p);
}
#define ASBI_PROCESS_CALL(p)                                                            \
  asb_process *const held_process_ __attribute__((cleanup(process_release_), unused)) = \
      process_hold(p)

void asb_process_stop(asb_process *p) {
  if (p) asb_cancel_request(p->halt);
}

void asb_process_disconnect(asb_process *p) {
  if (!p) return;
  asb_process_stop(p);
  pthread_mutex_lock(&p->smu);
  p->disconnected = 1;
  asbi_envd_stream *s = NULL;
  if (!p->waiting) { /* else the wait closes it on its way out */
    s = p->stream;
    p->stream = NULL;
  }
  pthread_mutex_unlock(&p->smu);
  asbi_envd_stream_close(s);
}

void asb_process_free(asb_process *p) {
  if (!p) return;
  asbi_life_stop(&p->life);
  asb_process_disconnect(p);
  process_unref(p);
}

unsigned int asb_process_pid(const asb_process *p) {
  return p ? p->pid : 0;
}

static long lifetime_of(long timeout_ms) {
  if (timeout_ms == 0) return DEFAULT_COMMAND_TIMEOUT_MS;
  return timeout_ms < 0 ? 0 : timeout_ms;
}

/* Open p's output stream and read its start event. Opening is a call on the
 * sandbox: cancel (the options') and the sandbox's stop end it. From then
 * on the stream honours stream_cancel and stream_stop only: the handle's
 * halt token (the opener's cancel token may go away), or for
 * asb_commands_run's own process the run's cancel and the sandbox's stop. */
static int open_process(asb_sandbox *sb, cJSON *req, const char *method, const char *user,
                        long lifetime, long request_timeout, asb_cancel *cancel,
                        asb_cancel *stream_cancel, asb_cancel *stream_stop, const char *what,
                        asb_process *p) {
  asbi_envd_call c;
  asbi_envd_call_from(&c, sb, NULL, user);
  c.timeout_ms = asbi_client_timeout(sb->client, request_timeout);
  c.cancel = cancel;
  int rc = asbi_envd_stream_open(sb, method, req, &c, lifetime, what, &p->stream);
  if (rc == ASB_OK) rc = read_start(p, what);
  if (rc == ASB_OK) asbi_envd_stream_set_tokens(p->stream, stream_cancel, stream_stop);
  return rc;
}

static int signal_pid(asb_sandbox *sb, unsigned int pid, int sig, const asb_call_options *call,
                      asb_cancel *stop);
static int send_input(asb_sandbox *sb, unsigned pid, const void *data, size_t len, int pty,
                      const asb_call_options *call, asb_cancel *stop, const char *what);
static int close_stdin(asb_sandbox *sb, unsigned int pid, const asb_call_options *call,
                       asb_cancel *stop);

/* Kill p after a call on it failed or was cancelled: its own bounded
 * request, which no token of that call cancels; the call's error stays. */
static void kill_after(asb_process *p) {
  asbi_err_saved saved;
  asbi_err_save(&saved);
  asb_call_options kc = ASB_CALL_OPTIONS_INIT;
  kc.timeout_ms = 5000;
  signal_pid(p->sb, p->pid, ASB_SIGNAL_KILL, &kc, NULL);
  asbi_err_restore(&saved);
}

/* 1 when the last error says a write to the process's stdin found its
 * pipe closed (EPIPE). Case ignored: Go's envd says "broken pipe". */
static int stdin_pipe_broken(void) {
  const char *m = asb_error_last()->message;
  for (const char *p = m; p && *p; p++)
    if (strncasecmp(p, "broken pipe", 11) == 0) return 1;
  return 0;
}

/* own: a process for asb_commands_run, which holds it only for the call.
 * Everything a binding would otherwise sequence around a start happens
 * here: stdin_data is written and stdin closed once the command runs (if
 * that fails the command is killed: it would wait for its input forever),
 * and with kill_on_cancel the start is not cut short by the cancel token
 * (a start cut short could leave the command running with its pid
 * unknown; the request timeout bounds it) but a cancel that came
 * meanwhile kills the command right after. */
static int start_process(asb_process **out, asb_sandbox *sb, const char *cmd,
                         const asb_command_options *o, int own) {
  if (!sb || !cmd || !out)
    return asbi_err(ASB_EINVAL, "commands.start: sandbox, cmd and out are required");
  ASBI_CHECK_VERSION(o, ASB_COMMAND_OPTIONS_VERSION, "asb_command_options");
  asb_command_options d = ASB_COMMAND_OPTIONS_INIT;
  if (!o) o = &d;
  const void *in = ASBI_OPT(o, 2, stdin_data, NULL);
  size_t in_len = ASBI_OPT(o, 2, stdin_len, 0);
  int kill = ASBI_OPT(o, 2, kill_on_cancel, 0);
  if (!in && in_len) return asbi_err(ASB_EINVAL, "commands.start: stdin_len without stdin_data");
  const char *args[] = {"-l", "-c", cmd, NULL};
  int rc;
  cJSON *req = start_request(sb, "/bin/bash", args, o->envs, o->cwd, o->tag, o->stdin_enabled || in,
                             0, 0, &rc);
  if (!req) return rc;
  asb_process *p = process_new(sb, o->user);
  if (!p) {
    cJSON_Delete(req);
    return asbi_oom();
  }
  p->on_stdout = o->on_stdout;
  p->on_stderr = o->on_stderr;
  p->userdata = o->userdata;
  p->discard = o->discard_output;
  if (own) p->ends = sb->life.stop;
  rc = open_process(sb, req, "process.Process/Start", o->user, lifetime_of(o->timeout_ms),
                    o->request_timeout_ms, kill ? NULL : o->cancel, own ? o->cancel : NULL,
                    own ? sb->life.stop : p->halt, "commands.start", p);
  cJSON_Delete(req);
  if (rc == ASB_OK && kill &&
      (asb_cancel_is_requested(o->cancel) || asbi_life_stopped(&sb->life))) {
    kill_after(p);
    rc = asbi_err(ASB_ECANCELED,
                  "commands.start: cancelled while starting; the command "
                  "was killed");
  }
  if (rc == ASB_OK && in) {
    asb_call_options c = ASB_CALL_OPTIONS_INIT;
    c.cancel = o->cancel;
    if (in_len)
      rc = send_input(sb, p->pid, in, in_len, 0, &c, sb->life.stop, "commands.start: stdin");
    if (rc == ASB_OK) rc = close_stdin(sb, p->pid, &c, sb->life.stop);
    /* A command may end, or close its stdin, before its input is all
     * written or closed (it read what it needed, or none): envd no longer
     * knows the pid, or its write fails with EPIPE (envd reports it only
     * in the message, "...: Broken pipe", as E2B's envd does). Either way
     * the command cannot be waiting for that input, so it is no failure
     * of the start and nothing to kill; its end says how it went. */
    if (rc == ASB_ENOTFOUND || (rc == ASB_ERROR && stdin_pipe_broken())) rc = ASB_OK;
    if (rc) kill_after(p);
  }
  if (rc) {
    asb_process_free(p);
    return rc;
  }
  *out = p;
  return ASB_OK;
}

int asb_commands_start(asb_process **out, asb_sandbox *sb, const char *cmd,
                       const asb_command_options *o) {
  ASBI_SANDBOX_CALL(sb);
  return start_process(out, sb, cmd, o, 0);
}

int asb_commands_connect(asb_process **out, asb_sandbox *sb, unsigned int pid,
                         const asb_command_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !out || !pid)
    return asbi_err(ASB_EINVAL, "commands.connect: sandbox, pid and out are required");
  ASBI_CHECK_VERSION(o, ASB_COMMAND_OPTIONS_VERSION, "asb_command_options");
  asb_command_options d = ASB_COMMAND_OPTIONS_INIT;
  if (!o) o = &d;
  cJSON *req = pid_request(pid);
  asb_process *p = req ? process_new(sb, o->user) : NULL;
  if (!p) {
    cJSON_Delete(req);
    return asbi_oom();
  }
  p->on_stdout = o->on_stdout;
  p->on_stderr = o->on_stderr;
  p->userdata = o->userdata;
  p->discard = o->discard_output;
  int rc = open_process(sb, req, "process.Process/Connect", o->user,
                        o->timeout_ms > 0 ? o->timeout_ms : 0, o->request_timeout_ms, o->cancel,
                        NULL, p->halt, "commands.connect", p);
  cJSON_Delete(req);
  if (rc) {
    asb_process_free(p);
    return rc;
  }
  *out = p;
  return ASB_OK;
}

static int process_wait(asb_process *p, const asb_call_options *call, asb_command_result **out,
                        int take) {
  if (out) *out = NULL;
  if (!p) return asbi_err(ASB_EINVAL, "process.wait: process is NULL");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  pthread_mutex_lock(&p->mu);
  pthread_mutex_lock(&p->smu);
  int gone = p->disconnected;
  p->waiting = !gone;
  pthread_mutex_unlock(&p->smu);
  int rc = gone ? asbi_err(ASB_EINVAL,
                           "process %u: disconnected; reattach with "
                           "asb_commands_connect",
                           p->pid)
                : pump(p, call ? call->timeout_ms : 0, call ? call->cancel : NULL);
  if (rc == ASB_OK) rc = finish_result(p, out, take);
  /* Give the stream back; close it if a disconnect came meanwhile. */
  asbi_envd_stream *s = NULL;
  pthread_mutex_lock(&p->smu);
  p->waiting = 0;
  if (p->disconnected) {
    s = p->stream;
    p->stream = NULL;
  }
  pthread_mutex_unlock(&p->smu);
  pthread_mutex_unlock(&p->mu);
  asbi_envd_stream_close(s);
  return rc;
}

int asb_process_wait(asb_command_result **out, asb_process *p, const asb_call_options *call) {
  ASBI_PROCESS_CALL(p);
  return process_wait(p, call, out, 0);
}

int asb_process_read(int *kind, const char **data, size_t *len, asb_process *p,
                     const asb_call_options *call) {
  ASBI_PROCESS_CALL(p);
  if (!kind || !data || !len || !p) return asbi_err(ASB_EINVAL, "process.read: bad arguments");
  *kind = 0;
  *data = NULL;
  *len = 0;
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  pthread_mutex_lock(&p->mu);
  int rc = ASB_OK;
  if (!p->ended) {
    pthread_mutex_lock(&p->smu);
    int gone = p->disconnected;
    p->waiting = !gone;
    pthread_mutex_unlock(&p->smu);
    if (gone) {
      rc = asbi_err(ASB_EINVAL,
                    "process %u: disconnected; reattach with "
                    "asb_commands_connect",
                    p->pid);
    } else {
      p->want_chunk = 1;
      p->chunk_kind = 0;
      rc = pump(p, call ? call->timeout_ms : 0, call ? call->cancel : NULL);
      p->want_chunk = 0;
    }
    asbi_envd_stream *s = NULL;
    pthread_mutex_lock(&p->smu);
    p->waiting = 0;
    if (p->disconnected) {
      s = p->stream;
      p->stream = NULL;
    }
    pthread_mutex_unlock(&p->smu);
    asbi_envd_stream_close(s);
  }
  if (rc == ASB_OK && p->chunk_kind) {
    *kind = p->chunk_kind;
    *data = p->chunk.data;
    *len = p->chunk.len;
    p->chunk_kind = 0;
    rc = 1;
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

int asb_commands_run(asb_command_result **out, asb_sandbox *sb, const char *cmd,
                     const asb_command_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (out) *out = NULL;
  uint64_t t0 = asbi_timing_ns();
  asb_process *p = NULL;
  int rc = start_process(&p, sb, cmd, o, 1);
  if (rc) return rc;
  uint64_t t_start = asbi_timing_ns();
  asb_call_options call = ASB_CALL_OPTIONS_INIT;
  call.timeout_ms = -1;                /* the command's own lifetime bounds it */
  rc = process_wait(p, &call, out, 1); /* p is freed next: take its result */
  if (t0) {
    uint64_t t_end = asbi_timing_ns();
#define US(a, b) ((double)((int64_t)((b) - (a))) / 1e3)
    asbi_timing_line(
        "run pid=%u encode_us=%.1f to_head_us=%.1f start_ev_us=%.1f "
        "to_end_us=%.1f total_us=%.1f",
        p->pid, US(t0, asbi_t_built), US(asbi_t_built, asbi_t_head), US(asbi_t_head, t_start),
        US(t_start, t_end), US(t0, t_end));
#undef US
  }
  if (rc == ASB_ECANCELED && o && ASBI_OPT(o, 2, kill_on_cancel, 0)) kill_after(p);
  asb_process_free(p);
  return rc;
}

/* ---- unary process calls --------------------------------------------------------- */

/* stop: the acting handle's (the sandbox's, or a process handle's). */
static int unary_pid(asb_sandbox *sb, unsigned pid, const char *method, cJSON *req,
                     const asb_call_options *call, int idempotent, asb_cancel *stop,
                     const char *what) {
  if (!req) return asbi_oom();
  asbi_envd_call c;
  asbi_envd_call_from(&c, sb, call, NULL);
  c.idempotent = idempotent;
  c.stop = stop;
  int rc = asbi_envd_unary(sb, method, req, &c, what, NULL);
  cJSON_Delete(req);
  if (rc == ASB_ENOTFOUND) asbi_err_prefix("process %u", pid);
  return rc;
}

static int signal_pid(asb_sandbox *sb, unsigned int pid, int sig, const asb_call_options *call,
                      asb_cancel *stop) {
  if (!sb || !pid) return asbi_err(ASB_EINVAL, "commands.signal: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  const char *name = sig == ASB_SIGNAL_KILL   ? "SIGNAL_SIGKILL"
                     : sig == ASB_SIGNAL_TERM ? "SIGNAL_SIGTERM"
                                              : NULL;
  if (!name)
    return asbi_err(ASB_EINVAL,
                    "commands.signal: only SIGTERM (15) and SIGKILL "
                    "(9) can be sent, not %d",
                    sig);
  cJSON *req = pid_request(pid);
  if (req && !cJSON_AddStringToObject(req, "signal", name)) {
    cJSON_Delete(req);
    req = NULL;
  }
  return unary_pid(sb, pid, "process.Process/SendSignal", req, call, 1, stop, "commands.signal");
}

int asb_commands_signal(asb_sandbox *sb, unsigned int pid, int sig, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  return signal_pid(sb, pid, sig, call, sb ? sb->life.stop : NULL);
}

int asb_commands_kill(asb_sandbox *sb, unsigned int pid, const asb_call_options *call) {
  return asb_commands_signal(sb, pid, ASB_SIGNAL_KILL, call);
}

static int send_input(asb_sandbox *sb, unsigned pid, const void *data, size_t len, int pty,
                      const asb_call_options *call, asb_cancel *stop, const char *what) {
  if (!sb || !pid || (!data && len)) return asbi_err(ASB_EINVAL, "%s: bad arguments", what);
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  cJSON *req = pid_request(pid);
  cJSON *in = req ? cJSON_AddObjectToObject(req, "input") : NULL;
  if (!in) {
    cJSON_Delete(req);
    return asbi_oom();
  }
  /* Input is bytes: zero-length input is still sent (proto3 would omit an
   * empty field, which envd would see as no input at all). */
  if (len == 0) {
    cJSON_AddStringToObject(in, pty ? "pty" : "stdin", "");
  } else if (asbi_pj_add_bytes(in, pty ? "pty" : "stdin", data, len) != 0) {
    cJSON_Delete(req);
    return asbi_oom();
  }
  return unary_pid(sb, pid, "process.Process/SendInput", req, call, 0, stop, what);
}

int asb_commands_send_stdin(asb_sandbox *sb, unsigned int pid, const void *data, size_t len,
                            const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  return send_input(sb, pid, data, len, 0, call, sb ? sb->life.stop : NULL, "commands.send_stdin");
}

int asb_pty_send_input(asb_sandbox *sb, unsigned int pid, const void *data, size_t len,
                       const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  return send_input(sb, pid, data, len, 1, call, sb ? sb->life.stop : NULL, "pty.send_input");
}

static int close_stdin(asb_sandbox *sb, unsigned int pid, const asb_call_options *call,
                       asb_cancel *stop) {
  if (!sb || !pid) return asbi_err(ASB_EINVAL, "commands.close_stdin: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  if (!asbi_envd_at_least(sb, 0, 5, 2))
    return asbi_err(ASB_EUNSUPPORTED,
                    "commands.close_stdin needs envd 0.5.2 or newer (this "
                    "sandbox runs %s)",
                    sb->envd_version);
  return unary_pid(sb, pid, "process.Process/CloseStdin", pid_request(pid), call, 1, stop,
                   "commands.close_stdin");
}

int asb_commands_close_stdin(asb_sandbox *sb, unsigned int pid, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  return close_stdin(sb, pid, call, sb ? sb->life.stop : NULL);
}

int asb_process_kill(asb_process *p, const asb_call_options *call) {
  ASBI_PROCESS_CALL(p);
  if (!p) return asbi_err(ASB_EINVAL, "process.kill: process is NULL");
  return signal_pid(p->sb, p->pid, ASB_SIGNAL_KILL, call, p->life.stop);
}

int asb_process_send_stdin(asb_process *p, const void *data, size_t len,
                           const asb_call_options *call) {
  ASBI_PROCESS_CALL(p);
  if (!p) return asbi_err(ASB_EINVAL, "process.send_stdin: process is NULL");
  return send_input(p->sb, p->pid, data, len, p->is_pty, call, p->life.stop, "process.send_stdin");
}

int asb_process_close_stdin(asb_process *p, const asb_call_options *call) {
  ASBI_PROCESS_CALL(p);
  if (!p) return asbi_err(ASB_EINVAL, "process.close_stdin: process is NULL");
  return close_stdin(p->sb, p->pid, call, p->life.stop);
}

/* ---- listing ----------------------------------------------------------------------- */

struct asb_process_info {
  unsigned pid;
  char *tag, *cmd, *cwd;
  char **args, **envs;
};

struct asb_process_list {
  size_t n;
  asb_process_info *items;
};

static void strv_free(char **v) {
  if (!v) return;
  for (char **p = v; *p; p++) free(*p);
  free(v);
}

void asb_process_list_free(asb_process_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) {
    asb_process_info *it = &l->items[i];
    free(it->tag);
    free(it->cmd);
    free(it->cwd);
    strv_free(it->args);
    strv_free(it->envs);
  }
  free(l->items);
  free(l);
}

static char **strv_from_array(const cJSON *a) {
  size_t n = cJSON_IsArray(a) ? (size_t)cJSON_GetArraySize(a) : 0;
  char **v = calloc(n + 1, sizeof *v);
  if (!v) return NULL;
  size_t i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, a) {
    if (cJSON_IsString(it) && !(v[i++] = asbi_strdup(it->valuestring))) {
      strv_free(v);
      return NULL;
    }
  }
  return v;
}

static char **strv_from_map(const cJSON *m) {
  size_t n = cJSON_IsObject(m) ? (size_t)cJSON_GetArraySize(m) : 0;
  char **v = calloc(n + 1, sizeof *v);
  if (!v) return NULL;
  size_t i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, m) {
    if (!cJSON_IsString(it)) continue;
    asbi_buf b = ASBI_BUF_INIT;
    asbi_buf_printf(&b, "%s=%s", it->string, it->valuestring);
    if (!(v[i++] = asbi_buf_detach(&b, NULL))) {
      strv_free(v);
      return NULL;
    }
  }
  return v;
}

int asb_commands_list(asb_process_list **out, asb_sandbox *sb, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !out) return asbi_err(ASB_EINVAL, "commands.list: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_envd_call c;
  asbi_envd_call_from(&c, sb, call, NULL);
  c.idempotent = 1;
  cJSON *req = cJSON_CreateObject(), *resp = NULL;
  if (!req) return asbi_oom();
  int rc = asbi_envd_unary(sb, "process.Process/List", req, &c, "commands.list", &resp);
  cJSON_Delete(req);
  if (rc) return rc;
  const cJSON *procs = asbi_pj_field(resp, "processes");
  size_t n = cJSON_IsArray(procs) ? (size_t)cJSON_GetArraySize(procs) : 0;
  asb_process_list *l = calloc(1, sizeof *l);
  if (l) l->items = calloc(n ? n : 1, sizeof *l->items);
  if (!l || !l->items) {
    free(l);
    cJSON_Delete(resp);
    return asbi_oom();
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, procs) {
    asb_process_info *pi = &l->items[l->n++];
    const cJSON *cfg = asbi_pj_field(it, "config");
    const char *s = NULL;
    uint32_t pid = 0;
    asbi_pj_get_u32(it, "pid", &pid);
    pi->pid = pid;
    asbi_pj_get_str(it, "tag", &s);
    pi->tag = asbi_strdup(s);
    s = NULL;
    asbi_pj_get_str(cfg, "cmd", &s);
    pi->cmd = asbi_strdup(s ? s : "");
    s = NULL;
    asbi_pj_get_str(cfg, "cwd", &s);
    pi->cwd = asbi_strdup(s);
    pi->args = strv_from_array(asbi_pj_field(cfg, "args"));
    pi->envs = strv_from_map(asbi_pj_field(cfg, "envs"));
    if (!pi->cmd || !pi->args || !pi->envs) {
      asb_process_list_free(l);
      cJSON_Delete(resp);
      return asbi_oom();
    }
  }
  cJSON_Delete(resp);
  *out = l;
  return ASB_OK;
}

size_t asb_process_list_count(const asb_process_list *l) {
  return l ? l->n : 0;
}

const asb_process_info *asb_process_list_get(const asb_process_list *l, size_t i) {
  return l && i < l->n ? &l->items[i] : NULL;
}

unsigned int asb_process_info_pid(const asb_process_info *i) {
  return i ? i->pid : 0;
}
const char *asb_process_info_tag(const asb_process_info *i) {
  return i ? i->tag : NULL;
}
const char *asb_process_info_cmd(const asb_process_info *i) {
  return i ? i->cmd : NULL;
}
const char *const *asb_process_info_args(const asb_process_info *i) {
  return i ? (const char *const *)i->args : NULL;
}
const char *const *asb_process_info_envs(const asb_process_info *i) {
  return i ? (const char *const *)i->envs : NULL;
}
const char *asb_process_info_cwd(const asb_process_info *i) {
  return i ? i->cwd : NULL;
}

/* ---- PTYs -------------------------------------------------------------------------- */

int asb_pty_create(asb_process **out, asb_sandbox *sb, const asb_pty_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !out) return asbi_err(ASB_EINVAL, "pty.create: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_PTY_OPTIONS_VERSION, "asb_pty_options");
  asb_pty_options d = ASB_PTY_OPTIONS_INIT;
  if (!o) o = &d;
  unsigned cols = o->cols ? o->cols : 80, rows = o->rows ? o->rows : 24;
  if (cols > 65535 || rows > 65535)
    return asbi_err(ASB_EINVAL, "pty.create: size %ux%u out of range", cols, rows);
  /* The terminal environment E2B's SDKs set, under the caller's envs. */
  size_t n = 0;
  while (o->envs && o->envs[n]) n++;
  const char **envs = calloc(n + 4, sizeof *envs);
  if (!envs) return asbi_oom();
  envs[0] = "TERM=xterm-256color";
  envs[1] = "LANG=C.UTF-8";
  envs[2] = "LC_ALL=C.UTF-8";
  for (size_t i = 0; i < n; i++) envs[3 + i] = o->envs[i];
  const char *args[] = {"-i", "-l", NULL};
  int rc;
  cJSON *req = start_request(sb, "/bin/bash", args, envs, o->cwd, NULL, 0, cols, rows, &rc);
  free(envs);
  if (!req) return rc;
  asb_process *p = process_new(sb, o->user);
  if (!p) {
    cJSON_Delete(req);
    return asbi_oom();
  }
  p->is_pty = 1;
  p->on_stdout = o->on_data;
  p->userdata = o->userdata;
  rc = open_process(sb, req, "process.Process/Start", o->user, lifetime_of(o->timeout_ms),
                    o->request_timeout_ms, o->cancel, NULL, p->halt, "pty.create", p);
  cJSON_Delete(req);
  if (rc) {
    asb_process_free(p);
    return rc;
  }
  *out = p;
  return ASB_OK;
}

int asb_pty_resize(asb_sandbox *sb, unsigned int pid, unsigned int cols, unsigned int rows,
                   const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !pid || !cols || !rows || cols > 65535 || rows > 65535)
    return asbi_err(ASB_EINVAL, "pty.resize: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  cJSON *req = pid_request(pid);
  cJSON *pty = req ? cJSON_AddObjectToObject(req, "pty") : NULL;
  cJSON *size = pty ? cJSON_AddObjectToObject(pty, "size") : NULL;
  if (!size) {
    cJSON_Delete(req);
    return asbi_oom();
  }
  cJSON_AddNumberToObject(size, "cols", cols);
  cJSON_AddNumberToObject(size, "rows", rows);
  return unary_pid(sb, pid, "process.Process/Update", req, call, 1, sb->life.stop, "pty.resize");
}

int asb_pty_kill(asb_sandbox *sb, unsigned int pid, const asb_call_options *call) {
  return asb_commands_kill(sb, pid, call);
}
