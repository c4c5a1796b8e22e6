/* The end of a chunked response in one write. libmicrohttpd 0.9.75 sends
 * the last chunk a content reader returned and the last-chunk marker
 * (`0\r\n\r\n`) in two send() calls, its interface has no way to hand over
 * the last data together with the end, and a chunked response cannot
 * take its framing from the caller. For a stream relayed hop by hop
 * (envd → the router → the client) that is two wake-ups of every reader
 * for each stream's end. So a reader that knows it is returning the last
 * data marks the connection's socket, and the next send() on it from this
 * thread (libmicrohttpd's send of that chunk) is held back, reported as
 * written, and goes out with the send() after it (the marker) in one
 * sendmsg(). The module does that by defining send() for the program that
 * links it (libmicrohttpd calls send() for chunks; envd links it
 * statically, the engine dynamically: either way the program's
 * definition is the one bound), passing every other call straight to the
 * system call. Only programs that call asbi_endhold_arm link this object.
 *
 * State is per thread (libmicrohttpd runs one thread per connection, the
 * reader and its send on it). A chunk larger than ASBI_ENDHOLD_MAX is not
 * held. Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_HTTPD_ENDHOLD_H
#define ASB_HTTPD_ENDHOLD_H

#define ASBI_ENDHOLD_MAX 4096

/* 1 if libmicrohttpd answers a request of this HTTP version (its
 * handler's `version`) with a chunked body when the size is unknown:
 * HTTP/1.1. Only such a response may be armed: an HTTP/1.0 one ends by
 * closing the connection, with no second send to carry the held bytes. */
int asbi_endhold_chunked(const char *version);

/* The calling thread's next send() on fd is held and sent with the one
 * after it. fd < 0: nothing. */
void asbi_endhold_arm(int fd);

/* Forgets what is armed or held for fd on this thread (the response is
 * gone, the connection with it); fd < 0: nothing. */
void asbi_endhold_drop(int fd);

#endif
