/* The client's check of E2B's network config (issue 17) before it is sent:
 * asb_sandbox_options.network_json (SandboxNetworkConfig) and
 * asb_sandbox_update_network's (SandboxNetworkUpdateConfig). Only the shape
 * is checked — a JSON object of E2B's members, each of its JSON type — so a
 * typo fails naming the member instead of being dropped by a server that
 * ignores unknown keys; the values (CIDRs, domains, header names) are the
 * engine's to judge (core/net/policy.c answers 400).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_NETCONF_H
#define ASB_PROTO_NETCONF_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Parses json (len bytes, no NUL needed) into *out, a JSON object of
 * SandboxNetworkConfig's members (update = 0: allowOut, denyOut, rules,
 * egressProxy, allowPublicTraffic, maskRequestHost) or
 * SandboxNetworkUpdateConfig's (update = 1: the first four), and in both
 * the local engine's own limits (egressBytesPerSecond, maxConnections:
 * whole numbers). 0, or -1 with
 * *out NULL and a sentence in err (always NUL-terminated when errlen > 0)
 * naming what is wrong. Nesting is bounded by asbi_pj_parse. */
int asbi_netconf_parse(const char *json, size_t len, int update, cJSON **out, char *err,
                       size_t errlen);

#endif
