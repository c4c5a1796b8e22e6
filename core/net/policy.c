/* The network policy (policy.h): E2B's allowInternetAccess and network
 * objects parsed and checked once, shown back, matched and copied.
 * Addresses are parsed with inet_pton (no hand-written address parser);
 * what is hand-written here is only the shape checks E2B's schema implies.
 * SPDX-License-Identifier: Apache-2.0 */
#include "policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define MAX_ENTRIES 256     /* allowOut, denyOut each */
#define MAX_RULE_DOMAINS 64 /* keys of network.rules */
#define MAX_HEADERS 32      /* headers per domain */
#define MAX_HEADER_VALUE 8192

/* A CIDR or a bare address. 0 ok, -1 not an address at all. */
static int parse_cidr(const char *s, asbn_entry *e) {
  char buf[64];
  size_t n = strlen(s);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, s, n + 1);
  char *slash = strchr(buf, '/');
  long prefix = -1;
  if (slash) {
    *slash = '\0';
    const char *p = slash + 1;
    if (!*p || strlen(p) > 3) return -1;
    for (const char *c = p; *c; c++)
      if (*c < '0' || *c > '9') return -1;
    if (p[0] == '0' && p[1]) return -1; /* no leading zeros */
    prefix = strtol(p, NULL, 10);
  }
  memset(e, 0, sizeof *e);
  if (inet_pton(AF_INET, buf, e->addr) == 1) {
    if (prefix > 32) return -1;
    e->kind = ASBN_CIDR4;
    e->prefix = (uint8_t)(prefix < 0 ? 32 : prefix);
  } else if (inet_pton(AF_INET6, buf, e->addr) == 1) {
    if (prefix > 128) return -1;
    e->kind = ASBN_CIDR6;
    e->prefix = (uint8_t)(prefix < 0 ? 128 : prefix);
  } else {
    return -1;
  }
  /* host bits cleared: 10.1.2.3/8 means 10.0.0.0/8, as nft and E2B take it */
  int bytes = e->kind == ASBN_CIDR4 ? 4 : 16;
  for (int i = 0; i < bytes; i++) {
    int keep = (int)e->prefix - i * 8;
    if (keep >= 8) continue;
    e->addr[i] &= keep <= 0 ? 0 : (uint8_t)(0xff << (8 - keep));
  }
  return 0;
}

/* A DNS name: labels of [a-z0-9_-], 1..63 each, 253 in all, lower-cased,
 * one trailing dot dropped. "*." prefix for a wildcard if allowed. */
static int parse_domain(const char *s, asbn_entry *e, int wildcard_ok) {
  memset(e, 0, sizeof *e);
  e->kind = ASBN_DOMAIN;
  if (s[0] == '*') {
    if (!wildcard_ok || s[1] != '.') return -1;
    e->kind = ASBN_WILDCARD;
    s += 2;
  }
  size_t n = strlen(s);
  if (n && s[n - 1] == '.') n--;
  if (n == 0 || n > 253) return -1;
  char *d = malloc(n + 1);
  if (!d) return -1;
  size_t label = 0;
  int alpha = 0; /* a name with a letter somewhere (not an address) */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '.') {
      if (label == 0 || d[i - 1] == '-') goto bad;
      label = 0;
    } else if (isalnum(c) || c == '-' || c == '_') {
      if (c == '-' && label == 0) goto bad;
      if (++label > 63) goto bad;
      if (!isdigit(c)) alpha = 1;
      c = (unsigned char)tolower(c);
    } else {
      goto bad;
    }
    d[i] = (char)c;
  }
  if (label == 0 || d[n - 1] == '-' || !alpha) goto bad;
  d[n] = '\0';
  e->domain = d;
  return 0;
bad:
  free(d);
  return -1;
}

static void entry_free(asbn_entry *e) {
  free(e->domain);
  e->domain = NULL;
}

