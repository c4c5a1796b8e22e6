/* The asb_sandbox_* operations of the control plane: create, connect,
 * list, kill, timeouts, pause/resume, info, metrics — E2B's REST API, over
 * cp.c's requests.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/netconf.h"
#include "proto/pjson.h"
#include "proto/url.h"
#include "util/util.h"
#include "envd.h"

#define DEFAULT_SANDBOX_TIMEOUT_MS 300000L

/* ---- calls -------------------------------------------------------------------------- */

typedef struct cp_call {
  long timeout_ms;
  asb_cancel *cancel;
  int idempotent;
  int no_start;     /* local mode: never start the engine for this call */
  asb_cancel *stop; /* the acting handle's stop token (asbi_life) */
} cp_call;

/* A call on the client; calls on a sandbox set k->stop to its own. */
static void cp_from(cp_call *k, asb_client *c, const asb_call_options *o) {
  k->timeout_ms = asbi_client_timeout(c, o ? o->timeout_ms : 0);
  k->cancel = o ? o->cancel : NULL;
  k->idempotent = 0;
  k->no_start = 0;
  k->stop = c->life.stop;
}

/* A control-plane request. *out (if not NULL) gets the parsed JSON reply of
 * a 2xx; *status the HTTP status. Errors other than HTTP statuses the caller
 * accepts (ok_statuses, 0-ended) are mapped and recorded. */
static int cp_request(asb_client *c, const char *method, const char *path, const cJSON *body,
                      const cp_call *k, const char *what, const int *ok_statuses, int *status,
                      cJSON **out, asbi_http_resp *keep_resp) {
  if (out) *out = NULL;
  char *json = body ? asbi_pj_print(body) : NULL;
  if (body && !json) return asbi_oom();
  int rc = asbi_cp_request_raw(
      c, method, path, json, json ? strlen(json) : 0, json ? "application/json" : NULL,
      k->timeout_ms, k->cancel, k->stop,
      (k->idempotent ? ASBI_CP_IDEMPOTENT : 0) | (k->no_start ? ASBI_CP_NO_START : 0), what,
      ok_statuses, status, out, keep_resp);
  free(json);
  return rc;
}

/* ---- handles from Sandbox replies ------------------------------------------------- */

static int cmp_version(const char *v, int a, int b, int c) {
  int x = 0, y = 0, z = 0;
  if (v && *v == 'v') v++;
  if (v) sscanf(v, "%d.%d.%d", &x, &y, &z);
  if (x != a) return x < a ? -1 : 1;
  if (y != b) return y < b ? -1 : 1;
  return z < c ? -1 : z > c;
}

static int sandbox_from_reply(asb_client *c, const cJSON *j, asb_sandbox **out, const char *what) {
  const char *id = NULL, *tok = NULL, *ver = NULL, *dom = NULL, *tmpl = NULL, *alias = NULL,
             *traffic = NULL;
  asbi_pj_get_str(j, "sandboxID", &id);
  asbi_pj_get_str(j, "envdAccessToken", &tok);
  asbi_pj_get_str(j, "envdVersion", &ver);
  asbi_pj_get_str(j, "domain", &dom);
  asbi_pj_get_str(j, "templateID", &tmpl);
  asbi_pj_get_str(j, "alias", &alias);
  asbi_pj_get_str(j, "trafficAccessToken", &traffic);
  if (!id || !ver)
    return asbi_err(ASB_EPROTOCOL, "%s: the reply lacks sandboxID or envdVersion", what);
  int rc = asbi_sandbox_new(out, c, id, tok, ver, dom && *dom ? dom : NULL, traffic);
  if (rc) return rc;
  const char *mode = NULL;
  asbi_pj_get_str(j, "forkMode", &mode);
  (*out)->template_id = asbi_strdup(tmpl);
  (*out)->alias = asbi_strdup(alias);
  (*out)->fork_mode = mode && *mode ? asbi_strdup(mode) : NULL;
  return ASB_OK;
}

static int seconds(long ms) {
  return ms <= 0 ? 0 : (int)((ms + 999) / 1000);
}

static int kv_object(cJSON *parent, const char *key, const char *const *kv, const char *what) {
  if (!kv) return ASB_OK;
  cJSON *o = cJSON_AddObjectToObject(parent, key);
  if (!o) return asbi_oom();
  for (; *kv; kv++) {
    const char *eq = strchr(*kv, '=');
    if (!eq || eq == *kv) return asbi_err(ASB_EINVAL, "%s: '%s' is not key=value", what, *kv);
    char *k = asbi_strndup(*kv, (size_t)(eq - *kv));
    if (!k || !cJSON_AddStringToObject(o, k, eq + 1)) {
      free(k);
      return asbi_oom();
    }
    free(k);
  }
  return ASB_OK;
}

/* Version 1 ended before allow_internet_access, version 2 before
 * volume_mounts, version 3 before auto_pause_files_only, version 4 before
 * mcp_json. */
static size_t sandbox_options_size(unsigned int version) {
  return version >= 5   ? sizeof(asb_sandbox_options)
         : version == 4 ? offsetof(asb_sandbox_options, mcp_json)
         : version == 3 ? offsetof(asb_sandbox_options, auto_pause_files_only)
         : version == 2 ? offsetof(asb_sandbox_options, volume_mounts)
                        : offsetof(asb_sandbox_options, allow_internet_access);
}

/* E2B's volumeMounts [{name, path}] from "PATH=VOLUME" strings; the engine
 * judges paths and names (docs/volumes.md). */
static int volume_mounts(cJSON *body, const char *const *v, const char *what) {
  if (!v || !v[0]) return ASB_OK;
  cJSON *a = cJSON_AddArrayToObject(body, "volumeMounts");
  if (!a) return asbi_oom();
  for (size_t i = 0; v[i]; i++) {
    const char *eq = strchr(v[i], '=');
    if (!eq || eq == v[i] || !eq[1])
      return asbi_err(ASB_EINVAL, "%s: volume mount '%s' is not PATH=VOLUME", what, v[i]);
    cJSON *m = cJSON_CreateObject();
    char *path = m ? asbi_strndup(v[i], (size_t)(eq - v[i])) : NULL;
    if (!path || !cJSON_AddStringToObject(m, "name", eq + 1) ||
        !cJSON_AddStringToObject(m, "path", path)) {
      free(path);
      cJSON_Delete(m);
      return asbi_oom();
    }
    free(path);
    cJSON_AddItemToArray(a, m);
  }
  return ASB_OK;
}

ASBI_DEFINE_OPTIONS_INIT_SIZED(asb_sandbox_options, ASB_SANDBOX_OPTIONS_VERSION,
                               ASB_SANDBOX_OPTIONS_INIT, sandbox_options_size)

/* ---- the network: E2B's allowInternetAccess and network ------------------------------ */

/* Parses and checks network_json into *out (NULL for a NULL string):
 * proto/netconf.c checks the shape; the engine judges the values. */
static int network_parse(const char *json, int update, const char *what, cJSON **out) {
  *out = NULL;
  if (!json) return ASB_OK;
  char err[256];
  if (asbi_netconf_parse(json, strlen(json), update, out, err, sizeof err) == 0) return ASB_OK;
  return strstr(err, "(out of memory)") ? asbi_oom() : asbi_err(ASB_EINVAL, "%s: %s", what, err);
}

