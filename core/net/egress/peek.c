/* TLS ClientHello SNI and HTTP/1.x Host, read from a connection's first
 * bytes (peek.h). SPDX-License-Identifier: Apache-2.0 */
#include "peek.h"

#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

#define TLS_MAX_HELLO (64 * 1024) /* handshake bytes we reassemble at most */

int peek_norm_name(char *name) {
  size_t n = strlen(name);
  if (n && name[n - 1] == '.') name[--n] = 0;
  if (n == 0 || n > PEEK_NAME_MAX) return -1;
  size_t label = 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (c >= 'A' && c <= 'Z')
      name[i] = (char)(c - 'A' + 'a');
    else if (c == '.') {
      if (label == 0) return -1;
      label = 0;
      continue;
    } else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
      return -1;
    if (++label > 63) return -1;
  }
  return label ? 0 : -1;
}

static int is_ip_literal(const char *s) {
  unsigned char a[16];
  return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

static unsigned rd16(const unsigned char *p) {
  return (unsigned)p[0] << 8 | p[1];
}
static size_t rd24(const unsigned char *p) {
  return (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2];
}

/* The SNI in a complete ClientHello body h[0..n) (after the 4-byte
 * handshake header). 1 found, 0 none, -1 malformed. */
static int hello_sni(const unsigned char *h, size_t n, char *name) {
  size_t at = 2 + 32; /* client_version, random */
  if (at + 1 > n) return -1;
  at += 1 + h[at]; /* session_id */
  if (at + 2 > n) return -1;
  at += 2 + rd16(h + at); /* cipher_suites */
  if (at + 1 > n) return -1;
  at += 1 + h[at]; /* compression_methods */
  if (at > n) return -1;
  if (at == n) return 0; /* no extensions */
  if (at + 2 > n) return -1;
  size_t ext_end = at + 2 + rd16(h + at);
  if (ext_end > n) return -1;
  at += 2;
  while (at + 4 <= ext_end) {
    unsigned type = rd16(h + at);
    size_t len = rd16(h + at + 2);
    at += 4;
    if (at + len > ext_end) return -1;
    if (type == 0) { /* server_name */
      const unsigned char *e = h + at;
      if (len < 2 || 2 + rd16(e) > len) return -1;
      size_t lend = 2 + rd16(e), i = 2;
      while (i + 3 <= lend) {
        unsigned nt = e[i];
        size_t nl = rd16(e + i + 1);
        i += 3;
        if (i + nl > lend) return -1;
        if (nt == 0) {
          if (nl == 0 || nl > PEEK_NAME_MAX) return -1;
          memcpy(name, e + i, nl);
          name[nl] = 0;
          if (memchr(name, 0, nl)) return -1;
          return 1;
        }
        i += nl;
      }
      return -1; /* a server_name extension without a host_name */
    }
    at += len;
  }
  return at == ext_end ? 0 : -1;
}

/* TLS: records of type 22 whose fragments carry the ClientHello. */
static peek_kind classify_tls(const unsigned char *b, size_t len, peek_result *out) {
  unsigned char hs[TLS_MAX_HELLO];
  size_t hn = 0, at = 0, need = 0;
  int have_need = 0;
  while (1) {
    if (len - at < 5) return PEEK_MORE;
    if (b[at] != 22 || b[at + 1] != 3) return PEEK_OTHER;
    size_t rl = rd16(b + at + 3);
    if (rl == 0 || rl > 16384 + 2048) return PEEK_OTHER;
    if (len - at - 5 < rl) return PEEK_MORE;
    if (hn + rl > sizeof hs) return PEEK_OTHER;
    memcpy(hs + hn, b + at + 5, rl);
    hn += rl;
    at += 5 + rl;
    if (!have_need && hn >= 4) {
      if (hs[0] != 1) return PEEK_OTHER; /* not a ClientHello */
      need = 4 + rd24(hs + 1);
      if (need > sizeof hs) return PEEK_OTHER;
      have_need = 1;
    }
    if (have_need && hn >= need) break;
  }
  int r = hello_sni(hs + 4, need - 4, out->name);
  if (r < 0) return PEEK_OTHER;
  out->kind = PEEK_TLS;
  if (r == 0) return PEEK_TLS;
  if (is_ip_literal(out->name)) { /* RFC 6066 forbids it; treat as raw IP */
    out->is_ip = 1;
    out->name[0] = 0;
    return PEEK_TLS;
  }
  if (peek_norm_name(out->name) < 0) {
    out->name[0] = 0;
    return PEEK_OTHER;
  }
  return PEEK_TLS;
}

static const char *const methods[] = {"GET ",     "POST ",  "PUT ",     "HEAD ", "DELETE ",
                                      "OPTIONS ", "PATCH ", "CONNECT ", "TRACE "};

/* How many leading bytes of b could still be the start of a method. */
static int http_prefix(const unsigned char *b, size_t len) {
  for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
    size_t ml = strlen(methods[i]);
    size_t n = len < ml ? len : ml;
    if (memcmp(b, methods[i], n) == 0) return len >= ml ? 2 : 1;
  }
  return 0;
}

