/* Fuzz the HTTP/1.1 response-head parser and the chunked decoder (the
 * engine's router parses what a sandbox's servers send back, so all of it
 * is hostile). Invariants: the head parser never reads past len and agrees
 * with itself on every prefix; header pointers stay inside the input; the
 * chunked decoder gives the same payload for any chunking and never grows
 * its output past its input. SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "proto/http1.h"

static void check_head(const uint8_t *d, size_t n) {
  /* A private copy exactly n bytes long, so ASan sees any over-read. */
  char *buf = malloc(n ? n : 1);
  memcpy(buf, d, n);
  asbi_h1_resp r;
  long rc = asbi_h1_parse_response(buf, n, d[0] & 1, &r);
  if (rc > 0) {
    FUZZ_CHECK((size_t)rc <= n);
    FUZZ_CHECK(r.status >= 100 && r.status <= 999);
    for (size_t i = 0; i < r.nheaders; i++) {
      FUZZ_CHECK(r.headers[i].name >= buf && r.headers[i].name + r.headers[i].name_len <= buf + rc);
      FUZZ_CHECK(r.headers[i].value >= buf &&
                 r.headers[i].value + r.headers[i].value_len <= buf + rc);
    }
    /* Any strict prefix of a complete head is incomplete (or an error it
     * would also have hit), never a different complete head. */
    asbi_h1_resp r2;
    long rc2 = asbi_h1_parse_response(buf, (size_t)rc - 1, d[0] & 1, &r2);
    FUZZ_CHECK(rc2 < 0);
    asbi_h1_find(&r, "content-length");
  }
  free(buf);
}

static size_t dechunk(const uint8_t *d, size_t n, int mode, char *out, int *err, int *done) {
  asbi_h1_chunked c;
  asbi_h1_chunked_init(&c);
  fuzz_rng rng;
  fuzz_rng_init(&rng, d, n, 7);
  size_t at = 0, total = 0;
  *err = 0;
  while (at < n && !c.done) {
    size_t k = mode == 0 ? n - at : mode == 2 ? 1 : fuzz_chunk(&rng, n - at);
    char *tmp = malloc(k);
    memcpy(tmp, d + at, k);
    size_t len = k, outl = 0;
    if (asbi_h1_chunked_decode(&c, tmp, &len, &outl) != 0) {
      *err = 1;
      free(tmp);
      break;
    }
    FUZZ_CHECK(len <= k && outl <= len);
    memcpy(out + total, tmp, outl);
    total += outl;
    at += len;
    free(tmp);
    if (len < k) FUZZ_CHECK(c.done);
  }
  *done = c.done;
  return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  if (n == 0) return 0;
  check_head(d, n);
  char *a = malloc(n), *b = malloc(n), *c = malloc(n);
  int ea, eb, ec, da, db, dc;
  size_t la = dechunk(d, n, 0, a, &ea, &da);
  size_t lb = dechunk(d, n, 1, b, &eb, &db);
  size_t lc = dechunk(d, n, 2, c, &ec, &dc);
  FUZZ_CHECK(ea == eb && eb == ec);
  if (!ea) {
    FUZZ_CHECK(da == db && db == dc);
    FUZZ_CHECK(la == lb && lb == lc);
    FUZZ_CHECK(memcmp(a, b, la) == 0 && memcmp(b, c, lb) == 0);
  }
  free(a);
  free(b);
  free(c);
  return 0;
}