static int parse_list(const cJSON *arr, const char *what, int domains_ok, asbn_entry **out,
                      size_t *nout, char *err, size_t errlen) {
  *out = NULL;
  *nout = 0;
  if (!arr || cJSON_IsNull(arr)) return 0;
  if (!cJSON_IsArray(arr))
    return asbi_errf(err, errlen, "network.%s must be an array of strings", what);
  int n = cJSON_GetArraySize(arr);
  if (n > MAX_ENTRIES)
    return asbi_errf(err, errlen, "network.%s has %d entries (at most %d)", what, n, MAX_ENTRIES);
  if (n == 0) return 0;
  asbn_entry *v = calloc((size_t)n, sizeof *v);
  if (!v) return asbi_errf(err, errlen, "out of memory");
  size_t k = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, arr) {
    if (!cJSON_IsString(it) || !it->valuestring) goto fail_type;
    const char *s = it->valuestring;
    if (parse_cidr(s, &v[k]) == 0) {
      k++;
      continue;
    }
    if (strchr(s, '/') || strchr(s, ':')) {
      asbi_errf(err, errlen, "network.%s: \"%.80s\" is not a valid CIDR or IP address", what, s);
      goto fail_out;
    }
    if (!domains_ok) {
      asbi_errf(err, errlen,
                "network.%s: \"%.80s\" is not a CIDR or IP address (domains are allowed in "
                "allowOut only)",
                what, s);
      goto fail_out;
    }
    if (parse_domain(s, &v[k], 1) != 0) {
      asbi_errf(err, errlen, "network.%s: \"%.80s\" is not a CIDR, IP address or domain", what, s);
      goto fail_out;
    }
    k++;
  }
  *out = v;
  *nout = k;
  return 0;
fail_type:
  asbi_errf(err, errlen, "network.%s must be an array of strings", what);
fail_out:
  for (size_t i = 0; i < k; i++) entry_free(&v[i]);
  free(v);
  return -1;
}

static int header_name_ok(const char *s) {
  if (!*s || strlen(s) > 256) return 0;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    if (!isalnum(*c) && !strchr("!#$%&'*+-.^_`|~", *c)) return 0;
  return 1;
}

static int header_value_ok(const char *s) {
  if (strlen(s) > MAX_HEADER_VALUE) return 0;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    if ((*c < 0x20 && *c != '\t') || *c == 0x7f) return 0;
  return 1;
}

/* Frees a string that may hold a secret (a header rule's value after the
 * egress services resolved it, the upstream proxy's password), wiped
 * first so it does not linger in freed memory. */
static void secret_free(char *s) {
  if (!s) return;
  memset(s, 0, strlen(s));
  free(s);
}

static void rule_free(asbn_domain_rule *r) {
  entry_free(&r->match);
  for (size_t i = 0; i < r->nheaders; i++) {
    free(r->headers[i].name);
    secret_free(r->headers[i].value);
  }
  free(r->headers);
  r->headers = NULL;
  r->nheaders = 0;
}

/* Sets name: value in r (a later rule object for the same domain replaces
 * an earlier one's header of the same name, case-insensitively). */
static int rule_set_header(asbn_domain_rule *r, const char *name, const char *value) {
  for (size_t i = 0; i < r->nheaders; i++)
    if (!strcasecmp(r->headers[i].name, name)) {
      char *v = strdup(value);
      if (!v) return -1;
      free(r->headers[i].value);
      r->headers[i].value = v;
      return 0;
    }
  asbn_header_rule *h = realloc(r->headers, (r->nheaders + 1) * sizeof *h);
  if (!h) return -1;
  r->headers = h;
  h[r->nheaders].name = strdup(name);
  h[r->nheaders].value = strdup(value);
  if (!h[r->nheaders].name || !h[r->nheaders].value) {
    free(h[r->nheaders].name);
    free(h[r->nheaders].value);
    return -1;
  }
  r->nheaders++;
  return 0;
}

/* A rules key: a domain, or a domain with ":port" — what getHost gives
 * for a sandbox of an engine whose domain has a port ("localhost:49982");
 * such a rule applies to that port only, through the engine's portals
 * (core/engine/portal.c), never to the egress proxy's names. */
static int parse_rule_key(const char *s, asbn_entry *e) {
  const char *colon = strrchr(s, ':');
  if (!colon) return parse_domain(s, e, 1);
  unsigned long port = 0;
  size_t nd = strlen(colon + 1);
  if (nd < 1 || nd > 5) return -1;
  for (const char *c = colon + 1; *c; c++) {
    if (*c < '0' || *c > '9') return -1;
    port = port * 10 + (unsigned long)(*c - '0');
  }
  if (port < 1 || port > 65535 || colon == s) return -1;
  char name[256];
  size_t n = (size_t)(colon - s);
  if (n >= sizeof name) return -1;
  memcpy(name, s, n);
  name[n] = '\0';
  if (parse_domain(name, e, 1) != 0) return -1;
  e->port = (uint16_t)port;
  return 0;
}

