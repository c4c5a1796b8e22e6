/* libmicrohttpd glue: one daemon on TCP (127.0.0.1:49982 by default) and
 * one on a unix socket in the state dir; each request is either sandbox
 * traffic (router.c, no API key: envd checks the sandbox's own token) or a
 * control-plane call (api.c, API key required; GET /health alone is open).
 *
 * Every request head is checked before anything acts on it (field names
 * are tokens, values and the target hold no control bytes, one framing:
 * Content-Length or Transfer-Encoding: chunked, never both or twice), so
 * the router forwards only what libmicrohttpd and the server behind it read
 * the same way. Slow clients: a request head must arrive within
 * --header-timeout of the connection's start or of its previous request
 * (httpd/httpd.h, util/connguard.h), TCP clients get --max-connections-per-ip connections per
 * address (front.c), and the unix socket has its own connection budget.
 * SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "api_builder.h"
#include "builder.h"
#include "cmds.h"
#include "front.h"
#include "httpd/httpd.h"
#include "loopurl.h"
#include "portal.h"
#include "registry.h"
#include "proto/http1.h"
#include "proto/url.h"
#include "router.h"
#include "server.h"
#include "tlsca.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/util.h"
#include "volumes.h"

#define API_BODY_MAX (1u << 20)
#define BUILD_BODY_MAX (128u << 20) /* POST /templates/builds: a tar */

typedef struct server {
  asbi_httpd *tcp, *unx;
  front *front; /* the TCP port's acceptor: plain HTTP and TLS (front.c) */
  tlsca *ca;    /* NULL: the CA could not be made; TLS is refused */
  loopurl *lu;  /* loopback URLs' listeners (loopurl.c) */
  portal *pt;   /* the sandboxes' portals (portal.c) */
} server;

/* What a request turned out to be, once its head was read. */
typedef enum req_kind {
  REQ_UNDECIDED = 0, /* the head is not checked yet */
  REQ_API,           /* a control-plane call (api.c) */
  REQ_ROUTED,        /* sandbox traffic, forwarded (router.c) */
  REQ_ANSWERED,      /* a reply is queued: swallow the rest of the body */
  REQ_COMMANDS,      /* a template's custom commands (cmds.c) */
  REQ_VOLUME,        /* the volume content API (volumes.c), its own token */
} req_kind;

typedef struct req_ctx {
  char *raw_uri;
  req_kind kind;
  char sid[64];
  int port;
  asbi_httpd_body body;
  route_ctx *route;
  engine *build_of; /* a POST /templates/builds: counted in its build_requests */
} req_ctx;

