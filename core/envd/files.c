/* envd: GET /files (download) and POST /files (upload), streamed to and
 * from disk so memory stays flat for any size: downloads go out through
 * sendfile (or a deflate stream for gzip), uploads are written chunk by
 * chunk as they arrive (raw octet-stream or multipart, optionally gzip
 * Content-Encoding). Downloads run with the user's filesystem
 * credentials; uploads, as in E2B's envd, as root with what they create
 * chowned to the user (open_target). SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "auth.h"
#include "entry.h"
#include "files.h"
#include "hdrval.h"
#include "path.h"
#include "proto/multipart.h"
#include "rpc.h"
#include "state.h"
#include "util/util.h"

#define XATTR_PREFIX "user.e2b."
#define MAX_MD_TOTAL 4096
#define SMALL_FILE (256u * 1024u)

/* Common prologue: signature/token, user, path. Returns the resolved path
 * or NULL with *resp set. */
static char *files_prologue(envd_hreq *r, const char *op, struct MHD_Response **resp,
                            unsigned *status) {
  const char *path = envd_arg(r, "path");
  char msg[256];
  if (envd_check_signing(r, path, op, msg, sizeof msg) != 0) {
    *status = 401;
    *resp = asbi_httpd_json_error(401, "%s", msg);
    return NULL;
  }
  const char *uname = envd_arg(r, "username");
  char *dflt = NULL;
  if (!uname) {
    dflt = envd_default_user();
    uname = dflt;
  }
  if (asbi_empty(uname)) {
    free(dflt);
    *status = 400;
    *resp = asbi_httpd_json_error(400, "username not provided");
    return NULL;
  }
  if (envd_user_lookup(uname, &r->user) != 0) {
    *status = 401;
    *resp = asbi_httpd_json_error(401, "error looking up user '%s': user: unknown user %s", uname,
                                  uname);
    free(dflt);
    return NULL;
  }
  free(dflt);
  r->have_user = 1;
  const char *perr = NULL;
  char *rp = envd_resolve_path(path ? path : "", &r->user, &perr);
  if (!rp) {
    *status = 400;
    *resp = asbi_httpd_json_error(400,
                                  "error expanding and resolving path '%s': failed to expand path "
                                  "'%s' for user '%s': %s",
                                  path, path, r->user.name, perr);
  }
  return rp;
}

/* ---- download ---------------------------------------------------------- */

typedef struct gzsrc {
  int fd;
  z_stream z;
  int eof;
  int done;
  unsigned char in[128 * 1024];
} gzsrc;

