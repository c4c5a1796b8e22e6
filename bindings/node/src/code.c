/* agent-sandbox Node binding: code runs and contexts, named commands.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "anode.h"
#include "events.h"
#include "gen.h"

/* ---- code runs ---------------------------------------------------------------------- */

static int code_stdout(const char *data, size_t len, void *ud) {
  anode_call *c = ud;
  anode_msg *m = anode_msg_bytes(EV_STDOUT, data, len);
  return m ? anode_emit(c, m) : 1;
}

static int code_stderr(const char *data, size_t len, void *ud) {
  anode_call *c = ud;
  anode_msg *m = anode_msg_bytes(EV_STDERR, data, len);
  return m ? anode_emit(c, m) : 1;
}

/* A result's formats, copied (the result is only valid during the
 * callback) as NUL-separated name, value pairs. */
typedef struct {
  size_t n;
  char **names, **values;
  int is_main;
} result_copy;

static void result_copy_free(result_copy *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    free(r->names[i]);
    free(r->values[i]);
  }
  free(r->names);
  free(r->values);
  free(r);
}

static napi_value result_value(napi_env env, const asb_code_result *r) {
  napi_value o = anode_obj(env), f;
  size_t n = asb_code_result_format_count(r);
  napi_create_array_with_length(env, n, &f);
  for (size_t i = 0; i < n; i++) {
    const char *name = asb_code_result_format_name(r, i);
    napi_value pair;
    napi_create_array_with_length(env, 2, &pair);
    napi_set_element(env, pair, 0, anode_str(env, name));
    napi_set_element(env, pair, 1, anode_str(env, name ? asb_code_result_value(r, name) : NULL));
    napi_set_element(env, f, (uint32_t)i, pair);
  }
  anode_set(env, o, "formats", f);
  anode_set(env, o, "isMain", anode_bool(env, asb_code_result_is_main(r)));
  return o;
}

static napi_value build_result(napi_env env, anode_msg *m) {
  result_copy *r = m->extra;
  napi_value o = anode_obj(env), f;
  napi_create_array_with_length(env, r->n, &f);
  for (size_t i = 0; i < r->n; i++) {
    napi_value pair;
    napi_create_array_with_length(env, 2, &pair);
    napi_set_element(env, pair, 0, anode_str(env, r->names[i]));
    napi_set_element(env, pair, 1, anode_str(env, r->values[i]));
    napi_set_element(env, f, (uint32_t)i, pair);
  }
  anode_set(env, o, "formats", f);
  anode_set(env, o, "isMain", anode_bool(env, r->is_main));
  return o;
}

static void drop_result(anode_msg *m) {
  result_copy_free(m->extra);
  m->extra = NULL;
}

static int code_result(const asb_code_result *res, void *ud) {
  anode_call *c = ud;
  if (atomic_load(&c->aborted)) return 0; /* cancelled: see js_abort */
  anode_msg *m = calloc(1, sizeof *m);
  result_copy *r = calloc(1, sizeof *r);
  size_t n = asb_code_result_format_count(res);
  if (!m || !r) {
    free(m);
    free(r);
    return 1;
  }
  r->names = calloc(n ? n : 1, sizeof *r->names);
  r->values = calloc(n ? n : 1, sizeof *r->values);
  r->is_main = asb_code_result_is_main(res);
  m->cost = 64;
  for (size_t i = 0; r->names && r->values && i < n; i++) {
    const char *name = asb_code_result_format_name(res, i);
    const char *value = name ? asb_code_result_value(res, name) : NULL;
    r->names[i] = anode_strdup(name);
    r->values[i] = anode_strdup(value);
    r->n = i + 1;
    m->cost += (name ? strlen(name) : 0) + (value ? strlen(value) : 0);
  }
  m->event = EV_RESULT;
  m->extra = r;
  m->build = build_result;
  m->drop = drop_result;
  return anode_emit(c, m);
}

static napi_value build_error(napi_env env, anode_msg *m) {
  char **s = m->extra;
  napi_value o = anode_obj(env);
  anode_set(env, o, "name", anode_str(env, s[0]));
  anode_set(env, o, "value", anode_str(env, s[1]));
  anode_set(env, o, "traceback", anode_str(env, s[2]));
  return o;
}

static void drop_error(anode_msg *m) {
  char **s = m->extra;
  if (!s) return;
  free(s[0]);
  free(s[1]);
  free(s[2]);
  free(s);
  m->extra = NULL;
}

static int code_error(const char *name, const char *value, const char *tb, void *ud) {
  anode_call *c = ud;
  if (atomic_load(&c->aborted)) return 0; /* cancelled: see js_abort */
  anode_msg *m = calloc(1, sizeof *m);
  char **s = calloc(3, sizeof *s);
  if (!m || !s) {
    free(m);
    free(s);
    return 1;
  }
  s[0] = anode_strdup(name);
  s[1] = anode_strdup(value);
  s[2] = anode_strdup(tb);
  m->event = EV_CODE_ERROR;
  m->extra = s;
  m->cost = 64 + (tb ? strlen(tb) : 0);
  m->build = build_error;
  m->drop = drop_error;
  return anode_emit(c, m);
}

