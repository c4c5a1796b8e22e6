/* HTTP/1.x request heads and body framing for the egress proxy
 * (h1req.h). SPDX-License-Identifier: Apache-2.0 */
#include "h1req.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "peek.h"

static int tchar(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int vchar_ok(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f) return 0;
  }
  return 1;
}

static int eq(const char *s, size_t n, const char *lit) {
  return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

/* "chunked" is the last coding of a Transfer-Encoding value. */
static int te_chunked_last(const char *v, size_t n) {
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  size_t start = n;
  while (start && v[start - 1] != ',') start--;
  const char *last = v + start;
  size_t ll = n - start;
  while (ll && (*last == ' ' || *last == '\t')) last++, ll--;
  return eq(last, ll, "chunked");
}

static int set_host(h1req_head *h, const char *v, size_t n) {
  char host[300];
  if (n == 0 || n >= sizeof host) return -1;
  memcpy(host, v, n);
  host[n] = 0;
  char *s = host;
  if (s[0] == '[') {
    char *rb = strchr(s, ']');
    if (!rb || (rb[1] && rb[1] != ':')) return -1;
    *rb = 0;
    s++;
  } else {
    char *c = strchr(s, ':');
    if (c) {
      if (strchr(c + 1, ':')) return -1;
      for (char *d = c + 1; *d; d++)
        if (*d < '0' || *d > '9') return -1;
      *c = 0;
    }
  }
  unsigned char a[16];
  if (inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1) {
    h->is_ip = 1;
    return 0;
  }
  if (strlen(s) >= sizeof h->host) return -1;
  strcpy(h->host, s);
  return peek_norm_name(h->host);
}

int h1req_parse(const char *buf, size_t len, h1req_head *h) {
  memset(h, 0, sizeof *h);
  size_t lim = len < H1REQ_HEAD_MAX ? len : H1REQ_HEAD_MAX;
  const char *end = memmem(buf, lim, "\r\n\r\n", 4);
  if (!end) return len >= H1REQ_HEAD_MAX ? -1 : 0;
  h->head_len = (size_t)(end - buf) + 4;
  const char *eol = memmem(buf, h->head_len, "\r\n", 2);
  h->line_len = (size_t)(eol - buf);
  /* METHOD SP TARGET SP HTTP/1.x */
  const char *sp1 = memchr(buf, ' ', h->line_len);
  if (!sp1 || sp1 == buf) return -1;
  for (const char *c = buf; c < sp1; c++)
    if (!tchar((unsigned char)*c)) return -1;
  if (h->line_len < 9 || memcmp(eol - 9, " HTTP/1.", 8) != 0 || (eol[-1] != '0' && eol[-1] != '1'))
    return -1;
  if (!vchar_ok(buf, h->line_len)) return -1;
  if (eq(buf, (size_t)(sp1 - buf), "CONNECT")) h->upgrade = 1;
  int hosts = 0, cls = 0, te = 0;
  const char *line = eol + 2, *hend = buf + h->head_len - 2;
  while (line < hend) {
    const char *le = memmem(line, (size_t)(hend + 2 - line), "\r\n", 2);
    size_t n = (size_t)(le - line);
    const char *colon = memchr(line, ':', n);
    if (!colon || colon == line) return -1;
    for (const char *c = line; c < colon; c++)
      if (!tchar((unsigned char)*c)) return -1; /* also refuses folding and "Name :" */
    const char *v = colon + 1, *ve = le;
    while (v < ve && (*v == ' ' || *v == '\t')) v++;
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
    if (!vchar_ok(v, (size_t)(ve - v))) return -1;
    if (h->nheaders == H1REQ_MAX_HEADERS) return -1;
    h->name[h->nheaders] = (h1req_span){(size_t)(line - buf), (size_t)(colon - line)};
    h->value[h->nheaders] = (h1req_span){(size_t)(v - buf), (size_t)(ve - v)};
    h->nheaders++;
    size_t nl = (size_t)(colon - line), vl = (size_t)(ve - v);
    if (eq(line, nl, "host")) {
      if (++hosts > 1 || set_host(h, v, vl) < 0) return -1;
    } else if (eq(line, nl, "content-length")) {
      if (vl == 0 || vl > 18) return -1;
      uint64_t x = 0;
      for (size_t i = 0; i < vl; i++) {
        if (v[i] < '0' || v[i] > '9') return -1;
        x = x * 10 + (uint64_t)(v[i] - '0');
      }
      if (cls++ && x != h->body_len) return -1;
      h->body_len = x;
      if (cls > 1) return -1; /* several: refused even when equal */
    } else if (eq(line, nl, "transfer-encoding")) {
      if (te++ || !te_chunked_last(v, vl)) return -1; /* a request's TE must end in chunked */
      h->chunked = 1;
    } else if (eq(line, nl, "upgrade")) {
      h->upgrade = 1;
    }
    line = le + 2;
  }
  if (te && cls) return -1;
  if (h->chunked) h->body_len = 0;
  return 1;
}

static int header_ok(const char *name, const char *value) {
  if (!name[0]) return 0;
  for (const char *c = name; *c; c++)
    if (!tchar((unsigned char)*c)) return 0;
  for (const char *c = value; *c; c++)
    if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f) return 0;
  return 1;
}

