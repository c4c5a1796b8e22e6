/* The Streamable HTTP transport (MCP 2025-03-26 and later) on
 * libmicrohttpd, one thread per connection: one endpoint (default /mcp);
 * POST carries a message and is answered with JSON, or with an SSE stream
 * for tool calls (their progress and log messages, then the answer); GET
 * opens the session's stream for messages not tied to a request; DELETE
 * ends a session. Sessions are Mcp-Session-Id (128 random bits), each an
 * MCP session of its own (calls, default sandbox, log level). Every
 * request needs the bearer token and, if it carries an Origin, a loopback
 * or allowed one (DNS rebinding): 401 and 403 otherwise. The listening
 * socket, the slow-client guard, the bounded body, the token comparison
 * and the graceful stop are the shared HTTP-service module's
 * (httpd/httpd.h, docs/httpd.md); the errors stay JSON-RPC's.
 * SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "httpd/httpd.h"
#include "mcp.h"
#include "util/util.h"

#define KEEPALIVE_MS 15000
#define REAP_EVERY_MS 10000
#define DISCARD_MAX (16u << 20)
#define MAX_CONNECTIONS 256u
#define HEAD_TIMEOUT_MS 10000u

typedef struct http_server http_server;
typedef struct http_session http_session;
typedef struct stream stream;

/* ---- streams: what one HTTP response is waiting to send ---------------------------- */

struct stream {
  mcp_sink base;
  stream *next; /* in h->streams */
  http_server *h;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  asbi_buf q;   /* SSE bytes not yet handed to MHD */
  char *answer; /* JSON mode: the answer */
  int got_final, sse, is_get, closed, listed;
  mcp_sink *fallback; /* JSON mode: where notifications go */
  struct router *rt;  /* a GET stream: the router it serves (ref) */
};

/* The session's messages not tied to a request go to its GET stream, if
 * one is open, else nowhere (the client did not ask for them). */
struct router {
  mcp_sink base;
  pthread_mutex_t mu;
  stream *get;
};
typedef struct router router;

struct http_session {
  http_session *next;
  char id[33];
  mcp_session *mcp;
  router *rt;
  int refs; /* the list's and each request's; under h->mu */
  int listed;
  uint64_t last_ms;
};

struct http_server {
  mcp_server *srv;
  const mcp_http_options *o;
  asbi_httpd *d;
  pthread_mutex_t mu; /* sessions, streams */
  pthread_cond_t cv;
  http_session *sessions;
  int nsessions;
  stream *streams;
  int stopping;
};

static void stream_send(mcp_sink *sk, char *msg, int final) {
  stream *st = (stream *)sk;
  if (!st->sse && !final) { /* JSON answer: notifications go elsewhere */
    if (st->fallback && msg)
      st->fallback->send(st->fallback, msg, 0);
    else
      free(msg);
    return;
  }
  pthread_mutex_lock(&st->mu);
  if (st->sse) {
    if (msg && !st->closed) {
      asbi_buf_puts(&st->q, "event: message\ndata: ");
      asbi_buf_puts(&st->q, msg);
      asbi_buf_puts(&st->q, "\n\n");
    }
    free(msg);
  } else {
    free(st->answer);
    st->answer = msg;
  }
  if (final) st->got_final = 1;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
}

static void stream_close(stream *st) {
  pthread_mutex_lock(&st->mu);
  st->closed = 1;
  pthread_cond_broadcast(&st->cv);
  pthread_mutex_unlock(&st->mu);
}

static void stream_destroy(mcp_sink *sk) {
  stream *st = (stream *)sk;
  asbi_buf_free(&st->q);
  free(st->answer);
  mcp_sink_unref(st->fallback);
  pthread_mutex_destroy(&st->mu);
  pthread_cond_destroy(&st->cv);
  free(st);
}

static stream *stream_new(http_server *h, int sse, int is_get, mcp_sink *fallback) {
  stream *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  atomic_init(&st->base.refs, 1);
  st->base.send = stream_send;
  st->base.destroy = stream_destroy;
  st->h = h;
  st->sse = sse;
  st->is_get = is_get;
  st->fallback = fallback;
  mcp_sink_ref(fallback);
  asbi_buf_init(&st->q, 0);
  pthread_mutex_init(&st->mu, NULL);
  pthread_cond_init(&st->cv, NULL);
  if (sse) asbi_buf_puts(&st->q, ": stream open\n\n");
  return st;
}

