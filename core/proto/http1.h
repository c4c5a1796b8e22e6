/* HTTP/1.1 message framing for a reverse proxy: an incremental response-head
 * parser and a chunked transfer-coding decoder. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_HTTP1_H
#define ASB_PROTO_HTTP1_H

#include <stddef.h>
#include <stdint.h>

#define ASBI_H1_MAX_HEAD (64u * 1024u)
#define ASBI_H1_MAX_HEADERS 100

enum {
  ASBI_H1_OK = 0,
  ASBI_H1_EINCOMPLETE = -1301, /* need more bytes */
  ASBI_H1_ESYNTAX = -1302,     /* not a valid HTTP/1.x response head */
  ASBI_H1_ETOOBIG = -1303,     /* head over ASBI_H1_MAX_HEAD or too many headers */
  ASBI_H1_ECHUNK = -1304,      /* malformed chunked body */
  ASBI_H1_ELENGTH = -1305      /* bad or conflicting Content-Length */
};

typedef struct asbi_h1_header {
  const char *name; /* points into the parsed buffer (not NUL-terminated) */
  size_t name_len;
  const char *value;
  size_t value_len;
} asbi_h1_header;

/* How the body that follows the head is delimited. */
typedef enum asbi_h1_body {
  ASBI_H1_BODY_NONE = 0,    /* 1xx, 204, 304, or a response to HEAD */
  ASBI_H1_BODY_LENGTH = 1,  /* Content-Length bytes */
  ASBI_H1_BODY_CHUNKED = 2, /* chunked transfer coding */
  ASBI_H1_BODY_CLOSE = 3    /* until the connection closes */
} asbi_h1_body;

typedef struct asbi_h1_resp {
  int minor;  /* HTTP/1.<minor> */
  int status; /* 100..999 */
  const char *reason;
  size_t reason_len;
  asbi_h1_header headers[ASBI_H1_MAX_HEADERS];
  size_t nheaders;
  asbi_h1_body body;
  uint64_t content_length; /* for ASBI_H1_BODY_LENGTH */
  int keep_alive;          /* the connection may be reused after the body */
} asbi_h1_resp;

/* Parse a response head at the start of buf. Returns the head's length
 * (> 0, including the blank line) when complete, ASBI_H1_EINCOMPLETE when
 * more bytes are needed, or another negative ASBI_H1_E* code. head_request:
 * the request was HEAD (no body whatever the headers say). Header pointers
 * point into buf. */
long asbi_h1_parse_response(const char *buf, size_t len, int head_request, asbi_h1_resp *out);
/* Case-insensitive lookup; NULL if absent. */
const asbi_h1_header *asbi_h1_find(const asbi_h1_resp *r, const char *name);

/* 1 if the n bytes are a non-empty RFC 9110 token (a field name, a method). */
int asbi_h1_is_token(const char *s, size_t n);
/* 1 if the n bytes may be a field value as a proxy forwards it: no CR, LF,
 * NUL or other control byte but HTAB (RFC 9110 §5.5). */
int asbi_h1_value_ok(const char *s, size_t n);
/* 1 if the n bytes may be a request target: no SP, control byte or DEL. */
int asbi_h1_target_ok(const char *s, size_t n);
/* 1 if the comma-separated list v (n bytes) holds token t, any case. */
int asbi_h1_list_has(const char *v, size_t n, const char *t);

/* Incremental chunked decoder. */
typedef struct asbi_h1_chunked {
  int state;
  uint64_t left; /* bytes left in the current chunk */
  unsigned line; /* length of the size/trailer line so far (bounded) */
  int done;
} asbi_h1_chunked;

void asbi_h1_chunked_init(asbi_h1_chunked *c);
/* Decode in place: consumes up to *len bytes of buf, moves decoded payload to
 * the front of buf and sets *out_len to its length; *len becomes the number
 * of input bytes consumed (the rest, after the final chunk, belongs to the
 * next message). Returns 0, or ASBI_H1_ECHUNK. c->done becomes 1 after the
 * last chunk and its trailers. */
int asbi_h1_chunked_decode(asbi_h1_chunked *c, char *buf, size_t *len, size_t *out_len);

#endif
