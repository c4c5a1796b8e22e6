/* Fuzz the SOCKS5 client's reading of the server's replies (core/net/
 * egress/socks.c): the egressProxy a policy names is outside the engine.
 * The input is what the server sends, over a socketpair; the client
 * must end (0 or -1) without reading past a reply or hanging, and accept
 * only a well-formed exchange. SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "net/egress/socks.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  if (n > 4096) return 0;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) return 0;
  if (n && write(sv[1], d, n) != (ssize_t)n) {
    close(sv[0]);
    close(sv[1]);
    return 0;
  }
  shutdown(sv[1], SHUT_WR);
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  uint8_t a4[4] = {198, 18, 0, 20};
  int auth = n && (d[0] & 1);
  int rc = socks_connect(sv[0], auth ? "user" : NULL, auth ? "pass" : NULL,
                         n > 1 && (d[1] & 1) ? "example.test" : NULL, AF_INET, a4, 443, 2000);
  FUZZ_CHECK(rc == 0 || rc == -1);
  if (rc == 0) FUZZ_CHECK(n >= 2 + 7 && d[0] == 5); /* method, then the shortest reply */
  close(sv[0]);
  close(sv[1]);
  return 0;
}
