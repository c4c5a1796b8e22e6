/* Router: forwards sandbox traffic — requests whose Host is
 * <port>-<id>.<domain> or that carry E2b-Sandbox-Id / E2b-Sandbox-Port — to
 * envd's unix socket (port 49983) or to the port inside the sandbox's
 * network namespace. Request bodies and responses stream through unbuffered
 * (each direction holds at most one chunk); upstream connections are kept
 * alive and reused per sandbox and port.
 *
 * Framing is the router's own, never the client's bytes: server.c has
 * refused heads with both or repeated Content-Length/Transfer-Encoding, and
 * the body goes upstream as libmicrohttpd read it — with the Content-Length
 * it counted, or re-chunked (and then on a connection that is not reused:
 * a server that does not decode chunked bodies would read their bytes as a
 * next request). Hop-by-hop fields (Connection and the fields it names,
 * Keep-Alive, TE, Trailer, Upgrade, Proxy-*) and the engine's API key are
 * not forwarded. An upstream connection goes back to the pool only after a
 * well-framed response to a well-framed request was read to its last byte
 * with nothing after it; anything else closes it, so one connection never
 * carries a reply into another client's exchange.
 * SPDX-License-Identifier: Apache-2.0 */
#include "router.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "apiio.h"
#include "codei.h"
#include "httpd/endhold.h"
#include "httpd/httpd.h"
#include "net/egress/secrets.h"
#include "net/policy.h"
#include "portal.h"
#include "proto/http1.h"
#include "proto/sign.h"
#include "proto/url.h"
#include "registry.h"
#include "sandboxes.h"
#include "util/log.h"
#include "util/buf.h"
#include "util/util.h"

#define READ_CHUNK (256u * 1024u)

/* A request body up to this size goes upstream in one write with the head. */
#define PENDING_MAX (16u * 1024u)

struct route_ctx {
  engine *e;
  sbx *s;
  int port;
  int fd;
  int chunked_up;     /* request body re-chunked upstream */
  uint64_t body_len;  /* Content-Length sent upstream (when not chunked) */
  uint64_t body_sent; /* body bytes sent upstream */
  int no_reuse;       /* close the upstream connection after this exchange */
  int failed;         /* the upstream connection is unusable */
  int write_failed;   /* sending the body failed: the upstream may have
                         answered early (401, 413) and closed */
  int head_request;
  int client_fd;    /* the caller's socket, watched while we wait upstream */
  int hold_fd;      /* client_fd if its response is chunked (endhold.h), else -1 */
  int pooled;       /* fd came from the pool (it may have died meanwhile) */
  asbi_buf pending; /* the request head with a small body, sent as one */
  /* response */
  char *buf;        /* READ_CHUNK bytes */
  size_t have, off; /* bytes in buf, consumed from buf */
  asbi_h1_resp head;
  asbi_h1_chunked chunk;
  uint64_t left; /* LENGTH bodies */
  int done;      /* body fully read */
  int reusable;
  /* in s->busy (fd changes under s->mu from then on) */
  int listed;
  sbx_busy busy;
};

/* Fields that concern one connection only (RFC 9110 section 7.6.1), and
 * the framing fields the router sets itself. Proxy-* also goes. No upgrade
 * (WebSocket) is relayed, so Upgrade is dropped too. */
static const char *const HOP[] = {
    "connection", "keep-alive",     "te",     "trailer", "transfer-encoding",
    "upgrade",    "content-length", "expect", NULL};

static int is_hop(const char *name, size_t n) {
  if (n >= 6 && strncasecmp(name, "proxy-", 6) == 0) return 1;
  for (const char *const *h = HOP; *h; h++)
    if (strlen(*h) == n && strncasecmp(*h, name, n) == 0) return 1;
  return 0;
}

/* Error bodies in E2B's proxy's shape, {"code", "message", "sandboxId"},
 * with our own "error": kind and "reason"? beside it (the C client maps
 * them: core/client/errmap.c). kind is sandbox_not_found, sandbox_paused,
 * port_closed or bad_gateway. */
static struct MHD_Response *json_resp(unsigned status, const char *id, const char *kind,
                                      const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static struct MHD_Response *json_resp(unsigned status, const char *id, const char *kind,
                                      const char *reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cJSON *j = api_error_body((int)status, fmt, ap);
  va_end(ap);
  if (id) cJSON_AddStringToObject(j, "sandboxId", id);
  if (kind) cJSON_AddStringToObject(j, "error", kind);
  if (reason) cJSON_AddStringToObject(j, "reason", reason);
  char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  struct MHD_Response *r =
      text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE)
           : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(r, "Content-Type", "application/json");
  return r;
}

