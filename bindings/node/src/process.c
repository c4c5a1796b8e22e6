/* agent-sandbox Node binding: commands, processes and ptys.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "anode.h"
#include "events.h"
#include "gen.h"

/* ---- output callbacks -------------------------------------------------------------- */

static int emit_bytes(anode_call *c, int ev, const char *data, size_t len) {
  if (!c) return 0;
  if (atomic_load(&c->aborted)) return 0; /* cancelled: see js_abort */
  anode_msg *m = anode_msg_bytes(ev, data, len);
  if (!m) return 1;
  return anode_emit(c, m);
}

/* commands.run: userdata is the call. */
static int run_stdout(const char *data, size_t len, void *ud) {
  return emit_bytes(ud, EV_STDOUT, data, len);
}
static int run_stderr(const char *data, size_t len, void *ud) {
  return emit_bytes(ud, EV_STDERR, data, len);
}

/* A process handle's: userdata is its sink, which names the call waiting
 * on it (none: the output is dropped, as the C library would). */
static int sink_stdout(const char *data, size_t len, void *ud) {
  return emit_bytes(anode_sink_get(ud), EV_STDOUT, data, len);
}
static int sink_stderr(const char *data, size_t len, void *ud) {
  return emit_bytes(anode_sink_get(ud), EV_STDERR, data, len);
}

/* ---- results -------------------------------------------------------------------------- */

napi_value anode_command_result(napi_env env, const asb_command_result *r) {
  size_t n = 0;
  napi_value o = anode_obj(env);
  const char *s = asb_command_result_stdout(r, &n);
  anode_set(env, o, "stdout", anode_strn(env, s, n));
  s = asb_command_result_stderr(r, &n);
  anode_set(env, o, "stderr", anode_strn(env, s, n));
  anode_set(env, o, "exitCode", anode_num(env, asb_command_result_exit_code(r)));
  anode_set(env, o, "error", anode_str(env, asb_command_result_error(r)));
  return o;
}

static napi_value r_result(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  return c->out ? anode_command_result(env, c->out) : NULL;
}

static void c_result(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_command_result_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

/* Options of commands.run/start/connect: envs, cwd, user, timeoutMs,
 * requestTimeoutMs, tag, stdin (keep it open), stdinData (written, then
 * closed), onStdout/onStderr (stream those), discardOutput. */
static int read_command_opts(napi_env env, gen_call *c, napi_value o) {
  if (anode_opt_strv(env, o, "envs", &c->v[0]) || anode_opt_string(env, o, "cwd", &c->s[1]) ||
      anode_opt_string(env, o, "user", &c->s[2]) || anode_opt_string(env, o, "tag", &c->s[3]) ||
      anode_opt_long(env, o, "timeoutMs", &c->l[0]) ||
      anode_opt_long(env, o, "requestTimeoutMs", &c->l[1]) ||
      anode_opt_bool(env, o, "stdin", &c->i[0]) || anode_opt_bool(env, o, "onStdout", &c->i[1]) ||
      anode_opt_bool(env, o, "onStderr", &c->i[2]) ||
      anode_opt_bool(env, o, "discardOutput", &c->i[3]))
    return -1;
  if (!anode_is_nullish(env, o)) {
    bool has = false;
    napi_has_named_property(env, o, "stdinData", &has);
    if (has) {
      napi_value v;
      napi_get_named_property(env, o, "stdinData", &v);
      if (!anode_is_nullish(env, v) && anode_get_bytes(env, v, &c->data, &c->len)) return -1;
    }
  }
  return 0;
}

static asb_command_options command_opts(gen_call *c) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.envs = (const char *const *)c->v[0];
  o.cwd = c->s[1];
  o.user = c->s[2];
  o.tag = c->s[3];
  o.timeout_ms = c->l[0];
  o.request_timeout_ms = c->l[1];
  o.stdin_enabled = c->i[0];
  o.discard_output = c->i[3];
  o.stdin_data = c->data;
  o.stdin_len = c->data ? c->len : 0;
  o.cancel = c->base.cancel;
  o.kill_on_cancel = 1;
  return o;
}

