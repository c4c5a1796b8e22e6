/* HTTP routes: /health, /execute, /contexts. One thread per connection,
 * so an execution's output is streamed by a content reader that blocks
 * until its context's thread has more. SPDX-License-Identifier: Apache-2.0 */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctx.h"
#include "ndout.h"
#include "proto/pjson.h"
#include "util/buf.h"
#include "util/connguard.h"
#include "util/sha256.h"
#include "util/util.h"

static struct MHD_Daemon *g_daemon;
static asbi_connguard *g_guard;
static unsigned char g_access[32], g_traffic[32];
static int g_have_access, g_have_traffic;
/* --token-file: the hashes come from that file, read again for every
 * request that needs them (a forked sandbox's engine writes its own there
 * before the restore: the interpreter restored from the parent's memory
 * then takes the fork's tokens, not the parent's); while it is missing or
 * unreadable nothing is accepted. Read each time rather than cached by
 * stat(): a few hundred bytes, and no inode-reuse or coarse-timestamp case
 * where a changed file looks unchanged. Under g_tok_mu. */
static const char *g_token_file;
static pthread_mutex_t g_tok_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct req {
  asbi_buf body;
  int too_big;
} req;

/* ---- responses ---------------------------------------------------------------- */

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *ctype,
                               const char *body) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  if (ctype) MHD_add_response_header(r, "Content-Type", ctype);
  enum MHD_Result rc = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return rc;
}

/* Plain-text errors, as E2B's server sends them. */
static enum MHD_Result text_error(struct MHD_Connection *conn, unsigned status, const char *fmt,
                                  ...) __attribute__((format(printf, 3, 4)));
static enum MHD_Result text_error(struct MHD_Connection *conn, unsigned status, const char *fmt,
                                  ...) {
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return respond(conn, status, "text/plain; charset=utf-8", msg);
}

static unsigned ci_status(int rc) {
  return rc == CI_EBADREQ ? 400 : rc == CI_ENOTFOUND ? 404 : 500;
}

/* ---- /execute ------------------------------------------------------------------ */

typedef struct xstream {
  ci_exec *e;
  int sock;
  int ended;
  uint64_t last_ms;
} xstream;

static ssize_t exec_read(void *cls, uint64_t pos, char *buf, size_t max) {
  xstream *s = cls;
  ci_queue *q = ci_exec_queue(s->e);
  (void)pos;
  for (;;) {
    if (s->ended) return MHD_CONTENT_READER_END_OF_STREAM;
    int closed = 0;
    long n = ci_queue_pop(q, buf, max, &closed);
    if (n < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    uint64_t now = asbi_now_ms();
    if (n > 0) {
      s->last_ms = now;
      return n;
    }
    asbi_buf line = ASBI_BUF_INIT;
    if (closed) {
      ci_out_type(&line, "end_of_execution");
      s->ended = 1;
    } else if (now >= s->last_ms + CI_KEEPALIVE_MS) {
      ci_out_type(&line, "keepalive");
      s->last_ms = now;
    }
    if (line.len) {
      size_t k = line.len <= max ? line.len : 0;
      if (k) memcpy(buf, line.data, k);
      asbi_buf_free(&line);
      if (!k) return MHD_CONTENT_READER_END_WITH_ERROR;
      return (ssize_t)k;
    }
    struct pollfd p[2] = {{q->wake_fd, POLLIN, 0}, {s->sock, POLLRDHUP, 0}};
    int wait = (int)(CI_KEEPALIVE_MS - (now - s->last_ms));
    int pr = poll(p, s->sock >= 0 ? 2 : 1, wait > 0 ? wait : 0);
    if (pr < 0 && errno != EINTR) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (pr > 0 && s->sock >= 0 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      /* the client is gone (its timeout, a cancel, a crash) */
      ci_exec_cancel(s->e);
      s->ended = 1;
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (pr > 0 && (p[0].revents & POLLIN)) ci_queue_ack(q);
  }
}

static void exec_free(void *cls) {
  xstream *s = cls;
  if (!s->ended) ci_exec_cancel(s->e);
  ci_exec_unref(s->e);
  free(s);
}

static const char *opt_str(const cJSON *o, const char *name, int *bad) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!v || cJSON_IsNull(v)) return NULL;
  if (!cJSON_IsString(v)) {
    *bad = 1;
    return NULL;
  }
  return v->valuestring;
}