static ssize_t gz_read(void *cls, uint64_t pos, char *buf, size_t max) {
  gzsrc *g = cls;
  (void)pos;
  if (g->done) return MHD_CONTENT_READER_END_OF_STREAM;
  g->z.next_out = (unsigned char *)buf;
  g->z.avail_out = (uInt)(max > (1u << 30) ? (1u << 30) : max);
  while (g->z.avail_out == (uInt)max || g->z.avail_out > 0) {
    if (g->z.avail_in == 0 && !g->eof) {
      ssize_t n = read(g->fd, g->in, sizeof g->in);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
      if (n == 0) g->eof = 1;
      g->z.next_in = g->in;
      g->z.avail_in = (uInt)n;
    }
    int rc = deflate(&g->z, g->eof ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      g->done = 1;
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (g->z.avail_out < max) break; /* produced something */
  }
  size_t n = max - g->z.avail_out;
  if (n == 0 && g->done) return MHD_CONTENT_READER_END_OF_STREAM;
  return (ssize_t)n;
}

static void gz_free(void *cls) {
  gzsrc *g = cls;
  deflateEnd(&g->z);
  close(g->fd);
  free(g);
}

struct MHD_Response *envd_files_get(envd_hreq *r, unsigned *status) {
  struct MHD_Response *resp = NULL;
  char *path = files_prologue(r, "read", &resp, status);
  if (!path) return resp;
  if (envd_creds_enter(&r->user) != 0) {
    *status = 403;
    resp = asbi_httpd_json_error(403, "cannot act as user '%s'", r->user.name);
    free(path);
    return resp;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  int err = errno;
  envd_creds_leave();
  char m[128];
  if (fd < 0) {
    envd_errno_text(err, m, sizeof m);
    *status = envd_errno_status(err);
    if (err == ENOENT)
      resp = asbi_httpd_json_error(404, "path '%s' does not exist", path);
    else
      resp = asbi_httpd_json_error(*status, "error opening file '%s': open %s: %s", path, path, m);
    free(path);
    return resp;
  }
  struct stat st;
  fstat(fd, &st);
  if (S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
    close(fd);
    *status = 400;
    resp = asbi_httpd_json_error(
        400, S_ISDIR(st.st_mode) ? "path '%s' is a directory" : "path '%s' is not a regular file",
        path);
    free(path);
    return resp;
  }
  int fl = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  int enc = envd_hdrval_encoding(envd_hdr(r, "Accept-Encoding"));
  const char *range = envd_hdr(r, "Range");
  if (range && enc == 1) enc = 0;
  if (enc < 0) {
    close(fd);
    *status = 406;
    resp = asbi_httpd_json_error(406,
                                 "error parsing Accept-Encoding: no acceptable encoding found, "
                                 "supported: [gzip]");
    free(path);
    return resp;
  }
  char lm[64];
  struct tm tm;
  gmtime_r(&st.st_mtim.tv_sec, &tm);
  strftime(lm, sizeof lm, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (enc == 1) {
    gzsrc *g = calloc(1, sizeof *g);
    if (!g || deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                           Z_DEFAULT_STRATEGY) != Z_OK) {
      free(g);
      close(fd);
      free(path);
      return NULL;
    }
    g->fd = fd;
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, gz_read, g, gz_free);
    if (!resp) {
      gz_free(g);
      free(path);
      return NULL;
    }
    MHD_add_response_header(resp, "Content-Encoding", "gzip");
    *status = 200;
  } else {
    uint64_t off = 0, len = (uint64_t)st.st_size;
    *status = 200;
    int partial = 0;
    int rr = envd_hdrval_range(range, len, &off, &len);
    if (rr < 0) {
      close(fd);
      *status = 416;
      resp = envd_resp_buf("text/plain; charset=utf-8", "invalid range: failed to overlap\n", 33);
      char cr[64];
      snprintf(cr, sizeof cr, "bytes */%llu", (unsigned long long)len);
      if (resp) MHD_add_response_header(resp, "Content-Range", cr);
      free(path);
      return resp;
    }
    if (rr > 0) {
      partial = 1;
      *status = 206;
    }
    if (len <= SMALL_FILE) {
      /* Small files go out in one write with the headers: no sendfile
       * round trip (and no header/body segment split on the wire). */
      char *mem = malloc(len ? len : 1);
      size_t got = 0;
      while (mem && got < len) {
        ssize_t n = pread(fd, mem + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
      }
      close(fd);
      if (!mem) {
        free(path);
        return NULL;
      }
      resp = MHD_create_response_from_buffer(got, mem, MHD_RESPMEM_MUST_FREE);
    } else {
      resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
      if (!resp) close(fd);
    }
    if (!resp) {
      free(path);
      return NULL;
    }
    if (partial) {
      char cr[96];
      snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu", (unsigned long long)off,
               (unsigned long long)(off + len - 1), (unsigned long long)st.st_size);
      MHD_add_response_header(resp, "Content-Range", cr);
    }
    MHD_add_response_header(resp, "Accept-Ranges", "bytes");
  }
  MHD_add_response_header(resp, "Content-Type", envd_hdrval_mime(path));
  MHD_add_response_header(resp, "Vary", "Accept-Encoding");
  MHD_add_response_header(resp, "Last-Modified", lm);
  asbi_buf cd = ASBI_BUF_INIT;
  envd_hdrval_disposition(path, &cd);
  if (cd.data) MHD_add_response_header(resp, "Content-Disposition", cd.data);
  asbi_buf_free(&cd);
  free(path);
  return resp;
}

/* ---- upload ------------------------------------------------------------ */

typedef struct md_kv {
  char key[256];
  char *value;
} md_kv;

typedef struct upl {
  int raw;
  asbi_mp_parser *mp;
  int gz;
  z_stream z;
  int gz_end;
  char *path_param;
  char *raw_path;
  int fd;
  uint64_t written; /* bytes written to the current file */
  char *cur;
  int skip;
  cJSON *results;
  unsigned st;
  char msg[768];
  int failed;
  md_kv *md;
  size_t nmd;
  envd_hreq *r;
} upl;

static void upl_fail(upl *u, unsigned st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void upl_fail(upl *u, unsigned st, const char *fmt, ...) {
  if (u->failed) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(u->msg, sizeof u->msg, fmt, ap);
  va_end(ap);
  u->st = st;
  u->failed = 1;
}

static void upl_free(envd_hreq *r) {
  upl *u = r->state;
  if (!u) return;
  if (u->fd >= 0) close(u->fd);
  if (u->mp) asbi_mp_parser_free(u->mp);
  if (u->gz) inflateEnd(&u->z);
  free(u->path_param);
  free(u->raw_path);
  free(u->cur);
  cJSON_Delete(u->results);
  for (size_t i = 0; i < u->nmd; i++) free(u->md[i].value);
  free(u->md);
  free(u);
  r->state = NULL;
}

/* Opens the target for writing, as E2B's envd does: as root, missing
 * parents made and chowned to the user, the file (new or existing) chowned
 * to the user (entry.c). 0 or -1 (failed set). */
static int open_target(upl *u, const char *path) {
  char *parent = envd_path_join(path, "..");
  char m[128];
  const envd_user *usr = &u->r->user;
  if (envd_mkdirs_owned(parent, usr) != 0) {
    int err = errno;
    envd_errno_text(err, m, sizeof m);
    upl_fail(u, err == ENOTDIR ? 400 : envd_errno_status(err), "error ensuring directories: %s: %s",
             parent, m);
    free(parent);
    return -1;
  }
  free(parent);
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    upl_fail(u, 400, "path is a directory: %s", path);
    return -1;
  }
  /* Not O_TRUNC: the file is overwritten in place and cut to the new
   * length when the upload completes, so rewriting a file of the same size
   * does not free and reallocate its blocks. */
  u->fd = envd_open_owned(path, usr);
  u->written = 0;
  if (u->fd < 0) {
    int err = errno;
    envd_errno_text(err, m, sizeof m);
    if (err == ENOSPC)
      upl_fail(u, 507, "not enough inodes available: open %s: %s", path, m);
    else
      upl_fail(u, envd_errno_status(err), "error opening file: open %s: %s", path, m);
    return -1;
  }
  return 0;
}

static int write_out(upl *u, const char *d, size_t n) {
  while (n) {
    ssize_t w = write(u->fd, d, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = w < 0 ? errno : EIO;
      char m[128];
      envd_errno_text(err, m, sizeof m);
      if (err == ENOSPC || err == EDQUOT)
        upl_fail(u, 507, "not enough disk space available");
      else
        upl_fail(u, envd_errno_status(err), "error writing file: %s", m);
      return -1;
    }
    d += w;
    n -= (size_t)w;
    u->written += (uint64_t)w;
  }
  return 0;
}

/* Applies X-Metadata-* to the open file and closes it; adds the result. */
static int finish_file(upl *u, const char *path) {
  struct stat st;
  if (fstat(u->fd, &st) == 0 && (uint64_t)st.st_size != u->written &&
      ftruncate(u->fd, (off_t)u->written) != 0) {
    upl_fail(u, envd_errno_status(errno), "error writing file: %s", strerror(errno));
    return -1;
  }
  char names[8192];
  ssize_t nl = flistxattr(u->fd, names, sizeof names);
  for (ssize_t i = 0; i < nl;) {
    const char *nm = names + i;
    i += (ssize_t)strlen(nm) + 1;
    if (strncmp(nm, XATTR_PREFIX, sizeof XATTR_PREFIX - 1) != 0) continue;
    int keep = 0;
    for (size_t k = 0; k < u->nmd; k++)
      if (strcmp(u->md[k].key, nm + sizeof XATTR_PREFIX - 1) == 0) keep = 1;
    if (!keep) fremovexattr(u->fd, nm);
  }
  for (size_t k = 0; k < u->nmd; k++) {
    char nm[300];
    snprintf(nm, sizeof nm, XATTR_PREFIX "%s", u->md[k].key);
    if (fsetxattr(u->fd, nm, u->md[k].value, strlen(u->md[k].value), 0) != 0 && errno != ENOTSUP) {
      if (errno == ENOSPC || errno == EDQUOT)
        upl_fail(u, 507, "not enough space for file metadata");
      else
        upl_fail(u, 500, "error writing file metadata: %s", strerror(errno));
      return -1;
    }
  }
  if (close(u->fd) != 0 && (errno == ENOSPC || errno == EDQUOT)) {
    u->fd = -1;
    upl_fail(u, 507, "not enough disk space available");
    return -1;
  }
  u->fd = -1;
  cJSON *o = cJSON_CreateObject();
  if (u->nmd) {
    cJSON *md = cJSON_CreateObject();
    for (size_t k = 0; k < u->nmd; k++) cJSON_AddStringToObject(md, u->md[k].key, u->md[k].value);
    cJSON_AddItemToObject(o, "metadata", md);
  }
  const char *b = strrchr(path, '/');
  cJSON_AddStringToObject(o, "name", b ? b + 1 : path);
  cJSON_AddStringToObject(o, "path", path);
  cJSON_AddStringToObject(o, "type", "file");
  cJSON_AddItemToArray(u->results, o);
  return 0;
}

static int mp_begin(void *ud, const asbi_mp_part *part) {
  upl *u = ud;
  if (strcmp(part->name, "file") != 0) {
    u->skip = 1;
    return 0;
  }
  u->skip = 0;
  const char *want = u->path_param ? u->path_param : part->filename;
  if (!want) {
    upl_fail(u, 400,
             "error resolving path: error getting multipart custom "
             "part file name: filename not found in "
             "Content-Disposition header");
    return 1;
  }
  const char *perr = NULL;
  char *p = envd_resolve_path(want, &u->r->user, &perr);
  if (!p) {
    upl_fail(u, 400,
             "error resolving path: failed to expand path '%s' for "
             "user '%s': %s",
             want, u->r->user.name, perr);
    return 1;
  }
  cJSON *it;
  cJSON_ArrayForEach(it, u->results) {
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(it, "path");
    if (cJSON_IsString(pp) && strcmp(pp->valuestring, p) == 0) {
      upl_fail(u, 400,
               "you cannot upload multiple files to the same path "
               "'%s' in one upload request, only the first specified "
               "file was uploaded",
               p);
      free(p);
      return 1;
    }
  }
  free(u->cur);
  u->cur = p;
  return open_target(u, p) == 0 ? 0 : 1;
}

static int mp_data(void *ud, const char *d, size_t n) {
  upl *u = ud;
  if (u->skip) return 0;
  return write_out(u, d, n) == 0 ? 0 : 1;
}

static int mp_end(void *ud) {
  upl *u = ud;
  if (u->skip) return 0;
  return finish_file(u, u->cur) == 0 ? 0 : 1;
}

static void feed(upl *u, const char *d, size_t n) {
  if (u->failed || !n) return;
  if (u->raw) {
    write_out(u, d, n);
    return;
  }
  int rc = asbi_mp_parser_feed(u->mp, d, n);
  if (rc != 0 && !u->failed)
    upl_fail(u, rc == ASBI_MP_ENOMEM ? 500 : 400, "error reading form: %s", asbi_mp_strerror(rc));
}

static int upl_body(envd_hreq *r, const char *data, size_t len) {
  upl *u = r->state;
  if (u->failed) return 0;
  if (!u->gz) {
    feed(u, data, len);
    return 0;
  }
  char out[64 * 1024];
  u->z.next_in = (unsigned char *)data;
  u->z.avail_in = (uInt)len;
  while (!u->failed && (u->z.avail_in > 0 || u->z.avail_out == 0)) {
    if (u->gz_end) {
      if (u->z.avail_in)
        upl_fail(u, 400,
                 "error decompressing request body: "
                 "data after the gzip stream");
      break;
    }
    u->z.next_out = (unsigned char *)out;
    u->z.avail_out = sizeof out;
    int rc = inflate(&u->z, Z_NO_FLUSH);
    size_t got = sizeof out - u->z.avail_out;
    feed(u, out, got);
    if (rc == Z_STREAM_END) {
      u->gz_end = 1;
    } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && got == 0)) {
      upl_fail(u, 400, "error decompressing request body: %s",
               u->z.msg ? u->z.msg : "invalid gzip data");
    }
    if (got == 0 && u->z.avail_in == 0) break;
  }
  return 0;
}

