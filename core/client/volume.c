/* Volumes: the control plane (/volumes, API key) and the volume content API
 * (/volumecontent/{id}/dir|file|path, the volume's token as a Bearer
 * token), as docs/volumes.md describes them.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/pjson.h"
#include "proto/url.h"
#include "util/util.h"
#include "envd.h"
#include "http.h"
#include "internal.h"

struct asb_volume {
  /* Volumes from create and get: their own life (docs/abi.md, Lifecycle):
   * freeing one cancels its calls in flight, not the client's, and the
   * client (held) may be freed first. Listed volumes have neither. */
  asbi_life life;
  asb_client *client;
  char *id, *name, *token;
  int size_mb;
};

struct asb_volume_list {
  asb_volume **v;
  size_t n;
};

struct asb_volume_entry {
  char *name, *path, *type, *target;
  int64_t size, atime, mtime, ctime;
  int mode, uid, gid;
};

struct asb_volume_entry_list {
  asb_volume_entry **v;
  size_t n;
};

ASBI_DEFINE_OPTIONS_INIT(asb_volume_write_options, ASB_VOLUME_WRITE_OPTIONS_VERSION,
                         ASB_VOLUME_WRITE_OPTIONS_INIT)

static char *dup_str(const cJSON *j, const char *k) {
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, k);
  return strdup(cJSON_IsString(s) ? s->valuestring : "");
}

static double num(const cJSON *j, const char *k) {
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, k);
  return cJSON_IsNumber(n) ? n->valuedouble : 0;
}

/* RFC 3339 as the engine writes it ("2026-12-01T20:00:00.123Z"). */
static int64_t parse_time(const cJSON *j, const char *k) {
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, k);
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (!cJSON_IsString(s) || !strptime(s->valuestring, "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return (int64_t)timegm(&tm);
}

/* ---- volumes ---------------------------------------------------------------------- */

static void volume_destroy(asb_volume *v) {
  if (v->client) {
    asbi_life_fini(&v->life);
    asbi_client_unref(v->client);
  }
  free(v->id);
  free(v->name);
  free(v->token);
  free(v);
}

static void volume_unref(asb_volume *v) {
  if (v && (!v->client || asbi_life_drop(&v->life))) volume_destroy(v);
}

/* Calls in flight on it end with ASB_ECANCELED. */
void asb_volume_free(asb_volume *v) {
  if (!v) return;
  if (v->client) asbi_life_stop(&v->life);
  volume_unref(v);
}

/* A call on v holds it for its whole duration (released at every return). */
static asb_volume *volume_hold(asb_volume *v) {
  asbi_life_hold(&v->life);
  return v;
}
static void volume_release_(asb_volume *const *v) {
  volume_unref(*v);
}
#define VOLUME_CALL(v) \
  asb_volume *const held_volume_ __attribute__((cleanup(volume_release_), unused)) = volume_hold(v)

static asb_volume *volume_from(const cJSON *j, asb_client *c) {
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "volumeID");
  if (!cJSON_IsObject(j) || !cJSON_IsString(id)) return NULL;
  asb_volume *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->id = dup_str(j, "volumeID");
  v->name = dup_str(j, "name");
  v->token = dup_str(j, "token");
  v->size_mb = (int)num(j, "sizeMB");
  if (!v->id || !v->name || !v->token || (c && asbi_life_init(&v->life))) {
    volume_destroy(v);
    return NULL;
  }
  if (c) {
    asbi_client_ref(c);
    v->client = c;
  }
  return v;
}

/* The token goes into an Authorization header verbatim: printable ASCII
 * only, so no CR/LF can add headers of its own. */
static int token_ok(const char *t) {
  if (!t || !*t) return 0;
  for (; *t; t++)
    if ((unsigned char)*t < 0x21 || (unsigned char)*t > 0x7e) return 0;
  return 1;
}

int asb_volume_from_token(asb_volume **out, asb_client *c, const char *id, const char *name,
                          const char *token) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !out || !id || !*id) return asbi_err(ASB_EINVAL, "volume.from_token: bad arguments");
  if (!token_ok(token))
    return asbi_err(ASB_EINVAL, "volume.from_token: the token must be non-empty printable ASCII");
  asb_volume *v = calloc(1, sizeof *v);
  if (!v) return asbi_oom();
  v->id = strdup(id);
  v->name = strdup(name ? name : "");
  v->token = strdup(token);
  if (!v->id || !v->name || !v->token || asbi_life_init(&v->life)) {
    volume_destroy(v);
    return asbi_oom();
  }
  asbi_client_ref(c);
  v->client = c;
  *out = v;
  return ASB_OK;
}

