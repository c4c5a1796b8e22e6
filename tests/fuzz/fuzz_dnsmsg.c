/* Fuzz the resolver's DNS message handling (core/net/egress/dnsmsg.c on
 * libldns): queries come from sandboxes, replies from whatever answers as
 * the upstream. Invariants: a parsed query's name is a valid host name or
 * empty; the resolver's own error reply to it parses back as a reply to
 * that same query with no addresses, its loopback answer (localhost
 * names) with at most 127.0.0.1 for A or ::1 for AAAA; parsing the input as a reply to it
 * yields at most the asked number of addresses, each of a known family.
 * SPDX-License-Identifier: Apache-2.0 */
#include <sys/socket.h>

#include "fuzz.h"
#include "net/egress/dnsmsg.h"
#include "net/egress/peek.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  uint8_t *buf = malloc(n ? n : 1);
  memcpy(buf, d, n);
  dnsmsg_query q;
  if (dnsmsg_parse_query(buf, n, &q) == 0) {
    FUZZ_CHECK(memchr(q.name, 0, sizeof q.name) != NULL);
    if (q.name_ok) {
      char copy[sizeof q.name];
      memcpy(copy, q.name, sizeof copy);
      FUZZ_CHECK(peek_norm_name(copy) == 0 && strcmp(copy, q.name) == 0);
    }
    uint8_t *err = NULL;
    size_t el = 0;
    if (dnsmsg_error_reply(buf, n, 5, &err, &el) == 0) {
      dnsmsg_addr a[4];
      size_t na = 99;
      int tc = 1;
      FUZZ_CHECK(dnsmsg_parse_reply(err, el, &q, a, 4, &na, &tc) == 0);
      FUZZ_CHECK(na == 0 && tc == 0);
      FUZZ_CHECK((err[3] & 15) == 5);
      free(err);
    }
    /* the loopback answer of a localhost name: a reply to the same query,
     * NOERROR, at most the one loopback address of the asked family */
    uint8_t *lb = NULL;
    size_t ll = 0;
    if (dnsmsg_loopback_reply(buf, n, &lb, &ll) == 0) {
      dnsmsg_addr a[4];
      size_t na = 99;
      int tc = 1;
      FUZZ_CHECK(dnsmsg_parse_reply(lb, ll, &q, a, 4, &na, &tc) == 0);
      FUZZ_CHECK(na <= 1 && tc == 0 && (lb[3] & 15) == 0);
      static const uint8_t v4[4] = {127, 0, 0, 1}, v6[16] = {[15] = 1};
      if (na == 1)
        FUZZ_CHECK((q.qtype == 1 && a[0].family == AF_INET && !memcmp(a[0].addr, v4, 4)) ||
                   (q.qtype == 28 && a[0].family == AF_INET6 && !memcmp(a[0].addr, v6, 16)));
      free(lb);
    }
  }
  /* The same bytes as a reply to a fixed question. */
  dnsmsg_query fixed;
  memset(&fixed, 0, sizeof fixed);
  fixed.id = n >= 2 ? (uint16_t)(buf[0] << 8 | buf[1]) : 0;
  fixed.qtype = 1;
  strcpy(fixed.name, "example.test");
  fixed.name_ok = 1;
  dnsmsg_addr a[DNSMSG_MAX_ADDRS];
  size_t na = 0;
  int tc = 0;
  if (dnsmsg_parse_reply(buf, n, &fixed, a, 3, &na, &tc) == 0) {
    FUZZ_CHECK(na <= 3);
    for (size_t i = 0; i < na; i++) FUZZ_CHECK(a[i].family == AF_INET || a[i].family == AF_INET6);
  }
  free(buf);
  return 0;
}
