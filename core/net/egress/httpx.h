/* The egress proxy's HTTP-aware relay (proxy.c uses it instead of
 * splicing when it must see each request): plain HTTP on a domain
 * allowance or with header rules, and HTTPS to a domain with header rules
 * (TLS terminated on both sides, tlsmitm.h). Every request's Host must be
 * the connection's allowed name (421 and close otherwise: keep-alive
 * cannot switch vhost on a shared address); the rule's headers replace
 * the request's own of those names, with ${e2b.secrets.<name>} resolved
 * from the store at that moment (502 and close if one is unknown). The
 * responses pass unchanged. After CONNECT or an Upgrade the rest of the
 * stream passes unchanged. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_HTTPX_H
#define ASB_NET_EGRESS_HTTPX_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

#include "secrets.h"

typedef struct httpx_conn {
  int cfd, ufd;     /* non-blocking sockets: the sandbox's, the upstream's */
  SSL *cssl, *ussl; /* both set (interception) or both NULL (plain HTTP) */
  const char *name; /* the allowed name every Host must be */
  const char *const *hnames, *const *hvalues; /* the rule's headers (value templates) */
  size_t nh;
  asbn_secrets *secrets;
  uint64_t *bytes_out, *bytes_in; /* __atomic counters */
} httpx_conn;

/* Runs the connection to its end (TLS handshakes first when set). */
void httpx_relay(httpx_conn *x);

#endif
