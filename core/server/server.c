/* The HTTP service of libagentsandbox-server (libmicrohttpd, one thread per
 * connection): routes, auth, body limits, start/stop with a graceful
 * shutdown.
 * SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "util/connguard.h"
#include "util/sha256.h"
#include "util/util.h"

#define DEFAULT_MAX_BODY (1u << 20)
#define DEFAULT_MAX_CONNS 256u
#define DEFAULT_GRACE_MS 10000L
#define AVAILABLE_MAX 2048      /* bytes of "available: ..." in a 404 */
#define DISCARD_MAX (16u << 20) /* of a streamed body over the limit */
#define HEAD_TIMEOUT_MS 30000u  /* from a request line to the end of its head */

void asbs_command_free(asb_server_command *c);

/* ---- options, new, free ---------------------------------------------------------- */

int asb_server_options_init(asb_server_options *o, unsigned int version) {
  if (!o) return asbs_err(ASB_EINVAL, "asb_server_options_init: NULL");
  if (version == 0 || version > ASB_SERVER_OPTIONS_VERSION)
    return asbs_err(ASB_EVERSION, "asb_server_options: unsupported version %u", version);
  asb_server_options d = ASB_SERVER_OPTIONS_INIT;
  *o = d;
  o->version = version;
  return ASB_OK;
}

int asb_server_new(asb_server **out, const asb_server_options *o) {
  if (!out) return asbs_err(ASB_EINVAL, "asb_server_new: out is NULL");
  if (o && (o->version == 0 || o->version > ASB_SERVER_OPTIONS_VERSION))
    return asbs_err(ASB_EVERSION, "asb_server_options: unsupported version %u", o->version);
  asb_server_options d = ASB_SERVER_OPTIONS_INIT;
  if (!o) o = &d;
  asb_server *s = calloc(1, sizeof *s);
  if (!s) return asbs_oom();
  s->stop_pipe[0] = s->stop_pipe[1] = s->listen_fd = -1;
  s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->efd < 0) {
    int err = errno;
    free(s);
    return asbs_err(ASB_ERROR, "asb_server_new: eventfd: %s", strerror(err));
  }
  atomic_init(&s->refs, 1);
  s->host = asbi_strdup(o->host && *o->host ? o->host : "0.0.0.0");
  /* The token: the option; else $ASB_SERVER_TOKEN (set but empty = none);
   * else $ASB_SERVER_TOKEN_SHA256, its SHA-256, which is what the engine
   * gives a template's start command (a process of the sandbox's user
   * must not hold the envd token itself). Only the hash is kept. */
  const char *tok = o->token ? o->token : getenv("ASB_SERVER_TOKEN");
  const char *hex = tok ? NULL : asbi_getenv("ASB_SERVER_TOKEN_SHA256");
  if (tok && *tok) {
    asbi_sha256(tok, strlen(tok), s->token_md);
    s->has_token = 1;
  } else if (hex) {
    if (asbi_sha256_hex_parse(hex, s->token_md) != 0) {
      free(s->host);
      close(s->efd);
      free(s);
      return asbs_err(ASB_EINVAL, "ASB_SERVER_TOKEN_SHA256 is not 64 hex digits");
    }
    s->has_token = 1;
  }
  s->max_body = o->max_body_bytes ? o->max_body_bytes : DEFAULT_MAX_BODY;
  s->max_conns = o->max_connections ? o->max_connections : DEFAULT_MAX_CONNS;
  s->grace_ms = o->shutdown_grace_ms ? o->shutdown_grace_ms : DEFAULT_GRACE_MS;
  if (!s->host || pipe2(s->stop_pipe, O_CLOEXEC | O_NONBLOCK)) {
    int rc =
        s->host ? asbs_err(ASB_ERROR, "asb_server_new: pipe: %s", strerror(errno)) : asbs_oom();
    free(s->host);
    close(s->efd);
    free(s);
    return rc;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->done_cv, NULL);
  pthread_mutex_init(&s->qmu, NULL);
  pthread_condattr_t ca; /* next_call's timeout is on the monotonic clock */
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->qcv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_cond_init(&s->call_cv, NULL);
  *out = s;
  return ASB_OK;
}

void asbs_server_unref(asb_server *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  for (size_t i = 0; i < s->ncmds; i++) asbs_command_free(s->cmds[i]);
  free(s->cmds);
  free(s->listing);
  free(s->host);
  close(s->stop_pipe[0]);
  close(s->stop_pipe[1]);
  close(s->efd);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->done_cv);
  pthread_mutex_destroy(&s->qmu);
  pthread_cond_destroy(&s->qcv);
  pthread_cond_destroy(&s->call_cv);
  free(s);
}