static enum MHD_Result parse_body(struct MHD_Connection *conn, req *r, cJSON **out, int empty_ok) {
  *out = NULL;
  if (r->too_big)
    return text_error(conn, 400, "Request body is larger than the limit of %u bytes", CI_MAX_BODY);
  if (!r->body.len && empty_ok) {
    *out = cJSON_CreateObject();
    return *out ? MHD_YES : MHD_NO;
  }
  const char *why = NULL;
  cJSON *j = r->body.len ? asbi_pj_parse(r->body.data, r->body.len, &why) : NULL;
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return text_error(conn, 400, "Request body must be a JSON object%s%s", why ? ": " : "",
                      why ? why : "");
  }
  *out = j;
  return MHD_YES;
}

static enum MHD_Result do_execute(struct MHD_Connection *conn, req *r) {
  cJSON *j;
  enum MHD_Result mr = parse_body(conn, r, &j, 0);
  if (!j) return mr;
  int bad = 0;
  const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "code");
  const char *ctx_id = opt_str(j, "context_id", &bad);
  const char *lang = opt_str(j, "language", &bad);
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(j, "env_vars");
  char err[1000];
  ci_ctx *c = NULL;
  int rc = CI_OK;
  if (!cJSON_IsString(code)) {
    mr = text_error(conn, 400, "'code' must be a string");
    goto out;
  }
  if (bad) {
    mr = text_error(conn, 400, "'context_id' and 'language' must be strings");
    goto out;
  }
  if (env && !cJSON_IsNull(env) && !cJSON_IsObject(env)) {
    mr = text_error(conn, 400, "'env_vars' must be an object of strings");
    goto out;
  }
  if (!asbi_empty(ctx_id) && !asbi_empty(lang)) {
    mr = text_error(conn, 400, "Only one of context_id or language can be provided");
    goto out;
  }
  if (!asbi_empty(ctx_id)) {
    if (!(c = ci_ctx_get(ctx_id))) {
      mr = text_error(conn, 404, "Context %s not found", ctx_id);
      goto out;
    }
  } else if ((rc = ci_ctx_default(lang, &c, err, sizeof err)) != CI_OK) {
    mr = text_error(conn, ci_status(rc), "%s", err);
    goto out;
  }
  ci_exec *e = NULL;
  rc = ci_exec_submit(c, code->valuestring, cJSON_IsObject(env) ? env : NULL, &e, err, sizeof err);
  if (rc != CI_OK) {
    mr = text_error(conn, ci_status(rc), "%s", err);
    goto out;
  }
  xstream *s = calloc(1, sizeof *s);
  if (!s) {
    ci_exec_cancel(e);
    ci_exec_unref(e);
    mr = MHD_NO;
    goto out;
  }
  s->e = e;
  s->last_ms = asbi_now_ms();
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  s->sock = ci ? ci->connect_fd : -1;
  struct MHD_Response *resp =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, exec_read, s, exec_free);
  if (!resp) {
    exec_free(s);
    mr = MHD_NO;
    goto out;
  }
  MHD_add_response_header(resp, "Content-Type", "application/x-ndjson");
  mr = MHD_queue_response(conn, 200, resp);
  MHD_destroy_response(resp);
out:
  ci_ctx_unref(c);
  cJSON_Delete(j);
  return mr;
}

/* ---- /contexts ------------------------------------------------------------------ */

static enum MHD_Result do_create_context(struct MHD_Connection *conn, req *r) {
  cJSON *j;
  enum MHD_Result mr = parse_body(conn, r, &j, 1);
  if (!j) return mr;
  int bad = 0;
  const char *lang = opt_str(j, "language", &bad);
  const char *cwd = opt_str(j, "cwd", &bad);
  if (bad) {
    cJSON_Delete(j);
    return text_error(conn, 400, "'language' and 'cwd' must be strings");
  }
  char err[1000];
  ci_ctx *c = NULL;
  int rc = ci_ctx_create(lang, cwd, &c, err, sizeof err);
  cJSON_Delete(j);
  if (rc != CI_OK) return text_error(conn, ci_status(rc), "%s", err);
  char *body = ci_ctx_json(c);
  ci_ctx_unref(c);
  if (!body) return MHD_NO;
  mr = respond(conn, 200, "application/json", body);
  free(body);
  return mr;
}