/* network.rules: {"domain": [{"transform": {"headers": {name: value}}}]} */
static int parse_rules(const cJSON *obj, asbn_policy *p, char *err, size_t errlen) {
  if (!obj || cJSON_IsNull(obj)) return 0;
  if (!cJSON_IsObject(obj)) return asbi_errf(err, errlen, "network.rules must be an object");
  int n = cJSON_GetArraySize(obj);
  if (n > MAX_RULE_DOMAINS)
    return asbi_errf(err, errlen, "network.rules has %d domains (at most %d)", n, MAX_RULE_DOMAINS);
  if (n == 0) return 0;
  p->rules = calloc((size_t)n, sizeof *p->rules);
  if (!p->rules) return asbi_errf(err, errlen, "out of memory");
  const cJSON *dom;
  cJSON_ArrayForEach(dom, obj) {
    asbn_domain_rule *r = &p->rules[p->nrules];
    if (!dom->string || parse_rule_key(dom->string, &r->match) != 0)
      return asbi_errf(err, errlen, "network.rules: \"%.80s\" is not a domain",
                       dom->string ? dom->string : "");
    p->nrules++;
    for (size_t i = 0; i + 1 < p->nrules; i++)
      if (p->rules[i].match.kind == r->match.kind && p->rules[i].match.port == r->match.port &&
          !strcmp(p->rules[i].match.domain, r->match.domain))
        return asbi_errf(err, errlen, "network.rules: \"%.80s\" appears twice", dom->string);
    if (!cJSON_IsArray(dom))
      return asbi_errf(err, errlen, "network.rules[\"%.80s\"] must be an array of rules",
                       dom->string);
    const cJSON *rule;
    cJSON_ArrayForEach(rule, dom) {
      if (!cJSON_IsObject(rule))
        return asbi_errf(err, errlen, "network.rules[\"%.80s\"]: a rule must be an object",
                         dom->string);
      const cJSON *tr = cJSON_GetObjectItemCaseSensitive(rule, "transform");
      if (!tr || cJSON_IsNull(tr)) continue;
      if (!cJSON_IsObject(tr))
        return asbi_errf(err, errlen, "network.rules[\"%.80s\"]: transform must be an object",
                         dom->string);
      const cJSON *hs = cJSON_GetObjectItemCaseSensitive(tr, "headers");
      if (!hs || cJSON_IsNull(hs)) continue;
      if (!cJSON_IsObject(hs))
        return asbi_errf(err, errlen,
                         "network.rules[\"%.80s\"]: transform.headers must be an object",
                         dom->string);
      const cJSON *h;
      cJSON_ArrayForEach(h, hs) {
        if (!h->string || !header_name_ok(h->string))
          return asbi_errf(err, errlen, "network.rules[\"%.80s\"]: \"%.80s\" is not a header name",
                           dom->string, h->string ? h->string : "");
        if (!cJSON_IsString(h) || !h->valuestring || !header_value_ok(h->valuestring))
          return asbi_errf(err, errlen,
                           "network.rules[\"%.80s\"]: header %.80s needs a string value without "
                           "control characters (at most %d bytes)",
                           dom->string, h->string, MAX_HEADER_VALUE);
        if (rule_set_header(r, h->string, h->valuestring) != 0)
          return asbi_errf(err, errlen, "out of memory");
        if (r->nheaders > MAX_HEADERS)
          return asbi_errf(err, errlen, "network.rules[\"%.80s\"]: more than %d headers",
                           dom->string, MAX_HEADERS);
      }
    }
  }
  return 0;
}

static int get_string(const cJSON *o, const char *key, size_t max, char **out, const char *what,
                      char *err, size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = NULL;
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsString(v) || !v->valuestring)
    return asbi_errf(err, errlen, "%s must be a string", what);
  if (strlen(v->valuestring) > max)
    return asbi_errf(err, errlen, "%s is longer than %zu bytes", what, max);
  for (const unsigned char *c = (const unsigned char *)v->valuestring; *c; c++)
    if (*c < 0x20 || *c == 0x7f) return asbi_errf(err, errlen, "%s has a control character", what);
  *out = strdup(v->valuestring);
  return *out ? 0 : asbi_errf(err, errlen, "out of memory");
}

