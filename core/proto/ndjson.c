/* SPDX-License-Identifier: Apache-2.0 */
#include "ndjson.h"

#include <string.h>

/* Line buffers that grew past this are released after each line. */
#define KEEP_CAP (256u * 1024u)

void asbi_ndjson_init(asbi_ndjson *s, size_t max_line) {
  asbi_buf_init(&s->line, 0);
  s->max_line = max_line ? max_line : ASBI_NDJSON_DEFAULT_MAX;
  if (s->max_line > (size_t)-1 / 2) s->max_line = (size_t)-1 / 2;
  s->failed = 0;
}

void asbi_ndjson_free(asbi_ndjson *s) {
  asbi_buf_free(&s->line);
}

static int fail(asbi_ndjson *s, int rc) {
  s->failed = rc;
  return rc;
}

/* The buffer may hold one byte more than max_line while that byte is a CR
 * that could still turn out to be half of a CRLF. */
static int over_limit(const asbi_ndjson *s) {
  size_t len = s->line.len;
  if (len <= s->max_line) return 0;
  return !(len == s->max_line + 1 && s->line.data[len - 1] == '\r');
}

static int emit(asbi_ndjson *s, asbi_ndjson_line_fn fn, void *ud) {
  asbi_buf *b = &s->line;
  if (b->len && b->data[b->len - 1] == '\r') {
    b->len--;
    b->data[b->len] = '\0';
  }
  if (b->len > s->max_line) return fail(s, ASBI_NDJSON_ETOOLONG);
  int rc = 0;
  if (b->len && fn) rc = fn(ud, b->data, b->len);
  if (b->cap > KEEP_CAP)
    asbi_buf_free(b);
  else
    asbi_buf_clear(b);
  return rc ? fail(s, rc) : ASBI_NDJSON_OK;
}

int asbi_ndjson_feed(asbi_ndjson *s, const void *p, size_t n, asbi_ndjson_line_fn fn, void *ud) {
  const char *c = p;
  if (s->failed) return s->failed;
  while (n) {
    const char *nl = memchr(c, '\n', n);
    size_t seg = nl ? (size_t)(nl - c) : n;
    /* Check before appending so an over-long line never grows the buffer
     * past the limit (+1 for a possible CR, +1 more to detect overflow). */
    size_t room = s->max_line + 1 - s->line.len; /* len <= max_line + 1 */
    if (seg > room) return fail(s, ASBI_NDJSON_ETOOLONG);
    if (seg && asbi_buf_append(&s->line, c, seg) != 0) return fail(s, ASBI_NDJSON_ENOMEM);
    if (over_limit(s)) return fail(s, ASBI_NDJSON_ETOOLONG);
    if (!nl) break;
    c += seg + 1;
    n -= seg + 1;
    int rc = emit(s, fn, ud);
    if (rc) return rc;
  }
  return ASBI_NDJSON_OK;
}

int asbi_ndjson_finish(asbi_ndjson *s, asbi_ndjson_line_fn fn, void *ud) {
  if (s->failed) return s->failed;
  return emit(s, fn, ud);
}