static void w_run_code(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.language = c->s[1];
  o.context_id = c->s[2];
  o.envs = (const char *const *)c->v[0];
  o.timeout_ms = c->l[0];
  o.request_timeout_ms = c->l[1];
  if (c->i[0]) o.on_stdout = code_stdout;
  if (c->i[1]) o.on_stderr = code_stderr;
  if (c->i[2]) o.on_result = code_result;
  if (c->i[3]) o.on_error = code_error;
  o.userdata = base;
  o.cancel = base->cancel;
  asb_execution *e = NULL;
  int rc = asb_code_run(&e, c->sb, c->s[0], &o);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = e;
}

static napi_value r_run_code(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_execution *e = c->out;
  if (!e) return NULL;
  napi_value o = anode_obj(env), a;
  size_t n = asb_execution_result_count(e);
  napi_create_array_with_length(env, n, &a);
  for (size_t i = 0; i < n; i++)
    napi_set_element(env, a, (uint32_t)i, result_value(env, asb_execution_result_get(e, i)));
  anode_set(env, o, "results", a);
  n = asb_execution_stdout_count(e);
  napi_create_array_with_length(env, n, &a);
  for (size_t i = 0; i < n; i++)
    napi_set_element(env, a, (uint32_t)i, anode_str(env, asb_execution_stdout_get(e, i)));
  anode_set(env, o, "stdout", a);
  n = asb_execution_stderr_count(e);
  napi_create_array_with_length(env, n, &a);
  for (size_t i = 0; i < n; i++)
    napi_set_element(env, a, (uint32_t)i, anode_str(env, asb_execution_stderr_get(e, i)));
  anode_set(env, o, "stderr", a);
  if (asb_execution_error_name(e)) {
    napi_value err = anode_obj(env);
    anode_set(env, err, "name", anode_str(env, asb_execution_error_name(e)));
    anode_set(env, err, "value", anode_str(env, asb_execution_error_value(e)));
    anode_set(env, err, "traceback", anode_str(env, asb_execution_error_traceback(e)));
    anode_set(env, o, "error", err);
  }
  int count = asb_execution_count(e);
  anode_set(env, o, "executionCount", count >= 0 ? anode_num(env, count) : NULL);
  anode_set(env, o, "text", anode_str(env, asb_execution_text(e)));
  return o;
}