int router_match(struct MHD_Connection *c, char *id, size_t idlen, int *port) {
  const char *hid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id");
  if (hid && *hid) {
    const char *hp = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port");
    int64_t p = ASBI_ENVD_PORT;
    if (hp && (asbi_parse_i64(hp, strlen(hp), &p) || p < 1 || p > 65535)) p = -1;
    snprintf(id, idlen, "%s", hid);
    *port = (int)p;
    return 1;
  }
  const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
  char *pid = NULL;
  int p = 0;
  if (host && asbi_url_parse_sandbox_host(host, &p, &pid) == 0) {
    snprintf(id, idlen, "%s", pid);
    free(pid);
    *port = p;
    return 1;
  }
  return 0;
}

int router_match_signed(engine *e, struct MHD_Connection *c, const char *url, const char *method,
                        char *id, size_t idlen, int *port) {
  if (strcmp(url, "/files") != 0) return 0;
  const char *op = strcmp(method, "GET") == 0    ? "read"
                   : strcmp(method, "POST") == 0 ? "write"
                                                 : NULL;
  const char *sig = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "signature");
  if (!op || !sig || !*sig) return 0;
  const char *path = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
  const char *user = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "username");
  const char *exp = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "signature_expiration");
  /* envd checks the expiration as a number: sign its canonical text, as
   * it does (core/envd/sign.c); the expiry itself is envd's to enforce */
  char expbuf[32];
  int64_t ev = 0;
  if (exp && asbi_parse_i64(exp, strlen(exp), &ev) != 0) return 0;
  if (exp) snprintf(expbuf, sizeof expbuf, "%lld", (long long)ev);
  int found = 0;
  /* One SHA-256 per sandbox (a microsecond each): a signature names no
   * sandbox, only its token can tell. Every token is tried, so the time
   * taken does not say which one matched. */
  pthread_mutex_lock(&e->mu);
  for (size_t i = 0; i < e->nsbx; i++) {
    sbx *s = e->sbx[i];
    if (!s->token[0]) continue;
    char want[ASBI_FILES_SIG_MAX];
    asbi_files_sign(path ? path : "", op, user ? user : "", s->token, exp ? expbuf : NULL, want,
                    sizeof want);
    if (asbi_httpd_token_eq(want, sig) && !found) {
      snprintf(id, idlen, "%s", s->id);
      found = 1;
    }
  }
  pthread_mutex_unlock(&e->mu);
  if (found) *port = ASBI_ENVD_PORT;
  return found;
}

/* A pooled connection that the peer has not closed meanwhile, or -1. */
static int pool_take(sbx *s, int port) {
  pthread_mutex_lock(&s->mu);
  int fd = -1;
  for (upstream **pp = &s->idle; *pp;) {
    upstream *u = *pp;
    if (u->port != port) {
      pp = &u->next;
      continue;
    }
    *pp = u->next;
    struct pollfd p = {u->fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 0) { /* nothing to read, not closed: usable */
      fd = u->fd;
      free(u);
      break;
    }
    close(u->fd);
    free(u);
  }
  pthread_mutex_unlock(&s->mu);
  return fd;
}

static void pool_give(sbx *s, int port, int fd) {
  upstream *u = malloc(sizeof *u);
  if (!u) {
    close(fd);
    return;
  }
  u->fd = fd;
  u->port = port;
  pthread_mutex_lock(&s->mu);
  int n = 0;
  for (upstream *x = s->idle; x; x = x->next) n++;
  if (n >= 64 || s->state == SBX_DEAD) {
    pthread_mutex_unlock(&s->mu);
    close(fd);
    free(u);
    return;
  }
  u->next = s->idle;
  s->idle = u;
  pthread_mutex_unlock(&s->mu);
}

static int send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

#define INJECT_MAX 64

/* The headers a sending sandbox's network.rules set on a request that
 * came through its portal (values with their secrets resolved). */
typedef struct inject {
  char *name[INJECT_MAX], *value[INJECT_MAX];
  size_t n;
} inject;

static void inject_free(inject *j) {
  for (size_t i = 0; i < j->n; i++) {
    free(j->name[i]);
    asbn_secrets_wipe(j->value[i]);
  }
  j->n = 0;
}

typedef struct head_ctx {
  asbi_buf *b;
  asbi_buf conn; /* the Connection fields' values, joined by ',' */
  const char *api_key;
  int masked;        /* the sandbox's maskRequestHost replaces the client's Host */
  const inject *inj; /* replaces the request's own headers of those names */
} head_ctx;

/* A request through sandbox `from`'s portal (portal.c) leaves that
 * sandbox as its egress would: refused when its policy has the internet
 * off (allowInternetAccess false, or a denyOut of 0.0.0.0/0 or ::/0)
 * unless an allowOut domain names the host; its network.rules for the
 * host (a "name:port" key for that port only) set their headers, as the
 * egress proxy sets them. 0, or an HTTP status with *err to send. */
