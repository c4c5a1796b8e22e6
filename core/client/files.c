/* Files: envd's /files endpoint (streamed reads and writes) and its
 * filesystem service (stat, list, move, remove, make_dir, watch).
 * SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "proto/multipart.h"
#include "proto/pjson.h"
#include "proto/sign.h"
#include "util/util.h"
#include "envd.h"

#define GZIP_CHUNK (64u * 1024u)

/* ---- options ------------------------------------------------------------------ */

/* Version 1 ended before metadata. */
static size_t files_options_size(unsigned int version) {
  return version >= 2 ? sizeof(asb_files_options) : offsetof(asb_files_options, metadata);
}

ASBI_DEFINE_OPTIONS_INIT_SIZED(asb_files_options, ASB_FILES_OPTIONS_VERSION, ASB_FILES_OPTIONS_INIT,
                               files_options_size)

ASBI_DEFINE_OPTIONS_INIT(asb_watch_options, ASB_WATCH_OPTIONS_VERSION, ASB_WATCH_OPTIONS_INIT)

static int check_path(const char *path, const char *what) {
  if (!path || !*path) return asbi_err(ASB_EINVAL, "%s: path is empty", what);
  if (!asbi_utf8_valid(path, strlen(path)))
    return asbi_err(ASB_EINVAL, "%s: path is not valid UTF-8", what);
  return ASB_OK;
}

/* ---- entries --------------------------------------------------------------------- */

struct asb_entry {
  char *name, *path, *permissions, *owner, *group, *symlink_target;
  char **meta; /* key, value, key, value, ... (the file's user metadata) */
  size_t nmeta;
  asb_file_type type;
  int64_t size;
  unsigned mode;
  int64_t mtime;
  long mtime_ns;
};

struct asb_entry_list {
  size_t n;
  asb_entry **items;
};

static const asbi_pj_enum FILE_TYPES[] = {{ASB_FILE_TYPE_UNKNOWN, "FILE_TYPE_UNSPECIFIED"},
                                          {ASB_FILE_TYPE_FILE, "FILE_TYPE_FILE"},
                                          {ASB_FILE_TYPE_DIR, "FILE_TYPE_DIRECTORY"},
                                          {ASB_FILE_TYPE_SYMLINK, "FILE_TYPE_SYMLINK"},
                                          {0, NULL}};

void asb_entry_free(asb_entry *e) {
  if (!e) return;
  free(e->name);
  free(e->path);
  free(e->permissions);
  free(e->owner);
  free(e->group);
  free(e->symlink_target);
  for (size_t i = 0; i < 2 * e->nmeta; i++) free(e->meta[i]);
  free(e->meta);
  free(e);
}

/* RFC 3339 ("2026-01-02T03:04:05.123456789Z" or with an offset). */
static void parse_time(const char *s, int64_t *sec, long *ns) {
  *sec = 0;
  *ns = 0;
  if (!s) return;
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!p) return;
  long frac = 0;
  int digits = 0;
  if (*p == '.') {
    for (p++; *p >= '0' && *p <= '9'; p++)
      if (digits < 9) {
        frac = frac * 10 + (*p - '0');
        digits++;
      }
    while (digits < 9) {
      frac *= 10;
      digits++;
    }
  }
  int64_t t = (int64_t)timegm(&tm);
  if (*p == '+' || *p == '-') {
    int hh = 0, mm = 0;
    if (sscanf(p + 1, "%d:%d", &hh, &mm) == 2)
      t -= (*p == '+' ? 1 : -1) * (int64_t)(hh * 3600 + mm * 60);
  }
  *sec = t;
  *ns = frac;
}

static asb_entry *entry_from_json(const cJSON *j) {
  if (!cJSON_IsObject(j)) return NULL;
  asb_entry *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  const char *s = NULL;
  int type = 0;
  uint32_t mode = 0;
  asbi_pj_get_str(j, "name", &s);
  e->name = asbi_strdup(s ? s : "");
  s = NULL;
  asbi_pj_get_str(j, "path", &s);
  e->path = asbi_strdup(s ? s : "");
  if (asbi_pj_get_enum(j, "type", FILE_TYPES, &type) != 0) {
    /* WriteInfo says "file"/"dir". */
    const char *t = NULL;
    asbi_pj_get_str(j, "type", &t);
    type = t && strcmp(t, "file") == 0  ? ASB_FILE_TYPE_FILE
           : t && strcmp(t, "dir") == 0 ? ASB_FILE_TYPE_DIR
                                        : ASB_FILE_TYPE_UNKNOWN;
  }
  e->type = (asb_file_type)type;
  asbi_pj_get_i64(j, "size", &e->size);
  asbi_pj_get_u32(j, "mode", &mode);
  e->mode = mode;
  s = NULL;
  asbi_pj_get_str(j, "permissions", &s);
  e->permissions = asbi_strdup(s ? s : "");
  s = NULL;
  asbi_pj_get_str(j, "owner", &s);
  e->owner = asbi_strdup(s ? s : "");
  s = NULL;
  asbi_pj_get_str(j, "group", &s);
  e->group = asbi_strdup(s ? s : "");
  s = NULL;
  asbi_pj_get_str(j, "symlinkTarget", &s);
  e->symlink_target = asbi_strdup(s);
  s = NULL;
  asbi_pj_get_str(j, "modifiedTime", &s);
  parse_time(s, &e->mtime, &e->mtime_ns);
  /* "metadata": {"key": "value", ...}, the file's user.e2b.* attributes */
  const cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
  int md_oom = 0;
  if (cJSON_IsObject(md)) {
    size_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, md) if (cJSON_IsString(it) && it->string) n++;
    if (n && !(e->meta = calloc(2 * n, sizeof *e->meta))) md_oom = 1;
    cJSON_ArrayForEach(it, md) {
      if (md_oom || !cJSON_IsString(it) || !it->string) continue;
      e->meta[2 * e->nmeta] = asbi_strdup(it->string);
      e->meta[2 * e->nmeta + 1] = asbi_strdup(it->valuestring);
      e->nmeta++;
      if (!e->meta[2 * e->nmeta - 2] || !e->meta[2 * e->nmeta - 1]) md_oom = 1;
    }
  }
  if (md_oom || !e->name || !e->path || !e->permissions || !e->owner || !e->group) {
    asb_entry_free(e);
    return NULL;
  }
  return e;
}

