/* E2B's Template builder through the engine's builder API
 * (docs/templates.md, "E2B's Template builder"): ask for a name
 * (POST /v3/templates), upload each COPY step's files from the caller's
 * context directory by content hash (GET /templates/{id}/files/{hash}, PUT
 * to the URL it gives), start the build (POST /v2/templates/{id}/builds/
 * {buildID}) and follow GET .../status with its logs until it ends. Plus
 * the status, alias and tag calls E2B's SDKs have next to build().
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/cmdargs.h"
#include "proto/ignore.h"
#include "proto/pjson.h"
#include "proto/tar.h"
#include "proto/url.h"
#include "util/sha256.h"
#include "util/util.h"
#include "http.h"
#include "internal.h"

#define UPLOAD_MAX (128u << 20) /* the engine's limit for one archive */
#define DEFAULT_TIMEOUT_MS 1800000L
#define POLL_MS 200

typedef struct build_line {
  char *message, *level;
  int64_t ts;
} build_line;

struct asb_template_build {
  char *template_id, *build_id, *status, *error;
  int error_step;
  build_line *lines;
  size_t n, cap;
  char **tags; /* from asb_templates_request_build */
  size_t ntags;
};

/* Version 1 ended before ignore_patterns. */
static size_t steps_options_size(unsigned int version) {
  return version >= 2 ? sizeof(asb_template_steps_options)
                      : offsetof(asb_template_steps_options, ignore_patterns);
}

ASBI_DEFINE_OPTIONS_INIT_SIZED(asb_template_steps_options, ASB_TEMPLATE_STEPS_OPTIONS_VERSION,
                               ASB_TEMPLATE_STEPS_OPTIONS_INIT, steps_options_size)
ASBI_DEFINE_OPTIONS_INIT(asb_template_request_options, ASB_TEMPLATE_REQUEST_OPTIONS_VERSION,
                         ASB_TEMPLATE_REQUEST_OPTIONS_INIT)
ASBI_DEFINE_OPTIONS_INIT(asb_template_files_options, ASB_TEMPLATE_FILES_OPTIONS_VERSION,
                         ASB_TEMPLATE_FILES_OPTIONS_INIT)

/* ---- the build object ----------------------------------------------------------- */

void asb_template_build_free(asb_template_build *b) {
  if (!b) return;
  free(b->template_id);
  free(b->build_id);
  free(b->status);
  free(b->error);
  for (size_t i = 0; i < b->n; i++) {
    free(b->lines[i].message);
    free(b->lines[i].level);
  }
  free(b->lines);
  for (size_t i = 0; i < b->ntags; i++) free(b->tags[i]);
  free(b->tags);
  free(b);
}

const char *asb_template_build_template_id(const asb_template_build *b) {
  return b ? b->template_id : NULL;
}
const char *asb_template_build_build_id(const asb_template_build *b) {
  return b ? b->build_id : NULL;
}
const char *asb_template_build_status(const asb_template_build *b) {
  return b ? b->status : NULL;
}
const char *asb_template_build_error(const asb_template_build *b) {
  return b ? b->error : NULL;
}
int asb_template_build_error_step(const asb_template_build *b) {
  return b ? b->error_step : -1;
}
size_t asb_template_build_log_count(const asb_template_build *b) {
  return b ? b->n : 0;
}
const char *asb_template_build_log_message(const asb_template_build *b, size_t i) {
  return b && i < b->n ? b->lines[i].message : NULL;
}
const char *asb_template_build_log_level(const asb_template_build *b, size_t i) {
  return b && i < b->n ? b->lines[i].level : NULL;
}
asb_int64 asb_template_build_log_timestamp(const asb_template_build *b, size_t i) {
  return b && i < b->n ? b->lines[i].ts : 0;
}
size_t asb_template_build_tag_count(const asb_template_build *b) {
  return b ? b->ntags : 0;
}
const char *asb_template_build_tag(const asb_template_build *b, size_t i) {
  return b && i < b->ntags ? b->tags[i] : NULL;
}

static asb_template_build *build_new(const char *tid, const char *bid) {
  asb_template_build *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->template_id = asbi_strdup(tid ? tid : "");
  b->build_id = asbi_strdup(bid ? bid : "");
  b->status = asbi_strdup("waiting");
  b->error_step = -1;
  if (!b->template_id || !b->build_id || !b->status) {
    asb_template_build_free(b);
    return NULL;
  }
  return b;
}

static int set_str(char **slot, const char *v) {
  char *d = v ? asbi_strdup(v) : NULL;
  if (v && !d) return asbi_oom();
  free(*slot);
  *slot = d;
  return ASB_OK;
}

/* "2026-12-01T22:01:02.345Z" → Unix ms (0 if it does not parse). */
static int64_t parse_ts(const char *s) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
  if (!p) return 0;
  int64_t ms = (int64_t)timegm(&tm) * 1000;
  if (*p == '.') {
    int64_t scale = 100;
    for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10) ms += (*p - '0') * scale;
  }
  return ms;
}

/* Takes a status reply: state, reason, and its log entries (appended to
 * b->lines; *added = how many). */