/* The raw target (query string, escapes as sent): the router forwards it
 * as it came, the API reads its query. */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)cls;
  (void)c;
  req_ctx *r = calloc(1, sizeof *r);
  if (r) {
    r->raw_uri = asbi_strdup(uri);
    asbi_httpd_body_init(&r->body, API_BODY_MAX);
  }
  return r;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  req_ctx *r = *con_cls;
  if (!r) return;
  /* after its reply was sent (or the connection ended): server_drain_builds */
  if (r->build_of) __atomic_sub_fetch(&r->build_of->build_requests, 1, __ATOMIC_ACQ_REL);
  router_abort(r->route);
  asbi_httpd_body_free(&r->body);
  free(r->raw_uri);
  free(r);
  *con_cls = NULL;
}

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *resp) {
  if (!resp) return MHD_NO;
  enum MHD_Result ret = MHD_queue_response(c, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static enum MHD_Result queue_json(struct MHD_Connection *c, unsigned status, char *body,
                                  const api_reply *rep) {
  struct MHD_Response *resp =
      body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
           : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  if (body) MHD_add_response_header(resp, "Content-Type", "application/json");
  if (rep && rep->next_token[0]) MHD_add_response_header(resp, "X-Next-Token", rep->next_token);
  if (rep && rep->total_running >= 0) {
    char n[32];
    snprintf(n, sizeof n, "%lld", rep->total_running);
    MHD_add_response_header(resp, "X-Total-Running", n);
  }
  return queue(c, status, resp);
}

static enum MHD_Result error(struct MHD_Connection *c, unsigned status, const char *msg) {
  return queue(c, status, asbi_httpd_json_error(status, "%s", msg));
}

/* ---- the request head ------------------------------------------------------------- */

typedef struct head_check {
  int n_cl, n_te, te_other;
  const char *bad;
} head_check;

static enum MHD_Result check_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
  (void)kind;
  head_check *h = cls;
  /* libmicrohttpd keeps a name's whitespace before the colon
   * ("Transfer-Encoding : chunked" is a field named "Transfer-Encoding "),
   * lets a bare CR through in values, and cuts values at a NUL. */
  if (!asbi_h1_is_token(key, strlen(key))) {
    h->bad = "a header field name that is not a token (whitespace before the colon?)";
    return MHD_NO;
  }
  if (value && !asbi_h1_value_ok(value, strlen(value))) {
    h->bad = "a control character (CR, LF, ...) in a header field value";
    return MHD_NO;
  }
  if (asbi_strcaseeq(key, "Content-Length")) {
    h->n_cl++;
  } else if (asbi_strcaseeq(key, "Transfer-Encoding")) {
    h->n_te++;
    /* exactly what libmicrohttpd decodes as chunked; anything else it
     * would read to the end of the connection */
    if (!value || !asbi_strcaseeq(value, "chunked")) h->te_other = 1;
  }
  return MHD_YES;
}

/* 0 if the head may be acted on; else the status (400, 501) and why. */
static unsigned head_problem(struct MHD_Connection *c, const char *method, const char *target,
                             const char **why) {
  head_check h = {0, 0, 0, NULL};
  if (!asbi_h1_is_token(method, strlen(method))) {
    *why = "the method is not a token";
    return 400;
  }
  if (!target || !asbi_h1_target_ok(target, strlen(target))) {
    *why = "a control character or space in the request target";
    return 400;
  }
  MHD_get_connection_values(c, MHD_HEADER_KIND, check_field, &h);
  if (h.bad) {
    *why = h.bad;
    return 400;
  }
  if (h.n_te && h.n_cl) {
    *why = "both Content-Length and Transfer-Encoding (RFC 9112 section 6.1)";
    return 400;
  }
  if (h.n_te > 1 || h.n_cl > 1) {
    *why = h.n_te > 1 ? "more than one Transfer-Encoding" : "more than one Content-Length";
    return 400;
  }
  if (h.te_other) {
    *why = "a Transfer-Encoding other than chunked";
    return 501;
  }
  return 0;
}

static int authorized(engine *e, struct MHD_Connection *c) {
  const char *k = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key");
  const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  if (!k && auth && strncasecmp(auth, "Bearer ", 7) == 0) k = auth + 7;
  return asbi_httpd_token_eq(k, e->api_key);
}

/* The volume content API's reply: JSON, or a file's bytes from its fd. */
static enum MHD_Result volume_reply(engine *e, struct MHD_Connection *c, req_ctx *r,
                                    const char *method, const char *url) {
  r->kind = REQ_ANSWERED;
  if (r->body.too_big) {
    char msg[64];
    snprintf(msg, sizeof msg, "request body over %zu MiB", r->body.buf.max >> 20);
    return error(c, 413, msg);
  }
  api_req q;
  memset(&q, 0, sizeof q);
  q.method = method;
  q.path = url;
  const char *qs = r->raw_uri ? strchr(r->raw_uri, '?') : NULL;
  q.query = qs ? qs + 1 : "";
  q.body = r->body.buf.data;
  q.body_len = r->body.buf.len;
  vol_reply vr;
  volumes_content(e, &q, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"), &vr);
  api_req_free(&q);
  if (vr.fd < 0) return queue_json(c, (unsigned)vr.status, vr.body, NULL);
  struct MHD_Response *resp = MHD_create_response_from_fd64(vr.size, vr.fd); /* takes the fd */
  if (!resp) {
    close(vr.fd);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
  return queue(c, (unsigned)vr.status, resp);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  engine *e = cls;
  req_ctx *r = *con_cls;
  if (!r) return MHD_NO;
  if (r->kind == REQ_UNDECIDED) {
    const char *why = NULL;
    unsigned bad = head_problem(c, method, r->raw_uri, &why);
    if (bad) {
      r->kind = REQ_ANSWERED;
      return error(c, bad, why);
    }
    char id[64];
    int port = 0;
    /* server_stop clears it while requests end; s lives until they did */
    server *sv = __atomic_load_n(&e->server, __ATOMIC_ACQUIRE);
    const union MHD_ConnectionInfo *ci =
        sv && sv->lu ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
    /* through a sandbox's portal (portal.c): sandboxes' URLs only, never
     * the control plane, a loopback URL or an unnamed signed request */
    char from[ENGINE_ID_LEN + 8];
    int portal = portal_source(e, c, from, sizeof from);
    if (portal && !router_match(c, id, sizeof id, &port)) {
      r->kind = REQ_ANSWERED;
      return error(c, 403,
                   "from inside a sandbox the engine's port serves sandboxes' URLs only "
                   "(<port>-<sandbox id>.<domain>)");
    }
    if (portal ||
        (ci && loopurl_match(sv->lu, e->listen_port, ci->connect_fd, id, sizeof id, &port)) ||
        router_match(c, id, sizeof id, &port) ||
        router_match_signed(e, c, url, method, id, sizeof id, &port)) {
      if (port > 0 && cmds_wants(e, id, port, url)) {
        r->kind = REQ_COMMANDS;
        snprintf(r->sid, sizeof r->sid, "%s", id);
        r->port = port;
        return MHD_YES;
      }
      struct MHD_Response *err = NULL;
      unsigned st = 0;
      r->route =
          router_begin(e, c, r->raw_uri ? r->raw_uri : url, method, version, id, port, &err, &st);
      if (!r->route) {
        r->kind = REQ_ANSWERED;
        return queue(c, st, err);
      }
      r->kind = REQ_ROUTED;
      return MHD_YES;
    }
    if (asbi_startswith(url, "/volumecontent/")) {
      /* authorised by the volume's token, not the API key: before the body */
      int st = volumes_content_authorized(
          e, url, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"));
      if (st) {
        r->kind = REQ_ANSWERED;
        return error(c, (unsigned)st,
                     st == 401 ? "missing or invalid volume token (Authorization: Bearer <token>)"
                               : "no such volume");
      }
      r->kind = REQ_VOLUME;
      r->body.buf.max = VOLUME_BODY_MAX;
      return MHD_YES;
    }
    r->kind = REQ_API;
    if (strcmp(url, "/health") == 0 && strcmp(method, "GET") == 0) {
      /* open: tells a caller the engine is up, nothing else */
      r->kind = REQ_ANSWERED;
      return queue(c, 204, MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
    }
    if (strcmp(method, "POST") == 0 &&
        (strcmp(url, "/templates/builds") == 0 || strcmp(url, "/v2/templates/builds") == 0)) {
      r->body.buf.max = BUILD_BODY_MAX;
      r->build_of = e;
      __atomic_add_fetch(&e->build_requests, 1, __ATOMIC_ACQ_REL);
    }
    int upload = api_builder_upload_ok(e, method, url, r->raw_uri);
    if (upload) r->body.buf.max = BUILDER_UPLOAD_MAX; /* E2B's Template builder's files */
    if (!upload && !authorized(e, c)) {
      r->kind = REQ_ANSWERED;
      return error(c, 401, "missing or invalid API key (X-API-Key)");
    }
    return MHD_YES;
  }
  if (r->kind == REQ_ANSWERED) { /* answered early: swallow the rest of the body */
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size) {
    if (r->kind == REQ_ROUTED) {
      router_body(r->route, upload, *upload_size);
    } else {
      asbi_httpd_body_append(&r->body, upload, *upload_size);
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (r->kind == REQ_COMMANDS) {
    r->kind = REQ_ANSWERED;
    if (r->body.too_big) return error(c, 413, "request body over 1 MiB");
    int st = 500;
    const char *tok = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
    char *body =
        cmds_serve(e, r->sid, r->port, method, url, tok, r->body.buf.data, r->body.buf.len, &st);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(body ? strlen(body) : 0, body ? body : (void *)"",
                                        body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
      free(body);
      return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    return queue(c, (unsigned)st, resp);
  }
  if (r->kind == REQ_VOLUME) return volume_reply(e, c, r, method, url);
  if (r->kind == REQ_ROUTED) {
    unsigned st = 0;
    struct MHD_Response *resp = router_finish(r->route, &st);
    r->route = NULL; /* owned by the response (or freed) now */
    r->kind = REQ_ANSWERED;
    return queue(c, st, resp);
  }
  r->kind = REQ_ANSWERED;
  if (r->body.too_big) {
    char msg[64];
    snprintf(msg, sizeof msg, "request body over %zu MiB", r->body.buf.max >> 20);
    return error(c, 413, msg);
  }
  api_req q;
  memset(&q, 0, sizeof q);
  q.method = method;
  q.path = url;
  const char *qs = r->raw_uri ? strchr(r->raw_uri, '?') : NULL;
  q.query = qs ? qs + 1 : "";
  q.body = r->body.buf.data;
  q.body_len = r->body.buf.len;
  api_reply rep = {0, NULL, "", -1};
  api_handle(e, &q, &rep);
  api_req_free(&q);
  return queue_json(c, (unsigned)rep.status, rep.body, &rep);
}

/* ---- start / stop ------------------------------------------------------------------- */

/* A request head must arrive within --header-timeout of the connection's
 * start or of its previous request; after the head, 640 s of silence end
 * a connection (long command streams send keepalives well within that).
 * The unix socket's daemon applies --max-connections and lets half of
 * them wait for a head; the TCP port's gets its connections from the
 * front, which applies the limits (front.h), and has room beyond them,
 * and lets a quarter wait for a head, or --max-connections-per-ip if that
 * is more (up to half): one client's burst of new connections, all in
 * before the daemon's threads have read their heads, is not taken for
 * slow clients and cut. */
static asbi_httpd *start_daemon(engine *e, int fd, front *fr, char *err, size_t n) {
  unsigned hdr_ms = (unsigned)e->header_timeout_s * 1000u;
  unsigned max = e->max_conns ? e->max_conns : 1000u;
  unsigned waiting = fr ? max / 4 : max / 2; /* the front lets the other quarter wait */
  if (fr && waiting < e->max_conns_per_ip)   /* with the front's quarter, under three quarters */
    waiting = e->max_conns_per_ip < max / 2 ? e->max_conns_per_ip : max / 2;
  asbi_httpd_opts o = {
      .listen_fd = fd,
      .handler = handler,
      .handler_cls = e,
      .completed = completed,
      .closed = fr ? front_conn_closed : NULL,
      .closed_cls = fr,
      .idle = fr ? front_conn_idle : NULL,
      .idle_cls = fr,
      .uri = uri_log,
      .max_connections = fr ? front_mhd_limit(max) : max,
      .head_timeout_ms = hdr_ms,
      .wait_timeout_ms = hdr_ms,
      .max_waiting = waiting ? waiting : 1,
      .idle_timeout_s = 640u,
      .conn_memory = (size_t)(256 * 1024),
  };
  return asbi_httpd_start(&o, err, n);
}

/* File descriptors one of --max-connections may take: on the TCP port
 * three (a TLS connection: the client's socket and a socketpair to
 * libmicrohttpd), one more parked beside it (front.c: at most
 * --max-connections parked), and one on the unix socket (its daemon
 * serves --max-connections of its own). */
#define FDS_PER_CONN 5u
/* Kept beside a third of what connections take, for everything else the
 * engine opens (a sandbox's files, pidfds, portals and loopback listeners,
 * an image, libcurl, the front's refused connections). */
#define NOFILE_RESERVE 256u

static rlim_t nofile_need(unsigned max) {
  rlim_t conns = (rlim_t)max * FDS_PER_CONN;
  return conns + conns / 3u + NOFILE_RESERVE;
}

/* Fits --max-connections to RLIMIT_NOFILE: past it accept fails with
 * EMFILE for every client, and so does everything else the engine opens,
 * so the connections a flood may hold must leave room. The soft limit is
 * raised as far as --max-connections needs (nofile_need; up to the hard
 * limit, and no further than needed: the engine's helpers inherit it, and
 * sandboxes get their own, secure.c); where the hard limit is too low (it
 * takes CAP_SYS_RESOURCE to raise), --max-connections is lowered to fit
 * it, and that is logged. */
static void fit_nofile(engine *e) {
  unsigned max = e->max_conns ? e->max_conns : 1000u;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
  rlim_t need = nofile_need(max);
  if (rl.rlim_cur < need) {
    struct rlimit want = rl;
    want.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  if (rl.rlim_cur >= need) return;
  /* the largest max whose need fits: conns * 4/3 + reserve <= cur */
  rlim_t room = rl.rlim_cur > NOFILE_RESERVE ? rl.rlim_cur - NOFILE_RESERVE : 0;
  rlim_t fit = room * 3u / 4u / FDS_PER_CONN;
  e->max_conns = fit > 16 ? (unsigned)fit : 16u;
  asbi_log("RLIMIT_NOFILE is %llu (hard %llu): --max-connections %u lowered to %u to fit it",
           (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, max, e->max_conns);
}

int server_start(engine *e, const char *listen_addr, const char *socket_path) {
  server *s = calloc(1, sizeof *s);
  if (!s) return -ENOMEM;
  /* TCP: "host:port" (port 0 = pick one); an IPv4 address. */
  char host[256];
  int port = ASBI_ENGINE_PORT;
  const char *colon = strrchr(listen_addr, ':');
  if (colon) {
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen_addr), listen_addr);
    port = atoi(colon + 1);
  } else {
    snprintf(host, sizeof host, "%s", listen_addr);
  }
  struct in_addr ip4;
  if (inet_pton(AF_INET, host, &ip4) != 1) {
    asbi_log("cannot listen on %s: %s", listen_addr, strerror(EINVAL));
    free(s);
    return -EINVAL;
  }
  char err[256];
  asbi_httpd_addr a = {NULL, host, port};
  errno = 0;
  int fd = asbi_httpd_listen(&a, &e->listen_port, err, sizeof err);
  if (fd < 0) {
    int en = errno ? errno : EINVAL;
    asbi_log("cannot listen on %s: %s", listen_addr, err);
    free(s);
    return -en;
  }
  /* The port takes plain HTTP and TLS (front.c): libmicrohttpd gets its
   * connections from the front, not from a socket of its own, and the
   * front applies the connection limits. */
  s->ca = tlsca_open(e->state_dir, err, sizeof err);
  if (!s->ca) asbi_log("https is off: %s", err);
  fit_nofile(e);
  front_limits lim = {(unsigned)e->header_timeout_s * 1000u, e->max_conns, e->max_conns_per_ip, 0};
  s->front = front_new(fd, s->ca ? tlsca_ctx(s->ca) : NULL, &lim);
  s->tcp = s->front ? start_daemon(e, -1, s->front, err, sizeof err) : NULL;
  if (!s->tcp) {
    asbi_log("cannot serve on %s: %s", listen_addr, s->front ? err : strerror(errno));
    front_free(s->front);
    tlsca_free(s->ca);
    free(s);
    return -EIO;
  }
  /* before the front hands it anything (portal_source reads it) */
  __atomic_store_n((struct MHD_Daemon **)&e->tcp_daemon, asbi_httpd_daemon(s->tcp),
                   __ATOMIC_RELEASE);
  int rc = front_start(s->front, s->tcp);
  if (rc == 0) s->lu = loopurl_new(s->front);
  if (rc == 0 && s->lu) s->pt = portal_new(s->front);
  if (rc || !s->lu || !s->pt) {
    int en = rc ? -rc : errno ? errno : EIO;
    front_stop(s->front);
    asbi_log("cannot serve on %s: %s", listen_addr, strerror(en));
    asbi_httpd_stop(s->tcp);
    __atomic_store_n((struct MHD_Daemon **)&e->tcp_daemon, NULL, __ATOMIC_RELEASE);
    front_free(s->front);
    loopurl_free(s->lu);
    tlsca_free(s->ca);
    free(s);
    return -en;
  }
  if (socket_path) {
    /* The state dir is 0700 (so nobody else reaches the socket between
     * its bind and this chmod); the socket is made 0600 too, by chmod,
     * never the process umask (other threads are creating files now). */
    asbi_httpd_addr u = {socket_path, NULL, 0};
    int dummy, ufd = asbi_httpd_listen(&u, &dummy, err, sizeof err);
    if (ufd >= 0 && chmod(socket_path, 0600) != 0) {
      snprintf(err, sizeof err, "chmod: %s", strerror(errno));
      close(ufd);
      ufd = -1;
    }
    if (ufd >= 0) s->unx = start_daemon(e, ufd, NULL, err, sizeof err);
    if (!s->unx) asbi_log("cannot serve on unix socket %s: %s", socket_path, err);
  }
  e->loopback_open = server_loopback_open;
  e->sandbox_gone = server_sandbox_gone;
  e->sandbox_netns = server_sandbox_netns;
  __atomic_store_n(&e->server, s, __ATOMIC_RELEASE);
  loopurl_restore(s->lu, e); /* the adopted sandboxes' loopback URLs */
  /* the sandboxes adopted before the port was open get their portals now */
  pthread_mutex_lock(&e->mu);
  size_t n = e->nsbx;
  char(*ids)[ENGINE_ID_LEN + 1] = n ? calloc(n, sizeof *ids) : NULL;
  for (size_t i = 0; ids && i < n; i++) snprintf(ids[i], sizeof ids[i], "%s", e->sbx[i]->id);
  pthread_mutex_unlock(&e->mu);
  for (size_t i = 0; ids && i < n; i++) {
    sbx *x = reg_get(e, ids[i]);
    if (!x) continue;
    pthread_mutex_lock(&x->mu);
    int running = x->state == SBX_RUNNING || (x->state == SBX_PAUSED && !x->paused_nomem);
    pthread_mutex_unlock(&x->mu);
    if (running) server_sandbox_netns(e, x, 1);
    reg_put(e, x);
  }
  free(ids);
  return 0;
}

/* e->server as the lifecycle thread sees it (it kills sandboxes, so calls
 * server_sandbox_gone, while server_stop runs): taken under this lock,
 * and server_stop clears it under the lock before freeing anything. */
static pthread_mutex_t server_mu = PTHREAD_MUTEX_INITIALIZER;
/* The portals' own (server_sandbox_netns): their callers may hold a
 * sandbox's lock (a kill, a pause), which nothing under server_mu may
 * wait for, so portals never take server_mu; nothing is locked under
 * this one but the portal table and the front. */
static pthread_mutex_t portal_mu = PTHREAD_MUTEX_INITIALIZER;

void server_drain_builds(engine *e, int timeout_ms) {
  /* a poll, not a condition: the count is kept in MHD's callbacks, and
   * this runs once, at the engine's stop */
  uint64_t end = asbi_now_ms() + (uint64_t)timeout_ms;
  while (__atomic_load_n(&e->build_requests, __ATOMIC_ACQUIRE) > 0 && asbi_now_ms() < end)
    usleep(10000);
}

void server_stop(engine *e) {
  pthread_mutex_lock(&server_mu);
  server *s = e->server;
  __atomic_store_n(&e->server, NULL, __ATOMIC_RELEASE); /* no loopback URL opens or closes now */
  pthread_mutex_unlock(&server_mu);
  /* a portal call that saw s has ended; later ones see NULL */
  pthread_mutex_lock(&portal_mu);
  pthread_mutex_unlock(&portal_mu);
  if (!s) return;
  front_stop(s->front); /* first: no new connections, TLS ones end */
  asbi_httpd_stop(s->tcp);
  __atomic_store_n((struct MHD_Daemon **)&e->tcp_daemon, NULL, __ATOMIC_RELEASE);
  front_free(s->front); /* after the daemon: it counts connections out until it stopped */
  asbi_httpd_stop(s->unx);
  loopurl_free(s->lu);
  portal_free(s->pt);
  tlsca_free(s->ca);
  free(s);
}

const char *server_ca_path(engine *e) {
  server *s = e->server;
  return s && s->ca ? tlsca_path(s->ca) : NULL;
}

int server_loopback_open(engine *e, const char *id, int port, int *lport) {
  pthread_mutex_lock(&server_mu);
  server *s = e->server;
  int rc = s && s->lu ? loopurl_open(s->lu, e, id, port, lport) : -ENOTSUP;
  pthread_mutex_unlock(&server_mu);
  return rc;
}

void server_sandbox_gone(engine *e, const char *id) {
  pthread_mutex_lock(&server_mu);
  server *s = e->server;
  if (s) loopurl_sandbox_gone(s->lu, id);
  pthread_mutex_unlock(&server_mu);
  pthread_mutex_lock(&portal_mu);
  s = __atomic_load_n(&e->server, __ATOMIC_ACQUIRE);
  if (s) portal_close(s->pt, id);
  pthread_mutex_unlock(&portal_mu);
}

void server_sandbox_netns(engine *e, sbx *x, int up) {
  pthread_mutex_lock(&portal_mu);
  server *s = __atomic_load_n(&e->server, __ATOMIC_ACQUIRE);
  if (s && up) {
    int rc = portal_open(s->pt, e, x);
    if (rc) asbi_log("sandbox %s: no portal to the engine's URLs: %s", x->id, strerror(-rc));
  } else if (s) {
    portal_close(s->pt, x->id);
  }
  pthread_mutex_unlock(&portal_mu);
}