/* "host:port" or "[v6]:port", port 1..65535 */
static int proxy_addr_ok(const char *s) {
  const char *colon;
  if (s[0] == '[') {
    const char *end = strchr(s, ']');
    if (!end || end[1] != ':') return 0;
    char a[64];
    size_t n = (size_t)(end - s - 1);
    if (n == 0 || n >= sizeof a) return 0;
    memcpy(a, s + 1, n);
    a[n] = '\0';
    struct in6_addr x;
    if (inet_pton(AF_INET6, a, &x) != 1) return 0;
    colon = end + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon || colon == s) return 0;
    for (const char *c = s; c < colon; c++)
      if (!isalnum((unsigned char)*c) && *c != '.' && *c != '-' && *c != '_') return 0;
  }
  const char *p = colon + 1;
  if (!*p || strlen(p) > 5) return 0;
  for (const char *c = p; *c; c++)
    if (!isdigit((unsigned char)*c)) return 0;
  long port = strtol(p, NULL, 10);
  return port >= 1 && port <= 65535;
}

static int parse_proxy(const cJSON *v, asbn_policy *p, char *err, size_t errlen) {
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsObject(v))
    return asbi_errf(err, errlen,
                     "network.egressProxy must be an object {address, username, password}");
  if (get_string(v, "address", 512, &p->egress_proxy_addr, "network.egressProxy.address", err,
                 errlen) != 0)
    return -1;
  if (!p->egress_proxy_addr)
    return asbi_errf(err, errlen, "network.egressProxy.address is required (host:port)");
  if (!proxy_addr_ok(p->egress_proxy_addr))
    return asbi_errf(err, errlen, "network.egressProxy.address \"%.80s\" is not host:port",
                     p->egress_proxy_addr);
  if (get_string(v, "username", 255, &p->egress_proxy_user, "network.egressProxy.username", err,
                 errlen) != 0 ||
      get_string(v, "password", 255, &p->egress_proxy_pass, "network.egressProxy.password", err,
                 errlen) != 0)
    return -1;
  return 0;
}

static int get_bool(const cJSON *v, int *out, const char *what, char *err, size_t errlen) {
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsBool(v)) return asbi_errf(err, errlen, "%s must be a boolean", what);
  *out = cJSON_IsTrue(v) ? 1 : 0;
  return 0;
}

static int get_uint(const cJSON *v, uint64_t max, uint64_t *out, const char *what, char *err,
                    size_t errlen) {
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > (double)max ||
      v->valuedouble != (double)(uint64_t)v->valuedouble)
    return asbi_errf(err, errlen, "%s must be a whole number from 0 to %llu", what,
                     (unsigned long long)max);
  *out = (uint64_t)v->valuedouble;
  return 0;
}

int asbn_policy_parse(const cJSON *allow_internet, const cJSON *network, asbn_policy *out,
                      char *err, size_t errlen) {
  asbn_policy p;
  memset(&p, 0, sizeof p);
  p.allow_internet = 1;
  p.allow_public_traffic = 1;
  if (err && errlen) err[0] = '\0';
  if (get_bool(allow_internet, &p.allow_internet, "allowInternetAccess", err, errlen) != 0)
    goto bad;
  if (network && !cJSON_IsNull(network)) {
    if (!cJSON_IsObject(network)) {
      asbi_errf(err, errlen, "network must be an object");
      goto bad;
    }
    if (parse_list(cJSON_GetObjectItemCaseSensitive(network, "allowOut"), "allowOut", 1,
                   &p.allow_out, &p.nallow_out, err, errlen) != 0 ||
        parse_list(cJSON_GetObjectItemCaseSensitive(network, "denyOut"), "denyOut", 0, &p.deny_out,
                   &p.ndeny_out, err, errlen) != 0 ||
        parse_rules(cJSON_GetObjectItemCaseSensitive(network, "rules"), &p, err, errlen) != 0 ||
        parse_proxy(cJSON_GetObjectItemCaseSensitive(network, "egressProxy"), &p, err, errlen) !=
            0 ||
        get_bool(cJSON_GetObjectItemCaseSensitive(network, "allowPublicTraffic"),
                 &p.allow_public_traffic, "network.allowPublicTraffic", err, errlen) != 0 ||
        get_string(network, "maskRequestHost", 253, &p.mask_request_host, "network.maskRequestHost",
                   err, errlen) != 0)
      goto bad;
    uint64_t conns = 0;
    if (get_uint(cJSON_GetObjectItemCaseSensitive(network, "egressBytesPerSecond"),
                 (uint64_t)1 << 40, &p.egress_bytes_per_s, "network.egressBytesPerSecond", err,
                 errlen) != 0 ||
        get_uint(cJSON_GetObjectItemCaseSensitive(network, "maxConnections"), 1000000, &conns,
                 "network.maxConnections", err, errlen) != 0)
      goto bad;
    p.max_connections = (unsigned)conns;
  }
  *out = p;
  return 0;
bad:
  asbn_policy_free(&p);
  return -1;
}

