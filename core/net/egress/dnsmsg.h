/* DNS messages the resolver reads and writes, on Debian's libldns
 * (ldns_wire2pkt / ldns_pkt2wire): the sandbox's query (one question),
 * the upstream's answer (its A/AAAA records and TTLs, checked against the
 * query), and the replies the resolver makes itself: REFUSED / SERVFAIL,
 * and the loopback answers of localhost names.
 * Everything it reads is hostile (a sandbox, or whatever answers as the
 * upstream); fuzzed by tests/fuzz/fuzz_dnsmsg.c.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_DNSMSG_H
#define ASB_NET_EGRESS_DNSMSG_H

#include <stddef.h>
#include <stdint.h>

#define DNSMSG_NAME_MAX 253
#define DNSMSG_MAX_ADDRS 32

typedef struct dnsmsg_query {
  uint16_t id, qtype, qclass;
  int rd;
  /* lower case, no trailing dot; "" for the root; name_ok 0 when the name
   * has characters a host name does not (it is still forwarded when the
   * policy lets every name through, never recorded) */
  char name[DNSMSG_NAME_MAX + 1];
  int name_ok;
} dnsmsg_query;

typedef struct dnsmsg_addr {
  int family;       /* AF_INET, AF_INET6 */
  uint8_t addr[16]; /* network order */
  uint32_t ttl;
} dnsmsg_addr;

/* A query from a sandbox: exactly one question, QR 0, opcode QUERY.
 * 0, or -1 (not one: the resolver drops it). */
int dnsmsg_parse_query(const uint8_t *wire, size_t n, dnsmsg_query *q);

/* An upstream's reply to q: same id, QR 1, the same question. Its A and
 * AAAA records in the answer section (every owner: the CNAME chain of q's
 * name belongs to the answer) go into addrs, at most max. 0 and
 * *naddrs, or -1 if it is not a reply to q. *tc: the TC bit. */
int dnsmsg_parse_reply(const uint8_t *wire, size_t n, const dnsmsg_query *q, dnsmsg_addr *addrs,
                       size_t max, size_t *naddrs, int *tc);

/* A reply to the query wire[0..n) with this rcode (5 REFUSED, 2 SERVFAIL)
 * and no records, the question copied. A malloc'ed buffer in *out (free
 * it), 0; -1 if the query does not parse. */
int dnsmsg_error_reply(const uint8_t *wire, size_t n, int rcode, uint8_t **out, size_t *outlen);

/* 1 if name (a dnsmsg_query's: lower case, no trailing dot) is
 * "localhost" or a name under it (RFC 6761 6.3). */
int dnsmsg_is_localhost(const char *name);

/* The resolver's own answer to a localhost name's query wire[0..n)
 * (RFC 6761 6.3: loopback, never asked upstream): authoritative, A
 * 127.0.0.1 / AAAA ::1 for class IN, no records (NOERROR) for any other
 * type, TTL DNSMSG_LOOPBACK_TTL. Malloc'ed in *out, 0; -1 if the query
 * does not parse. */
#define DNSMSG_LOOPBACK_TTL 3600
int dnsmsg_loopback_reply(const uint8_t *wire, size_t n, uint8_t **out, size_t *outlen);

#endif
