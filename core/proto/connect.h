/* Connect protocol envelopes (streaming framing) and error bodies.
 * Internal; see ../shared reference e2b-protocol.md §3 "Connect wire".
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_CONNECT_H
#define ASB_PROTO_CONNECT_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Envelope: [flags:1][length:4, big-endian][message:length]. */
#define ASBI_CONNECT_FLAG_COMPRESSED 0x01u
#define ASBI_CONNECT_FLAG_END_STREAM 0x02u
#define ASBI_CONNECT_HEADER_LEN 5u
/* Default bound on one message; larger declared lengths are rejected before
 * any allocation. */
#define ASBI_CONNECT_DEFAULT_MAX (16u * 1024u * 1024u)

/* Decoder results (negative); a callback's own non-zero return is passed
 * through unchanged. */
enum {
  ASBI_CONNECT_OK = 0,
  ASBI_CONNECT_ETOOBIG = -1001,     /* declared length above the bound */
  ASBI_CONNECT_ECOMPRESSED = -1002, /* compressed flag: not negotiated */
  ASBI_CONNECT_EFLAGS = -1003,      /* unknown flag bits */
  ASBI_CONNECT_EAFTEREND = -1004,   /* bytes after the end-stream envelope */
  ASBI_CONNECT_ETRUNCATED = -1005,  /* EOF inside an envelope */
  ASBI_CONNECT_ENOEND = -1006,      /* EOF without an end-stream envelope */
  ASBI_CONNECT_ENOMEM = -1007
};

/* Called once per complete envelope. data is NUL-terminated for
 * convenience (data[len] == 0) and valid only during the call: it points
 * into the decoder's buffer or, for a message that lay whole in the chunk
 * being fed, into that chunk. Return non-zero to stop decoding. */
typedef int (*asbi_connect_msg_fn)(void *ud, unsigned flags, const char *data, size_t len);

typedef struct asbi_connect_dec {
  unsigned char hdr[ASBI_CONNECT_HEADER_LEN];
  size_t hdr_have;
  uint32_t want; /* message length of the envelope being read */
  asbi_buf msg;
  size_t max_msg;
  int in_body;
  int ended; /* end-stream envelope seen */
  int failed;
} asbi_connect_dec;

/* max_msg 0 = ASBI_CONNECT_DEFAULT_MAX. The body buffer grows with the bytes
 * that arrive, never to a declared length up front. */
void asbi_connect_dec_init(asbi_connect_dec *d, size_t max_msg);
void asbi_connect_dec_free(asbi_connect_dec *d);
/* Feed any number of bytes, split anywhere. Returns ASBI_CONNECT_OK, a
 * negative ASBI_CONNECT_E* code, or the callback's non-zero value. After a
 * failure every further call returns the same class of error. */
int asbi_connect_dec_feed(asbi_connect_dec *d, const void *p, size_t n, asbi_connect_msg_fn fn,
                          void *ud);
/* Call at end of input: ASBI_CONNECT_ETRUNCATED inside an envelope,
 * ASBI_CONNECT_ENOEND if no end-stream envelope arrived, else OK. */
int asbi_connect_dec_finish(const asbi_connect_dec *d);
const char *asbi_connect_strerror(int code);

/* Append one envelope holding msg (len bytes) to out. 0 or -1. */
int asbi_connect_encode(asbi_buf *out, unsigned flags, const char *msg, size_t len);

/* Error payloads. Unary error body and end-stream payload both carry
 * {"code": "<snake_case>", "message": "..."} (end-stream nests it under
 * "error"). Outputs are malloc'd; *code is NULL when there is no error. */
/* End-stream payload: 0 = no error, 1 = error (code/message set),
 * -1 = malformed payload. Per the protocol, {"error": null}, {"error": {}},
 * a missing/null code and codes outside the 16 are malformed; an absent
 * message gives "". The payload is parsed with asbi_pj_parse (strict). */
int asbi_connect_parse_end(const char *json, size_t len, char **code, char **message);
/* Unary error body: 0 and code/message set, or -1 if it is not a Connect
 * error body. */
int asbi_connect_parse_error(const char *json, size_t len, char **code, char **message);
/* Serialise an end-stream payload ({} or {"error":{...}}) into out. code
 * NULL means success ({}); an invalid code is written as "unknown"; an
 * empty message is omitted; invalid UTF-8 in message becomes U+FFFD. On
 * failure out is left as it was. */
int asbi_connect_end_json(asbi_buf *out, const char *code, const char *message);
/* Serialise a unary error body {"code","message"} into out. */
int asbi_connect_error_json(asbi_buf *out, const char *code, const char *message);

/* Connect code <-> HTTP status (connect-go's table). Unknown codes → 500.
 * asbi_connect_code_from_http maps a status without a body to a code. */
int asbi_connect_code_to_http(const char *code);
const char *asbi_connect_code_from_http(int status);
/* 1 if code is one of the 16 Connect codes. */
int asbi_connect_code_valid(const char *code);

#endif