/* Calls the program still holds keep the server's memory (and their
 * command's) until they are answered. */
void asb_server_free(asb_server *s) {
  if (!s) return;
  asb_server_stop(s);
  asb_server_wait(s);
  /* no connection is left: the agents' turns are cancelled and waited for */
  asbs_agents_free(s->agents);
  s->agents = NULL;
  asbs_server_unref(s);
}

int asb_server_enable_agents(asb_server *s, const asb_server_agents_options *o) {
  if (!s) return asbs_err(ASB_EINVAL, "asb_server_enable_agents: no server");
  pthread_mutex_lock(&s->mu);
  int busy = atomic_load(&s->running) || s->agents;
  pthread_mutex_unlock(&s->mu);
  if (busy)
    return asbs_err(ASB_EINVAL, "asb_server_enable_agents: %s",
                    s->agents ? "agents are enabled already" : "the server is running");
  return asbs_agents_new(&s->agents, s, o);
}

/* ---- calls answered by the program ---------------------------------------------------
 * qmu guards every call's state, the queue and the eventfd's level: the fd is
 * readable exactly while calls wait in the queue, or once the server stops
 * (so a poll loop wakes up to learn it from asb_server_next_call). */

static void efd_update(asb_server *s) {
  int want = s->qhead != NULL || s->queue_closed;
  if (want && !s->efd_set) {
    uint64_t one = 1;
    if (write(s->efd, &one, sizeof one) == sizeof one) s->efd_set = 1;
  } else if (!want && s->efd_set) {
    uint64_t v;
    if (read(s->efd, &v, sizeof v) == sizeof v) s->efd_set = 0;
  }
}

static void unqueue(asb_server *s, asb_server_call *call) {
  for (asb_server_call **pp = &s->qhead; *pp; pp = &(*pp)->next) {
    if (*pp != call) continue;
    *pp = call->next;
    if (s->qtail == call) {
      s->qtail = NULL;
      for (asb_server_call *q = s->qhead; q; q = q->next) s->qtail = q;
    }
    call->next = NULL;
    break;
  }
  efd_update(s);
}

/* On the connection's thread, with qmu held: wait until the program answers
 * the call, or the server gives up on it (a queued call when the server
 * stops, a taken one after the shutdown grace): 503. Sets status/reply. */
static void await_answer(asb_server *s, asb_server_call *call, int *status, char **reply) {
  while (call->state != ASBS_CALL_DONE) {
    int give_up = (call->state == ASBS_CALL_QUEUED && s->queue_closed) || s->abandon;
    if (give_up) {
      if (call->state == ASBS_CALL_QUEUED) unqueue(s, call);
      call->state = ASBS_CALL_ABANDONED;
      *status = 503;
      *reply = asbs_error_json("the server is stopping", "ServiceUnavailable");
      return;
    }
    pthread_cond_wait(&s->call_cv, &s->qmu);
  }
  *status = call->status;
  *reply = call->reply;
  call->reply = NULL;
}

int asb_server_fd(const asb_server *s) {
  return s ? s->efd : -1;
}

int asb_server_next_call(asb_server_call **out, asb_server *s, long timeout_ms) {
  if (!out || !s) return asbs_err(ASB_EINVAL, "asb_server_next_call: bad arguments");
  *out = NULL;
  struct timespec until = {0, 0};
  if (timeout_ms > 0) until = asbi_deadline(CLOCK_MONOTONIC, timeout_ms);
  pthread_mutex_lock(&s->qmu);
  int rc = ASB_OK;
  for (;;) {
    if (s->qhead) {
      asb_server_call *call = s->qhead;
      s->qhead = call->next;
      if (!s->qhead) s->qtail = NULL;
      call->next = NULL;
      call->state = ASBS_CALL_TAKEN;
      atomic_fetch_add(&call->refs, 1); /* the program's */
      efd_update(s);
      *out = call;
      break;
    }
    if (s->queue_closed || !atomic_load(&s->running)) {
      rc = asbs_err(ASB_ECANCELED, "asb_server_next_call: the server is not running");
      break;
    }
    if (timeout_ms == 0) {
      rc = asbs_err(ASB_ETIMEOUT, "asb_server_next_call: no call waiting");
      break;
    }
    if (timeout_ms < 0) {
      pthread_cond_wait(&s->qcv, &s->qmu);
    } else if (pthread_cond_timedwait(&s->qcv, &s->qmu, &until) == ETIMEDOUT && !s->qhead &&
               !s->queue_closed) {
      rc = asbs_err(ASB_ETIMEOUT, "asb_server_next_call: no call within %ld ms", timeout_ms);
      break;
    }
  }
  pthread_mutex_unlock(&s->qmu);
  return rc;
}

