/* envd: HTTP plumbing on libmicrohttpd (one thread per connection, so
 * streaming bodies may block in their reader): listening, slow-client
 * limits, the request life cycle (head, body, completion, early answers),
 * CORS and routing with the access-token check. Connect RPCs go to
 * dispatch.c. SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api.h"
#include "dispatch.h"
#include "files.h"
#include "hreq.h"
#include "log.h"
#include "server.h"
#include "util/connguard.h"
#include "util/util.h"

#define ENVD_HEAD_TIMEOUT_MS 30000u /* request line to the end of the head */
#define ENVD_MAX_CONNECTIONS 1000u

/* The server's state: the daemon and its slow-client guard. */
static struct {
  struct MHD_Daemon *daemon;
  asbi_connguard *guard;
} g_srv;

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
  if (!envd_check_token(r)) {
    *status = 401;
    return envd_resp_json_error(401, "unauthorized access, please provide a "
                                     "valid access token or method signing "
                                     "if supported");
  }
  if (strcmp(u, "/envs") == 0 && strcmp(m, "GET") == 0)
    return envd_api_envs(r, status);
  if (strcmp(u, "/metrics") == 0 && strcmp(m, "GET") == 0)
    return envd_api_metrics(r, status);
  const envd_method *meth = envd_dispatch_find(u);
  if (meth) return envd_dispatch_begin(r, meth, status);
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
    *socket_ctx = ci ? asbi_connguard_open(g_srv.guard, ci->connect_fd) : NULL;
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
  g_srv.guard = asbi_connguard_new(0, ENVD_HEAD_TIMEOUT_MS, ENVD_MAX_CONNECTIONS / 2);
  if (!g_srv.guard) {
    close(fd);
    fprintf(stderr, "envd: cannot start a thread: %s\n", strerror(errno));
    return -1;
  }
  g_srv.daemon = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
      MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
      MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)ENVD_MAX_CONNECTIONS,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(1u << 20),
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)640,
      MHD_OPTION_THREAD_STACK_SIZE, stack, MHD_OPTION_EXTERNAL_LOGGER,
      mhd_log, NULL, MHD_OPTION_END);
  if (!g_srv.daemon) {
    close(fd);
    asbi_connguard_free(g_srv.guard);
    g_srv.guard = NULL;
    fprintf(stderr, "envd: cannot start the HTTP server\n");
    return -1;
  }
  return 0;
}

void envd_server_stop(void) {
  if (g_srv.daemon) MHD_stop_daemon(g_srv.daemon);
  g_srv.daemon = NULL;
  asbi_connguard_free(g_srv.guard);
  g_srv.guard = NULL;
}
