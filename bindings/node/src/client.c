/* agent-sandbox Node binding: clients, sandboxes and the control plane,
 * sessions, templates.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "anode.h"
#include "events.h"
#include "gen.h"

/* ---- clients ----------------------------------------------------------------- */

static void w_client_new(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.api_key = c->s[0];
  o.api_url = c->s[1];
  o.domain = c->s[2];
  o.sandbox_url = c->s[3];
  o.user_agent = c->s[4];
  o.request_timeout_ms = c->l[0];
  o.debug = c->i[0];
  o.max_retries = c->i[1];
  o.headers = (const char *const *)c->v[0];
  asb_client *cl = NULL;
  int rc = asb_client_new(&cl, &o);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = cl;
}

static napi_value r_client_new(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (!c->out) return NULL;
  asb_client *cl = c->out;
  napi_value o = anode_obj(env);
  anode_set(env, o, "apiUrl", anode_str(env, asb_client_api_url(cl)));
  anode_set(env, o, "domain", anode_str(env, asb_client_domain(cl)));
  anode_set(env, o, "sandboxUrl", anode_str(env, asb_client_sandbox_url(cl)));
  anode_set(env, o, "debug", anode_bool(env, asb_client_is_debug(cl)));
  anode_set(env, o, "requestTimeoutMs", anode_num(env, (double)asb_client_request_timeout_ms(cl)));
  anode_set(env, o, "hasApiKey", anode_bool(env, asb_client_has_api_key(cl)));
  c->out = NULL;
  anode_set(env, o, "handle", anode_box_new(env, BOX_CLIENT, cl, NULL));
  return o;
}

