/* agent-sandbox Node binding: the server SDK's addon (agentsandbox_server
 * .node), on libagentsandbox-server only — what agent-sandbox/server
 * loads inside a template, where the client library is not needed.
 *
 * Pull mode (server.h): commands are registered without a C handler, so
 * their calls queue in the library; asb_server_fd (an eventfd) is watched
 * with a uv_poll_t on the event loop, and when it is readable the calls are
 * taken with asb_server_next_call(timeout 0: never waits) and handed to JS
 * as they are. The JS handler's result (or error) answers the call with
 * asb_server_call_reply / _fail — later, from the loop, whenever its
 * Promise settles. No server thread ever enters JS and no thread-safe
 * function is needed. Stopping (asb_server_stop, then the blocking
 * asb_server_wait and asb_server_free) runs on a thread of its own and
 * reports back through a uv_async_t.
 * SPDX-License-Identifier: Apache-2.0 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <agentsandbox/server.h>

typedef struct srv {
  asb_server *server; /* NULL once freed */
  napi_env env;
  napi_ref self;    /* the external, while it serves (keeps it alive) */
  napi_ref on_call; /* onCall(call, command, argsJson) */
  napi_ref on_stop; /* stop(cb) */
  napi_async_context ctx;
  uv_poll_t poll;
  uv_async_t done;
  int polling, stopping;
  pthread_t stopper;
} srv;

static napi_value undef(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

static napi_value str(napi_env env, const char *s) {
  napi_value v;
  if (!s) return undef(env);
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
  return v;
}

static napi_value fail(napi_env env, int rc) {
  const asb_error *e = asb_server_error_last();
  napi_throw_error(env, e->code == rc ? NULL : "ASB_ERROR", e->message);
  return NULL;
}

static char *get_str(napi_env env, napi_value v) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null) return NULL;
  size_t n = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) return NULL;
  char *s = malloc(n + 1);
  if (s) napi_get_value_string_utf8(env, v, s, n + 1, &n);
  return s;
}

static int get_prop(napi_env env, napi_value o, const char *k, napi_value *v) {
  bool has = false;
  napi_valuetype t;
  if (napi_typeof(env, o, &t) != napi_ok || t != napi_object) return 0;
  if (napi_has_named_property(env, o, k, &has) != napi_ok || !has) return 0;
  napi_get_named_property(env, o, k, v);
  napi_typeof(env, *v, &t);
  return t != napi_undefined && t != napi_null;
}

static char *prop_str(napi_env env, napi_value o, const char *k) {
  napi_value v;
  return get_prop(env, o, k, &v) ? get_str(env, v) : NULL;
}

static double prop_num(napi_env env, napi_value o, const char *k, double dflt) {
  napi_value v;
  double d = dflt;
  if (get_prop(env, o, k, &v)) napi_get_value_double(env, v, &d);
  return d;
}

static srv *srv_arg(napi_env env, napi_value v) {
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok || !p) {
    napi_throw_type_error(env, NULL, "expected a server handle");
    return NULL;
  }
  srv *s = p;
  if (!s->server) {
    napi_throw_error(env, "ERR_AGENT_SANDBOX_CLOSED", "the server was stopped");
    return NULL;
  }
  return s;
}

static void srv_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  srv *s = data;
  /* Only reached when it does not serve (serving holds a reference), so
   * freeing does not wait for anything. */
  asb_server_free(s->server);
  free(s);
}

/* serverNew({host, token, maxBodyBytes, maxConnections, shutdownGraceMs}) */
static napi_value js_new(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], ext;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  asb_server_options o = ASB_SERVER_OPTIONS_INIT;
  char *host = prop_str(env, argv[0], "host");
  char *token = prop_str(env, argv[0], "token");
  o.host = host;
  o.token = token;
  o.max_body_bytes = (size_t)prop_num(env, argv[0], "maxBodyBytes", 0);
  o.max_connections = (unsigned)prop_num(env, argv[0], "maxConnections", 0);
  o.shutdown_grace_ms = (long)prop_num(env, argv[0], "shutdownGraceMs", 0);
  srv *s = calloc(1, sizeof *s);
  int rc = s ? asb_server_new(&s->server, &o) : ASB_ENOMEM;
  free(host);
  free(token);
  if (rc < 0) {
    free(s);
    return fail(env, rc);
  }
  s->env = env;
  napi_create_external(env, s, srv_finalize, NULL, &ext);
  return ext;
}

/* serverRegister(server, name, description, hidden, [{name, type, required,
 * default, description}]) */
