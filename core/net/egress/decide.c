/* The egress decisions (decide.h). SPDX-License-Identifier: Apache-2.0 */
#include "decide.h"

#include "dnsmsg.h"

#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

int decide_in_cidr(const asbn_entry *e, const uint8_t *addr, int family) {
  if (!((e->kind == ASBN_CIDR4 && family == AF_INET) ||
        (e->kind == ASBN_CIDR6 && family == AF_INET6)))
    return 0;
  unsigned max = family == AF_INET ? 32 : 128, pfx = e->prefix > max ? max : e->prefix;
  unsigned full = pfx / 8, rest = pfx % 8;
  if (memcmp(e->addr, addr, full) != 0) return 0;
  if (rest) {
    uint8_t m = (uint8_t)(0xff << (8 - rest));
    if ((e->addr[full] & m) != (addr[full] & m)) return 0;
  }
  return 1;
}

int decide_name_match(const asbn_entry *e, const char *name) {
  if (!e->domain || !name) return 0;
  if (e->kind == ASBN_DOMAIN) return strcmp(e->domain, name) == 0;
  if (e->kind != ASBN_WILDCARD) return 0;
  size_t n = strlen(name), d = strlen(e->domain);
  return n > d + 1 && name[n - d - 1] == '.' && strcmp(name + n - d, e->domain) == 0;
}

typedef struct range {
  uint8_t a[16];
  unsigned pfx;
} range;

static const range blocked4[] = {
    {{0}, 8},        {{10}, 8},         {{100, 64}, 10},  {{127}, 8}, {{169, 254}, 16},
    {{172, 16}, 12}, {{192, 0, 0}, 24}, {{192, 168}, 16}, {{224}, 4}, {{240}, 4},
};
static const range blocked6[] = {
    {{0}, 127},         /* :: and ::1 */
    {{0xfc}, 7},        /* ULA */
    {{0xfe, 0x80}, 10}, /* link-local */
    {{0xff}, 8},        /* multicast */
    {{0x20, 0x01, 0x0d, 0xb8}, 32},
};

static int in_range(const range *r, const uint8_t *addr) {
  asbn_entry e;
  memset(&e, 0, sizeof e);
  e.kind = ASBN_CIDR6;
  memcpy(e.addr, r->a, 16);
  e.prefix = (uint8_t)r->pfx;
  return decide_in_cidr(&e, addr, AF_INET6);
}

int decide_always_blocked(const uint8_t *addr, int family) {
  uint8_t a[16];
  if (family == AF_INET6) {
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(addr, mapped, 12) == 0) return decide_always_blocked(addr + 12, AF_INET);
    for (size_t i = 0; i < sizeof blocked6 / sizeof *blocked6; i++)
      if (in_range(&blocked6[i], addr)) return 1;
    return 0;
  }
  for (size_t i = 0; i < sizeof blocked4 / sizeof *blocked4; i++) {
    memset(a, 0, sizeof a);
    memcpy(a, addr, 4);
    range r = blocked4[i];
    if (in_range(&r, a)) return 1;
  }
  return 0;
}

int decide_internet_off(const asbn_policy *p, int family) {
  if (!p->allow_internet) return 1;
  for (size_t i = 0; i < p->ndeny_out; i++) {
    const asbn_entry *e = &p->deny_out[i];
    if (e->prefix == 0 && ((e->kind == ASBN_CIDR4 && family == AF_INET) ||
                           (e->kind == ASBN_CIDR6 && family == AF_INET6)))
      return 1;
  }
  return 0;
}

int decide_name_allowed(const asbn_policy *p, const char *name) {
  for (size_t i = 0; i < p->nallow_out; i++)
    if (decide_name_match(&p->allow_out[i], name)) return 1;
  return 0;
}

int decide_rule_for(const asbn_policy *p, const char *name, const asbn_domain_rule **rule) {
  for (size_t i = 0; i < p->nrules; i++)
    if (decide_name_match(&p->rules[i].match, name)) {
      if (rule) *rule = &p->rules[i];
      return 1;
    }
  return 0;
}

int decide_dns(const asbn_policy *p, const char *name, int name_ok) {
  if (!decide_internet_off(p, AF_INET)) return 1;
  if (name_ok && dnsmsg_is_localhost(name)) return 1; /* loopback, never forwarded */
  return name_ok && decide_name_allowed(p, name);
}

decide_why decide_conn(const asbn_policy *p, const decide_conn_in *in) {
  for (size_t i = 0; i < p->nallow_out; i++)
    if (decide_in_cidr(&p->allow_out[i], in->dst, in->family)) return DECIDE_CIDR;
  if (in->dst_is_local || decide_always_blocked(in->dst, in->family)) return DECIDE_BLOCKED;
  int named = in->name && in->name[0];
  if (named && decide_name_allowed(p, in->name)) {
    if (in->name_has_dst) return DECIDE_DOMAIN;
    /* An allowed name on an address the resolver did not give for it:
     * fine only where the open internet reaches anyway. */
    if (decide_internet_off(p, in->family)) return DECIDE_MISMATCH;
  }
  for (size_t i = 0; i < p->ndeny_out; i++)
    if (decide_in_cidr(&p->deny_out[i], in->dst, in->family)) return DECIDE_DENIED;
  if (!p->allow_internet) return DECIDE_DENIED;
  return DECIDE_INTERNET;
}

int decide_needs_name(const asbn_policy *p, int family, const uint8_t *dst) {
  if (p->nrules) return 1;
  int domains = 0;
  for (size_t i = 0; i < p->nallow_out && !domains; i++)
    domains = p->allow_out[i].kind == ASBN_DOMAIN || p->allow_out[i].kind == ASBN_WILDCARD;
  if (!domains) return 0;
  /* Allowed without a name (an allowOut CIDR, or the open internet): a
   * name cannot refuse it, so nothing is read first and protocols where
   * the server speaks first are not held up. */
  decide_conn_in in = {.family = family, .dst = dst};
  return decide_conn(p, &in) < 0;
}