static int take_status(asb_template_build *b, const cJSON *j, size_t *added) {
  const char *st = NULL, *tid = NULL, *bid = NULL;
  *added = 0;
  if (!cJSON_IsObject(j) || asbi_pj_get_str(j, "status", &st) || !st)
    return asbi_err(ASB_EPROTOCOL, "template build status: malformed reply");
  asbi_pj_get_str(j, "templateID", &tid);
  asbi_pj_get_str(j, "buildID", &bid);
  if ((tid && set_str(&b->template_id, tid)) || (bid && set_str(&b->build_id, bid)) ||
      set_str(&b->status, st))
    return asbi_oom();
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "reason");
  if (cJSON_IsObject(rs)) {
    const char *m = NULL, *step = NULL;
    asbi_pj_get_str(rs, "message", &m);
    asbi_pj_get_str(rs, "step", &step);
    if (set_str(&b->error, m ? m : "the build failed")) return asbi_oom();
    b->error_step = step && *step >= '0' && *step <= '9' ? atoi(step) : -1;
  }
  const cJSON *ents = cJSON_GetObjectItemCaseSensitive(j, "logEntries");
  const cJSON *en;
  cJSON_ArrayForEach(en, ents) {
    const char *m = NULL, *lv = NULL, *ts = NULL;
    asbi_pj_get_str(en, "message", &m);
    asbi_pj_get_str(en, "level", &lv);
    asbi_pj_get_str(en, "timestamp", &ts);
    if (b->n == b->cap) {
      size_t cap = b->cap ? b->cap * 2 : 64;
      build_line *v = realloc(b->lines, cap * sizeof *v);
      if (!v) return asbi_oom();
      b->lines = v;
      b->cap = cap;
    }
    build_line *l = &b->lines[b->n];
    l->message = asbi_strdup(m ? m : "");
    l->level = asbi_strdup(lv ? lv : "info");
    l->ts = parse_ts(ts);
    if (!l->message || !l->level) {
      free(l->message);
      free(l->level);
      return asbi_oom();
    }
    b->n++;
    (*added)++;
  }
  return ASB_OK;
}

/* ---- packing a COPY step's files ------------------------------------------------ */

/* Adds path (relative name rel) to the tar: a file, a symlink (kept, or
 * followed with resolve), or a directory and everything under it, less
 * what ig leaves out. A directory left out is looked into only when ig has
 * '!' exceptions, and archived only if something in it is kept. */
static int pack_path(asbi_buf *tar, const char *path, const char *rel, int resolve, int depth,
                     const asbi_ignore *ig) {
  int ignored = asbi_ignore_match(ig, rel);
  if (ignored && !asbi_ignore_has_exceptions(ig)) return ASB_OK;
  struct stat st;
  if ((resolve ? stat(path, &st) : lstat(path, &st)) != 0) {
    if (resolve && lstat(path, &st) == 0)
      return asbi_err(ASB_EINVAL, "template copy: the symlink %s leads nowhere", rel);
    return asbi_err(ASB_EINVAL, "template copy: %s: %s", rel, strerror(errno));
  }
  if (depth > 32) return asbi_err(ASB_EINVAL, "template copy: %s: nested too deep", rel);
  unsigned mode = (unsigned)st.st_mode & 07777;
  if (ignored && !S_ISDIR(st.st_mode)) return ASB_OK;
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0) return asbi_err(ASB_EINVAL, "template copy: %s: %s", rel, strerror(errno));
    target[n] = 0;
    int r = asbi_tar_add(tar, rel, ASBI_TAR_SYMLINK, 0777, NULL, 0, target);
    if (r == -2)
      return asbi_err(ASB_EINVAL, "template copy: the symlink %s -> %s cannot be archived", rel,
                      target);
    return r ? asbi_err(ASB_EINVAL, "template copy: the files are over %u MiB", UPLOAD_MAX >> 20)
             : ASB_OK;
  }
  if (S_ISREG(st.st_mode)) {
    if ((uint64_t)st.st_size > UPLOAD_MAX)
      return asbi_err(ASB_EINVAL, "template copy: %s is over %u MiB", rel, UPLOAD_MAX >> 20);
    asbi_buf data = ASBI_BUF_INIT;
    int rc = asbi_buf_read_file(&data, path, UPLOAD_MAX)
                 ? asbi_err(ASB_EINVAL, "template copy: cannot read %s", rel)
                 : ASB_OK;
    if (!rc && asbi_tar_add(tar, rel, ASBI_TAR_FILE, mode, data.data, data.len, NULL))
      rc = asbi_err(ASB_EINVAL, "template copy: the files are over %u MiB", UPLOAD_MAX >> 20);
    asbi_buf_free(&data);
    return rc;
  }
  if (!S_ISDIR(st.st_mode)) return ASB_OK; /* sockets, fifos, devices: skipped */
  size_t before = tar->len;
  if (asbi_tar_add(tar, rel, ASBI_TAR_DIR, mode, NULL, 0, NULL))
    return asbi_err(ASB_EINVAL, "template copy: the files are over %u MiB", UPLOAD_MAX >> 20);
  size_t after = tar->len;
  /* Sorted, so the same files always give the same archive and hash. */
  asbi_buf pat = ASBI_BUF_INIT;
  asbi_buf_printf(&pat, "%s/*", path);
  glob_t g;
  memset(&g, 0, sizeof g);
  int rc = pat.data ? ASB_OK : asbi_oom();
  int gr = rc ? GLOB_NOSPACE : glob(pat.data, GLOB_PERIOD | GLOB_NOESCAPE, NULL, &g);
  if (!rc && gr == GLOB_NOSPACE) rc = asbi_oom();
  for (size_t i = 0; !rc && gr == 0 && i < g.gl_pathc; i++) {
    const char *base = strrchr(g.gl_pathv[i], '/');
    base = base ? base + 1 : g.gl_pathv[i];
    if (!strcmp(base, ".") || !strcmp(base, "..")) continue;
    asbi_buf r = ASBI_BUF_INIT;
    asbi_buf_printf(&r, "%s/%s", rel, base);
    rc = r.data ? pack_path(tar, g.gl_pathv[i], r.data, resolve, depth + 1, ig) : asbi_oom();
    asbi_buf_free(&r);
  }
  globfree(&g);
  asbi_buf_free(&pat);
  /* a left-out directory with nothing kept in it: its entry goes too (the
   * tar writer only appends, so the buffer's length is its state) */
  if (!rc && ignored && tar->len == after) tar->len = before;
  return rc;
}