/* E2B's wire name for it: NewSandbox and SandboxNetworkUpdateConfig both
 * spell it allow_internet_access (SandboxDetail says allowInternetAccess),
 * and E2B's SDKs send that. At create the local engine reads the
 * camel-case spelling (core/engine/api.c, create), so the create body
 * carries both (alias): E2B's API ignores a member it does not know, and
 * a sandbox asked to be offline must not come up online because of a
 * spelling. */
static int add_internet(cJSON *body, int allow, int alias, const char *what) {
  if (allow == 0) return ASB_OK;
  if (allow != 1 && allow != -1)
    return asbi_err(ASB_EINVAL, "%s: allow_internet_access %d is not 1, -1 or 0", what, allow);
  if (!cJSON_AddBoolToObject(body, "allow_internet_access", allow == 1)) return asbi_oom();
  if (alias && !cJSON_AddBoolToObject(body, "allowInternetAccess", allow == 1)) return asbi_oom();
  return ASB_OK;
}

/* ---- E2B's mcp option: what E2B's SDKs do at create (docs/mcp.md) ------ */

#define MCP_TEMPLATE "mcp-gateway"
#define MCP_PORT 50005
#define MCP_TOKEN_PATH "/etc/mcp-gateway/.token"

/* The config as compact JSON (an object, or ASB_EINVAL) into *out. */
static int mcp_config(const char *json, char **out) {
  *out = NULL;
  if (!json) return ASB_OK;
  cJSON *cfg = cJSON_Parse(json);
  if (!cJSON_IsObject(cfg)) {
    cJSON_Delete(cfg);
    return asbi_err(ASB_EINVAL, "sandbox.create: mcp_json is not a JSON object");
  }
  *out = cJSON_PrintUnformatted(cfg);
  cJSON_Delete(cfg);
  return *out ? ASB_OK : asbi_oom();
}

/* `mcp-gateway --config '<json>'` as root with a fresh random
 * GATEWAY_ACCESS_TOKEN (a UUID, as E2B's SDKs make); on success the token
 * is kept on the handle. The caller kills the sandbox on failure. */
