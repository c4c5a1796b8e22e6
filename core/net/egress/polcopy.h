/* The egress services' own deep copy of an asbn_policy. policy.c
 * (asbn_policy_copy/free, net-datapath's) is the caller's; the egress
 * table keeps a copy it allocated itself, so it links without the
 * parser and frees exactly what it made. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_POLCOPY_H
#define ASB_NET_EGRESS_POLCOPY_H

#include "net/policy.h"

/* 0, or -1 (out of memory; *dst is then empty). */
int polcopy_dup(const asbn_policy *src, asbn_policy *dst);
void polcopy_free(asbn_policy *p);

#endif
