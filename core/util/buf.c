/* SPDX-License-Identifier: Apache-2.0 */
#include "buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void asbi_buf_init(asbi_buf *b, size_t max) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->max = max;
}

void asbi_buf_free(asbi_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

void asbi_buf_clear(asbi_buf *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}

int asbi_buf_reserve(asbi_buf *b, size_t extra) {
  if (extra > (size_t)-1 - b->len - 1) return -1;
  size_t need = b->len + extra + 1;
  if (b->max && b->len + extra > b->max) return -1;
  if (need <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) {
    if (cap > (size_t)-1 / 2) {
      cap = need;
      break;
    }
    cap *= 2;
  }
  char *p = realloc(b->data, cap);
  if (!p) return -1;
  p[b->len] = '\0'; /* keep the documented invariant, also on first allocation */
  b->data = p;
  b->cap = cap;
  return 0;
}

int asbi_buf_append(asbi_buf *b, const void *data, size_t n) {
  if (asbi_buf_reserve(b, n) != 0) return -1;
  if (n) memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int asbi_buf_puts(asbi_buf *b, const char *s) {
  return asbi_buf_append(b, s, strlen(s));
}

int asbi_buf_putc(asbi_buf *b, char c) {
  return asbi_buf_append(b, &c, 1);
}

int asbi_buf_vprintf(asbi_buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0 || asbi_buf_reserve(b, (size_t)n) != 0) return -1;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return 0;
}

int asbi_buf_printf(asbi_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = asbi_buf_vprintf(b, fmt, ap);
  va_end(ap);
  return rc;
}

int asbi_buf_sh_quote(asbi_buf *b, const char *s) {
  int rc = asbi_buf_putc(b, '\'');
  for (; *s && !rc; s++) rc = *s == '\'' ? asbi_buf_puts(b, "'\\''") : asbi_buf_putc(b, *s);
  return rc ? rc : asbi_buf_putc(b, '\'');
}

void asbi_buf_consume(asbi_buf *b, size_t n) {
  if (n >= b->len) {
    asbi_buf_clear(b);
    return;
  }
  memmove(b->data, b->data + n, b->len - n);
  b->len -= n;
  b->data[b->len] = '\0';
}

char *asbi_buf_detach(asbi_buf *b, size_t *len) {
  char *p = b->data;
  if (!p) p = calloc(1, 1);
  if (len) *len = b->len;
  b->data = NULL;
  b->len = b->cap = 0;
  return p;
}

int asbi_buf_read_file(asbi_buf *b, const char *path, size_t max) {
  FILE *f = fopen(path, "re");
  if (!f) return -errno;
  char chunk[8192];
  size_t n, start = b->len;
  int rc = 0;
  while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (max && b->len - start + n > max)
      rc = -EFBIG;
    else if (asbi_buf_append(b, chunk, n) != 0)
      rc = b->max && b->len + n > b->max ? -EFBIG : -ENOMEM;
  }
  if (!rc && ferror(f)) rc = -EIO;
  fclose(f);
  return rc;
}