static unsigned from_sandbox(engine *e, struct MHD_Connection *c, const char *from, const char *id,
                             inject *inj, struct MHD_Response **err) {
  const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
  char name[256] = "";
  unsigned port = 0;
  if (host) {
    const char *colon = strrchr(host, ':');
    size_t n = colon ? (size_t)(colon - host) : strlen(host);
    if (n >= sizeof name) n = sizeof name - 1;
    for (size_t i = 0; i < n; i++) name[i] = (char)tolower((unsigned char)host[i]);
    name[n] = '\0';
    if (n && name[n - 1] == '.') name[n - 1] = '\0';
    int64_t p = 0;
    if (colon && asbi_parse_i64(colon + 1, strlen(colon + 1), &p) == 0 && p > 0 && p < 65536)
      port = (unsigned)p;
  }
  sbx *b = reg_get(e, from);
  if (!b) {
    *err = json_resp(403, id, "egress_denied", NULL,
                     "sandbox \"%s\" is not running: its portal serves nobody", from);
    return 403;
  }
  unsigned st = 0;
  pthread_mutex_lock(&b->mu);
  const asbn_policy *p = b->net_policy;
  int off = p && !p->allow_internet;
  for (size_t i = 0; p && i < p->ndeny_out; i++)
    if ((p->deny_out[i].kind == ASBN_CIDR4 || p->deny_out[i].kind == ASBN_CIDR6) &&
        p->deny_out[i].prefix == 0)
      off = 1;
  int named = 0;
  for (size_t i = 0; off && p && i < p->nallow_out; i++)
    if (asbn_entry_matches_name(&p->allow_out[i], name)) named = 1;
  if (off && !named) {
    st = 403;
    *err = json_resp(403, id, "egress_denied", NULL,
                     "sandbox \"%s\" has no internet access (allowInternetAccess false or a "
                     "denyOut of 0.0.0.0/0) and no allowOut domain names \"%s\"",
                     from, name);
  }
  for (size_t i = 0; !st && p && i < p->nrules; i++) {
    const asbn_domain_rule *r = &p->rules[i];
    if (!asbn_entry_matches_host(&r->match, name, port)) continue;
    for (size_t k = 0; k < r->nheaders && inj->n < INJECT_MAX; k++) {
      char *v = NULL;
      if (asbn_secrets_resolve(e->secrets, r->headers[k].value, &v) != 0) {
        st = 502;
        *err =
            json_resp(502, id, "bad_gateway", NULL,
                      "a header rule of sandbox \"%s\" names a secret that does not exist", from);
        break;
      }
      char *nm = strdup(r->headers[k].name);
      if (!nm) {
        asbn_secrets_wipe(v);
        st = 500;
        *err = json_resp(500, id, NULL, NULL, "out of memory");
        break;
      }
      inj->name[inj->n] = nm;
      inj->value[inj->n++] = v;
    }
    break; /* the first rule naming the host */
  }
  pthread_mutex_unlock(&b->mu);
  reg_put(e, b);
  if (st) inject_free(inj);
  return st;
}

/* E2B's network.maskRequestHost: the Host a sandbox's service sees, with
 * "${PORT}" standing for the port (policy.c refused controls in it). */
static void put_masked_host(asbi_buf *b, const char *mask, int port) {
  asbi_buf_puts(b, "Host: ");
  for (const char *m = mask; *m;) {
    if (!strncmp(m, "${PORT}", 7)) {
      asbi_buf_printf(b, "%d", port);
      m += 7;
    } else {
      asbi_buf_putc(b, *m++);
    }
  }
  asbi_buf_puts(b, "\r\n");
}

static enum MHD_Result gather_connection(void *cls, enum MHD_ValueKind kind, const char *key,
                                         const char *value) {
  (void)kind;
  head_ctx *h = cls;
  if (value && asbi_strcaseeq(key, "Connection")) asbi_buf_printf(&h->conn, "%s,", value);
  return MHD_YES;
}

/* The engine's own key never goes into a sandbox, whichever way a client
 * sent it along (X-API-Key, or Authorization: Bearer like the API takes). */
static int is_api_key(const head_ctx *h, const char *key, const char *value) {
  if (asbi_strcaseeq(key, "X-API-Key")) return 1;
  if (!value || !asbi_strcaseeq(key, "Authorization") || strncasecmp(value, "Bearer ", 7) != 0)
    return 0;
  return h->api_key[0] && asbi_httpd_token_eq(value + 7, h->api_key);
}