static napi_value js_register(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  srv *s = srv_arg(env, argv[0]);
  if (!s) return NULL;
  char *name = get_str(env, argv[1]), *desc = get_str(env, argv[2]);
  asb_server_command *cmd = NULL;
  int rc = name ? asb_server_register(&cmd, s->server, name, desc, NULL, NULL, NULL) : ASB_EINVAL;
  free(name);
  free(desc);
  if (rc < 0) return fail(env, rc);
  bool hidden = false;
  napi_get_value_bool(env, argv[3], &hidden);
  if (hidden && (rc = asb_server_command_set_hidden(cmd, 1)) < 0) return fail(env, rc);
  uint32_t n = 0;
  napi_get_array_length(env, argv[4], &n);
  for (uint32_t i = 0; i < n; i++) {
    napi_value a;
    napi_get_element(env, argv[4], i, &a);
    char *an = prop_str(env, a, "name"), *dv = prop_str(env, a, "default"),
         *ad = prop_str(env, a, "description");
    int type = (int)prop_num(env, a, "type", ASB_ARG_JSON);
    napi_value rv;
    bool req = false;
    if (get_prop(env, a, "required", &rv)) napi_get_value_bool(env, rv, &req);
    rc = asb_server_command_add_arg(cmd, an, type, req ? ASB_ARG_REQUIRED : 0, dv, ad);
    free(an);
    free(dv);
    free(ad);
    if (rc < 0) return fail(env, rc);
  }
  return undef(env);
}

typedef struct {
  asb_server_call *call; /* NULL once answered */
} held_call;

static void call_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  held_call *h = data;
  /* A call JS dropped without answering (it always answers; this is the
   * backstop): the client gets a 500 instead of waiting for the grace. */
  if (h->call) asb_server_call_fail(h->call, "Error", "the call was not answered");
  free(h);
}

/* Take every queued call and hand it to JS. */
static void on_readable(uv_poll_t *h, int status, int events) {
  (void)events;
  srv *s = h->data;
  napi_env env = s->env;
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
  for (int i = 0; i < 256 && s->server; i++) {
    asb_server_call *call = NULL;
    int rc = status < 0 ? ASB_ECANCELED : asb_server_next_call(&call, s->server, 0);
    if (rc == ASB_ETIMEOUT) break;
    if (rc < 0) { /* stopped */
      if (s->polling) {
        uv_poll_stop(&s->poll);
        s->polling = 0;
      }
      break;
    }
    napi_value fn, ext, argv[3], global, r;
    napi_get_reference_value(env, s->on_call, &fn);
    held_call *held = malloc(sizeof *held);
    if (!held) {
      asb_server_call_fail(call, "MemoryError", "out of memory");
      continue;
    }
    held->call = call;
    napi_create_external(env, held, call_finalize, NULL, &ext);
    argv[0] = ext;
    argv[1] = str(env, asb_server_call_command(call));
    argv[2] = str(env, asb_server_call_args_json(call));
    napi_get_global(env, &global);
    if (napi_make_callback(env, s->ctx, global, fn, 3, argv, &r) == napi_pending_exception) {
      napi_value exc;
      napi_get_and_clear_last_exception(env, &exc);
      napi_fatal_exception(env, exc);
    }
  }
  napi_close_handle_scope(env, scope);
}

/* serverStart(server, port, onCall) -> the port it listens on */
static napi_value js_start(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], name;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  srv *s = srv_arg(env, argv[0]);
  if (!s) return NULL;
  if (s->polling || s->stopping) {
    napi_throw_error(env, NULL, "the server is already running");
    return NULL;
  }
  int32_t port = 0;
  napi_get_value_int32(env, argv[1], &port);
  uv_loop_t *loop;
  napi_get_uv_event_loop(env, &loop);
  int rc = asb_server_start_background(s->server, port);
  if (rc < 0) return fail(env, rc);
  napi_create_reference(env, argv[2], 1, &s->on_call);
  napi_create_reference(env, argv[0], 1, &s->self);
  napi_create_string_utf8(env, "agent-sandbox-server", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, argv[0], name, &s->ctx);
  uv_poll_init(loop, &s->poll, asb_server_fd(s->server));
  s->poll.data = s;
  uv_poll_start(&s->poll, UV_READABLE, on_readable);
  s->polling = 1;
  napi_value p;
  napi_create_int32(env, asb_server_port(s->server), &p);
  return p;
}

/* serverReply(call, resultJson) / serverFail(call, type, message): answer
 * a call once (later answers are ignored). */
