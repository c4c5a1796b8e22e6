/* The transparent TCP proxy for sandboxes (egress.h): one thread per
 * connection, the destination from SO_ORIGINAL_DST, the name from the
 * first bytes (peek.h), the decision from the sandbox table (sbx.h), then
 * the bytes spliced both ways (splice(2) through a pipe per direction)
 * directly or through the policy's SOCKS5 upstream (socks.h); or request
 * by request (httpx.h) where Host checks or header rules need it.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_PROXY_H
#define ASB_NET_EGRESS_PROXY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "sbx.h"
#include "secrets.h"
#include "tlsmitm.h"

typedef struct proxy proxy;

/* secrets (may be NULL) resolve header rules' placeholders; mitm (may be
 * NULL) intercepts HTTPS to domains with header rules. */
int proxy_start(sbx_table *t, const struct sockaddr_storage *binds, size_t nbinds,
                unsigned peek_timeout_s, asbn_secrets *secrets, tlsmitm *mitm, proxy **out,
                char *err, size_t errlen);
uint16_t proxy_port(const proxy *p);
void proxy_stop(proxy *p);

#endif
