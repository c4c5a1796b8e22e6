/* Connect calls to envd (errors mapped by errmap.c).
 * SPDX-License-Identifier: Apache-2.0 */
#include "envd.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/connect.h"
#include "proto/pjson.h"
#include "util/base64.h"
#include "util/util.h"

#define KEEPALIVE_S 50        /* Keepalive-Ping-Interval we ask for */
#define STREAM_IDLE_MS 180000 /* no byte for this long: the stream is dead */
#define MAX_UNARY_REPLY (64u * 1024u * 1024u)

/* ---- sandbox helpers -------------------------------------------------------- */

int asbi_envd_at_least(const asb_sandbox *sb, int a, int b, int c) {
  if (sb->ver[0] != a) return sb->ver[0] > a;
  if (sb->ver[1] != b) return sb->ver[1] > b;
  return sb->ver[2] >= c;
}

const char *asbi_envd_user(const asb_sandbox *sb, const char *user) {
  if (user && *user) return user;
  return asbi_envd_at_least(sb, 0, 4, 0) ? NULL : "user";
}

void asbi_envd_call_from(asbi_envd_call *c, asb_sandbox *sb, const asb_call_options *o,
                         const char *user) {
  memset(c, 0, sizeof *c);
  c->user = asbi_envd_user(sb, user);
  c->timeout_ms = asbi_client_timeout(sb->client, o ? o->timeout_ms : 0);
  c->cancel = o ? o->cancel : NULL;
  c->stop = sb->life.stop;
}

void asbi_envd_headers(asb_sandbox *sb, const char *user, const char **hs, asbi_buf *store,
                       const char *content_type) {
  size_t n = 0;
  hs[n++] = sb->hdr_id;
  hs[n++] = "E2b-Sandbox-Port: " ASBI_STRINGIFY(ASBI_ENVD_PORT);
  if (sb->hdr_token) hs[n++] = sb->hdr_token;
  hs[n++] = sb->hdr_ua;
  /* Offsets into store, turned into pointers once it stops growing. */
  size_t ct_off = (size_t)-1, auth_off = (size_t)-1;
  if (content_type) {
    ct_off = store->len;
    asbi_buf_printf(store, "Content-Type: %s", content_type);
    asbi_buf_putc(store, '\0');
  }
  if (user) {
    char cred[256], b64[360];
    snprintf(cred, sizeof cred, "%s:", user);
    asbi_b64_encode(cred, strlen(cred), b64, 0, 1);
    auth_off = store->len;
    asbi_buf_printf(store, "Authorization: Basic %s", b64);
    asbi_buf_putc(store, '\0');
  }
  if (ct_off != (size_t)-1 && store->data) hs[n++] = store->data + ct_off;
  if (auth_off != (size_t)-1 && store->data) hs[n++] = store->data + auth_off;
  hs[n] = NULL;
}

static int build_url(asbi_buf *out, asb_sandbox *sb, const char *method) {
  return asbi_buf_printf(out, "%s/%s", sb->envd_base, method);
}

/* ---- unary ------------------------------------------------------------------- */

