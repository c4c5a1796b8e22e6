/* Code interpreter client: E2B's /execute (NDJSON) and /contexts on the
 * sandbox's port 49999.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ndjson.h"
#include "proto/pjson.h"
#include "proto/url.h"
#include "util/util.h"
#include "envd.h"

#define DEFAULT_RUN_TIMEOUT_MS 300000L
#define MAX_LINE (64u * 1024u * 1024u)

/* ---- results and executions ---------------------------------------------------- */

struct asb_code_result {
  char **names, **values;
  size_t n;
  int is_main;
};

typedef struct strv {
  char **v;
  size_t n, cap;
} strv;

struct asb_execution {
  asb_code_result **results;
  size_t nresults, capresults;
  strv out, err;
  char *err_name, *err_value, *err_tb;
  int count;
};

static void code_result_free(asb_code_result *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    free(r->names[i]);
    free(r->values[i]);
  }
  free(r->names);
  free(r->values);
  free(r);
}

static void strv_free(strv *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
}

static int strv_push(strv *s, const char *text) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    char **v = realloc(s->v, cap * sizeof *v);
    if (!v) return -1;
    s->v = v;
    s->cap = cap;
  }
  if (!(s->v[s->n] = asbi_strdup(text))) return -1;
  s->n++;
  return 0;
}

void asb_execution_free(asb_execution *e) {
  if (!e) return;
  for (size_t i = 0; i < e->nresults; i++) code_result_free(e->results[i]);
  free(e->results);
  strv_free(&e->out);
  strv_free(&e->err);
  free(e->err_name);
  free(e->err_value);
  free(e->err_tb);
  free(e);
}

/* A result object of the NDJSON stream → formats in arrival order. The
 * "extra" object contributes its MIME keys; JSON-valued formats are kept as
 * JSON text. */
static asb_code_result *result_from(const cJSON *j) {
  asb_code_result *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  size_t cap = (size_t)cJSON_GetArraySize(j);
  const cJSON *extra = cJSON_GetObjectItemCaseSensitive(j, "extra");
  if (cJSON_IsObject(extra)) cap += (size_t)cJSON_GetArraySize(extra);
  r->names = calloc(cap + 1, sizeof *r->names);
  r->values = calloc(cap + 1, sizeof *r->values);
  if (!r->names || !r->values) {
    code_result_free(r);
    return NULL;
  }
  const cJSON *it;
  int pass = 0;
  for (const cJSON *src = j; src && pass < 2; src = pass == 0 ? extra : NULL, pass++) {
    if (!cJSON_IsObject(src)) continue;
    cJSON_ArrayForEach(it, src) {
      if (src == j && (strcmp(it->string, "type") == 0 || strcmp(it->string, "extra") == 0))
        continue;
      if (strcmp(it->string, "is_main_result") == 0) {
        r->is_main = cJSON_IsTrue(it);
        continue;
      }
      if (cJSON_IsNull(it)) continue;
      /* JSON values as sent: a chart's 3.0 stays 3.0 (cJSON would print 3) */
      char *v = cJSON_IsString(it) ? asbi_strdup(it->valuestring) : asbi_pj_print_exact(it);
      char *k = asbi_strdup(it->string);
      if (!v || !k) {
        free(v);
        free(k);
        code_result_free(r);
        return NULL;
      }
      r->names[r->n] = k;
      r->values[r->n++] = v;
    }
  }
  return r;
}

const char *asb_code_result_value(const asb_code_result *r, const char *format) {
  for (size_t i = 0; r && format && i < r->n; i++)
    if (strcmp(r->names[i], format) == 0) return r->values[i];
  return NULL;
}
size_t asb_code_result_format_count(const asb_code_result *r) {
  return r ? r->n : 0;
}
const char *asb_code_result_format_name(const asb_code_result *r, size_t i) {
  return r && i < r->n ? r->names[i] : NULL;
}
int asb_code_result_is_main(const asb_code_result *r) {
  return r ? r->is_main : 0;
}