static struct MHD_Response *upl_done(envd_hreq *r, unsigned *status) {
  upl *u = r->state;
  if (!u->failed && u->gz && !u->gz_end)
    upl_fail(u, 400, "error decompressing request body: unexpected EOF");
  if (!u->failed) {
    if (u->raw) {
      finish_file(u, u->raw_path);
    } else {
      int rc = asbi_mp_parser_finish(u->mp);
      if (rc != 0) upl_fail(u, 500, "error reading form: %s", asbi_mp_strerror(rc));
    }
  }
  if (u->failed) {
    *status = u->st;
    return asbi_httpd_json_error(u->st, "%s", u->msg);
  }
  char *j = cJSON_PrintUnformatted(u->results);
  *status = 200;
  struct MHD_Response *resp = envd_resp_buf("text/plain; charset=utf-8", j, strlen(j));
  free(j);
  return resp;
}

typedef struct md_scan {
  upl *u;
  size_t total;
  int bad;
  char why[160];
} md_scan;

static enum MHD_Result md_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value) {
  (void)kind;
  md_scan *s = cls;
  if (strncasecmp(key, "X-Metadata-", 11) != 0 || !value) return MHD_YES;
  const char *k = key + 11;
  size_t kl = strlen(k);
  if (kl == 0) return MHD_YES;
  if (kl > 255 - (sizeof XATTR_PREFIX - 1)) {
    s->bad = 1;
    snprintf(s->why, sizeof s->why, "metadata key \"%.40s\" is too long", k);
    return MHD_NO;
  }
  for (const char *c = value; *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) {
      s->bad = 1;
      snprintf(s->why, sizeof s->why,
               "metadata value for key \"%.40s\" contains non-printable-ASCII "
               "byte 0x%02x",
               k, (unsigned char)*c);
      return MHD_NO;
    }
  char lk[256];
  for (size_t i = 0; i <= kl; i++)
    lk[i] = (k[i] >= 'A' && k[i] <= 'Z') ? (char)(k[i] - 'A' + 'a') : k[i];
  upl *u = s->u;
  for (size_t i = 0; i < u->nmd; i++)
    if (strcmp(u->md[i].key, lk) == 0) return MHD_YES; /* first value wins */
  md_kv *n = realloc(u->md, (u->nmd + 1) * sizeof *n);
  if (!n) return MHD_NO;
  u->md = n;
  snprintf(u->md[u->nmd].key, sizeof u->md[u->nmd].key, "%s", lk);
  u->md[u->nmd].value = asbi_strdup(value);
  u->nmd++;
  s->total += (sizeof XATTR_PREFIX - 1) + kl + strlen(value);
  return MHD_YES;
}