static int bad_src(const char *src) {
  if (!*src || *src == '/') return 1;
  for (const char *p = src; *p;) {
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') return 1;
    p += n;
    while (*p == '/') p++;
  }
  return 0;
}

/* The tar of what src (a path or glob under ctx) matches, named relative to
 * ctx, less what ig leaves out, and its SHA-256. */
static int pack_copy(const char *ctx, const char *src, int resolve, const asbi_ignore *ig,
                     asbi_buf *tar, char hash[65]) {
  if (bad_src(src))
    return asbi_err(ASB_EINVAL,
                    "template copy: source '%s' must be relative to the context directory, "
                    "without '..'",
                    src);
  asbi_buf pat = ASBI_BUF_INIT;
  asbi_buf_printf(&pat, "%s/%s", ctx, src);
  while (pat.data && pat.len > 1 && pat.data[pat.len - 1] == '/') pat.data[--pat.len] = 0;
  glob_t g;
  memset(&g, 0, sizeof g);
  int rc = pat.data ? ASB_OK : asbi_oom();
  int gr = rc ? GLOB_NOSPACE : glob(pat.data, 0, NULL, &g);
  if (!rc && gr == GLOB_NOSPACE) rc = asbi_oom();
  if (!rc && (gr != 0 || g.gl_pathc == 0))
    rc = asbi_err(ASB_EINVAL, "template copy: nothing in %s matches '%s'", ctx, src);
  size_t skip = strlen(ctx) + 1;
  for (size_t i = 0; !rc && i < g.gl_pathc; i++) {
    const char *rel = g.gl_pathv[i] + skip;
    size_t before = tar->len;
    /* Parents first, so the archive unpacks the same everywhere. */
    for (const char *s = strchr(rel, '/'); !rc && s; s = strchr(s + 1, '/')) {
      asbi_buf d = ASBI_BUF_INIT;
      asbi_buf_append(&d, rel, (size_t)(s - rel));
      if (!d.data || asbi_tar_add(tar, d.data, ASBI_TAR_DIR, 0755, NULL, 0, NULL))
        rc = asbi_err(ASB_EINVAL, "template copy: cannot archive %s", rel);
      asbi_buf_free(&d);
    }
    size_t parents = tar->len;
    if (!rc) rc = pack_path(tar, g.gl_pathv[i], rel, resolve, 0, ig);
    if (!rc && tar->len == parents) tar->len = before; /* all of it left out */
  }
  globfree(&g);
  asbi_buf_free(&pat);
  if (!rc && tar->len == 0)
    rc = asbi_err(ASB_EINVAL,
                  "template copy: what '%s' matches in %s is all left out by the ignore "
                  "patterns (.dockerignore, ignore_patterns)",
                  src, ctx);
  if (!rc && asbi_tar_finish(tar))
    rc = asbi_err(ASB_EINVAL, "template copy: the files are over %u MiB", UPLOAD_MAX >> 20);
  if (!rc) asbi_sha256_hex(tar->data, tar->len, hash);
  return rc;
}

/* ---- requests ------------------------------------------------------------------- */

typedef struct call_ctx {
  asb_client *c;
  asb_cancel *cancel;
  uint64_t deadline; /* 0 = none */
} call_ctx;

static long left_ms(const call_ctx *x) {
  if (!x->deadline) return 0;
  uint64_t now = asbi_now_ms();
  return now >= x->deadline ? 1 : (long)(x->deadline - now);
}

static int request(const call_ctx *x, const char *method, const char *path, const cJSON *body,
                   int flags, const char *what, cJSON **out) {
  asbi_buf b = ASBI_BUF_INIT;
  if (body && asbi_json_print(body, &b)) {
    asbi_buf_free(&b);
    return asbi_oom();
  }
  int rc = asbi_cp_request_raw(x->c, method, path, b.data, b.len, body ? "application/json" : NULL,
                               left_ms(x), x->cancel, x->c->life.stop, flags, what, NULL, NULL, out,
                               NULL);
  asbi_buf_free(&b);
  return rc;
}