static int volume_reply(asb_volume **out, asb_client *c, cJSON *reply, const char *what) {
  asb_volume *v = volume_from(reply, c);
  cJSON_Delete(reply);
  if (!v) return asbi_err(ASB_EPROTOCOL, "%s: malformed reply", what);
  *out = v;
  return ASB_OK;
}

int asb_volumes_create(asb_volume **out, asb_client *c, const char *name, int size_mb,
                       const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !name || !out || size_mb < 0)
    return asbi_err(ASB_EINVAL, "volume.create: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  cJSON *b = cJSON_CreateObject();
  if (!b || !cJSON_AddStringToObject(b, "name", name) ||
      (size_mb > 0 && !cJSON_AddNumberToObject(b, "sizeMB", size_mb))) {
    cJSON_Delete(b);
    return asbi_oom();
  }
  char *body = cJSON_PrintUnformatted(b);
  cJSON_Delete(b);
  if (!body) return asbi_oom();
  cJSON *reply = NULL;
  int rc = asbi_cp_request_raw(c, "POST", "/volumes", body, strlen(body), "application/json",
                               asbi_client_timeout(c, call ? call->timeout_ms : 0),
                               call ? call->cancel : NULL, c->life.stop, 0, "volume.create", NULL,
                               NULL, &reply, NULL);
  free(body);
  return rc ? rc : volume_reply(out, c, reply, "volume.create");
}

static int volume_path(asbi_buf *p, const char *id) {
  asbi_buf_puts(p, "/volumes/");
  asbi_url_escape(p, id, 0);
  return p->data ? ASB_OK : asbi_oom();
}

int asb_volumes_get(asb_volume **out, asb_client *c, const char *id, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !id || !*id || !out) return asbi_err(ASB_EINVAL, "volume.get: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf p = ASBI_BUF_INIT;
  cJSON *reply = NULL;
  int rc = volume_path(&p, id);
  if (!rc)
    rc = asbi_cp_request_raw(c, "GET", p.data, NULL, 0, NULL,
                             asbi_client_timeout(c, call ? call->timeout_ms : 0),
                             call ? call->cancel : NULL, c->life.stop, ASBI_CP_IDEMPOTENT,
                             "volume.get", NULL, NULL, &reply, NULL);
  asbi_buf_free(&p);
  return rc ? rc : volume_reply(out, c, reply, "volume.get");
}

int asb_volumes_delete(asb_client *c, const char *id, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (!c || !id || !*id) return asbi_err(ASB_EINVAL, "volume.delete: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf p = ASBI_BUF_INIT;
  int rc = volume_path(&p, id);
  if (!rc)
    rc = asbi_cp_request_raw(
        c, "DELETE", p.data, NULL, 0, NULL, asbi_client_timeout(c, call ? call->timeout_ms : 0),
        call ? call->cancel : NULL, c->life.stop, 0, "volume.delete", NULL, NULL, NULL, NULL);
  asbi_buf_free(&p);
  return rc;
}

int asb_volumes_list(asb_volume_list **out, asb_client *c, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !out) return asbi_err(ASB_EINVAL, "volume.list: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  cJSON *reply = NULL;
  int rc = asbi_cp_request_raw(c, "GET", "/volumes", NULL, 0, NULL,
                               asbi_client_timeout(c, call ? call->timeout_ms : 0),
                               call ? call->cancel : NULL, c->life.stop, ASBI_CP_IDEMPOTENT,
                               "volume.list", NULL, NULL, &reply, NULL);
  if (rc) return rc;
  if (!cJSON_IsArray(reply)) {
    cJSON_Delete(reply);
    return asbi_err(ASB_EPROTOCOL, "volume.list: malformed reply");
  }
  asb_volume_list *l = calloc(1, sizeof *l);
  size_t n = (size_t)cJSON_GetArraySize(reply);
  if (l && n) l->v = calloc(n, sizeof *l->v);
  if (!l || (n && !l->v)) {
    cJSON_Delete(reply);
    free(l);
    return asbi_oom();
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, reply) {
    /* listed volumes keep no client: they have no token for file calls */
    if (!(l->v[l->n] = volume_from(it, NULL))) {
      cJSON_Delete(reply);
      asb_volume_list_free(l);
      return asbi_err(ASB_EPROTOCOL, "volume.list: malformed reply");
    }
    l->n++;
  }
  cJSON_Delete(reply);
  *out = l;
  return ASB_OK;
}

size_t asb_volume_list_count(const asb_volume_list *l) {
  return l ? l->n : 0;
}
const asb_volume *asb_volume_list_get(const asb_volume_list *l, size_t i) {
  return l && i < l->n ? l->v[i] : NULL;
}
const asb_volume *asb_volume_list_find(const asb_volume_list *l, const char *name) {
  for (size_t i = 0; l && name && i < l->n; i++)
    if (strcmp(l->v[i]->name, name) == 0) return l->v[i];
  return NULL;
}
void asb_volume_list_free(asb_volume_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) asb_volume_free(l->v[i]);
  free(l->v);
  free(l);
}