static asb_entry_list *list_from_array(const cJSON *a, int *rc) {
  size_t n = cJSON_IsArray(a) ? (size_t)cJSON_GetArraySize(a) : 0;
  asb_entry_list *l = calloc(1, sizeof *l);
  if (l) l->items = calloc(n ? n : 1, sizeof *l->items);
  if (!l || !l->items) {
    free(l);
    *rc = asbi_oom();
    return NULL;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, a) {
    asb_entry *e = entry_from_json(it);
    if (!e) {
      asb_entry_list_free(l);
      *rc = asbi_err(ASB_EPROTOCOL, "malformed entry in envd's reply");
      return NULL;
    }
    l->items[l->n++] = e;
  }
  *rc = ASB_OK;
  return l;
}

const char *asb_entry_name(const asb_entry *e) {
  return e ? e->name : NULL;
}
const char *asb_entry_path(const asb_entry *e) {
  return e ? e->path : NULL;
}
asb_file_type asb_entry_type(const asb_entry *e) {
  return e ? e->type : ASB_FILE_TYPE_UNKNOWN;
}
asb_int64 asb_entry_size(const asb_entry *e) {
  return e ? e->size : 0;
}
unsigned int asb_entry_mode(const asb_entry *e) {
  return e ? e->mode : 0;
}
const char *asb_entry_permissions(const asb_entry *e) {
  return e ? e->permissions : NULL;
}
const char *asb_entry_owner(const asb_entry *e) {
  return e ? e->owner : NULL;
}
const char *asb_entry_group(const asb_entry *e) {
  return e ? e->group : NULL;
}
asb_int64 asb_entry_modified_at(const asb_entry *e) {
  return e ? e->mtime : 0;
}
long asb_entry_modified_nanos(const asb_entry *e) {
  return e ? e->mtime_ns : 0;
}
const char *asb_entry_symlink_target(const asb_entry *e) {
  return e ? e->symlink_target : NULL;
}
size_t asb_entry_metadata_count(const asb_entry *e) {
  return e ? e->nmeta : 0;
}
const char *asb_entry_metadata_key(const asb_entry *e, size_t i) {
  return e && i < e->nmeta ? e->meta[2 * i] : NULL;
}
const char *asb_entry_metadata_value(const asb_entry *e, size_t i) {
  return e && i < e->nmeta ? e->meta[2 * i + 1] : NULL;
}

size_t asb_entry_list_count(const asb_entry_list *l) {
  return l ? l->n : 0;
}
const asb_entry *asb_entry_list_get(const asb_entry_list *l, size_t i) {
  return l && i < l->n ? l->items[i] : NULL;
}
void asb_entry_list_free(asb_entry_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) asb_entry_free(l->items[i]);
  free(l->items);
  free(l);
}

/* ---- /files: reading ---------------------------------------------------------------- */

typedef struct read_ctx {
  asb_data_fn fn;
  void *ud;
  asbi_buf *keep;
} read_ctx;

static int on_file_data(void *ud, const char *p, size_t n) {
  read_ctx *c = ud;
  if (c->keep) return asbi_buf_append(c->keep, p, n) ? asbi_oom() : 0;
  int rc = c->fn(p, n, c->ud);
  if (rc && asb_error_last()->code != (rc < 0 ? rc : ASB_EUSER))
    asbi_err(rc < 0 ? rc : ASB_EUSER, "files.read: data callback aborted");
  return rc;
}

static int files_get(asb_sandbox *sb, const char *path, const asb_files_options *o, read_ctx *ctx,
                     const char *what) {
  int rc = check_path(path, what);
  if (rc) return rc;
  ASBI_CHECK_VERSION(o, ASB_FILES_OPTIONS_VERSION, "asb_files_options");
  asb_files_options d = ASB_FILES_OPTIONS_INIT;
  if (!o) o = &d;
  const char *user = asbi_envd_user(sb, o->user);
  asbi_buf url = ASBI_BUF_INIT, store = ASBI_BUF_INIT;
  if ((rc = asbi_envd_files_url(sb, ASBI_URL_API, path, user, &url))) return rc;
  const char *hs[12];
  asbi_envd_headers(sb, NULL, hs, &store, NULL);
  asbi_http_req r = {.method = "GET",
                     .url = url.data,
                     .headers = hs,
                     .headers2 = (const char *const *)sb->client->headers,
                     .timeout_ms = asbi_client_timeout(sb->client, o->timeout_ms),
                     .cancel = o->cancel,
                     .stop = sb->life.stop,
                     .idempotent = 1,
                     .max_retries = sb->client->max_retries,
                     .on_data = on_file_data,
                     .ud = ctx,
                     .accept_encoding = o->gzip ? "gzip" : NULL};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  rc = asbi_http_do(sb->client->http, &r, &resp);
  if (rc)
    rc = asbi_sandbox_explain(sb, asbi_prefix_error(rc, what));
  else if (resp.status != 200)
    rc = asbi_sandbox_explain(sb, asbi_map_http_error(&resp, what));
  asbi_http_resp_free(&resp);
  asbi_buf_free(&url);
  asbi_buf_free(&store);
  return rc;
}

int asb_files_read(char **data, size_t *len, asb_sandbox *sb, const char *path,
                   const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !data) return asbi_err(ASB_EINVAL, "files.read: bad arguments");
  asbi_buf b = ASBI_BUF_INIT;
  read_ctx ctx = {NULL, NULL, &b};
  int rc = files_get(sb, path, o, &ctx, "files.read");
  if (rc) {
    asbi_buf_free(&b);
    return rc;
  }
  size_t n = 0;
  *data = asbi_buf_detach(&b, &n);
  if (!*data) return asbi_oom();
  if (len) *len = n;
  return ASB_OK;
}

int asb_files_read_stream(asb_sandbox *sb, const char *path, const asb_files_options *o,
                          asb_data_fn fn, void *ud) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !fn) return asbi_err(ASB_EINVAL, "files.read_stream: bad arguments");
  read_ctx ctx = {fn, ud, NULL};
  return files_get(sb, path, o, &ctx, "files.read_stream");
}

/* ---- /files: reading at the caller's pace -------------------------------------------- */

/* Its life is a watch's: the user's reference and one per read in flight;
 * free requests the stop token the stream carries. */
struct asb_file_reader {
  asbi_life life;
  asb_sandbox *sb;
  asbi_http_stream *http;
  asbi_http_resp resp;
  pthread_mutex_t mu; /* one read at a time */
};

static void reader_unref(asb_file_reader *r) {
  if (!asbi_life_drop(&r->life)) return;
  asbi_http_stream_close(r->http);
  asbi_http_resp_free(&r->resp);
  pthread_mutex_destroy(&r->mu);
  asbi_sandbox_unref(r->sb);
  asbi_life_fini(&r->life);
  free(r);
}