static void c_free_out_client(anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (c->out) asb_client_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

/* clientNew(opts, cb) */
static napi_value js_client_new(napi_env env, napi_callback_info info) {
  GEN_ARGS(2);
  gen_call *c = gen_new(env, argv[1]);
  if (!c) return NULL;
  napi_value o = argv[0];
  c->l[0] = 0;
  if (anode_opt_string(env, o, "apiKey", &c->s[0]) ||
      anode_opt_string(env, o, "apiUrl", &c->s[1]) ||
      anode_opt_string(env, o, "domain", &c->s[2]) ||
      anode_opt_string(env, o, "sandboxUrl", &c->s[3]) ||
      anode_opt_string(env, o, "userAgent", &c->s[4]) ||
      anode_opt_long(env, o, "requestTimeoutMs", &c->l[0]) ||
      anode_opt_int(env, o, "debug", &c->i[0]) || anode_opt_int(env, o, "maxRetries", &c->i[1]) ||
      anode_opt_strv(env, o, "headers", &c->v[0]))
    return gen_discard(env, c);
  c->base.work = w_client_new;
  c->base.result = r_client_new;
  c->base.cleanup = c_free_out_client;
  return anode_call_submit(env, &c->base, NULL);
}

/* ---- sandbox handles ------------------------------------------------------------- */

static napi_value sandbox_value(napi_env env, asb_sandbox *sb) {
  napi_value o = anode_obj(env);
  anode_set(env, o, "sandboxId", anode_str(env, asb_sandbox_id(sb)));
  anode_set(env, o, "envdVersion", anode_str(env, asb_sandbox_envd_version(sb)));
  anode_set(env, o, "sandboxDomain", anode_str(env, asb_sandbox_domain(sb)));
  anode_set(env, o, "envdAccessToken", anode_str(env, asb_sandbox_envd_access_token(sb)));
  anode_set(env, o, "trafficAccessToken", anode_str(env, asb_sandbox_traffic_access_token(sb)));
  /* a fork's "processes" or "files", else undefined */
  anode_set(env, o, "forkMode", anode_str(env, asb_sandbox_fork_mode(sb)));
  anode_set(env, o, "handle", anode_box_new(env, BOX_SANDBOX, sb, NULL));
  return o;
}

static napi_value r_sandbox(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (!c->out) return NULL;
  asb_sandbox *sb = c->out;
  c->out = NULL;
  return sandbox_value(env, sb);
}

static void c_free_out_sandbox(anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (c->out) asb_sandbox_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

static void w_sandbox_create(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = c->s[0];
  o.timeout_ms = c->l[0];
  o.metadata = (const char *const *)c->v[0];
  o.envs = (const char *const *)c->v[1];
  o.auto_pause = c->i[0];
  o.request_timeout_ms = c->l[1];
  o.allow_internet_access = c->i[1];
  o.network_json = c->s[1];
  o.auto_pause_files_only = c->i[2];
  o.auto_resume = c->i[3];
  o.volume_mounts = (const char *const *)c->v[2];
  o.mcp_json = c->s[2];
  o.cancel = base->cancel;
  asb_sandbox *sb = NULL;
  int rc = asb_sandbox_create(&sb, c->client, &o);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = sb;
}

/* sandboxCreate(client, opts, cb) */
static napi_value js_sandbox_create(napi_env env, napi_callback_info info) {
  GEN_ARGS(3);
  gen_call *c = gen_new(env, argv[2]);
  if (!c) return NULL;
  anode_box *b = gen_client(env, c, argv[0]);
  napi_value o = argv[1];
  if (!b || anode_opt_string(env, o, "template", &c->s[0]) ||
      anode_opt_long(env, o, "timeoutMs", &c->l[0]) ||
      anode_opt_strv(env, o, "metadata", &c->v[0]) || anode_opt_strv(env, o, "envs", &c->v[1]) ||
      anode_opt_bool(env, o, "autoPause", &c->i[0]) ||
      anode_opt_long(env, o, "requestTimeoutMs", &c->l[1]) ||
      anode_opt_int(env, o, "allowInternetAccess", &c->i[1]) ||
      anode_opt_string(env, o, "networkJson", &c->s[1]) ||
      anode_opt_bool(env, o, "autoPauseFilesOnly", &c->i[2]) ||
      anode_opt_bool(env, o, "autoResume", &c->i[3]) ||
      anode_opt_strv(env, o, "volumeMounts", &c->v[2]) ||
      anode_opt_string(env, o, "mcpJson", &c->s[2]))
    return gen_discard(env, c);
  c->base.work = w_sandbox_create;
  c->base.result = r_sandbox;
  c->base.cleanup = c_free_out_sandbox;
  return anode_call_submit(env, &c->base, b);
}

static void w_sandbox_connect(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  asb_sandbox *sb = NULL;
  int rc = asb_sandbox_connect(&sb, c->client, c->s[0], c->l[0], &call);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = sb;
}

/* sandboxConnect(client, id, timeoutMs, callOpts, cb) */
static napi_value js_sandbox_connect(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_client(env, c, argv[0]);
  if (!b || anode_get_string(env, argv[1], &c->s[0]) || anode_get_long(env, argv[2], &c->l[0]) ||
      gen_read_callopts(env, c, argv[3]))
    return gen_discard(env, c);
  c->base.work = w_sandbox_connect;
  c->base.result = r_sandbox;
  c->base.cleanup = c_free_out_sandbox;
  return anode_call_submit(env, &c->base, b);
}

/* sandboxProps(sandbox) -> {sandboxId, envdVersion, sandboxDomain,
 * envdAccessToken} (no I/O). */
static napi_value js_sandbox_props(napi_env env, napi_callback_info info) {
  GEN_ARGS(1);
  anode_box *b = anode_box_arg(env, argv[0], BOX_SANDBOX);
  if (!b) return NULL;
  asb_sandbox *sb = b->ptr;
  napi_value o = anode_obj(env);
  anode_set(env, o, "sandboxId", anode_str(env, asb_sandbox_id(sb)));
  anode_set(env, o, "envdVersion", anode_str(env, asb_sandbox_envd_version(sb)));
  anode_set(env, o, "sandboxDomain", anode_str(env, asb_sandbox_domain(sb)));
  anode_set(env, o, "envdAccessToken", anode_str(env, asb_sandbox_envd_access_token(sb)));
  anode_set(env, o, "trafficAccessToken", anode_str(env, asb_sandbox_traffic_access_token(sb)));
  return o;
}

/* sandboxHost(sandbox, port, url?) -> "<port>-<id>.<domain>" or its URL. */
static napi_value js_sandbox_host(napi_env env, napi_callback_info info) {
  GEN_ARGS(3);
  anode_box *b = anode_box_arg(env, argv[0], BOX_SANDBOX);
  int32_t port = 0;
  if (!b) return NULL;
  if (napi_get_value_int32(env, argv[1], &port) != napi_ok)
    return anode_throw(env, "ERR_INVALID_ARG_TYPE", "port must be a number");
  bool url = false;
  if (argc > 2) napi_get_value_bool(env, argv[2], &url);
  char buf[1024];
  int rc = url ? asb_sandbox_get_url(buf, sizeof buf, b->ptr, port)
               : asb_sandbox_get_host(buf, sizeof buf, b->ptr, port);
  if (rc < 0) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", asb_error_last()->message);
    return NULL;
  }
  return anode_str(env, buf);
}

/* sandboxAttach(client, id, {envdAccessToken, envdVersion, domain}) -> a
 * sandbox (no I/O: for the calls by id that must not resume it). */
static napi_value js_sandbox_attach(napi_env env, napi_callback_info info) {
  GEN_ARGS(3);
  anode_box *b = anode_box_arg(env, argv[0], BOX_CLIENT);
  char *id = NULL, *tok = NULL, *ver = NULL, *dom = NULL;
  if (!b || anode_get_string(env, argv[1], &id) ||
      anode_opt_string(env, argv[2], "envdAccessToken", &tok) ||
      anode_opt_string(env, argv[2], "envdVersion", &ver) ||
      anode_opt_string(env, argv[2], "domain", &dom)) {
    free(id);
    free(tok);
    free(ver);
    free(dom);
    return NULL;
  }
  asb_sandbox_attach_options o = ASB_SANDBOX_ATTACH_OPTIONS_INIT;
  o.envd_access_token = tok;
  o.envd_version = ver;
  o.domain = dom;
  asb_sandbox *sb = NULL;
  int rc = asb_sandbox_attach(&sb, b->ptr, id, &o);
  free(id);
  free(tok);
  free(ver);
  free(dom);
  if (rc < 0) {
    napi_throw_error(env, asb_status_name(rc), asb_error_last()->message);
    return NULL;
  }
  return sandbox_value(env, sb);
}

/* ---- control plane on a sandbox ---------------------------------------------------- */

enum { OP_KILL = 1, OP_SET_TIMEOUT, OP_IS_RUNNING, OP_PAUSE, OP_RESUME, OP_KILL_ID };

static void w_sandbox_op(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  int rc = ASB_EINVAL;
  switch (c->op) {
    case OP_KILL:
      rc = asb_sandbox_kill(c->sb, &call);
      break;
    case OP_SET_TIMEOUT:
      rc = asb_sandbox_set_timeout(c->sb, c->l[0], &call);
      break;
    case OP_IS_RUNNING:
      rc = asb_sandbox_is_running(c->sb, &call);
      break;
    case OP_PAUSE: /* the number: 1 = without memory */
      rc = asb_sandbox_pause_memory(c->sb, c->l[0] ? 0 : 1, &call);
      break;
    case OP_RESUME:
      rc = asb_sandbox_resume(c->sb, c->l[0], &call);
      break;
    case OP_KILL_ID:
      rc = asb_sandbox_kill_id(c->client, c->s[0], &call);
      break;
  }
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    c->base.rc = rc;
}

static napi_value r_rc(napi_env env, anode_call *base) {
  return base->rc >= 0 ? anode_num(env, base->rc) : NULL;
}

/* sandboxOp(sandbox, op, number, callOpts, cb): kill (1), setTimeout (2),
 * isRunning (3), pause (4), resume (5); the value is the C status. */
static napi_value js_sandbox_op(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  int32_t op = 0;
  if (!b || napi_get_value_int32(env, argv[1], &op) != napi_ok || op < OP_KILL || op > OP_RESUME ||
      anode_get_long(env, argv[2], &c->l[0]) || gen_read_callopts(env, c, argv[3])) {
    if (b && !op) anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown operation");
    return gen_discard(env, c);
  }
  c->op = op;
  c->base.work = w_sandbox_op;
  c->base.result = r_rc;
  c->base.cleanup = gen_cleanup;
  return anode_call_submit(env, &c->base, b);
}

/* sandboxKillId(client, id, callOpts, cb) */
static napi_value js_sandbox_kill_id(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  anode_box *b = gen_client(env, c, argv[0]);
  if (!b || anode_get_string(env, argv[1], &c->s[0]) || gen_read_callopts(env, c, argv[2]))
    return gen_discard(env, c);
  c->op = OP_KILL_ID;
  c->base.work = w_sandbox_op;
  c->base.result = r_rc;
  c->base.cleanup = gen_cleanup;
  return anode_call_submit(env, &c->base, b);
}

static void w_loopback_url(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  char *url = NULL;
  int rc = asb_sandbox_loopback_url(&url, c->sb, (int)c->l[0], &call);
  c->out = url;
  if (rc < 0) anode_call_fail(base, rc);
}

static napi_value r_loopback_url(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  return base->rc >= 0 ? anode_str(env, c->out) : NULL;
}

static void c_loopback_url(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

/* sandboxLoopbackUrl(sandbox, port, callOpts, cb): "http://127.0.0.1:<n>" */
static napi_value js_sandbox_loopback_url(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  if (!b || anode_get_long(env, argv[1], &c->l[0]) || gen_read_callopts(env, c, argv[2]))
    return gen_discard(env, c);
  c->base.work = w_loopback_url;
  c->base.result = r_loopback_url;
  c->base.cleanup = c_loopback_url;
  return anode_call_submit(env, &c->base, b);
}

/* sandboxMcpUrl(sandbox) -> the MCP gateway's URL (no I/O). */
static napi_value js_sandbox_mcp_url(napi_env env, napi_callback_info info) {
  GEN_ARGS(1);
  anode_box *b = anode_box_arg(env, argv[0], BOX_SANDBOX);
  if (!b) return NULL;
  char buf[1024];
  if (asb_sandbox_mcp_url(buf, sizeof buf, b->ptr) < 0) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", asb_error_last()->message);
    return NULL;
  }
  return anode_str(env, buf);
}

static void w_sandbox_mcp_token(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  char *tok = NULL;
  int rc = asb_sandbox_mcp_token(&tok, c->sb, &call);
  c->out = tok;
  if (rc < 0) anode_call_fail(base, rc);
}

/* sandboxMcpToken(sandbox, callOpts, cb) -> the gateway's bearer token */
static napi_value js_sandbox_mcp_token(napi_env env, napi_callback_info info) {
  GEN_ARGS(3);
  gen_call *c = gen_new(env, argv[2]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  if (!b || gen_read_callopts(env, c, argv[1])) return gen_discard(env, c);
  c->base.work = w_sandbox_mcp_token;
  c->base.result = r_loopback_url;
  c->base.cleanup = c_loopback_url;
  return anode_call_submit(env, &c->base, b);
}

static void w_update_network(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  int rc = asb_sandbox_update_network(c->sb, (int)c->l[0], c->s[0], &call);
  if (rc < 0) anode_call_fail(base, rc);
}

/* sandboxUpdateNetwork(sandbox, allowInternetAccess (1, -1, 0),
 * networkJson or null, callOpts, cb); the value is the C status. */
static napi_value js_sandbox_update_network(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  napi_valuetype t = napi_undefined;
  napi_typeof(env, argv[2], &t);
  if (!b || anode_get_long(env, argv[1], &c->l[0]) ||
      (t != napi_null && t != napi_undefined && anode_get_string(env, argv[2], &c->s[0])) ||
      gen_read_callopts(env, c, argv[3]))
    return gen_discard(env, c);
  c->base.work = w_update_network;
  c->base.result = r_rc;
  c->base.cleanup = gen_cleanup;
  return anode_call_submit(env, &c->base, b);
}

/* ---- info, list, metrics ------------------------------------------------------------- */

static napi_value info_value(napi_env env, const asb_sandbox_info *i) {
  napi_value o = anode_obj(env);
  anode_set(env, o, "sandboxId", anode_str(env, asb_sandbox_info_id(i)));
  anode_set(env, o, "templateId", anode_str(env, asb_sandbox_info_template_id(i)));
  anode_set(env, o, "name", anode_str(env, asb_sandbox_info_name(i)));
  anode_set(env, o, "state", anode_str(env, asb_sandbox_info_state(i)));
  if (asb_sandbox_info_pause_mode(i))
    anode_set(env, o, "pauseMode", anode_str(env, asb_sandbox_info_pause_mode(i)));
  if (asb_sandbox_info_fork_mode(i))
    anode_set(env, o, "forkMode", anode_str(env, asb_sandbox_info_fork_mode(i)));
  /* ours (--pause-swap): the swap object, or nothing */
  if (asb_sandbox_info_swapped_bytes(i) >= 0) {
    napi_value sw = anode_obj(env);
    anode_set(env, sw, "swappedBytes", anode_num(env, (double)asb_sandbox_info_swapped_bytes(i)));
    anode_set(env, sw, "residentBytes", anode_num(env, (double)asb_sandbox_info_resident_bytes(i)));
    if (asb_sandbox_info_resident_before_bytes(i) >= 0) /* not known: adopted paused */
      anode_set(env, sw, "residentBeforeBytes",
                anode_num(env, (double)asb_sandbox_info_resident_before_bytes(i)));
    anode_set(env, o, "swap", sw);
  }
  if (asb_sandbox_info_auto_resume(i) >= 0)
    anode_set(env, o, "autoResume", anode_bool(env, asb_sandbox_info_auto_resume(i)));
  if (asb_sandbox_info_on_timeout(i))
    anode_set(env, o, "onTimeout", anode_str(env, asb_sandbox_info_on_timeout(i)));
  /* E2B's volumeMounts: [{name, path}] */
  size_t nvm = asb_sandbox_info_volume_mount_count(i);
  napi_value vm;
  napi_create_array_with_length(env, nvm, &vm);
  for (size_t k = 0; k < nvm; k++) {
    napi_value m = anode_obj(env);
    anode_set(env, m, "name", anode_str(env, asb_sandbox_info_volume_mount_name(i, k)));
    anode_set(env, m, "path", anode_str(env, asb_sandbox_info_volume_mount_path(i, k)));
    napi_set_element(env, vm, (uint32_t)k, m);
  }
  anode_set(env, o, "volumeMounts", vm);
  anode_set(env, o, "startedAt", anode_num(env, (double)asb_sandbox_info_started_at(i)));
  anode_set(env, o, "endAt", anode_num(env, (double)asb_sandbox_info_end_at(i)));
  anode_set(env, o, "cpuCount", anode_num(env, asb_sandbox_info_cpu_count(i)));
  anode_set(env, o, "memoryMB", anode_num(env, asb_sandbox_info_memory_mb(i)));
  anode_set(env, o, "diskMB", anode_num(env, asb_sandbox_info_disk_mb(i)));
  anode_set(env, o, "envdVersion", anode_str(env, asb_sandbox_info_envd_version(i)));
  napi_value md = anode_obj(env);
  size_t n = asb_sandbox_info_metadata_count(i);
  for (size_t k = 0; k < n; k++) {
    const char *key = asb_sandbox_info_metadata_key(i, k);
    if (key) anode_set(env, md, key, anode_str(env, asb_sandbox_info_metadata_value(i, k)));
  }
  anode_set(env, o, "metadata", md);
  int iae = asb_sandbox_info_allow_internet_access(i);
  if (iae >= 0) {
    napi_value bv;
    napi_get_boolean(env, iae == 1, &bv);
    anode_set(env, o, "allowInternetAccess", bv);
  }
  /* the JS side parses it (JSON.parse): E2B's SandboxNetworkInfo as is */
  const char *net = asb_sandbox_info_network_json(i);
  if (net) anode_set(env, o, "networkJson", anode_str(env, net));
  return o;
}

static void w_get_info(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  asb_sandbox_info *i = NULL;
  int rc = asb_sandbox_get_info(&i, c->sb, &call);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = i;
}

static napi_value r_get_info(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  return c->out ? info_value(env, c->out) : NULL;
}

static void c_info(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_sandbox_info_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

/* sandboxGetInfo(sandbox, callOpts, cb) */
static napi_value js_sandbox_get_info(napi_env env, napi_callback_info info) {
  GEN_ARGS(3);
  gen_call *c = gen_new(env, argv[2]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  if (!b || gen_read_callopts(env, c, argv[1])) return gen_discard(env, c);
  c->base.work = w_get_info;
  c->base.result = r_get_info;
  c->base.cleanup = c_info;
  return anode_call_submit(env, &c->base, b);
}

static void w_list(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_sandbox_list_options o = ASB_SANDBOX_LIST_OPTIONS_INIT;
  o.metadata = (const char *const *)c->v[0];
  o.running = c->i[0];
  o.paused = c->i[1];
  o.template_id = c->s[0];
  o.limit = c->i[2];
  o.next_token = c->s[1];
  o.request_timeout_ms = c->l[0];
  o.cancel = base->cancel;
  asb_sandbox_page *p = NULL;
  int rc = asb_sandbox_list(&p, c->client, &o);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = p;
}

static napi_value r_list(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (!c->out) return NULL;
  asb_sandbox_page *p = c->out;
  napi_value o = anode_obj(env), items;
  size_t n = asb_sandbox_page_count(p);
  napi_create_array_with_length(env, n, &items);
  for (size_t i = 0; i < n; i++)
    napi_set_element(env, items, (uint32_t)i, info_value(env, asb_sandbox_page_get(p, i)));
  anode_set(env, o, "items", items);
  anode_set(env, o, "nextToken", anode_str(env, asb_sandbox_page_next_token(p)));
  return o;
}

static void c_list(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_sandbox_page_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

/* sandboxList(client, opts, cb) -> {items, nextToken} */
static napi_value js_sandbox_list(napi_env env, napi_callback_info info) {
  GEN_ARGS(3);
  gen_call *c = gen_new(env, argv[2]);
  if (!c) return NULL;
  anode_box *b = gen_client(env, c, argv[0]);
  napi_value o = argv[1];
  if (!b || anode_opt_strv(env, o, "metadata", &c->v[0]) ||
      anode_opt_bool(env, o, "running", &c->i[0]) || anode_opt_bool(env, o, "paused", &c->i[1]) ||
      anode_opt_string(env, o, "template", &c->s[0]) || anode_opt_int(env, o, "limit", &c->i[2]) ||
      anode_opt_string(env, o, "nextToken", &c->s[1]) ||
      anode_opt_long(env, o, "requestTimeoutMs", &c->l[0]))
    return gen_discard(env, c);
  c->base.work = w_list;
  c->base.result = r_list;
  c->base.cleanup = c_list;
  return anode_call_submit(env, &c->base, b);
}

static void w_metrics(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  asb_metrics *m = NULL;
  int rc = asb_sandbox_get_metrics(&m, c->sb, (asb_int64)c->d[0], (asb_int64)c->d[1], &call);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = m;
}

static napi_value r_metrics(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (!c->out) return NULL;
  asb_metrics *m = c->out;
  size_t n = asb_metrics_count(m);
  napi_value a;
  napi_create_array_with_length(env, n, &a);
  for (size_t i = 0; i < n; i++) {
    napi_value o = anode_obj(env);
    anode_set(env, o, "timestamp", anode_num(env, (double)asb_metrics_sampled_at(m, i)));
    anode_set(env, o, "cpuUsedPct", anode_num(env, asb_metrics_cpu_used_pct(m, i)));
    anode_set(env, o, "cpuCount", anode_num(env, asb_metrics_cpu_count(m, i)));
    anode_set(env, o, "memUsed", anode_num(env, (double)asb_metrics_mem_used(m, i)));
    anode_set(env, o, "memTotal", anode_num(env, (double)asb_metrics_mem_total(m, i)));
    anode_set(env, o, "diskUsed", anode_num(env, (double)asb_metrics_disk_used(m, i)));
    anode_set(env, o, "diskTotal", anode_num(env, (double)asb_metrics_disk_total(m, i)));
    napi_set_element(env, a, (uint32_t)i, o);
  }
  return a;
}

static void c_metrics(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_metrics_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

/* sandboxGetMetrics(sandbox, startS, endS, callOpts, cb) */
static napi_value js_sandbox_get_metrics(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  if (!b || napi_get_value_double(env, argv[1], &c->d[0]) != napi_ok ||
      napi_get_value_double(env, argv[2], &c->d[1]) != napi_ok ||
      gen_read_callopts(env, c, argv[3])) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "sandboxGetMetrics(sandbox, start, end, opts, cb)");
    return gen_discard(env, c);
  }
  c->base.work = w_metrics;
  c->base.result = r_metrics;
  c->base.cleanup = c_metrics;
  return anode_call_submit(env, &c->base, b);
}

/* ---- sessions ------------------------------------------------------------------------ */

enum { SOP_SAVE = 1, SOP_GET, SOP_LIST, SOP_DELETE, SOP_LOAD };

typedef struct {
  asb_session **items;
  size_t n;
} session_set;

static void w_session(anode_call *base) {
  gen_call *c = (gen_call *)base;
  int rc = ASB_EINVAL;
  switch (c->op) {
    case SOP_SAVE:
      rc = asb_session_save(c->s[0], c->sb, (const char *const *)c->v[0]);
      break;
    case SOP_DELETE:
      rc = asb_session_delete(c->s[0]);
      break;
    case SOP_GET: {
      asb_session *s = NULL;
      rc = asb_session_get(&s, c->s[0]);
      c->out = s;
      break;
    }
    case SOP_LOAD: {
      asb_call_options call = gen_callopts(c);
      asb_sandbox *sb = NULL;
      rc = asb_session_load(&sb, c->client, c->s[0], c->l[0], &call);
      c->out = sb;
      break;
    }
    case SOP_LIST: {
      /* Each session is read again by name, so each can be kept (and its
       * metadata read by key) without holding the list. */
      asb_session_list *l = NULL;
      rc = asb_sessions_list(&l);
      if (rc < 0) break;
      session_set *set = calloc(1, sizeof *set);
      size_t n = asb_session_list_count(l);
      set->items = calloc(n ? n : 1, sizeof *set->items);
      for (size_t i = 0; i < n; i++) {
        asb_session *s = NULL;
        const asb_session *item = asb_session_list_get(l, i);
        if (item && asb_session_get(&s, asb_session_name(item)) == ASB_OK) set->items[set->n++] = s;
      }
      asb_session_list_free(l);
      c->out2 = set;
      break;
    }
  }
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    c->base.rc = rc;
}

static void session_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  asb_session_free(data);
}

/* A session record: its fields, and an external the metadata is read from
 * by key (sessionMetadata). */
static napi_value session_value(napi_env env, asb_session *s) {
  napi_value o = anode_obj(env), ext;
  anode_set(env, o, "name", anode_str(env, asb_session_name(s)));
  anode_set(env, o, "sandboxId", anode_str(env, asb_session_sandbox_id(s)));
  anode_set(env, o, "templateId", anode_str(env, asb_session_template_id(s)));
  anode_set(env, o, "apiUrl", anode_str(env, asb_session_api_url(s)));
  anode_set(env, o, "createdAt", anode_num(env, (double)asb_session_created_at(s)));
  napi_create_external(env, s, session_finalize, NULL, &ext);
  anode_set(env, o, "handle", ext);
  return o;
}

static napi_value r_session(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (base->rc < 0) return NULL;
  if (c->op == SOP_GET && c->out) {
    asb_session *s = c->out;
    c->out = NULL;
    return session_value(env, s);
  }
  if (c->op == SOP_LOAD && c->out) {
    asb_sandbox *sb = c->out;
    c->out = NULL;
    return sandbox_value(env, sb);
  }
  if (c->op == SOP_LIST && c->out2) {
    session_set *set = c->out2;
    napi_value a;
    napi_create_array_with_length(env, set->n, &a);
    for (size_t i = 0; i < set->n; i++) {
      napi_set_element(env, a, (uint32_t)i, session_value(env, set->items[i]));
      set->items[i] = NULL;
    }
    return a;
  }
  return NULL;
}

static void c_session(anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (c->op == SOP_GET) asb_session_free(c->out);
  if (c->op == SOP_LOAD) asb_sandbox_free(c->out);
  c->out = NULL;
  session_set *set = c->out2;
  if (set) {
    for (size_t i = 0; i < set->n; i++) asb_session_free(set->items[i]);
    free(set->items);
    free(set);
  }
  c->out2 = NULL;
  gen_cleanup(base);
}

/* sessionSave(name, sandbox, metadata[], cb) */
static napi_value js_session_save(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[1]);
  if (!b || anode_get_string(env, argv[0], &c->s[0]) ||
      (!anode_is_nullish(env, argv[2]) && anode_get_strv(env, argv[2], &c->v[0])))
    return gen_discard(env, c);
  c->op = SOP_SAVE;
  c->base.work = w_session;
  c->base.result = r_session;
  c->base.cleanup = c_session;
  return anode_call_submit(env, &c->base, b);
}

/* sessionLoad(client, name, timeoutMs, callOpts, cb) -> sandbox */
static napi_value js_session_load(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_client(env, c, argv[0]);
  if (!b || anode_get_string(env, argv[1], &c->s[0]) || anode_get_long(env, argv[2], &c->l[0]) ||
      gen_read_callopts(env, c, argv[3]))
    return gen_discard(env, c);
  c->op = SOP_LOAD;
  c->base.work = w_session;
  c->base.result = r_session;
  c->base.cleanup = c_session;
  return anode_call_submit(env, &c->base, b);
}

/* sessionOp(op, name, cb): get (2), list (3), delete (4) */
static napi_value js_session_op(napi_env env, napi_callback_info info) {
  GEN_ARGS(3);
  gen_call *c = gen_new(env, argv[2]);
  if (!c) return NULL;
  int32_t op = 0;
  napi_get_value_int32(env, argv[0], &op);
  if (op != SOP_GET && op != SOP_LIST && op != SOP_DELETE) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown session operation");
    return gen_discard(env, c);
  }
  if (op != SOP_LIST && anode_get_string(env, argv[1], &c->s[0])) return gen_discard(env, c);
  c->op = op;
  c->base.work = w_session;
  c->base.result = r_session;
  c->base.cleanup = c_session;
  return anode_call_submit(env, &c->base, NULL);
}

/* sessionMetadata(handle, key) -> string | undefined (no I/O) */
static napi_value js_session_metadata(napi_env env, napi_callback_info info) {
  GEN_ARGS(2);
  void *s = NULL;
  char *key = NULL;
  if (napi_get_value_external(env, argv[0], &s) != napi_ok || !s)
    return anode_throw(env, "ERR_INVALID_ARG_TYPE", "expected a session handle");
  if (anode_get_string(env, argv[1], &key)) return NULL;
  napi_value v = anode_str(env, asb_session_metadata(s, key));
  free(key);
  return v;
}

/* ---- templates ------------------------------------------------------------------------- */

enum { TOP_BUILD = 1, TOP_GET, TOP_LIST, TOP_DELETE };

static void w_template(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  int rc = ASB_EINVAL;
  switch (c->op) {
    case TOP_BUILD: {
      asb_template_build_options o = ASB_TEMPLATE_BUILD_OPTIONS_INIT;
      o.force = c->i[0];
      o.timeout_ms = c->l[0];
      o.cancel = base->cancel;
      asb_template *t = NULL;
      rc = asb_templates_build(&t, c->client, c->s[0], &o);
      c->out = t;
      break;
    }
    case TOP_GET: {
      asb_template *t = NULL;
      rc = asb_templates_get(&t, c->client, c->s[0], &call);
      c->out = t;
      break;
    }
    case TOP_LIST: {
      asb_template_list *l = NULL;
      rc = asb_templates_list(&l, c->client, &call);
      c->out2 = l;
      break;
    }
    case TOP_DELETE:
      rc = asb_templates_delete(c->client, c->s[0], &call);
      break;
  }
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    c->base.rc = rc;
}

static napi_value template_value(napi_env env, const asb_template *t) {
  napi_value o = anode_obj(env);
  anode_set(env, o, "templateId", anode_str(env, asb_template_id(t)));
  anode_set(env, o, "name", anode_str(env, asb_template_name(t)));
  anode_set(env, o, "buildId", anode_str(env, asb_template_build_id(t)));
  anode_set(env, o, "description", anode_str(env, asb_template_description(t)));
  anode_set(env, o, "cpuCount", anode_num(env, asb_template_cpu_count(t)));
  anode_set(env, o, "memoryMB", anode_num(env, asb_template_memory_mb(t)));
  anode_set(env, o, "diskMB", anode_num(env, asb_template_disk_mb(t)));
  anode_set(env, o, "createdAt", anode_num(env, (double)asb_template_created_at(t)));
  anode_set(env, o, "cached", anode_num(env, asb_template_cached(t)));
  anode_set(env, o, "buildLog", anode_str(env, asb_template_build_log(t)));
  anode_set(env, o, "json", anode_str(env, asb_template_json(t)));
  return o;
}

static napi_value r_template(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (base->rc < 0) return NULL;
  if (c->out) return template_value(env, c->out);
  if (c->out2) {
    asb_template_list *l = c->out2;
    size_t n = asb_template_list_count(l);
    napi_value a;
    napi_create_array_with_length(env, n, &a);
    for (size_t i = 0; i < n; i++)
      napi_set_element(env, a, (uint32_t)i, template_value(env, asb_template_list_get(l, i)));
    return a;
  }
  return NULL;
}

static void c_template(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_template_free(c->out);
  asb_template_list_free(c->out2);
  c->out = c->out2 = NULL;
  gen_cleanup(base);
}

/* templateOp(client, op, idOrDir, opts, cb): build (1: opts {force,
 * timeoutMs}), get (2), list (3), delete (4) (opts: call options). */
static napi_value js_template_op(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_client(env, c, argv[0]);
  int32_t op = 0;
  if (!b) return gen_discard(env, c);
  napi_get_value_int32(env, argv[1], &op);
  if (op < TOP_BUILD || op > TOP_DELETE) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown template operation");
    return gen_discard(env, c);
  }
  if ((op != TOP_LIST && anode_get_string(env, argv[2], &c->s[0])) ||
      (op == TOP_BUILD && (anode_opt_bool(env, argv[3], "force", &c->i[0]) ||
                           anode_opt_long(env, argv[3], "timeoutMs", &c->l[0]))) ||
      (op != TOP_BUILD && gen_read_callopts(env, c, argv[3])))
    return gen_discard(env, c);
  c->op = op;
  c->base.work = w_template;
  c->base.result = r_template;
  c->base.cleanup = c_template;
  return anode_call_submit(env, &c->base, b);
}