/* PUT the archive where the engine said: through the client's API base
 * when the URL is on it (its key and transport), else as E2B's SDKs do, a
 * plain PUT to the (signed) URL. */
static int upload(const call_ctx *x, const char *url, const asbi_buf *tar) {
  const char *base = x->c->api_url;
  size_t bl = base ? strlen(base) : 0;
  if (bl && !strncmp(url, base, bl) && url[bl] == '/')
    return asbi_cp_request_raw(x->c, "PUT", url + bl, tar->data, tar->len,
                               "application/octet-stream", left_ms(x), x->cancel, x->c->life.stop,
                               ASBI_CP_IDEMPOTENT, "template upload", NULL, NULL, NULL, NULL);
  if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
    return asbi_err(ASB_EPROTOCOL, "template upload: the engine gave no URL ('%s')", url);
  const char *hs[] = {"Content-Type: application/octet-stream", NULL};
  asbi_http_req r = {.method = "PUT",
                     .url = url,
                     .headers = hs,
                     .body = tar->data,
                     .body_len = tar->len,
                     .timeout_ms = left_ms(x),
                     .cancel = x->cancel,
                     .stop = x->c->life.stop,
                     .idempotent = 1,
                     .max_retries = x->c->max_retries,
                     .max_body = 1u << 20};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  int rc = asbi_http_do(x->c->http, &r, &resp);
  if (!rc && (resp.status < 200 || resp.status >= 300))
    rc = asbi_err_remote(resp.status == 400 ? ASB_EINVAL : ASB_EPROTOCOL, (int)resp.status, NULL,
                         "template upload: HTTP %ld: %.*s", resp.status,
                         (int)(resp.body.len > 300 ? 300 : resp.body.len),
                         resp.body.data ? resp.body.data : "");
  asbi_http_resp_free(&resp);
  return rc;
}

static int path_of(asbi_buf *p, const char *fmt_a, const char *a, const char *mid, const char *b,
                   const char *tail) {
  asbi_buf_puts(p, fmt_a);
  asbi_url_escape(p, a, 0);
  if (mid) {
    asbi_buf_puts(p, mid);
    asbi_url_escape(p, b, 0);
  }
  if (tail) asbi_buf_puts(p, tail);
  return p->data ? ASB_OK : asbi_oom();
}

/* A line of the client's own progress (E2B's SDKs log the same steps:
 * the name and build ids, each upload or its reuse, the start) to on_log;
 * not kept in the build's lines, which are the engine's log. */
static int note(const asb_template_steps_options *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int note(const asb_template_steps_options *o, const char *fmt, ...) {
  if (!o->on_log) return ASB_OK;
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int r = o->on_log(asbi_unix_ms(), "info", msg, o->userdata);
  return r ? asbi_err(r < 0 ? r : ASB_EUSER, "template build: the log callback stopped it")
           : ASB_OK;
}

/* The patterns of opts and then of ctx/.dockerignore (E2B's SDKs put them
 * in that order) into *out, NULL when there are none. */
static int load_ignore(const char *ctx, const char *const *pats, asbi_ignore **out) {
  *out = NULL;
  asbi_buf path = ASBI_BUF_INIT, text = ASBI_BUF_INIT;
  asbi_buf_printf(&path, "%s/.dockerignore", ctx);
  if (!path.data) return asbi_oom();
  struct stat st;
  int have_file = stat(path.data, &st) == 0;
  if (!have_file && !(pats && *pats)) {
    asbi_buf_free(&path);
    return ASB_OK;
  }
  asbi_ignore *ig = asbi_ignore_new();
  int rc = ig ? ASB_OK : asbi_oom();
  char why[600];
  for (const char *const *p = pats; !rc && p && *p; p++)
    if (asbi_ignore_add(ig, *p, why, sizeof why))
      rc = asbi_err(ASB_EINVAL, "template.build_steps: ignore pattern: %s", why);
  if (!rc && have_file) {
    if (asbi_buf_read_file(&text, path.data, 1u << 20))
      rc = asbi_err(ASB_EINVAL, "template.build_steps: cannot read %s (at most 1 MiB)", path.data);
    else if (asbi_ignore_add_text(ig, text.data ? text.data : "", text.len, why, sizeof why))
      rc = asbi_err(ASB_EINVAL, "template.build_steps: %s: %s", path.data, why);
  }
  asbi_buf_free(&path);
  asbi_buf_free(&text);
  if (rc) {
    asbi_ignore_free(ig);
    return rc;
  }
  *out = ig;
  return ASB_OK;
}

/* Where COPY sources are: dir, else the current directory (into cwd). */
static const char *context_of(const char *dir, char cwd[4096]) {
  return dir && *dir ? dir : getcwd(cwd, 4096) ? cwd : ".";
}

/* GET /templates/{id}/files/{hash}: *present, and *url (allocated) when the
 * engine gave one. */
static int files_link(const call_ctx *x, const char *tid, const char *hash, int *present,
                      char **url) {
  *present = 0;
  *url = NULL;
  asbi_buf p = ASBI_BUF_INIT;
  cJSON *reply = NULL;
  int rc = path_of(&p, "/templates/", tid, "/files/", hash, NULL);
  if (!rc) rc = request(x, "GET", p.data, NULL, ASBI_CP_IDEMPOTENT, "template files", &reply);
  asbi_buf_free(&p);
  const char *u = NULL;
  if (!rc) {
    asbi_pj_get_bool(reply, "present", present);
    asbi_pj_get_str(reply, "url", &u);
    if (u && !(*url = asbi_strdup(u))) rc = asbi_oom();
  }
  cJSON_Delete(reply);
  return rc;
}

/* One COPY step (steps[idx], E2B's number idx + 1): its files' hash, then
 * the upload unless the engine has them; fills its filesHash. */
static int upload_copy(const call_ctx *x, cJSON *st, int idx, const char *ctx, const char *tid,
                       const asb_template_steps_options *o, const asbi_ignore *ig) {
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(st, "args");
  const cJSON *src = cJSON_GetArrayItem(args, 0);
  const cJSON *res = cJSON_GetArrayItem(args, 4);
  if (!cJSON_IsString(src))
    return asbi_err(ASB_EINVAL, "steps[%d] (COPY): args are [src, dest, user?, mode?]", idx);
  if (cJSON_GetObjectItemCaseSensitive(st, "filesHash")) return ASB_OK;
  asbi_buf tar;
  asbi_buf_init(&tar, UPLOAD_MAX);
  char hash[65];
  int resolve = cJSON_IsString(res) && !strcmp(res->valuestring, "true");
  int rc = pack_copy(ctx, src->valuestring, resolve, ig, &tar, hash);
  if (rc) {
    asbi_buf_free(&tar);
    asbi_err_prefix("steps[%d] (COPY)", idx);
    return rc;
  }
  /* E2B's SDKs send [src, dest, user, mode]; the 5th was only for us. */
  if (cJSON_GetArraySize(args) > 4) cJSON_DeleteItemFromArray((cJSON *)args, 4);
  char *url = NULL;
  int present = 0;
  rc = files_link(x, tid, hash, &present, &url);
  if (!rc && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "forceUpload"))) present = 0;
  if (!rc && !present && !url) rc = asbi_err(ASB_EPROTOCOL, "template files: no upload URL");
  if (!rc && !present) rc = upload(x, url, &tar);
  if (!rc)
    rc = present ? note(o, "Skipping upload of '%s', already cached", src->valuestring)
                 : note(o, "Uploaded '%s'", src->valuestring);
  free(url);
  asbi_buf_free(&tar);
  if (!rc && !cJSON_AddStringToObject(st, "filesHash", hash)) rc = asbi_oom();
  cJSON_DeleteItemFromObjectCaseSensitive(st, "forceUpload");
  return rc;
}