int asb_server_call_defer(asb_server_call *call) {
  if (!call) return asbs_err(ASB_EINVAL, "asb_server_call_defer: no call");
  asb_server *s = call->server;
  pthread_mutex_lock(&s->qmu);
  int rc = ASB_OK;
  if (call->state != ASBS_CALL_HANDLER || call->deferred) {
    rc = asbs_err(ASB_EINVAL,
                  "asb_server_call_defer: only a handler defers its own call, "
                  "once");
  } else {
    call->deferred = 1;
    call->state = ASBS_CALL_TAKEN;
    atomic_fetch_add(&call->refs, 1); /* the program's, until it answers */
  }
  pthread_mutex_unlock(&s->qmu);
  return rc;
}

int asb_server_call_reply(asb_server_call *call) {
  if (!call) return asbs_err(ASB_EINVAL, "asb_server_call_reply: no call");
  asb_server *s = call->server;
  pthread_mutex_lock(&s->qmu);
  int rc = ASB_OK;
  if (call->state == ASBS_CALL_TAKEN) {
    asbs_call_finish(call, 0, &call->status, &call->reply);
    call->state = ASBS_CALL_DONE;
    pthread_cond_broadcast(&s->call_cv);
  } else if (call->state == ASBS_CALL_ABANDONED) {
    rc = asbs_err(ASB_ECANCELED, "command '%s': the server stopped before the reply",
                  call->cmd->name);
  } else {
    pthread_mutex_unlock(&s->qmu);
    return asbs_err(ASB_EINVAL,
                    "asb_server_call_reply: the call is not the program's "
                    "(pull it with asb_server_next_call or defer it first), or was "
                    "answered already");
  }
  pthread_mutex_unlock(&s->qmu);
  asbs_call_release(call); /* the program's reference */
  return rc;
}

int asb_server_call_fail(asb_server_call *call, const char *type, const char *message) {
  if (!call) return asbs_err(ASB_EINVAL, "asb_server_call_fail: no call");
  asb_server_call_error(call, type, message);
  return asb_server_call_reply(call);
}

/* ---- requests ------------------------------------------------------------------------ */

typedef struct req {
  asb_server *s;
  asbi_buf body;
  int too_big;
  size_t discarded;
  int answered; /* a response was queued early: ignore the rest */
  int headed;   /* the handler has seen the head */
} req;

static asbi_guarded *guarded(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code) {
  asb_server *s = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    *socket_ctx = ci ? asbi_connguard_open(s->guard, ci->connect_fd) : NULL;
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    asbi_connguard_close(*socket_ctx);
    *socket_ctx = NULL;
  }
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)uri;
  asbi_connguard_request_line(guarded(c));
  asb_server *s = cls;
  req *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->s = s;
  asbi_buf_init(&r->body, s->max_body);
  atomic_fetch_add(&s->inflight, 1);
  return r;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe) {
  (void)toe;
  asbi_connguard_request_done(guarded(c));
  asb_server *s = cls;
  req *r = *con_cls;
  if (!r) return;
  asbi_buf_free(&r->body);
  free(r);
  *con_cls = NULL;
  atomic_fetch_sub(&s->inflight, 1);
}