/* ---- E2B's Template builder (asb_templates_build_steps) ------------------------------ */

enum {
  TBOP_STEPS = 1,
  TBOP_STATUS,
  TBOP_EXISTS,
  TBOP_TAGS_ASSIGN,
  TBOP_TAGS_REMOVE,
  TBOP_TAGS_LIST,
  TBOP_REQUEST, /* the steps of TBOP_STEPS, one call each */
  TBOP_FILES_HASH,
  TBOP_FILES_LINK,
  TBOP_FILES_UPLOAD,
  TBOP_TRIGGER
};

/* One build log line as it arrives (EV_TEMPLATE_LOG): {timestampMs, level,
 * message}. */
typedef struct {
  double ts;
  char *level, *message;
} tlog_copy;

static napi_value build_tlog(napi_env env, anode_msg *m) {
  tlog_copy *t = m->extra;
  napi_value o = anode_obj(env);
  anode_set(env, o, "timestampMs", anode_num(env, t->ts));
  anode_set(env, o, "level", anode_str(env, t->level));
  anode_set(env, o, "message", anode_str(env, t->message));
  return o;
}

static void drop_tlog(anode_msg *m) {
  tlog_copy *t = m->extra;
  if (!t) return;
  free(t->level);
  free(t->message);
  free(t);
  m->extra = NULL;
}