const char *asb_volume_id(const asb_volume *v) {
  return v ? v->id : NULL;
}
const char *asb_volume_name(const asb_volume *v) {
  return v ? v->name : NULL;
}
const char *asb_volume_token(const asb_volume *v) {
  return v ? v->token : NULL;
}
int asb_volume_size_mb(const asb_volume *v) {
  return v ? v->size_mb : 0;
}

/* ---- entries ---------------------------------------------------------------------- */

void asb_volume_entry_free(asb_volume_entry *e) {
  if (!e) return;
  free(e->name);
  free(e->path);
  free(e->type);
  free(e->target);
  free(e);
}

static asb_volume_entry *entry_from(const cJSON *j) {
  if (!cJSON_IsObject(j) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "path")))
    return NULL;
  asb_volume_entry *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->name = dup_str(j, "name");
  e->path = dup_str(j, "path");
  e->type = dup_str(j, "type");
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "target");
  if (cJSON_IsString(t)) e->target = strdup(t->valuestring);
  e->size = (int64_t)num(j, "size");
  e->mode = (int)num(j, "mode");
  e->uid = (int)num(j, "uid");
  e->gid = (int)num(j, "gid");
  e->atime = parse_time(j, "atime");
  e->mtime = parse_time(j, "mtime");
  e->ctime = parse_time(j, "ctime");
  if (!e->name || !e->path || !e->type || (cJSON_IsString(t) && !e->target)) {
    asb_volume_entry_free(e);
    return NULL;
  }
  return e;
}

const char *asb_volume_entry_name(const asb_volume_entry *e) {
  return e ? e->name : NULL;
}
const char *asb_volume_entry_path(const asb_volume_entry *e) {
  return e ? e->path : NULL;
}
const char *asb_volume_entry_type(const asb_volume_entry *e) {
  return e ? e->type : NULL;
}
const char *asb_volume_entry_target(const asb_volume_entry *e) {
  return e ? e->target : NULL;
}
asb_int64 asb_volume_entry_size(const asb_volume_entry *e) {
  return e ? e->size : 0;
}
int asb_volume_entry_mode(const asb_volume_entry *e) {
  return e ? e->mode : 0;
}
int asb_volume_entry_uid(const asb_volume_entry *e) {
  return e ? e->uid : 0;
}
int asb_volume_entry_gid(const asb_volume_entry *e) {
  return e ? e->gid : 0;
}
asb_int64 asb_volume_entry_modified_at(const asb_volume_entry *e) {
  return e ? e->mtime : 0;
}
asb_int64 asb_volume_entry_accessed_at(const asb_volume_entry *e) {
  return e ? e->atime : 0;
}
asb_int64 asb_volume_entry_changed_at(const asb_volume_entry *e) {
  return e ? e->ctime : 0;
}

size_t asb_volume_entry_list_count(const asb_volume_entry_list *l) {
  return l ? l->n : 0;
}
const asb_volume_entry *asb_volume_entry_list_get(const asb_volume_entry_list *l, size_t i) {
  return l && i < l->n ? l->v[i] : NULL;
}
void asb_volume_entry_list_free(asb_volume_entry_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) asb_volume_entry_free(l->v[i]);
  free(l->v);
  free(l);
}

/* ---- the content API -------------------------------------------------------------- */

typedef struct content_req {
  const char *method, *what;
  const char *op;   /* "dir", "file" or "path" */
  const char *path; /* in the volume */
  asbi_buf query;   /* more "&k=v" */
  const void *body; /* with its content type */
  size_t body_len;
  const char *content_type;
  long timeout_ms;
  asb_cancel *cancel;
  int idempotent;
} content_req;