static int mcp_start(asb_sandbox *sb, const char *cfg, asb_cancel *cancel) {
  unsigned char r[16];
  if (asbi_random_bytes(r, sizeof r) != 0)
    return asbi_err(ASB_ERROR, "sandbox.create: no randomness");
  r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
  r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
  char token[37];
  snprintf(token, sizeof token,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
           r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
  asbi_buf cmd = ASBI_BUF_INIT;
  int bad = asbi_buf_puts(&cmd, "mcp-gateway --config '");
  for (const char *p = cfg; !bad && *p; p++)
    bad = *p == '\'' ? asbi_buf_puts(&cmd, "'\\''") : asbi_buf_append(&cmd, p, 1);
  if (!bad) bad = asbi_buf_puts(&cmd, "'");
  char env[64];
  snprintf(env, sizeof env, "GATEWAY_ACCESS_TOKEN=%s", token);
  const char *envs[] = {env, NULL};
  if (bad) {
    asbi_buf_free(&cmd);
    return asbi_oom();
  }
  asb_command_options co = ASB_COMMAND_OPTIONS_INIT;
  co.user = "root";
  co.envs = envs;
  co.cancel = cancel;
  asb_command_result *res = NULL;
  int rc = asb_commands_run(&res, sb, cmd.data, &co);
  asbi_buf_free(&cmd);
  if (rc == ASB_ECOMMANDEXIT) {
    size_t n = 0;
    const char *err = asb_command_result_stderr(res, &n);
    rc = asbi_err(ASB_ERROR, "Failed to start MCP gateway: %.*s", (int)(n > 4000 ? 4000 : n),
                  err ? err : "");
  }
  asb_command_result_free(res);
  if (rc) return rc;
  sb->mcp_token = asbi_strdup(token);
  return sb->mcp_token ? ASB_OK : asbi_oom();
}

int asb_sandbox_mcp_url(char *buf, size_t buflen, const asb_sandbox *sb) {
  char base[1024];
  int rc = asb_sandbox_get_url(base, sizeof base, sb, MCP_PORT);
  if (rc) return rc;
  size_t n = strlen(base) + sizeof "/mcp";
  if (!buf || buflen < n)
    return asbi_err(ASB_EINVAL, "mcp_url: buffer too small (%zu bytes needed)", n);
  snprintf(buf, buflen, "%s/mcp", base);
  return ASB_OK;
}

int asb_sandbox_mcp_token(char **out, asb_sandbox *sb, const asb_call_options *call) {
  if (!out || !sb) return asbi_err(ASB_EINVAL, "mcp_token: bad arguments");
  ASBI_SANDBOX_CALL(sb);
  *out = NULL;
  if (sb->mcp_token) {
    *out = asbi_strdup(sb->mcp_token);
    return *out ? ASB_OK : asbi_oom();
  }
  asb_files_options fo = ASB_FILES_OPTIONS_INIT;
  fo.user = "root";
  if (call) {
    fo.timeout_ms = call->timeout_ms;
    fo.cancel = call->cancel;
  }
  size_t len = 0;
  return asb_files_read(out, &len, sb, MCP_TOKEN_PATH, &fo);
}

int asb_sandbox_create(asb_sandbox **out, asb_client *c, const asb_sandbox_options *o) {
  ASBI_CLIENT_CALL(c);
  if (!out || !c) return asbi_err(ASB_EINVAL, "sandbox.create: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_SANDBOX_OPTIONS_VERSION, "asb_sandbox_options");
  asb_sandbox_options d = ASB_SANDBOX_OPTIONS_INIT;
  if (!o) o = &d;
  cJSON *body = cJSON_CreateObject();
  if (!body) return asbi_oom();
  char *mcp = NULL;
  int mrc = mcp_config(ASBI_OPT(o, 5, mcp_json, NULL), &mcp);
  if (mrc) {
    cJSON_Delete(body);
    return mrc;
  }
  cJSON_AddStringToObject(body, "templateID",
                          o->template_id ? o->template_id
                          : mcp          ? MCP_TEMPLATE
                                         : "base");
  cJSON_AddNumberToObject(body, "timeout",
                          seconds(o->timeout_ms ? o->timeout_ms : DEFAULT_SANDBOX_TIMEOUT_MS));
  if (o->auto_pause) cJSON_AddBoolToObject(body, "autoPause", 1);
  if (ASBI_OPT(o, 4, auto_pause_files_only, 0)) cJSON_AddBoolToObject(body, "autoPauseMemory", 0);
  if (ASBI_OPT(o, 4, auto_resume, 0)) {
    cJSON *ar = cJSON_AddObjectToObject(body, "autoResume");
    if (!ar || !cJSON_AddBoolToObject(ar, "enabled", 1)) {
      cJSON_Delete(body);
      return asbi_oom();
    }
  }
  int rc = kv_object(body, "metadata", o->metadata, "sandbox.create");
  if (!rc) rc = kv_object(body, "envVars", o->envs, "sandbox.create");
  if (!rc) rc = add_internet(body, ASBI_OPT(o, 2, allow_internet_access, 0), 1, "sandbox.create");
  cJSON *net = NULL;
  if (!rc) rc = network_parse(ASBI_OPT(o, 2, network_json, NULL), 0, "sandbox.create", &net);
  if (net) cJSON_AddItemToObject(body, "network", net);
  if (!rc) rc = volume_mounts(body, ASBI_OPT(o, 3, volume_mounts, NULL), "sandbox.create");
  cJSON *reply = NULL;
  cp_call k = {asbi_client_timeout(c, o->request_timeout_ms), o->cancel, 0, 0, c->life.stop};
  /* Current SDKs create with POST /v2/sandboxes; engines that predate it
   * (404) get the classic POST /sandboxes. */
  int status = 0;
  const int ok404[] = {404, 0};
  if (!rc)
    rc = cp_request(c, "POST", "/v2/sandboxes", body, &k, "sandbox.create", ok404, &status, &reply,
                    NULL);
  if (!rc && status == 404) {
    cJSON_Delete(reply);
    reply = NULL;
    rc = cp_request(c, "POST", "/sandboxes", body, &k, "sandbox.create", NULL, &status, &reply,
                    NULL);
  }
  cJSON_Delete(body);
  if (rc) {
    free(mcp);
    return rc;
  }
  asb_sandbox *sb = NULL;
  rc = sandbox_from_reply(c, reply, &sb, "sandbox.create");
  cJSON_Delete(reply);
  if (rc) {
    free(mcp);
    return rc;
  }
  if (cmp_version(sb->envd_version, 0, 1, 0) < 0) {
    free(mcp);
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
    return asbi_err(ASB_ETEMPLATE,
                    "sandbox.create: the template's envd is too old; "
                    "rebuild the template");
  }
  if (mcp) {
    rc = mcp_start(sb, mcp, o->cancel);
    free(mcp);
    if (rc) {
      /* The error first: the kill must not overwrite it. */
      asbi_err_saved saved;
      asbi_err_save(&saved);
      asb_sandbox_kill(sb, NULL);
      asb_sandbox_free(sb);
      asbi_err_restore(&saved);
      return rc;
    }
  }
  *out = sb;
  return ASB_OK;
}

static int connect_id(asb_client *c, const char *id, long timeout_ms, const asb_call_options *call,
                      asb_cancel *stop, cJSON **reply, int *status) {
  char path[256];
  cJSON *body = cJSON_CreateObject();
  if (!body) return asbi_oom();
  cJSON_AddNumberToObject(body, "timeout",
                          seconds(timeout_ms ? timeout_ms : DEFAULT_SANDBOX_TIMEOUT_MS));
  cp_call k;
  cp_from(&k, c, call);
  k.stop = stop;
  const int ok404[] = {404, 0};
  snprintf(path, sizeof path, "/v2/sandboxes/%s/connect", id);
  int rc = cp_request(c, "POST", path, body, &k, "sandbox.connect", ok404, status, reply, NULL);
  if (!rc && *status == 404 && !*reply) {
    /* Either no such sandbox, or an engine without the v2 route. */
    snprintf(path, sizeof path, "/sandboxes/%s/connect", id);
    rc = cp_request(c, "POST", path, body, &k, "sandbox.connect", NULL, status, reply, NULL);
  }
  cJSON_Delete(body);
  return rc;
}

static int check_id(const char *id, const char *what) {
  if (!id || !*id || strlen(id) > 128) return asbi_err(ASB_EINVAL, "%s: bad sandbox id", what);
  for (const char *p = id; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
      return asbi_err(ASB_EINVAL, "%s: invalid sandbox id '%s'", what, id);
  return ASB_OK;
}

int asb_sandbox_connect(asb_sandbox **out, asb_client *c, const char *id, long timeout_ms,
                        const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (!out || !c) return asbi_err(ASB_EINVAL, "sandbox.connect: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  int rc = check_id(id, "sandbox.connect");
  if (rc) return rc;
  if (c->debug) return asb_sandbox_attach(out, c, id, NULL);
  cJSON *reply = NULL;
  int status = 0;
  rc = connect_id(c, id, timeout_ms, call, c->life.stop, &reply, &status);
  if (rc == ASB_OK && !reply) rc = asbi_err(ASB_EPROTOCOL, "sandbox.connect: empty reply");
  if (rc == ASB_OK) rc = sandbox_from_reply(c, reply, out, "sandbox.connect");
  cJSON_Delete(reply);
  return rc;
}

static int kill_id(asb_client *c, const char *id, const asb_call_options *call, asb_cancel *stop) {
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  int rc = check_id(id, "sandbox.kill");
  if (rc) return rc;
  char path[256];
  snprintf(path, sizeof path, "/sandboxes/%s", id);
  cp_call k;
  cp_from(&k, c, call);
  k.idempotent = 1;
  k.stop = stop;
  return cp_request(c, "DELETE", path, NULL, &k, "sandbox.kill", NULL, NULL, NULL, NULL);
}

int asb_sandbox_kill_id(asb_client *c, const char *id, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (!c) return asbi_err(ASB_EINVAL, "sandbox.kill: client is NULL");
  return kill_id(c, id, call, c->life.stop);
}

int asb_sandbox_kill(asb_sandbox *sb, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb) return asbi_err(ASB_EINVAL, "sandbox.kill: sandbox is NULL");
  return kill_id(sb->client, sb->id, call, sb->life.stop);
}

int asb_sandbox_set_timeout(asb_sandbox *sb, long timeout_ms, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || timeout_ms < 0) return asbi_err(ASB_EINVAL, "sandbox.set_timeout: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  char path[256];
  snprintf(path, sizeof path, "/sandboxes/%s/timeout", sb->id);
  cJSON *body = cJSON_CreateObject();
  if (!body) return asbi_oom();
  cJSON_AddNumberToObject(body, "timeout", seconds(timeout_ms));
  cp_call k;
  cp_from(&k, sb->client, call);
  k.idempotent = 1;
  k.stop = sb->life.stop;
  int rc =
      cp_request(sb->client, "POST", path, body, &k, "sandbox.set_timeout", NULL, NULL, NULL, NULL);
  cJSON_Delete(body);
  return rc;
}

int asb_sandbox_loopback_url(char **url, asb_sandbox *sb, int port, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (url) *url = NULL;
  if (!url || !sb) return asbi_err(ASB_EINVAL, "sandbox.loopback_url: bad arguments");
  if (port < 1 || port > 65535)
    return asbi_err(ASB_EINVAL, "sandbox.loopback_url: port %d out of range", port);
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  char path[256];
  snprintf(path, sizeof path, "/sandboxes/%s/ports/%d/loopback", sb->id, port);
  cp_call k;
  cp_from(&k, sb->client, call);
  k.idempotent = 1; /* the same listener on every call */
  k.stop = sb->life.stop;
  cJSON *out = NULL;
  int rc = cp_request(sb->client, "POST", path, NULL, &k, "sandbox.loopback_url", NULL, NULL, &out,
                      NULL);
  const char *u = NULL;
  if (rc == ASB_OK && (asbi_pj_get_str(out, "url", &u) != 0 || !u || strncmp(u, "http://", 7)))
    rc = asbi_err(ASB_EPROTOCOL, "sandbox.loopback_url: the reply has no url");
  if (rc == ASB_OK && !(*url = asbi_strdup(u))) rc = asbi_oom();
  cJSON_Delete(out);
  return rc;
}

int asb_sandbox_pause(asb_sandbox *sb, const asb_call_options *call) {
  return asb_sandbox_pause_memory(sb, 1, call);
}

int asb_sandbox_pause_memory(asb_sandbox *sb, int keep_memory, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb) return asbi_err(ASB_EINVAL, "sandbox.pause: sandbox is NULL");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  char path[256];
  snprintf(path, sizeof path, "/sandboxes/%s/pause", sb->id);
  cJSON *body = cJSON_CreateObject();
  if (body && !keep_memory && !cJSON_AddBoolToObject(body, "memory", 0)) {
    cJSON_Delete(body);
    body = NULL;
  }
  cp_call k;
  cp_from(&k, sb->client, call);
  k.stop = sb->life.stop;
  int status = 0;
  const int ok409[] = {409, 0};
  int rc = body ? cp_request(sb->client, "POST", path, body, &k, "sandbox.pause", ok409, &status,
                             NULL, NULL)
                : asbi_oom();
  cJSON_Delete(body);
  if (rc) return rc;
  return status == 409 ? 0 : 1;
}

int asb_sandbox_resume(asb_sandbox *sb, long timeout_ms, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb) return asbi_err(ASB_EINVAL, "sandbox.resume: sandbox is NULL");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  cJSON *reply = NULL;
  int status = 0;
  int rc = connect_id(sb->client, sb->id, timeout_ms, call, sb->life.stop, &reply, &status);
  cJSON_Delete(reply);
  return rc;
}

int asb_sandbox_update_network(asb_sandbox *sb, int allow_internet_access, const char *network_json,
                               const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb) return asbi_err(ASB_EINVAL, "sandbox.update_network: sandbox is NULL");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  cJSON *body = NULL;
  int rc = network_parse(network_json, 1, "sandbox.update_network", &body);
  if (!rc && !body && !(body = cJSON_CreateObject())) rc = asbi_oom();
  if (!rc) rc = add_internet(body, allow_internet_access, 0, "sandbox.update_network");
  if (rc) {
    cJSON_Delete(body);
    return rc;
  }
  char path[256];
  snprintf(path, sizeof path, "/sandboxes/%s/network", sb->id);
  cp_call k;
  cp_from(&k, sb->client, call);
  k.idempotent = 1; /* it replaces the whole config: sending it twice is sending it once */
  k.stop = sb->life.stop;
  rc = cp_request(sb->client, "PUT", path, body, &k, "sandbox.update_network", NULL, NULL, NULL,
                  NULL);
  cJSON_Delete(body);
  return rc;
}

