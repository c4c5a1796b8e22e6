/* What the egress services allow, as pure functions of a sandbox's policy
 * (net/policy.h's semantics) and what is known about one query or one
 * connection. Kept apart from the sockets so the unit test can walk the
 * whole table. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_DECIDE_H
#define ASB_NET_EGRESS_DECIDE_H

#include <stdint.h>

#include "net/policy.h"

/* 1 if addr (4 or 16 bytes, network order) is in the CIDR entry e. */
int decide_in_cidr(const asbn_entry *e, const uint8_t *addr, int family);
/* 1 if name (normalised) matches the domain entry e: "example.com" that
 * name only, "*.example.com" every name under it but not itself. */
int decide_name_match(const asbn_entry *e, const char *name);
/* 1 if addr is in a range no policy opens except by an allowOut CIDR
 * naming it: loopback, link-local, private, shared, ULA, multicast,
 * unspecified, IPv4-mapped forms of those. */
int decide_always_blocked(const uint8_t *addr, int family);
/* 1 if the policy leaves no open internet: allow_internet 0, or a denyOut
 * entry covering the whole family (0.0.0.0/0 or ::/0). */
int decide_internet_off(const asbn_policy *p, int family);
/* 1 if a name matches an allowOut domain/wildcard entry. */
int decide_name_allowed(const asbn_policy *p, const char *name);
/* 1 if the policy has a header rule for this name (the first match in
 * *rule), 0 if not. */
int decide_rule_for(const asbn_policy *p, const char *name, const asbn_domain_rule **rule);

/* The resolver: 1 answer the query for name (forward it; a localhost
 * name's the resolver answers itself), 0 answer REFUSED. Internet off:
 * only names an allowOut domain matches are resolved (no DNS to arbitrary
 * names: it is a tunnel out), and localhost names (loopback, RFC 6761:
 * nothing leaves). */
int decide_dns(const asbn_policy *p, const char *name, int name_ok);

typedef struct decide_conn_in {
  int family;
  const uint8_t *dst; /* original destination */
  int dst_is_local;   /* one of the engine netns's own addresses */
  const char *name;   /* SNI / Host, or NULL (raw IP, other protocol) */
  int name_has_dst;   /* the resolver gave this sandbox dst for name */
} decide_conn_in;

typedef enum decide_why {
  DECIDE_CIDR = 1,     /* allowed: an allowOut CIDR names dst */
  DECIDE_DOMAIN,       /* allowed: allowOut domain + resolver's answer */
  DECIDE_INTERNET,     /* allowed: open internet, no deny applies */
  DECIDE_BLOCKED = -1, /* refused: always-blocked range or local address */
  DECIDE_DENIED = -2,  /* refused: denyOut, or internet off */
  DECIDE_MISMATCH = -3 /* refused: an allowed name on an address not given for it */
} decide_why;

/* The proxy: > 0 allowed, < 0 refused (decide_why). */
decide_why decide_conn(const asbn_policy *p, const decide_conn_in *in);
/* 1 if the decision for this connection could depend on its name (header
 * rules exist, or domain allowances and it is refused without a name), so
 * the proxy must read the first bytes; 0 if decide_conn with name NULL is
 * final. */
int decide_needs_name(const asbn_policy *p, int family, const uint8_t *dst);

#endif
