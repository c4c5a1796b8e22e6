/* Fuzz the NDJSON splitter. Input: [max selector][stream...]. Invariants:
 * any chunking gives the same lines and result; lines are non-empty,
 * bounded, NUL-terminated, contain no LF, and appear in
 * the input in order. SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "proto/ndjson.h"
#include "proto/pjson.h"

typedef struct run {
  asbi_buf log; /* len:4 + bytes per line */
  size_t max;
  const uint8_t *in;
  size_t in_len, pos; /* where the next line must be found in the input */
  int stop_at, count;
} run;

static int on_line(void *ud, const char *line, size_t len) {
  run *r = ud;
  FUZZ_CHECK(len > 0 && len <= r->max);
  FUZZ_CHECK(line[len] == '\0');
  FUZZ_CHECK(memchr(line, '\n', len) == NULL);
  /* The line occurs in the input at or after the previous one's end. */
  const uint8_t *hit =
      r->pos <= r->in_len ? memmem(r->in + r->pos, r->in_len - r->pos, line, len) : NULL;
  FUZZ_CHECK(hit != NULL);
  r->pos = (size_t)(hit - r->in) + len;
  unsigned char l4[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16),
                         (unsigned char)(len >> 8), (unsigned char)len};
  asbi_buf_append(&r->log, l4, 4);
  asbi_buf_append(&r->log, line, len);
  /* Each line through the strict JSON reader too. */
  cJSON *v = asbi_pj_parse(line, len, NULL);
  cJSON_Delete(v);
  r->count++;
  return r->stop_at && r->count == r->stop_at ? 4242 : 0;
}

static int split(const uint8_t *p, size_t n, size_t max, int mode, int stop_at, run *r) {
  asbi_ndjson nd;
  asbi_ndjson_init(&nd, max);
  memset(r, 0, sizeof *r);
  asbi_buf_init(&r->log, 0);
  r->max = nd.max_line;
  r->in = p;
  r->in_len = n;
  r->stop_at = stop_at;
  fuzz_rng rng;
  fuzz_rng_init(&rng, p, n, 3);
  size_t at = 0;
  int rc = 0;
  while (at < n && rc == 0) {
    size_t k = mode == 0 ? n : mode == 2 ? 1 : fuzz_chunk(&rng, n - at);
    rc = asbi_ndjson_feed(&nd, p + at, k, on_line, r);
    at += k;
  }
  int fin = asbi_ndjson_finish(&nd, on_line, r);
  if (rc) FUZZ_CHECK(fin == rc);
  asbi_ndjson_free(&nd);
  return rc ? rc : fin;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  static const size_t maxes[] = {0, 1, 2, 3, 8, 16, 100, 1000};
  size_t max = maxes[data[0] & 7];
  int stop_at = data[0] >> 5; /* 0 = never */
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  run a, b, c;
  int ra = split(p, n, max, 0, stop_at, &a);
  int rb = split(p, n, max, 1, stop_at, &b);
  int rc = split(p, n, max, 2, stop_at, &c);
  FUZZ_CHECK(ra == rb && ra == rc);
  FUZZ_CHECK(ra == 0 || ra == ASBI_NDJSON_ETOOLONG || ra == 4242);
  FUZZ_CHECK(a.count == b.count && a.count == c.count);
  FUZZ_CHECK(a.log.len == b.log.len && a.log.len == c.log.len);
  FUZZ_CHECK(a.log.len == 0 || (memcmp(a.log.data, b.log.data, a.log.len) == 0 &&
                                memcmp(a.log.data, c.log.data, a.log.len) == 0));
  if (ra == 0) {
    /* Without errors, the lines are exactly the non-empty lines of the
     * input (one CR before LF, or at the very end, removed). */
    asbi_buf ref = ASBI_BUF_INIT;
    size_t lines = 0, i = 0;
    while (i < n) {
      const uint8_t *nl = memchr(p + i, '\n', n - i);
      size_t e = nl ? (size_t)(nl - p) : n;
      size_t l = e - i;
      if (l && p[e - 1] == '\r') l--;
      if (l) {
        unsigned char l4[4] = {(unsigned char)(l >> 24), (unsigned char)(l >> 16),
                               (unsigned char)(l >> 8), (unsigned char)l};
        asbi_buf_append(&ref, l4, 4);
        asbi_buf_append(&ref, p + i, l);
        lines++;
      }
      i = e + 1;
    }
    FUZZ_CHECK((size_t)a.count == lines);
    FUZZ_CHECK(ref.len == a.log.len &&
               (ref.len == 0 || memcmp(ref.data, a.log.data, ref.len) == 0));
    asbi_buf_free(&ref);
  }
  asbi_buf_free(&a.log);
  asbi_buf_free(&b.log);
  asbi_buf_free(&c.log);
  return 0;
}
