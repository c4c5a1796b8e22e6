/* A SOCKS5 client for network.egressProxy (RFC 1928 CONNECT, RFC 1929
 * username/password): tiny, and no Debian library offers the client side
 * on an fd the caller already holds. The proxy's replies are hostile
 * input: fixed-size reads, every field checked. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_SOCKS_H
#define ASB_NET_EGRESS_SOCKS_H

#include <stdint.h>

/* On fd (connected to the SOCKS5 server, non-blocking), within timeout_ms:
 * CONNECT to name:port (ATYP domain) when name is set, else to the
 * address dst (family AF_INET/AF_INET6). user/pass NULL: no auth offered
 * but "none". 0, or -1 (refused, bad reply, timeout). */
int socks_connect(int fd, const char *user, const char *pass, const char *name, int family,
                  const uint8_t *dst, uint16_t port, int timeout_ms);

#endif
