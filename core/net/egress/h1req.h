/* HTTP/1.x requests as the egress proxy relays them when it must look at
 * each one (header rules, or a domain allowance on plain HTTP, where every
 * request on a keep-alive connection must name the allowed Host): the
 * head parsed and checked, the body framed (Content-Length, or chunked
 * tracked byte by byte without decoding), the head rewritten with the
 * rule's headers. Hand-written: libmicrohttpd and the project's
 * proto/http1.c parse for a server or a client that consumes the
 * message; the proxy must pass bytes on unchanged and know where each
 * message ends. Ambiguous framing (Transfer-Encoding with
 * Content-Length, several Content-Lengths, obsolete folding) is refused
 * (request smuggling). Fuzzed: tests/fuzz/fuzz_h1req.c.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_H1REQ_H
#define ASB_NET_EGRESS_H1REQ_H

#include <stddef.h>
#include <stdint.h>

#define H1REQ_MAX_HEADERS 128
#define H1REQ_HEAD_MAX (32 * 1024)

typedef struct h1req_span {
  size_t off, len; /* in the head buffer */
} h1req_span;

typedef struct h1req_head {
  size_t head_len; /* bytes, CRLFCRLF included */
  h1req_span name[H1REQ_MAX_HEADERS], value[H1REQ_MAX_HEADERS];
  size_t nheaders;
  size_t line_len; /* the request line, CRLF excluded */
  char host[254];  /* normalised Host ("" if none, or an IP literal: is_ip) */
  int is_ip;
  int chunked;       /* Transfer-Encoding: chunked (last) */
  uint64_t body_len; /* Content-Length (0 when absent) */
  int upgrade;       /* CONNECT, or an Upgrade header: after it the stream is not HTTP */
} h1req_head;

/* 1 parsed (*h filled), 0 need more bytes, -1 malformed or ambiguous. */
int h1req_parse(const char *buf, size_t len, h1req_head *h);

/* The head with every header named in names[n] (case-insensitive) taken
 * out and "names[i]: values[i]" added after the request line. A
 * malloc'ed buffer in *out (*outlen bytes); 0, or -1 (no memory, a
 * name or value that is not a valid header, or a result past
 * H1REQ_MAX_HEADERS / H1REQ_HEAD_MAX). */
int h1req_rewrite(const char *buf, const h1req_head *h, const char *const *names,
                  const char *const *values, size_t n, char **out, size_t *outlen);

/* A chunked body followed byte by byte (the bytes pass on unchanged). */
typedef struct h1req_chunks {
  int state;
  uint64_t left; /* bytes of chunk data still to pass */
  unsigned digits, line;
} h1req_chunks;

void h1req_chunks_init(h1req_chunks *c);
/* Feeds b[0..n): how many of them belong to the body (all n, or fewer
 * when it ended inside b: *done set), or -1 if it is malformed. */
long h1req_chunks_feed(h1req_chunks *c, const char *b, size_t n, int *done);

#endif