int asb_sandbox_is_running(asb_sandbox *sb, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb) return asbi_err(ASB_EINVAL, "sandbox.is_running: sandbox is NULL");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  /* As E2B's SDKs: envd's /health through the sandbox route; 502 (or a
   * sandbox the router does not know) means not running. */
  asbi_buf url = ASBI_BUF_INIT, store = ASBI_BUF_INIT;
  asbi_buf_printf(&url, "%s/health", sb->envd_base);
  const char *hs[12];
  asbi_envd_headers(sb, NULL, hs, &store, NULL);
  asbi_http_req r = {.method = "GET",
                     .url = url.data,
                     .headers = hs,
                     .headers2 = (const char *const *)sb->client->headers,
                     .timeout_ms = asbi_client_timeout(sb->client, call ? call->timeout_ms : 0),
                     .cancel = call ? call->cancel : NULL,
                     .stop = sb->life.stop};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  int rc = url.data ? asbi_http_do(sb->client->http, &r, &resp) : asbi_oom();
  if (rc == ASB_OK)
    rc = resp.status == 204 || resp.status == 200 ? 1 : 0;
  else if (rc == ASB_ECONNECTION)
    rc = 0;
  asbi_http_resp_free(&resp);
  asbi_buf_free(&url);
  asbi_buf_free(&store);
  return rc;
}

/* ---- info ---------------------------------------------------------------------------- */

struct asb_sandbox_info {
  char *id, *template_id, *name, *state, *envd_version;
  char *pause_mode;                           /* the engine's pauseMode, or NULL */
  char *fork_mode;                            /* the engine's forkMode, or NULL */
  int auto_resume;                            /* lifecycle.autoResume: 1, 0, -1 not said */
  int64_t swapped, resident, resident_before; /* swap.*: -1 without one */
  char *on_timeout;                           /* lifecycle.onTimeout, or NULL */
  char **vm_names, **vm_paths;                /* volumeMounts */
  size_t nvm;
  int64_t started, end;
  int cpu, mem, disk;
  char **mkeys, **mvals;
  size_t nmeta;
  int internet;  /* allowInternetAccess: 1, 0, or -1 when the reply had none */
  char *network; /* the network object as JSON, or NULL */
  char **allow_out, **deny_out;
  size_t nallow_out, ndeny_out;
};

static void strv_free(char **v, size_t n) {
  for (size_t k = 0; k < n; k++) free(v[k]);
  free(v);
}

/* network.<key> (a list of strings; anything else in it is skipped) into
 * *v, *n. 0, or ASB_ENOMEM. */
static int info_strings(const cJSON *net, const char *key, char ***v, size_t *n) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(net, key), *e;
  if (!cJSON_IsArray(a)) return ASB_OK;
  if (!(*v = calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof **v))) return ASB_ENOMEM;
  cJSON_ArrayForEach(e, a) {
    if (!cJSON_IsString(e)) continue;
    if (!((*v)[*n] = asbi_strdup(e->valuestring))) return ASB_ENOMEM;
    (*n)++;
  }
  return ASB_OK;
}

/* volumeMounts ([{name, path}]; an item without both strings is skipped)
 * into i. 0, or ASB_ENOMEM. */
static int info_mounts(const cJSON *a, asb_sandbox_info *i) {
  const cJSON *e;
  if (!cJSON_IsArray(a)) return ASB_OK;
  size_t n = (size_t)cJSON_GetArraySize(a) + 1;
  if (!(i->vm_names = calloc(n, sizeof *i->vm_names)) ||
      !(i->vm_paths = calloc(n, sizeof *i->vm_paths)))
    return ASB_ENOMEM;
  cJSON_ArrayForEach(e, a) {
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "path");
    if (!cJSON_IsString(nm) || !cJSON_IsString(p)) continue;
    i->vm_names[i->nvm] = asbi_strdup(nm->valuestring);
    i->vm_paths[i->nvm] = asbi_strdup(p->valuestring);
    i->nvm++; /* counted before the check: the free frees both */
    if (!i->vm_names[i->nvm - 1] || !i->vm_paths[i->nvm - 1]) return ASB_ENOMEM;
  }
  return ASB_OK;
}

