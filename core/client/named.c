/* Named commands: POST /commands/<name> and GET /commands on a sandbox port
 * (9000 by default), routed like the code interpreter's traffic.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/cmdargs.h"
#include "proto/pjson.h"
#include "proto/url.h"
#include "util/util.h"
#include "envd.h"

#define DEFAULT_PORT 9000

ASBI_DEFINE_OPTIONS_INIT(asb_named_command_options, ASB_NAMED_COMMAND_OPTIONS_VERSION,
                         ASB_NAMED_COMMAND_OPTIONS_INIT)

/* Maps an error reply of a command server ({"error", "type"}) or of the
 * route to it (the engine's router, an E2B proxy). */
static int map_error(const asbi_http_resp *resp, const char *what, const char *name, int port) {
  long st = resp->status;
  cJSON *j = resp->body.len ? asbi_pj_parse(resp->body.data, resp->body.len, NULL) : NULL;
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
  int rc;
  if (cJSON_IsString(err) && cJSON_IsString(type)) {
    const char *m = err->valuestring, *t = type->valuestring;
    if (st == 404 && strcmp(t, "NotFound") != 0)
      rc = asbi_err_remote(ASB_ECOMMANDNOTFOUND, (int)st, t, "%s: %s", what, m);
    else if (st == 404)
      rc = asbi_err_remote(ASB_EUNSUPPORTED, (int)st, t, "%s: port %d does not serve /commands: %s",
                           what, port, m);
    else if (st == 400)
      rc = asbi_err_remote(ASB_EINVAL, (int)st, t, "%s: %s", what, m);
    else if (st == 401)
      rc = asbi_err_remote(ASB_EAUTH, (int)st, t,
                           "%s: %s (the server wants another "
                           "X-Access-Token)",
                           what, m);
    else if (st >= 500)
      rc = asbi_err_remote(ASB_ECOMMANDFAILED, (int)st, t, "%s: command '%s' failed: %s: %s", what,
                           name ? name : "", t, m);
    else
      rc = asbi_err_remote(ASB_ERROR, (int)st, t, "%s: %s (HTTP %ld)", what, m, st);
    cJSON_Delete(j);
    return rc;
  }
  /* The engine's router: nothing listens on the port. */
  if (st == 502 && cJSON_IsString(err) && strcmp(err->valuestring, "port_closed") == 0) {
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "message");
    rc = asbi_err_remote(ASB_ECONNECTION, (int)st, "port_closed", "%s: %s", what,
                         cJSON_IsString(msg) ? msg->valuestring : "nothing listens on the port");
    cJSON_Delete(j);
    return rc;
  }
  cJSON_Delete(j);
  return asbi_map_http_error(resp, what);
}

static int call(asb_sandbox *sb, const char *method, const char *name, const char *body,
                const asb_named_command_options *o, const char *what, cJSON **out) {
  *out = NULL;
  int port = o && o->port ? o->port : DEFAULT_PORT;
  if (port < 1 || port > 65535) return asbi_err(ASB_EINVAL, "%s: port %d out of range", what, port);
  asbi_buf url = ASBI_BUF_INIT, store = ASBI_BUF_INIT;
  asbi_route_cfg cfg = {sb->client->sandbox_url, sb->client->debug, sb->domain, sb->id};
  if (asbi_url_sandbox_base(&url, &cfg, port, ASBI_URL_API) != 0 ||
      asbi_buf_puts(&url, "/commands") != 0 ||
      (name && (asbi_buf_putc(&url, '/') || asbi_url_escape(&url, name, 0)))) {
    asbi_buf_free(&url);
    return asbi_err(ASB_EINVAL, "%s: cannot route to sandbox %s", what, sb->id);
  }
  char port_hdr[40];
  snprintf(port_hdr, sizeof port_hdr, "E2b-Sandbox-Port: %d", port);
  const char *hs[10];
  size_t n = 0;
  hs[n++] = sb->hdr_id;
  hs[n++] = port_hdr;
  if (sb->hdr_token) hs[n++] = sb->hdr_token;
  hs[n++] = sb->hdr_ua;
  if (body) hs[n++] = "Content-Type: application/json";
  if (sb->traffic_token) {
    if (asbi_buf_printf(&store, "E2B-Traffic-Access-Token: %s", sb->traffic_token)) {
      asbi_buf_free(&url);
      return asbi_oom();
    }
    hs[n++] = store.data;
  }
  hs[n] = NULL;
  asbi_http_req r = {.method = method,
                     .url = url.data,
                     .headers = hs,
                     .headers2 = (const char *const *)sb->client->headers,
                     .body = body,
                     .body_len = body ? strlen(body) : 0,
                     .timeout_ms = asbi_client_timeout(sb->client, o ? o->timeout_ms : 0),
                     .cancel = o ? o->cancel : NULL,
                     .stop = sb->life.stop,
                     .idempotent = strcmp(method, "GET") == 0,
                     .max_retries = sb->client->max_retries};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  int rc = asbi_http_do(sb->client->http, &r, &resp);
  if (rc) {
    asbi_prefix_error(rc, what);
  } else if (resp.status >= 400) {
    rc = map_error(&resp, what, name, port);
  } else {
    const char *why = NULL;
    *out = resp.body.len ? asbi_pj_parse(resp.body.data, resp.body.len, &why) : NULL;
    if (!*out)
      rc = asbi_err(ASB_EPROTOCOL, "%s: malformed reply from port %d: %s", what, port,
                    why ? why : "empty body");
  }
  asbi_http_resp_free(&resp);
  asbi_buf_free(&url);
  asbi_buf_free(&store);
  return rc;
}

