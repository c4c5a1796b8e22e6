/* The HTTP-service shelf (httpd.h): listening, the daemon with its
 * slow-client guard, graceful stop, JSON errors, token comparison, bounded
 * bodies. SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "httpd.h"
#include "util/connguard.h"

struct asbi_httpd {
  struct MHD_Daemon *daemon;
  asbi_connguard *guard;
  MHD_AccessHandlerCallback handler;
  void *handler_cls;
  MHD_RequestCompletedCallback completed;
  void *completed_cls;
  void (*closed)(void *cls, struct MHD_Connection *c);
  void *closed_cls;
  void (*idle)(void *cls, struct MHD_Connection *c);
  void *idle_cls;
  void *(*uri)(void *cls, const char *uri, struct MHD_Connection *c);
  void *uri_cls;
  void (*log)(void *cls, const char *fmt, va_list ap);
  void *log_cls;
  int quiesced;
};

/* ---- listening --------------------------------------------------------- */

static int listen_unix(const char *path, char *err, size_t n) {
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof sa.sun_path) {
    snprintf(err, n, "unix socket path too long");
    return -1;
  }
  memcpy(sa.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(err, n, "socket: %s", strerror(errno));
    return -1;
  }
  unlink(path);
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || chmod(path, 0666) != 0) {
    snprintf(err, n, "bind %s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

static int listen_tcp(const char *addr, int port, int *bound_port, char *err, size_t n) {
  struct sockaddr_in6 s6;
  struct sockaddr_in s4;
  memset(&s6, 0, sizeof s6);
  memset(&s4, 0, sizeof s4);
  int v6 = 0;
  if (port < 0 || port > 65535) {
    snprintf(err, n, "bad port %d", port);
    return -1;
  }
  if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1) {
    s4.sin_family = AF_INET;
    s4.sin_port = htons((uint16_t)port);
  } else if (inet_pton(AF_INET6, addr, &s6.sin6_addr) == 1) {
    v6 = 1;
    s6.sin6_family = AF_INET6;
    s6.sin6_port = htons((uint16_t)port);
  } else if (strcmp(addr, "localhost") == 0) {
    s4.sin_family = AF_INET;
    s4.sin_port = htons((uint16_t)port);
    s4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  } else {
    snprintf(err, n, "bad listen address '%s'", addr);
    return -1;
  }
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(err, n, "socket: %s", strerror(errno));
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc = v6 ? bind(fd, (struct sockaddr *)&s6, sizeof s6)
              : bind(fd, (struct sockaddr *)&s4, sizeof s4);
  if (rc != 0) {
    snprintf(err, n, "bind %s:%d: %s", addr, port, strerror(errno));
    close(fd);
    return -1;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
    snprintf(err, n, "getsockname %s:%d: %s", addr, port, strerror(errno));
    close(fd);
    return -1;
  }
  *bound_port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return fd;
}

int asbi_httpd_listen(const asbi_httpd_addr *a, int *bound_port, char *err, size_t n) {
  *bound_port = 0;
  int fd = a->unix_path ? listen_unix(a->unix_path, err, n)
                        : listen_tcp(a->addr ? a->addr : "127.0.0.1", a->port, bound_port, err, n);
  if (fd < 0) return -1;
  if (listen(fd, 1024) != 0) {
    snprintf(err, n, "listen: %s", strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

/* ---- the daemon's callbacks: the slow-client guard around the caller's - */

/* A connection: its entry in the guard, and whether its request's head is
 * still being read (request line seen, handler not called yet). Used by
 * the connection's own thread only. */
typedef struct conn {
  asbi_guarded *g;
  int in_head;
} conn;

static conn *conn_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code) {
  asbi_httpd *h = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ai =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    unsigned char key[ASBI_HTTPD_KEY_MAX];
    /* known by address only where the caller reclaims (its addresses are
     * the ones it handed in, whole) */
    unsigned klen = h->idle ? asbi_httpd_addr_key(ai ? ai->client_addr : NULL, key) : 0;
    conn *k = ci ? calloc(1, sizeof *k) : NULL;
    /* Out of memory: the connection has no deadline (as in connguard.h) */
    if (k) k->g = asbi_connguard_open_key(h->guard, ci->connect_fd, key, klen);
    *socket_ctx = k;
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    conn *k = *socket_ctx;
    if (k) {
      asbi_connguard_close(k->g);
      free(k);
    }
    *socket_ctx = NULL;
    if (h->closed) h->closed(h->closed_cls, c);
  }
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
  asbi_httpd *h = cls;
  conn *k = conn_of(c);
  if (k) {
    k->in_head = 1;
    asbi_connguard_request_line(k->g);
  }
  return h->uri ? h->uri(h->uri_cls, uri, c) : NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  asbi_httpd *h = cls;
  /* The first call of a request comes once its head is complete. */
  conn *k = conn_of(c);
  if (k && k->in_head) {
    k->in_head = 0;
    asbi_connguard_head_done(k->g);
  }
  return h->handler(h->handler_cls, c, url, method, version, upload, upload_size, con_cls);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  asbi_httpd *h = cls;
  conn *k = conn_of(c);
  if (k) {
    k->in_head = 0;
    asbi_connguard_request_done(k->g);
  }
  if (h->completed) h->completed(h->completed_cls, c, con_cls, toe);
  if (k && h->idle) h->idle(h->idle_cls, c);
}

static void on_log(void *cls, const char *fmt, va_list ap) {
  asbi_httpd *h = cls;
  if (h->log) h->log(h->log_cls, fmt, ap);
}

/* ---- start and stop ---------------------------------------------------- */

asbi_httpd *asbi_httpd_start(const asbi_httpd_opts *o, char *err, size_t n) {
  asbi_httpd *h = calloc(1, sizeof *h);
  if (!h) {
    if (o->listen_fd >= 0) close(o->listen_fd);
    snprintf(err, n, "out of memory");
    return NULL;
  }
  h->handler = o->handler;
  h->handler_cls = o->handler_cls;
  h->completed = o->completed;
  h->completed_cls = o->completed_cls;
  h->closed = o->closed;
  h->closed_cls = o->closed_cls;
  h->idle = o->idle;
  h->idle_cls = o->idle_cls;
  h->uri = o->uri;
  h->uri_cls = o->uri_cls;
  h->log = o->log;
  h->log_cls = o->log_cls;
  unsigned max_conns = o->max_connections ? o->max_connections : 1000u;
  unsigned head_ms = o->head_timeout_ms ? o->head_timeout_ms : 30000u;
  unsigned waiting = o->max_waiting ? o->max_waiting : (max_conns > 1 ? max_conns / 2 : 1);
  h->guard = asbi_connguard_new(o->wait_timeout_ms, head_ms, waiting);
  if (!h->guard) {
    snprintf(err, n, "cannot start a thread: %s", strerror(errno));
    if (o->listen_fd >= 0) close(o->listen_fd);
    free(h);
    return NULL;
  }
  /* MHD_USE_ITC: MHD_quiesce_daemon needs it with an internal thread. */
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                   MHD_USE_ITC | MHD_USE_ERROR_LOG | o->extra_flags;
  if (o->listen_fd < 0) flags |= MHD_USE_NO_LISTEN_SOCKET; /* MHD_add_connection only */
  /* Options that have their library default when 0 are passed as
   * MHD_OPTION_ARRAY entries only when set. */
  struct MHD_OptionItem opt[8];
  int k = 0;
  if (o->listen_fd >= 0)
    opt[k++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, (intptr_t)o->listen_fd, NULL};
  if (o->conn_memory)
    opt[k++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)o->conn_memory, NULL};
  if (o->thread_stack)
    opt[k++] =
        (struct MHD_OptionItem){MHD_OPTION_THREAD_STACK_SIZE, (intptr_t)o->thread_stack, NULL};
  if (o->per_ip_limit)
    opt[k++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                       (intptr_t)o->per_ip_limit, NULL};
  opt[k++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  /* the logger first, so that libmicrohttpd's messages about the options
   * after it go to it too */
  h->daemon = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_log, h,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
      MHD_OPTION_URI_LOG_CALLBACK, on_uri, h, MHD_OPTION_CONNECTION_LIMIT, max_conns,
      MHD_OPTION_CONNECTION_TIMEOUT, o->idle_timeout_s, MHD_OPTION_ARRAY, opt, MHD_OPTION_END);
  if (!h->daemon) {
    snprintf(err, n, "cannot start the HTTP server");
    if (o->listen_fd >= 0) close(o->listen_fd);
    asbi_connguard_free(h->guard);
    free(h);
    return NULL;
  }
  return h;
}

struct MHD_Daemon *asbi_httpd_daemon(asbi_httpd *h) {
  return h->daemon;
}

void asbi_httpd_quiesce(asbi_httpd *h) {
  if (!h || h->quiesced) return;
  h->quiesced = 1;
  MHD_socket lfd = MHD_quiesce_daemon(h->daemon);
  /* The daemon's thread may still be in poll() on the socket, which holds
   * it open past close(): connections would still be taken into the
   * backlog (and reset later). shutdown() ends the listening state itself
   * (Linux: TCP leaves LISTEN, a unix socket refuses connects), so from
   * here on a client is refused at once. */
  if (lfd != MHD_INVALID_SOCKET) {
    shutdown(lfd, SHUT_RDWR);
    close(lfd);
  }
}

void asbi_httpd_stop(asbi_httpd *h) {
  if (!h) return;
  asbi_httpd_quiesce(h);
  MHD_stop_daemon(h->daemon);
  asbi_connguard_free(h->guard); /* after every connection closed */
  free(h);
}

/* ---- client addresses -------------------------------------------------- */

unsigned asbi_httpd_addr_key(const struct sockaddr *sa, unsigned char key[ASBI_HTTPD_KEY_MAX]) {
  if (sa && sa->sa_family == AF_INET) {
    key[0] = 4;
    memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    return 5;
  }
  if (sa && sa->sa_family == AF_INET6) {
    key[0] = 6;
    memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    return 17;
  }
  if (sa && sa->sa_family == AF_UNIX) {
    const struct sockaddr_un *u = (const struct sockaddr_un *)sa;
    if (u->sun_path[0] != 0) return 0; /* a path or unnamed: not counted */
    size_t n = strnlen(u->sun_path + 1, sizeof u->sun_path - 1);
    if (n > ASBI_HTTPD_KEY_MAX - 1) n = ASBI_HTTPD_KEY_MAX - 1;
    key[0] = 'u';
    memcpy(key + 1, u->sun_path + 1, n);
    return (unsigned)n + 1;
  }
  return 0;
}

int asbi_httpd_reclaim_idle(asbi_httpd *h, const struct sockaddr *sa) {
  unsigned char key[ASBI_HTTPD_KEY_MAX];
  unsigned len = h ? asbi_httpd_addr_key(sa, key) : 0;
  return len ? asbi_connguard_reclaim(h->guard, key, len) : 0;
}

/* ---- replies and checks ------------------------------------------------ */

struct MHD_Response *asbi_httpd_vjson_error(unsigned status, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  /* cJSON writes the message as a JSON string (quotes, control characters
   * and non-UTF-8 bytes escaped or kept as cJSON does everywhere else). */
  cJSON *j = cJSON_CreateString(msg);
  char *lit = j ? cJSON_PrintUnformatted(j) : NULL;
  cJSON_Delete(j);
  if (!lit) return NULL;
  asbi_buf b = ASBI_BUF_INIT;
  int rc = asbi_buf_printf(&b, "{\"code\":%u,\"message\":%s}\n", status, lit);
  free(lit);
  struct MHD_Response *r =
      rc == 0 ? MHD_create_response_from_buffer(b.len, b.data, MHD_RESPMEM_MUST_COPY) : NULL;
  asbi_buf_free(&b);
  if (r) {
    MHD_add_response_header(r, "Content-Type", "application/json; charset=utf-8");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  }
  return r;
}

struct MHD_Response *asbi_httpd_json_error(unsigned status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  struct MHD_Response *r = asbi_httpd_vjson_error(status, fmt, ap);
  va_end(ap);
  return r;
}

int asbi_httpd_token_eq(const char *given, const char *want) {
  if (!given || !want) return 0;
  size_t lg = strlen(given), lw = strlen(want);
  /* Every byte of the shorter string is compared; the difference is
   * accumulated, never tested inside the loop. */
  unsigned char d = (unsigned char)(lg != lw);
  size_t n = lg < lw ? lg : lw;
  for (size_t i = 0; i < n; i++) d |= (unsigned char)(given[i] ^ want[i]);
  return d == 0;
}

void asbi_httpd_body_init(asbi_httpd_body *b, size_t max) {
  asbi_buf_init(&b->buf, max);
  b->too_big = 0;
}

void asbi_httpd_body_append(asbi_httpd_body *b, const void *data, size_t len) {
  if (b->too_big) return;
  if (asbi_buf_append(&b->buf, data, len) != 0) {
    b->too_big = 1;
    asbi_buf_free(&b->buf);
  }
}

void asbi_httpd_body_free(asbi_httpd_body *b) {
  asbi_buf_free(&b->buf);
}