static int64_t parse_time_s(const char *s) {
  if (!s) return 0;
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (!strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return (int64_t)timegm(&tm);
}

void asb_sandbox_info_free(asb_sandbox_info *i) {
  if (!i) return;
  free(i->id);
  free(i->template_id);
  free(i->name);
  free(i->state);
  free(i->envd_version);
  free(i->pause_mode);
  free(i->fork_mode);
  free(i->on_timeout);
  strv_free(i->vm_names, i->nvm);
  strv_free(i->vm_paths, i->nvm);
  for (size_t k = 0; k < i->nmeta; k++) {
    free(i->mkeys[k]);
    free(i->mvals[k]);
  }
  free(i->mkeys);
  free(i->mvals);
  free(i->network);
  strv_free(i->allow_out, i->nallow_out);
  strv_free(i->deny_out, i->ndeny_out);
  free(i);
}

/* One sandbox of a reply: ASB_EPROTOCOL unless an object with a sandboxID. */
static int info_from(const cJSON *j, asb_sandbox_info **out) {
  const char *s = NULL;
  if (!cJSON_IsObject(j) || asbi_pj_get_str(j, "sandboxID", &s) || !s || !*s)
    return asbi_err(ASB_EPROTOCOL, "a sandbox without a sandboxID");
  asb_sandbox_info *i = calloc(1, sizeof *i);
  if (!i) return asbi_oom();
#define STR(field, key)        \
  s = NULL;                    \
  asbi_pj_get_str(j, key, &s); \
  i->field = asbi_strdup(s);
  STR(id, "sandboxID");
  STR(template_id, "templateID");
  STR(name, "alias");
  STR(state, "state");
  STR(envd_version, "envdVersion");
  STR(pause_mode, "pauseMode");
  STR(fork_mode, "forkMode");
#undef STR
  const cJSON *lc = cJSON_GetObjectItemCaseSensitive(j, "lifecycle");
  const cJSON *ar = cJSON_IsObject(lc) ? cJSON_GetObjectItemCaseSensitive(lc, "autoResume") : NULL;
  i->auto_resume = cJSON_IsBool(ar) ? cJSON_IsTrue(ar) : -1;
  const cJSON *ot = cJSON_IsObject(lc) ? cJSON_GetObjectItemCaseSensitive(lc, "onTimeout") : NULL;
  int oom = cJSON_IsString(ot) && !(i->on_timeout = asbi_strdup(ot->valuestring));
  /* ours (--pause-swap): swappedBytes and residentBytes, or none at all,
   * so "none" never reads as data; residentBeforeBytes on its own (an
   * engine that adopted the paused sandbox does not know it) */
  const cJSON *sw = cJSON_GetObjectItemCaseSensitive(j, "swap");
  static const char *const swk[3] = {"swappedBytes", "residentBytes", "residentBeforeBytes"};
  int64_t sv[3] = {-1, -1, -1};
  for (int k = 0; cJSON_IsObject(sw) && k < 3; k++)
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(sw, swk[k])) ||
        asbi_pj_get_i64(sw, swk[k], &sv[k]) || sv[k] < 0)
      sv[k] = -1;
  int have = sv[0] >= 0 && sv[1] >= 0;
  i->swapped = have ? sv[0] : -1;
  i->resident = have ? sv[1] : -1;
  i->resident_before = have ? sv[2] : -1;
  oom = oom || info_mounts(cJSON_GetObjectItemCaseSensitive(j, "volumeMounts"), i);
  s = NULL;
  asbi_pj_get_str(j, "startedAt", &s);
  i->started = parse_time_s(s);
  s = NULL;
  asbi_pj_get_str(j, "endAt", &s);
  i->end = parse_time_s(s);
  int32_t v = 0;
  asbi_pj_get_i32(j, "cpuCount", &v);
  i->cpu = v;
  v = 0;
  asbi_pj_get_i32(j, "memoryMB", &v);
  i->mem = v;
  v = 0;
  asbi_pj_get_i32(j, "diskSizeMB", &v);
  i->disk = v;
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(j, "metadata"), *it;
  size_t n = cJSON_IsObject(meta) ? (size_t)cJSON_GetArraySize(meta) : 0;
  i->mkeys = calloc(n + 1, sizeof *i->mkeys);
  i->mvals = calloc(n + 1, sizeof *i->mvals);
  if (!i->state) i->state = asbi_strdup("running");
  oom = oom || !i->id || !i->state || !i->mkeys || !i->mvals;
  cJSON_ArrayForEach(it, meta) {
    if (oom) break;
    if (!cJSON_IsString(it)) continue;
    i->mkeys[i->nmeta] = asbi_strdup(it->string);
    i->mvals[i->nmeta] = asbi_strdup(it->valuestring);
    oom = !i->mkeys[i->nmeta] || !i->mvals[i->nmeta];
    i->nmeta++;
  }
  const cJSON *iae = cJSON_GetObjectItemCaseSensitive(j, "allowInternetAccess");
  i->internet = cJSON_IsBool(iae) ? cJSON_IsTrue(iae) : -1;
  const cJSON *net = cJSON_GetObjectItemCaseSensitive(j, "network");
  if (!oom && cJSON_IsObject(net)) {
    oom = !(i->network = asbi_pj_print(net)) ||
          info_strings(net, "allowOut", &i->allow_out, &i->nallow_out) ||
          info_strings(net, "denyOut", &i->deny_out, &i->ndeny_out);
  }
  if (oom) {
    asb_sandbox_info_free(i);
    return asbi_oom();
  }
  *out = i;
  return ASB_OK;
}

int asb_sandbox_get_info(asb_sandbox_info **out, asb_sandbox *sb, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !out) return asbi_err(ASB_EINVAL, "sandbox.get_info: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  char path[256];
  snprintf(path, sizeof path, "/sandboxes/%s", sb->id);
  cp_call k;
  cp_from(&k, sb->client, call);
  k.idempotent = 1;
  k.stop = sb->life.stop;
  cJSON *reply = NULL;
  int rc =
      cp_request(sb->client, "GET", path, NULL, &k, "sandbox.get_info", NULL, NULL, &reply, NULL);
  if (rc == ASB_OK && (rc = info_from(reply, out))) asbi_err_prefix("sandbox.get_info");
  cJSON_Delete(reply);
  return rc;
}