int asb_files_open_read(asb_file_reader **out, asb_sandbox *sb, const char *path,
                        const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  const char *what = "files.open_read";
  if (!sb || !out) return asbi_err(ASB_EINVAL, "%s: bad arguments", what);
  int rc = check_path(path, what);
  if (rc) return rc;
  ASBI_CHECK_VERSION(o, ASB_FILES_OPTIONS_VERSION, "asb_files_options");
  asb_files_options d = ASB_FILES_OPTIONS_INIT;
  if (!o) o = &d;
  asb_file_reader *r = calloc(1, sizeof *r);
  if (!r) return asbi_oom();
  if (asbi_life_init(&r->life)) {
    free(r);
    return asbi_oom();
  }
  pthread_mutex_init(&r->mu, NULL);
  asbi_sandbox_ref(sb);
  r->sb = sb;
  r->resp = (asbi_http_resp)ASBI_HTTP_RESP_INIT;
  const char *user = asbi_envd_user(sb, o->user);
  asbi_buf url = ASBI_BUF_INIT, store = ASBI_BUF_INIT;
  rc = asbi_envd_files_url(sb, ASBI_URL_API, path, user, &url);
  const char *hs[12];
  asbi_envd_headers(sb, NULL, hs, &store, NULL);
  asbi_http_req q = {.method = "GET",
                     .url = url.data,
                     .headers = hs,
                     .headers2 = (const char *const *)sb->client->headers,
                     .timeout_ms = asbi_client_timeout(sb->client, o->timeout_ms),
                     .cancel = o->cancel,
                     .stop = sb->life.stop,
                     .idempotent = 1,
                     .max_retries = sb->client->max_retries,
                     .accept_encoding = o->gzip ? "gzip" : NULL};
  if (rc == ASB_OK) {
    rc = asbi_http_stream_open(sb->client->http, &q, &r->resp, &r->http);
    if (rc)
      rc = asbi_sandbox_explain(sb, asbi_prefix_error(rc, what));
    else if (r->resp.status != 200)
      rc = asbi_sandbox_explain(sb, asbi_map_http_error(&r->resp, what));
  }
  asbi_buf_free(&url);
  asbi_buf_free(&store);
  if (rc) {
    asb_file_reader_free(r);
    return rc;
  }
  /* From here the reader's own stop ends its reads (the opener's tokens may
   * go away). */
  asbi_http_stream_set_tokens(r->http, NULL, r->life.stop);
  *out = r;
  return ASB_OK;
}

int asb_file_reader_read(const char **data, size_t *len, asb_file_reader *r,
                         const asb_call_options *call) {
  if (!data || !len || !r) return asbi_err(ASB_EINVAL, "file_reader.read: bad arguments");
  *data = NULL;
  *len = 0;
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_life_hold(&r->life);
  pthread_mutex_lock(&r->mu);
  int rc = asbi_life_stopped(&r->life)
               ? asbi_err(ASB_ECANCELED, "file_reader.read: the reader was freed")
               : asbi_http_stream_read_ex(r->http, data, len, call ? call->timeout_ms : 0,
                                          call ? call->cancel : NULL);
  if (rc && rc != ASB_ETIMEOUT && rc != ASB_ECANCELED)
    rc = asbi_sandbox_explain(r->sb, asbi_prefix_error(rc, "file_reader.read"));
  pthread_mutex_unlock(&r->mu);
  reader_unref(r);
  if (rc) {
    *data = NULL;
    *len = 0;
    return rc;
  }
  return *len ? 1 : 0;
}

void asb_file_reader_stop(asb_file_reader *r) {
  if (r) asbi_life_stop(&r->life);
}

void asb_file_reader_free(asb_file_reader *r) {
  if (!r) return;
  asbi_life_stop(&r->life);
  reader_unref(r);
}

/* ---- /files: writing ---------------------------------------------------------------- */

/* A request body made of segments: in-memory bytes or a user read callback,
 * optionally gzip-compressed on the fly. */
typedef struct seg {
  const char *mem;
  size_t len;
  asb_read_fn read;
  void *ud;
} seg;

typedef struct body_src {
  seg *segs;
  size_t nseg, cur, off;
  int64_t produced; /* bytes a streamed segment produced */
  int64_t expect;   /* its declared size, or -1 */
  /* gzip */
  int gzip;
  z_stream z;
  int z_init, z_done;
  char *zin;
  size_t zin_len, zin_off;
  int eof;
} body_src;

/* Raw (uncompressed) bytes from the segments; 0 = end; -1 = abort. */
static long raw_read(body_src *b, char *buf, size_t cap) {
  while (b->cur < b->nseg) {
    seg *s = &b->segs[b->cur];
    if (s->mem || !s->read) {
      if (b->off < s->len) {
        size_t n = s->len - b->off < cap ? s->len - b->off : cap;
        memcpy(buf, s->mem + b->off, n);
        b->off += n;
        return (long)n;
      }
    } else {
      long n = s->read(buf, cap, s->ud);
      if (n < 0) {
        if (asb_error_last()->code == ASB_OK || asb_error_last()->code > 0)
          asbi_err(ASB_EUSER, "files.write: the data source aborted");
        return -1;
      }
      if ((size_t)n > cap) {
        asbi_err(ASB_EINVAL, "files.write: read callback returned %ld for %zu", n, cap);
        return -1;
      }
      if (n > 0) {
        b->produced += n;
        if (b->expect >= 0 && b->produced > b->expect) {
          asbi_err(ASB_EINVAL,
                   "files.write: source gave more than the declared "
                   "%lld bytes",
                   (long long)b->expect);
          return -1;
        }
        return n;
      }
      if (b->expect >= 0 && b->produced != b->expect) {
        asbi_err(ASB_EINVAL,
                 "files.write: source ended after %lld of the "
                 "declared %lld bytes",
                 (long long)b->produced, (long long)b->expect);
        return -1;
      }
    }
    b->cur++;
    b->off = 0;
  }
  return 0;
}

