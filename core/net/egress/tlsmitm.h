/* TLS interception for the domains that have header rules (and only
 * those): the engine's egress CA (EC P-256; egress-ca.key 0600 and
 * egress-ca.pem in the state dir, made on first start, kept across
 * restarts), a leaf certificate per SNI minted on first use and cached,
 * the sandbox-facing TLS server with it, and the upstream TLS client that
 * verifies the real server against the system trust store (or a CA file,
 * for tests) and its name. ALPN offers http/1.1 only: the proxy reads
 * HTTP/1.x. On OpenSSL. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_TLSMITM_H
#define ASB_NET_EGRESS_TLSMITM_H

#include <openssl/ssl.h>
#include <stddef.h>

typedef struct tlsmitm tlsmitm;

int tlsmitm_open(const char *state_dir, const char *upstream_ca_file, tlsmitm **out, char *err,
                 size_t errlen);
void tlsmitm_close(tlsmitm *m);
/* The CA certificate's path (PEM). */
const char *tlsmitm_ca_path(const tlsmitm *m);
/* A server-side SSL on fd presenting a leaf for name; NULL on failure. */
SSL *tlsmitm_server(tlsmitm *m, const char *name, int fd);
/* A client-side SSL on fd that verifies the upstream as name. */
SSL *tlsmitm_client(tlsmitm *m, const char *name, int fd);

#endif
