/* The engine's egress services (issue 17, NET.md "Egress services"): one
 * DNS resolver (UDP and TCP) and one transparent TCP proxy per engine,
 * running on threads of the engine process and listening in the engine's
 * netns. The datapath (core/net/datapath.c) redirects every sandbox's
 * udp/tcp 53 to asbn_egress_dns_port() and the TCP its policy sends
 * through the proxy to asbn_egress_proxy_port(); the sandbox is known by
 * the connection's source address, the destination it asked for by
 * SO_ORIGINAL_DST (IP6T_SO_ORIGINAL_DST for IPv6).
 *
 * Resolver: forwards each query to the upstream servers, records per
 * sandbox the addresses it answered for each name (kept for the answer's
 * TTL, at least ASBN_EGRESS_MIN_TTL seconds), and answers REFUSED for names
 * no allowOut domain permits when the sandbox's internet is off.
 *
 * Proxy: peeks the first bytes (TLS ClientHello SNI, or an HTTP/1.x Host)
 * and lets the connection through when the destination is in an allowOut
 * CIDR, or the name matches an allowOut domain/wildcard AND the destination
 * is an address the resolver gave this sandbox for that name (or, internet
 * on, when no deny applies). A raw-IP connection to a domain-only allowance,
 * a name on an address of another name, and a name the allowances refuse
 * are closed with RST and counted. Through network.egressProxy (SOCKS5,
 * RFC 1928/1929) when the policy names one. Plain HTTP named by a domain
 * is checked request by request (every Host on a keep-alive connection).
 * Header rules (network.rules) are applied to each request: over HTTP
 * directly, over HTTPS by TLS interception with the engine's egress CA
 * (asbn_egress_ca_path: the sandbox's trust store must hold it), for the
 * domains that have rules and no others.
 *
 * The process must ignore SIGPIPE (agent-sandboxd does): splice(2) and
 * OpenSSL write to sockets whose peer may be gone. Every call is
 * thread-safe. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_H
#define ASB_NET_EGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "net/egress/secrets.h"
#include "net/policy.h"

#define ASBN_EGRESS_MIN_TTL 30 /* seconds an answer stays usable at least */
#define ASBN_EGRESS_MAX_UPSTREAMS 4

typedef struct asbn_egress asbn_egress;

typedef struct asbn_egress_config {
  /* Addresses to listen on in the caller's netns (numeric IPv4 or IPv6);
   * NULL: "0.0.0.0". bind6 optional (NULL: no IPv6 listener). */
  const char *bind4, *bind6;
  uint16_t dns_port;   /* 0: a free port is picked */
  uint16_t proxy_port; /* 0: a free port is picked */
  /* Upstream DNS servers "ADDR" or "ADDR:PORT" ("[v6]:port"), up to
   * ASBN_EGRESS_MAX_UPSTREAMS; ndns_upstream 0: the nameservers of
   * /etc/resolv.conf. */
  const char *dns_upstream[ASBN_EGRESS_MAX_UPSTREAMS];
  size_t ndns_upstream;
  /* The engine's state dir (0700): the egress CA (egress-ca.key 0600,
   * egress-ca.pem) and the secrets store live under it. NULL: no TLS
   * interception, no secrets. */
  const char *state_dir;
  /* CA file upstream TLS (intercepted connections) is verified against;
   * NULL: the system trust store. For tests. */
  const char *upstream_ca_file;
  /* Concurrent proxied connections per sandbox when its policy's
   * max_connections is 0 (0: 256), and in all (0: 4096). */
  unsigned max_connections_per_sandbox, max_connections_total;
  /* Seconds a proxied connection may take to send its first bytes
   * (ClientHello / request head) before it is closed; 0: 10. */
  unsigned peek_timeout_s;
  /* The secrets store header rules' ${e2b.secrets.<name>} resolve from
   * (secrets.h; the caller opens and closes it, after asbn_egress_stop);
   * NULL: a rule naming a secret fails its request with 502. */
  asbn_secrets *secrets;
} asbn_egress_config;

/* Per-sandbox counters since its first asbn_egress_set_policy. */
typedef struct asbn_egress_counters {
  uint64_t conns_allowed, conns_refused; /* proxied TCP connections */
  uint64_t conns_open;                   /* open now */
  uint64_t dns_answered, dns_refused;    /* queries */
  uint64_t bytes_out, bytes_in;          /* payload via the proxy: sandbox->world, back */
} asbn_egress_counters;

/* Binds the listeners and starts the threads. 0, or -1 with a message in
 * err. *out is freed by asbn_egress_stop. */
int asbn_egress_start(const asbn_egress_config *cfg, asbn_egress **out, char *err, size_t errlen);

/* Sets (replaces) the policy of the sandbox whose address is sandbox_addr
 * (AF_INET or AF_INET6; the port is ignored). p is copied. A live update:
 * connections the new policy would refuse are cut. 0, or -1 (ENOMEM,
 * EAFNOSUPPORT). */
int asbn_egress_set_policy(asbn_egress *eg, const struct sockaddr *sandbox_addr,
                           const asbn_policy *p);

/* A second address of the same sandbox (its IPv6 address beside its
 * IPv4 one): one policy, one set of resolver records (an AAAA answer to
 * a query over IPv4 opens the IPv6 connection), one set of counters.
 * After asbn_egress_set_policy for sandbox_addr. 0, or -1 (sandbox_addr
 * unknown, also belongs to another sandbox, or it has two already). */
int asbn_egress_add_address(asbn_egress *eg, const struct sockaddr *sandbox_addr,
                            const struct sockaddr *also);

/* Forgets the sandbox: its policy, its resolver records, its counters;
 * its open connections are closed. Traffic from its address is refused
 * until a policy is set again. 0, or -1 if it was not known. */
int asbn_egress_forget(asbn_egress *eg, const struct sockaddr *sandbox_addr);

/* 0, or -1 if the sandbox is not known. */
int asbn_egress_counters_get(asbn_egress *eg, const struct sockaddr *sandbox_addr,
                             asbn_egress_counters *out);

uint16_t asbn_egress_dns_port(const asbn_egress *eg);
uint16_t asbn_egress_proxy_port(const asbn_egress *eg);

/* Path of the egress CA's certificate (PEM), for the sandbox's trust store;
 * NULL when there is no state dir. */
const char *asbn_egress_ca_path(const asbn_egress *eg);

/* Stops the threads, closes every connection and listener, frees eg. */
void asbn_egress_stop(asbn_egress *eg);

#endif