/* server.c checked every name and value (tokens; no CR, LF or controls). */
static enum MHD_Result copy_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
  (void)kind;
  head_ctx *h = cls;
  size_t kl = strlen(key);
  if (is_hop(key, kl) || is_api_key(h, key, value)) return MHD_YES;
  if (h->masked && asbi_strcaseeq(key, "Host")) return MHD_YES;
  for (size_t i = 0; h->inj && i < h->inj->n; i++)
    if (asbi_strcaseeq(key, h->inj->name[i])) return MHD_YES;
  if (h->conn.len && asbi_h1_list_has(h->conn.data, h->conn.len, key)) return MHD_YES;
  asbi_buf_printf(h->b, "%s: %s\r\n", key, value ? value : "");
  return MHD_YES;
}

/* A Content-Length as libmicrohttpd accepted it: digits only. */
static int parse_length(const char *v, uint64_t *out) {
  uint64_t n = 0;
  size_t len = strlen(v);
  if (!len || len > 19) return -1;
  for (size_t i = 0; i < len; i++) {
    if (v[i] < '0' || v[i] > '9') return -1;
    n = n * 10 + (uint64_t)(v[i] - '0');
  }
  *out = n;
  return 0;
}

/* The response is complete: hand a reusable upstream connection back now,
 * before MHD sends the last bytes, so the caller's next request (often on
 * a new client connection, in another thread) finds it in the pool. */
static void release_upstream(route_ctx *r) {
  if (r->fd >= 0 && r->reusable && r->done && !r->failed && !r->write_failed && !r->no_reuse) {
    pthread_mutex_lock(&r->s->mu);
    int fd = r->fd;
    r->fd = -1;
    pthread_mutex_unlock(&r->s->mu);
    pool_give(r->s, r->port, fd);
  }
}

/* s->busy: the requests whose upstream connection a checkpoint ends */
static void busy_add(route_ctx *r) {
  pthread_mutex_lock(&r->s->mu);
  r->busy.fd = &r->fd;
  reg_busy_add(r->s, &r->busy);
  r->listed = 1;
  pthread_mutex_unlock(&r->s->mu);
}

static void busy_del(route_ctx *r) {
  if (!r->listed) return;
  pthread_mutex_lock(&r->s->mu);
  reg_busy_del(r->s, &r->busy);
  r->listed = 0;
  pthread_mutex_unlock(&r->s->mu);
}

/* The body is complete: reusable if nothing followed it, and then handed
 * back at once. */
static void body_done(route_ctx *r) {
  r->done = 1;
  r->reusable = r->head.keep_alive && r->off == r->have;
  release_upstream(r);
}

static void route_free(route_ctx *r) {
  asbi_buf_free(&r->pending);
  release_upstream(r);
  busy_del(r);
  if (r->fd >= 0) close(r->fd);
  if (r->s) reg_put(r->e, r->s);
  free(r->buf);
  free(r);
}

static int connect_port(engine *e, sbx *s, int port) {
  return port == ASBI_ENVD_PORT   ? asbe_sandbox_connect_unix(s->iso, "envd.sock")
         : port == ASBI_CODE_PORT ? codei_connect(e, s, 30000)
                                  : asbe_sandbox_connect_tcp(s->iso, (uint16_t)port);
}

/* The request head (and what follows it in the same buffer), on the
 * connection taken; one taken from the pool may have died meanwhile: then
 * one fresh attempt. */
static int send_head(route_ctx *r, const char *p, size_t n) {
  int rc = send_all(r->fd, p, n);
  if (rc && r->pooled) {
    r->pooled = 0;
    pthread_mutex_lock(&r->s->mu);
    close(r->fd);
    r->fd = -1;
    pthread_mutex_unlock(&r->s->mu);
    int fd = connect_port(r->e, r->s, r->port);
    pthread_mutex_lock(&r->s->mu);
    r->fd = fd;
    pthread_mutex_unlock(&r->s->mu);
    rc = r->fd >= 0 ? send_all(r->fd, p, n) : -1;
  }
  return rc;
}

static int send_pending(route_ctx *r) {
  int rc = send_head(r, r->pending.data, r->pending.len);
  asbi_buf_free(&r->pending);
  return rc;
}

/* E2B's autoResume: traffic to a sandbox paused with memory resumes it,
 * with the lifetime it was created with, and is then served. One paused
 * without memory is not (E2B refuses: arbitrary traffic would reboot it).
 * 1 if it runs now. */