enum MHD_Result asbs_send_json(asb_server *s, struct MHD_Connection *c, unsigned status,
                               char *body /* malloc'd, taken */) {
  struct MHD_Response *resp;
  if (body)
    resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  else
    resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!resp) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type", "application/json");
  if (atomic_load(&s->stopping)) MHD_add_response_header(resp, "Connection", "close");
  enum MHD_Result ret = MHD_queue_response(c, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

#define send_json asbs_send_json

int asbs_server_stopping(const asb_server *s) {
  return atomic_load(&s->stopping);
}

static enum MHD_Result send_error(asb_server *s, struct MHD_Connection *c, unsigned status,
                                  const char *msg, const char *type) {
  return send_json(s, c, status, asbs_error_json(msg, type));
}

static int authorized(asb_server *s, struct MHD_Connection *c) {
  if (!s->has_token) return 1;
  const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
  return asbi_sha256_matches(t, s->token_md); /* constant time */
}

/* "Unknown command 'x'; available: a, b" (visible commands only). */
static char *unknown_message(asb_server *s, const char *name) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "Unknown command '");
  for (const char *p = name; *p && p - name < 128; p++)
    asbi_buf_putc(&b, (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f ? *p : '?');
  asbi_buf_puts(&b, "'; available: ");
  int any = 0;
  for (size_t i = 0; i < s->ncmds; i++) {
    if (s->cmds[i]->hidden) continue;
    if (b.len > AVAILABLE_MAX) {
      asbi_buf_puts(&b, ", ...");
      break;
    }
    asbi_buf_printf(&b, "%s%s", any ? ", " : "", s->cmds[i]->name);
    any = 1;
  }
  if (!any) asbi_buf_puts(&b, "(none)");
  return asbi_buf_detach(&b, NULL);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)version;
  asb_server *s = cls;
  req *r = *con_cls;
  if (!r) return MHD_NO;
  if (!r->headed) {
    r->headed = 1;
    asbi_connguard_head_done(guarded(c));
  }
  if (r->answered) { /* swallow what follows an early answer */
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size) {
    /* A streamed (chunked) body over the limit is read to its end and
     * dropped, then answered 413; one far over it closes the connection. */
    if (r->too_big) {
      r->discarded += *upload_size;
      if (r->discarded > DISCARD_MAX) return MHD_NO;
    } else if (asbi_buf_append(&r->body, upload, *upload_size)) {
      r->too_big = 1;
      asbi_buf_free(&r->body);
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (r->too_big) {
    r->answered = 1;
    char msg[128];
    snprintf(msg, sizeof msg, "request body over %zu bytes", s->max_body);
    return send_error(s, c, 413, msg, "PayloadTooLarge");
  }
  int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  int is_post = strcmp(method, "POST") == 0;
  /* First call (no body seen yet): refuse early what needs no body. */
  if (r->body.len == 0 && !r->too_big && !r->answered) {
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl) {
      int64_t n = -1;
      if (asbi_parse_i64(cl, strlen(cl), &n) == 0 && n > (int64_t)s->max_body) {
        r->answered = 1;
        char msg[128];
        snprintf(msg, sizeof msg, "request body over %zu bytes", s->max_body);
        return send_error(s, c, 413, msg, "PayloadTooLarge");
      }
    }
  }
  if (strcmp(url, "/health") == 0) {
    r->answered = 1;
    if (!is_get) return send_error(s, c, 405, "use GET /health", "MethodNotAllowed");
    return send_json(s, c, 200, asbi_strdup("{\"status\":\"ok\"}"));
  }
  if (!authorized(s, c)) {
    r->answered = 1;
    return send_error(s, c, 401, "unauthorized", "AuthError");
  }
  if (asbs_agents_route(url)) {
    /* a POST waits for its whole body (MHD calls again with it) */
    if (is_post && !r->body.data && !r->too_big) {
      if (asbi_buf_puts(&r->body, "")) return MHD_NO;
      return MHD_YES;
    }
    r->answered = 1;
    return asbs_agents_handle(s->agents, s, c, url, method, r->body.data, r->body.len);
  }
  if (strcmp(url, "/commands") == 0 || strcmp(url, "/commands/") == 0) {
    r->answered = 1;
    if (!is_get) return send_error(s, c, 405, "use GET /commands", "MethodNotAllowed");
    return send_json(s, c, 200, asbi_strdup(s->listing ? s->listing : "{\"commands\":[]}"));
  }
  if (!asbi_startswith(url, "/commands/")) {
    r->answered = 1;
    return send_error(s, c, 404,
                      "no such route (GET /health, GET /commands, "
                      "POST /commands/<name>)",
                      "NotFound");
  }
  const char *name = url + strlen("/commands/");
  asb_server_command *cmd = asbs_find(s, name);
  if (!cmd) {
    r->answered = 1;
    char *msg = unknown_message(s, name);
    enum MHD_Result ret =
        send_error(s, c, 404, msg ? msg : "Unknown command", "CommandNotFoundError");
    free(msg);
    return ret;
  }
  if (!is_post) {
    r->answered = 1;
    return send_error(s, c, 405, "call a command with POST", "MethodNotAllowed");
  }
  /* Wait for the whole body: MHD calls again with it, then once more
   * with *upload_size == 0. Tell the two apart by a flag. */
  if (!r->body.data && !r->too_big) {
    /* first call: allocate lazily so an empty body reads as "" */
    if (asbi_buf_puts(&r->body, "")) return MHD_NO;
    return MHD_YES;
  }
  r->answered = 1;
  int status = 500;
  char *reply = NULL;
  asb_server_call *call = asbs_call_new(cmd, r->body.data, r->body.len, &status, &reply);
  if (call && cmd->handler) {
    call->state = ASBS_CALL_HANDLER;
    int rc = cmd->handler(call, cmd->userdata);
    pthread_mutex_lock(&s->qmu);
    if (!call->deferred)
      asbs_call_finish(call, rc, &status, &reply);
    else
      await_answer(s, call, &status, &reply); /* its return value is ignored */
    pthread_mutex_unlock(&s->qmu);
  } else if (call) { /* pull mode: the program takes it from the queue */
    pthread_mutex_lock(&s->qmu);
    if (s->queue_closed) {
      status = 503;
      reply = asbs_error_json("the server is stopping", "ServiceUnavailable");
    } else {
      call->state = ASBS_CALL_QUEUED;
      if (s->qtail)
        s->qtail->next = call;
      else
        s->qhead = call;
      s->qtail = call;
      efd_update(s);
      pthread_cond_broadcast(&s->qcv);
      await_answer(s, call, &status, &reply);
    }
    pthread_mutex_unlock(&s->qmu);
  }
  asbs_call_release(call); /* the connection's reference */
  if (!reply) return MHD_NO;
  return send_json(s, c, (unsigned)status, reply);
}