static int tbuild_log(asb_int64 timestamp_ms, const char *level, const char *message, void *ud) {
  anode_call *c = ud;
  if (atomic_load(&c->aborted)) return 1; /* a JS handler threw: stop following */
  anode_msg *m = calloc(1, sizeof *m);
  tlog_copy *t = calloc(1, sizeof *t);
  if (!m || !t) {
    free(m);
    free(t);
    return 1;
  }
  t->ts = (double)timestamp_ms;
  t->level = anode_strdup(level);
  t->message = anode_strdup(message);
  m->event = EV_TEMPLATE_LOG;
  m->extra = t;
  m->cost = 64 + (message ? strlen(message) : 0);
  m->build = build_tlog;
  m->drop = drop_tlog;
  return anode_emit(c, m);
}

static void w_tbuild(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  int rc = ASB_EINVAL;
  asb_template_build *b = NULL;
  if (c->op == TBOP_STEPS) {
    asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
    o.context_dir = c->s[2];
    o.tags = (const char *const *)c->v[0];
    o.skip_cache = c->i[0];
    o.background = c->i[1];
    o.cpu_count = c->i[2];
    o.memory_mb = c->i[3];
    o.timeout_ms = c->l[0];
    o.cancel = base->cancel;
    if (base->on_event) {
      o.on_log = tbuild_log;
      o.userdata = base;
    }
#if ASB_TEMPLATE_STEPS_OPTIONS_VERSION >= 2
    o.ignore_patterns = (const char *const *)c->v[1];
#endif
    /* a failed build keeps *out (the step that failed, its log): the JS
     * side attaches it to the error */
    rc = asb_templates_build_steps(&b, c->client, c->s[0], c->s[1], &o);
  } else if (c->op == TBOP_STATUS) {
    rc = asb_templates_build_status(&b, c->client, c->s[0], c->s[1], c->i[0], &call);
  } else if (c->op == TBOP_EXISTS) {
    int yes = 0;
    rc = asb_templates_alias_exists(&yes, c->client, c->s[0], &call);
    c->i[0] = yes;
  } else if (c->op == TBOP_TAGS_ASSIGN) {
    rc = asb_templates_tags_assign(c->client, c->s[0], (const char *const *)c->v[0], &call);
  } else if (c->op == TBOP_TAGS_REMOVE) {
    rc = asb_templates_tags_remove(c->client, c->s[0], (const char *const *)c->v[0], &call);
  } else if (c->op == TBOP_REQUEST) {
    asb_template_request_options o = ASB_TEMPLATE_REQUEST_OPTIONS_INIT;
    o.tags = (const char *const *)c->v[0];
    o.cpu_count = c->i[2];
    o.memory_mb = c->i[3];
    o.timeout_ms = c->l[0];
    o.cancel = base->cancel;
    rc = asb_templates_request_build(&b, c->client, c->s[0], &o);
  } else if (c->op == TBOP_FILES_HASH || c->op == TBOP_FILES_UPLOAD) {
    asb_template_files_options o = ASB_TEMPLATE_FILES_OPTIONS_INIT;
    o.context_dir = c->s[2];
    o.ignore_patterns = (const char *const *)c->v[1];
    o.resolve_symlinks = c->i[1];
    o.timeout_ms = c->l[0];
    o.cancel = base->cancel;
    char *hash = NULL;
    rc = c->op == TBOP_FILES_HASH
             ? asb_templates_files_hash(&hash, c->s[0], &o)
             : asb_templates_files_upload(&hash, c->client, c->s[0], c->s[1], &o);
    c->out2 = hash;
  } else if (c->op == TBOP_FILES_LINK) {
    int present = 0;
    char *url = NULL;
    rc = asb_templates_files_link(&present, &url, c->client, c->s[0], c->s[1], &call);
    c->i[0] = present;
    c->out2 = url;
  } else if (c->op == TBOP_TRIGGER) {
    rc = asb_templates_trigger_build(c->client, c->s[0], c->s[1], c->s[2], &call);
  } else {
    char *json = NULL;
    rc = asb_templates_tags_list(&json, c->client, c->s[0], &call);
    c->out2 = json;
  }
  c->out = b;
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    c->base.rc = rc;
}

