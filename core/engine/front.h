/* The engine's TCP front (see front.c): one listener for plain HTTP and
 * TLS. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_FRONT_H
#define ASB_ENGINE_FRONT_H

#include <microhttpd.h>
#include <openssl/ssl.h>

typedef struct front front;

/* Takes listen_fd and serves it: each connection goes to daemon (started
 * without a listening socket of its own), a TLS one through a terminator
 * with tls (NULL: TLS connections are closed). head_timeout_ms bounds how
 * long a new connection may take to send its first bytes and to finish a
 * handshake. max_pending bounds connections in that state. NULL with
 * errno on failure (listen_fd is closed then). */
front *front_start(int listen_fd, struct MHD_Daemon *daemon, SSL_CTX *tls, unsigned head_timeout_ms,
                   unsigned max_pending);
/* Stops accepting (closes the listening socket), ends every terminator and
 * waits for the front's threads; frees f. Call before stopping the daemon
 * (its TLS connections see their clients leave). Accepts NULL. */
void front_stop(front *f);

/* Serves one more listening socket (f takes fd), plain HTTP only: the
 * loopback URLs' listeners (loopurl.c). -ENOSPC past 4096 of them. */
int front_listen_add(front *f, int fd);
/* Stops serving fd: it refuses connections from now on and is closed by
 * the front. Connections it accepted go on. */
void front_listen_drop(front *f, int fd);

#endif