const char *asb_sandbox_info_id(const asb_sandbox_info *i) {
  return i ? i->id : NULL;
}
const char *asb_sandbox_info_template_id(const asb_sandbox_info *i) {
  return i ? i->template_id : NULL;
}
const char *asb_sandbox_info_name(const asb_sandbox_info *i) {
  return i ? i->name : NULL;
}
const char *asb_sandbox_info_state(const asb_sandbox_info *i) {
  return i ? i->state : NULL;
}
const char *asb_sandbox_info_fork_mode(const asb_sandbox_info *i) {
  return i ? i->fork_mode : NULL;
}
const char *asb_sandbox_info_pause_mode(const asb_sandbox_info *i) {
  return i ? i->pause_mode : NULL;
}
int asb_sandbox_info_auto_resume(const asb_sandbox_info *i) {
  return i ? i->auto_resume : -1;
}
asb_int64 asb_sandbox_info_swapped_bytes(const asb_sandbox_info *i) {
  return i ? i->swapped : -1;
}
asb_int64 asb_sandbox_info_resident_bytes(const asb_sandbox_info *i) {
  return i ? i->resident : -1;
}
asb_int64 asb_sandbox_info_resident_before_bytes(const asb_sandbox_info *i) {
  return i ? i->resident_before : -1;
}
const char *asb_sandbox_info_on_timeout(const asb_sandbox_info *i) {
  return i ? i->on_timeout : NULL;
}
size_t asb_sandbox_info_volume_mount_count(const asb_sandbox_info *i) {
  return i ? i->nvm : 0;
}
const char *asb_sandbox_info_volume_mount_name(const asb_sandbox_info *i, size_t k) {
  return i && k < i->nvm ? i->vm_names[k] : NULL;
}
const char *asb_sandbox_info_volume_mount_path(const asb_sandbox_info *i, size_t k) {
  return i && k < i->nvm ? i->vm_paths[k] : NULL;
}
asb_int64 asb_sandbox_info_started_at(const asb_sandbox_info *i) {
  return i ? i->started : 0;
}
asb_int64 asb_sandbox_info_end_at(const asb_sandbox_info *i) {
  return i ? i->end : 0;
}
int asb_sandbox_info_cpu_count(const asb_sandbox_info *i) {
  return i ? i->cpu : 0;
}
int asb_sandbox_info_memory_mb(const asb_sandbox_info *i) {
  return i ? i->mem : 0;
}
int asb_sandbox_info_disk_mb(const asb_sandbox_info *i) {
  return i ? i->disk : 0;
}
const char *asb_sandbox_info_envd_version(const asb_sandbox_info *i) {
  return i ? i->envd_version : NULL;
}
const char *asb_sandbox_info_metadata(const asb_sandbox_info *i, const char *key) {
  for (size_t k = 0; i && key && k < i->nmeta; k++)
    if (strcmp(i->mkeys[k], key) == 0) return i->mvals[k];
  return NULL;
}
size_t asb_sandbox_info_metadata_count(const asb_sandbox_info *i) {
  return i ? i->nmeta : 0;
}
const char *asb_sandbox_info_metadata_key(const asb_sandbox_info *i, size_t k) {
  return i && k < i->nmeta ? i->mkeys[k] : NULL;
}
const char *asb_sandbox_info_metadata_value(const asb_sandbox_info *i, size_t k) {
  return i && k < i->nmeta ? i->mvals[k] : NULL;
}

int asb_sandbox_info_allow_internet_access(const asb_sandbox_info *i) {
  return i ? i->internet : -1;
}
const char *asb_sandbox_info_network_json(const asb_sandbox_info *i) {
  return i ? i->network : NULL;
}
size_t asb_sandbox_info_allow_out_count(const asb_sandbox_info *i) {
  return i ? i->nallow_out : 0;
}
const char *asb_sandbox_info_allow_out_get(const asb_sandbox_info *i, size_t k) {
  return i && k < i->nallow_out ? i->allow_out[k] : NULL;
}
size_t asb_sandbox_info_deny_out_count(const asb_sandbox_info *i) {
  return i ? i->ndeny_out : 0;
}
const char *asb_sandbox_info_deny_out_get(const asb_sandbox_info *i, size_t k) {
  return i && k < i->ndeny_out ? i->deny_out[k] : NULL;
}

/* ---- list ------------------------------------------------------------------------------ */

struct asb_sandbox_page {
  asb_sandbox_info **items;
  size_t n;
  char *next;
};

/* Version 1 ended before started_after. */
static size_t list_options_size(unsigned int version) {
  return version >= 2 ? sizeof(asb_sandbox_list_options)
                      : offsetof(asb_sandbox_list_options, started_after);
}

ASBI_DEFINE_OPTIONS_INIT_SIZED(asb_sandbox_list_options, ASB_SANDBOX_LIST_OPTIONS_VERSION,
                               ASB_SANDBOX_LIST_OPTIONS_INIT, list_options_size)

void asb_sandbox_page_free(asb_sandbox_page *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++) asb_sandbox_info_free(p->items[i]);
  free(p->items);
  free(p->next);
  free(p);
}

static int info_item(const cJSON *j, void *item) {
  return info_from(j, item);
}
static void info_drop(void *item) {
  asb_sandbox_info_free(*(asb_sandbox_info **)item);
}

