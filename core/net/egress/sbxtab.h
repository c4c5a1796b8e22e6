/* The egress services' table of sandboxes (by source address): each one's
 * policy, the names and addresses the resolver gave it (TTL-bounded), its
 * open proxied connections, its counters. One mutex; every function is
 * thread-safe. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_SBXTAB_H
#define ASB_NET_EGRESS_SBXTAB_H

#include <stdint.h>

#include "decide.h"
#include "dnsmsg.h"
#include "egress.h"

#define SBX_MAX_RECORDS 4096 /* names x addresses remembered per sandbox */

typedef struct sbxtab sbxtab;

/* A proxied connection, owned by its proxy thread, listed in its
 * sandbox while open. */
typedef struct sbxtab_conn {
  struct sbxtab_conn *next, *prev;
  int listed; /* in its sandbox's list (guarded by the table) */
  int family; /* of src and dst */
  uint8_t src[16], dst[16];
  uint16_t dst_port;
  char name[254];               /* SNI / Host, "" if none */
  int fd_client, fd_upstream;   /* shut down (both ways) when the policy cuts it */
  uint64_t bytes_out, bytes_in; /* __atomic */
  /* filled by sbxtab_conn_decide for the proxy: */
  decide_why why;
  int decided;                                /* why is set: a live update re-decides only these */
  char *socks_addr, *socks_user, *socks_pass; /* malloc'ed copies, or NULL */
  /* the header rule for name, copied (values are templates: secrets are
   * resolved per request), nh 0 if none */
  char **hnames, **hvalues;
  size_t nh;
} sbxtab_conn;

sbxtab *sbxtab_new(unsigned max_per_sandbox, unsigned max_total);
void sbxtab_free(sbxtab *t);

int sbxtab_set_policy(sbxtab *t, int family, const uint8_t *addr, const asbn_policy *p);
/* also (family2) is the same sandbox as known: 0, or -1 (known unknown,
 * also another sandbox's, or two addresses already). */
int sbxtab_add_address(sbxtab *t, int family, const uint8_t *known, int family2,
                       const uint8_t *also);
int sbxtab_forget(sbxtab *t, int family, const uint8_t *addr);
int sbxtab_counters(sbxtab *t, int family, const uint8_t *addr, asbn_egress_counters *out);

/* The resolver: -1 unknown sandbox, 0 refuse (counted), 1 forward
 * (counted as answered). */
int sbxtab_dns_check(sbxtab *t, int family, const uint8_t *src, const char *name, int name_ok);
/* Records the addresses the resolver is giving src for name. */
void sbxtab_dns_record(sbxtab *t, int family, const uint8_t *src, const char *name,
                       const dnsmsg_addr *a, size_t n);

/* The proxy, for a new connection c (family, src, dst, dst_port, fds set):
 * 1 listed, the decision needs its name (*needs_name) or not; 0 refused
 * without a look (unknown sandbox, over the connection cap: counted). */
int sbxtab_conn_begin(sbxtab *t, sbxtab_conn *c, int *needs_name);
/* With c->name set (or ""): the decision into c->why (counted), the
 * upstream proxy copied into c. > 0 allowed. */
int sbxtab_conn_decide(sbxtab *t, sbxtab_conn *c);
/* Sets c's upstream fd (so a cut reaches it); -1 if c was cut meanwhile. */
int sbxtab_conn_set_upstream(sbxtab *t, sbxtab_conn *c, int fd);
/* Shuts down every listed connection (the proxy's stop). */
void sbxtab_cut_all(sbxtab *t);
/* The connection ended: unlisted, its bytes added, copies freed. */
void sbxtab_conn_end(sbxtab *t, sbxtab_conn *c);

#endif
