/* envd: Connect RPC dispatch: an HTTP request on a method's path becomes a
 * call of the method's handler, in the protocol of its kind: unary JSON,
 * server stream (one enveloped request, enveloped messages out as the
 * stream produces them) or client stream (enveloped messages in, one
 * response). The request's user comes from its Basic authorization or is
 * the default user; methods marked fs_creds run with that user's
 * filesystem credentials. SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "dispatch.h"
#include "fs.h"
#include "httpd/endhold.h"
#include "log.h"
#include "proc_rpc.h"
#include "proto/connect.h"
#include "proto/pjson.h"
#include "state.h"
#include "util/base64.h"
#include "util/util.h"
#include "watch.h"

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
  int fd;         /* the connection's socket (endhold.h), or -1 */
  unsigned calls; /* of the stream's next */
  asbi_buf pre;   /* a precomputed body (error-only streams) */
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
    if (s->calls++) asbi_endhold_flush(s->fd); /* nothing should be held here: never wait so */
    if (s->creds && envd_creds_enter(&s->user) != 0) return MHD_CONTENT_READER_END_WITH_ERROR;
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
  /* The stream's last bytes (its end event): libmicrohttpd sends them and
   * the body's last chunk apart; endhold makes that one write. */
  if (s->done && s->off == s->out.len) asbi_endhold_arm(s->fd);
  return (ssize_t)n;
}

static void sresp_free(void *cls) {
  sresp *s = cls;
  asbi_endhold_drop(s->fd);
  if (s->st) s->st->destroy(s->st);
  asbi_buf_free(&s->out);
  free(s);
}

static struct MHD_Response *stream_response(envd_stream *st, int fd, const envd_user *u, int creds,
                                            const char *err_code, const char *err_msg) {
  sresp *s = calloc(1, sizeof *s);
  if (!s) {
    if (st) st->destroy(st);
    return NULL;
  }
  s->st = st;
  s->fd = fd;
  if (u) s->user = *u;
  s->creds = creds;
  if (!st) envd_env_end(&s->out, err_code, err_msg);
  struct MHD_Response *resp =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, sresp_read, s, sresp_free);
  if (!resp) {
    sresp_free(s);
    return NULL;
  }
  MHD_add_response_header(resp, "Content-Type", "application/connect+json");
  /* Every stream's first message (its start event; an error-only stream's
   * end) is ready at the reader's first call: the head goes with it in one
   * write (httpd/endhold.h). */
  asbi_endhold_arm(fd);
  return resp;
}

static struct MHD_Response *unary_error(const char *code, const char *msg, unsigned *status) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_connect_error_json(&b, code, msg);
  *status = (unsigned)asbi_connect_code_to_http(code);
  struct MHD_Response *r = envd_resp_buf("application/json", b.data, b.len);
  asbi_buf_free(&b);
  return r;
}

/* Error in the protocol form of the method. */
static struct MHD_Response *rpc_error(envd_hreq *r, const char *code, const char *msg,
                                      unsigned *status) {
  if (r->rpc->kind == ENVD_UNARY) return unary_error(code, msg, status);
  *status = 200;
  return stream_response(NULL, r->hold_fd, NULL, 0, code, msg);
}

static void call_init(envd_hreq *r, envd_call *c) {
  memset(c, 0, sizeof *c);
  c->user = &r->user;
  c->sock = r->sock;
  c->t_head = r->t_head;
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
    if (!s->err.code) envd_err_set(&s->err, "invalid_argument", "%s", asbi_connect_strerror(rc));
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
      envd_err_set(&s->err, "invalid_argument", "%s", asbi_connect_strerror(rc));
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
  if (s->failed) envd_env_end(&out, s->err.code ? s->err.code : "internal", s->err.msg);
  struct MHD_Response *resp = envd_resp_buf("application/connect+json", out.data, out.len);
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
  uint64_t t_body = envd_tns();
  const envd_method *m = r->rpc;
  char big[128];
  if (r->body.too_big) {
    snprintf(big, sizeof big, "request body exceeds the %zu-byte limit", g_envd.max_body);
    return rpc_error(r, "invalid_argument", big, status);
  }
  const char *json = r->body.buf.data ? r->body.buf.data : "";
  size_t jlen = r->body.buf.len;
  char *msgcopy = NULL;
  if (m->kind == ENVD_SERVER_STREAM) {
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
      if (used != jlen)
        rc = ASBI_CONNECT_EAFTEREND;
      else
        rc = 0;
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
  c.t_body = t_body;
  envd_err e = {0};
  struct MHD_Response *resp = NULL;
  if (m->fs_creds && envd_creds_enter(&r->user) != 0) {
    cJSON_Delete(req);
    return rpc_error(r, "permission_denied", "cannot act as the requested user", status);
  }
  if (m->kind == ENVD_UNARY) {
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
    resp =
        stream_response(st, r->hold_fd, &r->user, m->fs_creds, e.code ? e.code : "internal", e.msg);
  }
  cJSON_Delete(req);
  return resp;
}

const envd_method *envd_dispatch_find(const char *url) {
  const envd_method *tabs[] = {envd_process_methods, envd_fs_methods, envd_watch_methods};
  for (size_t t = 0; t < ASBI_ARRAY_LEN(tabs); t++)
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

struct MHD_Response *envd_dispatch_begin(envd_hreq *r, const envd_method *m, unsigned *status) {
  r->rpc = m;
  const char *ct = envd_hdr(r, "Content-Type");
  const char *want = m->kind == ENVD_UNARY ? "application/json" : "application/connect+json";
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
  if (m->kind == ENVD_CLIENT_STREAM) {
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
  asbi_httpd_body_init(&r->body, g_envd.max_body + ASBI_CONNECT_HEADER_LEN);
  r->on_body = envd_body_append;
  r->on_done = rpc_done;
  return NULL;
}