/* ---- listening ----------------------------------------------------------------------- */

static int listen_on(asb_server *s, int port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len;
  int fam;
  struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, s->host, &a4->sin_addr) == 1) {
    fam = AF_INET;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    len = sizeof *a4;
  } else if (inet_pton(AF_INET6, s->host, &a6->sin6_addr) == 1) {
    fam = AF_INET6;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    len = sizeof *a6;
  } else {
    return asbs_err(ASB_EINVAL, "asb_server: host '%s' is not an IPv4 or IPv6 address", s->host);
  }
  int fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 128)) {
    int err = errno;
    if (fd >= 0) close(fd);
    return asbs_err(ASB_ECONNECTION, "asb_server: cannot listen on %s port %d: %s", s->host, port,
                    strerror(err));
  }
  len = sizeof ss;
  getsockname(fd, (struct sockaddr *)&ss, &len);
  atomic_store(&s->port, ntohs(fam == AF_INET ? a4->sin_port : a6->sin6_port));
  s->listen_fd = fd;
  return ASB_OK;
}

static void drain_stop_pipe(asb_server *s) {
  char b[64];
  while (read(s->stop_pipe[0], b, sizeof b) > 0) {
  }
}

static int begin(asb_server *s, int port) {
  if (!s) return asbs_err(ASB_EINVAL, "asb_server_start: no server");
  if (port < 0 || port > 65535)
    return asbs_err(ASB_EINVAL, "asb_server_start: port %d out of range", port);
  pthread_mutex_lock(&s->mu);
  if (atomic_load(&s->running)) {
    pthread_mutex_unlock(&s->mu);
    return asbs_err(ASB_EINVAL, "asb_server_start: the server is already running");
  }
  atomic_store(&s->running, 1);
  s->done = 0;
  pthread_mutex_unlock(&s->mu);
  drain_stop_pipe(s);
  atomic_store(&s->stopping, 0);
  pthread_mutex_lock(&s->qmu);
  s->queue_closed = 0;
  s->abandon = 0;
  efd_update(s);
  pthread_mutex_unlock(&s->qmu);
  int rc = asbs_freeze(s);
  if (!rc) rc = listen_on(s, port);
  if (!rc && !(s->guard = asbi_connguard_new(0, HEAD_TIMEOUT_MS,
                                             s->max_conns > 1 ? s->max_conns / 2 : 1))) {
    close(s->listen_fd);
    s->listen_fd = -1;
    rc = asbs_err(ASB_ERROR, "asb_server: cannot start a thread: %s", strerror(errno));
  }
  if (!rc) {
    s->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_ITC,
        0, NULL, NULL, handler, s, MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_COMPLETED, on_done, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_CONNECTION_LIMIT, s->max_conns,
        MHD_OPTION_CONNECTION_TIMEOUT, 300u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(64 * 1024), MHD_OPTION_END);
    if (!s->daemon) {
      asbi_connguard_free(s->guard);
      s->guard = NULL;
      close(s->listen_fd);
      s->listen_fd = -1;
      rc = asbs_err(ASB_ERROR, "asb_server: cannot start the HTTP service");
    }
  }
  if (rc) {
    atomic_store(&s->port, 0);
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->running, 0);
    s->done = 1;
    pthread_cond_broadcast(&s->done_cv);
    pthread_mutex_unlock(&s->mu);
  }
  return rc;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for a stop request, then shuts down gracefully. */
