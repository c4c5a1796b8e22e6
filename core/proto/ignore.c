/* .dockerignore patterns with Docker's rules (ignore.h).
 * SPDX-License-Identifier: Apache-2.0 */
#include "proto/ignore.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

#define PATTERN_MAX 4096

typedef struct pat {
  regex_t re;
  int exception; /* '!' */
} pat;

struct asbi_ignore {
  pat *v;
  size_t n, cap;
  int exceptions;
};

asbi_ignore *asbi_ignore_new(void) {
  return calloc(1, sizeof(asbi_ignore));
}

void asbi_ignore_free(asbi_ignore *ig) {
  if (!ig) return;
  for (size_t i = 0; i < ig->n; i++) regfree(&ig->v[i].re);
  free(ig->v);
  free(ig);
}

size_t asbi_ignore_count(const asbi_ignore *ig) {
  return ig ? ig->n : 0;
}

int asbi_ignore_has_exceptions(const asbi_ignore *ig) {
  return ig && ig->exceptions;
}

static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b) {
  if (err && errlen) snprintf(err, errlen, fmt, a, b);
  return -1;
}

/* Go's filepath.Clean on '/'-separated s (n bytes) into out: no empty or
 * "." elements, ".." taking the element before it away (none above the
 * root of a rooted path), "." for nothing. */
static int clean(const char *s, size_t n, asbi_buf *out) {
  int rooted = n > 0 && s[0] == '/';
  size_t *ends = calloc(n / 2 + 2, sizeof *ends); /* where each kept element ends */
  size_t depth = 0, dots = 0;                     /* leading ".." of a relative path */
  if (!ends) return -1;
  if (rooted) asbi_buf_putc(out, '/');
  size_t base = out->len;
  for (size_t i = 0; i < n;) {
    while (i < n && s[i] == '/') i++;
    size_t j = i;
    while (j < n && s[j] != '/') j++;
    size_t len = j - i;
    if (len == 0 || (len == 1 && s[i] == '.')) {
      /* nothing */
    } else if (len == 2 && s[i] == '.' && s[i + 1] == '.') {
      if (depth > dots) {
        depth--;
        out->len = depth ? ends[depth - 1] : base;
      } else if (!rooted) {
        if (out->len > base) asbi_buf_putc(out, '/');
        asbi_buf_append(out, "..", 2);
        ends[depth++] = out->len;
        dots++;
      }
    } else {
      if (out->len > base) asbi_buf_putc(out, '/');
      asbi_buf_append(out, s + i, len);
      ends[depth++] = out->len;
    }
    i = j;
  }
  free(ends);
  if (out->len == base && !rooted) asbi_buf_putc(out, '.');
  if (out->data) out->data[out->len] = '\0';
  return out->data ? 0 : -1;
}

/* A bracket class of the pattern from p (just past '[') to its ']' as a
 * POSIX one: '^' negates (and then '/' is not in it either), '\' quotes;
 * ']' goes first and '-' last, where POSIX reads them as themselves, and
 * '[' just before them. */
static const char *bracket(const char *p, asbi_buf *re) {
  int neg = 0;
  if (*p == '^') {
    neg = 1;
    p++;
  }
  asbi_buf mid = ASBI_BUF_INIT;
  int close = 0, dash = 0, lbr = 0, any = 0;
  while (*p && (*p != ']' || !any)) {
    char c = *p++;
    if (c == '\\') {
      if (!*p) break;
      c = *p++;
    }
    any = 1;
    if (*p == '-' && p[1] && p[1] != ']') { /* a range */
      char hi = p[1];
      p += 2;
      if (hi == '\\' && *p) hi = *p++;
      asbi_buf_putc(&mid, c);
      asbi_buf_putc(&mid, '-');
      asbi_buf_putc(&mid, hi);
      continue;
    }
    if (c == ']')
      close = 1;
    else if (c == '-')
      dash = 1;
    else if (c == '[')
      lbr = 1; /* last, so that it cannot open a POSIX "[:name:]" */
    else
      asbi_buf_putc(&mid, c);
  }
  if (*p != ']' || !any) {
    asbi_buf_free(&mid);
    return NULL;
  }
  asbi_buf_putc(re, '[');
  if (neg) asbi_buf_putc(re, '^');
  if (close) asbi_buf_putc(re, ']');
  if (mid.data) asbi_buf_append(re, mid.data, mid.len);
  if (lbr) asbi_buf_putc(re, '[');
  if (neg) asbi_buf_putc(re, '/');
  if (dash) asbi_buf_putc(re, '-');
  asbi_buf_putc(re, ']');
  asbi_buf_free(&mid);
  return p + 1;
}

