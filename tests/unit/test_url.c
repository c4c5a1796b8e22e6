/* Unit tests for core/proto/url. SPDX-License-Identifier: Apache-2.0 */
#include "proto/url.h"
#include "testing.h"
#include "util/util.h"

static char *esc(const char *s, int keep_slash) {
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_url_escape(&b, s, keep_slash) != 0) {
    asbi_buf_free(&b);
    return NULL;
  }
  return asbi_buf_detach(&b, NULL);
}

TEST(escape) {
  char *e = esc("AZaz09-._~", 0);
  CHECK_STR(e, "AZaz09-._~");
  free(e);
  e = esc("/home/user/my file.txt", 0);
  CHECK_STR(e, "%2Fhome%2Fuser%2Fmy%20file.txt");
  free(e);
  e = esc("/home/user/my file.txt", 1);
  CHECK_STR(e, "/home/user/my%20file.txt");
  free(e);
  e = esc("a+b&c=d?e#f%g@h:i;j,k!l'm(n)o*p[q]r\"s<t>u\\v^w`x{y}z|", 1);
  CHECK_STR(e,
            "a%2Bb%26c%3Dd%3Fe%23f%25g%40h%3Ai%3Bj%2Ck%21l%27m%28n%29o%2Ap%5Bq%5Dr"
            "%22s%3Ct%3Eu%5Cv%5Ew%60x%7By%7Dz%7C");
  free(e);
  e = esc("\xC3\xA9\x01\x7f\xff", 0);
  CHECK_STR(e, "%C3%A9%01%7F%FF");
  free(e);
  e = esc("", 0);
  CHECK_STR(e, "");
  free(e);
  /* Appends; a bounded buffer that overflows is left unchanged. */
  asbi_buf b;
  asbi_buf_init(&b, 8);
  asbi_buf_puts(&b, "q=");
  CHECK_INT(asbi_url_escape(&b, "a b", 0), 0);
  CHECK_STR(b.data, "q=a%20b");
  CHECK_INT(asbi_url_escape(&b, " ", 0), -1);
  CHECK_STR(b.data, "q=a%20b");
  asbi_buf_free(&b);
}

static int unesc(const char *s, int plus, char **out) {
  return asbi_url_unescape(s, strlen(s), plus, out);
}

TEST(unescape) {
  char *o;
  CHECK_INT(unesc("%2Fhome%2fuser%20x", 0, &o), 0);
  CHECK_STR(o, "/home/user x");
  free(o);
  CHECK_INT(unesc("a+b%2B", 1, &o), 0);
  CHECK_STR(o, "a b+");
  free(o);
  CHECK_INT(unesc("a+b", 0, &o), 0);
  CHECK_STR(o, "a+b");
  free(o);
  CHECK_INT(unesc("", 0, &o), 0);
  CHECK_STR(o, "");
  free(o);
  CHECK_INT(unesc("%C3%A9", 0, &o), 0);
  CHECK_STR(o, "\xC3\xA9");
  free(o);
  static const char *bad[] = {"%",   "%2",  "a%",  "a%2", "%G0",   "%0G",  "%%",
                              "%-1", "%+1", "% 1", "%00", "a%00b", "%2%41"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(bad); i++) {
    o = (char *)1;
    if (unesc(bad[i], 1, &o) != -1) ASBT_FAIL("accepted \"%s\"", bad[i]);
    CHECK(o == (char *)1); /* untouched */
  }
  /* A raw NUL inside n is rejected; bytes after n are not read. */
  CHECK_INT(asbi_url_unescape("a\0b", 3, 0, &o), -1);
  CHECK_INT(asbi_url_unescape("ab%2", 2, 0, &o), 0);
  CHECK_STR(o, "ab");
  free(o);
  CHECK_INT(asbi_url_unescape("%41%", 3, 0, &o), 0);
  CHECK_STR(o, "A");
  free(o);
}

TEST(escape_round_trip_all_bytes) {
  char all[256];
  for (int i = 1; i < 256; i++) all[i - 1] = (char)i;
  all[255] = '\0';
  for (int ks = 0; ks < 2; ks++) {
    char *e = esc(all, ks);
    REQUIRE(e != NULL);
    for (const char *p = e; *p; p++)
      if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~%", *p) || (ks && *p == '/')))
        ASBT_FAIL("unsafe character '%c' in escaped output", *p);
    char *d;
    CHECK_INT(unesc(e, 0, &d), 0);
    CHECK_STR(d, all);
    free(d);
    CHECK_INT(unesc(e, 1, &d), 0); /* '+' was escaped, so plus mode agrees */
    CHECK_STR(d, all);
    free(d);
    free(e);
  }
}