/* Uploads each COPY step's files (filling its filesHash) unless the engine
 * has them. */
static int upload_copies(const call_ctx *x, cJSON *steps, const char *ctx, const char *tid,
                         const asb_template_steps_options *o, const asbi_ignore *ig) {
  int idx = 0;
  cJSON *st;
  cJSON_ArrayForEach(st, steps) {
    const char *ty = NULL;
    asbi_pj_get_str(st, "type", &ty);
    if (ty && !strcmp(ty, "COPY")) {
      int rc = upload_copy(x, st, idx, ctx, tid, o, ig);
      if (rc) return rc;
    }
    idx++;
  }
  return ASB_OK;
}

/* POST /v3/templates: a new build of name, into *out. */
static int request_build(const call_ctx *x, const char *name, const char *const *tags, int cpu,
                         int mem, asb_template_build **out) {
  *out = NULL;
  int rc = ASB_OK;
  cJSON *req = cJSON_CreateObject(), *reply = NULL;
  if (!req || !cJSON_AddStringToObject(req, "name", name)) rc = asbi_oom();
  if (!rc && tags) {
    cJSON *ta = cJSON_AddArrayToObject(req, "tags");
    for (const char *const *t = tags; ta && *t; t++)
      cJSON_AddItemToArray(ta, cJSON_CreateString(*t));
    if (!ta) rc = asbi_oom();
  }
  if (!rc && cpu) cJSON_AddNumberToObject(req, "cpuCount", cpu);
  if (!rc && mem) cJSON_AddNumberToObject(req, "memoryMB", mem);
  if (!rc) rc = request(x, "POST", "/v3/templates", req, 0, "template.request_build", &reply);
  cJSON_Delete(req);
  if (rc) {
    asb_error *e = (asb_error *)asb_error_last();
    if (e->http_status == 404 || e->http_status == 405) {
      e->code = rc = ASB_EUNSUPPORTED;
      asbi_err_prefix("the engine at %s has no template builder API", asb_client_api_url(x->c));
    }
    return rc;
  }
  const char *tid = NULL, *bid = NULL;
  asbi_pj_get_str(reply, "templateID", &tid);
  asbi_pj_get_str(reply, "buildID", &bid);
  asb_template_build *b = tid && bid ? build_new(tid, bid) : NULL;
  if (!b) {
    cJSON_Delete(reply);
    return tid && bid ? asbi_oom()
                      : asbi_err(ASB_EPROTOCOL, "template: malformed /v3/templates reply");
  }
  const cJSON *rt = cJSON_GetObjectItemCaseSensitive(reply, "tags"), *t;
  int nt = cJSON_IsArray(rt) ? cJSON_GetArraySize(rt) : 0;
  if (nt > 0 && !(b->tags = calloc((size_t)nt, sizeof *b->tags))) rc = asbi_oom();
  cJSON_ArrayForEach(t, rt) {
    if (rc || !cJSON_IsString(t)) continue;
    if (!(b->tags[b->ntags] = asbi_strdup(t->valuestring)))
      rc = asbi_oom();
    else
      b->ntags++;
  }
  cJSON_Delete(reply);
  if (rc) {
    asb_template_build_free(b);
    return rc;
  }
  *out = b;
  return ASB_OK;
}

