/* Unit tests for core/net/policy.c: E2B's allowInternetAccess and network
 * objects parsed, refused with a message, shown back, matched, copied.
 * SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>

#include "net/policy.h"
#include "testing.h"

static char E[256];

static int parse(const char *allow, const char *net, asbn_policy *p) {
  cJSON *a = allow ? cJSON_Parse(allow) : NULL, *n = net ? cJSON_Parse(net) : NULL;
  int rc = asbn_policy_parse(a, n, p, E, sizeof E);
  cJSON_Delete(a);
  cJSON_Delete(n);
  return rc;
}

static char *show(const asbn_policy *p) {
  cJSON *j = asbn_policy_to_json(p);
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  return s;
}

TEST(defaults) {
  asbn_policy p;
  REQUIRE(parse(NULL, NULL, &p) == 0);
  CHECK_INT(p.allow_internet, 1);
  CHECK_INT(p.allow_public_traffic, 1);
  CHECK_INT((int)p.nallow_out, 0);
  char *s = show(&p);
  CHECK_STR(s, "{\"allowPublicTraffic\":true}");
  free(s);
  asbn_policy_free(&p);
  REQUIRE(parse("false", "null", &p) == 0);
  CHECK_INT(p.allow_internet, 0);
  asbn_policy_free(&p);
}

TEST(full) {
  asbn_policy p;
  REQUIRE(parse("false",
                "{\"allowOut\":[\"198.18.0.0/15\",\"8.8.8.8\",\"10.1.2.3/8\",\"2001:db8::/32\","
                "\"Example.COM.\",\"*.example.org\"],"
                "\"denyOut\":[\"198.18.5.0/24\",\"::1\"],"
                "\"rules\":{\"api.example.com\":[{\"transform\":{\"headers\":{\"Authorization\":"
                "\"Bearer x\"}}},{\"transform\":{\"headers\":{\"authorization\":\"Bearer y\","
                "\"X-A\":\"1\"}}}]},"
                "\"egressProxy\":{\"address\":\"proxy.test:1080\",\"username\":\"u\","
                "\"password\":\"secret\"},"
                "\"allowPublicTraffic\":false,\"maskRequestHost\":\"${PORT}-x.test\","
                "\"maxConnections\":50,\"egressBytesPerSecond\":1000000,\"unknown\":1}",
                &p) == 0);
  CHECK_INT(p.allow_internet, 0);
  REQUIRE(p.nallow_out == 6);
  CHECK_INT(p.allow_out[0].kind, ASBN_CIDR4);
  CHECK_INT(p.allow_out[0].prefix, 15);
  CHECK_INT(p.allow_out[1].prefix, 32);
  CHECK_INT(p.allow_out[2].addr[1], 0); /* host bits cleared */
  CHECK_INT(p.allow_out[3].kind, ASBN_CIDR6);
  CHECK_INT(p.allow_out[4].kind, ASBN_DOMAIN);
  CHECK_STR(p.allow_out[4].domain, "example.com");
  CHECK_INT(p.allow_out[5].kind, ASBN_WILDCARD);
  CHECK_STR(p.allow_out[5].domain, "example.org");
  REQUIRE(p.ndeny_out == 2);
  CHECK_INT(p.deny_out[1].prefix, 128);
  REQUIRE(p.nrules == 1);
  CHECK_INT((int)p.rules[0].nheaders, 2); /* later rule replaced Authorization */
  CHECK_STR(p.rules[0].headers[0].value, "Bearer y");
  CHECK_STR(p.egress_proxy_pass, "secret");
  CHECK_INT(p.allow_public_traffic, 0);
  CHECK_INT((int)p.max_connections, 50);
  CHECK_INT((int)p.egress_bytes_per_s, 1000000);
  char *s = show(&p);
  CHECK(strstr(s,
               "\"allowOut\":[\"198.18.0.0/15\",\"8.8.8.8\",\"10.0.0.0/8\",\"2001:db8::/32\","
               "\"example.com\",\"*.example.org\"]") != NULL);
  CHECK(strstr(s, "\"denyOut\":[\"198.18.5.0/24\",\"::1\"]") != NULL);
  CHECK(strstr(s, "\"egressProxy\":{\"address\":\"proxy.test:1080\",\"username\":\"u\"}") != NULL);
  CHECK(strstr(s, "secret") == NULL); /* the proxy password is never shown */
  CHECK(strstr(s,
               "\"api.example.com\":[{\"transform\":{\"headers\":{\"Authorization\":\"Bearer "
               "y\",\"X-A\":\"1\"}}}]") != NULL);
  /* shown back, parsed again: the same policy */
  asbn_policy q;
  cJSON *j = cJSON_Parse(s);
  REQUIRE(asbn_policy_parse(NULL, j, &q, E, sizeof E) == 0);
  cJSON_Delete(j);
  char *s2 = show(&q);
  CHECK_STR(s2, s);
  free(s2);
  asbn_policy_free(&q);
  /* copy */
  REQUIRE(asbn_policy_copy(&p, &q) == 0);
  s2 = show(&q);
  CHECK_STR(s2, s);
  CHECK_STR(q.egress_proxy_pass, "secret");
  free(s2);
  asbn_policy_free(&q);
  free(s);
  asbn_policy_free(&p);
}