static char *base(const char *sandbox_url, int debug, const char *domain, const char *id, int port,
                  asbi_url_kind kind) {
  asbi_route_cfg c = {sandbox_url, debug, domain, id};
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_puts(&b, "");
  if (asbi_url_sandbox_base(&b, &c, port, kind) != 0) {
    CHECK_INT(b.len, 0); /* nothing appended on failure */
    asbi_buf_free(&b);
    return NULL;
  }
  return asbi_buf_detach(&b, NULL);
}

/* expect NULL = the call must fail. */
static void check_base(int line, const char *expect, const char *sandbox_url, int debug,
                       const char *domain, const char *id, int port, asbi_url_kind kind) {
  char *got = base(sandbox_url, debug, domain, id, port, kind);
  if (!expect && got)
    ASBT_FAIL("line %d: expected failure, got %s", line, got);
  else if (expect && (!got || strcmp(got, expect) != 0))
    ASBT_FAIL("line %d: expected %s, got %s", line, expect, got ? got : "(failure)");
  free(got);
}

#define CHECK_BASE(...) check_base(__LINE__, __VA_ARGS__)

static const char *const NOSTR = NULL;

TEST(sandbox_base_rules) {
  const asbi_url_kind API = ASBI_URL_API, PUB = ASBI_URL_PUBLIC;
  /* 1. sandbox_url wins for API traffic, any port, trailing '/' dropped. */
  CHECK_BASE("http://127.0.0.1:49982", "http://127.0.0.1:49982/", 0, "e2b.app", "abc", 49983, API);
  CHECK_BASE("http://127.0.0.1:49982", "http://127.0.0.1:49982", 1, "e2b.app", "abc", 49999, API);
  CHECK_BASE("https://proxy.example/base", "https://proxy.example/base//", 0, NULL, NULL, 3000,
             API);
  /* ... but not for public URLs. */
  CHECK_BASE("https://49983-abc.example.com", "http://127.0.0.1:49982", 0, "example.com", "abc",
             49983, PUB);
  CHECK_BASE(NOSTR, "/", 0, NULL, NULL, 49983, API);
  /* 2. debug */
  CHECK_BASE("http://localhost:49983", NULL, 1, "e2b.app", "abc", 49983, API);
  CHECK_BASE("http://localhost:49999", NULL, 1, NULL, NULL, 49999, API);
  CHECK_BASE("http://localhost:3000", NULL, 1, NULL, "debug_sandbox_id", 3000, PUB);
  /* 3. E2B's own domains: envd API traffic via sandbox.<domain> */
  CHECK_BASE("https://sandbox.e2b.app", NULL, 0, "e2b.app", "abc", 49983, API);
  CHECK_BASE("https://sandbox.e2b.dev", NULL, 0, "e2b.dev", "abc", 49983, API);
  CHECK_BASE("https://sandbox.e2b.pro", NULL, 0, "e2b.pro", "abc", 49983, API);
  CHECK_BASE("https://sandbox.e2b-staging.dev", NULL, 0, "e2b-staging.dev", "abc", 49983, API);
  /* ... only for port 49983 and API traffic */
  CHECK_BASE("https://49999-abc.e2b.app", NULL, 0, "e2b.app", "abc", 49999, API);
  CHECK_BASE("https://49983-abc.e2b.app", NULL, 0, "e2b.app", "abc", 49983, PUB);
  CHECK_BASE("https://3000-abc.e2b.dev", NULL, 0, "e2b.dev", "abc", 3000, PUB);
  /* ... and not for look-alikes */
  CHECK_BASE("https://49983-abc.my.e2b.app", NULL, 0, "my.e2b.app", "abc", 49983, API);
  CHECK_BASE("https://49983-abc.e2b.app.evil", NULL, 0, "e2b.app.evil", "abc", 49983, API);
  /* 4. port-host form; http for loopback domains */
  CHECK_BASE("https://49983-i0abc.ap-southeast-1.e2b.fc.aliyuncs.com", NULL, 0,
             "ap-southeast-1.e2b.fc.aliyuncs.com", "i0abc", 49983, API);
  CHECK_BASE("http://49983-abc.localhost:49982", NULL, 0, "localhost:49982", "abc", 49983, API);
  CHECK_BASE("http://3000-abc.localhost:49982", NULL, 0, "localhost:49982", "abc", 3000, PUB);
  CHECK_BASE("http://49999-abc.localhost", NULL, 0, "localhost", "abc", 49999, API);
  CHECK_BASE("http://1-abc.sb.localhost", NULL, 0, "sb.localhost", "abc", 1, API);
  CHECK_BASE("http://65535-abc.127.0.0.1:8080", NULL, 0, "127.0.0.1:8080", "abc", 65535, API);
  CHECK_BASE("http://80-abc.[::1]:49982", NULL, 0, "[::1]:49982", "abc", 80, API);
  CHECK_BASE("https://80-abc.localhost.evil.com", NULL, 0, "localhost.evil.com", "abc", 80, API);
  /* invalid input */
  CHECK_BASE(NOSTR, NULL, 0, "example.com", "ABC", 80, API);
  CHECK_BASE(NOSTR, NULL, 0, "example.com", "a.b", 80, API);
  CHECK_BASE(NOSTR, NULL, 0, "example.com", "a/b", 80, API);
  CHECK_BASE(NOSTR, NULL, 0, "example.com", "", 80, API);
  CHECK_BASE(NOSTR, NULL, 0, "example.com", NULL, 80, API);
  CHECK_BASE(NOSTR, NULL, 0, "", "abc", 80, API);
  CHECK_BASE(NOSTR, NULL, 0, NULL, "abc", 80, API);
  CHECK_BASE(NOSTR, NULL, 0, "https://example.com", "abc", 80, API);
  CHECK_BASE(NOSTR, NULL, 0, "example.com/path", "abc", 80, API);
  CHECK_BASE(NOSTR, NULL, 0, "user@example.com", "abc", 80, API);
  CHECK_BASE(NOSTR, NULL, 0, "exa mple.com", "abc", 80, API);
  CHECK_BASE(NOSTR, NULL, 0, "example.com", "abc", 0, API);
  CHECK_BASE(NOSTR, NULL, 0, "example.com", "abc", 65536, API);
  CHECK_BASE(NOSTR, NULL, 1, "example.com", "abc", -1, API);
  CHECK_BASE("https://80-a_b-c.example.com", NULL, 0, "example.com", "a_b-c", 80, API);
  asbi_buf b = ASBI_BUF_INIT;
  CHECK_INT(asbi_url_sandbox_base(&b, NULL, 80, ASBI_URL_API), -1);
  asbi_buf_free(&b);
}