static char *entry_str(const asbn_entry *e, char *buf, size_t len) {
  char a[INET6_ADDRSTRLEN];
  switch (e->kind) {
    case ASBN_CIDR4:
      inet_ntop(AF_INET, e->addr, a, sizeof a);
      if (e->prefix == 32)
        snprintf(buf, len, "%s", a);
      else
        snprintf(buf, len, "%s/%u", a, e->prefix);
      break;
    case ASBN_CIDR6:
      inet_ntop(AF_INET6, e->addr, a, sizeof a);
      if (e->prefix == 128)
        snprintf(buf, len, "%s", a);
      else
        snprintf(buf, len, "%s/%u", a, e->prefix);
      break;
    case ASBN_DOMAIN:
      snprintf(buf, len, "%s", e->domain);
      break;
    case ASBN_WILDCARD:
      snprintf(buf, len, "*.%s", e->domain);
      break;
  }
  if (e->port) {
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, ":%u", (unsigned)e->port);
  }
  return buf;
}

static void add_list(cJSON *o, const char *key, const asbn_entry *v, size_t n) {
  if (!n) return;
  cJSON *arr = cJSON_AddArrayToObject(o, key);
  char buf[300];
  for (size_t i = 0; arr && i < n; i++)
    cJSON_AddItemToArray(arr, cJSON_CreateString(entry_str(&v[i], buf, sizeof buf)));
}

cJSON *asbn_policy_to_json(const asbn_policy *p) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  add_list(o, "allowOut", p->allow_out, p->nallow_out);
  add_list(o, "denyOut", p->deny_out, p->ndeny_out);
  if (p->nrules) {
    cJSON *rules = cJSON_AddObjectToObject(o, "rules");
    char buf[300];
    for (size_t i = 0; rules && i < p->nrules; i++) {
      cJSON *arr = cJSON_AddArrayToObject(rules, entry_str(&p->rules[i].match, buf, sizeof buf));
      cJSON *rule = cJSON_CreateObject();
      cJSON_AddItemToArray(arr, rule);
      cJSON *hs = cJSON_AddObjectToObject(cJSON_AddObjectToObject(rule, "transform"), "headers");
      for (size_t k = 0; hs && k < p->rules[i].nheaders; k++)
        cJSON_AddStringToObject(hs, p->rules[i].headers[k].name, p->rules[i].headers[k].value);
    }
  }
  if (p->egress_proxy_addr) {
    /* the password is a credential: never shown back */
    cJSON *x = cJSON_AddObjectToObject(o, "egressProxy");
    cJSON_AddStringToObject(x, "address", p->egress_proxy_addr);
    if (p->egress_proxy_user) cJSON_AddStringToObject(x, "username", p->egress_proxy_user);
  }
  cJSON_AddBoolToObject(o, "allowPublicTraffic", p->allow_public_traffic != 0);
  if (p->mask_request_host) cJSON_AddStringToObject(o, "maskRequestHost", p->mask_request_host);
  if (p->egress_bytes_per_s)
    cJSON_AddNumberToObject(o, "egressBytesPerSecond", (double)p->egress_bytes_per_s);
  if (p->max_connections) cJSON_AddNumberToObject(o, "maxConnections", p->max_connections);
  return o;
}