size_t asb_execution_result_count(const asb_execution *e) {
  return e ? e->nresults : 0;
}
const asb_code_result *asb_execution_result_get(const asb_execution *e, size_t i) {
  return e && i < e->nresults ? e->results[i] : NULL;
}
const char *asb_execution_text(const asb_execution *e) {
  for (size_t i = 0; e && i < e->nresults; i++)
    if (e->results[i]->is_main) return asb_code_result_value(e->results[i], "text");
  return NULL;
}
size_t asb_execution_stdout_count(const asb_execution *e) {
  return e ? e->out.n : 0;
}
const char *asb_execution_stdout_get(const asb_execution *e, size_t i) {
  return e && i < e->out.n ? e->out.v[i] : NULL;
}
size_t asb_execution_stderr_count(const asb_execution *e) {
  return e ? e->err.n : 0;
}
const char *asb_execution_stderr_get(const asb_execution *e, size_t i) {
  return e && i < e->err.n ? e->err.v[i] : NULL;
}
const char *asb_execution_error_name(const asb_execution *e) {
  return e ? e->err_name : NULL;
}
const char *asb_execution_error_value(const asb_execution *e) {
  return e ? e->err_value : NULL;
}
const char *asb_execution_error_traceback(const asb_execution *e) {
  return e ? e->err_tb : NULL;
}
int asb_execution_count(const asb_execution *e) {
  return e ? e->count : -1;
}

/* ---- requests ------------------------------------------------------------------- */

ASBI_DEFINE_OPTIONS_INIT(asb_code_options, ASB_CODE_OPTIONS_VERSION, ASB_CODE_OPTIONS_INIT)

/* Base URL of the code interpreter (port 49999) and its headers. */
static int ci_prepare(asb_sandbox *sb, asbi_buf *url, const char *path, asbi_buf *store,
                      const char **hs, int json) {
  asbi_route_cfg cfg = {sb->client->sandbox_url, sb->client->debug, sb->domain, sb->id};
  if (asbi_url_sandbox_base(url, &cfg, ASBI_CODE_PORT, ASBI_URL_API) != 0 ||
      asbi_buf_puts(url, path) != 0)
    return asbi_err(ASB_EINVAL, "code: cannot route to sandbox %s", sb->id);
  size_t n = 0;
  hs[n++] = sb->hdr_id;
  hs[n++] = "E2b-Sandbox-Port: " ASBI_STRINGIFY(ASBI_CODE_PORT);
  if (sb->hdr_token) hs[n++] = sb->hdr_token;
  hs[n++] = sb->hdr_ua;
  if (json) hs[n++] = "Content-Type: application/json";
  if (sb->traffic_token) {
    size_t off = store->len;
    asbi_buf_printf(store, "E2B-Traffic-Access-Token: %s", sb->traffic_token);
    hs[n++] = store->data ? store->data + off : "";
  }
  hs[n] = NULL;
  return ASB_OK;
}

static int ci_call(asb_sandbox *sb, const char *method, const char *path, const cJSON *body,
                   const asb_call_options *call, const char *what, cJSON **out) {
  if (out) *out = NULL;
  asbi_buf url = ASBI_BUF_INIT, store = ASBI_BUF_INIT;
  const char *hs[10];
  int rc = ci_prepare(sb, &url, path, &store, hs, body != NULL);
  char *json = body ? asbi_pj_print(body) : NULL;
  if (!rc && body && !json) rc = asbi_oom();
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  if (!rc) {
    asbi_http_req r = {.method = method,
                       .url = url.data,
                       .headers = hs,
                       .headers2 = (const char *const *)sb->client->headers,
                       .body = json,
                       .body_len = json ? strlen(json) : 0,
                       .timeout_ms = asbi_client_timeout(sb->client, call ? call->timeout_ms : 0),
                       .cancel = call ? call->cancel : NULL,
                       .stop = sb->life.stop,
                       .idempotent = strcmp(method, "GET") == 0,
                       .max_retries = sb->client->max_retries};
    rc = asbi_http_do(sb->client->http, &r, &resp);
    if (rc) {
      asbi_prefix_error(rc, what);
    } else if (resp.status >= 400) {
      rc = asbi_map_http_error(&resp, what);
    } else if (out && resp.body.len) {
      *out = asbi_pj_parse(resp.body.data, resp.body.len, NULL);
      if (!*out) rc = asbi_err(ASB_EPROTOCOL, "%s: malformed reply", what);
    }
  }
  asbi_http_resp_free(&resp);
  asbi_buf_free(&url);
  asbi_buf_free(&store);
  free(json);
  return rc;
}

/* ---- run --------------------------------------------------------------------------- */