/* List an SSE stream so shutdown can end it. */
static int stream_list(stream *st) {
  http_server *h = st->h;
  pthread_mutex_lock(&h->mu);
  int ok = !h->stopping;
  if (ok) {
    st->next = h->streams;
    h->streams = st;
    st->listed = 1;
    mcp_sink_ref(&st->base);
  }
  pthread_mutex_unlock(&h->mu);
  return ok;
}

static void stream_unlist(stream *st) {
  http_server *h = st->h;
  int was = 0;
  pthread_mutex_lock(&h->mu);
  for (stream **p = &h->streams; *p; p = &(*p)->next)
    if (*p == st) {
      *p = st->next;
      was = 1;
      break;
    }
  pthread_mutex_unlock(&h->mu);
  if (was) mcp_sink_unref(&st->base);
}

/* MHD's reader for an SSE body; blocking is fine with a thread per
 * connection. Comments every KEEPALIVE_MS notice a client that left. */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  stream *st = cls;
  pthread_mutex_lock(&st->mu);
  for (;;) {
    if (st->q.len) {
      size_t n = st->q.len < max ? st->q.len : max;
      memcpy(buf, st->q.data, n);
      asbi_buf_consume(&st->q, n);
      pthread_mutex_unlock(&st->mu);
      return (ssize_t)n;
    }
    if (st->closed || (!st->is_get && st->got_final)) {
      pthread_mutex_unlock(&st->mu);
      return MHD_CONTENT_READER_END_OF_STREAM;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += KEEPALIVE_MS / 1000;
    if (pthread_cond_timedwait(&st->cv, &st->mu, &ts) == ETIMEDOUT && !st->q.len)
      asbi_buf_puts(&st->q, ": keepalive\n\n");
  }
}

/* ---- the session router ------------------------------------------------------------ */

static void router_send(mcp_sink *sk, char *msg, int final) {
  (void) final;
  router *rt = (router *)sk;
  pthread_mutex_lock(&rt->mu);
  stream *g = rt->get;
  if (g) mcp_sink_ref(&g->base);
  pthread_mutex_unlock(&rt->mu);
  if (g) {
    g->base.send(&g->base, msg, 0);
    mcp_sink_unref(&g->base);
  } else {
    free(msg);
  }
}

static void router_set(router *rt, stream *g) {
  if (g) mcp_sink_ref(&g->base);
  pthread_mutex_lock(&rt->mu);
  stream *old = rt->get;
  rt->get = g;
  pthread_mutex_unlock(&rt->mu);
  if (old) {
    stream_close(old);
    mcp_sink_unref(&old->base);
  }
}

/* Drops the GET stream only if it is still st. */
static void router_clear(router *rt, stream *st) {
  pthread_mutex_lock(&rt->mu);
  int mine = rt->get == st;
  if (mine) rt->get = NULL;
  pthread_mutex_unlock(&rt->mu);
  if (mine) mcp_sink_unref(&st->base);
}

static void sse_free(void *cls) {
  stream *st = cls;
  stream_close(st);
  stream_unlist(st);
  if (st->rt) { /* the GET stream went away: stop routing to it */
    router_clear(st->rt, st);
    mcp_sink_unref(&st->rt->base);
    st->rt = NULL;
  }
  mcp_sink_unref(&st->base);
}

static void router_destroy(mcp_sink *sk) {
  router *rt = (router *)sk;
  if (rt->get) mcp_sink_unref(&rt->get->base);
  pthread_mutex_destroy(&rt->mu);
  free(rt);
}

static void discard_send(mcp_sink *sk, char *msg, int final) {
  (void)sk;
  (void) final;
  free(msg);
}
static void discard_destroy(mcp_sink *sk) {
  (void)sk;
}
static mcp_sink discard_sink = {1, discard_send, discard_destroy};

/* ---- sessions -------------------------------------------------------------------------- */

static void session_release(http_server *h, http_session *hs) {
  pthread_mutex_lock(&h->mu);
  int last = --hs->refs == 0;
  pthread_mutex_unlock(&h->mu);
  if (!last) return;
  router_set(hs->rt, NULL);
  mcp_session_close(hs->mcp);
  mcp_sink_unref(&hs->rt->base);
  free(hs);
}

