/* The egress services' table of sandboxes (by source address): each one's
 * policy, the names and addresses the resolver gave it (TTL-bounded), its
 * open proxied connections, its counters. One mutex; every function is
 * thread-safe. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_SBX_H
#define ASB_NET_EGRESS_SBX_H

#include <stdint.h>

#include "decide.h"
#include "dnsmsg.h"
#include "egress.h"

#define SBX_MAX_RECORDS 4096 /* names x addresses remembered per sandbox */

typedef struct sbx_table sbx_table;

/* A proxied connection, owned by its proxy thread, listed in its
 * sandbox while open. */
typedef struct sbx_conn {
  struct sbx_conn *next, *prev;
  int listed; /* in its sandbox's list (guarded by the table) */
  int family; /* of src and dst */
  uint8_t src[16], dst[16];
  uint16_t dst_port;
  char name[254];               /* SNI / Host, "" if none */
  int fd_client, fd_upstream;   /* shut down (both ways) when the policy cuts it */
  uint64_t bytes_out, bytes_in; /* __atomic */
  /* filled by sbx_conn_decide for the proxy: */
  decide_why why;
  int decided;                                /* why is set: a live update re-decides only these */
  char *socks_addr, *socks_user, *socks_pass; /* malloc'ed copies, or NULL */
  /* the header rule for name, copied (values are templates: secrets are
   * resolved per request), nh 0 if none */
  char **hnames, **hvalues;
  size_t nh;
} sbx_conn;

sbx_table *sbx_table_new(unsigned max_per_sandbox, unsigned max_total);
void sbx_table_free(sbx_table *t);

int sbx_set_policy(sbx_table *t, int family, const uint8_t *addr, const asbn_policy *p);
/* also (family2) is the same sandbox as known: 0, or -1 (known unknown,
 * also another sandbox's, or two addresses already). */
int sbx_add_address(sbx_table *t, int family, const uint8_t *known, int family2,
                    const uint8_t *also);
int sbx_forget(sbx_table *t, int family, const uint8_t *addr);
int sbx_counters(sbx_table *t, int family, const uint8_t *addr, asbn_egress_counters *out);

/* The resolver: -1 unknown sandbox, 0 refuse (counted), 1 forward
 * (counted as answered). */
int sbx_dns_check(sbx_table *t, int family, const uint8_t *src, const char *name, int name_ok);
/* Records the addresses the resolver is giving src for name. */
void sbx_dns_record(sbx_table *t, int family, const uint8_t *src, const char *name,
                    const dnsmsg_addr *a, size_t n);

/* The proxy, for a new connection c (family, src, dst, dst_port, fds set):
 * 1 listed, the decision needs its name (*needs_name) or not; 0 refused
 * without a look (unknown sandbox, over the connection cap: counted). */
int sbx_conn_begin(sbx_table *t, sbx_conn *c, int *needs_name);
/* With c->name set (or ""): the decision into c->why (counted), the
 * upstream proxy copied into c. > 0 allowed. */
int sbx_conn_decide(sbx_table *t, sbx_conn *c);
/* Sets c's upstream fd (so a cut reaches it); -1 if c was cut meanwhile. */
int sbx_conn_set_upstream(sbx_table *t, sbx_conn *c, int fd);
/* Shuts down every listed connection (the proxy's stop). */
void sbx_cut_all(sbx_table *t);
/* The connection ended: unlisted, its bytes added, copies freed. */
void sbx_conn_end(sbx_table *t, sbx_conn *c);

#endif
