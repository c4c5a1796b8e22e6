/* The HTTP-service shelf: what every libmicrohttpd server of the project
 * repeats, once. libmicrohttpd stays the server (thread per connection);
 * this module adds around it
 *
 *   - a listening socket on TCP (IPv4, IPv6, "localhost") or a unix
 *     stream socket (asbi_httpd_listen);
 *   - a daemon started with the project's slow-client limits: the request
 *     head deadline and the cap on connections waiting for one
 *     (util/connguard.h), a connection cap, an idle timeout, a per-
 *     connection memory bound (asbi_httpd_start);
 *   - a graceful stop: stop accepting first, then close the connections
 *     and join their threads (asbi_httpd_quiesce, asbi_httpd_stop);
 *   - the JSON error reply {"code": <status>, "message": "..."}
 *     (asbi_httpd_json_error), a constant-time token comparison
 *     (asbi_httpd_token_eq) and a bounded body collector
 *     (asbi_httpd_body).
 *
 * The request handler is the caller's own MHD_AccessHandlerCallback; this
 * module does no routing and knows no program's types. Adopting it:
 * docs/httpd.md. Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_HTTPD_HTTPD_H
#define ASB_HTTPD_HTTPD_H

#include <stdarg.h>
#include <stddef.h>

#include <microhttpd.h>

#include "util/buf.h"

/* ---- listening --------------------------------------------------------- */

typedef struct asbi_httpd_addr {
  const char *unix_path; /* a unix stream socket (mode 0666; an existing
                            file there is replaced), or NULL for TCP */
  const char *addr;      /* TCP: IPv4, IPv6 or "localhost"; NULL = 127.0.0.1 */
  int port;              /* TCP: 0 = any free port */
} asbi_httpd_addr;

/* A listening socket (close-on-exec, backlog 1024). On TCP *bound_port is
 * the port bound, on unix 0. -1 with a message in err (n bytes) on
 * failure. */
int asbi_httpd_listen(const asbi_httpd_addr *a, int *bound_port, char *err, size_t n);

/* ---- the service ------------------------------------------------------- */

typedef struct asbi_httpd asbi_httpd;

typedef struct asbi_httpd_opts {
  int listen_fd; /* from asbi_httpd_listen; the service owns it from the
                    call of asbi_httpd_start on, also when that fails.
                    -1: none; the caller accepts connections itself and
                    hands them in with MHD_add_connection */
  /* The caller's handler and its completion callback (optional), as
   * libmicrohttpd calls them. The handler's first call for a request marks
   * the end of the request head for the slow-client guard (the module
   * tells it from the later ones itself). */
  MHD_AccessHandlerCallback handler;
  void *handler_cls;
  MHD_RequestCompletedCallback completed;
  void *completed_cls;
  /* Optional: called once libmicrohttpd let go of a connection (after its
   * thread ended, in the daemon's thread): a caller that hands connections
   * in (MHD_add_connection) counts them out here. */
  void (*closed)(void *cls, struct MHD_Connection *c);
  void *closed_cls;
  /* Optional: called (on the connection's thread) when a request ended
   * and its connection waits for the next one (keep-alive idle), after
   * asbi_httpd_reclaim_idle can pick it. Only a daemon with this hook
   * knows its connections by client address (asbi_httpd_reclaim_idle). */
  void (*idle)(void *cls, struct MHD_Connection *c);
  void *idle_cls;
  /* Optional: called with the raw request target (query string and
   * escapes as sent) once the request line is read; what it returns is
   * the request's *con_cls in the handler's first call (free it in
   * `completed`). libmicrohttpd's MHD_OPTION_URI_LOG_CALLBACK. */
  void *(*uri)(void *cls, const char *uri, struct MHD_Connection *c);
  void *uri_cls;
  unsigned max_connections; /* 0 = 1000 */
  unsigned head_timeout_ms; /* request line to end of head; 0 = 30 000 */
  unsigned max_waiting;     /* connections waiting for a head before the
                               oldest is cut; 0 = max_connections / 2 */
  unsigned wait_timeout_ms; /* connection start, or end of the previous
                               request, to the next request line; 0 = no
                               limit but idle_timeout_s */
  unsigned per_ip_limit;    /* connections per client address; 0 = none */
  unsigned idle_timeout_s;  /* libmicrohttpd's inactivity timeout; 0 = none */
  size_t conn_memory;       /* per-connection memory; 0 = libmicrohttpd's */
  size_t thread_stack;      /* per-connection thread stack; 0 = default */
  unsigned extra_flags;     /* more MHD_USE_* flags (e.g. MHD_USE_TURBO) */
  /* libmicrohttpd's own error log; NULL = silent. */
  void (*log)(void *cls, const char *fmt, va_list ap);
  void *log_cls;
} asbi_httpd_opts;

/* Starts the daemon. NULL with a message in err on failure (the listening
 * socket is closed then). */
asbi_httpd *asbi_httpd_start(const asbi_httpd_opts *o, char *err, size_t n);
/* The daemon, for what libmicrohttpd offers beyond this module. */
struct MHD_Daemon *asbi_httpd_daemon(asbi_httpd *h);
/* Stops accepting connections (closes the listening socket); requests in
 * progress go on. Idempotent. */
void asbi_httpd_quiesce(asbi_httpd *h);
/* Quiesces, then closes every connection, joins their threads and frees h.
 * A handler blocked on something of its own must be woken by the caller
 * first (libmicrohttpd waits for it). Accepts NULL. */
void asbi_httpd_stop(asbi_httpd *h);

/* ---- client addresses -------------------------------------------------- */

#define ASBI_HTTPD_KEY_MAX 72
/* What a client is counted by: its family (4, 6; 'u' for an abstract unix
 * address, whose name follows, cut at 71 bytes), then its address without
 * the port. Its length, 0 for any other address (or NULL). */
unsigned asbi_httpd_addr_key(const struct sockaddr *sa, unsigned char key[ASBI_HTTPD_KEY_MAX]);

/* Shuts down the connection from sa's address (asbi_httpd_addr_key) that
 * has been idle longest between requests: one that served a request and
 * whose next one has not begun (never one that has not served one yet).
 * libmicrohttpd sees its client leave and closes it (the closed hook
 * follows). 1 if one was shut down, 0 if that address has none idle. Any
 * thread. */
int asbi_httpd_reclaim_idle(asbi_httpd *h, const struct sockaddr *sa);

/* ---- replies and checks ------------------------------------------------ */

/* {"code": status, "message": "<fmt...>"}\n as application/json with
 * X-Content-Type-Options: nosniff (the message is cut at 1023 bytes).
 * NULL when out of memory. */
struct MHD_Response *asbi_httpd_json_error(unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
struct MHD_Response *asbi_httpd_vjson_error(unsigned status, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* 1 when the token a client sent equals the expected one, in time that
 * depends on their lengths only, not on where they differ. 0 when either
 * is NULL. */
int asbi_httpd_token_eq(const char *given, const char *want);

/* A request body collected up to a bound. */
typedef struct asbi_httpd_body {
  asbi_buf buf;
  int too_big; /* set once the bound was passed; buf is freed then */
} asbi_httpd_body;
void asbi_httpd_body_init(asbi_httpd_body *b, size_t max);
/* Appends a piece of the body; past the bound, sets too_big, frees what
 * was collected and drops the rest. */
void asbi_httpd_body_append(asbi_httpd_body *b, const void *data, size_t len);
void asbi_httpd_body_free(asbi_httpd_body *b);

#endif