int asbi_envd_unary(asb_sandbox *sb, const char *method, const cJSON *req, const asbi_envd_call *c,
                    const char *what, cJSON **out) {
  if (out) *out = NULL;
  char *body = asbi_pj_print(req);
  if (!body) return asbi_oom();
  asbi_buf url = ASBI_BUF_INIT, store = ASBI_BUF_INIT;
  const char *hs[12];
  hs[0] = "Connect-Protocol-Version: 1";
  asbi_envd_headers(sb, c->user, hs + 1, &store, "application/json");
  if (build_url(&url, sb, method) != 0) {
    free(body);
    asbi_buf_free(&store);
    return asbi_oom();
  }
  asbi_http_req r = {.method = "POST",
                     .url = url.data,
                     .headers = hs,
                     .headers2 = (const char *const *)sb->client->headers,
                     .body = body,
                     .body_len = strlen(body),
                     .timeout_ms = c->timeout_ms,
                     .cancel = c->cancel,
                     .stop = c->stop,
                     .idempotent = c->idempotent,
                     .max_retries = sb->client->max_retries,
                     .max_body = MAX_UNARY_REPLY};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  int rc = asbi_http_do(sb->client->http, &r, &resp);
  if (rc) {
    rc = asbi_sandbox_explain(sb, asbi_prefix_error(rc, what));
  } else if (resp.status != 200) {
    rc = asbi_sandbox_explain(sb, asbi_map_http_error(&resp, what));
  } else if (out) {
    const char *err = NULL;
    *out = asbi_pj_parse(resp.body.data ? resp.body.data : "", resp.body.len, &err);
    if (!*out)
      rc = asbi_err(ASB_EPROTOCOL, "%s: malformed reply from envd: %s", what,
                    err ? err : "invalid JSON");
  }
  asbi_http_resp_free(&resp);
  asbi_buf_free(&url);
  asbi_buf_free(&store);
  free(body);
  return rc;
}

/* ---- server streams --------------------------------------------------------- */

typedef struct msg_node {
  cJSON *msg;
  struct msg_node *next;
} msg_node;

struct asbi_envd_stream {
  asb_sandbox *sb; /* borrowed: the caller's handle outlives the stream */
  asbi_http_stream *http;
  asbi_http_resp resp;
  asbi_connect_dec dec;
  msg_node *head, *tail;
  int ended;  /* end-stream envelope seen */
  int end_rc; /* its error, mapped (0 = clean) */
  char *end_code, *end_message;
  int failed; /* a decode error happened */
  char what[64];
};

static int on_envelope(void *ud, unsigned flags, const char *data, size_t len) {
  asbi_envd_stream *s = ud;
  if (flags & ASBI_CONNECT_FLAG_END_STREAM) {
    char *code = NULL, *message = NULL;
    int r = asbi_connect_parse_end(data, len, &code, &message);
    s->ended = 1;
    if (r < 0)
      s->end_rc = asbi_err(ASB_EPROTOCOL, "%s: malformed end of stream", s->what);
    else if (r > 0) {
      s->end_rc = asbi_map_connect_error(code, message, s->what);
      s->end_code = code;
      s->end_message = message;
      return 0;
    }
    free(code);
    free(message);
    return 0;
  }
  const char *err = NULL;
  cJSON *m = asbi_pj_parse(data, len, &err);
  if (!m) {
    asbi_err(ASB_EPROTOCOL, "%s: malformed stream message: %s", s->what,
             err ? err : "invalid JSON");
    return ASB_EPROTOCOL;
  }
  msg_node *n = malloc(sizeof *n);
  if (!n) {
    cJSON_Delete(m);
    return asbi_oom();
  }
  n->msg = m;
  n->next = NULL;
  if (s->tail)
    s->tail->next = n;
  else
    s->head = n;
  s->tail = n;
  return 0;
}

_Thread_local uint64_t asbi_t_built, asbi_t_head;
static int g_timing_fd = -1;
static pthread_once_t g_timing_once = PTHREAD_ONCE_INIT;

