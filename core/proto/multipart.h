/* multipart/form-data (RFC 7578): a streaming writer for clients and an
 * incremental parser for servers. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_MULTIPART_H
#define ASB_PROTO_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* ---- writer ------------------------------------------------------------
 * The body is: for each part, asbi_mpw_part_head() bytes, then the part's
 * data (streamed by the caller from wherever it lives), then after the last
 * part asbi_mpw_finish() bytes. Nothing is buffered but the small heads. */
typedef struct asbi_mpw {
  char boundary[48];
  int parts; /* heads written so far */
} asbi_mpw;

/* Random boundary. 0 or -1. */
int asbi_mpw_init(asbi_mpw *w);
/* "multipart/form-data; boundary=..." into out (>= 96 bytes). */
void asbi_mpw_content_type(const asbi_mpw *w, char *out, size_t outlen);
/* Appends the delimiter and headers of the next part. field is the form
 * field name, filename may be NULL, content_type NULL means
 * application/octet-stream. Names with CR, LF or NUL are rejected (-1);
 * '"' and '\\' are backslash-escaped inside the quoted strings. */
int asbi_mpw_part_head(asbi_mpw *w, asbi_buf *out, const char *field, const char *filename,
                       const char *content_type);
/* Appends the closing delimiter, always "\r\n--<boundary>--\r\n" (also
 * with zero parts, where the CRLF is an empty preamble), so its length does
 * not depend on the parts and can be counted before any head is written. */
int asbi_mpw_finish(asbi_mpw *w, asbi_buf *out);
/* Exact number of bytes asbi_mpw_part_head would append (for
 * Content-Length), or -1 for an invalid name. Does not change w. */
int64_t asbi_mpw_part_head_len(const asbi_mpw *w, int index, const char *field,
                               const char *filename, const char *content_type);
size_t asbi_mpw_finish_len(const asbi_mpw *w);

/* ---- parser ------------------------------------------------------------ */
enum {
  ASBI_MP_OK = 0,
  ASBI_MP_EBOUNDARY = -1201,  /* no/invalid boundary in the content type */
  ASBI_MP_EHEADER = -1202,    /* malformed or oversized part headers */
  ASBI_MP_ESYNTAX = -1203,    /* body does not follow the framing */
  ASBI_MP_ETRUNCATED = -1204, /* EOF before the closing delimiter */
  ASBI_MP_ETOOMANY = -1205,   /* more parts than allowed */
  ASBI_MP_ENOMEM = -1206
};

/* Parser behaviour: a delimiter is CRLF "--" boundary followed by "--"
 * (close) or by up to 64 spaces/tabs and CRLF; anything else is part data
 * (as Go's mime/multipart does). Part headers must end lines with CRLF and
 * are bounded to 16 KiB per part; obs-fold, NUL and duplicate
 * Content-Disposition/Content-Type headers are errors. In quoted-strings a
 * backslash escapes only a tspecial (so unescaped Windows paths survive);
 * filename*= (RFC 5987: UTF-8, US-ASCII, ISO-8859-1) wins over filename=,
 * other charsets are ignored; decoded names may not hold NUL, CR or LF.
 * Filenames are passed through unsanitised: callers must not trust them as
 * paths. Small data pieces are gathered into up to 8 KiB per callback. */
typedef struct asbi_mp_part {
  const char *name;         /* form field name ("" if none) */
  const char *filename;     /* NULL if the part has no filename */
  const char *content_type; /* NULL if absent */
} asbi_mp_part;

typedef struct asbi_mp_callbacks {
  /* A part starts; strings valid until on_part_end. */
  int (*on_part_begin)(void *ud, const asbi_mp_part *part);
  /* Part data, in arbitrary chunks. */
  int (*on_part_data)(void *ud, const char *data, size_t len);
  int (*on_part_end)(void *ud);
} asbi_mp_callbacks;

typedef struct asbi_mp_parser asbi_mp_parser;

/* content_type is the request's Content-Type header; the boundary is taken
 * from it (quoted or token, ≤ 70 chars). max_parts 0 = 1000. */
int asbi_mp_parser_new(asbi_mp_parser **out, const char *content_type, const asbi_mp_callbacks *cb,
                       void *ud, unsigned max_parts);
void asbi_mp_parser_free(asbi_mp_parser *p);
/* Feed body bytes split anywhere; returns OK, ASBI_MP_E*, or a callback's
 * non-zero return. */
int asbi_mp_parser_feed(asbi_mp_parser *p, const char *data, size_t len);
/* At EOF: OK only if the closing delimiter was seen. */
int asbi_mp_parser_finish(asbi_mp_parser *p);
const char *asbi_mp_strerror(int code);

#endif
