/* Fuzz the egress proxy's first-bytes parser (core/net/egress/peek.c):
 * what a sandbox sends first is hostile, and the name it yields decides
 * what the sandbox may reach. Invariants: never reads past len (a private
 * copy of exactly len bytes); a name comes out normalised (lower case, a
 * valid host name, never an IP literal) and only with a complete
 * ClientHello or request head; the head length stays inside the input;
 * the verdict of the full input does not change when bytes are appended
 * after a complete HTTP head. SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "net/egress/peek.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  unsigned char *buf = malloc(n ? n : 1);
  memcpy(buf, d, n);
  peek_result r;
  peek_kind k = peek_classify(buf, n, &r);
  FUZZ_CHECK(k == r.kind);
  FUZZ_CHECK(k >= PEEK_MORE && k <= PEEK_HTTP);
  if (r.name[0]) {
    FUZZ_CHECK(k == PEEK_TLS || k == PEEK_HTTP);
    FUZZ_CHECK(!r.is_ip);
    char copy[PEEK_NAME_MAX + 1];
    memcpy(copy, r.name, sizeof copy);
    FUZZ_CHECK(memchr(copy, 0, sizeof copy) != NULL);
    FUZZ_CHECK(peek_norm_name(copy) == 0 && strcmp(copy, r.name) == 0);
  }
  if (k == PEEK_HTTP) {
    FUZZ_CHECK(r.head_len >= 4 && r.head_len <= n);
    FUZZ_CHECK(memcmp(buf + r.head_len - 4, "\r\n\r\n", 4) == 0);
    /* A head that is complete stays the same head with a body after it. */
    unsigned char *more = malloc(n + 7);
    memcpy(more, buf, n);
    memcpy(more + n, "trailer", 7);
    peek_result r2;
    FUZZ_CHECK(peek_classify(more, n + 7, &r2) == PEEK_HTTP);
    FUZZ_CHECK(r2.head_len == r.head_len && strcmp(r2.name, r.name) == 0);
    free(more);
  }
  if (k == PEEK_MORE || k == PEEK_OTHER) FUZZ_CHECK(!r.name[0] && !r.is_ip && !r.head_len);
  free(buf);
  return 0;
}
