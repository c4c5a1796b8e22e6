/* SPDX-License-Identifier: Apache-2.0 */
#include "http1.h"

#include <string.h>

static int lower(int c) {
  return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

static int ieq(const char *a, size_t alen, const char *b) {
  size_t blen = strlen(b);
  if (alen != blen) return 0;
  for (size_t i = 0; i < alen; i++)
    if (lower((unsigned char)a[i]) != lower((unsigned char)b[i])) return 0;
  return 1;
}

/* RFC 9110 token characters. */
static int tchar(unsigned char c) {
  if (c >= '0' && c <= '9') return 1;
  if ((c | 32) >= 'a' && (c | 32) <= 'z') return 1;
  return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* 1 if the comma-separated list v contains token t (case-insensitive). */
static int list_has(const char *v, size_t n, const char *t) {
  size_t i = 0;
  while (i < n) {
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
    size_t s = i;
    while (i < n && v[i] != ',') i++;
    size_t e = i;
    while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
    if (e > s && ieq(v + s, e - s, t)) return 1;
  }
  return 0;
}

int asbi_h1_is_token(const char *s, size_t n) {
  if (!n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!tchar((unsigned char)s[i])) return 0;
  return 1;
}

int asbi_h1_value_ok(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c < ' ' && c != '\t') || c == 0x7f) return 0;
  }
  return 1;
}

int asbi_h1_target_ok(const char *s, size_t n) {
  if (!n) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c <= ' ' || c == 0x7f) return 0;
  }
  return 1;
}

int asbi_h1_list_has(const char *v, size_t n, const char *t) {
  return list_has(v, n, t);
}

const asbi_h1_header *asbi_h1_find(const asbi_h1_resp *r, const char *name) {
  for (size_t i = 0; i < r->nheaders; i++)
    if (ieq(r->headers[i].name, r->headers[i].name_len, name)) return &r->headers[i];
  return NULL;
}