int asb_sandbox_run_command(char **result_json, asb_sandbox *sb, const char *name,
                            const char *args_json, const asb_named_command_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (result_json) *result_json = NULL;
  if (!sb || !name || !*name || !result_json)
    return asbi_err(ASB_EINVAL, "run_command: sandbox, name and result_json are required");
  ASBI_CHECK_VERSION(o, ASB_NAMED_COMMAND_OPTIONS_VERSION, "asb_named_command_options");
  if (args_json) {
    const char *why = NULL;
    cJSON *a = asbi_pj_parse(args_json, strlen(args_json), &why);
    int ok = cJSON_IsObject(a);
    cJSON_Delete(a);
    if (!ok)
      return asbi_err(ASB_EINVAL, "run_command %s: the arguments must be a JSON object%s%s", name,
                      why ? ": " : "", why ? why : "");
  }
  char what[200];
  snprintf(what, sizeof what, "run_command %.150s", name);
  cJSON *reply = NULL;
  int rc = call(sb, "POST", name, args_json ? args_json : "{}", o, what, &reply);
  if (rc) return rc;
  const cJSON *res =
      cJSON_IsObject(reply) ? cJSON_GetObjectItemCaseSensitive(reply, "result") : NULL;
  if (!res) {
    cJSON_Delete(reply);
    return asbi_err(ASB_EPROTOCOL, "%s: the reply has no \"result\"", what);
  }
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_json_print(res, &b)) {
    asbi_buf_free(&b);
    cJSON_Delete(reply);
    return asbi_oom();
  }
  cJSON_Delete(reply);
  *result_json = asbi_buf_detach(&b, NULL);
  return ASB_OK;
}

/* ---- listing ------------------------------------------------------------------ */

typedef struct named_arg {
  char *name, *type, *dflt, *description;
  int required;
} named_arg;

struct asb_named_command {
  char *name, *description;
  named_arg *args;
  size_t nargs;
};

struct asb_named_command_list {
  asb_named_command *v;
  size_t n;
};

static void cmd_free(asb_named_command *c) {
  for (size_t i = 0; i < c->nargs; i++) {
    free(c->args[i].name);
    free(c->args[i].type);
    free(c->args[i].dflt);
    free(c->args[i].description);
  }
  free(c->args);
  free(c->name);
  free(c->description);
}

static char *str_or(const cJSON *o, const char *key, const char *dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsString(v)) return asbi_strdup(v->valuestring);
  return dflt ? asbi_strdup(dflt) : NULL;
}