static void w_run(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_command_options o = command_opts(c);
  if (c->i[1]) o.on_stdout = run_stdout;
  if (c->i[2]) o.on_stderr = run_stderr;
  o.userdata = base;
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, c->sb, c->s[0], &o);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = r;
}

/* commandsRun(sandbox, cmd, opts, onEvent, cb) -> {stdout, stderr,
 * exitCode, error} (also with ASB_ECOMMANDEXIT) */
static napi_value js_commands_run(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  if (!b || anode_get_string(env, argv[1], &c->s[0]) || read_command_opts(env, c, argv[2]) ||
      anode_call_on_event(env, &c->base, argv[3]))
    return gen_discard(env, c);
  c->base.work = w_run;
  c->base.result = r_result;
  c->base.cleanup = c_result;
  return anode_call_submit(env, &c->base, b);
}

/* ---- process handles --------------------------------------------------------------------- */

static napi_value process_value(napi_env env, gen_call *c) {
  asb_process *p = c->out;
  anode_sink *s = c->out2;
  c->out = c->out2 = NULL;
  napi_value o = anode_obj(env);
  anode_set(env, o, "pid", anode_num(env, asb_process_pid(p)));
  anode_set(env, o, "handle", anode_box_new(env, BOX_PROCESS, p, s));
  return o;
}

static napi_value r_process(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  return c->out ? process_value(env, c) : NULL;
}

static void c_process(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_process_free(c->out);
  anode_sink_free(c->out2);
  c->out = c->out2 = NULL;
  gen_cleanup(base);
}

enum { POP_START = 1, POP_CONNECT, POP_PTY };

static void w_open(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_process *p = NULL;
  int rc = ASB_EINVAL;
  if (c->op == POP_PTY) {
    asb_pty_options o = ASB_PTY_OPTIONS_INIT;
    o.cols = (unsigned)c->i[0];
    o.rows = (unsigned)c->i[1];
    o.envs = (const char *const *)c->v[0];
    o.cwd = c->s[1];
    o.user = c->s[2];
    o.timeout_ms = c->l[0];
    o.request_timeout_ms = c->l[1];
    o.on_data = sink_stdout;
    o.userdata = c->out2;
    o.cancel = base->cancel;
    rc = asb_pty_create(&p, c->sb, &o);
  } else {
    asb_command_options o = command_opts(c);
    o.on_stdout = sink_stdout;
    o.on_stderr = sink_stderr;
    o.userdata = c->out2;
    if (c->op == POP_START)
      rc = asb_commands_start(&p, c->sb, c->s[0], &o);
    else
      rc = asb_commands_connect(&p, c->sb, (unsigned)c->d[0], &o);
  }
  if (rc < 0) anode_call_fail(base, rc);
  c->out = p;
}

static napi_value submit_open(napi_env env, gen_call *c, anode_box *b, int op) {
  c->op = op;
  c->out2 = anode_sink_new();
  if (!c->out2) {
    napi_throw_error(env, NULL, "out of memory");
    return gen_discard(env, c);
  }
  c->base.work = w_open;
  c->base.result = r_process;
  c->base.cleanup = c_process;
  return anode_call_submit(env, &c->base, b);
}

/* commandsStart(sandbox, cmd, opts, cb) -> {pid, handle} */
static napi_value js_commands_start(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  if (!b || anode_get_string(env, argv[1], &c->s[0]) || read_command_opts(env, c, argv[2]))
    return gen_discard(env, c);
  return submit_open(env, c, b, POP_START);
}

/* commandsConnect(sandbox, pid, opts, cb) -> {pid, handle} */
static napi_value js_commands_connect(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  unsigned pid = 0;
  if (!b || anode_get_u32(env, argv[1], &pid) || read_command_opts(env, c, argv[2]))
    return gen_discard(env, c);
  c->d[0] = pid;
  return submit_open(env, c, b, POP_CONNECT);
}

/* ptyCreate(sandbox, opts {cols, rows, envs, cwd, user, timeoutMs,
 * requestTimeoutMs}, cb) -> {pid, handle} */
