/* The sandboxes' datapath (issue 17, NET.md "Datapath"): one veth pair per
 * sandbox (host end in the engine's netns, the other end moved into the
 * sandbox's netns as eth0), a /30 per pair out of the engine's link range,
 * and one nftables table per engine (inet asb_<hash of the engine's name>)
 * that isolates and filters every sandbox by its policy (policy.h).
 *
 * Pairs are made at attach with their other end already in the sandbox's
 * netns (one netlink request), and at a kill left to the kernel, which
 * deletes them with the netns, off the kill's path. Measured here: making a
 * pair into a netns 9 ms, moving a pooled end into one 18-20 ms (and as
 * much to move it back), deleting a pair 19 ms, so a pool of pairs moved in
 * and out (NET.md's first design) cost twice what it saved. Links:
 * libnl-route-3; nftables: libnftables' JSON input, each change one
 * transaction (a policy update is atomic).
 *
 * The three steps a sandbox goes through are separate so that a pre-made
 * sandbox (a warm pool) can be attached ahead of time and get its policy
 * when it is claimed: attach (link + addresses + an isolating chain that
 * refuses everything), apply (the policy: again at every live update),
 * detach. Thread-safe. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_DATAPATH_H
#define ASB_NET_DATAPATH_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

typedef struct asbn_dp asbn_dp;
typedef struct asbn_dp_link asbn_dp_link;

typedef struct asbn_dp_config {
  /* The engine's --cgroup-name (one engine per name on a machine): the
   * table is asb_<8 hex of its SHA-256>, links as<7 hex>h<slot> (host
   * end). */
  const char *name;
  /* IPv4 link range, "10.88.0.0/16" when NULL; /8../28, one /30 a slot
   * (host .1, sandbox .2), at most 16384 slots. */
  const char *cidr4;
  /* IPv6 link range: a ULA x:y::/N, N from 48 to 112, a /126 a slot (host
   * end ::1 + 4*slot, sandbox + 1); "off": none; NULL: a /64 of fd00::/8
   * from the hash of the name when this netns has an IPv6 default route,
   * else none. Without one every IPv6 packet from a sandbox is dropped. */
  const char *cidr6;
  /* Where the sysctls the datapath changes (forwarding, accept_ra) are
   * recorded with their old values, restored at close (also after a
   * crash, by the next engine): <state_dir>/net-sysctl. NULL: memory. */
  const char *state_dir;
  /* Where the sandboxes' DNS (udp/tcp 53 to any address) is redirected, a
   * port on the host end: the engine's resolver. 0: 53. */
  uint16_t dns_port;
  /* The egress proxy's port: TCP the policy sends through it is redirected
   * there (domain allowances, header rules, egressProxy). 0: none. */
  uint16_t proxy_port;
  /* New connections a sandbox may have open at once when its policy says
   * 0 (nft ct count); 0: 1024. */
  unsigned max_connections;
} asbn_dp_config;

/* Reaps what a previous engine of this name left (its table, its links in
 * this netns), turns IPv4 (and IPv6) forwarding on, makes the table. 0, or
 * -1 with a message in err. Close turns back every sysctl it changed,
 * unless another engine's table is in the netns. */
int asbn_dp_open(const asbn_dp_config *cfg, asbn_dp **out, char *err, size_t errlen);
/* Removes the table and every link of the engine (attached sandboxes lose
 * their network). dp may be NULL. */
void asbn_dp_close(asbn_dp *dp);
/* Removes the table and links an engine of this name left in this netns
 * without opening a datapath (asbn_dp_open does this first). */
int asbn_dp_reap(const char *name);

/* Gives the netns (an fd of /proc/<pid>/ns/net, duplicated: the caller
 * keeps its own) a pair's end as eth0 with its address and default route,
 * and a chain that refuses everything until asbn_dp_apply. */
int asbn_dp_attach(asbn_dp *dp, int netns_fd, asbn_dp_link **out, char *err, size_t errlen);
/* Sets (replaces) the sandbox's filter: allowOut CIDRs accepted, then the
 * always-blocked ranges and denyOut refused, then the internet or not;
 * connection cap, bandwidth cap; one transaction. Packets of connections
 * the new policy refuses are refused from then on (every packet of a
 * sandbox's flows goes through its chain). */
int asbn_dp_apply(asbn_dp *dp, asbn_dp_link *l, const asbn_policy *p, char *err, size_t errlen);
/* Removes the sandbox's rules and deletes its pair (a sandbox that lives
 * on without network). Frees l. */
void asbn_dp_detach(asbn_dp *dp, asbn_dp_link *l);
/* Removes the sandbox's rules and leaves its pair to the kernel, which
 * deletes it when the netns goes (call right before the sandbox is killed:
 * the kill does not wait for a deletion). A pair left so is isolated
 * meanwhile: no chain, no source entry, so everything from it is refused.
 * Frees l. */
void asbn_dp_release(asbn_dp *dp, asbn_dp_link *l);

/* The sandbox's IPv6 address: 0, or -1 when the datapath has no IPv6. */
int asbn_dp_sandbox_addr6(const asbn_dp *dp, const asbn_dp_link *l, struct in6_addr *out);
int asbn_dp_has_ipv6(const asbn_dp *dp);
/* The sandbox's and the host end's addresses. */
struct in_addr asbn_dp_sandbox_addr(const asbn_dp_link *l);
struct in_addr asbn_dp_host_addr(const asbn_dp_link *l);
/* Bytes the sandbox sent out (forwarded) and got back since attach. */
int asbn_dp_counters(asbn_dp *dp, const asbn_dp_link *l, uint64_t *bytes_out, uint64_t *bytes_in);
/* The nft table's name ("asb_..."), for tests and logs. */
const char *asbn_dp_table(const asbn_dp *dp);
/* The /etc/resolv.conf every sandbox gets: its resolver is reached on any
 * address (DNS is redirected), this names the first host end. */
const char *asbn_dp_resolv_conf(const asbn_dp *dp);

#endif
