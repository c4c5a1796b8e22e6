/* Growable byte buffer. Internal; not part of the public ABI.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_UTIL_BUF_H
#define ASB_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

/* A byte buffer that is always NUL-terminated after `len` bytes (when data is
 * not NULL), so text can be used as a C string. An optional `max` bounds the
 * length: appends past it fail with -1 and leave the buffer unchanged. */
typedef struct asbi_buf {
  char *data;
  size_t len;
  size_t cap;
  size_t max; /* 0 = unbounded */
} asbi_buf;

#define ASBI_BUF_INIT \
  { NULL, 0, 0, 0 }

void asbi_buf_init(asbi_buf *b, size_t max);
void asbi_buf_free(asbi_buf *b);
/* Keep the allocation, drop the contents. */
void asbi_buf_clear(asbi_buf *b);
/* Make room for `extra` more bytes (+ NUL). 0 or -1. */
int asbi_buf_reserve(asbi_buf *b, size_t extra);
int asbi_buf_append(asbi_buf *b, const void *data, size_t n);
int asbi_buf_puts(asbi_buf *b, const char *s);
int asbi_buf_putc(asbi_buf *b, char c);
int asbi_buf_printf(asbi_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int asbi_buf_vprintf(asbi_buf *b, const char *fmt, va_list ap);
/* Append s as one single-quoted shell word ('\'' for each quote). */
int asbi_buf_sh_quote(asbi_buf *b, const char *s);
/* Remove the first n bytes. */
void asbi_buf_consume(asbi_buf *b, size_t n);
/* Append the whole file at path (at most max bytes, 0 = the buffer's own
 * bound). 0, -errno, or -EFBIG when it is longer. */
int asbi_buf_read_file(asbi_buf *b, const char *path, size_t max);
/* Hand the (NUL-terminated) contents to the caller and reset the buffer.
 * Never returns NULL unless out of memory: an empty buffer gives "". */
char *asbi_buf_detach(asbi_buf *b, size_t *len);

#endif