static void bad(const char *allow, const char *net, const char *want) {
  asbn_policy p;
  memset(&p, 0x5a, sizeof p);
  if (parse(allow, net, &p) != -1) {
    ASBT_FAIL("accepted %s %s", allow ? allow : "-", net ? net : "-");
    asbn_policy_free(&p);
    return;
  }
  if (!strstr(E, want)) ASBT_FAIL("%s: message \"%s\" lacks \"%s\"", net ? net : allow, E, want);
}

TEST(errors) {
  bad("1", NULL, "allowInternetAccess must be a boolean");
  bad(NULL, "[]", "network must be an object");
  bad(NULL, "{\"allowOut\":\"1.2.3.4\"}", "network.allowOut must be an array");
  bad(NULL, "{\"allowOut\":[1]}", "must be an array of strings");
  bad(NULL, "{\"allowOut\":[\"1.2.3.4/33\"]}", "not a valid CIDR");
  bad(NULL, "{\"allowOut\":[\"1.2.3.4/\"]}", "not a valid CIDR");
  bad(NULL, "{\"allowOut\":[\"1.2.3.4/08\"]}", "not a valid CIDR");
  bad(NULL, "{\"allowOut\":[\"::1/129\"]}", "not a valid CIDR");
  bad(NULL, "{\"allowOut\":[\"1.2.3.256\"]}", "not a CIDR, IP address or domain");
  bad(NULL, "{\"allowOut\":[\"\"]}", "not a CIDR, IP address or domain");
  bad(NULL, "{\"allowOut\":[\"a..b\"]}", "not a CIDR, IP address or domain");
  bad(NULL, "{\"allowOut\":[\"-a.b\"]}", "not a CIDR, IP address or domain");
  bad(NULL, "{\"allowOut\":[\"a b.c\"]}", "not a CIDR, IP address or domain");
  bad(NULL, "{\"allowOut\":[\"*\"]}", "not a CIDR, IP address or domain");
  bad(NULL, "{\"allowOut\":[\"a.*.b\"]}", "not a CIDR, IP address or domain");
  bad(NULL, "{\"denyOut\":[\"example.com\"]}", "domains are allowed in allowOut only");
  bad(NULL, "{\"rules\":[]}", "network.rules must be an object");
  bad(NULL, "{\"rules\":{\"a.b\":{}}}", "must be an array of rules");
  bad(NULL, "{\"rules\":{\"a.b\":[{\"transform\":{\"headers\":{\"Bad Name\":\"x\"}}}]}}",
      "is not a header name");
  bad(NULL, "{\"rules\":{\"a.b\":[{\"transform\":{\"headers\":{\"X\":\"a\\r\\nB: c\"}}}]}}",
      "without control characters");
  bad(NULL, "{\"rules\":{\"a.b\":[{\"transform\":{\"headers\":{\"X\":1}}}]}}", "string value");
  bad(NULL, "{\"rules\":{\"A.b\":[],\"a.b\":[]}}", "appears twice");
  bad(NULL, "{\"rules\":{\"a.b:0\":[]}}", "is not a domain");
  bad(NULL, "{\"rules\":{\"a.b:65536\":[]}}", "is not a domain");
  bad(NULL, "{\"rules\":{\"a.b:\":[]}}", "is not a domain");
  bad(NULL, "{\"rules\":{\"a.b:8x\":[]}}", "is not a domain");
  bad(NULL, "{\"rules\":{\":80\":[]}}", "is not a domain");
  bad(NULL, "{\"rules\":{\"a.b:80\":[],\"A.b:80\":[]}}", "appears twice");
  bad(NULL, "{\"egressProxy\":\"x:1\"}", "must be an object");
  bad(NULL, "{\"egressProxy\":{}}", "address is required");
  bad(NULL, "{\"egressProxy\":{\"address\":\"x\"}}", "is not host:port");
  bad(NULL, "{\"egressProxy\":{\"address\":\"x:70000\"}}", "is not host:port");
  bad(NULL, "{\"egressProxy\":{\"address\":\"x:1\",\"password\":1}}", "password must be a string");
  bad(NULL, "{\"allowPublicTraffic\":\"no\"}", "must be a boolean");
  bad(NULL, "{\"maxConnections\":-1}", "whole number");
  bad(NULL, "{\"maxConnections\":1.5}", "whole number");
  /* too many entries */
  char big[256 * 12 + 64] = "{\"allowOut\":[";
  for (int i = 0; i < 257; i++)
    snprintf(big + strlen(big), sizeof big - strlen(big), "%s\"1.1.1.%d\"", i ? "," : "", i % 250);
  strcat(big, "]}");
  bad(NULL, big, "at most 256");
}