static void timing_init(void) {
  const char *v = getenv("ASB_TIMING");
  if (!v || !*v || strcmp(v, "0") == 0) return;
  g_timing_fd = strcmp(v, "1") == 0 || strcmp(v, "stderr") == 0
                    ? 2
                    : open(v, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

uint64_t asbi_timing_ns(void) {
  pthread_once(&g_timing_once, timing_init);
  if (g_timing_fd < 0) return 0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void asbi_timing_line(const char *fmt, ...) {
  if (g_timing_fd < 0) return;
  char line[512];
  int n = snprintf(line, sizeof line, "asb-timing ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) return;
  n += m;
  if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  if (write(g_timing_fd, line, (size_t)n) < 0) { /* a lost timing line: fine */
  }
}

int asbi_envd_stream_open(asb_sandbox *sb, const char *method, const cJSON *req,
                          const asbi_envd_call *c, long lifetime_ms, const char *what,
                          asbi_envd_stream **out) {
  char *json = asbi_pj_print(req);
  if (!json) return asbi_oom();
  /* Connect streaming requests are one envelope holding the message. */
  asbi_buf body = ASBI_BUF_INIT, url = ASBI_BUF_INIT, store = ASBI_BUF_INIT;
  int rc =
      asbi_connect_encode(&body, 0, json, strlen(json)) == 0 && build_url(&url, sb, method) == 0
          ? ASB_OK
          : asbi_oom();
  free(json);
  asbi_envd_stream *s = NULL;
  if (rc == ASB_OK && !(s = calloc(1, sizeof *s))) rc = asbi_oom();
  if (rc) {
    asbi_buf_free(&body);
    asbi_buf_free(&url);
    return rc;
  }
  snprintf(s->what, sizeof s->what, "%s", what);
  asbi_connect_dec_init(&s->dec, 0);
  const char *hs[16];
  char lifetime[64], keepalive[64];
  size_t n = 0;
  hs[n++] = "Connect-Protocol-Version: 1";
  snprintf(keepalive, sizeof keepalive, "Keepalive-Ping-Interval: %d", KEEPALIVE_S);
  hs[n++] = keepalive;
  if (lifetime_ms > 0) {
    snprintf(lifetime, sizeof lifetime, "Connect-Timeout-Ms: %ld", lifetime_ms);
    hs[n++] = lifetime;
  }
  asbi_envd_headers(sb, c->user, hs + n, &store, "application/connect+json");
  asbi_http_req r = {.method = "POST",
                     .url = url.data,
                     .headers = hs,
                     .headers2 = (const char *const *)sb->client->headers,
                     .body = body.data,
                     .body_len = body.len,
                     .timeout_ms = c->timeout_ms,
                     .cancel = c->cancel,
                     .stop = c->stop,
                     .idempotent = c->idempotent,
                     .max_retries = sb->client->max_retries,
                     .idle_timeout_ms = STREAM_IDLE_MS};
  s->resp = (asbi_http_resp)ASBI_HTTP_RESP_INIT;
  asbi_t_built = asbi_timing_ns();
  rc = asbi_http_stream_open(sb->client->http, &r, &s->resp, &s->http);
  asbi_t_head = asbi_timing_ns();
  asbi_buf_free(&body);
  asbi_buf_free(&url);
  asbi_buf_free(&store);
  if (rc) {
    rc = asbi_sandbox_explain(sb, asbi_prefix_error(rc, what));
  } else if (s->resp.status != 200) {
    rc = asbi_sandbox_explain(sb, asbi_map_http_error(&s->resp, what));
  }
  if (rc) {
    asbi_envd_stream_close(s);
    return rc;
  }
  s->sb = sb;
  *out = s;
  return ASB_OK;
}

int asbi_envd_stream_next(asbi_envd_stream *s, cJSON **msg, long wait_ms, asb_cancel *extra) {
  *msg = NULL;
  uint64_t deadline = wait_ms > 0 ? asbi_now_ms() + (uint64_t)wait_ms : 0;
  for (;;) {
    if (s->head) {
      msg_node *n = s->head;
      s->head = n->next;
      if (!s->head) s->tail = NULL;
      *msg = n->msg;
      free(n);
      return ASB_OK;
    }
    if (s->failed) return s->failed;
    if (s->ended) {
      if (s->end_rc) {
        /* Re-record: other calls may have replaced the thread's error. */
        if (s->end_code) asbi_map_connect_error(s->end_code, s->end_message, s->what);
        return s->end_rc;
      }
      return ASB_OK;
    }
    long left = 0;
    if (deadline) {
      uint64_t now = asbi_now_ms();
      if (now >= deadline)
        return asbi_err(ASB_ETIMEOUT, "%s: no event within %ld ms", s->what, wait_ms);
      left = (long)(deadline - now);
    }
    const char *p;
    size_t len;
    int rc = asbi_http_stream_read_ex(s->http, &p, &len, left, extra);
    if (rc) {
      if (rc == ASB_ETIMEOUT && deadline && asbi_now_ms() >= deadline)
        return asbi_err(ASB_ETIMEOUT, "%s: no event within %ld ms", s->what, wait_ms);
      s->failed = asbi_sandbox_explain(s->sb, asbi_prefix_error(rc, s->what));
      return s->failed;
    }
    if (len == 0) { /* EOF */
      int f = asbi_connect_dec_finish(&s->dec);
      if (!s->ended) {
        asbi_err(ASB_ECONNECTION, "%s: stream ended without its end frame (%s)", s->what,
                 asbi_connect_strerror(f ? f : ASBI_CONNECT_ENOEND));
        s->failed = asbi_sandbox_explain(s->sb, ASB_ECONNECTION);
        return s->failed;
      }
      continue;
    }
    rc = asbi_connect_dec_feed(&s->dec, p, len, on_envelope, s);
    if (rc) {
      if (rc <= -1000) /* a codec error, not a callback's */
        asbi_err(ASB_EPROTOCOL, "%s: malformed stream: %s", s->what, asbi_connect_strerror(rc));
      s->failed = rc <= -1000 ? ASB_EPROTOCOL : rc;
      return s->failed;
    }
  }
}

void asbi_envd_stream_set_tokens(asbi_envd_stream *s, asb_cancel *cancel, asb_cancel *stop) {
  if (s) asbi_http_stream_set_tokens(s->http, cancel, stop);
}

/* After the end-stream envelope only the HTTP body's own end is left (the
 * last chunk, which envd and the router write apart from the envelope).
 * A transfer closed before libcurl read it cannot go back to the pool:
 * libcurl closes its connection, and the next call pays a new TCP
 * connection and a new engine thread (issue 23: a commands.run whose
 * client read the end before the last chunk came did).
 * So read to the body's end first: it follows at once, the wait is
 * bounded, and anything else (bytes after the end, an error) leaves the
 * connection to be closed as before. */
static void finish_body(asbi_envd_stream *s) {
  if (s->ended && !s->failed && s->http) asbi_http_stream_finish(s->http, 1000);
}

void asbi_envd_stream_close(asbi_envd_stream *s) {
  if (!s) return;
  finish_body(s);
  asbi_http_stream_close(s->http);
  asbi_http_resp_free(&s->resp);
  asbi_connect_dec_free(&s->dec);
  free(s->end_code);
  free(s->end_message);
  while (s->head) {
    msg_node *n = s->head;
    s->head = n->next;
    cJSON_Delete(n->msg);
    free(n);
  }
  free(s);
}

/* ---- /files URLs -------------------------------------------------------------- */

int asbi_envd_files_url(asb_sandbox *sb, asbi_url_kind kind, const char *path, const char *user,
                        asbi_buf *out) {
  int rc = 0;
  if (kind == ASBI_URL_API) {
    rc |= asbi_buf_puts(out, sb->envd_base);
  } else {
    asbi_route_cfg cfg = {sb->client->sandbox_url, sb->client->debug, sb->domain, sb->id};
    rc |= asbi_url_sandbox_base(out, &cfg, ASBI_ENVD_PORT, ASBI_URL_PUBLIC);
  }
  rc |= asbi_buf_puts(out, "/files");
  char sep = '?';
  if (path) {
    rc |= asbi_buf_puts(out, "?path=");
    rc |= asbi_url_escape(out, path, 1);
    sep = '&';
  }
  if (user) {
    rc |= asbi_buf_putc(out, sep);
    rc |= asbi_buf_puts(out, "username=");
    rc |= asbi_url_escape(out, user, 0);
  }
  return rc ? asbi_oom() : ASB_OK;
}
