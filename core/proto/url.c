/* SPDX-License-Identifier: Apache-2.0 */
#include "url.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/util.h"

static int unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

int asbi_url_escape(asbi_buf *out, const char *s, int keep_slash) {
  static const char hex[] = "0123456789ABCDEF";
  size_t mark = out->len;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    int rc;
    if (unreserved(*p) || (keep_slash && *p == '/')) {
      rc = asbi_buf_putc(out, (char)*p);
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      rc = asbi_buf_append(out, e, 3);
    }
    if (rc != 0) {
      out->len = mark;
      if (out->data) out->data[mark] = '\0';
      return -1;
    }
  }
  return 0;
}

static int hexv(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int asbi_url_unescape(const char *s, size_t n, int plus, char **out) {
  char *r = malloc(n + 1);
  if (!r) return -1;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') {
      int h = n - i > 2 ? hexv((unsigned char)s[i + 1]) : -1;
      int l = h >= 0 ? hexv((unsigned char)s[i + 2]) : -1;
      if (l < 0) goto bad;
      c = (unsigned char)(h << 4 | l);
      i += 2;
    } else if (c == '+' && plus) {
      c = ' ';
    }
    if (c == 0) goto bad;
    r[o++] = (char)c;
  }
  r[o] = '\0';
  *out = r;
  return 0;
bad:
  free(r);
  return -1;
}

/* ---- sandbox URLs ------------------------------------------------------ */

static int valid_id(const char *id) {
  if (asbi_empty(id)) return 0;
  for (const char *p = id; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')) return 0;
  return 1;
}

/* A domain is a host with an optional :port; nothing that would change the
 * shape of a URL (scheme, path, query, userinfo, whitespace). */
static int valid_domain(const char *d) {
  if (asbi_empty(d)) return 0;
  for (const unsigned char *p = (const unsigned char *)d; *p; p++)
    if (*p <= 0x20 || *p >= 0x7F || strchr("/?#@\\%", *p)) return 0;
  return 1;
}

static int e2b_cloud_domain(const char *d) {
  static const char *const own[] = {"e2b.app", "e2b.dev", "e2b.pro", "e2b-staging.dev"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(own); i++)
    if (asbi_strcaseeq(d, own[i])) return 1;
  return 0;
}

static int finish(asbi_buf *out, size_t mark, int rc) {
  if (rc != 0) {
    out->len = mark;
    if (out->data) out->data[mark] = '\0';
    return -1;
  }
  return 0;
}

int asbi_url_sandbox_base(asbi_buf *out, const asbi_route_cfg *cfg, int port, asbi_url_kind kind) {
  size_t mark = out->len;
  if (!cfg || port < 1 || port > 65535) return -1;
  if (kind == ASBI_URL_API && !asbi_empty(cfg->sandbox_url)) {
    size_t l = strlen(cfg->sandbox_url);
    while (l > 0 && cfg->sandbox_url[l - 1] == '/') l--;
    if (l == 0) return -1;
    return finish(out, mark, asbi_buf_append(out, cfg->sandbox_url, l));
  }
  if (cfg->debug) return finish(out, mark, asbi_buf_printf(out, "http://localhost:%d", port));
  if (!valid_domain(cfg->domain)) return -1;
  if (kind == ASBI_URL_API && port == ASBI_ENVD_PORT && e2b_cloud_domain(cfg->domain))
    return finish(out, mark, asbi_buf_printf(out, "https://sandbox.%s", cfg->domain));
  if (!valid_id(cfg->sandbox_id)) return -1;
  const char *scheme = asbi_url_host_is_loopback(cfg->domain) ? "http" : "https";
  return finish(out, mark,
                asbi_buf_printf(out, "%s://%d-%s.%s", scheme, port, cfg->sandbox_id, cfg->domain));
}

int asbi_url_sandbox_host(asbi_buf *out, const asbi_route_cfg *cfg, int port) {
  size_t mark = out->len;
  if (!cfg || port < 1 || port > 65535) return -1;
  if (cfg->debug) return finish(out, mark, asbi_buf_printf(out, "localhost:%d", port));
  if (!valid_domain(cfg->domain) || !valid_id(cfg->sandbox_id)) return -1;
  return finish(out, mark, asbi_buf_printf(out, "%d-%s.%s", port, cfg->sandbox_id, cfg->domain));
}

/* 1 if s (n bytes) is all decimal digits and not empty. */
static int all_digits(const char *s, size_t n) {
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}

int asbi_url_host_is_loopback(const char *host) {
  char h[256];
  size_t n;
  if (asbi_empty(host)) return 0;
  size_t len = strlen(host);
  if (host[0] == '[') {
    const char *close = memchr(host, ']', len);
    if (!close) return 0;
    n = (size_t)(close - host - 1);
    const char *rest = close + 1;
    if (*rest && (*rest != ':' || !all_digits(rest + 1, strlen(rest + 1)))) return 0;
    if (n >= sizeof h) return 0;
    memcpy(h, host + 1, n);
    h[n] = '\0';
    struct in6_addr a6;
    if (inet_pton(AF_INET6, h, &a6) != 1) return 0;
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return 1;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
  }
  const char *colon = strchr(host, ':');
  if (colon && strchr(colon + 1, ':')) {
    /* A bare IPv6 address (it cannot carry a port). */
    struct in6_addr a6;
    if (inet_pton(AF_INET6, host, &a6) != 1) return 0;
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return 1;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
  }
  n = colon ? (size_t)(colon - host) : len;
  if (colon && !all_digits(colon + 1, strlen(colon + 1))) return 0;
  if (n == 0 || n >= sizeof h) return 0;
  memcpy(h, host, n);
  h[n] = '\0';
  if (h[n - 1] == '.') h[--n] = '\0'; /* FQDN form "localhost." */
  if (n == 0) return 0;
  if (asbi_strcaseeq(h, "localhost")) return 1;
  if (n > 10 && asbi_strcaseeq(h + n - 10, ".localhost")) return 1;
  struct in_addr a4;
  if (inet_pton(AF_INET, h, &a4) == 1) return ((const unsigned char *)&a4.s_addr)[0] == 127;
  return 0;
}

int asbi_url_parse_sandbox_host(const char *host, int *port, char **id) {
  if (!host) return -1;
  const char *p = host;
  /* port: 1..65535, decimal, no leading zero */
  int v = 0;
  size_t nd = 0;
  while (*p >= '0' && *p <= '9') {
    if (nd == 5) return -1;
    v = v * 10 + (*p - '0');
    nd++;
    p++;
  }
  if (nd == 0 || host[0] == '0' || v < 1 || v > 65535 || *p != '-') return -1;
  p++;
  const char *ids = p;
  while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')) p++;
  if (p == ids || *p != '.') return -1;
  size_t idl = (size_t)(p - ids);
  const char *rest = p + 1;
  /* The rest is the domain: a non-empty host name, optionally ":port". */
  const char *colon = strchr(rest, ':');
  size_t hl = colon ? (size_t)(colon - rest) : strlen(rest);
  if (hl == 0 || rest[0] == '.') return -1;
  for (size_t i = 0; i < hl; i++) {
    char c = rest[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '.'))
      return -1;
  }
  if (colon) {
    size_t pl = strlen(colon + 1);
    if (!all_digits(colon + 1, pl) || pl > 5) return -1;
    if (atoi(colon + 1) > 65535) return -1;
  }
  char *s = asbi_strndup(ids, idl);
  if (!s) return -1;
  *port = v;
  *id = s;
  return 0;
}