static int auto_resume(engine *e, sbx *s) {
  pthread_mutex_lock(&s->mu);
  int ok = s->state == SBX_PAUSED && s->auto_resume && (!s->paused_nomem || s->paused_ckpt);
  int secs = s->timeout_s > 0 ? s->timeout_s : SANDBOXES_DEFAULT_TIMEOUT_S;
  pthread_mutex_unlock(&s->mu);
  if (!ok) return 0;
  int resumed = 0;
  eng_err err;
  if (sandboxes_connect(e, s, secs, 0, &resumed, &err)) {
    asbi_log("sandbox %s: auto-resume: %s", s->id, err.message);
    return 0;
  }
  if (resumed) asbi_log("sandbox %s: auto-resumed by a request to one of its ports", s->id);
  pthread_mutex_lock(&s->mu);
  ok = s->state == SBX_RUNNING;
  pthread_mutex_unlock(&s->mu);
  return ok;
}

route_ctx *router_begin(engine *e, struct MHD_Connection *c, const char *raw_uri,
                        const char *method, const char *version, const char *id, int port,
                        struct MHD_Response **err, unsigned *err_status) {
  *err = NULL;
  if (port < 1) {
    *err_status = 400;
    *err = json_resp(400, id, NULL, NULL, "invalid E2b-Sandbox-Port");
    return NULL;
  }
  sbx *s = reg_get(e, id);
  if (!s) {
    /* 502 as E2B's proxy answers for a sandbox it cannot reach: the stock
     * SDKs read it as "not running" (isRunning() = false, Connect calls →
     * SandboxNotFound). The body names the sandbox; why it ended is in
     * "reason": the message is E2B's own, word for word (its SDK tests and
     * users' code compare it). */
    char why[32];
    const char *reason = reg_tomb(e, id, why, sizeof why);
    *err_status = 502;
    *err = json_resp(502, id, "sandbox_not_found", reason, "The sandbox was not found");
    return NULL;
  }
  pthread_mutex_lock(&s->mu);
  sbx_state st = s->state;
  char dying[32];
  snprintf(dying, sizeof dying, "%s", s->end_reason);
  pthread_mutex_unlock(&s->mu);
  if (st == SBX_DEAD) { /* being killed right now */
    reg_put(e, s);
    *err_status = 502;
    *err = json_resp(502, id, "sandbox_not_found", dying[0] ? dying : NULL,
                     "The sandbox was not found");
    return NULL;
  }
  /* network.allowPublicTraffic = false: the sandbox's ports (envd's has its
   * own access token) answer only requests that carry its traffic access
   * token, as E2B's proxy does */
  pthread_mutex_lock(&s->mu);
  int private_ports = s->net_policy && !s->net_policy->allow_public_traffic;
  pthread_mutex_unlock(&s->mu);
  if (private_ports && port != ASBI_ENVD_PORT) {
    const char *tt = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2B-Traffic-Access-Token");
    if (!tt || !asbi_httpd_token_eq(tt, s->traffic_token)) {
      reg_put(e, s);
      *err_status = 403;
      *err = json_resp(403, id, "traffic_token_required", NULL,
                       "%s: this sandbox's ports need its traffic access token "
                       "(E2B-Traffic-Access-Token; allowPublicTraffic is false)",
                       tt ? "invalid traffic access token" : "missing traffic access token");
      return NULL;
    }
  }
  /* Only a request that carries what its port needs wakes a paused
   * sandbox: with private ports, the traffic token (checked above) or, for
   * envd's, its access token; public ports wake it for anyone, as E2B's do. */
  int may_wake = !private_ports || port != ASBI_ENVD_PORT;
  if (!may_wake) {
    const char *at = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
    may_wake = at && asbi_httpd_token_eq(at, s->token);
  }
  if (st != SBX_RUNNING && !(may_wake && auto_resume(e, s))) {
    pthread_mutex_lock(&s->mu);
    int nomem = s->paused_nomem && !s->paused_ckpt;
    pthread_mutex_unlock(&s->mu);
    reg_put(e, s);
    *err_status = 502;
    *err = json_resp(502, id, "sandbox_paused", NULL,
                     nomem ? "sandbox \"%s\" is paused without memory; only an explicit "
                             "connect (or resume) boots it again"
                           : "sandbox \"%s\" is paused; connect to it to resume",
                     id);
    return NULL;
  }
  /* from another sandbox (its portal): its egress policy and header rules */
  inject inj;
  inj.n = 0;
  char from[ENGINE_ID_LEN + 8];
  if (portal_source(e, c, from, sizeof from)) {
    unsigned fst = from_sandbox(e, c, from, id, &inj, err);
    if (fst) {
      reg_put(e, s);
      *err_status = fst;
      return NULL;
    }
  }
  route_ctx *r = calloc(1, sizeof *r);
  if (!r || !(r->buf = malloc(READ_CHUNK))) {
    free(r);
    inject_free(&inj);
    reg_put(e, s);
    *err_status = 500;
    *err = json_resp(500, id, NULL, NULL, "out of memory");
    return NULL;
  }
  r->e = e;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  r->client_fd = ci ? ci->connect_fd : -1;
  r->hold_fd = asbi_endhold_chunked(version) ? r->client_fd : -1;
  r->s = s;
  r->port = port;
  r->head_request = strcmp(method, "HEAD") == 0;
  r->fd = pool_take(s, port);
  int pooled = r->fd >= 0;
  if (r->fd < 0) r->fd = connect_port(e, s, port);
  if (r->fd < 0) {
    *err_status = 502;
    *err = port == ASBI_ENVD_PORT
               ? json_resp(502, id, "bad_gateway", NULL,
                           "the agent (envd) of sandbox \"%s\" is not reachable: %s", id,
                           strerror(-r->fd))
               : json_resp(502, id, "port_closed", NULL,
                           "nothing is listening on port %d in sandbox \"%s\" (%s)", port, id,
                           strerror(-r->fd));
    inject_free(&inj);
    route_free(r);
    return NULL;
  }
  busy_add(r);
  /* Request head. The body's framing is what libmicrohttpd reads: chunked
   * if Transfer-Encoding is there (server.c let only "chunked" through,
   * never with a Content-Length), else Content-Length, else no body. */
  asbi_buf head = ASBI_BUF_INIT;
  asbi_buf_printf(&head, "%s %s HTTP/1.1\r\n", method, raw_uri);
  head_ctx hc = {&head, ASBI_BUF_INIT, e->api_key, 0, &inj};
  if (port != ASBI_ENVD_PORT) { /* envd is ours: its Host means nothing to it */
    pthread_mutex_lock(&s->mu);
    const char *mask = s->net_policy ? s->net_policy->mask_request_host : NULL;
    if (mask && *mask) {
      put_masked_host(&head, mask, port);
      hc.masked = 1;
    }
    pthread_mutex_unlock(&s->mu);
  }
  MHD_get_connection_values(c, MHD_HEADER_KIND, gather_connection, &hc);
  MHD_get_connection_values(c, MHD_HEADER_KIND, copy_header, &hc);
  asbi_buf_free(&hc.conn);
  if (inj.n > 0) {
    /* The rules' values are secrets: room for them and for every line the
     * head still gets after them (the framing below, < 128 bytes) is made
     * first, so that the buffer is never moved (realloc'ed) with a secret
     * in it, and the one copy there is is the one wiped below. */
    size_t room = 128;
    for (size_t i = 0; i < inj.n; i++) room += strlen(inj.name[i]) + strlen(inj.value[i]) + 4;
    asbi_buf_reserve(&head, room);
  }
  for (size_t i = 0; i < inj.n; i++)
    asbi_buf_printf(&head, "%s: %s\r\n", inj.name[i], inj.value[i]);
  int wipe = inj.n > 0; /* the head holds the rules' values: secrets */
  inject_free(&inj);
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
  const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
  if (te) {
    asbi_buf_puts(&head, "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    r->chunked_up = 1;
    r->no_reuse = 1;
  } else {
    if (cl && parse_length(cl, &r->body_len) != 0) {
      if (wipe && head.data) explicit_bzero(head.data, head.len);
      asbi_buf_free(&head);
      *err_status = 400;
      *err = json_resp(400, id, NULL, NULL, "invalid Content-Length");
      route_free(r);
      return NULL;
    }
    if (cl) asbi_buf_printf(&head, "Content-Length: %llu\r\n", (unsigned long long)r->body_len);
    asbi_buf_puts(&head, "Connection: keep-alive\r\n\r\n");
  }
  r->pooled = pooled;
  if (head.data && !wipe && !r->chunked_up && r->body_len > 0 && r->body_len <= PENDING_MAX) {
    /* A small body (a Connect request's envelope): the head goes with it
     * in one write when it is complete (router_body), so that the
     * upstream wakes once for the request. Not a head with secrets in
     * it: growing the buffer would leave copies unwiped. */
    r->pending = head;
    return r;
  }
  int rc = head.data ? send_head(r, head.data, head.len) : -1;
  if (wipe && head.data) explicit_bzero(head.data, head.len);
  asbi_buf_free(&head);
  if (rc) {
    *err_status = 502;
    *err = json_resp(502, id, "bad_gateway", NULL,
                     "lost the connection to port %d of sandbox \"%s\"", port, id);
    r->failed = 1;
    route_free(r);
    return NULL;
  }
  return r;
}

int router_body(route_ctx *r, const char *data, size_t len) {
  if (r->write_failed || len == 0) return r->write_failed ? -1 : 0;
  if (!r->chunked_up && r->body_sent + len > r->body_len) {
    /* more than the Content-Length sent upstream: never forward it */
    r->write_failed = 1;
    return -1;
  }
  r->body_sent += len;
  if (r->pending.data) {
    if (asbi_buf_append(&r->pending, data, len) != 0) {
      r->write_failed = 1;
      return -1;
    }
    if (r->body_sent == r->body_len && send_pending(r)) r->write_failed = 1;
    return r->write_failed ? -1 : 0;
  }
  if (r->chunked_up) {
    char sz[32];
    int n = snprintf(sz, sizeof sz, "%zx\r\n", len);
    if (send_all(r->fd, sz, (size_t)n) || send_all(r->fd, data, len) || send_all(r->fd, "\r\n", 2))
      r->write_failed = 1;
  } else if (send_all(r->fd, data, len)) {
    r->write_failed = 1;
  }
  return r->write_failed ? -1 : 0;
}

/* recv from upstream; while nothing comes, also watch the caller: if it
 * hangs up (a client-side timeout, a cancelled run_code), give up so the
 * upstream sees its connection close now rather than at the next byte it
 * sends (the code interpreter interrupts the cell on disconnect; a
 * keepalive only comes every 5 s). -1 with ECONNABORTED then. */
static ssize_t up_recv(route_ctx *r, char *buf, size_t n) {
  for (;;) {
    ssize_t got = recv(r->fd, buf, n, MSG_DONTWAIT);
    if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return got;
    /* nothing yet: what is held for the client (its head) goes now */
    asbi_endhold_flush(r->hold_fd);
    struct pollfd p[2] = {{r->fd, POLLIN, 0}, {r->client_fd, POLLRDHUP, 0}};
    int np = r->client_fd >= 0 ? 2 : 1;
    if (poll(p, (nfds_t)np, -1) < 0 && errno != EINTR) return -1;
    if (np == 2 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) && !(p[0].revents & POLLIN)) {
      errno = ECONNABORTED;
      return -1;
    }
  }
}