static http_session *session_find(http_server *h, const char *id) {
  if (!id) return NULL;
  pthread_mutex_lock(&h->mu);
  http_session *hs = h->sessions;
  while (hs && strcmp(hs->id, id)) hs = hs->next;
  if (hs) {
    hs->refs++;
    hs->last_ms = asbi_now_ms();
  }
  pthread_mutex_unlock(&h->mu);
  return hs;
}

/* Take hs out of the list (its calls are cancelled, its GET stream ends);
 * it is freed once the last request using it is done. */
static void session_end(http_server *h, http_session *hs) {
  pthread_mutex_lock(&h->mu);
  int was = hs->listed;
  if (was) {
    for (http_session **p = &h->sessions; *p; p = &(*p)->next)
      if (*p == hs) {
        *p = hs->next;
        break;
      }
    hs->listed = 0;
    h->nsessions--;
  }
  pthread_mutex_unlock(&h->mu);
  if (!was) return;
  mcp_logf(h->srv, "http session %.8s... ended", hs->id);
  mcp_session_cancel(hs->mcp);
  router_set(hs->rt, NULL);
  session_release(h, hs);
}

static http_session *session_new(http_server *h) {
  http_session *hs = calloc(1, sizeof *hs);
  router *rt = calloc(1, sizeof *rt);
  if (!hs || !rt || asbi_random_hex(hs->id, 32) != 0) {
    free(hs);
    free(rt);
    return NULL;
  }
  atomic_init(&rt->base.refs, 1);
  rt->base.send = router_send;
  rt->base.destroy = router_destroy;
  pthread_mutex_init(&rt->mu, NULL);
  hs->rt = rt;
  hs->mcp = mcp_session_new(h->srv, &rt->base, "http");
  if (!hs->mcp) {
    mcp_sink_unref(&rt->base);
    free(hs);
    return NULL;
  }
  hs->refs = 1; /* the creating request's */
  hs->last_ms = asbi_now_ms();
  return hs;
}