static napi_value r_tbuild(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (c->op == TBOP_EXISTS) {
    if (base->rc < 0) return NULL;
    napi_value v;
    napi_get_boolean(env, c->i[0] != 0, &v);
    return v;
  }
  if (c->op == TBOP_TAGS_LIST || c->op == TBOP_FILES_HASH || c->op == TBOP_FILES_UPLOAD)
    return base->rc < 0 ? NULL : anode_str(env, c->out2);
  if (c->op == TBOP_FILES_LINK) {
    if (base->rc < 0) return NULL;
    napi_value o = anode_obj(env), v;
    napi_get_boolean(env, c->i[0] != 0, &v);
    anode_set(env, o, "present", v);
    anode_set(env, o, "url", anode_str(env, c->out2));
    return o;
  }
  if (c->op == TBOP_TAGS_ASSIGN || c->op == TBOP_TAGS_REMOVE || c->op == TBOP_TRIGGER) return NULL;
  const asb_template_build *b = c->out;
  if (!b) return NULL;
  napi_value o = anode_obj(env);
  anode_set(env, o, "templateId", anode_str(env, asb_template_build_template_id(b)));
  anode_set(env, o, "buildId", anode_str(env, asb_template_build_build_id(b)));
  anode_set(env, o, "status", anode_str(env, asb_template_build_status(b)));
  anode_set(env, o, "error", anode_str(env, asb_template_build_error(b)));
  anode_set(env, o, "errorStep", anode_num(env, asb_template_build_error_step(b)));
  size_t n = asb_template_build_log_count(b);
  napi_value a;
  napi_create_array_with_length(env, n, &a);
  for (size_t i = 0; i < n; i++) {
    napi_value l = anode_obj(env);
    anode_set(env, l, "timestampMs",
              anode_num(env, (double)asb_template_build_log_timestamp(b, i)));
    anode_set(env, l, "level", anode_str(env, asb_template_build_log_level(b, i)));
    anode_set(env, l, "message", anode_str(env, asb_template_build_log_message(b, i)));
    napi_set_element(env, a, (uint32_t)i, l);
  }
  anode_set(env, o, "logs", a);
  if (c->op == TBOP_REQUEST) {
    size_t nt = asb_template_build_tag_count(b);
    napi_value ta;
    napi_create_array_with_length(env, nt, &ta);
    for (size_t i = 0; i < nt; i++)
      napi_set_element(env, ta, (uint32_t)i, anode_str(env, asb_template_build_tag(b, i)));
    anode_set(env, o, "tags", ta);
  }
  return o;
}

