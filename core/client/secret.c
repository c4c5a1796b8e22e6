/* Secrets: E2B's /secrets API on the control plane (API key), as
 * include/agentsandbox/secret.h and docs/reference/secret.md describe it.
 * A value is only ever sent (create, update): it is in the request body and
 * nowhere else, and the buffer that held it is wiped before it is freed.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/pjson.h"
#include "proto/url.h"
#include "util/util.h"
#include "http.h"
#include "internal.h"

struct asb_secret {
  char *id, *name;
  int version;
  int64_t created, updated;
  char **keys, **values;
  size_t nmeta;
};

struct asb_secret_page {
  asb_secret **v;
  size_t n;
  char *next;
};

/* RFC 3339 as the engine writes it ("2026-12-01T20:00:00.123Z"). */
static int64_t parse_time(const cJSON *j, const char *k) {
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, k);
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (!cJSON_IsString(s) || !strptime(s->valuestring, "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return (int64_t)timegm(&tm);
}

void asb_secret_free(asb_secret *s) {
  if (!s) return;
  free(s->id);
  free(s->name);
  for (size_t i = 0; i < s->nmeta; i++) {
    free(s->keys[i]);
    free(s->values[i]);
  }
  free(s->keys);
  free(s->values);
  free(s);
}

/* A Secret object of the reply, or NULL (malformed or out of memory). */
static asb_secret *secret_from(const cJSON *j) {
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "secretID");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "currentVersion");
  const cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
  if (!cJSON_IsString(id) || !cJSON_IsString(name) || (md && !cJSON_IsObject(md))) return NULL;
  asb_secret *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->id = asbi_strdup(id->valuestring);
  s->name = asbi_strdup(name->valuestring);
  s->version = cJSON_IsNumber(ver) ? (int)ver->valuedouble : 0;
  s->created = parse_time(j, "createdAt");
  s->updated = parse_time(j, "updatedAt");
  size_t n = md ? (size_t)cJSON_GetArraySize(md) : 0;
  if (n) {
    s->keys = calloc(n, sizeof *s->keys);
    s->values = calloc(n, sizeof *s->values);
  }
  if (!s->id || !s->name || (n && (!s->keys || !s->values))) {
    asb_secret_free(s);
    return NULL;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, md) {
    if (!cJSON_IsString(it)) continue;
    if (!(s->keys[s->nmeta] = asbi_strdup(it->string)) ||
        !(s->values[s->nmeta] = asbi_strdup(it->valuestring))) {
      free(s->keys[s->nmeta]);
      asb_secret_free(s);
      return NULL;
    }
    s->nmeta++;
  }
  return s;
}

static int secret_reply(asb_secret **out, cJSON *reply, const char *what) {
  asb_secret *s = secret_from(reply);
  cJSON_Delete(reply);
  if (!s) return asbi_err(ASB_EPROTOCOL, "%s: malformed reply", what);
  *out = s;
  return ASB_OK;
}

static long call_timeout(asb_client *c, const asb_call_options *call) {
  return asbi_client_timeout(c, call ? call->timeout_ms : 0);
}

static int secret_path(asbi_buf *p, const char *secret) {
  asbi_buf_puts(p, "/secrets/");
  asbi_url_escape(p, secret, 0);
  return p->data ? ASB_OK : asbi_oom();
}

/* {"name"?, "value", "metadata"?} printed, then the tree freed; the caller
 * wipes and frees the text. */
static int value_body(char **out, const char *name, const char *value, const char *const *md,
                      const char *what) {
  *out = NULL;
  cJSON *b = cJSON_CreateObject();
  if (!b || (name && !cJSON_AddStringToObject(b, "name", name)) ||
      !cJSON_AddStringToObject(b, "value", value)) {
    cJSON_Delete(b);
    return asbi_oom();
  }
  if (md) {
    cJSON *o = cJSON_AddObjectToObject(b, "metadata");
    if (!o) {
      cJSON_Delete(b);
      return asbi_oom();
    }
    for (; *md; md++) {
      const char *eq = strchr(*md, '=');
      char *k = eq && eq != *md ? asbi_strndup(*md, (size_t)(eq - *md)) : NULL;
      int ok = k && cJSON_AddStringToObject(o, k, eq + 1);
      free(k);
      if (!ok) {
        cJSON_Delete(b);
        return eq && eq != *md
                   ? asbi_oom()
                   : asbi_err(ASB_EINVAL, "%s: metadata '%s' is not key=value", what, *md);
      }
    }
  }
  *out = cJSON_PrintUnformatted(b);
  /* cJSON keeps its own copy of the value: wipe it before the tree goes */
  cJSON *v = cJSON_GetObjectItemCaseSensitive(b, "value");
  if (v && v->valuestring) explicit_bzero(v->valuestring, strlen(v->valuestring));
  cJSON_Delete(b);
  return *out ? ASB_OK : asbi_oom();
}

static int send_value(asb_secret **out, asb_client *c, const char *path, const char *name,
                      const char *value, const char *const *md, const asb_call_options *call,
                      const char *what) {
  char *body = NULL;
  int rc = value_body(&body, name, value, md, what);
  cJSON *reply = NULL;
  if (!rc)
    rc = asbi_cp_request_raw(c, "POST", path, body, strlen(body), "application/json",
                             call_timeout(c, call), call ? call->cancel : NULL, c->life.stop, 0,
                             what, NULL, NULL, &reply, NULL);
  if (body) {
    explicit_bzero(body, strlen(body));
    free(body);
  }
  return rc ? rc : secret_reply(out, reply, what);
}