static size_t body_read(void *ud, char *buf, size_t cap) {
  body_src *b = ud;
  if (!b->gzip) {
    long n = raw_read(b, buf, cap);
    return n < 0 ? ASBI_HTTP_READ_ABORT : (size_t)n;
  }
  if (b->z_done) return 0;
  b->z.next_out = (Bytef *)buf;
  b->z.avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
  for (;;) {
    if (b->zin_off == b->zin_len && !b->eof) {
      long n = raw_read(b, b->zin, GZIP_CHUNK);
      if (n < 0) return ASBI_HTTP_READ_ABORT;
      if (n == 0) b->eof = 1;
      b->zin_len = (size_t)n;
      b->zin_off = 0;
    }
    b->z.next_in = (Bytef *)b->zin + b->zin_off;
    b->z.avail_in = (uInt)(b->zin_len - b->zin_off);
    int zr = deflate(&b->z, b->eof ? Z_FINISH : Z_NO_FLUSH);
    b->zin_off = b->zin_len - b->z.avail_in;
    if (zr == Z_STREAM_END) {
      b->z_done = 1;
      break;
    }
    if (zr != Z_OK && zr != Z_BUF_ERROR) {
      asbi_err(ASB_ERROR, "files.write: gzip failed");
      return ASBI_HTTP_READ_ABORT;
    }
    if (b->z.avail_out == 0) break;
  }
  return cap - b->z.avail_out;
}

static int body_init(body_src *b, seg *segs, size_t n, int gzip, int64_t expect) {
  memset(b, 0, sizeof *b);
  b->segs = segs;
  b->nseg = n;
  b->expect = expect;
  b->gzip = gzip;
  if (gzip) {
    b->zin = malloc(GZIP_CHUNK);
    if (!b->zin) return asbi_oom();
    /* windowBits 15 + 16: a gzip wrapper, as Content-Encoding: gzip wants. */
    if (deflateInit2(&b->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      free(b->zin);
      b->zin = NULL; /* body_free frees it again otherwise */
      return asbi_oom();
    }
    b->z_init = 1;
  }
  return ASB_OK;
}

static void body_free(body_src *b) {
  if (b->z_init) deflateEnd(&b->z);
  free(b->zin);
}

/* POST /files with the given body; parses the WriteInfo list. */
static int files_post(asb_sandbox *sb, const char *path, const char *content_type, body_src *src,
                      int64_t size, const asb_files_options *o, const char *what,
                      asb_entry_list **out) {
  const char *user = asbi_envd_user(sb, o->user);
  asbi_buf url = ASBI_BUF_INIT, store = ASBI_BUF_INIT;
  int rc = asbi_envd_files_url(sb, ASBI_URL_API, path, user, &url);
  if (rc) return rc;
  /* The metadata travel as X-Metadata-<key> headers, envd's (and E2B's)
   * way: envd checks keys and values and answers 400 for bad ones. */
  const char *const *meta = ASBI_OPT(o, 2, metadata, NULL);
  size_t nmeta = 0;
  for (const char *const *m = meta; m && *m; m++) {
    const char *eq = strchr(*m, '=');
    if (!eq || eq == *m || strcspn(*m, "\r\n: \t") < (size_t)(eq - *m) || strpbrk(eq + 1, "\r\n")) {
      asbi_buf_free(&url);
      return asbi_err(ASB_EINVAL,
                      "%s: metadata '%s' is not key=value (a key without "
                      "spaces or ':', no line breaks)",
                      what, *m);
    }
    nmeta++;
  }
  const char **hs = calloc(16 + nmeta, sizeof *hs);
  char **mh = nmeta ? calloc(nmeta, sizeof *mh) : NULL;
  if (!hs || (nmeta && !mh)) {
    free(hs);
    free(mh);
    asbi_buf_free(&url);
    return asbi_oom();
  }
  asbi_envd_headers(sb, NULL, hs, &store, content_type);
  size_t n = 0;
  while (hs[n]) n++;
  if (src->gzip) hs[n++] = "Content-Encoding: gzip";
  for (size_t i = 0; i < nmeta; i++) {
    const char *eq = strchr(meta[i], '=');
    asbi_buf h = ASBI_BUF_INIT;
    asbi_buf_printf(&h, "X-Metadata-%.*s: %s", (int)(eq - meta[i]), meta[i], eq + 1);
    if (!(mh[i] = asbi_buf_detach(&h, NULL))) rc = asbi_oom();
    hs[n++] = mh[i];
  }
  hs[n] = NULL;
  if (rc) {
    for (size_t i = 0; i < nmeta; i++) free(mh[i]);
    free(mh);
    free(hs);
    asbi_buf_free(&url);
    return rc;
  }
  asbi_http_req r = {.method = "POST",
                     .url = url.data,
                     .headers = hs,
                     .headers2 = (const char *const *)sb->client->headers,
                     .read = body_read,
                     .ud = src,
                     .body_size = src->gzip ? -1 : size,
                     .timeout_ms = asbi_client_timeout(sb->client, o->timeout_ms),
                     .cancel = o->cancel,
                     .stop = sb->life.stop,
                     .max_retries = sb->client->max_retries,
                     .max_body = 16u << 20};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  rc = asbi_http_do(sb->client->http, &r, &resp);
  if (rc) {
    rc = asbi_sandbox_explain(sb, asbi_prefix_error(rc, what));
  } else if (resp.status != 200) {
    rc = asbi_sandbox_explain(sb, asbi_map_http_error(&resp, what));
  } else if (out) {
    cJSON *j = asbi_pj_parse(resp.body.data ? resp.body.data : "", resp.body.len, NULL);
    if (!cJSON_IsArray(j))
      rc = asbi_err(ASB_EPROTOCOL, "%s: envd's reply is not a list of files", what);
    else
      *out = list_from_array(j, &rc);
    cJSON_Delete(j);
  }
  asbi_http_resp_free(&resp);
  asbi_buf_free(&url);
  asbi_buf_free(&store);
  for (size_t i = 0; i < nmeta; i++) free(mh[i]);
  free(mh);
  free(hs);
  return rc;
}

static int take_first(asb_entry_list *l, asb_entry **out) {
  if (!out) return ASB_OK;
  if (!l || l->n == 0) {
    *out = NULL;
    return asbi_err(ASB_EPROTOCOL, "files.write: envd reported no written file");
  }
  *out = l->items[0];
  l->items[0] = NULL;
  return ASB_OK;
}

/* One file: raw octet-stream (envd >= 0.5.7), else one multipart part. */
static int write_one(asb_sandbox *sb, const char *path, seg *data, int64_t size,
                     const asb_files_options *o, asb_entry **out, const char *what) {
  int rc = check_path(path, what);
  if (rc) return rc;
  ASBI_CHECK_VERSION(o, ASB_FILES_OPTIONS_VERSION, "asb_files_options");
  asb_files_options d = ASB_FILES_OPTIONS_INIT;
  if (!o) o = &d;
  if (out) *out = NULL;
  asb_entry_list *l = NULL;
  body_src src;
  if (asbi_envd_at_least(sb, 0, 5, 7)) {
    if ((rc = body_init(&src, data, 1, o->gzip, size))) return rc;
    rc = files_post(sb, path, "application/octet-stream", &src, size, o, what, out ? &l : NULL);
  } else {
    asbi_mpw w;
    asbi_buf head = ASBI_BUF_INIT, tail = ASBI_BUF_INIT;
    char ct[128];
    if (asbi_mpw_init(&w) != 0) return asbi_oom();
    asbi_mpw_content_type(&w, ct, sizeof ct);
    if (asbi_mpw_part_head(&w, &head, "file", path, NULL) != 0 || asbi_mpw_finish(&w, &tail) != 0) {
      asbi_buf_free(&head);
      asbi_buf_free(&tail);
      return asbi_err(ASB_EINVAL, "%s: path cannot be sent in a form: %s", what, path);
    }
    seg segs[3] = {{head.data, head.len, NULL, NULL}, *data, {tail.data, tail.len, NULL, NULL}};
    int64_t total = size < 0 ? -1 : (int64_t)(head.len + tail.len) + size;
    if ((rc = body_init(&src, segs, 3, o->gzip, size)) == ASB_OK)
      rc = files_post(sb, path, ct, &src, total, o, what, out ? &l : NULL);
    asbi_buf_free(&head);
    asbi_buf_free(&tail);
  }
  body_free(&src);
  if (rc == ASB_OK) rc = take_first(l, out);
  asb_entry_list_free(l);
  return rc;
}

int asb_files_write(asb_entry **out, asb_sandbox *sb, const char *path, const void *data,
                    size_t len, const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || (!data && len)) return asbi_err(ASB_EINVAL, "files.write: bad arguments");
  seg s = {data ? data : "", len, NULL, NULL};
  return write_one(sb, path, &s, (int64_t)len, o, out, "files.write");
}