int asb_sandbox_list(asb_sandbox_page **out, asb_client *c, const asb_sandbox_list_options *o) {
  ASBI_CLIENT_CALL(c);
  if (!c || !out) return asbi_err(ASB_EINVAL, "sandbox.list: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_SANDBOX_LIST_OPTIONS_VERSION, "asb_sandbox_list_options");
  asb_sandbox_list_options d = ASB_SANDBOX_LIST_OPTIONS_INIT;
  if (!o) o = &d;
  if (o->limit < 0 || o->limit > 100)
    return asbi_err(ASB_EINVAL, "sandbox.list: limit %d out of 1..100", o->limit);
  asbi_buf path = ASBI_BUF_INIT, meta = ASBI_BUF_INIT;
  asbi_buf_puts(&path, "/v2/sandboxes?");
  for (const char *const *m = o->metadata; m && *m; m++) {
    const char *eq = strchr(*m, '=');
    if (!eq || eq == *m) {
      asbi_buf_free(&path);
      asbi_buf_free(&meta);
      return asbi_err(ASB_EINVAL, "sandbox.list: metadata '%s' is not key=value", *m);
    }
    char *k = asbi_strndup(*m, (size_t)(eq - *m));
    if (meta.len) asbi_buf_putc(&meta, '&');
    asbi_url_escape(&meta, k ? k : "", 0);
    asbi_buf_putc(&meta, '=');
    asbi_url_escape(&meta, eq + 1, 0);
    free(k);
  }
  if (meta.len) {
    asbi_buf_puts(&path, "metadata=");
    asbi_url_escape(&path, meta.data, 0);
    asbi_buf_putc(&path, '&');
  }
  asbi_buf_free(&meta);
  int running = o->running || !o->paused, paused = o->paused || !o->running;
  asbi_buf_printf(&path, "state=%s%s%s&limit=%d", running ? "running" : "",
                  running && paused ? "," : "", paused ? "paused" : "", o->limit ? o->limit : 100);
  if (o->template_id) {
    asbi_buf_puts(&path, "&template=");
    asbi_url_escape(&path, o->template_id, 0);
  }
  if (o->next_token && *o->next_token) {
    asbi_buf_puts(&path, "&nextToken=");
    asbi_url_escape(&path, o->next_token, 0);
  }
  const char *after = ASBI_OPT(o, 2, started_after, NULL);
  if (after && *after) {
    asbi_buf_puts(&path, "&startedAfter=");
    asbi_url_escape(&path, after, 0);
  }
  if (!path.data) return asbi_oom();
  cp_call k = {asbi_client_timeout(c, o->request_timeout_ms), o->cancel, 1, 0, c->life.stop};
  cJSON *reply = NULL;
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  int rc = cp_request(c, "GET", path.data, NULL, &k, "sandbox.list", NULL, NULL, &reply, &resp);
  asbi_buf_free(&path);
  asb_sandbox_page *p = NULL;
  if (rc == ASB_OK && !(p = calloc(1, sizeof *p))) rc = asbi_oom();
  if (rc == ASB_OK && (rc = asbi_json_items(reply, sizeof *p->items, info_item, info_drop,
                                            (void **)&p->items, &p->n)))
    asbi_err_prefix("sandbox.list");
  if (rc == ASB_OK) {
    const char *nt = asbi_http_resp_header(&resp, "x-next-token");
    if (nt && *nt && !(p->next = asbi_strdup(nt))) rc = asbi_oom();
  }
  asbi_http_resp_free(&resp);
  cJSON_Delete(reply);
  if (rc) {
    asb_sandbox_page_free(p);
    return rc;
  }
  *out = p;
  return ASB_OK;
}

size_t asb_sandbox_page_count(const asb_sandbox_page *p) {
  return p ? p->n : 0;
}
const asb_sandbox_info *asb_sandbox_page_get(const asb_sandbox_page *p, size_t i) {
  return p && i < p->n ? p->items[i] : NULL;
}
const char *asb_sandbox_page_next_token(const asb_sandbox_page *p) {
  return p ? p->next : NULL;
}

/* ---- metrics -------------------------------------------------------------------------- */

typedef struct metric {
  int64_t ts, mem_used, mem_total, disk_used, disk_total;
  double cpu_pct;
  int cpu_count;
} metric;

struct asb_metrics {
  metric *v;
  size_t n;
};

static int metric_item(const cJSON *it, void *item) {
  metric *x = item;
  int32_t cc = 0;
  asbi_pj_get_i64(it, "timestampUnix", &x->ts);
  asbi_pj_get_i32(it, "cpuCount", &cc);
  x->cpu_count = cc;
  const cJSON *pct = cJSON_GetObjectItemCaseSensitive(it, "cpuUsedPct");
  x->cpu_pct = cJSON_IsNumber(pct) ? pct->valuedouble : 0;
  asbi_pj_get_i64(it, "memUsed", &x->mem_used);
  asbi_pj_get_i64(it, "memTotal", &x->mem_total);
  asbi_pj_get_i64(it, "diskUsed", &x->disk_used);
  asbi_pj_get_i64(it, "diskTotal", &x->disk_total);
  return ASB_OK;
}

int asb_sandbox_get_metrics(asb_metrics **out, asb_sandbox *sb, asb_int64 start, asb_int64 end,
                            const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !out) return asbi_err(ASB_EINVAL, "sandbox.get_metrics: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  char path[256];
  int n = snprintf(path, sizeof path, "/sandboxes/%s/metrics", sb->id);
  if (start || end)
    snprintf(path + n, sizeof path - (size_t)n, "?start=%lld&end=%lld", (long long)start,
             (long long)(end ? end : (asb_int64)time(NULL) + 86400));
  cp_call k;
  cp_from(&k, sb->client, call);
  k.idempotent = 1;
  k.stop = sb->life.stop;
  cJSON *reply = NULL;
  int rc = cp_request(sb->client, "GET", path, NULL, &k, "sandbox.get_metrics", NULL, NULL, &reply,
                      NULL);
  asb_metrics *m = NULL;
  if (rc == ASB_OK && !(m = calloc(1, sizeof *m))) rc = asbi_oom();
  if (rc == ASB_OK &&
      (rc = asbi_json_items(reply, sizeof *m->v, metric_item, NULL, (void **)&m->v, &m->n)))
    asbi_err_prefix("sandbox.get_metrics");
  cJSON_Delete(reply);
  if (rc) {
    asb_metrics_free(m);
    return rc;
  }
  *out = m;
  return ASB_OK;
}

void asb_metrics_free(asb_metrics *m) {
  if (!m) return;
  free(m->v);
  free(m);
}

size_t asb_metrics_count(const asb_metrics *m) {
  return m ? m->n : 0;
}
#define METRIC_GETTER(type, name, field)                    \
  type asb_metrics_##name(const asb_metrics *m, size_t i) { \
    return m && i < m->n ? (type)m->v[i].field : (type)0;   \
  }
METRIC_GETTER(asb_int64, sampled_at, ts)
METRIC_GETTER(double, cpu_used_pct, cpu_pct)
METRIC_GETTER(int, cpu_count, cpu_count)
METRIC_GETTER(asb_int64, mem_used, mem_used)
METRIC_GETTER(asb_int64, mem_total, mem_total)
METRIC_GETTER(asb_int64, disk_used, disk_used)
METRIC_GETTER(asb_int64, disk_total, disk_total)

/* ---- snapshots and fork ------------------------------------------------------------ */

int asb_sandbox_snapshot(char **snapshot_id, asb_sandbox *sb, const char *name,
                         const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (snapshot_id) *snapshot_id = NULL;
  if (!sb || !snapshot_id) return asbi_err(ASB_EINVAL, "sandbox.snapshot: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  char path[256];
  snprintf(path, sizeof path, "/sandboxes/%s/snapshots", sb->id);
  cJSON *body = cJSON_CreateObject();
  if (!body || (name && *name && !cJSON_AddStringToObject(body, "name", name))) {
    cJSON_Delete(body);
    return asbi_oom();
  }
  cp_call k;
  cp_from(&k, sb->client, call);
  k.stop = sb->life.stop;
  cJSON *reply = NULL;
  int rc =
      cp_request(sb->client, "POST", path, body, &k, "sandbox.snapshot", NULL, NULL, &reply, NULL);
  cJSON_Delete(body);
  const char *id = NULL;
  if (!rc && (asbi_pj_get_str(reply, "snapshotID", &id) || !id || !*id))
    rc = asbi_err(ASB_EPROTOCOL, "sandbox.snapshot: the reply lacks snapshotID");
  if (!rc && !(*snapshot_id = asbi_strdup(id))) rc = asbi_oom();
  cJSON_Delete(reply);
  return rc;
}

ASBI_DEFINE_OPTIONS_INIT(asb_fork_options, ASB_FORK_OPTIONS_VERSION, ASB_FORK_OPTIONS_INIT)

/* One entry of a fork reply: a handle, or the fork's error message. */
typedef struct fork_entry {
  asb_sandbox *sb; /* NULL: failed, or taken */
  char *error;     /* the engine's reason a fork failed, else NULL */
  int taken;
} fork_entry;

struct asb_fork_list {
  fork_entry *v;
  size_t n;
};

void asb_fork_list_free(asb_fork_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) {
    asb_sandbox_free(l->v[i].sb);
    free(l->v[i].error);
  }
  free(l->v);
  free(l);
}

size_t asb_fork_list_count(const asb_fork_list *l) {
  return l ? l->n : 0;
}

int asb_fork_list_take(asb_sandbox **out, asb_fork_list *l, size_t i) {
  if (out) *out = NULL;
  if (!out || !l || i >= l->n) return asbi_err(ASB_EINVAL, "fork_list.take: bad arguments");
  fork_entry *e = &l->v[i];
  if (e->taken) return asbi_err(ASB_EINVAL, "fork_list.take: fork %zu taken already", i);
  if (e->sb) {
    *out = e->sb;
    e->sb = NULL;
    e->taken = 1;
    return ASB_OK;
  }
  return asbi_err(ASB_ERROR, "sandbox.fork: the fork failed to start: %s", e->error);
}

/* POST /sandboxes/{id}/fork with opts: the forks in *out (count entries at
 * most: the engine's reply, item by item). */
