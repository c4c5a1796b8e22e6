/* The sandboxes' datapath (datapath.h): veth pairs through libnl-route-3,
 * filtering and NAT through libnftables' JSON input.
 *
 * The table (inet asb_<hash>), for host ends "P h*" (P = as<7 hex>):
 *   pre       filter prerouting -300: from a sandbox only its own source
 *             address (iifname . saddr in @src / @src6; ICMPv6 from
 *             link-local and :: for neighbour discovery); no IPv6 at all
 *             when the engine has none
 *   nat_pre   nat prerouting: udp/tcp 53 to anywhere → the resolver port;
 *             per sandbox (vmap @natmap) TCP → the egress proxy
 *   input     filter input: from a sandbox only the resolver (and proxy)
 *             ports, every other host port refused (the engine's API too)
 *   forward   filter forward: sandbox → sandbox refused; into a sandbox
 *             only replies (per sandbox chain in_N: counter); out of a
 *             sandbox its chain sb_N (vmap @sbmap), no chain = refused
 *   post      nat postrouting: the link range masqueraded out of any
 *             interface that is not a sandbox's
 * lim_N (from pre, vmap @limmap): the bandwidth cap, on everything the
 * sandbox sends (forwarded, to the proxy, to the resolver).
 * sb_N: ct count cap, counter, allowOut (@a4_N, @a6_N)
 * accept, always-blocked (@blk4, @blk6) refuse, denyOut (@d4_N, @d6_N)
 * refuse, internet or not. IPv6 (a ULA range, NAT66 in post) is optional;
 * the forwarding sysctls are restored at close (sysctl_set).
 * SPDX-License-Identifier: Apache-2.0 */
#include "datapath.h"

#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>
#include <nftables/libnftables.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

enum { SLOT_UNUSED, SLOT_ATTACHED };

struct asbn_dp {
  pthread_mutex_t mu;
  struct nft_ctx *nft;
  char table[16];  /* asb_<8 hex> */
  char prefix[10]; /* as<7 hex> */
  char hostglob[12], resolv[64];
  uint32_t net;                /* host order */
  unsigned plen, nslots, next; /* next: where the search for a free slot starts */
  unsigned char *slot;
  int self_ns;
  uint16_t dns_port, proxy_port;
  unsigned max_conns;
  /* IPv6 (v6 set): the link range net6/plen6, a /126 a slot: host end
   * net6 + 4*slot + 1, sandbox + 2 (the last 32 bits; plen6 <= 112) */
  int v6;
  uint8_t net6[16];
  unsigned plen6;
  /* The sysctls this engine changed and what they were, also in the file
   * rec (a crashed engine's originals are restored by the next one) */
  char rec[PATH_MAX]; /* "" = no state dir: kept in memory only */
  size_t nsysctl;
  struct {
    char path[96], orig[16];
  } sysctl[64];
};

struct asbn_dp_link {
  unsigned slot;
  int ns_fd;
  uint32_t host; /* host order; the sandbox is host + 1 */
};

/* The IPv6 addresses of slot: the host end (which = 1) or the sandbox (2). */
static void slot_addr6(const asbn_dp *dp, unsigned slot, int which, uint8_t out[16]) {
  memcpy(out, dp->net6, 16);
  uint32_t low;
  memcpy(&low, out + 12, 4);
  low = htonl(ntohl(low) + 4 * slot + (uint32_t)which);
  memcpy(out + 12, &low, 4);
}

static void names(const char *name, char table[16], char prefix[10]) {
  char hex[65];
  asbi_sha256_hex(name, strlen(name), hex);
  snprintf(table, 16, "asb_%.8s", hex);
  snprintf(prefix, 10, "as%.7s", hex);
}

static void host_if(const asbn_dp *dp, unsigned slot, char out[IFNAMSIZ]) {
  snprintf(out, IFNAMSIZ, "%sh%u", dp->prefix, slot);
}
static uint32_t slot_host(const asbn_dp *dp, unsigned slot) {
  return dp->net + slot * 4 + 1;
}

/* ---- nftables ------------------------------------------------------------ */

/* Runs one JSON batch (one transaction). Caller holds dp->mu. */
static int nft_run(asbn_dp *dp, cJSON *cmds, char *err, size_t errlen) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddItemToObject(root, "nftables", cmds);
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!s) return asbi_errf(err, errlen, "out of memory");
  int rc = nft_run_cmd_from_buffer(dp->nft, s);
  free(s);
  const char *e = nft_ctx_get_error_buffer(dp->nft);
  if (rc != 0) {
    asbi_errf(err, errlen, "nftables: %.300s", e && *e ? e : "transaction refused");
    return -1;
  }
  return 0;
}

static cJSON *obj1(const char *k, cJSON *v) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, k, v);
  return o;
}
/* {"op": {"kind": {family, table, ...}}} appended to cmds; returns the inner */
static cJSON *cmd(asbn_dp *dp, cJSON *cmds, const char *op, const char *kind) {
  cJSON *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "family", "inet");
  cJSON_AddStringToObject(in, "table", dp->table);
  cJSON_AddItemToArray(cmds, obj1(op, obj1(kind, in)));
  return in;
}
static cJSON *meta(const char *key) {
  return obj1("meta", obj1("key", cJSON_CreateString(key)));
}
static cJSON *payload(const char *proto, const char *field) {
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "protocol", proto);
  cJSON_AddStringToObject(p, "field", field);
  return obj1("payload", p);
}
static cJSON *match(const char *op, cJSON *left, cJSON *right) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "op", op);
  cJSON_AddItemToObject(m, "left", left);
  cJSON_AddItemToObject(m, "right", right);
  return obj1("match", m);
}
static cJSON *verdict(const char *v) {
  return obj1(v, cJSON_CreateNull());
}
static cJSON *reject(void) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "type", "icmpx");
  cJSON_AddStringToObject(r, "expr", "admin-prohibited");
  return obj1("reject", r);
}
static cJSON *prefix_expr(uint32_t addr, unsigned len) {
  struct in_addr a = {htonl(addr)};
  char s[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, s, sizeof s);
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "addr", s);
  cJSON_AddNumberToObject(p, "len", len);
  return obj1("prefix", p);
}
static cJSON *prefix6_expr(const uint8_t a[16], unsigned len) {
  char s[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, a, s, sizeof s);
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "addr", s);
  cJSON_AddNumberToObject(p, "len", len);
  return obj1("prefix", p);
}
static cJSON *addr6_str(const uint8_t a[16]) {
  char s[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, a, s, sizeof s);
  return cJSON_CreateString(s);
}
static cJSON *addr_str(uint32_t addr) {
  struct in_addr a = {htonl(addr)};
  char s[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, s, sizeof s);
  return cJSON_CreateString(s);
}
/* add rule to chain: expr items given, NULL-terminated */
static void rule(asbn_dp *dp, cJSON *cmds, const char *chain, ...) {
  cJSON *r = cmd(dp, cmds, "add", "rule");
  cJSON_AddStringToObject(r, "chain", chain);
  cJSON *ex = cJSON_AddArrayToObject(r, "expr");
  va_list ap;
  va_start(ap, chain);
  cJSON *e;
  while ((e = va_arg(ap, cJSON *))) cJSON_AddItemToArray(ex, e);
  va_end(ap);
}
static void base_chain(asbn_dp *dp, cJSON *cmds, const char *name, const char *type,
                       const char *hook, int prio) {
  cJSON *c = cmd(dp, cmds, "add", "chain");
  cJSON_AddStringToObject(c, "name", name);
  cJSON_AddStringToObject(c, "type", type);
  cJSON_AddStringToObject(c, "hook", hook);
  cJSON_AddNumberToObject(c, "prio", prio);
  cJSON_AddStringToObject(c, "policy", "accept");
}
static void named(asbn_dp *dp, cJSON *cmds, const char *op, const char *kind, const char *fmt,
                  unsigned slot) {
  char n[32];
  snprintf(n, sizeof n, fmt, slot);
  cJSON_AddStringToObject(cmd(dp, cmds, op, kind), "name", n);
}
static cJSON *str(const char *s) {
  return cJSON_CreateString(s);
}
static cJSON *vmap(const char *key, const char *map) {
  cJSON *v = cJSON_CreateObject();
  cJSON_AddItemToObject(v, "key", meta(key));
  cJSON_AddStringToObject(v, "data", map);
  return obj1("vmap", v);
}
static cJSON *jump(const char *fmt, unsigned slot) {
  char n[32];
  snprintf(n, sizeof n, fmt, slot);
  return obj1("jump", obj1("target", str(n)));
}