/* One call of the content API on v; the reply's body in *resp (the caller
 * frees it) on a 2xx status, an error mapped from the status otherwise. */
static int content_call(asb_volume *v, content_req *q, asbi_http_resp *resp) {
  asb_client *c = v->client;
  int rc = asbi_client_local_prepare(c, 0);
  if (rc) return rc;
  asbi_buf url = ASBI_BUF_INIT, auth = ASBI_BUF_INIT, ua = ASBI_BUF_INIT, ct = ASBI_BUF_INIT;
  asbi_buf_printf(&url, "%s/volumecontent/", c->api_url);
  asbi_url_escape(&url, v->id, 0);
  asbi_buf_printf(&url, "/%s?path=", q->op);
  asbi_url_escape(&url, q->path, 1);
  if (q->query.data) asbi_buf_puts(&url, q->query.data);
  asbi_buf_printf(&auth, "Authorization: Bearer %s", v->token);
  asbi_buf_printf(&ua, "User-Agent: %s", c->user_agent);
  if (q->content_type) asbi_buf_printf(&ct, "Content-Type: %s", q->content_type);
  const char *hs[] = {auth.data, ua.data, ct.data, NULL};
  asbi_http_req r = {.method = q->method,
                     .url = url.data,
                     .headers = hs,
                     .headers2 = (const char *const *)c->headers,
                     .body = q->body,
                     .body_len = q->body ? q->body_len : 0,
                     .timeout_ms = asbi_client_timeout(c, q->timeout_ms),
                     .cancel = q->cancel,
                     .stop = v->life.stop,
                     .idempotent = q->idempotent,
                     .max_retries = c->max_retries,
                     /* what a file read may hand back; the engine takes at
                        most 256 MiB per file */
                     .max_body = (size_t)1 << 30};
  if (!url.data || !auth.data || !ua.data || (q->content_type && !ct.data))
    rc = asbi_oom();
  else
    rc = asbi_http_do(c->http, &r, resp);
  asbi_buf_free(&url);
  asbi_buf_free(&auth);
  asbi_buf_free(&ua);
  asbi_buf_free(&ct);
  if (rc) return asbi_prefix_error(rc, q->what);
  if (resp->status < 200 || resp->status >= 300) return asbi_map_http_error(resp, q->what);
  return ASB_OK;
}

static int content_check(asb_volume *v, const char *path, const char *what) {
  if (!v || !path || !*path) return asbi_err(ASB_EINVAL, "%s: bad arguments", what);
  if (!v->client || !*v->token)
    return asbi_err(ASB_EINVAL,
                    "%s: a volume from asb_volumes_list has no token: "
                    "asb_volumes_get it",
                    what);
  return ASB_OK;
}

/* The reply's JSON as an entry (out may be NULL: nothing is kept). */
static int entry_reply(asb_volume_entry **out, const asbi_http_resp *resp, const char *what) {
  if (!out) return ASB_OK;
  const char *err = NULL;
  cJSON *j = asbi_pj_parse(resp->body.data ? resp->body.data : "", resp->body.len, &err);
  asb_volume_entry *e = entry_from(j);
  cJSON_Delete(j);
  if (!e) return asbi_err(ASB_EPROTOCOL, "%s: malformed reply", what);
  *out = e;
  return ASB_OK;
}

/* A content call whose reply is one entry (*out, when out is not NULL);
 * q's query and the reply are freed here. */
static int content_entry_call(asb_volume *v, content_req *q, asb_volume_entry **out) {
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  int rc = content_call(v, q, &resp);
  if (!rc) rc = entry_reply(out, &resp, q->what);
  asbi_buf_free(&q->query);
  asbi_http_resp_free(&resp);
  return rc;
}

static long call_timeout(const asb_call_options *call) {
  return call ? call->timeout_ms : 0;
}
static asb_cancel *call_cancel(const asb_call_options *call) {
  return call ? call->cancel : NULL;
}

