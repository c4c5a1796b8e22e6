/* Incremental newline-delimited JSON splitter. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_NDJSON_H
#define ASB_PROTO_NDJSON_H

#include <stddef.h>

#include "util/buf.h"

enum {
  ASBI_NDJSON_OK = 0,
  ASBI_NDJSON_ETOOLONG = -1101, /* a line exceeded max_line */
  ASBI_NDJSON_ENOMEM = -1102
};

/* Line limit used when asbi_ndjson_init gets max_line 0. */
#define ASBI_NDJSON_DEFAULT_MAX (16u * 1024u * 1024u)

/* Called for each non-empty line, without its "\n" or "\r\n". line is
 * NUL-terminated. Return non-zero to stop. */
typedef int (*asbi_ndjson_line_fn)(void *ud, const char *line, size_t len);

typedef struct asbi_ndjson {
  asbi_buf line;
  size_t max_line;
  int failed;
} asbi_ndjson;

/* max_line bounds a line without its "\n"/"\r\n"; 0 = the default. */
void asbi_ndjson_init(asbi_ndjson *s, size_t max_line);
void asbi_ndjson_free(asbi_ndjson *s);
/* Feed bytes split anywhere; returns OK, an error, or the callback's value. */
int asbi_ndjson_feed(asbi_ndjson *s, const void *p, size_t n, asbi_ndjson_line_fn fn, void *ud);
/* At EOF: delivers a last line that lacked its newline. */
int asbi_ndjson_finish(asbi_ndjson *s, asbi_ndjson_line_fn fn, void *ud);

#endif
