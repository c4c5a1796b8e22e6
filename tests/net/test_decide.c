/* net.egress.decide: the egress services' decisions (core/net/egress/
 * decide.c) over the whole table of policy x name x destination, without
 * sockets: CIDR allowances, domain and wildcard allowances with and
 * without the resolver's answer, allow beating deny, the ranges no policy
 * opens, the resolver's refusals and localhost names. SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "net/egress/decide.h"
#include "net/egress/dnsmsg.h"

static int fails;
#define CHECK(c)                                              \
  do {                                                        \
    if (!(c)) {                                               \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); \
      fails++;                                                \
    }                                                         \
  } while (0)

static asbn_entry cidr(const char *a, int pfx) {
  asbn_entry e;
  memset(&e, 0, sizeof e);
  if (inet_pton(AF_INET, a, e.addr) == 1)
    e.kind = ASBN_CIDR4;
  else {
    inet_pton(AF_INET6, a, e.addr);
    e.kind = ASBN_CIDR6;
  }
  e.prefix = (uint8_t)pfx;
  return e;
}

static asbn_entry dom(const char *d, int wild) {
  asbn_entry e;
  memset(&e, 0, sizeof e);
  e.kind = wild ? ASBN_WILDCARD : ASBN_DOMAIN;
  e.domain = (char *)d;
  return e;
}

static decide_why conn(const asbn_policy *p, const char *dst, const char *name, int has) {
  uint8_t a[16];
  int fam = inet_pton(AF_INET, dst, a) == 1 ? AF_INET : AF_INET6;
  if (fam == AF_INET6) inet_pton(AF_INET6, dst, a);
  decide_conn_in in = {.family = fam, .dst = a, .name = name, .name_has_dst = has};
  return decide_conn(p, &in);
}

int main(void) {
  asbn_entry allow[] = {dom("example.test", 0), dom("wild.test", 1), cidr("198.18.0.20", 32),
                        cidr("10.1.2.0", 24)};
  asbn_entry deny_all[] = {cidr("0.0.0.0", 0)};
  asbn_policy off = {.allow_internet = 0, .allow_out = allow, .nallow_out = 4};

  /* Names. */
  CHECK(decide_name_match(&allow[0], "example.test"));
  CHECK(!decide_name_match(&allow[0], "a.example.test"));
  CHECK(!decide_name_match(&allow[0], "xexample.test"));
  CHECK(decide_name_match(&allow[1], "a.wild.test"));
  CHECK(decide_name_match(&allow[1], "a.b.wild.test"));
  CHECK(!decide_name_match(&allow[1], "wild.test"));
  CHECK(!decide_name_match(&allow[1], "xwild.test"));

  /* Internet off, allowances. */
  CHECK(conn(&off, "198.18.0.20", NULL, 0) == DECIDE_CIDR);
  CHECK(conn(&off, "10.1.2.3", NULL, 0) ==
        DECIDE_CIDR); /* an allowOut CIDR opens a private range */
  CHECK(conn(&off, "10.1.3.3", NULL, 0) == DECIDE_BLOCKED);
  CHECK(conn(&off, "198.18.0.10", "example.test", 1) == DECIDE_DOMAIN);
  CHECK(conn(&off, "198.18.0.10", "example.test", 0) == DECIDE_MISMATCH);
  CHECK(conn(&off, "198.18.0.10", NULL, 0) == DECIDE_DENIED); /* raw IP */
  CHECK(conn(&off, "198.18.0.10", "evil.test", 0) == DECIDE_DENIED);
  CHECK(conn(&off, "198.18.0.12", "a.wild.test", 1) == DECIDE_DOMAIN);
  CHECK(conn(&off, "198.18.0.12", "wild.test", 1) == DECIDE_DENIED);
  /* A domain never opens an always-blocked address, even if resolved. */
  CHECK(conn(&off, "169.254.169.254", "example.test", 1) == DECIDE_BLOCKED);
  CHECK(conn(&off, "127.0.0.1", "example.test", 1) == DECIDE_BLOCKED);
  CHECK(conn(&off, "::ffff:192.168.1.1", "example.test", 1) == DECIDE_BLOCKED);
  CHECK(conn(&off, "fe80::1", NULL, 0) == DECIDE_BLOCKED);
  CHECK(conn(&off, "fd00::1", NULL, 0) == DECIDE_BLOCKED);

  /* Internet on, deny all but allowances: allow beats deny. */
  asbn_policy on_deny = {.allow_internet = 1,
                         .allow_out = allow,
                         .nallow_out = 4,
                         .deny_out = deny_all,
                         .ndeny_out = 1};
  CHECK(decide_internet_off(&on_deny, AF_INET));
  CHECK(!decide_internet_off(&on_deny, AF_INET6));
  CHECK(conn(&on_deny, "198.18.0.10", "example.test", 1) == DECIDE_DOMAIN);
  CHECK(conn(&on_deny, "198.18.0.10", "example.test", 0) == DECIDE_MISMATCH);
  CHECK(conn(&on_deny, "198.18.0.11", "other.test", 1) == DECIDE_DENIED);
  CHECK(conn(&on_deny, "198.18.0.20", NULL, 0) == DECIDE_CIDR);
  CHECK(conn(&on_deny, "2001:4860::1", NULL, 0) == DECIDE_INTERNET);

  /* Internet on, nothing denied. */
  asbn_policy open = {.allow_internet = 1};
  CHECK(conn(&open, "198.18.0.11", NULL, 0) == DECIDE_INTERNET);
  CHECK(conn(&open, "10.0.0.1", NULL, 0) == DECIDE_BLOCKED);
  CHECK(conn(&open, "100.64.0.1", NULL, 0) == DECIDE_BLOCKED);
  CHECK(conn(&open, "172.31.255.255", NULL, 0) == DECIDE_BLOCKED);
  CHECK(conn(&open, "172.32.0.1", NULL, 0) == DECIDE_INTERNET);
  asbn_policy open_allow = {.allow_internet = 1, .allow_out = allow, .nallow_out = 4};
  /* Internet on: an allowed name elsewhere is just internet. */
  CHECK(conn(&open_allow, "198.18.0.11", "example.test", 0) == DECIDE_INTERNET);

  /* The resolver. */
  CHECK(decide_dns(&off, "example.test", 1));
  CHECK(decide_dns(&off, "a.wild.test", 1));
  CHECK(!decide_dns(&off, "wild.test", 1));
  CHECK(!decide_dns(&off, "other.test", 1));
  CHECK(!decide_dns(&off, "", 0));
  CHECK(decide_dns(&open, "anything.test", 1));
  CHECK(!decide_dns(&on_deny, "other.test", 1));
  /* localhost names (RFC 6761): answered (with loopback, by the resolver
   * itself) also with the internet off; nothing else near them */
  CHECK(decide_dns(&off, "localhost", 1));
  CHECK(decide_dns(&off, "8080-abcdefghij0123456789.localhost", 1));
  CHECK(decide_dns(&on_deny, "a.b.localhost", 1));
  CHECK(!decide_dns(&off, "notlocalhost", 1));
  CHECK(!decide_dns(&off, "localhost.test", 1));
  CHECK(!decide_dns(&off, "xlocalhost", 1));
  CHECK(!decide_dns(&off, ".localhost", 0));
  CHECK(dnsmsg_is_localhost("localhost") && dnsmsg_is_localhost("x.localhost"));
  CHECK(!dnsmsg_is_localhost(".localhost") && !dnsmsg_is_localhost("localhost2") &&
        !dnsmsg_is_localhost("") && !dnsmsg_is_localhost("localhost.x"));

  /* Whether the proxy must read a name first. */
  uint8_t a20[4] = {198, 18, 0, 20}, a10[4] = {198, 18, 0, 10};
  CHECK(!decide_needs_name(&off, AF_INET, a20));
  CHECK(decide_needs_name(&off, AF_INET, a10));
  CHECK(!decide_needs_name(&open, AF_INET, a10));
  CHECK(!decide_needs_name(&open_allow, AF_INET, a10)); /* open internet: a name changes nothing */
  CHECK(decide_needs_name(&on_deny, AF_INET, a10));
  asbn_domain_rule rule = {.match = dom("example.test", 0)};
  asbn_policy rules_only = {.allow_internet = 1, .rules = &rule, .nrules = 1};
  CHECK(decide_needs_name(&rules_only, AF_INET, a20));

  if (fails) fprintf(stderr, "net.egress.decide: %d failed\n", fails);
  return fails ? 1 : 0;
}