/* The table: chains, global sets and maps, the shared rules. */
static int nft_table(asbn_dp *dp, char *err, size_t errlen) {
  cJSON *c = cJSON_CreateArray();
  /* add + delete + add: one transaction that works whether or not a stale
   * table of this name is there */
  cJSON_AddStringToObject(cmd(dp, c, "add", "table"), "name", dp->table);
  cJSON_AddStringToObject(cmd(dp, c, "delete", "table"), "name", dp->table);
  cJSON_AddStringToObject(cmd(dp, c, "add", "table"), "name", dp->table);
  /* tables carry "family" and "name" only: fix the three just added */
  for (int i = 0; i < 3; i++) {
    cJSON *t = cJSON_GetArrayItem(c, i)->child->child;
    cJSON_DeleteItemFromObject(t, "table");
  }
  /* always blocked (policy.h), unless allowOut names them: the link range
   * (other sandboxes), this-network, private nets, loopback, CGNAT,
   * link-local and metadata, multicast, reserved and broadcast */
  cJSON *s = cmd(dp, c, "add", "set");
  cJSON_AddStringToObject(s, "name", "blk4");
  cJSON_AddStringToObject(s, "type", "ipv4_addr");
  cJSON_AddItemToObject(s, "flags", cJSON_CreateStringArray((const char *[]){"interval"}, 1));
  cJSON *el = cJSON_AddArrayToObject(s, "elem");
  static const struct {
    const char *a;
    unsigned len;
  } blk[] = {{"0.0.0.0", 8},      {"10.0.0.0", 8},    {"100.64.0.0", 10},  {"127.0.0.0", 8},
             {"169.254.0.0", 16}, {"172.16.0.0", 12}, {"192.168.0.0", 16}, {"224.0.0.0", 3}};
  for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++) {
    struct in_addr a;
    inet_pton(AF_INET, blk[i].a, &a);
    cJSON_AddItemToArray(el, prefix_expr(ntohl(a.s_addr), blk[i].len));
  }
  /* the link range itself may lie outside those (a --net-cidr of public
   * space): add it, unless a range above already covers it */
  int covered = 0;
  for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++) {
    struct in_addr a;
    inet_pton(AF_INET, blk[i].a, &a);
    uint32_t m = blk[i].len ? 0xffffffffu << (32 - blk[i].len) : 0;
    if (dp->plen >= blk[i].len && (dp->net & m) == (ntohl(a.s_addr) & m)) covered = 1;
  }
  if (!covered) cJSON_AddItemToArray(el, prefix_expr(dp->net, dp->plen));
  /* the same for IPv6: unspecified and loopback, IPv4-mapped (the ranges
   * above by another name), the NAT64 prefixes (IPv4 behind a translator:
   * private networks too), discard, ULA (fc00::/7: the link range is one),
   * link-local, site-local, multicast, documentation */
  s = cmd(dp, c, "add", "set");
  cJSON_AddStringToObject(s, "name", "blk6");
  cJSON_AddStringToObject(s, "type", "ipv6_addr");
  cJSON_AddItemToObject(s, "flags", cJSON_CreateStringArray((const char *[]){"interval"}, 1));
  el = cJSON_AddArrayToObject(s, "elem");
  static const struct {
    const char *a;
    unsigned len;
  } blk6[] = {{"::", 127},   {"::ffff:0:0", 96}, {"64:ff9b::", 96}, {"64:ff9b:1::", 48},
              {"100::", 64}, {"fc00::", 7},      {"fe80::", 10},    {"fec0::", 10},
              {"ff00::", 8}, {"2001:db8::", 32}};
  for (size_t i = 0; i < sizeof blk6 / sizeof blk6[0]; i++) {
    uint8_t a[16];
    inet_pton(AF_INET6, blk6[i].a, a);
    cJSON_AddItemToArray(el, prefix6_expr(a, blk6[i].len));
  }
  if (dp->v6 && !(dp->net6[0] >= 0xfc && dp->net6[0] <= 0xfd))
    cJSON_AddItemToArray(el, prefix6_expr(dp->net6, dp->plen6));
  s = cmd(dp, c, "add", "set");
  cJSON_AddStringToObject(s, "name", "src6");
  cJSON_AddItemToObject(s, "type",
                        cJSON_CreateStringArray((const char *[]){"ifname", "ipv6_addr"}, 2));
  s = cmd(dp, c, "add", "set");
  cJSON_AddStringToObject(s, "name", "src");
  cJSON_AddItemToObject(s, "type",
                        cJSON_CreateStringArray((const char *[]){"ifname", "ipv4_addr"}, 2));
  for (int i = 0; i < 4; i++) {
    static const char *maps[] = {"sbmap", "inmap", "natmap", "limmap"};
    cJSON *m = cmd(dp, c, "add", "map");
    cJSON_AddStringToObject(m, "name", maps[i]);
    cJSON_AddStringToObject(m, "type", "ifname");
    cJSON_AddStringToObject(m, "map", "verdict");
  }
  base_chain(dp, c, "pre", "filter", "prerouting", -300);
  base_chain(dp, c, "nat_pre", "nat", "prerouting", -100);
  base_chain(dp, c, "input", "filter", "input", 0);
  base_chain(dp, c, "forward", "filter", "forward", 0);
  base_chain(dp, c, "post", "nat", "postrouting", 100);
  const char *g = dp->hostglob;
  if (!dp->v6) {
    rule(dp, c, "pre", match("==", meta("iifname"), str(g)),
         match("==", meta("nfproto"), str("ipv6")), verdict("drop"), NULL);
  } else {
    /* neighbour discovery and DAD from the sandbox's link-local and the
     * unspecified address (never forwarded: link scope); anything else
     * from its own address only */
    uint8_t ll[16] = {0xfe, 0x80}, none[16] = {0};
    cJSON *src = cJSON_CreateArray();
    cJSON_AddItemToArray(src, prefix6_expr(ll, 10));
    cJSON_AddItemToArray(src, prefix6_expr(none, 128));
    rule(dp, c, "pre", match("==", meta("iifname"), str(g)),
         match("==", payload("ip6", "saddr"), obj1("set", src)),
         match("==", meta("l4proto"), str("ipv6-icmp")), verdict("accept"), NULL);
    cJSON *cat6 = cJSON_CreateArray();
    cJSON_AddItemToArray(cat6, meta("iifname"));
    cJSON_AddItemToArray(cat6, payload("ip6", "saddr"));
    rule(dp, c, "pre", match("==", meta("iifname"), str(g)),
         match("!=", obj1("concat", cat6), str("@src6")), verdict("drop"), NULL);
  }
  cJSON *cat = cJSON_CreateArray();
  cJSON_AddItemToArray(cat, meta("iifname"));
  cJSON_AddItemToArray(cat, payload("ip", "saddr"));
  rule(dp, c, "pre", match("==", meta("iifname"), str(g)),
       match("!=", obj1("concat", cat), str("@src")), verdict("drop"), NULL);
  /* the bandwidth cap (lim_N) on everything a sandbox sends: what is
   * forwarded and what goes to the proxy (and the resolver) alike */
  rule(dp, c, "pre", match("==", meta("iifname"), str(g)), vmap("iifname", "@limmap"), NULL);
  /* DNS to any address: the engine's resolver (no DNS bypass) */
  cJSON *l4 = obj1("set", cJSON_CreateStringArray((const char *[]){"tcp", "udp"}, 2));
  rule(dp, c, "nat_pre", match("==", meta("iifname"), str(g)), match("==", meta("l4proto"), l4),
       match("==", payload("th", "dport"), cJSON_CreateNumber(53)),
       obj1("redirect", obj1("port", cJSON_CreateNumber(dp->dns_port))), NULL);
  rule(dp, c, "nat_pre", match("==", meta("iifname"), str(g)), vmap("iifname", "@natmap"), NULL);
  /* the host: the resolver and the proxy only */
  l4 = obj1("set", cJSON_CreateStringArray((const char *[]){"tcp", "udp"}, 2));
  rule(dp, c, "input", match("==", meta("iifname"), str(g)), match("==", meta("l4proto"), l4),
       match("==", payload("th", "dport"), cJSON_CreateNumber(dp->dns_port)), verdict("accept"),
       NULL);
  if (dp->proxy_port)
    rule(dp, c, "input", match("==", meta("iifname"), str(g)),
         match("==", payload("tcp", "dport"), cJSON_CreateNumber(dp->proxy_port)),
         verdict("accept"), NULL);
  if (dp->v6) {
    /* the host end's neighbour discovery (its address resolution) */
    cJSON *nd = cJSON_CreateStringArray(
        (const char *[]){"nd-neighbor-solicit", "nd-neighbor-advert", "nd-router-solicit"}, 3);
    rule(dp, c, "input", match("==", meta("iifname"), str(g)),
         match("==", payload("icmpv6", "type"), obj1("set", nd)), verdict("accept"), NULL);
  }
  rule(dp, c, "input", match("==", meta("iifname"), str(g)), reject(), NULL);
  if (dp->proxy_port) {
    /* the egress services listen on every address of this netns (each
     * sandbox reaches them on its own host end): nobody else may */
    cJSON *ports = cJSON_CreateArray();
    cJSON_AddItemToArray(ports, cJSON_CreateNumber(dp->dns_port));
    cJSON_AddItemToArray(ports, cJSON_CreateNumber(dp->proxy_port));
    l4 = obj1("set", cJSON_CreateStringArray((const char *[]){"tcp", "udp"}, 2));
    rule(dp, c, "input", match("!=", meta("iifname"), str("lo")), match("==", meta("l4proto"), l4),
         match("==", payload("th", "dport"), obj1("set", ports)), verdict("drop"), NULL);
  }
  /* forward */
  rule(dp, c, "forward", match("==", meta("iifname"), str(g)), match("==", meta("oifname"), str(g)),
       reject(), NULL);
  cJSON *st = cJSON_CreateStringArray((const char *[]){"established", "related"}, 2);
  rule(dp, c, "forward", match("==", meta("oifname"), str(g)),
       match("in", obj1("ct", obj1("key", str("state"))), st), vmap("oifname", "@inmap"), NULL);
  rule(dp, c, "forward", match("==", meta("oifname"), str(g)), verdict("drop"), NULL);
  rule(dp, c, "forward", match("==", meta("iifname"), str(g)), vmap("iifname", "@sbmap"), NULL);
  rule(dp, c, "forward", match("==", meta("iifname"), str(g)), reject(), NULL);
  rule(dp, c, "post", match("==", payload("ip", "saddr"), prefix_expr(dp->net, dp->plen)),
       match("!=", meta("oifname"), str(g)), verdict("masquerade"), NULL);
  if (dp->v6) /* NAT66: the sandboxes' ULAs leave as the host's address */
    rule(dp, c, "post", match("==", payload("ip6", "saddr"), prefix6_expr(dp->net6, dp->plen6)),
         match("!=", meta("oifname"), str(g)), verdict("masquerade"), NULL);
  return nft_run(dp, c, err, errlen);
}

