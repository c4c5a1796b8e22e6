/* The engine's DNS resolver for sandboxes (egress.h): UDP and TCP on one
 * port, forwarding to the upstream servers with a fresh socket and a
 * random id per query, recording the answers in the sandbox table and
 * answering REFUSED where the policy says so. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_RESOLVER_H
#define ASB_NET_EGRESS_RESOLVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "sbx.h"

typedef struct resolver resolver;

/* binds[nbinds] (port in them; 0 = pick one, the same for all binds and
 * both protocols), upstream servers ups[nups]. 0 or -1 with err. */
int resolver_start(sbx_table *t, const struct sockaddr_storage *binds, size_t nbinds,
                   const struct sockaddr_storage *ups, size_t nups, resolver **out, char *err,
                   size_t errlen);
uint16_t resolver_port(const resolver *r);
void resolver_stop(resolver *r);

/* Parses "ADDR", "ADDR:PORT", "[V6]:PORT" (port default def) into ss.
 * 0 or -1. */
int resolver_parse_addr(const char *s, uint16_t def, struct sockaddr_storage *ss);
/* The nameservers of a resolv.conf file, up to max: how many (0: none). */
size_t resolver_read_conf(const char *path, struct sockaddr_storage *ups, size_t max);

#endif