int asb_volume_read_file(char **data, size_t *len, asb_volume *v, const char *path,
                         const asb_call_options *call) {
  if (data) *data = NULL;
  if (len) *len = 0;
  int rc = content_check(v, path, "volume.read_file");
  if (rc) return rc;
  if (!data) return asbi_err(ASB_EINVAL, "volume.read_file: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  VOLUME_CALL(v);
  content_req q = {.method = "GET",
                   .what = "volume.read_file",
                   .op = "file",
                   .path = path,
                   .query = ASBI_BUF_INIT,
                   .timeout_ms = call_timeout(call),
                   .cancel = call_cancel(call),
                   .idempotent = 1};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  rc = content_call(v, &q, &resp);
  if (!rc) {
    size_t n = 0;
    char *d = asbi_buf_detach(&resp.body, &n);
    if (!d) {
      rc = asbi_oom();
    } else {
      *data = d;
      if (len) *len = n;
    }
  }
  asbi_http_resp_free(&resp);
  return rc;
}

/* "&uid=&gid=&mode=&force=" of opts. */
static void write_query(asbi_buf *b, const asb_volume_write_options *o) {
  asbi_buf_printf(b, "&uid=%d&gid=%d", o ? o->uid : 0, o ? o->gid : 0);
  if (o && o->mode) asbi_buf_printf(b, "&mode=%d", o->mode);
  if (o && o->force) asbi_buf_puts(b, "&force=true");
}

static int write_check(const asb_volume_write_options *o, const char *what) {
  ASBI_CHECK_VERSION(o, ASB_VOLUME_WRITE_OPTIONS_VERSION, "asb_volume_write_options");
  if (o && (o->uid < 0 || o->uid > 65535 || o->gid < 0 || o->gid > 65535 || o->mode < 0 ||
            o->mode > 07777))
    return asbi_err(ASB_EINVAL, "%s: uid and gid must be in 0..65535, mode in 0..07777", what);
  return ASB_OK;
}

int asb_volume_write_file(asb_volume_entry **out, asb_volume *v, const char *path, const void *data,
                          size_t len, const asb_volume_write_options *opts) {
  if (out) *out = NULL;
  int rc = content_check(v, path, "volume.write_file");
  if (rc || (rc = write_check(opts, "volume.write_file"))) return rc;
  if (!data && len) return asbi_err(ASB_EINVAL, "volume.write_file: bad arguments");
  VOLUME_CALL(v);
  content_req q = {.method = "PUT",
                   .what = "volume.write_file",
                   .op = "file",
                   .path = path,
                   .query = ASBI_BUF_INIT,
                   .body = data ? data : "",
                   .body_len = len,
                   .content_type = "application/octet-stream",
                   .timeout_ms = opts ? opts->timeout_ms : 0,
                   .cancel = opts ? opts->cancel : NULL,
                   /* the engine replaces the file whole: sending it again is safe only
                      when it may replace one */
                   .idempotent = opts && opts->force};
  write_query(&q.query, opts);
  if (!q.query.data) return asbi_oom();
  return content_entry_call(v, &q, out);
}

int asb_volume_make_dir(asb_volume_entry **out, asb_volume *v, const char *path,
                        const asb_volume_write_options *opts) {
  if (out) *out = NULL;
  int rc = content_check(v, path, "volume.make_dir");
  if (rc || (rc = write_check(opts, "volume.make_dir"))) return rc;
  VOLUME_CALL(v);
  content_req q = {.method = "POST",
                   .what = "volume.make_dir",
                   .op = "dir",
                   .path = path,
                   .query = ASBI_BUF_INIT,
                   .timeout_ms = opts ? opts->timeout_ms : 0,
                   .cancel = opts ? opts->cancel : NULL,
                   .idempotent = opts && opts->force};
  write_query(&q.query, opts);
  if (!q.query.data) return asbi_oom();
  return content_entry_call(v, &q, out);
}

int asb_volume_get_info(asb_volume_entry **out, asb_volume *v, const char *path,
                        const asb_call_options *call) {
  if (out) *out = NULL;
  int rc = content_check(v, path, "volume.get_info");
  if (rc) return rc;
  if (!out) return asbi_err(ASB_EINVAL, "volume.get_info: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  VOLUME_CALL(v);
  content_req q = {.method = "GET",
                   .what = "volume.get_info",
                   .op = "path",
                   .path = path,
                   .query = ASBI_BUF_INIT,
                   .timeout_ms = call_timeout(call),
                   .cancel = call_cancel(call),
                   .idempotent = 1};
  return content_entry_call(v, &q, out);
}

int asb_volume_exists(asb_volume *v, const char *path, const asb_call_options *call) {
  asb_volume_entry *e = NULL;
  int rc = asb_volume_get_info(&e, v, path, call);
  asb_volume_entry_free(e);
  if (rc == ASB_ENOTFOUND) return 0;
  return rc ? rc : 1;
}

int asb_volume_update_metadata(asb_volume_entry **out, asb_volume *v, const char *path, int uid,
                               int gid, int mode, const asb_call_options *call) {
  if (out) *out = NULL;
  int rc = content_check(v, path, "volume.update_metadata");
  if (rc) return rc;
  if (uid < -1 || uid > 65535 || gid < -1 || gid > 65535 || mode < -1 || mode > 07777)
    return asbi_err(ASB_EINVAL,
                    "volume.update_metadata: uid and gid must be in 0..65535, mode in 0..07777 "
                    "(-1 keeps one)");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  VOLUME_CALL(v);
  cJSON *b = cJSON_CreateObject();
  if (b && uid >= 0) cJSON_AddNumberToObject(b, "uid", uid);
  if (b && gid >= 0) cJSON_AddNumberToObject(b, "gid", gid);
  if (b && mode >= 0) cJSON_AddNumberToObject(b, "mode", mode);
  char *body = b ? cJSON_PrintUnformatted(b) : NULL;
  cJSON_Delete(b);
  if (!body) return asbi_oom();
  content_req q = {.method = "PATCH",
                   .what = "volume.update_metadata",
                   .op = "path",
                   .path = path,
                   .query = ASBI_BUF_INIT,
                   .body = body,
                   .body_len = strlen(body),
                   .content_type = "application/json",
                   .timeout_ms = call_timeout(call),
                   .cancel = call_cancel(call),
                   .idempotent = 1};
  rc = content_entry_call(v, &q, out);
  free(body);
  return rc;
}

int asb_volume_remove(asb_volume *v, const char *path, const asb_call_options *call) {
  int rc = content_check(v, path, "volume.remove");
  if (rc) return rc;
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  VOLUME_CALL(v);
  content_req q = {.method = "DELETE",
                   .what = "volume.remove",
                   .op = "path",
                   .path = path,
                   .query = ASBI_BUF_INIT,
                   .timeout_ms = call_timeout(call),
                   .cancel = call_cancel(call)};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  rc = content_call(v, &q, &resp);
  asbi_http_resp_free(&resp);
  return rc;
}

int asb_volume_entries_list(asb_volume_entry_list **out, asb_volume *v, const char *path, int depth,
                            const asb_call_options *call) {
  if (out) *out = NULL;
  int rc = content_check(v, path, "volume.list");
  if (rc) return rc;
  if (!out || depth < 0 || depth > 64)
    return asbi_err(ASB_EINVAL, "volume.list: bad arguments (depth 0..64)");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  VOLUME_CALL(v);
  content_req q = {.method = "GET",
                   .what = "volume.list",
                   .op = "dir",
                   .path = path,
                   .query = ASBI_BUF_INIT,
                   .timeout_ms = call_timeout(call),
                   .cancel = call_cancel(call),
                   .idempotent = 1};
  asbi_buf_printf(&q.query, "&depth=%d", depth ? depth : 1);
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  rc = q.query.data ? content_call(v, &q, &resp) : asbi_oom();
  asbi_buf_free(&q.query);
  cJSON *j = NULL;
  if (!rc) {
    const char *err = NULL;
    j = asbi_pj_parse(resp.body.data ? resp.body.data : "", resp.body.len, &err);
    if (!cJSON_IsArray(j)) rc = asbi_err(ASB_EPROTOCOL, "volume.list: malformed reply");
  }
  asbi_http_resp_free(&resp);
  asb_volume_entry_list *l = NULL;
  if (!rc) {
    size_t n = (size_t)cJSON_GetArraySize(j);
    l = calloc(1, sizeof *l);
    if (l && n) l->v = calloc(n, sizeof *l->v);
    if (!l || (n && !l->v)) rc = asbi_oom();
    const cJSON *it;
    if (!rc) cJSON_ArrayForEach(it, j) {
        if (!(l->v[l->n] = entry_from(it))) {
          rc = asbi_err(ASB_EPROTOCOL, "volume.list: malformed reply");
          break;
        }
        l->n++;
      }
  }
  cJSON_Delete(j);
  if (rc) {
    asb_volume_entry_list_free(l);
    return rc;
  }
  *out = l;
  return ASB_OK;
}