static void serve_until_stopped(asb_server *s) {
  struct MHD_Daemon *d = s->daemon;
  for (;;) {
    struct pollfd p = {s->stop_pipe[0], POLLIN, 0};
    int n = poll(&p, 1, -1);
    if (n > 0 || atomic_load(&s->stopping)) break;
  }
  atomic_store(&s->stopping, 1);
  /* No new connections; calls in progress finish (bounded by the grace).
   * Calls still queued for the program are answered 503 at once, and the
   * program's next_call learns that the server stops (the fd turns
   * readable); calls it took may still be answered during the grace. */
  MHD_socket lfd = MHD_quiesce_daemon(d);
  if (lfd != MHD_INVALID_SOCKET) close(lfd);
  pthread_mutex_lock(&s->qmu);
  s->queue_closed = 1;
  efd_update(s);
  pthread_cond_broadcast(&s->qcv);
  pthread_cond_broadcast(&s->call_cv);
  pthread_mutex_unlock(&s->qmu);
  long long deadline = s->grace_ms < 0 ? -1 : now_ms() + s->grace_ms;
  while (atomic_load(&s->inflight) > 0 && (deadline < 0 || now_ms() < deadline)) {
    struct timespec ts = {0, 5 * 1000000};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_lock(&s->qmu);
  s->abandon = 1; /* what is still unanswered gets 503 */
  pthread_cond_broadcast(&s->call_cv);
  pthread_mutex_unlock(&s->qmu);
  /* Let those 503s go out before the connections close (a handler still
   * running after the grace is not waited for any longer). */
  long long sent_by = now_ms() + 2000;
  while (atomic_load(&s->inflight) > 0 && now_ms() < sent_by) {
    struct timespec ts = {0, 5 * 1000000};
    nanosleep(&ts, NULL);
  }
  MHD_stop_daemon(d);
  s->daemon = NULL;
  asbi_connguard_free(s->guard);
  s->guard = NULL;
  s->listen_fd = -1;
  atomic_store(&s->port, 0);
  drain_stop_pipe(s);
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->running, 0);
  s->done = 1;
  pthread_cond_broadcast(&s->done_cv);
  pthread_mutex_unlock(&s->mu);
}

int asb_server_start(asb_server *s, int port) {
  int rc = begin(s, port);
  if (rc) return rc;
  s->bg = 0;
  serve_until_stopped(s);
  return ASB_OK;
}

static void *supervisor(void *arg) {
  serve_until_stopped(arg);
  return NULL;
}

int asb_server_start_background(asb_server *s, int port) {
  int rc = begin(s, port);
  if (rc) return rc;
  s->bg = 1;
  if (pthread_create(&s->bg_thread, NULL, supervisor, s) != 0) {
    s->bg = 0;
    asb_server_stop(s);
    serve_until_stopped(s); /* shuts down at once: stop is pending */
    return asbs_err(ASB_ERROR, "asb_server_start_background: cannot start a thread");
  }
  return ASB_OK;
}

int asb_server_port(const asb_server *s) {
  return s ? atomic_load(&s->port) : 0;
}

int asb_server_stop(asb_server *s) {
  if (!s) return ASB_OK;
  atomic_store(&s->stopping, 1);
  char one = 1;
  if (write(s->stop_pipe[1], &one, 1) < 0) { /* full: already requested */
  }
  return ASB_OK;
}

int asb_server_wait(asb_server *s) {
  if (!s) return ASB_OK;
  pthread_mutex_lock(&s->mu);
  while (atomic_load(&s->running) && !s->done) pthread_cond_wait(&s->done_cv, &s->mu);
  int join = s->bg;
  s->bg = 0;
  pthread_mutex_unlock(&s->mu);
  if (join) pthread_join(s->bg_thread, NULL);
  return ASB_OK;
}