#define HTTP_HEAD_MAX (32 * 1024)

static peek_kind classify_http(const unsigned char *b, size_t len, peek_result *out) {
  int p = http_prefix(b, len);
  if (p == 0) return PEEK_OTHER;
  size_t lim = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;
  const unsigned char *end = memmem(b, lim, "\r\n\r\n", 4);
  if (!end) return len >= HTTP_HEAD_MAX ? PEEK_OTHER : PEEK_MORE;
  size_t head = (size_t)(end - b) + 4;
  /* The request line must be HTTP/1.x. */
  const unsigned char *eol = memmem(b, head, "\r\n", 2);
  size_t ll = (size_t)(eol - b);
  if (ll < 9 || memcmp(eol - 9, " HTTP/1.", 8) != 0) return PEEK_OTHER;
  /* Exactly one Host header (RFC 9112 3.2: several are a 400). */
  const unsigned char *line = eol + 2;
  int hosts = 0;
  char host[PEEK_NAME_MAX + 8];
  host[0] = 0;
  while (line < b + head - 2) {
    const unsigned char *le = memmem(line, (size_t)(b + head - line), "\r\n", 2);
    size_t n = (size_t)(le - line);
    if (n == 0) break;
    const unsigned char *colon = memchr(line, ':', n);
    if (!colon) return PEEK_OTHER;
    if (line[0] == ' ' || line[0] == '\t') return PEEK_OTHER; /* obsolete folding */
    if (colon - line == 4 && strncasecmp((const char *)line, "host", 4) == 0) {
      if (++hosts > 1) return PEEK_OTHER;
      const unsigned char *v = colon + 1, *ve = le;
      while (v < ve && (*v == ' ' || *v == '\t')) v++;
      while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
      size_t vl = (size_t)(ve - v);
      if (vl == 0 || vl >= sizeof host) return PEEK_OTHER;
      memcpy(host, v, vl);
      host[vl] = 0;
      if (memchr(host, 0, vl)) return PEEK_OTHER;
    } else {
      for (const unsigned char *c = line; c < colon; c++)
        if (*c <= ' ' || *c >= 127) return PEEK_OTHER;
    }
    line = le + 2;
  }
  out->kind = PEEK_HTTP;
  out->head_len = head;
  if (!hosts) return PEEK_HTTP;
  /* Strip a port; [v6]:port and bare v6 literals are IPs. */
  char *h = host;
  if (h[0] == '[') {
    char *rb = strchr(h, ']');
    if (!rb) return PEEK_OTHER;
    *rb = 0;
    h++;
    if (rb[1] && rb[1] != ':') return PEEK_OTHER;
  } else {
    char *c = strchr(h, ':');
    if (c) {
      if (strchr(c + 1, ':')) return PEEK_OTHER;
      for (char *d = c + 1; *d; d++)
        if (*d < '0' || *d > '9') return PEEK_OTHER;
      *c = 0;
    }
  }
  if (is_ip_literal(h)) {
    out->is_ip = 1;
    return PEEK_HTTP;
  }
  if (strlen(h) > PEEK_NAME_MAX) return PEEK_OTHER;
  strcpy(out->name, h);
  if (peek_norm_name(out->name) < 0) {
    out->name[0] = 0;
    return PEEK_OTHER;
  }
  return PEEK_HTTP;
}

peek_kind peek_classify(const unsigned char *buf, size_t len, peek_result *out) {
  memset(out, 0, sizeof *out);
  out->kind = PEEK_OTHER;
  if (len == 0) return out->kind = PEEK_MORE;
  peek_kind k;
  if (buf[0] == 22)
    k = classify_tls(buf, len, out);
  else
    k = classify_http(buf, len, out);
  if (k == PEEK_MORE || k == PEEK_OTHER) {
    out->name[0] = 0;
    out->is_ip = 0;
    out->head_len = 0;
  }
  out->kind = k;
  return k;
}
