/* Fuzz URL escaping, sandbox URL building and the router's Host parsing.
 * Invariants: unescape(escape(x)) == x; escaped output is URL-safe;
 * accepted sandbox hosts rebuild to the same string; built URLs have the
 * documented shape and parse back to the same port and id.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "proto/url.h"

static int url_safe(const char *s, int keep_slash) {
  for (; *s; s++) {
    char c = *s;
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '.' || c == '_' || c == '~' || c == '%' || (keep_slash && c == '/')))
      return 0;
  }
  return 1;
}

static void escape_round_trip(const char *s) {
  for (int ks = 0; ks < 2; ks++) {
    asbi_buf b = ASBI_BUF_INIT;
    FUZZ_CHECK(asbi_url_escape(&b, s, ks) == 0);
    if (!b.data) asbi_buf_reserve(&b, 0);
    FUZZ_CHECK(url_safe(b.data, ks));
    char *back = NULL;
    FUZZ_CHECK(asbi_url_unescape(b.data, b.len, ks, &back) == 0);
    FUZZ_CHECK(strcmp(back, s) == 0);
    free(back);
    asbi_buf_free(&b);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* 1. unescape the raw bytes; what decodes re-escapes and decodes again. */
  for (int plus = 0; plus < 2; plus++) {
    char *out = NULL;
    int rc = asbi_url_unescape((const char *)data, size, plus, &out);
    FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
      FUZZ_CHECK(strlen(out) <= size);
      escape_round_trip(out);
      free(out);
    }
  }
  /* The rest works on a C string. */
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';
  escape_round_trip(s);

  /* 2. Host parsing: accepted hosts are "<port>-<id>.<rest>" exactly. */
  int port = -1;
  char *id = NULL;
  if (asbi_url_parse_sandbox_host(s, &port, &id) == 0) {
    FUZZ_CHECK(port >= 1 && port <= 65535);
    FUZZ_CHECK(id && *id && strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") == strlen(id));
    char prefix[32];
    int pl = snprintf(prefix, sizeof prefix, "%d-", port);
    FUZZ_CHECK(strncmp(s, prefix, (size_t)pl) == 0);
    FUZZ_CHECK(strncmp(s + pl, id, strlen(id)) == 0 && s[pl + strlen(id)] == '.');
    /* Rebuilding the host from its parts gives the same string. */
    asbi_route_cfg cfg = {NULL, 0, s + pl + strlen(id) + 1, id};
    asbi_buf b = ASBI_BUF_INIT;
    FUZZ_CHECK(asbi_url_sandbox_host(&b, &cfg, port) == 0);
    FUZZ_CHECK(strcmp(b.data, s) == 0);
    asbi_buf_free(&b);
    free(id);
  }
  (void)asbi_url_host_is_loopback(s);

  /* 3. Building: split the input into domain '\n' id, try every kind. */
  char *nl = strchr(s, '\n');
  const char *domain = s, *sid = "abc123";
  if (nl) {
    *nl = '\0';
    sid = nl + 1;
  }
  int ports[] = {ASBI_ENVD_PORT, ASBI_CODE_PORT, 3000, 1, 65535, 0, 65536};
  /* The first input byte picks the sandbox_url / debug variants. */
  int sel = size ? data[0] : 0;
  const char *sandbox_url = (sel & 3) == 1   ? domain
                            : (sel & 3) == 2 ? "http://127.0.0.1:49982/"
                                             : NULL;
  int debug = (sel & 4) != 0;
  for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++) {
    for (int kind = 0; kind < 2; kind++) {
      asbi_route_cfg cfg = {sandbox_url, debug, domain, sid};
      asbi_buf b = ASBI_BUF_INIT;
      int rc = asbi_url_sandbox_base(&b, &cfg, ports[i], (asbi_url_kind)kind);
      asbi_buf h = ASBI_BUF_INIT;
      int hrc = asbi_url_sandbox_host(&h, &cfg, ports[i]);
      if (hrc == 0)
        FUZZ_CHECK(h.data && strpbrk(h.data, "/?#@ \r\n") == NULL);
      else
        FUZZ_CHECK(h.len == 0);
      asbi_buf_free(&h);
      if (rc != 0) {
        FUZZ_CHECK(b.len == 0);
        FUZZ_CHECK(ports[i] < 1 || ports[i] > 65535 || !debug || (kind == 0 && sandbox_url));
        continue;
      }
      FUZZ_CHECK(ports[i] >= 1 && ports[i] <= 65535);
      if (kind == ASBI_URL_API && sandbox_url && *sandbox_url) {
        /* The configured base wins, minus trailing slashes. */
        size_t l = strlen(sandbox_url);
        while (l && sandbox_url[l - 1] == '/') l--;
        FUZZ_CHECK(b.len == l && memcmp(b.data, sandbox_url, l) == 0);
        asbi_buf_free(&b);
        continue;
      }
      if (debug) {
        char want[32];
        snprintf(want, sizeof want, "http://localhost:%d", ports[i]);
        FUZZ_CHECK(strcmp(b.data, want) == 0);
        asbi_buf_free(&b);
        continue;
      }
      int https = strncmp(b.data, "https://", 8) == 0;
      FUZZ_CHECK(https || strncmp(b.data, "http://", 7) == 0);
      FUZZ_CHECK(https == !asbi_url_host_is_loopback(domain));
      const char *host = b.data + (https ? 8 : 7);
      FUZZ_CHECK(strpbrk(host, "/?#@ \r\n") == NULL);
      int p2;
      char *id2;
      if (asbi_url_parse_sandbox_host(host, &p2, &id2) == 0) {
        FUZZ_CHECK(p2 == ports[i] && strcmp(id2, sid) == 0);
        free(id2);
      }
      asbi_buf_free(&b);
    }
  }
  free(s);
  return 0;
}