/* The anchored POSIX ERE of a cleaned pattern, as moby translates one. */
static int to_regex(const char *p, asbi_buf *re, char *err, size_t errlen) {
  asbi_buf_putc(re, '^');
  while (*p) {
    char c = *p++;
    if (c == '*' && *p == '*') {
      p++;
      if (*p == '/') p++;
      asbi_buf_puts(re, *p ? "(.*/)?" : ".*");
    } else if (c == '*') {
      asbi_buf_puts(re, "[^/]*");
    } else if (c == '?') {
      asbi_buf_puts(re, "[^/]");
    } else if (c == '[') {
      const char *q = bracket(p, re);
      if (!q) return fail(err, errlen, "'%s': an unclosed '['%s", p - 1, "");
      p = q;
    } else {
      if (c == '\\') {
        if (!*p) return fail(err, errlen, "'%s': a '\\' at the end%s", p - 1, "");
        c = *p++;
      }
      if (strchr(".+()|{}$^[]\\*?", c)) asbi_buf_putc(re, '\\');
      asbi_buf_putc(re, c);
    }
  }
  asbi_buf_putc(re, '$');
  return re->data ? 0 : fail(err, errlen, "out of memory%s%s", "", "");
}

int asbi_ignore_add(asbi_ignore *ig, const char *pattern, char *err, size_t errlen) {
  if (!ig || !pattern) return fail(err, errlen, "no pattern%s%s", "", "");
  size_t n = strlen(pattern);
  while (n && strchr(" \t\r\n\v\f", pattern[n - 1])) n--;
  while (n && strchr(" \t\r\n\v\f", *pattern)) {
    pattern++;
    n--;
  }
  if (!n || *pattern == '#') return 0;
  if (n > PATTERN_MAX) return fail(err, errlen, "a pattern of over %s bytes%s", "4096", "");
  int exception = *pattern == '!';
  if (exception) {
    pattern++;
    n--;
    while (n && strchr(" \t\r\n\v\f", *pattern)) {
      pattern++;
      n--;
    }
  }
  asbi_buf c = ASBI_BUF_INIT, re = ASBI_BUF_INIT;
  if (clean(pattern, n, &c)) return fail(err, errlen, "out of memory%s%s", "", "");
  const char *cp = c.data;
  if (strlen(cp) > 1 && cp[0] == '/') cp++;
  int rc = to_regex(cp, &re, err, errlen);
  if (!rc && ig->n == ig->cap) {
    size_t cap = ig->cap ? ig->cap * 2 : 8;
    pat *v = realloc(ig->v, cap * sizeof *v);
    if (!v)
      rc = fail(err, errlen, "out of memory%s%s", "", "");
    else {
      ig->v = v;
      ig->cap = cap;
    }
  }
  if (!rc) {
    int r = regcomp(&ig->v[ig->n].re, re.data, REG_EXTENDED | REG_NOSUB);
    if (r) {
      char why[200];
      regerror(r, &ig->v[ig->n].re, why, sizeof why);
      regfree(&ig->v[ig->n].re);
      rc = fail(err, errlen, "'%s': %s", cp, why);
    } else {
      ig->v[ig->n].exception = exception;
      ig->exceptions |= exception;
      ig->n++;
    }
  }
  asbi_buf_free(&c);
  asbi_buf_free(&re);
  return rc;
}

int asbi_ignore_add_text(asbi_ignore *ig, const char *text, size_t len, char *err, size_t errlen) {
  size_t line = 0;
  for (size_t i = 0; i < len;) {
    size_t j = i;
    while (j < len && text[j] != '\n' && text[j] != '\0') j++;
    line++;
    asbi_buf l = ASBI_BUF_INIT;
    asbi_buf_append(&l, text + i, j - i);
    char why[512] = "";
    int rc = l.data ? asbi_ignore_add(ig, l.data, why, sizeof why) : (j > i ? -1 : 0);
    asbi_buf_free(&l);
    if (rc) {
      char num[24];
      snprintf(num, sizeof num, "%zu", line);
      return fail(err, errlen, "line %s: %s", num, why[0] ? why : "out of memory");
    }
    i = j + 1;
  }
  return 0;
}

static int match1(const pat *p, const char *path) {
  return regexec(&p->re, path, 0, NULL, 0) == 0;
}

int asbi_ignore_match(const asbi_ignore *ig, const char *path) {
  if (!ig || !ig->n || !path) return 0;
  while (path[0] == '.' && path[1] == '/') path++, path++;
  if (!*path || !strcmp(path, ".")) return 0; /* the context itself */
  size_t n = strlen(path);
  char *dir = malloc(n + 1);
  if (!dir) return 0;
  int matched = 0;
  for (size_t i = 0; i < ig->n; i++) {
    const pat *p = &ig->v[i];
    /* only a pattern that could change the answer is tried */
    if (p->exception != matched) continue;
    int m = match1(p, path);
    /* or a directory above path */
    for (size_t k = 0; !m && k < n; k++) {
      if (path[k] != '/') continue;
      memcpy(dir, path, k);
      dir[k] = '\0';
      m = match1(p, dir);
    }
    if (m) matched = !p->exception;
  }
  free(dir);
  return matched;
}