/* POST /v2/templates/{id}/builds/{buildID} with spec. */
static int trigger_build(const call_ctx *x, const char *tid, const char *bid, const cJSON *spec) {
  asbi_buf p = ASBI_BUF_INIT;
  int rc = path_of(&p, "/v2/templates/", tid, "/builds/", bid, NULL);
  if (!rc) rc = request(x, "POST", p.data, spec, 0, "template build", NULL);
  asbi_buf_free(&p);
  return rc;
}

static void nap(const call_ctx *x, long ms) {
  long left = left_ms(x);
  if (x->deadline && left < ms) ms = left;
  for (long done = 0;
       done < ms && !asbi_cancel_requested(x->cancel) && !asbi_cancel_requested(x->c->life.stop);
       done += 20) {
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
  }
}

static int fetch_status(const call_ctx *x, asb_template_build *b, size_t offset, size_t *added) {
  asbi_buf p = ASBI_BUF_INIT;
  char tail[64];
  snprintf(tail, sizeof tail, "/status?logsOffset=%zu", offset);
  int rc = path_of(&p, "/templates/", b->template_id, "/builds/", b->build_id, tail);
  cJSON *reply = NULL;
  if (!rc)
    rc = request(x, "GET", p.data, NULL, ASBI_CP_IDEMPOTENT, "template build status", &reply);
  asbi_buf_free(&p);
  if (!rc) rc = take_status(b, reply, added);
  cJSON_Delete(reply);
  return rc;
}

static int follow(const call_ctx *x, asb_template_build *b, const asb_template_steps_options *o) {
  for (;;) {
    size_t before = b->n, added = 0;
    int rc = fetch_status(x, b, before, &added);
    if (rc) return rc;
    for (size_t i = before; o->on_log && i < b->n; i++) {
      int r = o->on_log(b->lines[i].ts, b->lines[i].level, b->lines[i].message, o->userdata);
      if (r) return asbi_err(r < 0 ? r : ASB_EUSER, "template build: the log callback stopped it");
    }
    int done = !strcmp(b->status, "ready") || !strcmp(b->status, "error");
    if (done && added == 0) break;
    if (done) continue; /* the rest of the log, 100 lines a call */
    if (asbi_cancel_requested(x->cancel) || asbi_cancel_requested(x->c->life.stop))
      return asbi_err(ASB_ECANCELED, "template build: canceled (the engine goes on building)");
    if (x->deadline && asbi_now_ms() >= x->deadline)
      return asbi_err(ASB_ETIMEOUT, "template build: still %s when the timeout passed", b->status);
    nap(x, POLL_MS);
  }
  if (!strcmp(b->status, "error"))
    return asbi_err(ASB_EBUILD, "%s", b->error ? b->error : "the build failed");
  return ASB_OK;
}

int asb_templates_build_steps(asb_template_build **out, asb_client *c, const char *name,
                              const char *build_json, const asb_template_steps_options *o) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !name || !*name || !build_json || !out)
    return asbi_err(ASB_EINVAL, "template.build_steps: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_TEMPLATE_STEPS_OPTIONS_VERSION, "asb_template_steps_options");
  asb_template_steps_options dflt = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  if (!o) o = &dflt;
  cJSON *spec = cJSON_Parse(build_json);
  if (!cJSON_IsObject(spec)) {
    cJSON_Delete(spec);
    return asbi_err(ASB_EINVAL, "template.build_steps: build_json is not a JSON object");
  }
  cJSON *steps = cJSON_GetObjectItemCaseSensitive(spec, "steps");
  if (steps && !cJSON_IsArray(steps)) {
    cJSON_Delete(spec);
    return asbi_err(ASB_EINVAL, "template.build_steps: steps must be a list");
  }
  long tmo = o->timeout_ms ? (o->timeout_ms < 0 ? 0 : o->timeout_ms) : DEFAULT_TIMEOUT_MS;
  call_ctx x = {c, o->cancel, tmo ? asbi_now_ms() + (uint64_t)tmo : 0};
  char cwd[4096];
  const char *ctx = context_of(o->context_dir, cwd);
  int rc = ASB_OK;
  if (o->skip_cache) {
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "force");
    if (!cJSON_AddTrueToObject(spec, "force")) rc = asbi_oom();
  }
  /* The name and its build id, the files, then the build. */
  asb_template_build *b = NULL;
  if (!rc) rc = request_build(&x, name, o->tags, o->cpu_count, o->memory_mb, &b);
  if (rc) {
    cJSON_Delete(spec);
    return rc;
  }
  rc = note(o, "Template created with ID: %s, Build ID: %s", b->template_id, b->build_id);
  asbi_ignore *ig = NULL;
  if (!rc && steps) rc = load_ignore(ctx, ASBI_OPT(o, 2, ignore_patterns, NULL), &ig);
  if (!rc && steps) rc = upload_copies(&x, steps, ctx, b->template_id, o, ig);
  asbi_ignore_free(ig);
  if (!rc) rc = note(o, "Starting building...");
  if (!rc) rc = trigger_build(&x, b->template_id, b->build_id, spec);
  cJSON_Delete(spec);
  int started = !rc;
  if (!rc && o->background) {
    rc = set_str(&b->status, "building");
  } else if (!rc) {
    rc = follow(&x, b, o);
  }
  /* Once started, the caller gets the build whatever happens next: its ids
   * let it follow the status after a timeout, cancel or callback stop. */
  if (rc && !started) {
    asb_template_build_free(b);
    return rc;
  }
  *out = b;
  return rc;
}