int asb_files_write_stream(asb_entry **out, asb_sandbox *sb, const char *path, asb_read_fn read,
                           void *ud, asb_int64 size, const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !read || size < -1) return asbi_err(ASB_EINVAL, "files.write_stream: bad arguments");
  seg s = {NULL, 0, read, ud};
  return write_one(sb, path, &s, size, o, out, "files.write_stream");
}

int asb_files_write_many(asb_entry_list **out, asb_sandbox *sb, const asb_write_entry *files,
                         size_t count, const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (out) *out = NULL;
  if (!sb || (!files && count)) return asbi_err(ASB_EINVAL, "files.write_many: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_FILES_OPTIONS_VERSION, "asb_files_options");
  asb_files_options d = ASB_FILES_OPTIONS_INIT;
  if (!o) o = &d;
  if (count == 0) {
    int rc = ASB_OK;
    if (out) *out = list_from_array(NULL, &rc);
    return rc;
  }
  asbi_mpw w;
  if (asbi_mpw_init(&w) != 0) return asbi_oom();
  char ct[128];
  asbi_mpw_content_type(&w, ct, sizeof ct);
  /* Heads live in one buffer; segments point into it once it is complete. */
  asbi_buf heads = ASBI_BUF_INIT;
  size_t *offs = calloc(count + 1, sizeof *offs);
  seg *segs = calloc(2 * count + 1, sizeof *segs);
  int rc = offs && segs ? ASB_OK : asbi_oom();
  int64_t total = 0;
  for (size_t i = 0; rc == ASB_OK && i < count; i++) {
    if ((rc = check_path(files[i].path, "files.write_many"))) break;
    if (!files[i].data && files[i].len) {
      rc = asbi_err(ASB_EINVAL, "files.write_many: entry %zu has no data", i);
      break;
    }
    offs[i] = heads.len;
    if (asbi_mpw_part_head(&w, &heads, "file", files[i].path, NULL) != 0)
      rc = asbi_err(ASB_EINVAL,
                    "files.write_many: path cannot be sent in a "
                    "form: %s",
                    files[i].path);
    total += (int64_t)files[i].len;
  }
  if (rc == ASB_OK) {
    offs[count] = heads.len;
    if (asbi_mpw_finish(&w, &heads) != 0) rc = asbi_oom();
  }
  body_src src;
  memset(&src, 0, sizeof src);
  if (rc == ASB_OK) {
    for (size_t i = 0; i < count; i++) {
      segs[2 * i] = (seg){heads.data + offs[i], offs[i + 1] - offs[i], NULL, NULL};
      segs[2 * i + 1] = (seg){files[i].data ? files[i].data : "", files[i].len, NULL, NULL};
    }
    segs[2 * count] = (seg){heads.data + offs[count], heads.len - offs[count], NULL, NULL};
    total += (int64_t)heads.len;
    if ((rc = body_init(&src, segs, 2 * count + 1, o->gzip, -1)) == ASB_OK)
      /* No path: each part's filename names its file. */
      rc = files_post(sb, NULL, ct, &src, total, o, "files.write_many", out);
  }
  body_free(&src);
  asbi_buf_free(&heads);
  free(offs);
  free(segs);
  return rc;
}

/* ---- filesystem service ------------------------------------------------------------- */

static int fs_call(asb_sandbox *sb, const char *method, cJSON *req, const asb_files_options *o,
                   int idempotent, const char *what, cJSON **out) {
  if (!req) return asbi_oom();
  asbi_envd_call c;
  memset(&c, 0, sizeof c);
  c.user = asbi_envd_user(sb, o->user);
  c.timeout_ms = asbi_client_timeout(sb->client, o->timeout_ms);
  c.cancel = o->cancel;
  c.stop = sb->life.stop;
  c.idempotent = idempotent;
  int rc = asbi_envd_unary(sb, method, req, &c, what, out);
  cJSON_Delete(req);
  return rc;
}

static cJSON *path_req(const char *key, const char *path) {
  cJSON *r = cJSON_CreateObject();
  if (r && !cJSON_AddStringToObject(r, key, path)) {
    cJSON_Delete(r);
    return NULL;
  }
  return r;
}

#define FS_PRELUDE(what)                                                 \
  if (!sb) return asbi_err(ASB_EINVAL, "%s: sandbox is NULL", what);     \
  ASBI_CHECK_VERSION(o, ASB_FILES_OPTIONS_VERSION, "asb_files_options"); \
  asb_files_options dflt_ = ASB_FILES_OPTIONS_INIT;                      \
  if (!o) o = &dflt_

int asb_files_stat(asb_entry **out, asb_sandbox *sb, const char *path, const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  FS_PRELUDE("files.stat");
  int rc = check_path(path, "files.stat");
  if (rc) return rc;
  cJSON *resp = NULL;
  rc = fs_call(sb, "filesystem.Filesystem/Stat", path_req("path", path), o, 1, "files.stat", &resp);
  if (rc == ASB_OK && out) {
    *out = entry_from_json(asbi_pj_field(resp, "entry"));
    if (!*out) rc = asbi_err(ASB_EPROTOCOL, "files.stat: reply has no entry");
  }
  cJSON_Delete(resp);
  return rc;
}

int asb_files_exists(asb_sandbox *sb, const char *path, const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  int rc = asb_files_stat(NULL, sb, path, o);
  if (rc == ASB_OK) return 1;
  return rc == ASB_ENOTFOUND ? 0 : rc;
}

int asb_files_list(asb_entry_list **out, asb_sandbox *sb, const char *path, int depth,
                   const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  FS_PRELUDE("files.list");
  if (!out) return asbi_err(ASB_EINVAL, "files.list: out is NULL");
  int rc = check_path(path, "files.list");
  if (rc) return rc;
  if (depth < 0) return asbi_err(ASB_EINVAL, "files.list: depth %d < 0", depth);
  cJSON *req = path_req("path", path), *resp = NULL;
  if (req && depth > 1) cJSON_AddNumberToObject(req, "depth", depth);
  if (req && depth <= 1) cJSON_AddNumberToObject(req, "depth", 1);
  rc = fs_call(sb, "filesystem.Filesystem/ListDir", req, o, 1, "files.list", &resp);
  if (rc == ASB_OK) *out = list_from_array(asbi_pj_field(resp, "entries"), &rc);
  cJSON_Delete(resp);
  return rc;
}

int asb_files_remove(asb_sandbox *sb, const char *path, const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  FS_PRELUDE("files.remove");
  int rc = check_path(path, "files.remove");
  if (rc) return rc;
  return fs_call(sb, "filesystem.Filesystem/Remove", path_req("path", path), o, 0, "files.remove",
                 NULL);
}

int asb_files_rename(asb_entry **out, asb_sandbox *sb, const char *from, const char *to,
                     const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  FS_PRELUDE("files.rename");
  int rc = check_path(from, "files.rename");
  if (!rc) rc = check_path(to, "files.rename");
  if (rc) return rc;
  cJSON *req = path_req("source", from), *resp = NULL;
  if (req && !cJSON_AddStringToObject(req, "destination", to)) {
    cJSON_Delete(req);
    req = NULL;
  }
  rc = fs_call(sb, "filesystem.Filesystem/Move", req, o, 0, "files.rename", &resp);
  if (rc == ASB_OK && out) {
    *out = entry_from_json(asbi_pj_field(resp, "entry"));
    if (!*out) rc = asbi_err(ASB_EPROTOCOL, "files.rename: reply has no entry");
  }
  cJSON_Delete(resp);
  return rc;
}

int asb_files_make_dir(asb_sandbox *sb, const char *path, const asb_files_options *o) {
  ASBI_SANDBOX_CALL(sb);
  FS_PRELUDE("files.make_dir");
  int rc = check_path(path, "files.make_dir");
  if (rc) return rc;
  rc = fs_call(sb, "filesystem.Filesystem/MakeDir", path_req("path", path), o, 0, "files.make_dir",
               NULL);
  if (rc == ASB_OK) return 1;
  return rc == ASB_EEXISTS ? 0 : rc;
}

/* ---- watching ----------------------------------------------------------------------- */

/* A watch's life is a process's (commands.c): `life` counts the user's
 * reference and the waits in flight; `stop` (asb_watch_stop, free) ends
 * waits, riding on the event stream. Neither stop nor free takes `mu`. */
struct asb_watch {
  asbi_life life;
  asb_sandbox *sb;
  asbi_envd_stream *stream;
  asb_watch_fn fn;
  void *ud;
  asb_cancel *stop;    /* asb_watch_stop, free */
  pthread_mutex_t mu;  /* one waiter at a time */
  pthread_mutex_t smu; /* guards stream, waiting, freed; never held across I/O */
  int waiting;
  int freed;
  /* a polling watch (E2B's CreateWatcher): its id in envd, whose events
   * asb_watch_poll fetches (GetWatcherEvents), as user */
  char *watcher;
  char *user;
  long timeout_ms;
};

static void watch_unref(asb_watch *w) {
  if (!asbi_life_drop(&w->life)) return;
  asbi_envd_stream_close(w->stream);
  free(w->watcher);
  free(w->user);
  pthread_mutex_destroy(&w->mu);
  pthread_mutex_destroy(&w->smu);
  asbi_sandbox_unref(w->sb);
  asb_cancel_free(w->stop);
  asbi_life_fini(&w->life);
  free(w);
}

static const asbi_pj_enum EVENT_TYPES[] = {{0, "EVENT_TYPE_UNSPECIFIED"},
                                           {ASB_FS_EVENT_CREATE, "EVENT_TYPE_CREATE"},
                                           {ASB_FS_EVENT_WRITE, "EVENT_TYPE_WRITE"},
                                           {ASB_FS_EVENT_REMOVE, "EVENT_TYPE_REMOVE"},
                                           {ASB_FS_EVENT_RENAME, "EVENT_TYPE_RENAME"},
                                           {ASB_FS_EVENT_CHMOD, "EVENT_TYPE_CHMOD"},
                                           {0, NULL}};

/* A polling watch: CreateWatcher, whose reply is the watcher's id. */
static int watcher_create(asb_watch *w, const cJSON *req, const asbi_envd_call *c,
                          const asb_watch_options *o) {
  if ((o->user && !(w->user = asbi_strdup(o->user)))) return asbi_oom();
  w->timeout_ms = o->request_timeout_ms;
  cJSON *resp = NULL;
  int rc = asbi_envd_unary(w->sb, "filesystem.Filesystem/CreateWatcher", req, c, "files.watch_dir",
                           &resp);
  const char *id = NULL;
  if (rc == ASB_OK && (asbi_pj_get_str(resp, "watcherId", &id) != 0 || !id || !id[0]))
    rc = asbi_err(ASB_EPROTOCOL, "files.watch_dir: no watcher id in envd's reply");
  if (rc == ASB_OK && !(w->watcher = asbi_strdup(id))) rc = asbi_oom();
  cJSON_Delete(resp);
  return rc;
}

/* A call on the watcher: the watch's user, its request timeout or call's;
 * stop: the watch's (a poll: asb_watch_stop ends it) or NULL (the
 * sandbox handle's). */
static int watcher_call(asb_watch *w, const char *method, const asb_call_options *call,
                        asb_cancel *stop, const char *what, cJSON **out) {
  cJSON *req = path_req("watcherId", w->watcher);
  if (!req) return asbi_oom();
  asbi_envd_call c;
  asbi_envd_call_from(&c, w->sb, call, w->user);
  if (!call || !call->timeout_ms) c.timeout_ms = asbi_client_timeout(w->sb->client, w->timeout_ms);
  if (stop) c.stop = stop;
  int rc = asbi_envd_unary(w->sb, method, req, &c, what, out);
  cJSON_Delete(req);
  return rc;
}

int asb_files_watch_dir(asb_watch **out, asb_sandbox *sb, const char *path,
                        const asb_watch_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (!sb || !out) return asbi_err(ASB_EINVAL, "files.watch_dir: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_WATCH_OPTIONS_VERSION, "asb_watch_options");
  asb_watch_options d = ASB_WATCH_OPTIONS_INIT;
  if (!o) o = &d;
  int rc = check_path(path, "files.watch_dir");
  if (rc) return rc;
  if (!o->on_event) return asbi_err(ASB_EINVAL, "files.watch_dir: on_event is NULL");
  if (o->recursive && !asbi_envd_at_least(sb, 0, 1, 4))
    return asbi_err(ASB_EUNSUPPORTED, "recursive watching needs envd 0.1.4+");
  if (o->include_entry && !asbi_envd_at_least(sb, 0, 6, 3))
    return asbi_err(ASB_EUNSUPPORTED, "include_entry needs envd 0.6.3+");
  asb_watch *w = calloc(1, sizeof *w);
  if (!w) return asbi_oom();
  if ((rc = asbi_life_init(&w->life)) || (rc = asb_cancel_new(&w->stop))) {
    asbi_life_fini(&w->life);
    free(w);
    return rc;
  }
  pthread_mutex_init(&w->mu, NULL);
  pthread_mutex_init(&w->smu, NULL);
  asbi_sandbox_ref(sb);
  w->sb = sb;
  w->fn = o->on_event;
  w->ud = o->userdata;
  cJSON *req = path_req("path", path);
  if (req && o->recursive) cJSON_AddBoolToObject(req, "recursive", 1);
  if (req && o->include_entry) cJSON_AddBoolToObject(req, "includeEntry", 1);
  if (!req) {
    asb_watch_free(w);
    return asbi_oom();
  }
  asbi_envd_call c;
  memset(&c, 0, sizeof c);
  c.user = asbi_envd_user(sb, o->user);
  c.timeout_ms = asbi_client_timeout(sb->client, o->request_timeout_ms);
  c.cancel = o->cancel;
  c.stop = sb->life.stop;
  if (o->version >= 2 && o->polling) {
    rc = watcher_create(w, req, &c, o);
    cJSON_Delete(req);
    if (rc) {
      asb_watch_free(w);
      return rc;
    }
    *out = w;
    return ASB_OK;
  }
  rc = asbi_envd_stream_open(sb, "filesystem.Filesystem/WatchDir", req, &c, 0, "files.watch_dir",
                             &w->stream);
  cJSON_Delete(req);
  /* The first event confirms the watch is in place. */
  cJSON *msg = NULL;
  if (rc == ASB_OK) rc = asbi_envd_stream_next(w->stream, &msg, c.timeout_ms, NULL);
  /* WatchDirResponse's oneof has no wrapper in JSON: {"start":{}}. */
  if (rc == ASB_OK && (!msg || !asbi_pj_field(msg, "start")))
    rc = asbi_err(ASB_EPROTOCOL, "files.watch_dir: no start event");
  cJSON_Delete(msg);
  if (rc) {
    asb_watch_free(w);
    return rc;
  }
  /* The opener's cancel token may go away now: the watch's own stop ends
   * its waits from here. */
  asbi_envd_stream_set_tokens(w->stream, NULL, w->stop);
  *out = w;
  return ASB_OK;
}

static int watch_wait(asb_watch *w, long timeout_ms);

int asb_watch_wait(asb_watch *w, long timeout_ms) {
  if (!w) return asbi_err(ASB_EINVAL, "watch.wait: watch is NULL");
  asbi_life_hold(&w->life);
  pthread_mutex_lock(&w->mu);
  pthread_mutex_lock(&w->smu);
  w->waiting = !w->freed;
  pthread_mutex_unlock(&w->smu);
  int rc = w->waiting ? watch_wait(w, timeout_ms) : 0;
  asbi_envd_stream *s = NULL;
  pthread_mutex_lock(&w->smu);
  w->waiting = 0;
  if (w->freed) {
    s = w->stream;
    w->stream = NULL;
  }
  pthread_mutex_unlock(&w->smu);
  pthread_mutex_unlock(&w->mu);
  asbi_envd_stream_close(s);
  watch_unref(w);
  return rc;
}

static int watch_poll(asb_watch *w, const asb_call_options *call);

/* asb_watch_wait of a polling watch: a poll every 50 ms. */
static int watcher_wait(asb_watch *w, long timeout_ms) {
  uint64_t deadline = timeout_ms >= 0 ? asbi_now_ms() + (uint64_t)timeout_ms : 0;
  for (;;) {
    int n = watch_poll(w, NULL);
    if (n != 0) return n;
    uint64_t now = asbi_now_ms();
    if (timeout_ms >= 0 && now >= deadline) return 0;
    uint64_t nap = timeout_ms >= 0 && deadline - now < 50 ? deadline - now : 50;
    usleep((useconds_t)(nap * 1000));
  }
}

static int watch_wait(asb_watch *w, long timeout_ms) {
  if (w->watcher) return watcher_wait(w, timeout_ms);
  int delivered = 0, rc = ASB_OK;
  uint64_t deadline = timeout_ms >= 0 ? asbi_now_ms() + (uint64_t)timeout_ms : 0;
  while (w->stream) {
    long left = 0;
    if (timeout_ms >= 0) {
      uint64_t now = asbi_now_ms();
      if (now >= deadline) break;
      left = (long)(deadline - now);
      if (left == 0) left = 1;
    }
    cJSON *msg = NULL;
    rc = asbi_envd_stream_next(w->stream, &msg, left, w->stop);
    if (rc == ASB_ETIMEOUT && timeout_ms >= 0 && asbi_now_ms() >= deadline) {
      rc = ASB_OK;
      break;
    }
    if (rc == ASB_ECANCELED && asb_cancel_is_requested(w->stop)) {
      rc = ASB_OK; /* stopped */
      break;
    }
    if (rc) break;
    if (!msg) { /* the watch ended */
      asbi_envd_stream_close(w->stream);
      w->stream = NULL;
      break;
    }
    const cJSON *fs = asbi_pj_field(msg, "filesystem");
    if (fs) {
      int type = 0;
      const char *name = NULL;
      asbi_pj_get_enum(fs, "type", EVENT_TYPES, &type);
      asbi_pj_get_str(fs, "name", &name);
      asb_entry *e = entry_from_json(asbi_pj_field(fs, "entry"));
      if (type && asb_cancel_is_requested(w->stop)) {
        type = 0; /* stopped: no callback after asb_watch_stop returned */
        rc = ASB_ECANCELED;
      }
      if (type) {
        int cb = w->fn((asb_fs_event_type)type, name ? name : "", e, w->ud);
        delivered++;
        if (cb) {
          rc = cb < 0 ? cb : ASB_EUSER;
          if (asb_error_last()->code != rc) asbi_err(rc, "watch: event callback aborted");
        }
      }
      asb_entry_free(e);
    }
    cJSON_Delete(msg);
    if (rc == ASB_ECANCELED && asb_cancel_is_requested(w->stop)) {
      rc = ASB_OK; /* stopped */
      break;
    }
    if (rc) break;
  }
  return rc ? rc : delivered;
}

/* Deliver one GetWatcherEvents' events (under mu, a waiter's lock). */
static int watch_poll(asb_watch *w, const asb_call_options *call) {
  cJSON *resp = NULL;
  if (asb_cancel_is_requested(w->stop)) return 0;
  int rc =
      watcher_call(w, "filesystem.Filesystem/GetWatcherEvents", call, w->stop, "watch.poll", &resp);
  if (rc == ASB_ECANCELED && asb_cancel_is_requested(w->stop)) return 0; /* stopped */
  if (rc) return rc;
  int delivered = 0;
  const cJSON *evs = asbi_pj_field(resp, "events"), *fs;
  if (!cJSON_IsArray(evs)) evs = NULL;
  cJSON_ArrayForEach(fs, evs) {
    int type = 0;
    const char *name = NULL;
    asbi_pj_get_enum(fs, "type", EVENT_TYPES, &type);
    asbi_pj_get_str(fs, "name", &name);
    if (!type) continue;
    if (asb_cancel_is_requested(w->stop)) break; /* no callback after asb_watch_stop */
    asb_entry *e = entry_from_json(asbi_pj_field(fs, "entry"));
    int cb = w->fn((asb_fs_event_type)type, name ? name : "", e, w->ud);
    asb_entry_free(e);
    delivered++;
    if (cb) {
      rc = cb < 0 ? cb : ASB_EUSER;
      if (asb_error_last()->code != rc) asbi_err(rc, "watch: event callback aborted");
      break;
    }
  }
  cJSON_Delete(resp);
  return rc ? rc : delivered;
}

int asb_watch_poll(asb_watch *w, const asb_call_options *call) {
  if (!w) return asbi_err(ASB_EINVAL, "watch.poll: watch is NULL");
  if (!w->watcher) return asbi_err(ASB_EINVAL, "watch.poll: not a polling watch");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_life_hold(&w->life);
  pthread_mutex_lock(&w->mu);
  pthread_mutex_lock(&w->smu);
  int freed = w->freed;
  pthread_mutex_unlock(&w->smu);
  int rc = freed ? asbi_err(ASB_ECANCELED, "watch.poll: the watch was freed") : watch_poll(w, call);
  pthread_mutex_unlock(&w->mu);
  watch_unref(w);
  return rc;
}

void asb_watch_stop(asb_watch *w) {
  if (w) asb_cancel_request(w->stop);
}

void asb_watch_free(asb_watch *w) {
  if (!w) return;
  asb_watch_stop(w);
  asbi_life_stop(&w->life);
  asbi_envd_stream *s = NULL;
  pthread_mutex_lock(&w->smu);
  w->freed = 1;
  if (!w->waiting) { /* else the wait closes it on its way out */
    s = w->stream;
    w->stream = NULL;
  }
  pthread_mutex_unlock(&w->smu);
  asbi_envd_stream_close(s);
  /* a polling watch's watcher goes with it (best effort: a gone sandbox
   * took it along) */
  if (w->watcher) {
    asb_call_options co = ASB_CALL_OPTIONS_INIT;
    co.timeout_ms = 5000;
    (void)watcher_call(w, "filesystem.Filesystem/RemoveWatcher", &co, NULL, "watch.free", NULL);
  }
  watch_unref(w);
}

/* ---- signed URLs -------------------------------------------------------------------- */

static int signed_url(asb_sandbox *sb, const char *path, const char *user, long expires_in_s,
                      const char *op, char **url) {
  if (!sb || !url) return asbi_err(ASB_EINVAL, "files.%s_url: bad arguments", op);
  int rc = check_path(path, op);
  if (rc) return rc;
  const char *u = asbi_envd_user(sb, user);
  asbi_buf b = ASBI_BUF_INIT;
  if ((rc = asbi_envd_files_url(sb, ASBI_URL_PUBLIC, path, u, &b))) return rc;
  if (sb->envd_token) {
    /* v1 signature (proto/sign.c), as E2B's SDKs compute it and envd
     * checks it. A negative expiry signs a URL that has already expired,
     * as E2B's SDKs do (envd answers 401 "signature is already expired"). */
    long long exp = expires_in_s ? (long long)time(NULL) + expires_in_s : 0;
    if (expires_in_s && exp <= 0) exp = 1;
    char exps[24], sig[ASBI_FILES_SIG_MAX];
    snprintf(exps, sizeof exps, "%lld", exp);
    asbi_files_sign(path, op, u ? u : "", sb->envd_token, exp ? exps : NULL, sig, sizeof sig);
    asbi_buf_puts(&b, "&signature=");
    asbi_url_escape(&b, sig, 0);
    if (exp) asbi_buf_printf(&b, "&signature_expiration=%lld", exp);
  }
  if (!b.data) return asbi_oom();
  *url = asbi_buf_detach(&b, NULL);
  return *url ? ASB_OK : asbi_oom();
}

int asb_files_download_url(char **url, asb_sandbox *sb, const char *path, const char *user,
                           long expires_in_s) {
  ASBI_SANDBOX_CALL(sb);
  return signed_url(sb, path, user, expires_in_s, "read", url);
}

int asb_files_upload_url(char **url, asb_sandbox *sb, const char *path, const char *user,
                         long expires_in_s) {
  ASBI_SANDBOX_CALL(sb);
  return signed_url(sb, path, user, expires_in_s, "write", url);
}