static enum MHD_Result do_list_contexts(struct MHD_Connection *conn) {
  char *body = ci_ctx_list_json();
  if (!body) return MHD_NO;
  enum MHD_Result mr = respond(conn, 200, "application/json", body);
  free(body);
  return mr;
}

/* ---- /envs ------------------------------------------------------------------------ */

static enum MHD_Result do_set_envs(struct MHD_Connection *conn, req *r) {
  cJSON *j;
  enum MHD_Result mr = parse_body(conn, r, &j, 0);
  if (!j) return mr;
  char err[600];
  int rc = ci_set_envs(j, err, sizeof err);
  cJSON_Delete(j);
  if (rc != CI_OK) return text_error(conn, ci_status(rc), "%s", err);
  return respond(conn, 200, "application/json", "null");
}

/* /contexts/{id}[/restart] → id (decoded), action. */
static int context_path(const char *url, char *id, size_t n, int *restart) {
  const char *p = url + strlen("/contexts/");
  const char *slash = strchr(p, '/');
  size_t l = slash ? (size_t)(slash - p) : strlen(p);
  *restart = 0;
  if (slash) {
    if (strcmp(slash, "/restart") != 0) return -1;
    *restart = 1;
  }
  if (l == 0 || l >= n) return -1;
  memcpy(id, p, l);
  id[l] = '\0';
  return 0;
}

/* ---- dispatch -------------------------------------------------------------------- */

/* The token file's "access <hex>" and "traffic <hex>" lines into the
 * globals (under g_tok_mu). A file that is gone, no regular file, too big
 * or unparsable leaves no token valid. */
static void tokens_refresh(void) {
  g_have_access = g_have_traffic = 0;
  struct stat st;
  int fd = open(g_token_file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  char buf[512];
  ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof buf) : -1;
  close(fd);
  if (n <= 0 || (size_t)n >= sizeof buf) return;
  buf[n] = '\0';
  unsigned char a[32], t[32];
  int ha = 0, ht = 0, bad = 0;
  for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    char key[16], hex[80];
    if (sscanf(l, "%15s %79s", key, hex) != 2)
      bad = 1;
    else if (!strcmp(key, "access"))
      ha = asbi_sha256_hex_parse(hex, a) == 0, bad |= !ha;
    else if (!strcmp(key, "traffic"))
      ht = asbi_sha256_hex_parse(hex, t) == 0, bad |= !ht;
  }
  if (bad) return;
  if ((g_have_access = ha)) memcpy(g_access, a, 32);
  if ((g_have_traffic = ht)) memcpy(g_traffic, t, 32);
}