/* ---- the steps, one call each ---------------------------------------------------- */

static call_ctx ctx_of(asb_client *c, long timeout_ms, asb_cancel *cancel) {
  long tmo = asbi_client_timeout(c, timeout_ms);
  call_ctx x = {c, cancel, tmo > 0 ? asbi_now_ms() + (uint64_t)tmo : 0};
  return x;
}

int asb_templates_request_build(asb_template_build **out, asb_client *c, const char *name,
                                const asb_template_request_options *o) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !name || !*name || !out)
    return asbi_err(ASB_EINVAL, "template.request_build: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_TEMPLATE_REQUEST_OPTIONS_VERSION, "asb_template_request_options");
  asb_template_request_options dflt = ASB_TEMPLATE_REQUEST_OPTIONS_INIT;
  if (!o) o = &dflt;
  call_ctx x = ctx_of(c, o->timeout_ms, o->cancel);
  return request_build(&x, name, o->tags, o->cpu_count, o->memory_mb, out);
}

/* The tar of src under opts' context directory and rules, and its hash. */
static int files_pack(const char *src, const asb_template_files_options *o, asbi_buf *tar,
                      char hash[65]) {
  char cwd[4096];
  const char *ctx = context_of(o->context_dir, cwd);
  asbi_ignore *ig = NULL;
  int rc = load_ignore(ctx, o->ignore_patterns, &ig);
  if (!rc) rc = pack_copy(ctx, src, o->resolve_symlinks != 0, ig, tar, hash);
  asbi_ignore_free(ig);
  return rc;
}

static int hash_out(char **hash, const char hex[65]) {
  if (!hash) return ASB_OK;
  return (*hash = asbi_strdup(hex)) ? ASB_OK : asbi_oom();
}

