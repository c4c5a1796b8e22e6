/* Fewer writes per streamed response. libmicrohttpd 0.9.75 sends a
 * streamed (callback) response's head, each chunk a content reader
 * returns and the body's last chunk `0\r\n\r\n` each in a send() of its
 * own, and has no interface to join them; a chunked response cannot take
 * its framing from the caller. For a command relayed hop by hop (envd →
 * the router → the client) that is a wake-up of every reader for each:
 * the head, the start event, the end event, the last chunk. So a caller
 * that knows the next send() on a connection will be followed at once by
 * another (the head by a first chunk that is ready; the last data by the
 * end) arms the connection's socket: that next send() from this thread is
 * held back and reported as written, and goes out with the send() after
 * it in one sendmsg(). Before anything that may block with bytes held
 * (waiting for upstream, for a stream's next event) the caller flushes.
 *
 * The module does that by defining send() for the program that links it
 * (libmicrohttpd calls send() for these; envd links it statically, the
 * engine dynamically: either way the program's definition is the one
 * bound), passing every other call straight to the system call. Only
 * programs that call asbi_endhold_arm link this object.
 *
 * State is per thread (libmicrohttpd runs one thread per connection, the
 * reader and its sends on it). Sends larger than ASBI_ENDHOLD_MAX are not
 * held. Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_HTTPD_ENDHOLD_H
#define ASB_HTTPD_ENDHOLD_H

#define ASBI_ENDHOLD_MAX 4096

/* 1 if libmicrohttpd answers a request of this HTTP version (its
 * handler's `version`) with a chunked body when the size is unknown:
 * HTTP/1.1. Only such a response may be armed: an HTTP/1.0 one ends by
 * closing the connection, with no later send to carry the held bytes. */
int asbi_endhold_chunked(const char *version);

/* The calling thread's next send() on fd is held (added to what is held
 * already) and sent with the first send() after it that is not held.
 * fd < 0: nothing. */
void asbi_endhold_arm(int fd);

/* Sends what is held for fd on this thread now (waiting for the socket
 * to take it), and disarms. Call before blocking with bytes held. 0, or
 * -1 when the connection failed (it is then dropped). */
int asbi_endhold_flush(int fd);

/* Forgets what is armed or held for fd on this thread (the response is
 * gone, the connection with it); fd < 0: nothing. */
void asbi_endhold_drop(int fd);

#endif