static int fork_request(asb_fork_list **out, asb_sandbox *sb, const asb_fork_options *opts,
                        const asb_call_options *call, int many) {
  static const asb_fork_options dflt = ASB_FORK_OPTIONS_INIT;
  if (!opts) opts = &dflt;
  ASBI_CHECK_VERSION(opts, ASB_FORK_OPTIONS_VERSION, "asb_fork_options");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  int count = opts->count ? opts->count : 1;
  if (count < 1 || count > 100 || (!many && count != 1))
    return asbi_err(ASB_EINVAL, "sandbox.fork: count %d (%s)", opts->count,
                    many ? "1..100" : "asb_sandbox_fork_ex forks one: asb_sandbox_fork_many");
  if (opts->keep_processes < -1 || opts->keep_processes > 1)
    return asbi_err(ASB_EINVAL, "sandbox.fork: keep_processes %d (-1, 0 or 1)",
                    opts->keep_processes);
  char path[256];
  snprintf(path, sizeof path, "/sandboxes/%s/fork", sb->id);
  cJSON *body = cJSON_CreateObject();
  if (!body || !cJSON_AddNumberToObject(body, "count", count) ||
      (opts->timeout_ms > 0 &&
       !cJSON_AddNumberToObject(body, "timeout", seconds(opts->timeout_ms))) ||
      (opts->keep_processes >= 0 &&
       !cJSON_AddBoolToObject(body, "keepProcesses", opts->keep_processes))) {
    cJSON_Delete(body);
    return asbi_oom();
  }
  cp_call k;
  cp_from(&k, sb->client, call);
  k.stop = sb->life.stop;
  cJSON *reply = NULL;
  int rc = cp_request(sb->client, "POST", path, body, &k, "sandbox.fork", NULL, NULL, &reply, NULL);
  cJSON_Delete(body);
  if (rc) return rc;
  asb_fork_list *l = calloc(1, sizeof *l);
  int n = cJSON_IsArray(reply) ? cJSON_GetArraySize(reply) : 0;
  if (n > count) n = count;
  if (!l || (n && !(l->v = calloc((size_t)n, sizeof *l->v)))) rc = asbi_oom();
  for (int i = 0; !rc && i < n; i++) {
    const cJSON *item = cJSON_GetArrayItem(reply, i);
    const cJSON *made = cJSON_GetObjectItemCaseSensitive(item, "sandbox");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(item, "error");
    fork_entry *e = &l->v[l->n];
    if (cJSON_IsObject(made)) {
      rc = sandbox_from_reply(sb->client, made, &e->sb, "sandbox.fork");
    } else if (cJSON_IsObject(why)) {
      const char *msg = NULL;
      asbi_pj_get_str(why, "message", &msg);
      if (!(e->error = asbi_strdup(msg && *msg ? msg : "?"))) rc = asbi_oom();
    } else {
      rc = asbi_err(ASB_EPROTOCOL, "sandbox.fork: reply item %d holds no fork", i);
    }
    if (!rc) l->n++;
  }
  if (!rc && l->n == 0) rc = asbi_err(ASB_EPROTOCOL, "sandbox.fork: the reply holds no fork");
  cJSON_Delete(reply);
  if (rc) {
    asb_fork_list_free(l);
    return rc;
  }
  *out = l;
  return ASB_OK;
}

int asb_sandbox_fork_many(asb_fork_list **out, asb_sandbox *sb, const asb_fork_options *opts,
                          const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (out) *out = NULL;
  if (!sb || !out) return asbi_err(ASB_EINVAL, "sandbox.fork: bad arguments");
  return fork_request(out, sb, opts, call, 1);
}

int asb_sandbox_fork_ex(asb_sandbox **out, asb_sandbox *sb, const asb_fork_options *opts,
                        const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (out) *out = NULL;
  if (!sb || !out) return asbi_err(ASB_EINVAL, "sandbox.fork: bad arguments");
  asb_fork_list *l = NULL;
  int rc = fork_request(&l, sb, opts, call, 0);
  if (!rc) rc = asb_fork_list_take(out, l, 0);
  asb_fork_list_free(l);
  return rc;
}

int asb_sandbox_fork(asb_sandbox **out, asb_sandbox *sb, long timeout_ms,
                     const asb_call_options *call) {
  asb_fork_options o = ASB_FORK_OPTIONS_INIT;
  o.timeout_ms = timeout_ms;
  return asb_sandbox_fork_ex(out, sb, &o, call);
}

const char *asb_sandbox_fork_mode(const asb_sandbox *sb) {
  return sb ? sb->fork_mode : NULL;
}

struct asb_snapshot_list {
  char **v;
  size_t n;
};

int asb_snapshots_list(asb_snapshot_list **out, asb_client *c, const char *sandbox_id,
                       const char *name, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !out) return asbi_err(ASB_EINVAL, "snapshots.list: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asb_snapshot_list *l = calloc(1, sizeof *l);
  if (!l) return asbi_oom();
  cp_call k;
  cp_from(&k, c, call);
  k.idempotent = 1;
  char *next = NULL;
  int rc = ASB_OK;
  do { /* every page */
    asbi_buf path = ASBI_BUF_INIT;
    asbi_buf_puts(&path, "/snapshots?limit=100");
    if (sandbox_id && *sandbox_id) {
      asbi_buf_puts(&path, "&sandboxID=");
      asbi_url_escape(&path, sandbox_id, 0);
    }
    if (name && *name) {
      asbi_buf_puts(&path, "&name=");
      asbi_url_escape(&path, name, 0);
    }
    if (next) {
      asbi_buf_puts(&path, "&nextToken=");
      asbi_url_escape(&path, next, 0);
    }
    free(next);
    next = NULL;
    cJSON *reply = NULL;
    asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
    rc = path.data ? cp_request(c, "GET", path.data, NULL, &k, "snapshots.list", NULL, NULL, &reply,
                                &resp)
                   : asbi_oom();
    asbi_buf_free(&path);
    if (!rc && !cJSON_IsArray(reply))
      rc = asbi_err(ASB_EPROTOCOL, "snapshots.list: the reply is not a list");
    const cJSON *it, *arr = rc ? NULL : reply;
    cJSON_ArrayForEach(it, arr) {
      const char *id = NULL;
      if (asbi_pj_get_str(it, "snapshotID", &id) || !id) {
        rc = asbi_err(ASB_EPROTOCOL, "snapshots.list: an entry lacks snapshotID");
        break;
      }
      char **nv = realloc(l->v, (l->n + 1) * sizeof *nv);
      if (!nv || !(nv[l->n] = asbi_strdup(id))) {
        if (nv) l->v = nv;
        rc = asbi_oom();
        break;
      }
      l->v = nv;
      l->n++;
    }
    const char *nt = rc ? NULL : asbi_http_resp_header(&resp, "x-next-token");
    if (nt && *nt && !(next = asbi_strdup(nt))) rc = asbi_oom();
    asbi_http_resp_free(&resp);
    cJSON_Delete(reply);
  } while (!rc && next);
  free(next);
  if (rc) {
    asb_snapshot_list_free(l);
    return rc;
  }
  *out = l;
  return ASB_OK;
}

size_t asb_snapshot_list_count(const asb_snapshot_list *l) {
  return l ? l->n : 0;
}
const char *asb_snapshot_list_get(const asb_snapshot_list *l, size_t i) {
  return l && i < l->n ? l->v[i] : NULL;
}
void asb_snapshot_list_free(asb_snapshot_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  free(l);
}