int asb_templates_files_hash(char **hash, const char *src, const asb_template_files_options *o) {
  if (hash) *hash = NULL;
  if (!hash || !src) return asbi_err(ASB_EINVAL, "template.files_hash: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_TEMPLATE_FILES_OPTIONS_VERSION, "asb_template_files_options");
  asb_template_files_options dflt = ASB_TEMPLATE_FILES_OPTIONS_INIT;
  if (!o) o = &dflt;
  if (asbi_cancel_requested(o->cancel))
    return asbi_err(ASB_ECANCELED, "template.files_hash: canceled");
  asbi_buf tar;
  asbi_buf_init(&tar, UPLOAD_MAX);
  char hex[65];
  int rc = files_pack(src, o, &tar, hex);
  asbi_buf_free(&tar);
  return rc ? rc : hash_out(hash, hex);
}

int asb_templates_files_link(int *present, char **url, asb_client *c, const char *tid,
                             const char *hash, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (present) *present = 0;
  if (url) *url = NULL;
  if (!present || !url || !c || !tid || !*tid || !hash || !*hash)
    return asbi_err(ASB_EINVAL, "template.files_link: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  call_ctx x = ctx_of(c, call ? call->timeout_ms : 0, call ? call->cancel : NULL);
  return files_link(&x, tid, hash, present, url);
}

int asb_templates_files_upload(char **hash, asb_client *c, const char *url, const char *src,
                               const asb_template_files_options *o) {
  ASBI_CLIENT_CALL(c);
  if (hash) *hash = NULL;
  if (!c || !url || !*url || !src)
    return asbi_err(ASB_EINVAL, "template.files_upload: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_TEMPLATE_FILES_OPTIONS_VERSION, "asb_template_files_options");
  asb_template_files_options dflt = ASB_TEMPLATE_FILES_OPTIONS_INIT;
  if (!o) o = &dflt;
  call_ctx x = ctx_of(c, o->timeout_ms, o->cancel);
  asbi_buf tar;
  asbi_buf_init(&tar, UPLOAD_MAX);
  char hex[65];
  int rc = files_pack(src, o, &tar, hex);
  if (!rc) rc = upload(&x, url, &tar);
  asbi_buf_free(&tar);
  return rc ? rc : hash_out(hash, hex);
}

int asb_templates_trigger_build(asb_client *c, const char *tid, const char *bid,
                                const char *build_json, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (!c || !tid || !*tid || !bid || !*bid || !build_json)
    return asbi_err(ASB_EINVAL, "template.trigger_build: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  cJSON *spec = cJSON_Parse(build_json);
  int rc = cJSON_IsObject(spec)
               ? ASB_OK
               : asbi_err(ASB_EINVAL, "template.trigger_build: build_json is not a JSON object");
  call_ctx x = ctx_of(c, call ? call->timeout_ms : 0, call ? call->cancel : NULL);
  if (!rc) rc = trigger_build(&x, tid, bid, spec);
  cJSON_Delete(spec);
  return rc;
}

int asb_templates_build_status(asb_template_build **out, asb_client *c, const char *tid,
                               const char *bid, int logs_offset, const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (out) *out = NULL;
  if (!c || !tid || !*tid || !bid || !*bid || !out || logs_offset < 0)
    return asbi_err(ASB_EINVAL, "template.build_status: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  long tmo = asbi_client_timeout(c, call ? call->timeout_ms : 0);
  call_ctx x = {c, call ? call->cancel : NULL, tmo > 0 ? asbi_now_ms() + (uint64_t)tmo : 0};
  asb_template_build *b = build_new(tid, bid);
  if (!b) return asbi_oom();
  size_t added = 0;
  int rc = fetch_status(&x, b, (size_t)logs_offset, &added);
  if (rc) {
    asb_template_build_free(b);
    return rc;
  }
  *out = b;
  return ASB_OK;
}

int asb_templates_alias_exists(int *exists, asb_client *c, const char *alias,
                               const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (exists) *exists = 0;
  if (!c || !alias || !*alias || !exists)
    return asbi_err(ASB_EINVAL, "template.alias_exists: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf p = ASBI_BUF_INIT;
  int rc = path_of(&p, "/templates/aliases/", alias, NULL, NULL, NULL);
  int status = 0;
  static const int ok[] = {200, 404, 0};
  if (!rc)
    rc = asbi_cp_request_raw(c, "GET", p.data, NULL, 0, NULL,
                             asbi_client_timeout(c, call ? call->timeout_ms : 0),
                             call ? call->cancel : NULL, c->life.stop, ASBI_CP_IDEMPOTENT,
                             "template.alias_exists", ok, &status, NULL, NULL);
  asbi_buf_free(&p);
  if (!rc) *exists = status == 200;
  return rc;
}

static int tags_call(asb_client *c, const char *method, const char *key, const char *target,
                     const char *const *tags, const asb_call_options *call, const char *what) {
  ASBI_CLIENT_CALL(c);
  if (!c || !target || !*target || !tags || !*tags)
    return asbi_err(ASB_EINVAL, "%s: bad arguments", what);
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  long tmo = asbi_client_timeout(c, call ? call->timeout_ms : 0);
  call_ctx x = {c, call ? call->cancel : NULL, tmo > 0 ? asbi_now_ms() + (uint64_t)tmo : 0};
  cJSON *req = cJSON_CreateObject();
  cJSON *arr =
      req && cJSON_AddStringToObject(req, key, target) ? cJSON_AddArrayToObject(req, "tags") : NULL;
  for (const char *const *t = tags; arr && *t; t++)
    cJSON_AddItemToArray(arr, cJSON_CreateString(*t));
  int rc = arr ? request(&x, method, "/templates/tags", req, 0, what, NULL) : asbi_oom();
  cJSON_Delete(req);
  return rc;
}

int asb_templates_tags_assign(asb_client *c, const char *target, const char *const *tags,
                              const asb_call_options *call) {
  return tags_call(c, "POST", "target", target, tags, call, "template.tags_assign");
}

int asb_templates_tags_remove(asb_client *c, const char *name, const char *const *tags,
                              const asb_call_options *call) {
  return tags_call(c, "DELETE", "name", name, tags, call, "template.tags_remove");
}

int asb_templates_tags_list(char **json, asb_client *c, const char *tid,
                            const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (json) *json = NULL;
  if (!c || !tid || !*tid || !json)
    return asbi_err(ASB_EINVAL, "template.tags_list: bad arguments");
  ASBI_CHECK_VERSION(call, ASB_CALL_OPTIONS_VERSION, "asb_call_options");
  asbi_buf p = ASBI_BUF_INIT;
  int rc = path_of(&p, "/templates/", tid, NULL, NULL, "/tags");
  cJSON *reply = NULL;
  if (!rc)
    rc = asbi_cp_request_raw(c, "GET", p.data, NULL, 0, NULL,
                             asbi_client_timeout(c, call ? call->timeout_ms : 0),
                             call ? call->cancel : NULL, c->life.stop, ASBI_CP_IDEMPOTENT,
                             "template.tags_list", NULL, NULL, &reply, NULL);
  asbi_buf_free(&p);
  if (rc) return rc;
  if (!cJSON_IsArray(reply)) {
    cJSON_Delete(reply);
    return asbi_err(ASB_EPROTOCOL, "template.tags_list: malformed reply");
  }
  asbi_buf b = ASBI_BUF_INIT;
  rc = asbi_json_print(reply, &b) ? asbi_oom() : ASB_OK;
  cJSON_Delete(reply);
  if (!rc) *json = asbi_buf_detach(&b, NULL);
  asbi_buf_free(&b);
  return rc;
}