int h1req_rewrite(const char *buf, const h1req_head *h, const char *const *names,
                  const char *const *values, size_t n, char **out, size_t *outlen) {
  *out = NULL;
  if (h->nheaders + n > H1REQ_MAX_HEADERS) return -1; /* stays a head we would parse */
  size_t cap = h->head_len + 4;
  for (size_t i = 0; i < n; i++) {
    if (!header_ok(names[i], values[i])) return -1;
    cap += strlen(names[i]) + strlen(values[i]) + 4;
  }
  if (cap > H1REQ_HEAD_MAX) return -1;
  char *o = malloc(cap);
  if (!o) return -1;
  size_t at = 0;
  memcpy(o, buf, h->line_len + 2);
  at = h->line_len + 2;
  for (size_t i = 0; i < n; i++) {
    size_t nl = strlen(names[i]), vl = strlen(values[i]);
    memcpy(o + at, names[i], nl);
    at += nl;
    memcpy(o + at, ": ", 2);
    at += 2;
    memcpy(o + at, values[i], vl);
    at += vl;
    memcpy(o + at, "\r\n", 2);
    at += 2;
  }
  for (size_t k = 0; k < h->nheaders; k++) {
    const char *nm = buf + h->name[k].off;
    int drop = 0;
    for (size_t i = 0; i < n && !drop; i++) drop = eq(nm, h->name[k].len, names[i]);
    if (drop) continue;
    /* the header line as it was: name .. end of value, then CRLF */
    size_t l = h->value[k].off + h->value[k].len - h->name[k].off;
    memcpy(o + at, nm, l);
    at += l;
    memcpy(o + at, "\r\n", 2);
    at += 2;
  }
  memcpy(o + at, "\r\n", 2);
  at += 2;
  *out = o;
  *outlen = at;
  return 0;
}

enum { C_SIZE, C_EXT, C_SIZE_LF, C_DATA, C_DATA_CR, C_DATA_LF, C_TRAILER, C_TRAILER_LF, C_DONE };

void h1req_chunks_init(h1req_chunks *c) {
  memset(c, 0, sizeof *c);
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

long h1req_chunks_feed(h1req_chunks *c, const char *b, size_t n, int *done) {
  *done = 0;
  size_t i = 0;
  while (i < n) {
    char ch = b[i];
    switch (c->state) {
      case C_SIZE: {
        int v = hexval(ch);
        if (v >= 0) {
          if (++c->digits > 15) return -1;
          c->left = c->left * 16 + (uint64_t)v;
        } else if (ch == ';' || ch == ' ' || ch == '\t') {
          if (!c->digits) return -1;
          c->state = C_EXT;
        } else if (ch == '\r') {
          if (!c->digits) return -1;
          c->state = C_SIZE_LF;
        } else
          return -1;
        i++;
        break;
      }
      case C_EXT:
        if (ch == '\r')
          c->state = C_SIZE_LF;
        else if ((unsigned char)ch < 0x20 && ch != '\t')
          return -1;
        if (++c->line > 4096) return -1;
        i++;
        break;
      case C_SIZE_LF:
        if (ch != '\n') return -1;
        i++;
        c->line = 0;
        c->digits = 0;
        c->state = c->left ? C_DATA : C_TRAILER;
        break;
      case C_DATA: {
        size_t take = n - i;
        if (take > c->left) take = (size_t)c->left;
        c->left -= take;
        i += take;
        if (!c->left) c->state = C_DATA_CR;
        break;
      }
      case C_DATA_CR:
        if (ch != '\r') return -1;
        c->state = C_DATA_LF;
        i++;
        break;
      case C_DATA_LF:
        if (ch != '\n') return -1;
        c->state = C_SIZE;
        i++;
        break;
      case C_TRAILER: /* trailer lines until an empty one */
        if (ch == '\r')
          c->state = C_TRAILER_LF;
        else if (++c->line > 8192)
          return -1;
        i++;
        break;
      case C_TRAILER_LF:
        if (ch != '\n') return -1;
        i++;
        if (c->line == 0) {
          c->state = C_DONE;
          *done = 1;
          return (long)i;
        }
        c->line = 0;
        c->state = C_TRAILER;
        break;
      default:
        *done = 1;
        return (long)i;
    }
  }
  if (c->state == C_DONE) *done = 1;
  return (long)i;
}
