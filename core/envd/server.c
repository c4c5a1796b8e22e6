/* envd: HTTP plumbing on libmicrohttpd (one thread per connection, so
 * streaming bodies may block in their reader), routing, the access-token
 * check, and the Connect protocol (unary JSON, server streams, client
 * streams) around the service handlers. SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "http.h"
#include "proto/connect.h"
#include "proto/pjson.h"
#include "util/base64.h"
#include "util/connguard.h"
#include "util/util.h"

#define ENVD_HEAD_TIMEOUT_MS 30000u /* request line to the end of the head */
#define ENVD_MAX_CONNECTIONS 1000u

static struct MHD_Daemon *g_daemon;
static asbi_connguard *g_guard;

/* ---- small helpers ----------------------------------------------------- */

void envd_err_set(envd_err *e, const char *code, const char *fmt, ...) {
  va_list ap;
  e->code = code;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
}

const char *envd_errno_code(int err) {
  switch (err) {
  case ENOENT: return "not_found";
  case EACCES:
  case EPERM:
  case EROFS: return "permission_denied";
  case ENOSPC:
  case EDQUOT: return "resource_exhausted";
  case EEXIST: return "already_exists";
  case ENOTDIR:
  case EISDIR:
  case EINVAL:
  case ENAMETOOLONG:
  case ELOOP:
  case EXDEV:
  case ENOTEMPTY: return "invalid_argument";
  default: return "internal";
  }
}

const char *envd_hdr(envd_hreq *r, const char *name) {
  return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *envd_arg(envd_hreq *r, const char *name) {
  return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct MHD_Response *envd_resp_buf(const char *ctype, const void *data,
                                   size_t len) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      len, (void *)data, MHD_RESPMEM_MUST_COPY);
  if (resp && ctype) MHD_add_response_header(resp, "Content-Type", ctype);
  return resp;
}

struct MHD_Response *envd_resp_empty(void) {
  return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
}

/* JSON string literal of s (ASCII-safe enough for messages). */
static void json_str(asbi_buf *b, const char *s) {
  cJSON *j = cJSON_CreateString(s ? s : "");
  char *p = j ? cJSON_PrintUnformatted(j) : NULL;
  asbi_buf_puts(b, p ? p : "\"\"");
  free(p);
  cJSON_Delete(j);
}

struct MHD_Response *envd_resp_json_error(unsigned status, const char *fmt,
                                          ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "{\"code\":%u,\"message\":", status);
  json_str(&b, msg);
  asbi_buf_puts(&b, "}\n");
  struct MHD_Response *r =
      envd_resp_buf("application/json; charset=utf-8", b.data, b.len);
  if (r) MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  asbi_buf_free(&b);
  return r;
}

int envd_env_msg(asbi_buf *out, const char *json, size_t len) {
  return asbi_connect_encode(out, 0, json, len);
}

int envd_env_end(asbi_buf *out, const char *code, const char *msg) {
  asbi_buf j = ASBI_BUF_INIT;
  int rc = asbi_connect_end_json(&j, code, msg);
  if (rc == 0)
    rc = asbi_connect_encode(out, ASBI_CONNECT_FLAG_END_STREAM, j.data, j.len);
  asbi_buf_free(&j);
  return rc;
}