int asb_secrets_create(asb_secret **out, asb_client *c, const char *name, const char *value,
                       const char *const *metadata, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !out || !name || !*name || !value)
    return asbi_err(ASB_EINVAL, "secret.create: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  return send_value(out, c, "/secrets", name, value, metadata, call, "secret.create");
}

int asb_secrets_update(asb_secret **out, asb_client *c, const char *secret, const char *value,
                       const char *const *metadata, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !out || !secret || !*secret || !value)
    return asbi_err(ASB_EINVAL, "secret.update: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf p = ASBI_BUF_INIT;
  int rc = secret_path(&p, secret);
  if (!rc) rc = send_value(out, c, p.data, NULL, value, metadata, call, "secret.update");
  asbi_buf_free(&p);
  return rc;
}

int asb_secrets_get(asb_secret **out, asb_client *c, const char *secret,
                    const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !out || !secret || !*secret) return asbi_err(ASB_EINVAL, "secret.get: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf p = ASBI_BUF_INIT;
  cJSON *reply = NULL;
  int rc = secret_path(&p, secret);
  if (!rc)
    rc = asbi_cp_request_raw(c, "GET", p.data, NULL, 0, NULL, call_timeout(c, call),
                             call ? call->cancel : NULL, c->life.stop, ASBI_CP_IDEMPOTENT,
                             "secret.get", NULL, NULL, &reply, NULL);
  asbi_buf_free(&p);
  return rc ? rc : secret_reply(out, reply, "secret.get");
}

int asb_secrets_delete(asb_client *c, const char *secret, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (!c || !secret || !*secret) return asbi_err(ASB_EINVAL, "secret.delete: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf p = ASBI_BUF_INIT;
  int rc = secret_path(&p, secret);
  if (!rc)
    rc = asbi_cp_request_raw(c, "DELETE", p.data, NULL, 0, NULL, call_timeout(c, call),
                             call ? call->cancel : NULL, c->life.stop, 0, "secret.delete", NULL,
                             NULL, NULL, NULL);
  asbi_buf_free(&p);
  return rc;
}

int asb_secrets_list(asb_secret_page **out, asb_client *c, int limit, const char *next_token,
                     const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !out || limit < 0 || limit > 100)
    return asbi_err(ASB_EINVAL, "secret.list: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf p = ASBI_BUF_INIT;
  asbi_buf_printf(&p, "/secrets?limit=%d", limit ? limit : 100);
  if (next_token && *next_token) {
    asbi_buf_puts(&p, "&nextToken=");
    asbi_url_escape(&p, next_token, 0);
  }
  if (!p.data) return asbi_oom();
  cJSON *reply = NULL;
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  int rc = asbi_cp_request_raw(c, "GET", p.data, NULL, 0, NULL, call_timeout(c, call),
                               call ? call->cancel : NULL, c->life.stop, ASBI_CP_IDEMPOTENT,
                               "secret.list", NULL, NULL, &reply, &resp);
  asbi_buf_free(&p);
  asb_secret_page *pg = NULL;
  if (!rc && !cJSON_IsArray(reply)) rc = asbi_err(ASB_EPROTOCOL, "secret.list: malformed reply");
  if (!rc) {
    size_t n = (size_t)cJSON_GetArraySize(reply);
    const char *nt = asbi_http_resp_header(&resp, "x-next-token");
    pg = calloc(1, sizeof *pg);
    if (pg && n) pg->v = calloc(n, sizeof *pg->v);
    if (pg && nt && *nt) pg->next = asbi_strdup(nt);
    if (!pg || (n && !pg->v) || (nt && *nt && !pg->next)) rc = asbi_oom();
  }
  const cJSON *it, *arr = rc ? NULL : reply;
  cJSON_ArrayForEach(it, arr) {
    if (!(pg->v[pg->n] = secret_from(it))) {
      rc = asbi_err(ASB_EPROTOCOL, "secret.list: malformed reply");
      break;
    }
    pg->n++;
  }
  asbi_http_resp_free(&resp);
  cJSON_Delete(reply);
  if (rc) {
    asb_secret_page_free(pg);
    return rc;
  }
  *out = pg;
  return ASB_OK;
}

size_t asb_secret_page_count(const asb_secret_page *p) {
  return p ? p->n : 0;
}
const asb_secret *asb_secret_page_get(const asb_secret_page *p, size_t i) {
  return p && i < p->n ? p->v[i] : NULL;
}
const char *asb_secret_page_next_token(const asb_secret_page *p) {
  return p ? p->next : NULL;
}
void asb_secret_page_free(asb_secret_page *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++) asb_secret_free(p->v[i]);
  free(p->v);
  free(p->next);
  free(p);
}

const char *asb_secret_id(const asb_secret *s) {
  return s ? s->id : NULL;
}
const char *asb_secret_name(const asb_secret *s) {
  return s ? s->name : NULL;
}
int asb_secret_version(const asb_secret *s) {
  return s ? s->version : 0;
}
asb_int64 asb_secret_created_at(const asb_secret *s) {
  return s ? s->created : 0;
}
asb_int64 asb_secret_updated_at(const asb_secret *s) {
  return s ? s->updated : 0;
}
size_t asb_secret_metadata_count(const asb_secret *s) {
  return s ? s->nmeta : 0;
}
const char *asb_secret_metadata_key(const asb_secret *s, size_t i) {
  return s && i < s->nmeta ? s->keys[i] : NULL;
}
const char *asb_secret_metadata_value(const asb_secret *s, size_t i) {
  return s && i < s->nmeta ? s->values[i] : NULL;
}