static void nft_delete_table(asbn_dp *dp) {
  cJSON *c = cJSON_CreateArray();
  for (int i = 0; i < 2; i++) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "family", "inet");
    cJSON_AddStringToObject(t, "name", dp->table);
    cJSON_AddItemToArray(c, obj1(i ? "delete" : "add", obj1("table", t)));
  }
  char err[256];
  if (nft_run(dp, c, err, sizeof err) != 0) asbi_log("net: removing table %s: %s", dp->table, err);
}

/* One sandbox's objects: chains sb_N (filter), in_N (replies), nat_N,
 * sets a4_N, d4_N, counters o_N, i_N, and the map elements. */
static void map_elem(asbn_dp *dp, cJSON *c, const char *op, const char *map, const char *ifn,
                     const char *chain_fmt, unsigned slot) {
  cJSON *e = cmd(dp, c, op, "element");
  cJSON_AddStringToObject(e, "name", map);
  cJSON *pair = cJSON_CreateArray();
  cJSON_AddItemToArray(pair, str(ifn));
  cJSON_AddItemToArray(pair, jump(chain_fmt, slot));
  cJSON *arr = cJSON_CreateArray();
  cJSON_AddItemToArray(arr, pair);
  cJSON_AddItemToObject(e, "elem", arr);
}
static void src_elem(asbn_dp *dp, cJSON *c, const char *op, const char *ifn, unsigned slot) {
  cJSON *e = cmd(dp, c, op, "element");
  cJSON_AddStringToObject(e, "name", "src");
  cJSON *cat = cJSON_CreateArray();
  cJSON_AddItemToArray(cat, str(ifn));
  cJSON_AddItemToArray(cat, addr_str(slot_host(dp, slot) + 1));
  cJSON *arr = cJSON_CreateArray();
  cJSON_AddItemToArray(arr, obj1("concat", cat));
  cJSON_AddItemToObject(e, "elem", arr);
}
static void src6_elem(asbn_dp *dp, cJSON *c, const char *op, const char *ifn, unsigned slot) {
  if (!dp->v6) return;
  uint8_t a[16];
  slot_addr6(dp, slot, 2, a);
  cJSON *e = cmd(dp, c, op, "element");
  cJSON_AddStringToObject(e, "name", "src6");
  cJSON *cat = cJSON_CreateArray();
  cJSON_AddItemToArray(cat, str(ifn));
  cJSON_AddItemToArray(cat, addr6_str(a));
  cJSON *arr = cJSON_CreateArray();
  cJSON_AddItemToArray(arr, obj1("concat", cat));
  cJSON_AddItemToObject(e, "elem", arr);
}
static void slot_set(asbn_dp *dp, cJSON *c, const char *fmt, unsigned slot) {
  char n[32];
  snprintf(n, sizeof n, fmt, slot);
  cJSON *s = cmd(dp, c, "add", "set");
  cJSON_AddStringToObject(s, "name", n);
  cJSON_AddStringToObject(s, "type", fmt[0] && fmt[1] == '6' ? "ipv6_addr" : "ipv4_addr");
  cJSON_AddItemToObject(s, "flags", cJSON_CreateStringArray((const char *[]){"interval"}, 1));
}