static void c_tbuild(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_template_build_free(c->out);
  asb_free(c->out2);
  c->out = c->out2 = NULL;
  gen_cleanup(base);
}

/* templateBuilderOp(client, op, a, b, opts, onEvent, cb): steps (1: a =
 * name, b = the builder JSON, opts {contextDir, tags, ignorePatterns (with
 * a library whose asb_template_steps_options has them: version 2),
 * skipCache, background, cpuCount, memoryMB, timeoutMs}, onEvent gets each log line
 * as EV_TEMPLATE_LOG; a failed build's value is the build, with the step
 * that failed), status (2: a = template id, b = build id, opts
 * {logsOffset} + call options), exists (3: a = name), tags assign (4: a =
 * "name:tag", opts {tags}), tags remove (5: a = name, opts {tags}), tags
 * list (6: a = template id; the JSON text); the steps of 1 one call each:
 * request a build (7: a = name, opts {tags, cpuCount, memoryMB, timeoutMs};
 * the build with its tags), a COPY source's files hash (8: a = src, opts
 * {contextDir, ignorePatterns, resolveSymlinks}), the engine's upload link
 * of a hash (9: a = template id, b = hash; {present, url}), pack and upload
 * (10: a = url, b = src, opts as 8 + timeoutMs; the hash), start the build
 * (11: a = template id, b = build id, opts {build: the JSON text}). */