int envd_wait(int wake_fd, int sock, int timeout_ms) {
  struct pollfd p[2];
  int n = 0;
  if (wake_fd >= 0) p[n++] = (struct pollfd){wake_fd, POLLIN, 0};
  int si = -1;
  if (sock >= 0) {
    si = n;
    p[n++] = (struct pollfd){sock, POLLRDHUP, 0};
  }
  for (;;) {
    int rc = poll(p, (nfds_t)n, timeout_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return 0;
    if (si >= 0 && (p[si].revents & (POLLRDHUP | POLLHUP | POLLERR)))
      return -1;
    return 1;
  }
}

/* ---- auth -------------------------------------------------------------- */

static int token_ok(envd_hreq *r) {
  char *tok = envd_token();
  if (!tok) return 1;
  const char *h = envd_hdr(r, "X-Access-Token");
  int ok = h && envd_token_eq(h, tok);
  free(tok);
  return ok;
}

int envd_check_signing(envd_hreq *r, const char *path, const char *op,
                       char *msg, size_t n) {
  char *tok = envd_token();
  if (!tok) return 0;
  int rc = -1;
  const char *h = envd_hdr(r, "X-Access-Token");
  const char *sig = envd_arg(r, "signature");
  const char *exp = envd_arg(r, "signature_expiration");
  const char *user = envd_arg(r, "username");
  if (!asbi_empty(h)) {
    if (envd_token_eq(h, tok))
      rc = 0;
    else
      snprintf(msg, n, "access token present in header but does not match");
  } else if (!sig) {
    snprintf(msg, n, "missing signature query parameter");
  } else {
    int64_t e = 0;
    char expbuf[32];
    if (exp && asbi_parse_i64(exp, strlen(exp), &e) != 0) {
      snprintf(msg, n, "invalid signature_expiration");
    } else {
      if (exp) snprintf(expbuf, sizeof expbuf, "%lld", (long long)e);
      char want[80];
      envd_sign(path ? path : "", op, user ? user : "", tok,
                exp ? expbuf : NULL, want, sizeof want);
      if (!envd_token_eq(want, sig))
        snprintf(msg, n, "invalid signature");
      else if (exp && e < (int64_t)time(NULL))
        snprintf(msg, n, "signature is already expired");
      else
        rc = 0;
    }
  }
  free(tok);
  return rc;
}

/* Authorization: Basic base64("<user>:"). 0 = no usable header (default
 * user), 1 = name set, -1 = not a valid user name (never: any name is
 * looked up). */
static int basic_user(envd_hreq *r, char *name, size_t n) {
  const char *h = envd_hdr(r, "Authorization");
  if (!h || strncasecmp(h, "Basic ", 6) != 0) return 0;
  const char *b = h + 6;
  size_t bl = strlen(b);
  if (bl > 1024) return 0;
  char dec[1024];
  size_t dl = 0;
  if (asbi_b64_decode(b, bl, dec, &dl) != 0) return 0;
  dec[dl] = '\0';
  char *colon = memchr(dec, ':', dl);
  if (!colon) return 0;
  *colon = '\0';
  snprintf(name, n, "%s", dec);
  return 1;
}

/* ---- Connect RPC ------------------------------------------------------- */

typedef struct sresp {
  envd_stream *st;
  asbi_buf out;
  size_t off;
  int done;
  envd_user user;
  int creds;
  asbi_buf pre; /* a precomputed body (error-only streams) */
} sresp;

static ssize_t sresp_read(void *cls, uint64_t pos, char *buf, size_t max) {
  sresp *s = cls;
  (void)pos;
  while (s->off >= s->out.len) {
    if (s->done) return MHD_CONTENT_READER_END_OF_STREAM;
    asbi_buf_clear(&s->out);
    s->off = 0;
    if (!s->st) {
      s->done = 1;
      continue;
    }
    if (s->creds && envd_creds_enter(&s->user) != 0)
      return MHD_CONTENT_READER_END_WITH_ERROR;
    int rc = s->st->next(s->st, &s->out);
    if (s->creds) envd_creds_leave();
    if (rc < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (rc == 0) s->done = 1;
    if (s->out.cap > (1u << 20) && s->out.len == 0) asbi_buf_free(&s->out);
  }
  size_t n = s->out.len - s->off;
  if (n > max) n = max;
  memcpy(buf, s->out.data + s->off, n);
  s->off += n;
  return (ssize_t)n;
}

static void sresp_free(void *cls) {
  sresp *s = cls;
  if (s->st) s->st->destroy(s->st);
  asbi_buf_free(&s->out);
  free(s);
}

static struct MHD_Response *stream_response(envd_stream *st,
                                            const envd_user *u, int creds,
                                            const char *err_code,
                                            const char *err_msg) {
  sresp *s = calloc(1, sizeof *s);
  if (!s) {
    if (st) st->destroy(st);
    return NULL;
  }
  s->st = st;
  if (u) s->user = *u;
  s->creds = creds;
  if (!st) envd_env_end(&s->out, err_code, err_msg);
  struct MHD_Response *resp = MHD_create_response_from_callback(
      MHD_SIZE_UNKNOWN, 32 * 1024, sresp_read, s, sresp_free);
  if (!resp) {
    sresp_free(s);
    return NULL;
  }
  MHD_add_response_header(resp, "Content-Type", "application/connect+json");
  return resp;
}

static struct MHD_Response *unary_error(const char *code, const char *msg,
                                        unsigned *status) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_connect_error_json(&b, code, msg);
  *status = (unsigned)asbi_connect_code_to_http(code);
  struct MHD_Response *r = envd_resp_buf("application/json", b.data, b.len);
  asbi_buf_free(&b);
  return r;
}

/* Error in the protocol form of the method. */
static struct MHD_Response *rpc_error(envd_hreq *r, const char *code,
                                      const char *msg, unsigned *status) {
  if (r->rpc->kind == 0) return unary_error(code, msg, status);
  *status = 200;
  return stream_response(NULL, NULL, 0, code, msg);
}

static void call_init(envd_hreq *r, envd_call *c) {
  memset(c, 0, sizeof *c);
  c->user = &r->user;
  c->sock = r->sock;
  c->keepalive_s = 90;
  const char *ka = envd_hdr(r, "Keepalive-Ping-Interval");
  int64_t v;
  if (ka && asbi_parse_i64(ka, strlen(ka), &v) == 0 && v > 0 && v < 1000000)
    c->keepalive_s = (int)v;
  const char *to = envd_hdr(r, "Connect-Timeout-Ms");
  if (to && asbi_parse_i64(to, strlen(to), &v) == 0 && v > 0) c->timeout_ms = v;
}

typedef struct cs_state {
  envd_cstream *cs;
  asbi_connect_dec dec;
  envd_err err;
  int failed;
  int ended;
  int nmsg;
} cs_state;

static int cs_msg(void *ud, unsigned flags, const char *data, size_t len) {
  envd_hreq *r = ud;
  cs_state *s = r->state;
  if (flags & ASBI_CONNECT_FLAG_END_STREAM) {
    s->ended = 1;
    return 0;
  }
  const char *perr = NULL;
  cJSON *j = asbi_pj_parse(data, len, &perr);
  if (!j || !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    envd_err_set(&s->err, "invalid_argument", "unmarshal message: %s",
                 perr ? perr : "not a JSON object");
    return 1;
  }
  int rc = s->cs->message(s->cs, j, &s->err);
  cJSON_Delete(j);
  s->nmsg++;
  return rc ? 1 : 0;
}

static int rpc_cs_body(envd_hreq *r, const char *data, size_t len) {
  cs_state *s = r->state;
  if (s->failed) return 0;
  int rc = asbi_connect_dec_feed(&s->dec, data, len, cs_msg, r);
  if (rc != 0) {
    s->failed = 1;
    if (!s->err.code)
      envd_err_set(&s->err, "invalid_argument", "%s",
                   asbi_connect_strerror(rc));
  }
  return 0;
}

static struct MHD_Response *rpc_cs_done(envd_hreq *r, unsigned *status) {
  cs_state *s = r->state;
  *status = 200;
  if (!s->failed) {
    int rc = asbi_connect_dec_finish(&s->dec);
    if (rc == ASBI_CONNECT_ETRUNCATED) {
      s->failed = 1;
      envd_err_set(&s->err, "invalid_argument", "%s",
                   asbi_connect_strerror(rc));
    }
  }
  asbi_buf out = ASBI_BUF_INIT;
  if (!s->failed) {
    cJSON *resp = NULL;
    if (s->cs->finish(s->cs, &resp, &s->err) == 0) {
      char *p = resp ? asbi_pj_print(resp) : asbi_strdup("{}");
      envd_env_msg(&out, p, strlen(p));
      free(p);
      cJSON_Delete(resp);
      envd_env_end(&out, NULL, NULL);
    } else {
      s->failed = 1;
    }
  }
  if (s->failed) envd_env_end(&out, s->err.code ? s->err.code : "internal",
                              s->err.msg);
  struct MHD_Response *resp =
      envd_resp_buf("application/connect+json", out.data, out.len);
  asbi_buf_free(&out);
  return resp;
}

static void rpc_cs_free(envd_hreq *r) {
  cs_state *s = r->state;
  if (!s) return;
  if (s->cs) s->cs->destroy(s->cs);
  asbi_connect_dec_free(&s->dec);
  free(s);
}

static int rpc_body(envd_hreq *r, const char *data, size_t len) {
  if (r->body_too_big) return 0;
  if (asbi_buf_append(&r->body, data, len) != 0) {
    r->body_too_big = 1;
    asbi_buf_free(&r->body);
  }
  return 0;
}

typedef struct one_msg {
  char *data;
  size_t len;
  int count;
  int end;
} one_msg;

static int one_msg_cb(void *ud, unsigned flags, const char *data, size_t len) {
  one_msg *m = ud;
  if (flags & ASBI_CONNECT_FLAG_END_STREAM) {
    m->end = 1;
    return 0;
  }
  m->count++;
  if (m->count == 1) {
    m->data = asbi_strndup(data, len); /* only valid inside the callback */
    m->len = len;
  }
  return 1;
}

static struct MHD_Response *rpc_done(envd_hreq *r, unsigned *status) {
  const envd_method *m = r->rpc;
  char big[128];
  if (r->body_too_big) {
    snprintf(big, sizeof big, "request body exceeds the %zu-byte limit",
             g_envd.max_body);
    return rpc_error(r, "invalid_argument", big, status);
  }
  const char *json = r->body.data ? r->body.data : "";
  size_t jlen = r->body.len;
  char *msgcopy = NULL;
  if (m->kind == 1) {
    /* One enveloped message. */
    asbi_connect_dec d;
    asbi_connect_dec_init(&d, g_envd.max_body);
    one_msg om = {0};
    int rc = asbi_connect_dec_feed(&d, json, jlen, one_msg_cb, &om);
    if (rc == 1 && om.count == 1 && om.data) {
      msgcopy = om.data;
      om.data = NULL;
      /* Anything after the first envelope must be empty. */
      size_t used = ASBI_CONNECT_HEADER_LEN + om.len;
      if (used != jlen) rc = ASBI_CONNECT_EAFTEREND;
      else rc = 0;
    } else if (rc == 0) {
      rc = asbi_connect_dec_finish(&d);
      if (rc == ASBI_CONNECT_ENOEND || rc == 0) rc = ASBI_CONNECT_ETRUNCATED;
    }
    asbi_connect_dec_free(&d);
    free(om.data);
    if (rc != 0) {
      free(msgcopy);
      return rpc_error(r, "invalid_argument",
                       rc == ASBI_CONNECT_EAFTEREND
                           ? "protocol error: more than one request message "
                             "for a server-streaming method"
                           : asbi_connect_strerror(rc),
                       status);
    }
    json = msgcopy;
    jlen = strlen(msgcopy);
  }
  const char *perr = NULL;
  cJSON *req = asbi_pj_parse(json, jlen, &perr);
  if (!req || !cJSON_IsObject(req)) {
    char msg[256];
    snprintf(msg, sizeof msg, "unmarshal into request message: %s",
             req ? "not a JSON object" : perr);
    cJSON_Delete(req);
    free(msgcopy);
    return rpc_error(r, "invalid_argument", msg, status);
  }
  free(msgcopy);
  envd_call c;
  call_init(r, &c);
  envd_err e = {0};
  struct MHD_Response *resp = NULL;
  if (m->fs_creds && envd_creds_enter(&r->user) != 0) {
    cJSON_Delete(req);
    return rpc_error(r, "permission_denied",
                     "cannot act as the requested user", status);
  }
  if (m->kind == 0) {
    cJSON *out = NULL;
    int rc = m->unary(&c, req, &out, &e);
    if (m->fs_creds) envd_creds_leave();
    if (rc != 0) {
      cJSON_Delete(out);
      resp = unary_error(e.code ? e.code : "internal", e.msg, status);
    } else {
      char *p = out ? asbi_pj_print(out) : asbi_strdup("{}");
      cJSON_Delete(out);
      *status = 200;
      resp = envd_resp_buf("application/json", p, strlen(p));
      free(p);
    }
  } else {
    envd_stream *st = m->stream(&c, req, &e);
    if (m->fs_creds) envd_creds_leave();
    *status = 200;
    resp = stream_response(st, &r->user, m->fs_creds,
                           e.code ? e.code : "internal", e.msg);
  }
  cJSON_Delete(req);
  return resp;
}

static const envd_method *find_method(const char *url) {
  const envd_method *tabs[] = {envd_process_methods, envd_fs_methods};
  for (size_t t = 0; t < 2; t++)
    for (const envd_method *m = tabs[t]; m->path; m++)
      if (strcmp(m->path, url) == 0) return m;
  return NULL;
}

static int ctype_is(const char *ct, const char *want) {
  if (!ct) return 0;
  size_t n = strlen(want);
  if (strncasecmp(ct, want, n) != 0) return 0;
  return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ';
}

static struct MHD_Response *rpc_begin(envd_hreq *r, const envd_method *m,
                                      unsigned *status) {
  r->rpc = m;
  const char *ct = envd_hdr(r, "Content-Type");
  const char *want = m->kind == 0 ? "application/json"
                                  : "application/connect+json";
  if (strcmp(r->method, "POST") != 0) {
    *status = 405;
    struct MHD_Response *resp = envd_resp_buf("text/plain", "", 0);
    if (resp) MHD_add_response_header(resp, "Allow", "POST");
    return resp;
  }
  if (!ctype_is(ct, want)) {
    *status = 415;
    struct MHD_Response *resp = envd_resp_empty();
    if (resp) MHD_add_response_header(resp, "Accept-Post", want);
    return resp;
  }
  /* User: Basic header, else the default user. */
  char name[256];
  char *dflt = NULL;
  if (basic_user(r, name, sizeof name) == 0) {
    dflt = envd_default_user();
    snprintf(name, sizeof name, "%s", dflt ? dflt : "root");
    free(dflt);
    if (envd_user_lookup(name, &r->user) != 0) {
      char msg[320];
      snprintf(msg, sizeof msg, "invalid default user: '%s'", name);
      return rpc_error(r, "unauthenticated", msg, status);
    }
  } else if (envd_user_lookup(name, &r->user) != 0) {
    char msg[320];
    snprintf(msg, sizeof msg, "invalid username: '%s'", name);
    return rpc_error(r, "unauthenticated", msg, status);
  }
  r->have_user = 1;
  if (m->kind == 2) {
    envd_call c;
    call_init(r, &c);
    cs_state *s = calloc(1, sizeof *s);
    if (!s) return rpc_error(r, "internal", "out of memory", status);
    asbi_connect_dec_init(&s->dec, g_envd.max_body);
    r->state = s;
    r->on_free = rpc_cs_free;
    s->cs = m->cstream(&c, &s->err);
    if (!s->cs) s->failed = 1;
    r->on_body = rpc_cs_body;
    r->on_done = rpc_cs_done;
    return NULL;
  }
  asbi_buf_init(&r->body, g_envd.max_body + ASBI_CONNECT_HEADER_LEN);
  r->on_body = rpc_body;
  r->on_done = rpc_done;
  return NULL;
}

/* ---- routing ----------------------------------------------------------- */

static struct MHD_Response *route(envd_hreq *r, unsigned *status) {
  const char *m = r->method, *u = r->url;
  if (strcmp(m, "OPTIONS") == 0) {
    *status = 204;
    struct MHD_Response *resp = envd_resp_empty();
    if (resp) {
      const char *rm = envd_hdr(r, "Access-Control-Request-Method");
      const char *rh = envd_hdr(r, "Access-Control-Request-Headers");
      MHD_add_response_header(resp, "Access-Control-Allow-Methods",
                              rm ? rm : "GET, POST, PUT, PATCH, DELETE, HEAD");
      if (rh) MHD_add_response_header(resp, "Access-Control-Allow-Headers", rh);
      MHD_add_response_header(resp, "Access-Control-Max-Age", "7200");
    }
    return resp;
  }
  if (strcmp(u, "/health") == 0 && strcmp(m, "GET") == 0) {
    *status = 204;
    struct MHD_Response *resp = envd_resp_empty();
    if (resp) MHD_add_response_header(resp, "Cache-Control", "no-store");
    return resp;
  }
  if (strcmp(u, "/init") == 0 && strcmp(m, "POST") == 0)
    return envd_api_init(r, status);
  if (strcmp(u, "/files") == 0 && strcmp(m, "GET") == 0)
    return envd_files_get(r, status);
  if (strcmp(u, "/files") == 0 && strcmp(m, "POST") == 0)
    return envd_files_post(r, status);
  if (!token_ok(r)) {
    *status = 401;
    return envd_resp_json_error(401, "unauthorized access, please provide a "
                                     "valid access token or method signing "
                                     "if supported");
  }
  if (strcmp(u, "/envs") == 0 && strcmp(m, "GET") == 0)
    return envd_api_envs(r, status);
  if (strcmp(u, "/metrics") == 0 && strcmp(m, "GET") == 0)
    return envd_api_metrics(r, status);
  const envd_method *meth = find_method(u);
  if (meth) return rpc_begin(r, meth, status);
  if (strcmp(u, "/health") == 0 || strcmp(u, "/init") == 0 ||
      strcmp(u, "/files") == 0 || strcmp(u, "/envs") == 0 ||
      strcmp(u, "/metrics") == 0) {
    *status = 405;
    return envd_resp_empty();
  }
  *status = 404;
  return envd_resp_buf("text/plain; charset=utf-8", "404 page not found\n", 19);
}

static enum MHD_Result queue(envd_hreq *r, struct MHD_Response *resp,
                             unsigned status) {
  if (!resp) return MHD_NO;
  if (envd_hdr(r, "Origin")) {
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    MHD_add_response_header(
        resp, "Access-Control-Expose-Headers",
        "Connect-Protocol-Version, Content-Encoding, Grpc-Status, "
        "Grpc-Message, Grpc-Status-Details-Bin, Location, Cache-Control, "
        "Content-Type, Content-Length, Vary");
  }
  enum MHD_Result rc = MHD_queue_response(r->conn, status, resp);
  MHD_destroy_response(resp);
  return rc;
}

static asbi_guarded *guarded(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code) {
  (void)cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    *socket_ctx = ci ? asbi_connguard_open(g_guard, ci->connect_fd) : NULL;
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    asbi_connguard_close(*socket_ctx);
    *socket_ctx = NULL;
  }
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)cls;
  (void)uri;
  asbi_connguard_request_line(guarded(c));
  return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  (void)cls;
  (void)version;
  envd_hreq *r = *con_cls;
  if (!r) {
    asbi_connguard_head_done(guarded(conn));
    r = calloc(1, sizeof *r);
    if (!r) return MHD_NO;
    *con_cls = r;
    r->conn = conn;
    r->method = method;
    r->url = url;
    r->sock = -1;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci) r->sock = ci->connect_fd;
    unsigned status = 500;
    struct MHD_Response *resp = route(r, &status);
    if (resp) {
      /* A response queued on the first call makes libmicrohttpd close the
       * connection; when no body follows, hold it for the next call so the
       * connection stays alive. With a body pending, answer early (and
       * close) rather than read a body nobody wants. */
      const char *cl = envd_hdr(r, "Content-Length");
      const char *te = envd_hdr(r, "Transfer-Encoding");
      if (!te && (!cl || strcmp(cl, "0") == 0)) {
        r->early = resp;
        r->early_status = status;
        return MHD_YES;
      }
      return queue(r, resp, status);
    }
    if (!r->on_done) return MHD_NO;
    return MHD_YES;
  }
  if (r->early) {
    struct MHD_Response *resp = r->early;
    r->early = NULL;
    *upload_size = 0;
    return queue(r, resp, r->early_status);
  }
  if (*upload_size) {
    if (!r->failed && r->on_body) {
      if (r->fs_creds && envd_creds_enter(&r->user) != 0) r->failed = 1;
      else {
        r->on_body(r, upload, *upload_size);
        if (r->fs_creds) envd_creds_leave();
      }
    }
    *upload_size = 0;
    return MHD_YES;
  }
  unsigned status = 500;
  struct MHD_Response *resp = NULL;
  if (r->on_done) {
    if (r->fs_creds && envd_creds_enter(&r->user) != 0) {
      status = 403;
      resp = envd_resp_json_error(403, "cannot act as user '%s'", r->user.name);
    } else {
      resp = r->on_done(r, &status);
      if (r->fs_creds) envd_creds_leave();
    }
    r->on_done = NULL;
  }
  if (!resp) return MHD_NO;
  return queue(r, resp, status);
}