int asbn_entry_contains(const asbn_entry *e, const uint8_t *addr, int family) {
  if (!((e->kind == ASBN_CIDR4 && family == AF_INET) ||
        (e->kind == ASBN_CIDR6 && family == AF_INET6)))
    return 0;
  int full = e->prefix / 8, rest = e->prefix % 8;
  if (memcmp(e->addr, addr, (size_t)full) != 0) return 0;
  if (rest) {
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    if ((e->addr[full] & mask) != (addr[full] & mask)) return 0;
  }
  return 1;
}

int asbn_entry_matches_host(const asbn_entry *e, const char *name, unsigned port) {
  if (e->port && e->port != port) return 0;
  asbn_entry any = *e;
  any.port = 0;
  return asbn_entry_matches_name(&any, name);
}

int asbn_entry_matches_name(const asbn_entry *e, const char *name) {
  if (!name || !e->domain || e->port) return 0;
  if (e->kind == ASBN_DOMAIN) return strcmp(e->domain, name) == 0;
  if (e->kind != ASBN_WILDCARD) return 0;
  size_t n = strlen(name), d = strlen(e->domain);
  /* every name under it, not itself: "a.example.com" for "*.example.com" */
  return n > d + 1 && name[n - d - 1] == '.' && strcmp(name + n - d, e->domain) == 0;
}

static int copy_entries(const asbn_entry *src, size_t n, asbn_entry **dst) {
  *dst = NULL;
  if (!n) return 0;
  *dst = calloc(n, sizeof **dst);
  if (!*dst) return -1;
  for (size_t i = 0; i < n; i++) {
    (*dst)[i] = src[i];
    (*dst)[i].domain = NULL;
    if (src[i].domain && !((*dst)[i].domain = strdup(src[i].domain))) return -1;
  }
  return 0;
}

static int dup_opt(const char *s, char **out) {
  *out = NULL;
  if (!s) return 0;
  *out = strdup(s);
  return *out ? 0 : -1;
}

int asbn_policy_copy(const asbn_policy *src, asbn_policy *dst) {
  asbn_policy p;
  memset(&p, 0, sizeof p);
  p.allow_internet = src->allow_internet;
  p.allow_public_traffic = src->allow_public_traffic;
  p.egress_bytes_per_s = src->egress_bytes_per_s;
  p.max_connections = src->max_connections;
  p.nallow_out = src->nallow_out;
  p.ndeny_out = src->ndeny_out;
  if (copy_entries(src->allow_out, src->nallow_out, &p.allow_out) != 0 ||
      copy_entries(src->deny_out, src->ndeny_out, &p.deny_out) != 0)
    goto oom;
  if (src->nrules) {
    p.rules = calloc(src->nrules, sizeof *p.rules);
    if (!p.rules) goto oom;
    for (size_t i = 0; i < src->nrules; i++) {
      asbn_domain_rule *r = &p.rules[i];
      p.nrules++;
      r->match = src->rules[i].match;
      r->match.domain = NULL;
      if (dup_opt(src->rules[i].match.domain, &r->match.domain) != 0) goto oom;
      for (size_t k = 0; k < src->rules[i].nheaders; k++)
        if (rule_set_header(r, src->rules[i].headers[k].name, src->rules[i].headers[k].value) != 0)
          goto oom;
    }
  }
  if (dup_opt(src->egress_proxy_addr, &p.egress_proxy_addr) != 0 ||
      dup_opt(src->egress_proxy_user, &p.egress_proxy_user) != 0 ||
      dup_opt(src->egress_proxy_pass, &p.egress_proxy_pass) != 0 ||
      dup_opt(src->mask_request_host, &p.mask_request_host) != 0)
    goto oom;
  *dst = p;
  return 0;
oom:
  asbn_policy_free(&p);
  errno = ENOMEM;
  return -1;
}

void asbn_policy_free(asbn_policy *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nallow_out; i++) entry_free(&p->allow_out[i]);
  free(p->allow_out);
  for (size_t i = 0; i < p->ndeny_out; i++) entry_free(&p->deny_out[i]);
  free(p->deny_out);
  for (size_t i = 0; i < p->nrules; i++) rule_free(&p->rules[i]);
  free(p->rules);
  free(p->egress_proxy_addr);
  free(p->egress_proxy_user);
  secret_free(p->egress_proxy_pass);
  free(p->mask_request_host);
  memset(p, 0, sizeof *p);
}