long asbi_h1_parse_response(const char *buf, size_t len, int head_request, asbi_h1_resp *out) {
  memset(out, 0, sizeof *out);
  /* Find the end of the head first; nothing is interpreted before. */
  size_t end = 0;
  size_t lim = len < ASBI_H1_MAX_HEAD ? len : ASBI_H1_MAX_HEAD;
  for (size_t i = 0; i + 1 < lim; i++) {
    if (buf[i] == '\n' && buf[i + 1] == '\n') {
      end = i + 2;
      break;
    }
    if (i + 3 < lim && buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' &&
        buf[i + 3] == '\n') {
      end = i + 4;
      break;
    }
  }
  if (!end) return len >= ASBI_H1_MAX_HEAD ? ASBI_H1_ETOOBIG : ASBI_H1_EINCOMPLETE;

  /* Status line: HTTP/1.x SP 3DIGIT SP reason */
  if (end < 12 || memcmp(buf, "HTTP/1.", 7) != 0) return ASBI_H1_ESYNTAX;
  if (buf[7] != '0' && buf[7] != '1') return ASBI_H1_ESYNTAX;
  out->minor = buf[7] - '0';
  if (buf[8] != ' ') return ASBI_H1_ESYNTAX;
  for (int i = 9; i < 12; i++)
    if (buf[i] < '0' || buf[i] > '9') return ASBI_H1_ESYNTAX;
  out->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
  if (out->status < 100) return ASBI_H1_ESYNTAX;
  size_t p = 12;
  if (buf[p] == ' ') p++;
  size_t rs = p;
  while (p < end && buf[p] != '\r' && buf[p] != '\n') {
    unsigned char c = (unsigned char)buf[p];
    if ((c < ' ' && c != '\t') || c == 0x7f) return ASBI_H1_ESYNTAX;
    p++;
  }
  out->reason = buf + rs;
  out->reason_len = p - rs;
  if (buf[p] == '\r') p++;
  if (buf[p] != '\n') return ASBI_H1_ESYNTAX;
  p++;

  int chunked = 0, have_len = 0, conn_close = 0, conn_keep = 0;
  uint64_t clen = 0;
  while (p < end) {
    if (buf[p] == '\r' || buf[p] == '\n') break;                 /* the blank line */
    if (buf[p] == ' ' || buf[p] == '\t') return ASBI_H1_ESYNTAX; /* obs-fold */
    size_t ns = p;
    while (p < end && tchar((unsigned char)buf[p])) p++;
    if (p == ns || p >= end || buf[p] != ':') return ASBI_H1_ESYNTAX;
    size_t nl = p - ns;
    p++;
    while (p < end && (buf[p] == ' ' || buf[p] == '\t')) p++;
    size_t vs = p;
    while (p < end && buf[p] != '\r' && buf[p] != '\n') {
      unsigned char c = (unsigned char)buf[p];
      if ((c < ' ' && c != '\t') || c == 0x7f) return ASBI_H1_ESYNTAX;
      p++;
    }
    size_t ve = p;
    while (ve > vs && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t')) ve--;
    if (p < end && buf[p] == '\r') p++;
    if (p >= end || buf[p] != '\n') return ASBI_H1_ESYNTAX;
    p++;
    if (out->nheaders == ASBI_H1_MAX_HEADERS) return ASBI_H1_ETOOBIG;
    asbi_h1_header *h = &out->headers[out->nheaders++];
    h->name = buf + ns;
    h->name_len = nl;
    h->value = buf + vs;
    h->value_len = ve - vs;
    if (ieq(h->name, nl, "content-length")) {
      uint64_t v = 0;
      if (h->value_len == 0 || h->value_len > 19) return ASBI_H1_ELENGTH;
      for (size_t i = 0; i < h->value_len; i++) {
        if (h->value[i] < '0' || h->value[i] > '9') return ASBI_H1_ELENGTH;
        v = v * 10 + (uint64_t)(h->value[i] - '0');
      }
      if (have_len && v != clen) return ASBI_H1_ELENGTH;
      have_len = 1;
      clen = v;
    } else if (ieq(h->name, nl, "transfer-encoding")) {
      /* Only "chunked" (last) is understood; anything else is refused
       * rather than guessed (request smuggling lives in such guesses). */
      if (!list_has(h->value, h->value_len, "chunked")) return ASBI_H1_ESYNTAX;
      chunked = 1;
    } else if (ieq(h->name, nl, "connection")) {
      if (list_has(h->value, h->value_len, "close")) conn_close = 1;
      if (list_has(h->value, h->value_len, "keep-alive")) conn_keep = 1;
    }
  }
  if (chunked && have_len) return ASBI_H1_ELENGTH; /* RFC 9112 §6.1 */
  out->keep_alive = out->minor == 1 ? !conn_close : conn_keep;
  if (head_request || (out->status >= 100 && out->status < 200) || out->status == 204 ||
      out->status == 304) {
    out->body = ASBI_H1_BODY_NONE;
  } else if (chunked) {
    out->body = ASBI_H1_BODY_CHUNKED;
  } else if (have_len) {
    out->body = ASBI_H1_BODY_LENGTH;
    out->content_length = clen;
  } else {
    out->body = ASBI_H1_BODY_CLOSE;
    out->keep_alive = 0;
  }
  return (long)end;
}

/* ---- chunked ------------------------------------------------------------- */

enum { C_SIZE, C_EXT, C_SIZE_LF, C_DATA, C_DATA_CR, C_DATA_LF, C_TRAILER, C_TRAILER_LF, C_DONE };

#define MAX_LINE 4096u

void asbi_h1_chunked_init(asbi_h1_chunked *c) {
  memset(c, 0, sizeof *c);
}

static int hexv(unsigned char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  ch |= 32;
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  return -1;
}

int asbi_h1_chunked_decode(asbi_h1_chunked *c, char *buf, size_t *len, size_t *out_len) {
  size_t in = 0, out = 0, n = *len;
  while (in < n && c->state != C_DONE) {
    unsigned char ch = (unsigned char)buf[in];
    switch (c->state) {
      case C_SIZE: {
        int v = hexv(ch);
        if (v >= 0) {
          if (c->left > (UINT64_MAX >> 4) || ++c->line > 16) return ASBI_H1_ECHUNK;
          c->left = (c->left << 4) | (uint64_t)v;
          in++;
        } else if (c->line == 0) {
          return ASBI_H1_ECHUNK; /* no digits */
        } else if (ch == ';' || ch == ' ' || ch == '\t') {
          c->state = C_EXT;
          in++;
        } else if (ch == '\r') {
          c->state = C_SIZE_LF;
          in++;
        } else if (ch == '\n') {
          in++;
          c->line = 0;
          c->state = c->left ? C_DATA : C_TRAILER;
        } else {
          return ASBI_H1_ECHUNK;
        }
        break;
      }
      case C_EXT: /* chunk extensions are ignored, but bounded */
        if (++c->line > MAX_LINE) return ASBI_H1_ECHUNK;
        if (ch == '\r')
          c->state = C_SIZE_LF;
        else if (ch == '\n') {
          c->line = 0;
          c->state = c->left ? C_DATA : C_TRAILER;
        } else if (ch < ' ' && ch != '\t')
          return ASBI_H1_ECHUNK;
        in++;
        break;
      case C_SIZE_LF:
        if (ch != '\n') return ASBI_H1_ECHUNK;
        in++;
        c->line = 0;
        c->state = c->left ? C_DATA : C_TRAILER;
        break;
      case C_DATA: {
        size_t take = n - in;
        if ((uint64_t)take > c->left) take = (size_t)c->left;
        memmove(buf + out, buf + in, take);
        out += take;
        in += take;
        c->left -= take;
        if (c->left == 0) c->state = C_DATA_CR;
        break;
      }
      case C_DATA_CR:
        if (ch == '\r') {
          c->state = C_DATA_LF;
        } else if (ch == '\n') {
          c->state = C_SIZE;
          c->line = 0;
        } else {
          return ASBI_H1_ECHUNK;
        }
        in++;
        break;
      case C_DATA_LF:
        if (ch != '\n') return ASBI_H1_ECHUNK;
        in++;
        c->state = C_SIZE;
        c->line = 0;
        break;
      case C_TRAILER: /* trailer fields until an empty line */
        if (ch == '\r' && c->line == 0) {
          c->state = C_TRAILER_LF;
        } else if (ch == '\n') {
          if (c->line == 0) {
            c->state = C_DONE;
            c->done = 1;
          }
          c->line = 0;
        } else if (ch != '\r') {
          if (++c->line > MAX_LINE) return ASBI_H1_ECHUNK;
        }
        in++;
        break;
      case C_TRAILER_LF:
        if (ch != '\n') return ASBI_H1_ECHUNK;
        in++;
        c->state = C_DONE;
        c->done = 1;
        break;
    }
  }
  *len = in;
  *out_len = out;
  return 0;
}