static int nft_attach(asbn_dp *dp, unsigned slot, char *err, size_t errlen) {
  char ifn[IFNAMSIZ], n[32];
  host_if(dp, slot, ifn);
  cJSON *c = cJSON_CreateArray();
  named(dp, c, "add", "chain", "sb_%u", slot);
  named(dp, c, "add", "chain", "in_%u", slot);
  named(dp, c, "add", "chain", "nat_%u", slot);
  named(dp, c, "add", "chain", "lim_%u", slot);
  named(dp, c, "add", "counter", "o_%u", slot);
  named(dp, c, "add", "counter", "i_%u", slot);
  slot_set(dp, c, "a4_%u", slot);
  slot_set(dp, c, "d4_%u", slot);
  slot_set(dp, c, "a6_%u", slot);
  slot_set(dp, c, "d6_%u", slot);
  snprintf(n, sizeof n, "sb_%u", slot);
  rule(dp, c, n, reject(), NULL); /* nothing until a policy is applied */
  snprintf(n, sizeof n, "in_%u", slot);
  char cn[32];
  snprintf(cn, sizeof cn, "i_%u", slot);
  rule(dp, c, n, obj1("counter", str(cn)), verdict("accept"), NULL);
  map_elem(dp, c, "add", "sbmap", ifn, "sb_%u", slot);
  map_elem(dp, c, "add", "inmap", ifn, "in_%u", slot);
  map_elem(dp, c, "add", "natmap", ifn, "nat_%u", slot);
  map_elem(dp, c, "add", "limmap", ifn, "lim_%u", slot);
  src_elem(dp, c, "add", ifn, slot);
  src6_elem(dp, c, "add", ifn, slot);
  return nft_run(dp, c, err, errlen);
}

static void nft_detach(asbn_dp *dp, unsigned slot) {
  char ifn[IFNAMSIZ];
  host_if(dp, slot, ifn);
  cJSON *c = cJSON_CreateArray();
  map_elem(dp, c, "delete", "sbmap", ifn, "sb_%u", slot);
  map_elem(dp, c, "delete", "inmap", ifn, "in_%u", slot);
  map_elem(dp, c, "delete", "natmap", ifn, "nat_%u", slot);
  map_elem(dp, c, "delete", "limmap", ifn, "lim_%u", slot);
  src_elem(dp, c, "delete", ifn, slot);
  src6_elem(dp, c, "delete", ifn, slot);
  static const char *chains[] = {"sb_%u", "in_%u", "nat_%u", "lim_%u"};
  for (int i = 0; i < 4; i++) named(dp, c, "flush", "chain", chains[i], slot);
  for (int i = 0; i < 4; i++) named(dp, c, "delete", "chain", chains[i], slot);
  named(dp, c, "delete", "counter", "o_%u", slot);
  named(dp, c, "delete", "counter", "i_%u", slot);
  named(dp, c, "delete", "set", "a4_%u", slot);
  named(dp, c, "delete", "set", "d4_%u", slot);
  named(dp, c, "delete", "set", "a6_%u", slot);
  named(dp, c, "delete", "set", "d6_%u", slot);
  char err[256];
  if (nft_run(dp, c, err, sizeof err) != 0)
    asbi_log("net: removing the rules of slot %u: %s", slot, err);
}

/* The CIDRs of v of one family into the set fmt (a4_/d4_: IPv4, a6_/d6_:
 * IPv6). 0.0.0.0/0 is E2B's "all of the internet": it stands for ::/0
 * too. */
static void add_elems(asbn_dp *dp, cJSON *c, const char *fmt, unsigned slot, const asbn_entry *v,
                      size_t n) {
  char name[32];
  snprintf(name, sizeof name, fmt, slot);
  int six = fmt[1] == '6';
  cJSON *arr = NULL;
  for (size_t i = 0; i < n; i++) {
    int all = v[i].kind == ASBN_CIDR4 && v[i].prefix == 0;
    if (v[i].kind != (six ? ASBN_CIDR6 : ASBN_CIDR4) && !(six && all)) continue;
    if (!arr) {
      cJSON *e = cmd(dp, c, "add", "element");
      cJSON_AddStringToObject(e, "name", name);
      arr = cJSON_AddArrayToObject(e, "elem");
    }
    if (six) {
      static const uint8_t zero[16];
      cJSON_AddItemToArray(arr, prefix6_expr(all ? zero : v[i].addr, all ? 0 : v[i].prefix));
    } else {
      uint32_t a;
      memcpy(&a, v[i].addr, 4);
      cJSON_AddItemToArray(arr, prefix_expr(ntohl(a), v[i].prefix));
    }
  }
}

/* Whether TCP of this policy goes through the egress proxy (NET.md):
 * domain allowances, header rules or an upstream proxy. */
static int needs_proxy(const asbn_policy *p) {
  if (p->egress_proxy_addr || p->nrules) return 1;
  for (size_t i = 0; i < p->nallow_out; i++)
    if (p->allow_out[i].kind == ASBN_DOMAIN || p->allow_out[i].kind == ASBN_WILDCARD) return 1;
  return 0;
}

static int nft_policy(asbn_dp *dp, unsigned slot, const asbn_policy *p, char *err, size_t errlen) {
  char sb[32], a4[32], d4[32], a6[32], d6[32], o[32], nat[32], limc[32];
  snprintf(sb, sizeof sb, "sb_%u", slot);
  snprintf(limc, sizeof limc, "lim_%u", slot);
  snprintf(a4, sizeof a4, "@a4_%u", slot);
  snprintf(d4, sizeof d4, "@d4_%u", slot);
  snprintf(a6, sizeof a6, "@a6_%u", slot);
  snprintf(d6, sizeof d6, "@d6_%u", slot);
  snprintf(o, sizeof o, "o_%u", slot);
  snprintf(nat, sizeof nat, "nat_%u", slot);
  cJSON *c = cJSON_CreateArray();
  named(dp, c, "flush", "chain", "sb_%u", slot);
  named(dp, c, "flush", "chain", "nat_%u", slot);
  named(dp, c, "flush", "chain", "lim_%u", slot);
  named(dp, c, "flush", "set", "a4_%u", slot);
  named(dp, c, "flush", "set", "d4_%u", slot);
  named(dp, c, "flush", "set", "a6_%u", slot);
  named(dp, c, "flush", "set", "d6_%u", slot);
  add_elems(dp, c, "a4_%u", slot, p->allow_out, p->nallow_out);
  add_elems(dp, c, "d4_%u", slot, p->deny_out, p->ndeny_out);
  add_elems(dp, c, "a6_%u", slot, p->allow_out, p->nallow_out);
  add_elems(dp, c, "d6_%u", slot, p->deny_out, p->ndeny_out);
  unsigned cap = p->max_connections ? p->max_connections : dp->max_conns;
  cJSON *cc = cJSON_CreateObject();
  cJSON_AddNumberToObject(cc, "val", cap);
  cJSON_AddBoolToObject(cc, "inv", 1);
  rule(dp, c, sb, match("in", obj1("ct", obj1("key", str("state"))), str("new")),
       obj1("ct count", cc), reject(), NULL);
  if (p->egress_bytes_per_s) {
    cJSON *lim = cJSON_CreateObject();
    cJSON_AddNumberToObject(lim, "rate", (double)p->egress_bytes_per_s);
    cJSON_AddStringToObject(lim, "rate_unit", "bytes");
    cJSON_AddStringToObject(lim, "per", "second");
    cJSON_AddNumberToObject(lim, "burst", (double)(p->egress_bytes_per_s / 4 + 65536));
    cJSON_AddStringToObject(lim, "burst_unit", "bytes");
    cJSON_AddBoolToObject(lim, "inv", 1);
    rule(dp, c, limc, obj1("limit", lim), verdict("drop"), NULL);
  }
  rule(dp, c, sb, obj1("counter", str(o)), NULL);
  rule(dp, c, sb, match("==", payload("ip", "daddr"), str(a4)), verdict("accept"), NULL);
  rule(dp, c, sb, match("==", payload("ip", "daddr"), str("@blk4")), reject(), NULL);
  rule(dp, c, sb, match("==", payload("ip", "daddr"), str(d4)), reject(), NULL);
  rule(dp, c, sb, match("==", payload("ip6", "daddr"), str(a6)), verdict("accept"), NULL);
  rule(dp, c, sb, match("==", payload("ip6", "daddr"), str("@blk6")), reject(), NULL);
  rule(dp, c, sb, match("==", payload("ip6", "daddr"), str(d6)), reject(), NULL);
  rule(dp, c, sb, p->allow_internet ? verdict("accept") : reject(), NULL);
  if (dp->proxy_port && needs_proxy(p)) {
    /* TCP to what an allowOut CIDR names goes straight, unless all egress
     * goes through the upstream proxy */
    if (!p->egress_proxy_addr) {
      rule(dp, c, nat, match("==", payload("ip", "daddr"), str(a4)), verdict("return"), NULL);
      rule(dp, c, nat, match("==", payload("ip6", "daddr"), str(a6)), verdict("return"), NULL);
    }
    rule(dp, c, nat, match("==", meta("l4proto"), str("tcp")),
         obj1("redirect", obj1("port", cJSON_CreateNumber(dp->proxy_port))), NULL);
  }
  return nft_run(dp, c, err, errlen);
}

