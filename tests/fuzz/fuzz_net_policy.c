/* Fuzz the network policy parser (core/net/policy.c): the input is a JSON
 * document, used as the create body (its allowInternetAccess and network)
 * and as the network object itself. Invariants: a refusal has a message;
 * an accepted policy shows back as JSON that parses to the same policy
 * (same JSON again), its copy shows the same; every CIDR entry contains its
 * own address and no host bits; every domain is lower case without a
 * trailing dot and matches itself (or, a wildcard, a name under it).
 * SPDX-License-Identifier: Apache-2.0 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "net/policy.h"

static char *show(const asbn_policy *p) {
  cJSON *j = asbn_policy_to_json(p);
  FUZZ_CHECK(j != NULL);
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  FUZZ_CHECK(s != NULL);
  return s;
}

static void check_entry(const asbn_entry *e) {
  if (e->kind == ASBN_CIDR4 || e->kind == ASBN_CIDR6) {
    int fam = e->kind == ASBN_CIDR4 ? AF_INET : AF_INET6;
    FUZZ_CHECK(e->prefix <= (fam == AF_INET ? 32 : 128));
    FUZZ_CHECK(asbn_entry_contains(e, e->addr, fam));
    FUZZ_CHECK(!asbn_entry_matches_name(e, "example.com"));
    return;
  }
  FUZZ_CHECK(e->domain && *e->domain);
  size_t n = strlen(e->domain);
  FUZZ_CHECK(n <= 253 && e->domain[n - 1] != '.');
  for (const char *c = e->domain; *c; c++) FUZZ_CHECK(!isupper((unsigned char)*c));
  if (e->kind == ASBN_DOMAIN) {
    FUZZ_CHECK(asbn_entry_matches_name(e, e->domain));
  } else {
    char *sub = malloc(n + 3);
    memcpy(sub, "a.", 2);
    memcpy(sub + 2, e->domain, n + 1);
    FUZZ_CHECK(asbn_entry_matches_name(e, sub));
    FUZZ_CHECK(!asbn_entry_matches_name(e, e->domain));
    free(sub);
  }
}

static void one(const cJSON *allow, const cJSON *net) {
  asbn_policy p;
  char err[256];
  if (asbn_policy_parse(allow, net, &p, err, sizeof err) != 0) {
    FUZZ_CHECK(err[0] != '\0');
    return;
  }
  for (size_t i = 0; i < p.nallow_out; i++) check_entry(&p.allow_out[i]);
  for (size_t i = 0; i < p.ndeny_out; i++) {
    check_entry(&p.deny_out[i]);
    FUZZ_CHECK(p.deny_out[i].kind == ASBN_CIDR4 || p.deny_out[i].kind == ASBN_CIDR6);
  }
  for (size_t i = 0; i < p.nrules; i++) check_entry(&p.rules[i].match);
  char *s = show(&p);
  cJSON *j = cJSON_Parse(s);
  FUZZ_CHECK(j != NULL);
  asbn_policy q;
  FUZZ_CHECK(asbn_policy_parse(allow, j, &q, err, sizeof err) == 0);
  cJSON_Delete(j);
  char *s2 = show(&q);
  FUZZ_CHECK(strcmp(s, s2) == 0);
  free(s2);
  asbn_policy_free(&q);
  FUZZ_CHECK(asbn_policy_copy(&p, &q) == 0);
  s2 = show(&q);
  FUZZ_CHECK(strcmp(s, s2) == 0);
  free(s2);
  asbn_policy_free(&q);
  free(s);
  asbn_policy_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
  if (!doc) return 0;
  one(cJSON_GetObjectItemCaseSensitive(doc, "allowInternetAccess"),
      cJSON_GetObjectItemCaseSensitive(doc, "network"));
  one(NULL, doc);
  cJSON_Delete(doc);
  return 0;
}