static int cmd_from(const cJSON *j, asb_named_command *c) {
  if (!cJSON_IsObject(j))
    return asbi_err(ASB_EPROTOCOL, "list_commands: an entry is not an object");
  if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "name")))
    return asbi_err(ASB_EPROTOCOL, "list_commands: a command without a name");
  c->name = str_or(j, "name", NULL);
  c->description = str_or(j, "description", "");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(j, "args");
  size_t n = cJSON_IsArray(args) ? (size_t)cJSON_GetArraySize(args) : 0;
  c->args = calloc(n ? n : 1, sizeof *c->args);
  if (!c->name || !c->description || !c->args) return asbi_oom();
  const cJSON *a;
  const cJSON *arr = cJSON_IsArray(args) ? args : NULL;
  cJSON_ArrayForEach(a, arr) {
    if (!cJSON_IsObject(a) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "name")))
      return asbi_err(ASB_EPROTOCOL, "list_commands: command '%s' has a malformed argument",
                      c->name);
    named_arg *x = &c->args[c->nargs++];
    x->name = str_or(a, "name", NULL);
    x->type = str_or(a, "type", "string");
    x->description = str_or(a, "description", "");
    x->required = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "required"));
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(a, "default");
    x->dflt = d && !cJSON_IsNull(d) ? asbi_arg_text(d) : NULL;
    if (!x->name || !x->type || !x->description || (d && !cJSON_IsNull(d) && !x->dflt))
      return asbi_oom();
  }
  return ASB_OK;
}

/* A command that failed half way is freed here: the list holds only whole ones. */
static int cmd_item(const cJSON *j, void *item) {
  int rc = cmd_from(j, item);
  if (rc) cmd_free(item);
  return rc;
}
static void cmd_drop(void *item) {
  cmd_free(item);
}

int asb_sandbox_commands_list(asb_named_command_list **out, asb_sandbox *sb,
                              const asb_named_command_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (out) *out = NULL;
  if (!sb || !out) return asbi_err(ASB_EINVAL, "list_commands: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_NAMED_COMMAND_OPTIONS_VERSION, "asb_named_command_options");
  cJSON *reply = NULL;
  int rc = call(sb, "GET", NULL, NULL, o, "list_commands", &reply);
  if (rc) return rc;
  asb_named_command_list *l = calloc(1, sizeof *l);
  if (!l)
    rc = asbi_oom();
  else
    rc = asbi_json_member_items(reply, "commands", "list_commands", sizeof *l->v, cmd_item,
                                cmd_drop, (void **)&l->v, &l->n);
  cJSON_Delete(reply);
  if (rc) {
    free(l);
    return rc;
  }
  *out = l;
  return ASB_OK;
}

size_t asb_named_command_list_count(const asb_named_command_list *l) {
  return l ? l->n : 0;
}

const asb_named_command *asb_named_command_list_get(const asb_named_command_list *l, size_t i) {
  return l && i < l->n ? &l->v[i] : NULL;
}

const asb_named_command *asb_named_command_list_find(const asb_named_command_list *l,
                                                     const char *name) {
  for (size_t i = 0; l && name && i < l->n; i++)
    if (strcmp(l->v[i].name, name) == 0) return &l->v[i];
  return NULL;
}

void asb_named_command_list_free(asb_named_command_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) cmd_free(&l->v[i]);
  free(l->v);
  free(l);
}

const char *asb_named_command_name(const asb_named_command *c) {
  return c ? c->name : NULL;
}
const char *asb_named_command_description(const asb_named_command *c) {
  return c ? c->description : NULL;
}
size_t asb_named_command_arg_count(const asb_named_command *c) {
  return c ? c->nargs : 0;
}

static const named_arg *arg_at(const asb_named_command *c, size_t i) {
  return c && i < c->nargs ? &c->args[i] : NULL;
}

const char *asb_named_command_arg_name(const asb_named_command *c, size_t i) {
  const named_arg *a = arg_at(c, i);
  return a ? a->name : NULL;
}
const char *asb_named_command_arg_type(const asb_named_command *c, size_t i) {
  const named_arg *a = arg_at(c, i);
  return a ? a->type : NULL;
}
int asb_named_command_arg_required(const asb_named_command *c, size_t i) {
  const named_arg *a = arg_at(c, i);
  return a ? a->required : 0;
}
const char *asb_named_command_arg_default(const asb_named_command *c, size_t i) {
  const named_arg *a = arg_at(c, i);
  return a ? a->dflt : NULL;
}
const char *asb_named_command_arg_description(const asb_named_command *c, size_t i) {
  const named_arg *a = arg_at(c, i);
  return a ? a->description : NULL;
}