/* "name:port" rule keys: getHost's form on an engine whose domain has a
 * port (8080-<id>.localhost:49982); for that port only, never a name the
 * egress proxy matches; shown back as given. */
TEST(rule_keys_with_a_port) {
  asbn_policy p;
  REQUIRE(parse(NULL,
                "{\"rules\":{\"8080-abc.localhost:49982\":[{\"transform\":{\"headers\":"
                "{\"X-T\":\"v\"}}}],\"8080-abc.localhost\":[],\"*.Example.com:443\":[]}}",
                &p) == 0);
  REQUIRE(p.nrules == 3);
  CHECK_INT(p.rules[0].match.port, 49982);
  CHECK_STR(p.rules[0].match.domain, "8080-abc.localhost");
  CHECK(asbn_entry_matches_host(&p.rules[0].match, "8080-abc.localhost", 49982));
  CHECK(!asbn_entry_matches_host(&p.rules[0].match, "8080-abc.localhost", 49983));
  CHECK(!asbn_entry_matches_name(&p.rules[0].match, "8080-abc.localhost"));
  CHECK(asbn_entry_matches_host(&p.rules[1].match, "8080-abc.localhost", 1)); /* any port */
  CHECK(asbn_entry_matches_host(&p.rules[2].match, "a.example.com", 443));
  CHECK(!asbn_entry_matches_host(&p.rules[2].match, "example.com", 443));
  cJSON *j = asbn_policy_to_json(&p);
  const cJSON *rules = cJSON_GetObjectItemCaseSensitive(j, "rules");
  CHECK(cJSON_GetObjectItemCaseSensitive(rules, "8080-abc.localhost:49982") != NULL);
  CHECK(cJSON_GetObjectItemCaseSensitive(rules, "*.example.com:443") != NULL);
  asbn_policy c;
  REQUIRE(asbn_policy_copy(&p, &c) == 0);
  CHECK_INT(c.rules[0].match.port, 49982);
  asbn_policy_free(&c);
  cJSON_Delete(j);
  asbn_policy_free(&p);
}

TEST(matching) {
  asbn_policy p;
  REQUIRE(parse(NULL,
                "{\"allowOut\":[\"198.18.0.0/15\",\"2001:db8::/33\",\"example.com\","
                "\"*.example.org\",\"0.0.0.0/0\"]}",
                &p) == 0);
  uint8_t a[16];
  inet_pton(AF_INET, "198.19.255.1", a);
  CHECK(asbn_entry_contains(&p.allow_out[0], a, AF_INET));
  inet_pton(AF_INET, "198.20.0.1", a);
  CHECK(!asbn_entry_contains(&p.allow_out[0], a, AF_INET));
  CHECK(asbn_entry_contains(&p.allow_out[4], a, AF_INET));   /* /0 */
  CHECK(!asbn_entry_contains(&p.allow_out[0], a, AF_INET6)); /* family */
  inet_pton(AF_INET6, "2001:db8:7fff::1", a);
  CHECK(asbn_entry_contains(&p.allow_out[1], a, AF_INET6));
  inet_pton(AF_INET6, "2001:db8:8000::1", a);
  CHECK(!asbn_entry_contains(&p.allow_out[1], a, AF_INET6));
  CHECK(!asbn_entry_contains(&p.allow_out[2], a, AF_INET6)); /* a domain */
  CHECK(asbn_entry_matches_name(&p.allow_out[2], "example.com"));
  CHECK(!asbn_entry_matches_name(&p.allow_out[2], "a.example.com"));
  CHECK(!asbn_entry_matches_name(&p.allow_out[2], "xexample.com"));
  CHECK(asbn_entry_matches_name(&p.allow_out[3], "a.example.org"));
  CHECK(asbn_entry_matches_name(&p.allow_out[3], "a.b.example.org"));
  CHECK(!asbn_entry_matches_name(&p.allow_out[3], "example.org")); /* not itself */
  CHECK(!asbn_entry_matches_name(&p.allow_out[3], "badexample.org"));
  CHECK(!asbn_entry_matches_name(&p.allow_out[3], ".example.org"));
  CHECK(!asbn_entry_matches_name(&p.allow_out[0], "example.com")); /* a CIDR */
  asbn_policy_free(&p);
}

int main(void) {
  RUN(defaults);
  RUN(full);
  RUN(errors);
  RUN(rule_keys_with_a_port);
  RUN(matching);
  TEST_MAIN_END();
}
