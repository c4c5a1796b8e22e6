/* Deadlines for the request heads of a thread-per-connection HTTP server
 * (our libmicrohttpd servers), against slow clients that hold connection
 * slots without ever finishing a request ("slowloris").
 *
 * libmicrohttpd 0.9.75 (Debian 12) has only an inactivity timeout, which a
 * client resets with every byte it trickles in; it has no limit on the time
 * a request head may take, and nothing that would tell idle keep-alive
 * connections from busy ones. So the servers report each connection's
 * phases here, and a watchdog thread shuts down (shutdown(2), never close:
 * the fd stays the server's) the connections whose head is late:
 *
 *   waiting  from the connection's start, or the end of its previous
 *            request, to its next request line: at most idle_ms (0 = no
 *            limit here; the server's inactivity timeout applies);
 *   head     from the request line to the end of the headers: at most
 *            head_ms, and never past the waiting deadline;
 *   busy     from the end of the headers to the end of the request: no
 *            deadline here.
 *
 * max_waiting (0 = no limit) caps the connections in the first two phases:
 * one more starting shuts the oldest of them down, so slow clients spread
 * over many source addresses cannot fill the server either.
 *
 * Thread-safe; each asbi_guarded is used by its connection's callbacks.
 * Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_UTIL_CONNGUARD_H
#define ASB_UTIL_CONNGUARD_H

typedef struct asbi_connguard asbi_connguard;
typedef struct asbi_guarded asbi_guarded;

/* NULL if the thread cannot start (errno set). */
asbi_connguard *asbi_connguard_new(unsigned idle_ms, unsigned head_ms, unsigned max_waiting);
/* After the server stopped (every connection closed). Accepts NULL. */
void asbi_connguard_free(asbi_connguard *g);

/* A connection started (its socket fd): it is waiting for a request. NULL
 * when out of memory (the connection then has no deadline); every function
 * below accepts NULL. */
asbi_guarded *asbi_connguard_open(asbi_connguard *g, int fd);
/* The same for a connection whose client the caller knows by key (up to
 * ASBI_CONNGUARD_KEY_MAX bytes, e.g. its address): asbi_connguard_reclaim
 * may pick it. */
#define ASBI_CONNGUARD_KEY_MAX 72
asbi_guarded *asbi_connguard_open_key(asbi_connguard *g, int fd, const void *key, unsigned len);
/* Its request line arrived. */
void asbi_connguard_request_line(asbi_guarded *c);
/* Its request head is complete. */
void asbi_connguard_head_done(asbi_guarded *c);
/* Its request ended (response sent or request aborted): waiting again. */
void asbi_connguard_request_done(asbi_guarded *c);
/* It closed: frees c. */
void asbi_connguard_close(asbi_guarded *c);

/* Connections the watchdog shut down so far (for logs and tests). */
unsigned long asbi_connguard_cut(asbi_connguard *g);

/* Shuts down (shutdown(2), as the watchdog does) the connection of client
 * key that has been idle longest between requests: one that served a
 * request and whose next request line has not begun. A connection that
 * has not served one yet is never taken (its client is about to send its
 * first request). 1 if one was shut down, 0 if key has none idle. */
int asbi_connguard_reclaim(asbi_connguard *g, const void *key, unsigned len);

#endif