/* ---- links --------------------------------------------------------------- */

static struct nl_sock *nl_open(void) {
  struct nl_sock *sk = nl_socket_alloc();
  if (!sk) return NULL;
  if (nl_connect(sk, NETLINK_ROUTE) < 0) {
    nl_socket_free(sk);
    return NULL;
  }
  return sk;
}

/* A route socket in another netns: this thread enters it for the socket()
 * only (netns is per thread; the socket keeps its netns). */
static struct nl_sock *nl_open_in(asbn_dp *dp, int ns_fd) {
  if (setns(ns_fd, CLONE_NEWNET) < 0) return NULL;
  struct nl_sock *sk = nl_open();
  int err = errno;
  if (setns(dp->self_ns, CLONE_NEWNET) < 0) abort(); /* the thread would stay in it */
  errno = err;
  return sk;
}

static int link_set(struct nl_sock *sk, const char *name, const char *newname, int up, int ns_fd) {
  struct rtnl_link *l = NULL;
  int rc = rtnl_link_get_kernel(sk, 0, name, &l);
  if (rc < 0) return rc;
  struct rtnl_link *ch = rtnl_link_alloc();
  if (!ch) {
    rtnl_link_put(l);
    return -NLE_NOMEM;
  }
  if (newname) rtnl_link_set_name(ch, newname);
  if (up > 0) rtnl_link_set_flags(ch, IFF_UP);
  if (up == 0) rtnl_link_unset_flags(ch, IFF_UP);
  if (ns_fd >= 0) rtnl_link_set_ns_fd(ch, ns_fd);
  rc = rtnl_link_change(sk, l, ch, 0);
  rtnl_link_put(ch);
  rtnl_link_put(l);
  return rc;
}

static int link_index(struct nl_sock *sk, const char *name) {
  struct rtnl_link *l = NULL;
  if (rtnl_link_get_kernel(sk, 0, name, &l) < 0) return -1;
  int i = rtnl_link_get_ifindex(l);
  rtnl_link_put(l);
  return i;
}

/* an address (family AF_INET: 4 bytes, AF_INET6: 16, network order);
 * IPv6 ones without duplicate address detection (both ends are ours: no
 * one else is on the link, and DAD would hold the address back a second) */
static int addr_add_raw(struct nl_sock *sk, int ifindex, int family, const void *a, unsigned plen) {
  struct rtnl_addr *ad = rtnl_addr_alloc();
  struct nl_addr *local = nl_addr_build(family, a, family == AF_INET ? 4 : 16);
  if (!ad || !local) {
    if (ad) rtnl_addr_put(ad);
    if (local) nl_addr_put(local);
    return -NLE_NOMEM;
  }
  nl_addr_set_prefixlen(local, (int)plen);
  rtnl_addr_set_ifindex(ad, ifindex);
  rtnl_addr_set_local(ad, local);
  if (family == AF_INET6) rtnl_addr_set_flags(ad, IFA_F_NODAD);
  int rc = rtnl_addr_add(sk, ad, 0);
  nl_addr_put(local);
  rtnl_addr_put(ad);
  return rc;
}

static int addr_add(struct nl_sock *sk, int ifindex, uint32_t a, unsigned plen) {
  uint32_t be = htonl(a);
  return addr_add_raw(sk, ifindex, AF_INET, &be, plen);
}

static int route_default_raw(struct nl_sock *sk, int ifindex, int family, const void *gw) {
  struct rtnl_route *r = rtnl_route_alloc();
  struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
  static const uint8_t zero[16];
  size_t alen = family == AF_INET ? 4 : 16;
  struct nl_addr *g = nl_addr_build(family, gw, alen);
  struct nl_addr *dst = nl_addr_build(family, zero, alen);
  int rc = -NLE_NOMEM;
  if (r && nh && g && dst) {
    nl_addr_set_prefixlen(dst, 0);
    rtnl_route_set_family(r, (uint8_t)family);
    rtnl_route_set_dst(r, dst);
    rtnl_route_nh_set_gateway(nh, g);
    rtnl_route_nh_set_ifindex(nh, ifindex);
    rtnl_route_add_nexthop(r, nh);
    nh = NULL; /* the route owns it */
    rc = rtnl_route_add(sk, r, NLM_F_CREATE | NLM_F_REPLACE);
  }
  if (nh) rtnl_route_nh_free(nh);
  if (r) rtnl_route_put(r);
  if (g) nl_addr_put(g);
  if (dst) nl_addr_put(dst);
  return rc;
}

static int route_default(struct nl_sock *sk, int ifindex, uint32_t gw) {
  uint32_t be = htonl(gw);
  return route_default_raw(sk, ifindex, AF_INET, &be);
}

static void link_delete(struct nl_sock *sk, const char *name) {
  struct rtnl_link *l = rtnl_link_alloc();
  if (!l) return;
  rtnl_link_set_name(l, name);
  rtnl_link_delete(sk, l);
  rtnl_link_put(l);
}

/* A new pair for slot, made with its other end in the sandbox's netns as
 * eth0 (one netlink request: no move, no rename; moving a link between
 * namespaces costs more than making it here, see datapath.h), the host
 * end addressed and up. -NLE_EXIST when a host end of that name is still
 * there (a sandbox's pair the kernel has not finished deleting). */