typedef struct run_ctx {
  asb_execution *e;
  const asb_code_options *o;
  asbi_ndjson nd;
  int ended;
  int rc;
} run_ctx;

static int cb_fail(int cb, const char *what) {
  int rc = cb < 0 ? cb : ASB_EUSER;
  if (asb_error_last()->code != rc) asbi_err(rc, "code.run: %s callback aborted", what);
  return rc;
}

static int on_line(void *ud, const char *line, size_t len) {
  run_ctx *c = ud;
  cJSON *j = asbi_pj_parse(line, len, NULL);
  if (!j) return c->rc = asbi_err(ASB_EPROTOCOL, "code.run: malformed output line");
  const char *type = NULL;
  asbi_pj_get_str(j, "type", &type);
  int rc = 0;
  const asb_code_options *o = c->o;
  asb_execution *e = c->e;
  if (!type) {
    rc = asbi_err(ASB_EPROTOCOL, "code.run: output line without a type");
  } else if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
    const char *text = NULL;
    asbi_pj_get_str(j, "text", &text);
    int out = type[3] == 'o';
    if (strv_push(out ? &e->out : &e->err, text ? text : "")) rc = asbi_oom();
    asb_data_fn fn = out ? o->on_stdout : o->on_stderr;
    if (!rc && fn && text) {
      int cb = fn(text, strlen(text), o->userdata);
      if (cb) rc = cb_fail(cb, out ? "stdout" : "stderr");
    }
  } else if (strcmp(type, "result") == 0) {
    asb_code_result *r = result_from(j);
    if (!r) {
      rc = asbi_oom();
    } else {
      if (e->nresults == e->capresults) {
        size_t cap = e->capresults ? e->capresults * 2 : 4;
        asb_code_result **v = realloc(e->results, cap * sizeof *v);
        if (!v) {
          code_result_free(r);
          cJSON_Delete(j);
          return c->rc = asbi_oom();
        }
        e->results = v;
        e->capresults = cap;
      }
      e->results[e->nresults++] = r;
      if (o->on_result) {
        int cb = o->on_result(r, o->userdata);
        if (cb) rc = cb_fail(cb, "result");
      }
    }
  } else if (strcmp(type, "error") == 0) {
    const char *name = NULL, *value = NULL, *tb = NULL;
    asbi_pj_get_str(j, "name", &name);
    asbi_pj_get_str(j, "value", &value);
    asbi_pj_get_str(j, "traceback", &tb);
    free(e->err_name);
    free(e->err_value);
    free(e->err_tb);
    e->err_name = asbi_strdup(name ? name : "Error");
    e->err_value = asbi_strdup(value ? value : "");
    e->err_tb = asbi_strdup(tb ? tb : "");
    if (o->on_error) {
      int cb = o->on_error(e->err_name, e->err_value, e->err_tb, o->userdata);
      if (cb) rc = cb_fail(cb, "error");
    }
  } else if (strcmp(type, "number_of_executions") == 0) {
    int32_t n = -1;
    asbi_pj_get_i32(j, "execution_count", &n);
    e->count = n;
  } else if (strcmp(type, "end_of_execution") == 0) {
    c->ended = 1;
  } else if (strcmp(type, "unexpected_end_of_execution") == 0) {
    free(e->err_name);
    free(e->err_value);
    free(e->err_tb);
    e->err_name = asbi_strdup("UnexpectedEndOfExecution");
    e->err_value = asbi_strdup("the execution ended unexpectedly");
    e->err_tb = asbi_strdup("");
    c->ended = 1;
  } /* keepalive and unknown types are ignored, as E2B's SDKs do */
  cJSON_Delete(j);
  if (rc) c->rc = rc;
  return rc;
}

static int on_data(void *ud, const char *p, size_t n) {
  run_ctx *c = ud;
  int rc = asbi_ndjson_feed(&c->nd, p, n, on_line, c);
  if (rc && !c->rc)
    c->rc = asbi_err(ASB_EPROTOCOL, "code.run: output line over %u bytes", MAX_LINE);
  return rc ? c->rc : 0;
}