static napi_value js_pty_create(napi_env env, napi_callback_info info) {
  GEN_ARGS(3);
  gen_call *c = gen_new(env, argv[2]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  napi_value o = argv[1];
  if (!b || anode_opt_int(env, o, "cols", &c->i[0]) || anode_opt_int(env, o, "rows", &c->i[1]) ||
      anode_opt_strv(env, o, "envs", &c->v[0]) || anode_opt_string(env, o, "cwd", &c->s[1]) ||
      anode_opt_string(env, o, "user", &c->s[2]) || anode_opt_long(env, o, "timeoutMs", &c->l[0]) ||
      anode_opt_long(env, o, "requestTimeoutMs", &c->l[1]))
    return gen_discard(env, c);
  return submit_open(env, c, b, POP_PTY);
}

static void w_wait(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  anode_sink *s = c->out2;
  anode_sink_set(s, base);
  asb_command_result *r = NULL;
  int rc = asb_process_wait(&r, c->proc, &call);
  anode_sink_set(s, NULL);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = r;
  c->out2 = NULL;
}

/* processWait(process, callOpts, onEvent, cb) -> result; the output
 * arrives as events meanwhile. */
static napi_value js_process_wait(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  anode_box *b = gen_box(env, c, argv[0], BOX_PROCESS);
  if (!b || gen_read_callopts(env, c, argv[1]) || anode_call_on_event(env, &c->base, argv[2]))
    return gen_discard(env, c);
  c->proc = b->ptr;
  c->out2 = b->sink; /* borrowed: the box outlives the call */
  c->base.work = w_wait;
  c->base.result = r_result;
  c->base.cleanup = c_result;
  return anode_call_submit(env, &c->base, b);
}

enum { PR_KILL = 1, PR_SEND, PR_CLOSE };

static void w_process_op(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  int rc = ASB_EINVAL;
  switch (c->op) {
    case PR_KILL:
      rc = asb_process_kill(c->proc, &call);
      break;
    case PR_SEND:
      rc = asb_process_send_stdin(c->proc, c->data, c->len, &call);
      break;
    case PR_CLOSE:
      rc = asb_process_close_stdin(c->proc, &call);
      break;
  }
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

static napi_value r_rc(napi_env env, anode_call *base) {
  return base->rc >= 0 ? anode_num(env, base->rc) : NULL;
}

/* processOp(process, op, data, callOpts, cb): kill (1), sendStdin (2),
 * closeStdin (3) */
static napi_value js_process_op(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_box(env, c, argv[0], BOX_PROCESS);
  int32_t op = 0;
  if (!b) return gen_discard(env, c);
  napi_get_value_int32(env, argv[1], &op);
  if (op < PR_KILL || op > PR_CLOSE) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown process operation");
    return gen_discard(env, c);
  }
  if ((op == PR_SEND && anode_get_bytes(env, argv[2], &c->data, &c->len)) ||
      gen_read_callopts(env, c, argv[3]))
    return gen_discard(env, c);
  c->op = op;
  c->proc = b->ptr;
  c->base.work = w_process_op;
  c->base.result = r_rc;
  return anode_call_submit(env, &c->base, b);
}

/* ---- by pid -----------------------------------------------------------------------------------
 */

enum { CO_KILL = 1, CO_SIGNAL, CO_SEND, CO_CLOSE, CO_PTY_INPUT, CO_PTY_RESIZE, CO_PTY_KILL };

static void w_commands_op(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  unsigned pid = (unsigned)c->d[0];
  int rc = ASB_EINVAL;
  switch (c->op) {
    case CO_KILL:
      rc = asb_commands_kill(c->sb, pid, &call);
      break;
    case CO_SIGNAL:
      rc = asb_commands_signal(c->sb, pid, c->i[0], &call);
      break;
    case CO_SEND:
      rc = asb_commands_send_stdin(c->sb, pid, c->data, c->len, &call);
      break;
    case CO_CLOSE:
      rc = asb_commands_close_stdin(c->sb, pid, &call);
      break;
    case CO_PTY_INPUT:
      rc = asb_pty_send_input(c->sb, pid, c->data, c->len, &call);
      break;
    case CO_PTY_RESIZE:
      rc = asb_pty_resize(c->sb, pid, (unsigned)c->i[0], (unsigned)c->i[1], &call);
      break;
    case CO_PTY_KILL:
      rc = asb_pty_kill(c->sb, pid, &call);
      break;
  }
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

/* commandsOp(sandbox, op, pid, arg, callOpts, cb): kill (1), signal (2,
 * arg: the signal number), sendStdin (3, arg: data), closeStdin (4),
 * ptySendInput (5, data), ptyResize (6, {cols, rows}), ptyKill (7) */
static napi_value js_commands_op(napi_env env, napi_callback_info info) {
  GEN_ARGS(6);
  gen_call *c = gen_new(env, argv[5]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  int32_t op = 0;
  unsigned pid = 0;
  if (!b || anode_get_u32(env, argv[2], &pid)) return gen_discard(env, c);
  napi_get_value_int32(env, argv[1], &op);
  c->d[0] = pid;
  int bad = 0;
  switch (op) {
    case CO_SIGNAL:
      bad = napi_get_value_int32(env, argv[3], &c->i[0]) != napi_ok;
      break;
    case CO_SEND:
    case CO_PTY_INPUT:
      bad = anode_get_bytes(env, argv[3], &c->data, &c->len) != 0;
      break;
    case CO_PTY_RESIZE:
      bad = anode_opt_int(env, argv[3], "cols", &c->i[0]) ||
            anode_opt_int(env, argv[3], "rows", &c->i[1]);
      break;
    case CO_KILL:
    case CO_CLOSE:
    case CO_PTY_KILL:
      break;
    default:
      anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown command operation");
      bad = 1;
  }
  if (bad || gen_read_callopts(env, c, argv[4])) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "bad argument");
    return gen_discard(env, c);
  }
  c->op = op;
  c->base.work = w_commands_op;
  c->base.result = r_rc;
  return anode_call_submit(env, &c->base, b);
}

static void w_list(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  asb_process_list *l = NULL;
  int rc = asb_commands_list(&l, c->sb, &call);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = l;
}

static napi_value r_list(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (!c->out) return NULL;
  asb_process_list *l = c->out;
  size_t n = asb_process_list_count(l);
  napi_value a;
  napi_create_array_with_length(env, n, &a);
  for (size_t i = 0; i < n; i++) {
    const asb_process_info *p = asb_process_list_get(l, i);
    napi_value o = anode_obj(env);
    anode_set(env, o, "pid", anode_num(env, asb_process_info_pid(p)));
    anode_set(env, o, "tag", anode_str(env, asb_process_info_tag(p)));
    anode_set(env, o, "cmd", anode_str(env, asb_process_info_cmd(p)));
    anode_set(env, o, "args", anode_strv(env, asb_process_info_args(p)));
    anode_set(env, o, "envs", anode_strv(env, asb_process_info_envs(p)));
    anode_set(env, o, "cwd", anode_str(env, asb_process_info_cwd(p)));
    napi_set_element(env, a, (uint32_t)i, o);
  }
  return a;
}

static void c_list(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_process_list_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

/* commandsList(sandbox, callOpts, cb) */
static napi_value js_commands_list(napi_env env, napi_callback_info info) {
  GEN_ARGS(3);
  gen_call *c = gen_new(env, argv[2]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  if (!b || gen_read_callopts(env, c, argv[1])) return gen_discard(env, c);
  c->base.work = w_list;
  c->base.result = r_list;
  c->base.cleanup = c_list;
  return anode_call_submit(env, &c->base, b);
}

const anode_fn anode_process_fns[] = {{"commandsRun", js_commands_run},
                                      {"commandsStart", js_commands_start},
                                      {"commandsConnect", js_commands_connect},
                                      {"commandsOp", js_commands_op},
                                      {"commandsList", js_commands_list},
                                      {"ptyCreate", js_pty_create},
                                      {"processWait", js_process_wait},
                                      {"processOp", js_process_op},
                                      {NULL, NULL}};