static void on_completed(void *cls, struct MHD_Connection *conn,
                         void **con_cls, enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)toe;
  asbi_connguard_request_done(guarded(conn));
  envd_hreq *r = *con_cls;
  if (!r) return;
  if (r->on_free) r->on_free(r);
  if (r->early) MHD_destroy_response(r->early);
  asbi_buf_free(&r->body);
  free(r);
  *con_cls = NULL;
  envd_creds_leave();
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  if (!g_envd_verbose) return;
  fprintf(stderr, "envd: mhd: ");
  vfprintf(stderr, fmt, ap);
}

/* ---- listening --------------------------------------------------------- */

static int listen_socket(const envd_listen *l, int *bound_port) {
  int fd = -1;
  if (l->unix_path) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(l->unix_path) >= sizeof sa.sun_path) {
      fprintf(stderr, "envd: unix socket path too long\n");
      return -1;
    }
    strcpy(sa.sun_path, l->unix_path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    unlink(l->unix_path);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        chmod(l->unix_path, 0666) != 0) {
      fprintf(stderr, "envd: bind %s: %s\n", l->unix_path, strerror(errno));
      close(fd);
      return -1;
    }
    *bound_port = 0;
  } else {
    const char *addr = l->addr ? l->addr : "127.0.0.1";
    struct sockaddr_in6 s6;
    struct sockaddr_in s4;
    memset(&s6, 0, sizeof s6);
    memset(&s4, 0, sizeof s4);
    int v6 = 0;
    if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1) {
      s4.sin_family = AF_INET;
      s4.sin_port = htons((uint16_t)l->port);
    } else if (inet_pton(AF_INET6, addr, &s6.sin6_addr) == 1) {
      v6 = 1;
      s6.sin6_family = AF_INET6;
      s6.sin6_port = htons((uint16_t)l->port);
    } else if (strcmp(addr, "localhost") == 0) {
      s4.sin_family = AF_INET;
      s4.sin_port = htons((uint16_t)l->port);
      s4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else {
      fprintf(stderr, "envd: bad listen address '%s'\n", addr);
      return -1;
    }
    fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc = v6 ? bind(fd, (struct sockaddr *)&s6, sizeof s6)
                : bind(fd, (struct sockaddr *)&s4, sizeof s4);
    if (rc != 0) {
      fprintf(stderr, "envd: bind %s:%d: %s\n", addr, l->port, strerror(errno));
      close(fd);
      return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
      fprintf(stderr, "envd: getsockname %s:%d: %s\n", addr, l->port, strerror(errno));
      close(fd);
      return -1;
    }
    *bound_port = ss.ss_family == AF_INET6
                      ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                      : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  }
  if (listen(fd, 1024) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int envd_server_start(const envd_listen *l, int *bound_port) {
  int fd = listen_socket(l, bound_port);
  if (fd < 0) return -1;
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                   MHD_USE_ERROR_LOG | MHD_USE_TURBO;
#if defined(__SANITIZE_ADDRESS__)
  size_t stack = 4u << 20;
#else
  size_t stack = 1u << 20;
#endif
  /* Slow clients (any process in the sandbox may connect): a request head
   * must arrive within 30 s of its request line, and at most half the
   * connections may wait for one (the oldest goes first); idle keep-alive
   * connections (the engine pools them) are otherwise left open. */
  g_guard = asbi_connguard_new(0, ENVD_HEAD_TIMEOUT_MS, ENVD_MAX_CONNECTIONS / 2);
  if (!g_guard) {
    close(fd);
    fprintf(stderr, "envd: cannot start a thread: %s\n", strerror(errno));
    return -1;
  }
  g_daemon = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
      MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
      MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)ENVD_MAX_CONNECTIONS,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(1u << 20),
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)640,
      MHD_OPTION_THREAD_STACK_SIZE, stack, MHD_OPTION_EXTERNAL_LOGGER,
      mhd_log, NULL, MHD_OPTION_END);
  if (!g_daemon) {
    close(fd);
    asbi_connguard_free(g_guard);
    g_guard = NULL;
    fprintf(stderr, "envd: cannot start the HTTP server\n");
    return -1;
  }
  return 0;
}

void envd_server_stop(void) {
  if (g_daemon) MHD_stop_daemon(g_daemon);
  g_daemon = NULL;
  asbi_connguard_free(g_guard);
  g_guard = NULL;
}