static int pair_make(asbn_dp *dp, struct nl_sock *sk, unsigned slot, int ns_fd) {
  char h[IFNAMSIZ];
  host_if(dp, slot, h);
  struct rtnl_link *l = rtnl_link_veth_alloc();
  if (!l) return -NLE_NOMEM;
  rtnl_link_set_name(l, h);
  struct rtnl_link *peer = rtnl_link_veth_get_peer(l);
  rtnl_link_set_name(peer, "eth0");
  rtnl_link_set_ns_fd(peer, ns_fd);
  int rc = rtnl_link_add(sk, l, NLM_F_CREATE | NLM_F_EXCL);
  rtnl_link_put(peer);
  rtnl_link_veth_release(l);
  if (rc < 0) return rc;
  int idx = link_index(sk, h);
  uint8_t h6[16];
  if (dp->v6) slot_addr6(dp, slot, 1, h6);
  if (idx < 0 || (rc = addr_add(sk, idx, slot_host(dp, slot), 30)) < 0 ||
      (dp->v6 && (rc = addr_add_raw(sk, idx, AF_INET6, h6, 126)) < 0) ||
      (rc = link_set(sk, h, NULL, 1, -1)) < 0) {
    link_delete(sk, h);
    return rc < 0 ? rc : -NLE_OBJ_NOTFOUND;
  }
  return 0;
}

static int reap_links(const char *prefix) {
  struct nl_sock *sk = nl_open();
  if (!sk) return -1;
  struct nl_cache *cache = NULL;
  if (rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache) < 0) {
    nl_socket_free(sk);
    return -1;
  }
  size_t plen = strlen(prefix);
  for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
    const char *n = rtnl_link_get_name((struct rtnl_link *)o);
    if (n && strncmp(n, prefix, plen) == 0 && (n[plen] == 'h' || n[plen] == 's'))
      rtnl_link_delete(sk, (struct rtnl_link *)o);
  }
  nl_cache_free(cache);
  nl_socket_free(sk);
  return 0;
}

/* ---- the API ------------------------------------------------------------- */

static struct nft_ctx *nft_new(void) {
  struct nft_ctx *n = nft_ctx_new(NFT_CTX_DEFAULT);
  if (!n) return NULL;
  nft_ctx_buffer_error(n);
  nft_ctx_buffer_output(n);
  nft_ctx_output_set_flags(n, NFT_CTX_OUTPUT_JSON);
  return n;
}

int asbn_dp_reap(const char *name) {
  asbn_dp dp;
  memset(&dp, 0, sizeof dp);
  names(name, dp.table, dp.prefix);
  if (!(dp.nft = nft_new())) return -1;
  nft_delete_table(&dp);
  nft_ctx_free(dp.nft);
  return reap_links(dp.prefix);
}

static int parse_cidr4(const char *s, uint32_t *net, unsigned *plen) {
  char buf[32];
  const char *slash = strchr(s, '/');
  if (!slash || (size_t)(slash - s) >= sizeof buf) return -1;
  memcpy(buf, s, (size_t)(slash - s));
  buf[slash - s] = '\0';
  struct in_addr a;
  char *end;
  long l = strtol(slash + 1, &end, 10);
  if (inet_pton(AF_INET, buf, &a) != 1 || *end || end == slash + 1 || l < 8 || l > 28) return -1;
  uint32_t m = 0xffffffffu << (32 - l);
  if ((ntohl(a.s_addr) & ~m) != 0) return -1;
  *net = ntohl(a.s_addr);
  *plen = (unsigned)l;
  return 0;
}

static int write_sysctl(const char *path, const char *v) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, v, strlen(v));
  close(fd);
  return n == (ssize_t)strlen(v) ? 0 : -1;
}

static int read_sysctl(const char *path, char *out, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, out, len - 1);
  close(fd);
  if (n <= 0) return -1;
  out[n] = '\0';
  out[strcspn(out, "\n")] = '\0';
  return 0;
}

/* ---- sysctls: set, remembered, restored ----------------------------------
 * What the engine changes in its netns (forwarding, accept_ra) goes back
 * at close to what it was, when no other engine's table is left in the
 * netns (one that still forwards). The originals are also in the file
 * dp->rec, so an engine that crashed has them restored by the next one of
 * its state dir. */

static void rec_save(asbn_dp *dp) {
  if (!dp->rec[0]) return;
  char tmp[PATH_MAX + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", dp->rec);
  FILE *f = fopen(tmp, "we");
  if (!f) return;
  for (size_t i = 0; i < dp->nsysctl; i++)
    fprintf(f, "%s\t%s\n", dp->sysctl[i].path, dp->sysctl[i].orig);
  if (fflush(f) == 0 && fsync(fileno(f)) == 0 && fclose(f) == 0)
    rename(tmp, dp->rec);
  else
    unlink(tmp);
}

static void rec_load(asbn_dp *dp) {
  FILE *f = dp->rec[0] ? fopen(dp->rec, "re") : NULL;
  if (!f) return;
  char line[160];
  while (dp->nsysctl < sizeof dp->sysctl / sizeof dp->sysctl[0] && fgets(line, sizeof line, f)) {
    char *tab = strchr(line, '\t');
    if (!tab || strncmp(line, "/proc/sys/net/", 14) != 0 || strstr(line, "..")) continue;
    *tab++ = '\0';
    tab[strcspn(tab, "\n")] = '\0';
    if (strlen(line) >= sizeof dp->sysctl[0].path || strlen(tab) >= sizeof dp->sysctl[0].orig)
      continue;
    snprintf(dp->sysctl[dp->nsysctl].path, sizeof dp->sysctl[0].path, "%s", line);
    snprintf(dp->sysctl[dp->nsysctl].orig, sizeof dp->sysctl[0].orig, "%s", tab);
    dp->nsysctl++;
  }
  fclose(f);
}

/* Sets path to want, remembering what it was (once: a crashed engine's
 * record keeps the true original). 0, or -1 with errno. */
static int sysctl_set(asbn_dp *dp, const char *path, const char *want) {
  char cur[16];
  if (read_sysctl(path, cur, sizeof cur) != 0) return -1;
  if (strcmp(cur, want) == 0) return 0;
  size_t i = 0;
  while (i < dp->nsysctl && strcmp(dp->sysctl[i].path, path) != 0) i++;
  if (i == dp->nsysctl) {
    if (i == sizeof dp->sysctl / sizeof dp->sysctl[0] ||
        strlen(path) >= sizeof dp->sysctl[0].path) {
      errno = ENOSPC;
      return -1;
    }
    snprintf(dp->sysctl[i].path, sizeof dp->sysctl[i].path, "%s", path);
    snprintf(dp->sysctl[i].orig, sizeof dp->sysctl[i].orig, "%s", cur);
    dp->nsysctl++;
    rec_save(dp); /* before the change: a crash right after it still restores */
  }
  return write_sysctl(path, want);
}

/* Whether a table of another engine is in this netns (asb_*, not ours). */
static int other_engine(asbn_dp *dp) {
  if (nft_run_cmd_from_buffer(dp->nft, "list tables") != 0) return 1; /* unsure: leave it */
  cJSON *r = cJSON_Parse(nft_ctx_get_output_buffer(dp->nft));
  int other = !r;
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "nftables")) {
    const cJSON *n = cJSON_GetObjectItem(cJSON_GetObjectItem(it, "table"), "name");
    if (cJSON_IsString(n) && strncmp(n->valuestring, "asb_", 4) == 0 &&
        strcmp(n->valuestring, dp->table) != 0)
      other = 1;
  }
  cJSON_Delete(r);
  return other;
}