TEST(sandbox_host) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_route_cfg c = {NULL, 0, "localhost:49982", "abc123"};
  CHECK_INT(asbi_url_sandbox_host(&b, &c, 3000), 0);
  CHECK_STR(b.data, "3000-abc123.localhost:49982");
  asbi_buf_clear(&b);
  c.sandbox_url = "http://ignored";
  c.domain = "e2b.app";
  CHECK_INT(asbi_url_sandbox_host(&b, &c, 49983), 0);
  CHECK_STR(b.data, "49983-abc123.e2b.app");
  asbi_buf_clear(&b);
  c.debug = 1;
  CHECK_INT(asbi_url_sandbox_host(&b, &c, 8080), 0);
  CHECK_STR(b.data, "localhost:8080");
  asbi_buf_clear(&b);
  c.debug = 0;
  c.sandbox_id = "Bad";
  CHECK_INT(asbi_url_sandbox_host(&b, &c, 8080), -1);
  c.sandbox_id = "ok";
  CHECK_INT(asbi_url_sandbox_host(&b, &c, 0), -1);
  c.domain = "";
  CHECK_INT(asbi_url_sandbox_host(&b, &c, 80), -1);
  CHECK_INT(b.len, 0);
  asbi_buf_free(&b);
}

TEST(loopback) {
  static const char *yes[] = {
      "localhost",
      "LOCALHOST",
      "localhost:49982",
      "localhost.",
      "localhost.:80",
      "foo.localhost",
      "a.b.localhost:1",
      "FOO.LocalHost",
      "127.0.0.1",
      "127.0.0.1:8080",
      "127.1.2.3",
      "127.255.255.255:65535",
      "[::1]",
      "[::1]:49982",
      "::1",
      "[0:0:0:0:0:0:0:1]",
      "[::ffff:127.0.0.1]:80",
  };
  static const char *no[] = {
      "",
      "e2b.app",
      "localhost.evil.com",
      "evil-localhost",
      "xlocalhost",
      "localhostx",
      ".localhost",
      "127.0.0.1.evil.com",
      "128.0.0.1",
      "10.0.0.1",
      "0.0.0.0",
      "127.0.0",
      "127.000.000.001x",
      "localhost:abc",
      "localhost:",
      "localhost:80x",
      "[::1",
      "[::1]x",
      "[::1]:",
      "[::2]",
      "::2",
      "[::ffff:10.0.0.1]",
      "[fe80::1]",
      "::",
      "example.com:49982",
      "localhost/x",
      "user@localhost",
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(yes); i++)
    if (!asbi_url_host_is_loopback(yes[i])) ASBT_FAIL("%s should be loopback", yes[i]);
  for (size_t i = 0; i < ASBI_ARRAY_LEN(no); i++)
    if (asbi_url_host_is_loopback(no[i])) ASBT_FAIL("%s should not be loopback", no[i]);
  CHECK(!asbi_url_host_is_loopback(NULL));
  char longhost[400];
  memset(longhost, 'a', sizeof longhost - 1);
  longhost[sizeof longhost - 1] = '\0';
  CHECK(!asbi_url_host_is_loopback(longhost));
  memcpy(longhost + sizeof longhost - 11, ".localhost", 11);
  CHECK(!asbi_url_host_is_loopback(longhost)); /* too long to be a name */
}

