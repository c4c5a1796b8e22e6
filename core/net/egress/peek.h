/* The first bytes of a proxied connection: the server name a TLS
 * ClientHello names (SNI) or an HTTP/1.x request's Host. Hand-written:
 * OpenSSL parses a ClientHello only inside a handshake it runs itself
 * (SSL_client_hello_get0_ext needs an SSL object that then owns the
 * connection), and the proxy must read the name without terminating TLS
 * for the domains it only splices. Bounds-checked on every read; fuzzed
 * (tests/fuzz/fuzz_peek.c). SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_PEEK_H
#define ASB_NET_EGRESS_PEEK_H

#include <stddef.h>

#define PEEK_NAME_MAX 253 /* a DNS name, no trailing dot */

typedef enum peek_kind {
  PEEK_MORE = -1, /* need more bytes to decide */
  PEEK_OTHER = 0, /* neither TLS nor HTTP/1.x (or malformed) */
  PEEK_TLS = 1,   /* a complete ClientHello */
  PEEK_HTTP = 2   /* a complete HTTP/1.x request head */
} peek_kind;

typedef struct peek_result {
  peek_kind kind;
  /* The name, lower case, no trailing dot, no port: "" when the hello has
   * no SNI / the request no Host, or when it is an IP literal (is_ip). */
  char name[PEEK_NAME_MAX + 1];
  int is_ip;       /* the Host was an IP literal */
  size_t head_len; /* PEEK_HTTP: bytes of the request head, CRLFCRLF included */
} peek_result;

/* Classifies buf[0..len). Never reads outside it. A name that is not a
 * valid host name (characters other than [A-Za-z0-9.-_], empty labels,
 * too long) makes the result PEEK_OTHER: the proxy refuses it. */
peek_kind peek_classify(const unsigned char *buf, size_t len, peek_result *out);

/* Lower-cases and checks a host name in place (strips one trailing dot):
 * 0, or -1 if it is not a valid name. */
int peek_norm_name(char *name);

#endif
