/* Fuzz the egress proxy's HTTP/1.x request handling (core/net/egress/
 * h1req.c): heads and bodies come from sandboxes. Invariants: spans stay
 * inside the head; a parsed head's Host is normalised; the rewritten head
 * parses again, with the rule's headers once each and the same Host and
 * framing; the chunk tracker never consumes more than it is fed and gives
 * the same body length for any split of the input.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "net/egress/h1req.h"
#include "net/egress/peek.h"

static long chunks(const char *b, size_t n, fuzz_rng *rng, int *done) {
  h1req_chunks c;
  h1req_chunks_init(&c);
  size_t at = 0;
  *done = 0;
  while (at < n && !*done) {
    size_t step = 1 + (size_t)(fuzz_rng_next(rng) % 64);
    if (step > n - at) step = n - at;
    long k = h1req_chunks_feed(&c, b + at, step, done);
    if (k < 0) return -1;
    FUZZ_CHECK((size_t)k <= step);
    FUZZ_CHECK(*done || (size_t)k == step);
    at += (size_t)k;
  }
  return (long)at;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  char *buf = malloc(n ? n : 1);
  memcpy(buf, d, n);
  h1req_head h;
  int r = h1req_parse(buf, n, &h);
  if (r == 1) {
    FUZZ_CHECK(h.head_len <= n && h.line_len < h.head_len);
    for (size_t i = 0; i < h.nheaders; i++) {
      FUZZ_CHECK(h.name[i].off + h.name[i].len <= h.head_len);
      FUZZ_CHECK(h.value[i].off + h.value[i].len <= h.head_len);
    }
    if (h.host[0]) {
      char copy[sizeof h.host];
      memcpy(copy, h.host, sizeof copy);
      FUZZ_CHECK(peek_norm_name(copy) == 0 && !strcmp(copy, h.host));
    }
    FUZZ_CHECK(!(h.chunked && h.body_len));
    const char *names[] = {"Authorization", "X-Extra"}, *values[] = {"Bearer t0k", ""};
    char *out = NULL;
    size_t ol = 0;
    if (h1req_rewrite(buf, &h, names, values, 2, &out, &ol) < 0) {
      /* only when the result would pass the parser's own limits */
      FUZZ_CHECK(h.nheaders + 2 > H1REQ_MAX_HEADERS || h.head_len + 40 > H1REQ_HEAD_MAX);
      free(buf);
      return 0;
    }
    h1req_head h2;
    FUZZ_CHECK(h1req_parse(out, ol, &h2) == 1 && h2.head_len == ol);
    FUZZ_CHECK(!strcmp(h2.host, h.host) && h2.is_ip == h.is_ip);
    FUZZ_CHECK(h2.chunked == h.chunked && h2.body_len == h.body_len && h2.upgrade == h.upgrade);
    int auth = 0;
    for (size_t i = 0; i < h2.nheaders; i++)
      if (h2.name[i].len == 13 && !strncasecmp(out + h2.name[i].off, "authorization", 13)) auth++;
    FUZZ_CHECK(auth == 1);
    free(out);
  }
  /* The chunk tracker, two different splits. */
  fuzz_rng a, b;
  fuzz_rng_init(&a, d, n, 1);
  fuzz_rng_init(&b, d, n, 2);
  int da, db;
  long ka = chunks(buf, n, &a, &da), kb = chunks(buf, n, &b, &db);
  FUZZ_CHECK(ka == kb && da == db);
  free(buf);
  return 0;
}