struct MHD_Response *envd_files_post(envd_hreq *r, unsigned *status) {
  struct MHD_Response *resp = NULL;
  char *path = files_prologue(r, "write", &resp, status);
  if (!path && resp) return resp;
  upl *u = calloc(1, sizeof *u);
  if (!u) {
    free(path);
    return NULL;
  }
  u->fd = -1;
  u->r = r;
  u->results = cJSON_CreateArray();
  r->state = u;
  r->on_free = upl_free;
  const char *ce = envd_hdr(r, "Content-Encoding");
  if (!asbi_empty(ce) && strcasecmp(ce, "identity") != 0) {
    if (strcasecmp(ce, "gzip") != 0) {
      *status = 400;
      free(path);
      return asbi_httpd_json_error(400,
                                   "error decompressing request body: unsupported "
                                   "Content-Encoding: %s, supported: [gzip]",
                                   ce);
    }
    if (inflateInit2(&u->z, 15 + 16) != Z_OK) {
      free(path);
      return NULL;
    }
    u->gz = 1;
  }
  md_scan ms = {u, 0, 0, {0}};
  MHD_get_connection_values(r->conn, MHD_HEADER_KIND, md_iter, &ms);
  if (!ms.bad && ms.total > MAX_MD_TOTAL) {
    ms.bad = 1;
    snprintf(ms.why, sizeof ms.why, "total metadata size %zu exceeds %d bytes", ms.total,
             MAX_MD_TOTAL);
  }
  if (ms.bad) {
    *status = 400;
    free(path);
    return asbi_httpd_json_error(400, "invalid metadata: %s", ms.why);
  }
  const char *ct = envd_hdr(r, "Content-Type");
  if (ct && strncasecmp(ct, "application/octet-stream", 24) == 0) {
    u->raw = 1;
    if (!envd_arg(r, "path")) {
      *status = 400;
      free(path);
      return asbi_httpd_json_error(400, "path query parameter is required for raw body upload");
    }
    int rc = open_target(u, path);
    if (rc != 0) {
      *status = u->st;
      free(path);
      return asbi_httpd_json_error(u->st, "%s", u->msg);
    }
    u->raw_path = path;
  } else if (ct && strncasecmp(ct, "multipart/", 10) == 0) {
    static const asbi_mp_callbacks cb = {mp_begin, mp_data, mp_end};
    int rc = asbi_mp_parser_new(&u->mp, ct, &cb, u, 0);
    if (rc != 0) {
      *status = 500;
      free(path);
      return asbi_httpd_json_error(500, "error parsing multipart form: %s", asbi_mp_strerror(rc));
    }
    u->path_param = envd_arg(r, "path") ? path : NULL;
    if (!u->path_param) free(path);
  } else {
    *status = 400;
    free(path);
    return asbi_httpd_json_error(400,
                                 "unsupported content type: %s, expected multipart/form-data or "
                                 "application/octet-stream",
                                 ct ? ct : "");
  }
  /* Uploads run as root (E2B's envd writes as root and chowns to the
   * user: open_target), not with the user's credentials. */
  r->fs_creds = 0;
  r->on_body = upl_body;
  r->on_done = upl_done;
  return NULL;
}
