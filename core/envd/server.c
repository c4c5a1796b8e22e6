/* envd: its HTTP service. Listening, slow-client limits and the stop are
 * the shared HTTP-service module's (httpd/httpd.h, on libmicrohttpd, one
 * thread per connection); here are envd's limits, the request life cycle
 * (head, body, completion, early answers), CORS and routing with the
 * access-token check. Connect RPCs go to dispatch.c.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "dispatch.h"
#include "files.h"
#include "hreq.h"
#include "httpd/endhold.h"
#include "httpd/httpd.h"
#include "log.h"
#include "server.h"
#include "util/util.h"

#define ENVD_HEAD_TIMEOUT_MS 30000u /* request line to the end of the head */
#define ENVD_MAX_CONNECTIONS 1000u

/* The server's state: the HTTP service (httpd/httpd.h). */
static struct { asbi_httpd *httpd; } g_srv;

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
  if (strcmp(u, "/init") == 0 && strcmp(m, "POST") == 0) return envd_api_init(r, status);
  if (strcmp(u, "/files") == 0 && strcmp(m, "GET") == 0) return envd_files_get(r, status);
  if (strcmp(u, "/files") == 0 && strcmp(m, "POST") == 0) return envd_files_post(r, status);
  if (!envd_check_token(r)) {
    *status = 401;
    return asbi_httpd_json_error(401,
                                 "unauthorized access, please provide a "
                                 "valid access token or method signing "
                                 "if supported");
  }
  if (strcmp(u, "/envs") == 0 && strcmp(m, "GET") == 0) return envd_api_envs(r, status);
  if (strcmp(u, "/metrics") == 0 && strcmp(m, "GET") == 0) return envd_api_metrics(r, status);
  const envd_method *meth = envd_dispatch_find(u);
  if (meth) return envd_dispatch_begin(r, meth, status);
  if (strcmp(u, "/health") == 0 || strcmp(u, "/init") == 0 || strcmp(u, "/files") == 0 ||
      strcmp(u, "/envs") == 0 || strcmp(u, "/metrics") == 0) {
    *status = 405;
    return envd_resp_empty();
  }
  *status = 404;
  return envd_resp_buf("text/plain; charset=utf-8", "404 page not found\n", 19);
}

static enum MHD_Result queue(envd_hreq *r, struct MHD_Response *resp, unsigned status) {
  if (!resp) return MHD_NO;
  if (envd_hdr(r, "Origin")) {
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                            "Connect-Protocol-Version, Content-Encoding, Grpc-Status, "
                            "Grpc-Message, Grpc-Status-Details-Bin, Location, Cache-Control, "
                            "Content-Type, Content-Length, Vary");
  }
  enum MHD_Result rc = MHD_queue_response(r->conn, status, resp);
  MHD_destroy_response(resp);
  return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  (void)cls;
  envd_hreq *r = *con_cls;
  if (!r) {
    r = calloc(1, sizeof *r);
    if (!r) return MHD_NO;
    *con_cls = r;
    r->conn = conn;
    r->method = method;
    r->url = url;
    r->sock = -1;
    r->t_head = envd_tns();
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci) r->sock = ci->connect_fd;
    r->hold_fd = asbi_endhold_chunked(version) ? r->sock : -1;
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
      if (r->fs_creds && envd_creds_enter(&r->user) != 0)
        r->failed = 1;
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
      resp = asbi_httpd_json_error(403, "cannot act as user '%s'", r->user.name);
    } else {
      resp = r->on_done(r, &status);
      if (r->fs_creds) envd_creds_leave();
    }
    r->on_done = NULL;
  }
  if (!resp) return MHD_NO;
  return queue(r, resp, status);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)toe;
  (void)conn;
  envd_hreq *r = *con_cls;
  if (!r) return;
  if (r->on_free) r->on_free(r);
  if (r->early) MHD_destroy_response(r->early);
  asbi_httpd_body_free(&r->body);
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

/* ---- start and stop -------------------------------------------------- */

int envd_server_start(const envd_listen *l, int *bound_port) {
  char err[256];
  asbi_httpd_addr a = {l->unix_path, l->addr, l->port};
  int fd = asbi_httpd_listen(&a, bound_port, err, sizeof err);
  if (fd < 0) {
    fprintf(stderr, "envd: %s\n", err);
    return -1;
  }
  /* Slow clients (any process in the sandbox may connect): a request head
   * must arrive within 30 s of its request line, and at most half the
   * connections may wait for one (the oldest goes first); idle keep-alive
   * connections (the engine pools them) are left open for 640 s. One
   * thread per connection, so streaming bodies may block in their reader. */
  asbi_httpd_opts o = {
    .listen_fd = fd,
    .handler = on_request,
    .completed = on_completed,
    .max_connections = ENVD_MAX_CONNECTIONS,
    .head_timeout_ms = ENVD_HEAD_TIMEOUT_MS,
    .max_waiting = ENVD_MAX_CONNECTIONS / 2,
    .idle_timeout_s = 640,
    .conn_memory = (size_t)1 << 20,
#if defined(__SANITIZE_ADDRESS__)
    .thread_stack = (size_t)4 << 20,
#else
    .thread_stack = (size_t)1 << 20,
#endif
    .extra_flags = MHD_USE_TURBO,
    .log = mhd_log,
  };
  g_srv.httpd = asbi_httpd_start(&o, err, sizeof err);
  if (!g_srv.httpd) {
    fprintf(stderr, "envd: %s\n", err);
    return -1;
  }
  return 0;
}

void envd_server_stop(void) {
  asbi_httpd_stop(g_srv.httpd);
  g_srv.httpd = NULL;
}
