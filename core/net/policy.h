/* A sandbox's network policy (issue 17): what E2B's create options
 * `allowInternetAccess` and `network` {allowOut, denyOut, rules,
 * egressProxy, allowPublicTraffic, maskRequestHost} and
 * `PUT /sandboxes/{id}/network` say, parsed and checked once (policy.c),
 * then handed to the datapath (datapath.c: veth, nftables) and to the
 * egress services (egress/: the resolver and the proxy).
 *
 * Semantics (E2B's): an allowOut entry beats a denyOut entry;
 * allow_internet = 0 is "deny 0.0.0.0/0 and ::/0" with allowOut still
 * applying. Whatever the policy, these stay unreachable unless an allowOut
 * CIDR/IP entry names them: other sandboxes, the engine's host addresses
 * and services, 169.254.0.0/16 and fe80::/10, the host's private networks
 * (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7). A domain allowance
 * ("example.com", "*.example.com") opens only HTTP (Host) and TLS (SNI)
 * connections naming that domain, made to an address the engine's
 * resolver gave this sandbox for it; never a raw-IP connection.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_POLICY_H
#define ASB_NET_POLICY_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

typedef enum asbn_entry_kind {
  ASBN_CIDR4,   /* 198.18.0.0/15, or one address (/32) */
  ASBN_CIDR6,   /* 2001:db8::/32, or one address (/128) */
  ASBN_DOMAIN,  /* "example.com": that name only */
  ASBN_WILDCARD /* "*.example.com": every name under it, not itself */
} asbn_entry_kind;

typedef struct asbn_entry {
  asbn_entry_kind kind;
  uint8_t addr[16]; /* network order; the first 4 bytes for CIDR4 */
  uint8_t prefix;   /* CIDR prefix length */
  char *domain;     /* lower case, no trailing dot, without "*." (domains) */
  uint16_t port;    /* network.rules keys only: "name:port" (a sandbox's host on an
                       engine whose domain has a port), 0 = any port */
} asbn_entry;

typedef struct asbn_header_rule {
  char *name;  /* header to set, e.g. "Authorization" */
  char *value; /* its value; a reference to a stored secret (E2B's /secrets:
                  the marker syntax the E2B SDKs use) is replaced by the
                  secret's value at egress only, never shown */
} asbn_header_rule;

typedef struct asbn_domain_rule {
  asbn_entry match; /* ASBN_DOMAIN or ASBN_WILDCARD */
  asbn_header_rule *headers;
  size_t nheaders;
} asbn_domain_rule;

typedef struct asbn_policy {
  int allow_internet;    /* E2B's allowInternetAccess, default 1 */
  asbn_entry *allow_out; /* network.allowOut */
  size_t nallow_out;
  asbn_entry *deny_out; /* network.denyOut (CIDRs and IPs only) */
  size_t ndeny_out;
  asbn_domain_rule *rules; /* network.rules: header transforms per domain */
  size_t nrules;
  /* network.egressProxy {address "host:port", username, password}: SOCKS5
   * upstream for all egress TCP after filtering; NULL address: none */
  char *egress_proxy_addr, *egress_proxy_user, *egress_proxy_pass;
  int allow_public_traffic;    /* network.allowPublicTraffic, default 1 */
  char *mask_request_host;     /* network.maskRequestHost, or NULL */
  uint64_t egress_bytes_per_s; /* our own: bandwidth cap, 0 = none */
  unsigned max_connections;    /* our own: concurrent egress connections, 0 = engine default */
} asbn_policy;

/* Parses the create body's allowInternetAccess (may be NULL: default) and
 * network object (may be NULL) into *out. 0, or -1 with a message for a
 * 400 in err (bad CIDR, bad domain, denyOut with a domain, unknown field
 * type, too many entries). */
int asbn_policy_parse(const cJSON *allow_internet, const cJSON *network, asbn_policy *out,
                      char *err, size_t errlen);
/* The effective policy as E2B's SandboxNetworkConfig JSON for GET replies:
 * secrets' values never appear (placeholders as given). */
cJSON *asbn_policy_to_json(const asbn_policy *p);
/* 1 if addr (4 or 16 bytes) falls in entry e (CIDR kinds only). */
int asbn_entry_contains(const asbn_entry *e, const uint8_t *addr, int family);
/* 1 if name (lower case, no trailing dot) matches e (domain kinds only). */
int asbn_entry_matches_name(const asbn_entry *e, const char *name);
/* The same for a host name and port: an entry with a port matches that
 * port only (asbn_entry_matches_name: never). */
int asbn_entry_matches_host(const asbn_entry *e, const char *name, unsigned port);
int asbn_policy_copy(const asbn_policy *src, asbn_policy *dst);
/* Frees what p holds (secret-bearing strings wiped first) and zeroes it. */
void asbn_policy_free(asbn_policy *p);

#endif