static void sysctl_restore(asbn_dp *dp) {
  if (!dp->nsysctl) {
    if (dp->rec[0]) unlink(dp->rec);
    return;
  }
  if (other_engine(dp)) {
    asbi_log("net: another engine's table is in this network namespace: forwarding stays on");
    return; /* the record stays: the next engine of this state dir restores */
  }
  /* the reverse order: accept_ra goes back after forwarding is off */
  for (size_t i = dp->nsysctl; i-- > 0;)
    if (write_sysctl(dp->sysctl[i].path, dp->sysctl[i].orig) != 0 && errno != ENOENT)
      asbi_log("net: restoring %s to %s: %s", dp->sysctl[i].path, dp->sysctl[i].orig,
               strerror(errno));
  if (dp->rec[0]) unlink(dp->rec);
}

/* Turning IPv6 forwarding on makes the kernel ignore router advertisements
 * on interfaces with accept_ra 1: the host's own IPv6 (SLAAC, its default
 * route) would go. Those get accept_ra 2 (accept while forwarding) first.
 * Not the sandboxes' host ends (their input refuses RAs anyway). */
static int v6_forwarding_on(asbn_dp *dp) {
  DIR *d = opendir("/proc/sys/net/ipv6/conf");
  if (!d) return -1;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || !strcmp(de->d_name, "all") || !strcmp(de->d_name, "default") ||
        !strcmp(de->d_name, "lo") || !strncmp(de->d_name, dp->prefix, strlen(dp->prefix)))
      continue;
    char p[96], v[16];
    snprintf(p, sizeof p, "/proc/sys/net/ipv6/conf/%.32s/accept_ra", de->d_name);
    if (read_sysctl(p, v, sizeof v) == 0 && strcmp(v, "1") == 0) sysctl_set(dp, p, "2");
  }
  closedir(d);
  return sysctl_set(dp, "/proc/sys/net/ipv6/conf/all/forwarding", "1");
}

/* Whether this netns routes IPv6 anywhere (a default route): then
 * sandboxes get IPv6 by default. */
static int host_has_v6_route(void) {
  if (access("/proc/sys/net/ipv6", F_OK) != 0) return 0;
  struct nl_sock *sk = nl_open();
  struct nl_cache *cache = NULL;
  int found = 0;
  if (sk && rtnl_route_alloc_cache(sk, AF_INET6, 0, &cache) == 0) {
    for (struct nl_object *o = nl_cache_get_first(cache); o && !found; o = nl_cache_get_next(o)) {
      struct rtnl_route *r = (struct rtnl_route *)o;
      struct nl_addr *dst = rtnl_route_get_dst(r);
      if (rtnl_route_get_table(r) == RT_TABLE_MAIN && rtnl_route_get_type(r) == RTN_UNICAST &&
          (!dst || nl_addr_get_prefixlen(dst) == 0))
        found = 1;
    }
    nl_cache_free(cache);
  }
  if (sk) nl_socket_free(sk);
  return found;
}

/* "fd..::/N", N from 48 to 112, host bits zero. */
static int parse_cidr6(const char *s, uint8_t net[16], unsigned *plen) {
  char buf[64];
  const char *slash = strchr(s, '/');
  if (!slash || (size_t)(slash - s) >= sizeof buf) return -1;
  memcpy(buf, s, (size_t)(slash - s));
  buf[slash - s] = '\0';
  char *end;
  long l = strtol(slash + 1, &end, 10);
  if (inet_pton(AF_INET6, buf, net) != 1 || *end || end == slash + 1 || l < 48 || l > 112)
    return -1;
  for (unsigned b = (unsigned)l; b < 128; b++)
    if (net[b / 8] & (0x80 >> (b % 8))) return -1;
  *plen = (unsigned)l;
  return 0;
}

int asbn_dp_open(const asbn_dp_config *cfg, asbn_dp **out, char *err, size_t errlen) {
  asbn_dp *dp = calloc(1, sizeof *dp);
  if (!dp) return asbi_errf(err, errlen, "out of memory");
  pthread_mutex_init(&dp->mu, NULL);
  dp->self_ns = -1;
  names(cfg->name ? cfg->name : "agent-sandbox", dp->table, dp->prefix);
  snprintf(dp->hostglob, sizeof dp->hostglob, "%sh*", dp->prefix);
  const char *cidr = cfg->cidr4 ? cfg->cidr4 : "10.88.0.0/16";
  if (parse_cidr4(cidr, &dp->net, &dp->plen) != 0) {
    asbi_errf(err, errlen, "--net-cidr %s: want an IPv4 network a.b.c.d/N with N from 8 to 28",
              cidr);
    goto bad;
  }
  dp->nslots = 1u << (30 - dp->plen);
  if (dp->nslots > 16384) dp->nslots = 16384;
  snprintf(dp->resolv, sizeof dp->resolv, "nameserver %u.%u.%u.%u\n", (dp->net + 1) >> 24,
           ((dp->net + 1) >> 16) & 255, ((dp->net + 1) >> 8) & 255, (dp->net + 1) & 255);
  dp->dns_port = cfg->dns_port ? cfg->dns_port : 53;
  dp->proxy_port = cfg->proxy_port;
  dp->max_conns = cfg->max_connections ? cfg->max_connections : 1024;
  dp->slot = calloc(dp->nslots, 1);
  dp->self_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (!dp->slot || dp->self_ns < 0) {
    asbi_errf(err, errlen, "datapath: %s", strerror(errno));
    goto bad;
  }
  if (!(dp->nft = nft_new())) {
    asbi_errf(err, errlen, "libnftables: no context");
    goto bad;
  }
  if (cfg->cidr6 && strcmp(cfg->cidr6, "off") != 0) {
    if (parse_cidr6(cfg->cidr6, dp->net6, &dp->plen6) != 0) {
      asbi_errf(err, errlen,
                "--net-cidr6 %s: want an IPv6 network (a ULA, fd00::/8) x:y::/N with N from 48 to "
                "112, or off",
                cfg->cidr6);
      goto bad;
    }
    dp->v6 = 1;
  } else if (!cfg->cidr6 && host_has_v6_route()) {
    /* a ULA /64 of the engine's own: fd + 56 bits of the hash of its name */
    uint8_t h[32];
    asbi_sha256(cfg->name ? cfg->name : "agent-sandbox",
                strlen(cfg->name ? cfg->name : "agent-sandbox"), h);
    dp->net6[0] = 0xfd;
    memcpy(dp->net6 + 1, h + 8, 7);
    dp->plen6 = 64;
    dp->v6 = 1;
  }
  if (cfg->state_dir) snprintf(dp->rec, sizeof dp->rec, "%s/net-sysctl", cfg->state_dir);
  rec_load(dp);
  reap_links(dp->prefix);
  if (sysctl_set(dp, "/proc/sys/net/ipv4/ip_forward", "1") != 0) {
    asbi_errf(err, errlen, "net.ipv4.ip_forward: %s", strerror(errno));
    goto bad;
  }
  if (dp->v6 && v6_forwarding_on(dp) != 0) {
    asbi_errf(err, errlen, "net.ipv6.conf.all.forwarding: %s", strerror(errno));
    goto bad;
  }
  pthread_mutex_lock(&dp->mu);
  int rc = nft_table(dp, err, errlen);
  pthread_mutex_unlock(&dp->mu);
  if (rc != 0) goto bad;
  *out = dp;
  return 0;
bad:
  asbn_dp_close(dp);
  return -1;
}

void asbn_dp_close(asbn_dp *dp) {
  if (!dp) return;
  if (dp->nft) {
    pthread_mutex_lock(&dp->mu);
    nft_delete_table(dp);
    pthread_mutex_unlock(&dp->mu);
  }
  if (dp->slot) reap_links(dp->prefix); /* every pair: deleting an end deletes both */
  if (dp->nft) {
    sysctl_restore(dp);
    nft_ctx_free(dp->nft);
  }
  if (dp->self_ns >= 0) close(dp->self_ns);
  free(dp->slot);
  pthread_mutex_destroy(&dp->mu);
  free(dp);
}