/* Either token, compared through its SHA-256 (constant time). */
static int token_ok(struct MHD_Connection *conn) {
  const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Access-Token");
  const char *t = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "E2B-Traffic-Access-Token");
  pthread_mutex_lock(&g_tok_mu);
  if (g_token_file) tokens_refresh();
  int open_to_all = !g_token_file && !g_have_access && !g_have_traffic;
  int ok_a = g_have_access && asbi_sha256_matches(a, g_access);
  int ok_t = g_have_traffic && asbi_sha256_matches(t, g_traffic);
  pthread_mutex_unlock(&g_tok_mu);
  return open_to_all | ok_a | ok_t;
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

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  (void)cls;
  (void)version;
  req *r = *con_cls;
  if (!r) {
    asbi_connguard_head_done(guarded(conn));
    if (!(r = calloc(1, sizeof *r))) return MHD_NO;
    asbi_buf_init(&r->body, CI_MAX_BODY);
    *con_cls = r;
    return MHD_YES;
  }
  if (*upload_size) {
    if (!r->too_big && asbi_buf_append(&r->body, upload, *upload_size) != 0) {
      r->too_big = 1;
      asbi_buf_free(&r->body);
    }
    *upload_size = 0;
    return MHD_YES;
  }
  int get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
  int del = strcmp(method, "DELETE") == 0;
  if (strcmp(url, "/health") == 0) {
    if (!get) return respond(conn, 405, "application/json", "{\"detail\":\"Method Not Allowed\"}");
    return ci_ctx_startup_done() ? respond(conn, 200, "application/json", "\"OK\"")
                                 : respond(conn, 503, "application/json", "\"starting\"");
  }
  if (!token_ok(conn))
    return text_error(
        conn, 401, "Unauthorized: missing or wrong X-Access-Token (or E2B-Traffic-Access-Token)");
  if (strcmp(url, "/execute") == 0) {
    if (!post) return respond(conn, 405, "application/json", "{\"detail\":\"Method Not Allowed\"}");
    return do_execute(conn, r);
  }
  if (strcmp(url, "/contexts") == 0) {
    if (post) return do_create_context(conn, r);
    if (get) return do_list_contexts(conn);
    return respond(conn, 405, "application/json", "{\"detail\":\"Method Not Allowed\"}");
  }
  if (strcmp(url, "/envs") == 0) {
    if (!post) return respond(conn, 405, "application/json", "{\"detail\":\"Method Not Allowed\"}");
    return do_set_envs(conn, r);
  }
  if (asbi_startswith(url, "/contexts/")) {
    char id[256];
    int restart;
    if (context_path(url, id, sizeof id, &restart) == 0 &&
        ((restart && post) || (!restart && del))) {
      char err[1000];
      int rc = restart ? ci_ctx_restart(id, err, sizeof err) : ci_ctx_remove(id);
      if (rc == CI_ENOTFOUND) return text_error(conn, 404, "Context %s not found", id);
      if (rc != CI_OK) return text_error(conn, ci_status(rc), "%s", err);
      return respond(conn, 200, "application/json", "null");
    }
    if (context_path(url, id, sizeof id, &restart) == 0)
      return respond(conn, 405, "application/json", "{\"detail\":\"Method Not Allowed\"}");
  }
  return respond(conn, 404, "application/json", "{\"detail\":\"Not Found\"}");
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode why) {
  (void)cls;
  (void)why;
  asbi_connguard_request_done(guarded(conn));
  req *r = *con_cls;
  if (!r) return;
  asbi_buf_free(&r->body);
  free(r);
  *con_cls = NULL;
}

int ci_server_start(const ci_server_opts *o, char *err, size_t errlen) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
  const char *addr = o->listen ? o->listen : "127.0.0.1";
  struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)o->port);
  } else if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)o->port);
    flags |= MHD_USE_IPv6;
  } else {
    snprintf(err, errlen, "--listen %s: not an IPv4 or IPv6 address", addr);
    return -1;
  }
  if ((g_have_access = o->access_sha256 != NULL)) memcpy(g_access, o->access_sha256, 32);
  if ((g_have_traffic = o->traffic_sha256 != NULL)) memcpy(g_traffic, o->traffic_sha256, 32);
  g_token_file = o->token_file;
  /* Requests come through the engine's router, all from one address: a
   * head deadline and at most half the connections waiting for a request
   * (the oldest goes first), no per-address limit; the router's idle
   * connections otherwise stay open for reuse. */
  g_guard = asbi_connguard_new(0, CI_HEAD_TIMEOUT_S * 1000u, CI_MAX_CONNECTIONS / 2);
  if (!g_guard) {
    snprintf(err, errlen, "cannot start a thread: %s", strerror(errno));
    return -1;
  }
  g_daemon = MHD_start_daemon(
      flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
      MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
      NULL, MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL, MHD_OPTION_CONNECTION_LIMIT,
      (unsigned)CI_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT, 640u, MHD_OPTION_END);
  if (!g_daemon) {
    snprintf(err, errlen, "cannot listen on %s port %d: %s", addr, o->port, strerror(errno));
    asbi_connguard_free(g_guard);
    g_guard = NULL;
    return -1;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(g_daemon, MHD_DAEMON_INFO_BIND_PORT);
  return di ? (int)di->port : o->port;
}

void ci_server_stop(void) {
  if (!g_daemon) return;
  MHD_quiesce_daemon(g_daemon);
  MHD_stop_daemon(g_daemon);
  g_daemon = NULL;
  asbi_connguard_free(g_guard);
  g_guard = NULL;
}