static void c_run_code(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_execution_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

/* runCode(sandbox, code, opts {language, context, envs, timeoutMs,
 * requestTimeoutMs, onStdout, onStderr, onResult, onError: booleans},
 * onEvent, cb) -> {results, stdout, stderr, error?, executionCount, text} */
static napi_value js_run_code(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  napi_value o = argv[2];
  if (!b || anode_get_string(env, argv[1], &c->s[0]) ||
      anode_opt_string(env, o, "language", &c->s[1]) ||
      anode_opt_string(env, o, "context", &c->s[2]) || anode_opt_strv(env, o, "envs", &c->v[0]) ||
      anode_opt_long(env, o, "timeoutMs", &c->l[0]) ||
      anode_opt_long(env, o, "requestTimeoutMs", &c->l[1]) ||
      anode_opt_bool(env, o, "onStdout", &c->i[0]) ||
      anode_opt_bool(env, o, "onStderr", &c->i[1]) ||
      anode_opt_bool(env, o, "onResult", &c->i[2]) || anode_opt_bool(env, o, "onError", &c->i[3]) ||
      anode_call_on_event(env, &c->base, argv[3]))
    return gen_discard(env, c);
  c->base.work = w_run_code;
  c->base.result = r_run_code;
  c->base.cleanup = c_run_code;
  return anode_call_submit(env, &c->base, b);
}

/* ---- contexts ------------------------------------------------------------------------ */

enum { XOP_CREATE = 1, XOP_LIST, XOP_RESTART, XOP_REMOVE };

static void w_context(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  int rc = ASB_EINVAL;
  switch (c->op) {
    case XOP_CREATE: {
      asb_code_context *x = NULL;
      rc = asb_code_context_create(&x, c->sb, c->s[0], c->s[1], &call);
      c->out = x;
      break;
    }
    case XOP_LIST: {
      asb_code_context_list *l = NULL;
      rc = asb_code_contexts_list(&l, c->sb, &call);
      c->out2 = l;
      break;
    }
    case XOP_RESTART:
      rc = asb_code_context_restart(c->sb, c->s[0], &call);
      break;
    case XOP_REMOVE:
      rc = asb_code_context_remove(c->sb, c->s[0], &call);
      break;
  }
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

static napi_value context_value(napi_env env, const asb_code_context *x) {
  napi_value o = anode_obj(env);
  anode_set(env, o, "id", anode_str(env, asb_code_context_id(x)));
  anode_set(env, o, "language", anode_str(env, asb_code_context_language(x)));
  anode_set(env, o, "cwd", anode_str(env, asb_code_context_cwd(x)));
  return o;
}

static napi_value r_context(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (base->rc < 0) return NULL;
  if (c->out) return context_value(env, c->out);
  if (c->out2) {
    size_t n = asb_code_context_list_count(c->out2);
    napi_value a;
    napi_create_array_with_length(env, n, &a);
    for (size_t i = 0; i < n; i++)
      napi_set_element(env, a, (uint32_t)i,
                       context_value(env, asb_code_context_list_get(c->out2, i)));
    return a;
  }
  return NULL;
}

static void c_context(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_code_context_free(c->out);
  asb_code_context_list_free(c->out2);
  c->out = c->out2 = NULL;
  gen_cleanup(base);
}

/* codeContext(sandbox, op, a, b, callOpts, cb): create (1; a: language,
 * b: cwd), list (2), restart (3; a: id), remove (4; a: id) */
static napi_value js_code_context(napi_env env, napi_callback_info info) {
  GEN_ARGS(6);
  gen_call *c = gen_new(env, argv[5]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  int32_t op = 0;
  if (!b) return gen_discard(env, c);
  napi_get_value_int32(env, argv[1], &op);
  if (op < XOP_CREATE || op > XOP_REMOVE) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown context operation");
    return gen_discard(env, c);
  }
  if ((!anode_is_nullish(env, argv[2]) && anode_get_string(env, argv[2], &c->s[0])) ||
      (!anode_is_nullish(env, argv[3]) && anode_get_string(env, argv[3], &c->s[1])) ||
      gen_read_callopts(env, c, argv[4]))
    return gen_discard(env, c);
  c->op = op;
  c->base.work = w_context;
  c->base.result = r_context;
  c->base.cleanup = c_context;
  return anode_call_submit(env, &c->base, b);
}

/* ---- named commands ---------------------------------------------------------------------- */

static void w_named(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_named_command_options o = ASB_NAMED_COMMAND_OPTIONS_INIT;
  o.port = c->i[0];
  o.timeout_ms = c->l[0];
  o.cancel = base->cancel;
  int rc;
  if (c->op == 1) {
    char *json = NULL;
    rc = asb_sandbox_run_command(&json, c->sb, c->s[0], c->s[1], &o);
    c->out = json;
  } else {
    asb_named_command_list *l = NULL;
    rc = asb_sandbox_commands_list(&l, c->sb, &o);
    c->out2 = l;
  }
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

static napi_value r_named(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (base->rc < 0) return NULL;
  if (c->op == 1) return anode_str(env, c->out);
  asb_named_command_list *l = c->out2;
  size_t n = l ? asb_named_command_list_count(l) : 0;
  napi_value a;
  napi_create_array_with_length(env, n, &a);
  for (size_t i = 0; i < n; i++) {
    const asb_named_command *cmd = asb_named_command_list_get(l, i);
    napi_value o = anode_obj(env), args;
    anode_set(env, o, "name", anode_str(env, asb_named_command_name(cmd)));
    anode_set(env, o, "description", anode_str(env, asb_named_command_description(cmd)));
    size_t na = asb_named_command_arg_count(cmd);
    napi_create_array_with_length(env, na, &args);
    for (size_t k = 0; k < na; k++) {
      napi_value arg = anode_obj(env);
      anode_set(env, arg, "name", anode_str(env, asb_named_command_arg_name(cmd, k)));
      anode_set(env, arg, "type", anode_str(env, asb_named_command_arg_type(cmd, k)));
      anode_set(env, arg, "required", anode_bool(env, asb_named_command_arg_required(cmd, k)));
      anode_set(env, arg, "default", anode_str(env, asb_named_command_arg_default(cmd, k)));
      anode_set(env, arg, "description", anode_str(env, asb_named_command_arg_description(cmd, k)));
      napi_set_element(env, args, (uint32_t)k, arg);
    }
    anode_set(env, o, "args", args);
    napi_set_element(env, a, (uint32_t)i, o);
  }
  return a;
}

static void c_named(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_free(c->out);
  asb_named_command_list_free(c->out2);
  c->out = c->out2 = NULL;
  gen_cleanup(base);
}

/* named(sandbox, op, name, argsJson, opts {port, timeoutMs}, cb): run (1)
 * -> the result's JSON text; list (2) -> the commands */
static napi_value js_named(napi_env env, napi_callback_info info) {
  GEN_ARGS(6);
  gen_call *c = gen_new(env, argv[5]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  int32_t op = 0;
  if (!b) return gen_discard(env, c);
  napi_get_value_int32(env, argv[1], &op);
  if ((op == 1 &&
       (anode_get_string(env, argv[2], &c->s[0]) ||
        (!anode_is_nullish(env, argv[3]) && anode_get_string(env, argv[3], &c->s[1])))) ||
      anode_opt_int(env, argv[4], "port", &c->i[0]) ||
      anode_opt_long(env, argv[4], "timeoutMs", &c->l[0]))
    return gen_discard(env, c);
  c->op = op == 1 ? 1 : 2;
  c->base.work = w_named;
  c->base.result = r_named;
  c->base.cleanup = c_named;
  return anode_call_submit(env, &c->base, b);
}

const anode_fn anode_code_fns[] = {
    {"runCode", js_run_code}, {"codeContext", js_code_context}, {"named", js_named}, {NULL, NULL}};
