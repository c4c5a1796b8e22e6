/* The engine's TCP front (see front.c): one listener for plain HTTP and
 * TLS. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_FRONT_H
#define ASB_ENGINE_FRONT_H

#include <microhttpd.h>
#include <openssl/ssl.h>

#include "httpd/httpd.h"

typedef struct front front;

/* What the front lets in. It accounts for every connection it accepted
 * until it is gone, whatever its phase (waiting for its first byte, in a
 * TLS handshake, or libmicrohttpd's), and applies the limits itself:
 * libmicrohttpd (0.9.75) must never reach its own connection limit with
 * connections handed to it (MHD_add_connection), or its thread deadlocks
 * (a mutex left locked on that path, fixed upstream in 1.0.0), so the
 * daemon is started with room beyond max_conns (front_mhd_limit). */
typedef struct front_limits {
  unsigned head_timeout_ms; /* first bytes and a TLS handshake; 0 = 30 000 */
  unsigned max_conns;       /* connections at once; past it the front stops
                               accepting (they wait in the kernel's backlog);
                               0 = 1000 */
  unsigned per_addr;        /* per client address, not counting idle
                               keep-alive ones (reclaimed), past which a new
                               one is parked, then refused with 503 (front.c);
                               0 = no limit */
  unsigned max_waiting;     /* waiting for a first byte or in a handshake;
                               one more cuts the oldest; 0 = max_conns / 4 */
} front_limits;

/* The connection limit to start the daemon with, for a front with
 * max_conns (twice it: the daemon's count is never above the front's). */
unsigned front_mhd_limit(unsigned max_conns);

/* Takes listen_fd (closed on failure too); serves nothing before
 * front_start. TLS through a terminator with tls (NULL: TLS connections
 * are closed). NULL with errno on failure. */
front *front_new(int listen_fd, SSL_CTX *tls, const front_limits *lim);
/* libmicrohttpd closed a connection the front handed it (the daemon's
 * connection-closed hook, asbi_httpd_opts.closed, with f as its cls): its
 * slot and its address's are free again. */
void front_conn_closed(void *f, struct MHD_Connection *c);
/* A request on a connection the front handed libmicrohttpd ended and the
 * connection waits for the next (the daemon's idle hook,
 * asbi_httpd_opts.idle, with f as its cls): a connection parked for its
 * address may take its place. */
void front_conn_idle(void *f, struct MHD_Connection *c);
/* Starts accepting: each connection goes to h's daemon, started without a
 * listening socket of its own and with front_conn_closed and
 * front_conn_idle as its hooks; h reclaims idle connections for new ones
 * (asbi_httpd_reclaim_idle). -errno on failure. */
int front_start(front *f, asbi_httpd *h);
/* Stops accepting (closes the listening sockets), ends every terminator
 * and waits for the front's threads. Call before stopping the daemon (its
 * TLS connections see their clients leave). Accepts NULL. */
void front_stop(front *f);
/* Frees f: after front_stop and after the daemon stopped (it calls
 * front_conn_closed until then). Accepts NULL. */
void front_free(front *f);

/* Serves one more listening socket (f takes fd), plain HTTP only: the
 * loopback URLs' listeners (loopurl.c). -ENOSPC past 4096 of them. */
int front_listen_add(front *f, int fd);
/* Serves a sandbox's portal (portal.c): a listening socket in the
 * sandbox's own network namespace, plain HTTP and TLS like the engine's
 * port. Its connections reach libmicrohttpd with an abstract AF_UNIX
 * address holding tag (at most 100 bytes; no TCP client has such an
 * address), which is also what per_addr counts them by: one sandbox's
 * connections never use up another's or a host client's. -ENOSPC past
 * 4096 listeners in all. */
int front_portal_add(front *f, int fd, const char *tag);
/* Stops serving fd: it refuses connections from now on and is closed by
 * the front. Connections it accepted go on. */
void front_listen_drop(front *f, int fd);

#endif