static napi_value js_template_builder_op(napi_env env, napi_callback_info info) {
  GEN_ARGS(7);
  gen_call *c = gen_new(env, argv[6]);
  if (!c) return NULL;
  anode_box *bx = gen_client(env, c, argv[0]);
  int32_t op = 0;
  if (!bx) return gen_discard(env, c);
  napi_get_value_int32(env, argv[1], &op);
  if (op < TBOP_STEPS || op > TBOP_TRIGGER) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown template builder operation");
    return gen_discard(env, c);
  }
  int tagged = op == TBOP_TAGS_ASSIGN || op == TBOP_TAGS_REMOVE;
  int files = op == TBOP_FILES_HASH || op == TBOP_FILES_UPLOAD;
  int two = op == TBOP_STEPS || op == TBOP_STATUS || op == TBOP_FILES_LINK ||
            op == TBOP_FILES_UPLOAD || op == TBOP_TRIGGER;
  int own_opts = op == TBOP_STEPS || op == TBOP_REQUEST || files;
  if (anode_get_string(env, argv[2], &c->s[0]) ||
      (two && anode_get_string(env, argv[3], &c->s[1])) ||
      (op == TBOP_REQUEST && (anode_opt_strv(env, argv[4], "tags", &c->v[0]) ||
                              anode_opt_int(env, argv[4], "cpuCount", &c->i[2]) ||
                              anode_opt_int(env, argv[4], "memoryMB", &c->i[3]) ||
                              anode_opt_long(env, argv[4], "timeoutMs", &c->l[0]))) ||
      (files && (anode_opt_string(env, argv[4], "contextDir", &c->s[2]) ||
                 anode_opt_strv(env, argv[4], "ignorePatterns", &c->v[1]) ||
                 anode_opt_bool(env, argv[4], "resolveSymlinks", &c->i[1]) ||
                 anode_opt_long(env, argv[4], "timeoutMs", &c->l[0]))) ||
      (op == TBOP_TRIGGER && anode_opt_string(env, argv[4], "build", &c->s[2])) ||
      (op == TBOP_STEPS && (anode_opt_string(env, argv[4], "contextDir", &c->s[2]) ||
                            anode_opt_strv(env, argv[4], "tags", &c->v[0]) ||
                            anode_opt_strv(env, argv[4], "ignorePatterns", &c->v[1]) ||
                            anode_opt_bool(env, argv[4], "skipCache", &c->i[0]) ||
                            anode_opt_bool(env, argv[4], "background", &c->i[1]) ||
                            anode_opt_int(env, argv[4], "cpuCount", &c->i[2]) ||
                            anode_opt_int(env, argv[4], "memoryMB", &c->i[3]) ||
                            anode_opt_long(env, argv[4], "timeoutMs", &c->l[0]) ||
                            anode_call_on_event(env, &c->base, argv[5]))) ||
      (op == TBOP_STATUS && anode_opt_int(env, argv[4], "logsOffset", &c->i[0])) ||
      (tagged && anode_opt_strv(env, argv[4], "tags", &c->v[0])) ||
      (!own_opts && gen_read_callopts(env, c, argv[4])))
    return gen_discard(env, c);
  if (op == TBOP_TRIGGER && !c->s[2]) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "build must be the builder JSON text");
    return gen_discard(env, c);
  }
#if ASB_TEMPLATE_STEPS_OPTIONS_VERSION < 2
  if (op == TBOP_STEPS && c->v[1] && c->v[1][0]) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE",
                "ignorePatterns: this libagentsandbox has no ignore patterns (its "
                "asb_template_steps_options is version %d, they came in 2)",
                ASB_TEMPLATE_STEPS_OPTIONS_VERSION);
    return gen_discard(env, c);
  }
#endif
  if (tagged && !c->v[0]) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "tags must be an array of strings");
    return gen_discard(env, c);
  }
  c->op = op;
  c->base.work = w_tbuild;
  c->base.result = r_tbuild;
  c->base.cleanup = c_tbuild;
  return anode_call_submit(env, &c->base, bx);
}

/* ---- snapshots and fork (docs/snapshots.md) ----------------------------------------- */

static void w_sandbox_snapshot(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  char *id = NULL;
  int rc = asb_sandbox_snapshot(&id, c->sb, c->s[0], &call);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = id;
}

static napi_value r_string_out(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  return c->out ? anode_str(env, c->out) : NULL;
}