static void *reaper_main(void *arg) {
  http_server *h = arg;
  long idle_ms = h->o->session_idle_s * 1000L;
  pthread_mutex_lock(&h->mu);
  while (!h->stopping) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += REAP_EVERY_MS / 1000;
    pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    if (h->stopping) break;
    uint64_t now = asbi_now_ms();
    http_session *victim = NULL;
    for (http_session *hs = h->sessions; hs && !victim; hs = hs->next) {
      pthread_mutex_lock(&hs->rt->mu);
      int streaming = hs->rt->get != NULL;
      pthread_mutex_unlock(&hs->rt->mu);
      if (hs->refs == 1 && !streaming && now - hs->last_ms > (uint64_t)idle_ms &&
          !mcp_session_busy(hs->mcp)) {
        victim = hs;
        hs->refs++;
      }
    }
    if (victim) {
      pthread_mutex_unlock(&h->mu);
      mcp_logf(h->srv, "http session %.8s... idle: ending it", victim->id);
      session_end(h, victim);
      session_release(h, victim);
      pthread_mutex_lock(&h->mu);
    }
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- requests ------------------------------------------------------------------------ */

typedef struct req {
  http_server *h;
  asbi_httpd_body body;
  int started, answered;
  size_t discarded;
} req;

/* A request's state, from its request line on (the module's uri hook). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)uri;
  (void)c;
  http_server *h = cls;
  req *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->h = h;
  asbi_httpd_body_init(&r->body, h->srv->cfg.max_message);
  return r;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  req *r = *con_cls;
  if (!r) return;
  asbi_httpd_body_free(&r->body);
  free(r);
  *con_cls = NULL;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *ctype,
                               char *body, const char *sid) {
  struct MHD_Response *resp =
      body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
           : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!resp) {
    free(body);
    return MHD_NO;
  }
  if (body && ctype) MHD_add_response_header(resp, "Content-Type", ctype);
  if (sid) MHD_add_response_header(resp, "Mcp-Session-Id", sid);
  if (status == 401)
    MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"agent-sandbox-mcp\"");
  if (status == 405) MHD_add_response_header(resp, "Allow", "GET, POST, DELETE");
  enum MHD_Result ret = MHD_queue_response(c, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

/* An HTTP error with a JSON-RPC error body (no id: MCP transports). */
static enum MHD_Result fail(struct MHD_Connection *c, unsigned status, int code, const char *msg) {
  return respond(c, status, "application/json", mcp_rpc_error(NULL, 0, code, msg, NULL), NULL);
}

static const char *header(struct MHD_Connection *c, const char *name) {
  return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static int loopback_host(const char *h, size_t n) {
  return (n == 9 && !strncasecmp(h, "localhost", 9)) || (n == 9 && !strncmp(h, "127.0.0.1", 9)) ||
         (n == 5 && !strncmp(h, "[::1]", 5));
}

/* A browser page's Origin must be ours: a loopback one, or one given with
 * --allow-origin. No Origin (not a browser) is fine. */
static int origin_ok(http_server *h, const char *origin) {
  if (!origin) return 1;
  for (char **a = h->o->allowed_origins; a && *a; a++)
    if (!strcmp(*a, origin)) return 1;
  const char *rest = asbi_startswith(origin, "http://")    ? origin + 7
                     : asbi_startswith(origin, "https://") ? origin + 8
                                                           : NULL;
  if (!rest) return 0;
  size_t n = strlen(rest);
  const char *colon = rest[0] == '[' ? strstr(rest, "]:") : strchr(rest, ':');
  if (rest[0] == '[' && colon) colon++;
  size_t hn = colon ? (size_t)(colon - rest) : n;
  if (colon) {
    for (const char *p = colon + 1; *p; p++)
      if (*p < '0' || *p > '9') return 0;
    if (!colon[1]) return 0;
  }
  return loopback_host(rest, hn);
}

static int token_ok(http_server *h, struct MHD_Connection *c) {
  if (h->o->no_auth) return 1;
  const char *a = header(c, "Authorization");
  if (!a || strncasecmp(a, "Bearer ", 7) != 0) return 0;
  a += 7;
  while (*a == ' ') a++;
  return asbi_httpd_token_eq(a, h->o->token);
}

static int accepts(struct MHD_Connection *c, const char *type) {
  const char *a = header(c, "Accept");
  if (!a) return 0;
  return strstr(a, type) != NULL || strstr(a, "*/*") != NULL;
}

/* Tool calls and resource reads may take long and talk meanwhile. */
static int streams_well(const mcp_parsed *p) {
  for (size_t i = 0; i < p->count; i++)
    if (p->msgs[i].kind == MCP_MSG_REQUEST &&
        (!strcmp(p->msgs[i].method, "tools/call") || !strcmp(p->msgs[i].method, "resources/read") ||
         !strcmp(p->msgs[i].method, "resources/list")))
      return 1;
  return 0;
}

static enum MHD_Result sse_response(struct MHD_Connection *c, stream *st) {
  mcp_sink_ref(&st->base); /* MHD's, dropped in sse_free */
  if (!stream_list(st)) {
    mcp_sink_unref(&st->base);
    return fail(c, 503, MCP_SERVER_ERROR, "shutting down");
  }
  struct MHD_Response *resp =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, st, sse_free);
  if (!resp) {
    sse_free(st);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type", "text/event-stream");
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  enum MHD_Result ret = MHD_queue_response(c, 200, resp);
  MHD_destroy_response(resp);
  return ret;
}

static enum MHD_Result do_initialize(http_server *h, struct MHD_Connection *c, mcp_parsed *p) {
  pthread_mutex_lock(&h->mu);
  int full = h->nsessions >= h->o->max_sessions || h->stopping;
  pthread_mutex_unlock(&h->mu);
  if (full) {
    mcp_parsed_free(p);
    return fail(c, 503, MCP_SERVER_ERROR, "too many sessions; end one (DELETE) or retry later");
  }
  http_session *hs = session_new(h);
  stream *st = hs ? stream_new(h, 0, 0, NULL) : NULL;
  if (!st) {
    mcp_parsed_free(p);
    if (hs) session_release(h, hs);
    return fail(c, 500, MCP_INTERNAL_ERROR, "out of memory");
  }
  mcp_session_handle_parsed(hs->mcp, p, &st->base); /* answered at once */
  pthread_mutex_lock(&st->mu);
  char *answer = st->answer;
  st->answer = NULL;
  pthread_mutex_unlock(&st->mu);
  mcp_sink_unref(&st->base);
  pthread_mutex_lock(&hs->mcp->mu);
  int ok = hs->mcp->state == 1;
  pthread_mutex_unlock(&hs->mcp->mu);
  if (!ok) {
    session_release(h, hs);
    return respond(c, 400, "application/json", answer, NULL);
  }
  pthread_mutex_lock(&h->mu);
  hs->next = h->sessions;
  h->sessions = hs;
  hs->listed = 1;
  hs->refs++; /* the list's */
  h->nsessions++;
  pthread_mutex_unlock(&h->mu);
  mcp_logf(h->srv, "http session %.8s... started", hs->id);
  enum MHD_Result ret = respond(c, 200, "application/json", answer, hs->id);
  session_release(h, hs);
  return ret;
}

/* The session a request names; answers 400/404 itself (then NULL). */
static http_session *request_session(http_server *h, struct MHD_Connection *c,
                                     enum MHD_Result *ret) {
  const char *sid = header(c, "Mcp-Session-Id");
  if (!sid) {
    *ret = fail(c, 400, MCP_INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required (initialize first)");
    return NULL;
  }
  http_session *hs = session_find(h, sid);
  if (!hs) {
    *ret = fail(c, 404, MCP_INVALID_REQUEST, "Session not found: initialize a new session");
    return NULL;
  }
  const char *pv = header(c, "MCP-Protocol-Version");
  if (pv && mcp_revision_find(pv) < 0) {
    char msg[160];
    snprintf(msg, sizeof msg, "Bad Request: unsupported MCP-Protocol-Version %.40s", pv);
    *ret = fail(c, 400, MCP_INVALID_REQUEST, msg);
    session_release(h, hs);
    return NULL;
  }
  return hs;
}

static enum MHD_Result do_post(http_server *h, struct MHD_Connection *c, req *r) {
  if (!accepts(c, "application/json") && !accepts(c, "text/event-stream"))
    return fail(c, 406, MCP_INVALID_REQUEST,
                "Not Acceptable: Accept must list application/json and text/event-stream");
  mcp_parsed p;
  int rc = mcp_rpc_parse(&p, r->body.buf.data ? r->body.buf.data : "", r->body.buf.len);
  if (rc == -1) {
    mcp_parsed_free(&p);
    return fail(c, 500, MCP_INTERNAL_ERROR, "out of memory");
  }
  if (p.err_code) {
    enum MHD_Result ret = fail(c, 400, p.err_code, p.err_msg);
    mcp_parsed_free(&p);
    return ret;
  }
  if (!p.batch && p.msgs[0].kind == MCP_MSG_REQUEST && !strcmp(p.msgs[0].method, "initialize")) {
    if (header(c, "Mcp-Session-Id")) {
      mcp_parsed_free(&p);
      return fail(c, 400, MCP_INVALID_REQUEST,
                  "Bad Request: initialize starts a new session; send it without Mcp-Session-Id");
    }
    return do_initialize(h, c, &p);
  }
  enum MHD_Result ret = MHD_YES;
  http_session *hs = request_session(h, c, &ret);
  if (!hs) {
    mcp_parsed_free(&p);
    return ret;
  }
  size_t replies = mcp_parsed_replies(&p);
  if (replies == 0) { /* notifications and responses only */
    mcp_session_handle_parsed(hs->mcp, &p, &discard_sink);
    session_release(h, hs);
    return respond(c, 202, NULL, NULL, NULL);
  }
  int sse = accepts(c, "text/event-stream") && !p.batch && streams_well(&p);
  stream *st = stream_new(h, sse, 0, &hs->rt->base);
  if (!st) {
    mcp_parsed_free(&p);
    session_release(h, hs);
    return fail(c, 500, MCP_INTERNAL_ERROR, "out of memory");
  }
  mcp_session_handle_parsed(hs->mcp, &p, &st->base);
  session_release(h, hs);
  if (sse) {
    ret = sse_response(c, st);
    mcp_sink_unref(&st->base);
    return ret;
  }
  /* JSON: this connection's thread waits for the answer. */
  pthread_mutex_lock(&st->mu);
  while (!st->got_final && !st->closed) pthread_cond_wait(&st->cv, &st->mu);
  char *answer = st->answer;
  st->answer = NULL;
  pthread_mutex_unlock(&st->mu);
  mcp_sink_unref(&st->base);
  if (!answer) return respond(c, 202, NULL, NULL, NULL); /* cancelled: no answer */
  return respond(c, 200, "application/json", answer, NULL);
}

static enum MHD_Result do_get(http_server *h, struct MHD_Connection *c) {
  if (!accepts(c, "text/event-stream"))
    return fail(c, 406, MCP_INVALID_REQUEST, "Not Acceptable: GET needs Accept: text/event-stream");
  enum MHD_Result ret = MHD_YES;
  http_session *hs = request_session(h, c, &ret);
  if (!hs) return ret;
  pthread_mutex_lock(&hs->rt->mu);
  int busy = hs->rt->get && !hs->rt->get->closed;
  pthread_mutex_unlock(&hs->rt->mu);
  if (busy) {
    session_release(h, hs);
    return fail(c, 409, MCP_INVALID_REQUEST, "Conflict: this session already has a GET stream");
  }
  stream *st = stream_new(h, 1, 1, NULL);
  if (!st) {
    session_release(h, hs);
    return fail(c, 500, MCP_INTERNAL_ERROR, "out of memory");
  }
  st->rt = hs->rt;
  mcp_sink_ref(&hs->rt->base);
  router_set(hs->rt, st);
  session_release(h, hs);
  ret = sse_response(c, st);
  mcp_sink_unref(&st->base);
  return ret;
}

static enum MHD_Result do_delete(http_server *h, struct MHD_Connection *c) {
  enum MHD_Result ret = MHD_YES;
  http_session *hs = request_session(h, c, &ret);
  if (!hs) return ret;
  session_end(h, hs);
  session_release(h, hs);
  return respond(c, 200, NULL, NULL, NULL);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)version;
  http_server *h = cls;
  req *r = *con_cls;
  if (!r) return MHD_NO;
  if (r->answered) {
    *upload_size = 0;
    return MHD_YES;
  }
  int post = !strcmp(method, "POST");
  if (!r->started) {
    r->started = 1;
    /* The order matters: a page from elsewhere learns nothing (403 before
     * anything else), then the token, then the rest. */
    if (!origin_ok(h, header(c, "Origin"))) {
      r->answered = 1;
      return fail(c, 403, MCP_INVALID_REQUEST, "Forbidden: Origin not allowed");
    }
    if (!token_ok(h, c)) {
      r->answered = 1;
      return fail(c, 401, MCP_INVALID_REQUEST, "Unauthorized: send Authorization: Bearer <token>");
    }
    if (strcmp(url, h->o->path) != 0) {
      r->answered = 1;
      char msg[160];
      snprintf(msg, sizeof msg, "Not Found: the MCP endpoint is %s", h->o->path);
      return fail(c, 404, MCP_INVALID_REQUEST, msg);
    }
    if (!strcmp(method, "GET")) {
      r->answered = 1;
      return do_get(h, c);
    }
    if (!strcmp(method, "DELETE")) {
      r->answered = 1;
      return do_delete(h, c);
    }
    if (!post) {
      r->answered = 1;
      return fail(c, 405, MCP_INVALID_REQUEST, "Method Not Allowed: use POST, GET or DELETE");
    }
    /* Over the limit: read on and drop the body (up to DISCARD_MAX), then
     * answer 413; answering first would reset a client still sending. */
    const char *cl = header(c, "Content-Length");
    int64_t n = -1;
    if (cl && asbi_parse_i64(cl, strlen(cl), &n) == 0 && n > (int64_t)h->srv->cfg.max_message) {
      if (n > (int64_t)DISCARD_MAX) return MHD_NO;
      r->body.too_big = 1;
      asbi_httpd_body_free(&r->body);
    }
    return MHD_YES;
  }
  if (*upload_size) {
    if (r->body.too_big) {
      r->discarded += *upload_size;
      if (r->discarded > DISCARD_MAX) return MHD_NO;
    } else {
      asbi_httpd_body_append(&r->body, upload, *upload_size);
    }
    *upload_size = 0;
    return MHD_YES;
  }
  r->answered = 1;
  if (r->body.too_big) {
    char msg[160];
    snprintf(msg, sizeof msg, "Payload Too Large: a message may have at most %zu bytes",
             h->srv->cfg.max_message);
    return fail(c, 413, MCP_INVALID_REQUEST, msg);
  }
  return do_post(h, c, r);
}

/* ---- listening and running ------------------------------------------------------------ */

/* --listen: HOST:PORT, [IPv6]:PORT or PORT, HOST an IP address. -1 when
 * the spec is not that, -2 (message in err) when it cannot be listened
 * on. */
static int listen_on(const char *spec, int *port_out, char *host_out, size_t host_len, char *err,
                     size_t errlen) {
  char host[128] = "127.0.0.1";
  const char *portp = spec;
  if (spec[0] == '[') {
    const char *e = strchr(spec, ']');
    if (!e || e[1] != ':') return -1;
    snprintf(host, sizeof host, "%.*s", (int)(e - spec - 1), spec + 1);
    portp = e + 2;
  } else if (strchr(spec, ':')) {
    const char *colon = strrchr(spec, ':');
    snprintf(host, sizeof host, "%.*s", (int)(colon - spec), spec);
    portp = colon + 1;
  }
  int64_t port;
  if (asbi_parse_i64(portp, strlen(portp), &port) != 0 || port < 0 || port > 65535) return -1;
  struct in6_addr ip;
  int v6 = 0;
  if (inet_pton(AF_INET, host, &ip) != 1) {
    if (inet_pton(AF_INET6, host, &ip) != 1) return -1; /* not "localhost" either */
    v6 = 1;
  }
  asbi_httpd_addr a = {NULL, host, (int)port};
  int fd = asbi_httpd_listen(&a, port_out, err, errlen);
  if (fd < 0) return -2;
  snprintf(host_out, host_len, v6 ? "[%s]" : "%s", host);
  return fd;
}

int mcp_http_run(mcp_server *srv, const mcp_http_options *o) {
  http_server h;
  memset(&h, 0, sizeof h);
  h.srv = srv;
  h.o = o;
  int port = 0;
  char host[140], err[256];
  int fd = listen_on(o->listen, &port, host, sizeof host, err, sizeof err);
  if (fd == -1) {
    fprintf(stderr, "agent-sandbox-mcp: --listen %s: want HOST:PORT with an IP address\n",
            o->listen);
    return 2;
  }
  if (fd < 0) {
    fprintf(stderr, "agent-sandbox-mcp: cannot listen on %s: %s\n", o->listen, err);
    return 1;
  }
  pthread_mutex_init(&h.mu, NULL);
  pthread_cond_init(&h.cv, NULL);
  /* Idle keep-alive connections are libmicrohttpd's timeout's business; a
   * head gets HEAD_TIMEOUT_MS; at most half the slots wait for a request
   * (the module's default). */
  asbi_httpd_opts ho = {
      .listen_fd = fd,
      .handler = handler,
      .handler_cls = &h,
      .completed = on_done,
      .completed_cls = &h,
      .uri = on_uri,
      .uri_cls = &h,
      .max_connections = MAX_CONNECTIONS,
      .head_timeout_ms = HEAD_TIMEOUT_MS,
      .idle_timeout_s = 120u,
  };
  h.d = asbi_httpd_start(&ho, err, sizeof err);
  if (!h.d) {
    fprintf(stderr, "agent-sandbox-mcp: %s\n", err);
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
    return 1;
  }
  pthread_t reaper;
  int reaper_ok = pthread_create(&reaper, NULL, reaper_main, &h) == 0;
  printf("listening on http://%s:%d%s\n", host, port, o->path);
  fflush(stdout);

  for (;;) { /* until a signal */
    struct pollfd p = {mcp_signal_pipe[0], POLLIN, 0};
    int n = poll(&p, 1, -1);
    if (n < 0 && errno == EINTR) continue;
    char b;
    if (n > 0 && read(mcp_signal_pipe[0], &b, 1) == 1 && b == 'o') continue;
    break;
  }

  /* Stop: no new connections, every session ends (its calls cancelled,
   * its default sandbox killed), every stream closes, then MHD stops. */
  pthread_mutex_lock(&h.mu);
  h.stopping = 1;
  pthread_cond_broadcast(&h.cv);
  pthread_mutex_unlock(&h.mu);
  if (reaper_ok) pthread_join(reaper, NULL);
  asbi_httpd_quiesce(h.d);
  for (;;) {
    pthread_mutex_lock(&h.mu);
    http_session *hs = h.sessions;
    if (hs) hs->refs++;
    pthread_mutex_unlock(&h.mu);
    if (!hs) break;
    session_end(&h, hs);
    session_release(&h, hs);
  }
  pthread_mutex_lock(&h.mu);
  for (stream *st = h.streams; st; st = st->next) stream_close(st);
  pthread_mutex_unlock(&h.mu);
  asbi_httpd_stop(h.d);
  pthread_mutex_destroy(&h.mu);
  pthread_cond_destroy(&h.cv);
  return 0;
}