static int add_env_map(cJSON *body, const char *const *envs) {
  if (!envs) return ASB_OK;
  cJSON *m = cJSON_AddObjectToObject(body, "env_vars");
  if (!m) return asbi_oom();
  for (; *envs; envs++) {
    const char *eq = strchr(*envs, '=');
    if (!eq || eq == *envs) return asbi_err(ASB_EINVAL, "code.run: '%s' is not KEY=VALUE", *envs);
    char *k = asbi_strndup(*envs, (size_t)(eq - *envs));
    if (!k || !cJSON_AddStringToObject(m, k, eq + 1)) {
      free(k);
      return asbi_oom();
    }
    free(k);
  }
  return ASB_OK;
}

int asb_code_run(asb_execution **out, asb_sandbox *sb, const char *code,
                 const asb_code_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (out) *out = NULL;
  if (!sb || !code || !out) return asbi_err(ASB_EINVAL, "code.run: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_CODE_OPTIONS_VERSION, "asb_code_options");
  asb_code_options d = ASB_CODE_OPTIONS_INIT;
  if (!o) o = &d;
  if (o->language && o->context_id)
    return asbi_err(ASB_EINVAL, "code.run: give a language or a context, not both");
  cJSON *body = cJSON_CreateObject();
  if (!body) return asbi_oom();
  cJSON_AddStringToObject(body, "code", code);
  if (o->context_id) cJSON_AddStringToObject(body, "context_id", o->context_id);
  if (o->language) cJSON_AddStringToObject(body, "language", o->language);
  int rc = add_env_map(body, o->envs);
  char *json = rc ? NULL : asbi_pj_print(body);
  cJSON_Delete(body);
  if (rc) return rc;
  if (!json) return asbi_oom();
  run_ctx c;
  memset(&c, 0, sizeof c);
  c.o = o;
  if (!(c.e = calloc(1, sizeof *c.e))) {
    free(json);
    return asbi_oom();
  }
  c.e->count = -1;
  asbi_ndjson_init(&c.nd, MAX_LINE);
  asbi_buf url = ASBI_BUF_INIT, store = ASBI_BUF_INIT;
  const char *hs[10];
  rc = ci_prepare(sb, &url, "/execute", &store, hs, 1);
  long timeout = o->timeout_ms == 0  ? DEFAULT_RUN_TIMEOUT_MS
                 : o->timeout_ms < 0 ? 0
                                     : o->timeout_ms;
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  if (!rc) {
    asbi_http_req r = {.method = "POST",
                       .url = url.data,
                       .headers = hs,
                       .headers2 = (const char *const *)sb->client->headers,
                       .body = json,
                       .body_len = strlen(json),
                       .timeout_ms = timeout,
                       .cancel = o->cancel,
                       .stop = sb->life.stop,
                       .max_retries = sb->client->max_retries,
                       .on_data = on_data,
                       .ud = &c};
    rc = asbi_http_do(sb->client->http, &r, &resp);
    if (rc == ASB_ETIMEOUT)
      asbi_err(ASB_ETIMEOUT,
               "code.run: no end of execution within %ld ms; the cell "
               "was interrupted",
               timeout);
    else if (rc && c.rc)
      rc = c.rc;
    else if (rc)
      asbi_prefix_error(rc, "code.run");
    else if (resp.status >= 400)
      rc = asbi_map_http_error(&resp, "code.run");
    else if ((rc = asbi_ndjson_finish(&c.nd, on_line, &c)) != 0)
      rc = c.rc ? c.rc : asbi_err(ASB_EPROTOCOL, "code.run: malformed output");
    else if (!c.ended)
      rc = asbi_err(ASB_ECONNECTION,
                    "code.run: the output ended before the end of "
                    "execution");
  }
  asbi_http_resp_free(&resp);
  asbi_ndjson_free(&c.nd);
  asbi_buf_free(&url);
  asbi_buf_free(&store);
  free(json);
  if (rc) {
    asb_execution_free(c.e);
    return rc;
  }
  *out = c.e;
  return ASB_OK;
}

/* ---- contexts ----------------------------------------------------------------------- */

struct asb_code_context {
  char *id, *language, *cwd;
};

struct asb_code_context_list {
  asb_code_context *v;
  size_t n;
};

static void ctx_fields_free(asb_code_context *c) {
  free(c->id);
  free(c->language);
  free(c->cwd);
}

static int ctx_from(const cJSON *j, asb_code_context *c) {
  const char *id = NULL, *lang = NULL, *cwd = NULL;
  asbi_pj_get_str(j, "id", &id);
  asbi_pj_get_str(j, "language", &lang);
  asbi_pj_get_str(j, "cwd", &cwd);
  if (!id) return asbi_err(ASB_EPROTOCOL, "code context without an id");
  c->id = asbi_strdup(id);
  c->language = asbi_strdup(lang ? lang : "python");
  c->cwd = asbi_strdup(cwd ? cwd : "");
  if (!c->id || !c->language || !c->cwd) {
    ctx_fields_free(c);
    return asbi_oom();
  }
  return ASB_OK;
}

static int ctx_item(const cJSON *j, void *item) {
  return ctx_from(j, item);
}
static void ctx_drop(void *item) {
  ctx_fields_free(item);
}

int asb_code_context_create(asb_code_context **out, asb_sandbox *sb, const char *language,
                            const char *cwd, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !out) return asbi_err(ASB_EINVAL, "code.context_create: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  cJSON *body = cJSON_CreateObject(), *reply = NULL;
  if (!body) return asbi_oom();
  /* unset fields are left to the server, as E2B's SDKs leave them */
  if (language) cJSON_AddStringToObject(body, "language", language);
  if (cwd) cJSON_AddStringToObject(body, "cwd", cwd);
  int rc = ci_call(sb, "POST", "/contexts", body, call, "code.context_create", &reply);
  cJSON_Delete(body);
  asb_code_context *c = NULL;
  if (!rc && !(c = calloc(1, sizeof *c))) rc = asbi_oom();
  if (!rc) rc = ctx_from(reply, c);
  cJSON_Delete(reply);
  if (rc) {
    free(c);
    return rc;
  }
  *out = c;
  return ASB_OK;
}

const char *asb_code_context_id(const asb_code_context *c) {
  return c ? c->id : NULL;
}
const char *asb_code_context_language(const asb_code_context *c) {
  return c ? c->language : NULL;
}
const char *asb_code_context_cwd(const asb_code_context *c) {
  return c ? c->cwd : NULL;
}
void asb_code_context_free(asb_code_context *c) {
  if (!c) return;
  ctx_fields_free(c);
  free(c);
}

int asb_code_contexts_list(asb_code_context_list **out, asb_sandbox *sb,
                           const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !out) return asbi_err(ASB_EINVAL, "code.list_contexts: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  cJSON *reply = NULL;
  int rc = ci_call(sb, "GET", "/contexts", NULL, call, "code.context_list", &reply);
  if (rc) return rc;
  asb_code_context_list *l = calloc(1, sizeof *l);
  if (!l)
    rc = asbi_oom();
  else
    rc = asbi_json_items(reply, sizeof *l->v, ctx_item, ctx_drop, (void **)&l->v, &l->n);
  cJSON_Delete(reply);
  if (rc) {
    asbi_err_prefix("code.context_list");
    free(l);
    return rc;
  }
  *out = l;
  return ASB_OK;
}

size_t asb_code_context_list_count(const asb_code_context_list *l) {
  return l ? l->n : 0;
}
const asb_code_context *asb_code_context_list_get(const asb_code_context_list *l, size_t i) {
  return l && i < l->n ? &l->v[i] : NULL;
}
void asb_code_context_list_free(asb_code_context_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) ctx_fields_free(&l->v[i]);
  free(l->v);
  free(l);
}

static int ctx_action(asb_sandbox *sb, const char *id, const char *method, const char *suffix,
                      const asb_call_options *call, const char *what) {
  if (!sb || !id || !*id) return asbi_err(ASB_EINVAL, "%s: bad arguments", what);
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf path = ASBI_BUF_INIT;
  asbi_buf_puts(&path, "/contexts/");
  asbi_url_escape(&path, id, 0);
  asbi_buf_puts(&path, suffix);
  if (!path.data) return asbi_oom();
  int rc = ci_call(sb, method, path.data, NULL, call, what, NULL);
  asbi_buf_free(&path);
  return rc;
}

int asb_code_context_restart(asb_sandbox *sb, const char *id, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  return ctx_action(sb, id, "POST", "/restart", call, "code.context_restart");
}

int asb_code_context_remove(asb_sandbox *sb, const char *id, const asb_call_options *call) {
  ASBI_SANDBOX_CALL(sb);
  return ctx_action(sb, id, "DELETE", "", call, "code.context_remove");
}