static void c_free_out_string(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

/* sandboxSnapshot(sandbox, name or null, callOpts, cb) -> the snapshot's id */
static napi_value js_sandbox_snapshot(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  napi_valuetype t = napi_undefined;
  napi_typeof(env, argv[1], &t);
  if (!b || (t != napi_null && t != napi_undefined && anode_get_string(env, argv[1], &c->s[0])) ||
      gen_read_callopts(env, c, argv[2]))
    return gen_discard(env, c);
  c->base.work = w_sandbox_snapshot;
  c->base.result = r_string_out;
  c->base.cleanup = c_free_out_string;
  return anode_call_submit(env, &c->base, b);
}

/* The fork options of a sandboxFork call: l[0] timeoutMs, l[1]
 * keepProcesses (-1, 0, 1), l[2] count. */
static asb_fork_options fork_options(const gen_call *c) {
  asb_fork_options o = ASB_FORK_OPTIONS_INIT;
  o.timeout_ms = c->l[0];
  o.keep_processes = (int)c->l[1];
  o.count = (int)c->l[2];
  return o;
}

static void w_sandbox_fork(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  asb_fork_options o = fork_options(c);
  asb_sandbox *sb = NULL;
  int rc = asb_sandbox_fork_ex(&sb, c->sb, &o, &call);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = sb;
}

static void w_sandbox_fork_many(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  asb_fork_options o = fork_options(c);
  asb_fork_list *l = NULL;
  int rc = asb_sandbox_fork_many(&l, c->sb, &o, &call);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = l;
}

/* One entry per fork: a sandbox value, or {error: [rc, detail]} with the
 * detail of a failed call (lib/errors.js fromStatus). take has no I/O. */
static napi_value r_fork_list(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_fork_list *l = c->out;
  if (!l) return NULL;
  size_t n = asb_fork_list_count(l);
  napi_value arr;
  if (napi_create_array_with_length(env, n, &arr) != napi_ok) return NULL;
  for (size_t i = 0; i < n; i++) {
    asb_sandbox *sb = NULL;
    int rc = asb_fork_list_take(&sb, l, i);
    napi_value e;
    if (rc == ASB_OK) {
      e = sandbox_value(env, sb);
    } else {
      const asb_error *err = asb_error_last();
      napi_value d, v;
      napi_create_array_with_length(env, 6, &d);
      napi_create_int32(env, err->http_status, &v);
      napi_set_element(env, d, 0, v);
      napi_set_element(env, d, 1, anode_str(env, err->message ? err->message : asb_strerror(rc)));
      napi_set_element(env, d, 2, anode_str(env, err->remote_code ? err->remote_code : ""));
      napi_create_int32(env, err->retry_after, &v);
      napi_set_element(env, d, 3, v);
      napi_set_element(env, d, 4, anode_str(env, err->reason ? err->reason : ""));
      napi_set_element(env, d, 5, anode_str(env, asb_status_name(rc)));
      napi_value pair;
      napi_create_array_with_length(env, 2, &pair);
      napi_create_int32(env, rc, &v);
      napi_set_element(env, pair, 0, v);
      napi_set_element(env, pair, 1, d);
      e = anode_obj(env);
      anode_set(env, e, "error", pair);
    }
    napi_set_element(env, arr, (uint32_t)i, e);
  }
  return arr;
}

static void c_free_out_fork_list(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_fork_list_free(c->out); /* the forks not taken (their sandboxes run on) */
  c->out = NULL;
  gen_cleanup(base);
}

/* sandboxFork(sandbox, timeoutMs, keepProcesses (-1, 0, 1), count (0 or
 * 1: one sandbox; more: sandboxForkMany), callOpts, cb) -> a sandbox;
 * sandboxForkMany(...the same) -> [sandbox or {error: [rc, detail]}] */
static napi_value fork_submit(napi_env env, napi_callback_info info, int many) {
  GEN_ARGS(6);
  gen_call *c = gen_new(env, argv[5]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  if (!b || anode_get_long(env, argv[1], &c->l[0]) || anode_get_long(env, argv[2], &c->l[1]) ||
      anode_get_long(env, argv[3], &c->l[2]) || gen_read_callopts(env, c, argv[4]))
    return gen_discard(env, c);
  c->base.work = many ? w_sandbox_fork_many : w_sandbox_fork;
  c->base.result = many ? r_fork_list : r_sandbox;
  c->base.cleanup = many ? c_free_out_fork_list : c_free_out_sandbox;
  return anode_call_submit(env, &c->base, b);
}

static napi_value js_sandbox_fork(napi_env env, napi_callback_info info) {
  return fork_submit(env, info, 0);
}

static napi_value js_sandbox_fork_many(napi_env env, napi_callback_info info) {
  return fork_submit(env, info, 1);
}

static void w_snapshots_list(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  asb_snapshot_list *l = NULL;
  int rc = asb_snapshots_list(&l, c->client, c->s[0], c->s[1], &call);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = l;
}

static napi_value r_snapshots(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (!c->out) return NULL;
  size_t n = asb_snapshot_list_count(c->out);
  napi_value a;
  napi_create_array_with_length(env, n, &a);
  for (size_t i = 0; i < n; i++)
    napi_set_element(env, a, (uint32_t)i, anode_str(env, asb_snapshot_list_get(c->out, i)));
  return a;
}

static void c_snapshots(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_snapshot_list_free(c->out);
  c->out = NULL;
  gen_cleanup(base);
}

/* snapshotsList(client, sandboxId or null, name or null, callOpts, cb) -> ids */
static napi_value js_snapshots_list(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_client(env, c, argv[0]);
  napi_valuetype t1 = napi_undefined, t2 = napi_undefined;
  napi_typeof(env, argv[1], &t1);
  napi_typeof(env, argv[2], &t2);
  if (!b || (t1 != napi_null && t1 != napi_undefined && anode_get_string(env, argv[1], &c->s[0])) ||
      (t2 != napi_null && t2 != napi_undefined && anode_get_string(env, argv[2], &c->s[1])) ||
      gen_read_callopts(env, c, argv[3]))
    return gen_discard(env, c);
  c->base.work = w_snapshots_list;
  c->base.result = r_snapshots;
  c->base.cleanup = c_snapshots;
  return anode_call_submit(env, &c->base, b);
}

const anode_fn anode_client_fns[] = {{"clientNew", js_client_new},
                                     {"sandboxCreate", js_sandbox_create},
                                     {"sandboxConnect", js_sandbox_connect},
                                     {"sandboxProps", js_sandbox_props},
                                     {"sandboxAttach", js_sandbox_attach},
                                     {"sandboxHost", js_sandbox_host},
                                     {"sandboxOp", js_sandbox_op},
                                     {"sandboxKillId", js_sandbox_kill_id},
                                     {"sandboxLoopbackUrl", js_sandbox_loopback_url},
                                     {"sandboxMcpUrl", js_sandbox_mcp_url},
                                     {"sandboxMcpToken", js_sandbox_mcp_token},
                                     {"sandboxGetInfo", js_sandbox_get_info},
                                     {"sandboxUpdateNetwork", js_sandbox_update_network},
                                     {"sandboxSnapshot", js_sandbox_snapshot},
                                     {"sandboxFork", js_sandbox_fork},
                                     {"sandboxForkMany", js_sandbox_fork_many},
                                     {"snapshotsList", js_snapshots_list},
                                     {"sandboxList", js_sandbox_list},
                                     {"sandboxGetMetrics", js_sandbox_get_metrics},
                                     {"sessionSave", js_session_save},
                                     {"sessionLoad", js_session_load},
                                     {"sessionOp", js_session_op},
                                     {"sessionMetadata", js_session_metadata},
                                     {"templateOp", js_template_op},
                                     {"templateBuilderOp", js_template_builder_op},
                                     {NULL, NULL}};