static napi_value answer(napi_env env, napi_callback_info info, int ok) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  void *p = NULL;
  if (napi_get_value_external(env, argv[0], &p) != napi_ok) {
    napi_throw_type_error(env, NULL, "expected a call");
    return NULL;
  }
  held_call *held = p;
  if (!held || !held->call) return undef(env); /* answered already */
  asb_server_call *call = held->call;
  held->call = NULL;
  napi_value v;
  int rc;
  if (ok) {
    char *json = get_str(env, argv[1]);
    rc = asb_server_call_set_result_json(call, json ? json : "null");
    free(json);
    if (rc < 0) {
      const char *m = asb_server_error_last()->message;
      rc = asb_server_call_fail(call, "TypeError", m);
    } else {
      rc = asb_server_call_reply(call);
    }
  } else {
    char *type = get_str(env, argv[1]), *msg = get_str(env, argv[2]);
    rc = asb_server_call_fail(call, type, msg ? msg : "");
    free(type);
    free(msg);
  }
  napi_create_int32(env, rc, &v);
  return v;
}

static napi_value js_reply(napi_env env, napi_callback_info info) {
  return answer(env, info, 1);
}
static napi_value js_fail(napi_env env, napi_callback_info info) {
  return answer(env, info, 0);
}

static void *stop_thread(void *arg) {
  srv *s = arg;
  asb_server_stop(s->server);
  asb_server_wait(s->server); /* calls in progress finish, up to the grace */
  asb_server_free(s->server);
  uv_async_send(&s->done);
  return NULL;
}

static void closed_async(uv_handle_t *h) {
  (void)h;
}

static void on_stopped(uv_async_t *h) {
  srv *s = h->data;
  napi_env env = s->env;
  pthread_join(s->stopper, NULL);
  s->server = NULL;
  uv_close((uv_handle_t *)&s->done, closed_async);
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
  napi_value fn = NULL, global, r;
  if (s->on_stop) napi_get_reference_value(env, s->on_stop, &fn);
  if (s->on_stop) napi_delete_reference(env, s->on_stop);
  if (s->on_call) napi_delete_reference(env, s->on_call);
  s->on_stop = s->on_call = NULL;
  napi_ref self = s->self;
  s->self = NULL;
  napi_get_global(env, &global);
  if (fn) napi_make_callback(env, s->ctx, global, fn, 0, NULL, &r);
  napi_async_destroy(env, s->ctx);
  if (self) napi_delete_reference(env, self);
  napi_close_handle_scope(env, scope);
}

static void poll_closed(uv_handle_t *h) {
  srv *s = h->data;
  /* Now the blocking part, off the loop. */
  if (pthread_create(&s->stopper, NULL, stop_thread, s) != 0) stop_thread(s);
}

/* serverStop(server, cb): stop accepting, let calls in progress finish (up
 * to shutdownGraceMs), release the server; cb() once done. */
static napi_value js_stop(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  srv *s = srv_arg(env, argv[0]);
  if (!s) return NULL;
  if (s->stopping || !s->self) return undef(env);
  s->stopping = 1;
  napi_create_reference(env, argv[1], 1, &s->on_stop);
  uv_loop_t *loop;
  napi_get_uv_event_loop(env, &loop);
  uv_async_init(loop, &s->done, on_stopped);
  s->done.data = s;
  asb_server_stop(s->server); /* queued calls are answered 503 at once */
  if (s->polling) uv_poll_stop(&s->poll);
  s->polling = 0;
  uv_close((uv_handle_t *)&s->poll, poll_closed);
  return undef(env);
}

/* serverPort(server) -> the port, 0 when it does not run */
static napi_value js_port(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], v;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  void *p = NULL;
  napi_get_value_external(env, argv[0], &p);
  srv *s = p;
  napi_create_int32(env, s && s->server ? asb_server_port(s->server) : 0, &v);
  return v;
}

NAPI_MODULE_INIT() {
  static const struct {
    const char *name;
    napi_callback fn;
  } fns[] = {{"serverNew", js_new},     {"serverRegister", js_register}, {"serverStart", js_start},
             {"serverReply", js_reply}, {"serverFail", js_fail},         {"serverStop", js_stop},
             {"serverPort", js_port}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value f;
    napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f);
    napi_set_named_property(env, exports, fns[i].name, f);
  }
  napi_value t;
  const struct {
    const char *k;
    int v;
  } types[] = {{"string", ASB_ARG_STRING},
               {"integer", ASB_ARG_INTEGER},
               {"float", ASB_ARG_FLOAT},
               {"boolean", ASB_ARG_BOOLEAN},
               {"json", ASB_ARG_JSON}};
  napi_create_object(env, &t);
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    napi_value n;
    napi_create_int32(env, types[i].v, &n);
    napi_set_named_property(env, t, types[i].k, n);
  }
  napi_set_named_property(env, exports, "argTypes", t);
  return exports;
}