TEST(parse_sandbox_host) {
  struct {
    const char *host;
    int port;
    const char *id;
  } good[] = {
      {"3000-abc.localhost:49982", 3000, "abc"},
      {"49983-i0abc123xyz.e2b.app", 49983, "i0abc123xyz"},
      {"1-a.b", 1, "a"},
      {"65535-0.example.com", 65535, "0"},
      {"8080-abc.Example.COM", 8080, "abc"},
      {"8080-abc.127.0.0.1:49982", 8080, "abc"},
      {"8080-abc.x:1", 8080, "abc"},
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(good); i++) {
    int port = -1;
    char *id = NULL;
    if (asbi_url_parse_sandbox_host(good[i].host, &port, &id) != 0) {
      ASBT_FAIL("rejected %s", good[i].host);
      continue;
    }
    CHECK_INT(port, good[i].port);
    CHECK_STR(id, good[i].id);
    free(id);
  }
  static const char *bad[] = {
      "",
      "localhost:49982",
      "sandbox.e2b.app",
      "abc.e2b.app",
      "3000.e2b.app",
      "3000-abc",
      "3000-abc.",
      "3000-abc.:80",
      "3000-.e2b.app",
      "-abc.e2b.app",
      "3000abc.e2b.app",
      "0-abc.e2b.app",
      "03000-abc.e2b.app",
      "65536-abc.e2b.app",
      "99999-abc.e2b.app",
      "123456-abc.e2b.app",
      "3000-ABC.e2b.app",
      "3000-ab_c.e2b.app",
      "3000-ab-c.e2b.app",
      "3000-abc.e2b.app:",
      "3000-abc.e2b.app:x",
      "3000-abc.e2b.app:99999",
      "3000-abc.e2b.app:123456",
      "3000-abc..e2b.app",
      "3000-abc.e2b.app/x",
      "3000-abc.e2b.app:80:80",
      "3000-abc.e2b app",
      "+3000-abc.e2b.app",
      " 3000-abc.e2b.app",
      "3000 -abc.e2b.app",
      "3000-abc.[::1]:80",
      "3000-abc.e2b.app\r\nX: y",
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(bad); i++) {
    int port = -7;
    char *id = (char *)1;
    if (asbi_url_parse_sandbox_host(bad[i], &port, &id) != -1) {
      ASBT_FAIL("accepted %s", bad[i]);
      free(id);
    } else {
      CHECK(port == -7 && id == (char *)1);
    }
  }
  int port;
  char *id;
  CHECK_INT(asbi_url_parse_sandbox_host(NULL, &port, &id), -1);
}

TEST(host_round_trip) {
  /* What sandbox_host builds, the router parses back. */
  const char *domains[] = {"localhost:49982", "e2b.app", "sb.example.org:8443"};
  const char *ids[] = {"abc", "i0abc123def456ghi789", "z"};
  int ports[] = {1, 80, 3000, 49983, 49999, 65535};
  for (size_t d = 0; d < 3; d++)
    for (size_t i = 0; i < 3; i++)
      for (size_t p = 0; p < 6; p++) {
        asbi_route_cfg c = {NULL, 0, domains[d], ids[i]};
        asbi_buf b = ASBI_BUF_INIT;
        REQUIRE(asbi_url_sandbox_host(&b, &c, ports[p]) == 0);
        int port;
        char *id;
        CHECK_INT(asbi_url_parse_sandbox_host(b.data, &port, &id), 0);
        CHECK_INT(port, ports[p]);
        CHECK_STR(id, ids[i]);
        free(id);
        asbi_buf_free(&b);
      }
}

int main(void) {
  RUN(escape);
  RUN(unescape);
  RUN(escape_round_trip_all_bytes);
  RUN(sandbox_base_rules);
  RUN(sandbox_host);
  RUN(loopback);
  RUN(parse_sandbox_host);
  RUN(host_round_trip);
  TEST_MAIN_END();
}