/* Read more upstream bytes into buf (after compacting). 0 = EOF. */
static ssize_t fill(route_ctx *r) {
  if (r->off == r->have) r->off = r->have = 0;
  if (r->have == READ_CHUNK) {
    memmove(r->buf, r->buf + r->off, r->have - r->off);
    r->have -= r->off;
    r->off = 0;
    if (r->have == READ_CHUNK) return -1;
  }
  for (;;) {
    ssize_t n = up_recv(r, r->buf + r->have, READ_CHUNK - r->have);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) r->have += (size_t)n;
    return n;
  }
}

/* A Content-Length body fully read: the connection can go back to the pool.
 * Checked right after the last bytes, because MHD, knowing the size, does
 * not call the reader again (and never calls it for an empty body). */
static void length_body_read(route_ctx *r) {
  if (!r->left) body_done(r);
}

static ssize_t reader(void *cls, uint64_t pos, char *out, size_t max) {
  route_ctx *r = cls;
  (void)pos;
  for (;;) {
    if (r->done) return MHD_CONTENT_READER_END_OF_STREAM;
    size_t avail = r->have - r->off;
    if (r->head.body == ASBI_H1_BODY_LENGTH) {
      if (avail == 0) {
        /* Straight into MHD's buffer: no copy for big bodies. */
        size_t want = max;
        if ((uint64_t)want > r->left) want = (size_t)r->left;
        ssize_t n;
        n = up_recv(r, out, want);
        if (n <= 0) return MHD_CONTENT_READER_END_WITH_ERROR; /* truncated */
        r->left -= (uint64_t)n;
        length_body_read(r);
        return n;
      }
      size_t n = avail < max ? avail : max;
      if ((uint64_t)n > r->left) n = (size_t)r->left;
      memcpy(out, r->buf + r->off, n);
      r->off += n;
      r->left -= n;
      length_body_read(r);
      return (ssize_t)n;
    }
    if (r->head.body == ASBI_H1_BODY_CHUNKED) {
      if (avail == 0) {
        ssize_t n = fill(r);
        if (n <= 0) return MHD_CONTENT_READER_END_WITH_ERROR;
        continue;
      }
      /* Decode at most `max` input bytes in place; payload <= input. */
      size_t len = avail < max ? avail : max, outn = 0;
      if (asbi_h1_chunked_decode(&r->chunk, r->buf + r->off, &len, &outn) != 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
      memcpy(out, r->buf + r->off, outn);
      r->off += len;
      if (r->chunk.done) {
        body_done(r);
        /* upstream's last data and its end came together: the client gets
         * them in one write too (libmicrohttpd would send them apart) */
        if (outn) asbi_endhold_arm(r->hold_fd);
      }
      if (outn) return (ssize_t)outn;
      continue;
    }
    /* Until close. */
    if (avail) {
      size_t n = avail < max ? avail : max;
      memcpy(out, r->buf + r->off, n);
      r->off += n;
      return (ssize_t)n;
    }
    ssize_t n;
    n = up_recv(r, out, max);
    if (n == 0) {
      r->done = 1;
      continue;
    }
    if (n < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
  }
}

static void reader_free(void *cls) {
  route_ctx *r = cls;
  asbi_endhold_drop(r->hold_fd);
  route_free(r);
}

struct MHD_Response *router_finish(route_ctx *r, unsigned *status) {
  const char *id = r->s->id;
  if (r->pending.data && !r->write_failed && send_pending(r)) r->write_failed = 1; /* short body */
  if (!r->write_failed && r->chunked_up && send_all(r->fd, "0\r\n\r\n", 5)) r->write_failed = 1;
  if (!r->chunked_up && r->body_sent != r->body_len) r->no_reuse = 1; /* short body */
  /* Even when sending failed, the upstream may have answered already
   * (e.g. 401 before reading the body): relay that answer if it is there. */
  long hl;
  for (;;) {
    hl = asbi_h1_parse_response(r->buf, r->have, r->head_request, &r->head);
    if (hl > 0 && r->head.status == 101) {
      hl = ASBI_H1_ESYNTAX; /* the router never asks for an upgrade */
      break;
    }
    if (hl > 0 && r->head.status < 200) {
      /* an interim response (100 Continue, 103 Early Hints): skip it */
      memmove(r->buf, r->buf + hl, r->have - (size_t)hl);
      r->have -= (size_t)hl;
      continue;
    }
    if (hl != ASBI_H1_EINCOMPLETE) break;
    ssize_t n = fill(r);
    if (n <= 0) {
      hl = n == 0 ? ASBI_H1_ESYNTAX : -1;
      break;
    }
  }
  if (hl < 0) {
    *status = 502;
    struct MHD_Response *e =
        r->write_failed
            ? json_resp(502, id, "bad_gateway", NULL,
                        "lost the connection to port %d of sandbox \"%s\" while "
                        "sending the request",
                        r->port, id)
            : json_resp(502, id, "bad_gateway", NULL,
                        "port %d of sandbox \"%s\" sent no valid HTTP response", r->port, id);
    r->failed = 1;
    route_free(r);
    return e;
  }
  if (r->write_failed) r->head.keep_alive = 0; /* never reuse it */
  /* Keep the head: it points into buf, which the body reuses. */
  struct MHD_Response *resp;
  r->off = (size_t)hl;
  if (r->head.body == ASBI_H1_BODY_LENGTH) {
    r->left = r->head.content_length;
    length_body_read(r); /* Content-Length: 0 */
  }
  if (r->head.body == ASBI_H1_BODY_CHUNKED) asbi_h1_chunked_init(&r->chunk);
  if (r->head.body == ASBI_H1_BODY_NONE) body_done(r);
  uint64_t size = r->head.body == ASBI_H1_BODY_LENGTH ? r->head.content_length
                  : r->head.body == ASBI_H1_BODY_NONE ? 0
                                                      : MHD_SIZE_UNKNOWN;
  resp = MHD_create_response_from_callback(size, 64 * 1024, reader, r, reader_free);
  if (!resp) {
    route_free(r);
    *status = 500;
    return json_resp(500, NULL, NULL, NULL, "out of memory");
  }
  /* Body bytes came with the head (a command's start event does): the
   * client gets the head with the first chunk in one write (endhold.h;
   * the reader flushes before it waits for more). */
  if (r->head.body == ASBI_H1_BODY_CHUNKED && r->have > r->off) asbi_endhold_arm(r->hold_fd);
  const asbi_h1_header *conn = asbi_h1_find(&r->head, "connection");
  for (size_t i = 0; i < r->head.nheaders; i++) {
    const asbi_h1_header *h = &r->head.headers[i];
    if (is_hop(h->name, h->name_len)) continue;
    if (conn) { /* and the fields its Connection names */
      char nm[256];
      if (h->name_len >= sizeof nm) continue;
      memcpy(nm, h->name, h->name_len);
      nm[h->name_len] = '\0';
      if (asbi_h1_list_has(conn->value, conn->value_len, nm)) continue;
    }
    char *n = asbi_strndup(h->name, h->name_len), *v = asbi_strndup(h->value, h->value_len);
    if (n && v) MHD_add_response_header(resp, n, v);
    free(n);
    free(v);
  }
  *status = (unsigned)r->head.status;
  /* From here the header pointers are dead: the body may overwrite buf. */
  r->head.nheaders = 0;
  return resp;
}

void router_abort(route_ctx *r) {
  if (!r) return;
  r->failed = 1;
  route_free(r);
}