/* A free slot, round robin from the last one taken (a slot freed by a
 * kill is taken again last: its pair is gone by then), marked attached;
 * dp->nslots when none is left. Caller holds dp->mu. */
static unsigned slot_take(asbn_dp *dp) {
  for (unsigned k = 0; k < dp->nslots; k++) {
    unsigned i = (dp->next + k) % dp->nslots;
    if (dp->slot[i] == SLOT_UNUSED) {
      dp->slot[i] = SLOT_ATTACHED;
      dp->next = (i + 1) % dp->nslots;
      return i;
    }
  }
  return dp->nslots;
}

static void slot_put(asbn_dp *dp, unsigned slot) {
  pthread_mutex_lock(&dp->mu);
  dp->slot[slot] = SLOT_UNUSED;
  pthread_mutex_unlock(&dp->mu);
}

int asbn_dp_attach(asbn_dp *dp, int netns_fd, asbn_dp_link **out, char *err, size_t errlen) {
  asbn_dp_link *l = calloc(1, sizeof *l);
  if (!l) return asbi_errf(err, errlen, "out of memory");
  l->ns_fd = fcntl(netns_fd, F_DUPFD_CLOEXEC, 3);
  struct nl_sock *sk = nl_open(), *in = NULL;
  if (l->ns_fd < 0 || !sk) {
    asbi_errf(err, errlen, "%s: %s", l->ns_fd < 0 ? "netns fd" : "netlink", strerror(errno));
    goto bad;
  }
  /* a slot whose host end is free (a pair of a sandbox killed a moment ago
   * may still be on its way out: the kernel deletes it with its netns) */
  unsigned slot;
  int rc = -NLE_EXIST;
  for (int tries = 0; tries < 64 && rc == -NLE_EXIST; tries++) {
    pthread_mutex_lock(&dp->mu);
    slot = slot_take(dp);
    pthread_mutex_unlock(&dp->mu);
    if (slot == dp->nslots) {
      asbi_errf(err, errlen, "no free address in the link range (%u sandboxes)", dp->nslots);
      goto bad;
    }
    if ((rc = pair_make(dp, sk, slot, l->ns_fd)) < 0) slot_put(dp, slot);
  }
  if (rc < 0) {
    asbi_errf(err, errlen, "veth pair: %s", nl_geterror(rc));
    goto bad;
  }
  l->slot = slot;
  l->host = slot_host(dp, slot);
  char h[IFNAMSIZ];
  host_if(dp, slot, h);
  if (!(in = nl_open_in(dp, l->ns_fd))) {
    asbi_errf(err, errlen, "netlink in the sandbox: %s", strerror(errno));
    goto bad_pair;
  }
  int idx;
  uint8_t h6[16], s6[16];
  if (dp->v6) {
    slot_addr6(dp, slot, 1, h6);
    slot_addr6(dp, slot, 2, s6);
  }
  if ((rc = link_set(in, "eth0", NULL, 1, -1)) < 0 || (idx = link_index(in, "eth0")) < 0 ||
      (rc = addr_add(in, idx, l->host + 1, 30)) < 0 || (rc = route_default(in, idx, l->host)) < 0 ||
      (dp->v6 && ((rc = addr_add_raw(in, idx, AF_INET6, s6, 126)) < 0 ||
                  (rc = route_default_raw(in, idx, AF_INET6, h6)) < 0))) {
    asbi_errf(err, errlen, "eth0 in the sandbox: %s", nl_geterror(rc < 0 ? rc : -NLE_OBJ_NOTFOUND));
    goto bad_pair;
  }
  pthread_mutex_lock(&dp->mu);
  rc = nft_attach(dp, slot, err, errlen);
  pthread_mutex_unlock(&dp->mu);
  if (rc != 0) goto bad_pair;
  nl_socket_free(in);
  nl_socket_free(sk);
  *out = l;
  return 0;
bad_pair:
  if (in) nl_socket_free(in);
  link_delete(sk, h);
  slot_put(dp, slot);
bad:
  if (sk) nl_socket_free(sk);
  if (l->ns_fd >= 0) close(l->ns_fd);
  free(l);
  return -1;
}

int asbn_dp_apply(asbn_dp *dp, asbn_dp_link *l, const asbn_policy *p, char *err, size_t errlen) {
  pthread_mutex_lock(&dp->mu);
  int rc = nft_policy(dp, l->slot, p, err, errlen);
  pthread_mutex_unlock(&dp->mu);
  return rc;
}

static void unlink_rules(asbn_dp *dp, asbn_dp_link *l) {
  pthread_mutex_lock(&dp->mu);
  nft_detach(dp, l->slot);
  pthread_mutex_unlock(&dp->mu);
}

void asbn_dp_detach(asbn_dp *dp, asbn_dp_link *l) {
  if (!l) return;
  unlink_rules(dp, l);
  char h[IFNAMSIZ];
  host_if(dp, l->slot, h);
  struct nl_sock *sk = nl_open();
  if (sk) {
    link_delete(sk, h); /* both ends */
    nl_socket_free(sk);
  }
  close(l->ns_fd);
  slot_put(dp, l->slot);
  free(l);
}

void asbn_dp_release(asbn_dp *dp, asbn_dp_link *l) {
  if (!l) return;
  unlink_rules(dp, l);
  close(l->ns_fd); /* the netns lives on only while its processes do */
  slot_put(dp, l->slot);
  free(l);
}

struct in_addr asbn_dp_sandbox_addr(const asbn_dp_link *l) {
  struct in_addr a = {htonl(l->host + 1)};
  return a;
}

int asbn_dp_sandbox_addr6(const asbn_dp *dp, const asbn_dp_link *l, struct in6_addr *out) {
  if (!dp->v6) return -1;
  slot_addr6(dp, l->slot, 2, out->s6_addr);
  return 0;
}

int asbn_dp_has_ipv6(const asbn_dp *dp) {
  return dp->v6;
}

struct in_addr asbn_dp_host_addr(const asbn_dp_link *l) {
  struct in_addr a = {htonl(l->host)};
  return a;
}

static int counter_get(asbn_dp *dp, const char *fmt, unsigned slot, uint64_t *bytes) {
  cJSON *c = cJSON_CreateArray();
  named(dp, c, "list", "counter", fmt, slot);
  char err[256];
  if (nft_run(dp, c, err, sizeof err) != 0) return -1;
  cJSON *r = cJSON_Parse(nft_ctx_get_output_buffer(dp->nft));
  int rc = -1;
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "nftables")) {
    const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(it, "counter"), "bytes");
    if (cJSON_IsNumber(b)) {
      *bytes = (uint64_t)b->valuedouble;
      rc = 0;
    }
  }
  cJSON_Delete(r);
  return rc;
}

int asbn_dp_counters(asbn_dp *dp, const asbn_dp_link *l, uint64_t *bytes_out, uint64_t *bytes_in) {
  pthread_mutex_lock(&dp->mu);
  int rc = counter_get(dp, "o_%u", l->slot, bytes_out) | counter_get(dp, "i_%u", l->slot, bytes_in);
  pthread_mutex_unlock(&dp->mu);
  return rc ? -1 : 0;
}

const char *asbn_dp_table(const asbn_dp *dp) {
  return dp->table;
}

const char *asbn_dp_resolv_conf(const asbn_dp *dp) {
  return dp->resolv;
}
