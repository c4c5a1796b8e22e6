/* Fuzz the Connect envelope decoder and error payloads.
 * Input: [max selector][stream bytes...]. Invariants: any chunking gives the
 * same messages and result as one whole feed; messages respect the bound
 * and are NUL-terminated; a clean stream re-encodes to the same bytes; end
 * payloads that parse round-trip through the builders.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "proto/connect.h"
#include "util/buf.h"

typedef struct run {
  asbi_buf log; /* [flags][len:4][payload] per message, i.e. re-encoded */
  size_t max;
  int count;
} run;

static void check_payload(unsigned flags, const char *data, size_t len) {
  char *code = NULL, *msg = NULL;
  int rc = asbi_connect_parse_end(data, len, &code, &msg);
  FUZZ_CHECK(rc >= -1 && rc <= 1);
  if (rc == 1) {
    FUZZ_CHECK(asbi_connect_code_valid(code) && msg != NULL);
    /* Rebuild and parse again: same code and message. */
    asbi_buf b = ASBI_BUF_INIT;
    FUZZ_CHECK(asbi_connect_end_json(&b, code, msg) == 0);
    char *c2 = NULL, *m2 = NULL;
    FUZZ_CHECK(asbi_connect_parse_end(b.data, b.len, &c2, &m2) == 1);
    FUZZ_CHECK(strcmp(code, c2) == 0 && strcmp(msg, m2) == 0);
    free(c2);
    free(m2);
    asbi_buf_clear(&b);
    FUZZ_CHECK(asbi_connect_error_json(&b, code, msg) == 0);
    FUZZ_CHECK(asbi_connect_parse_error(b.data, b.len, &c2, &m2) == 0);
    FUZZ_CHECK(strcmp(code, c2) == 0 && strcmp(msg, m2) == 0);
    free(c2);
    free(m2);
    asbi_buf_free(&b);
  } else {
    FUZZ_CHECK(code == NULL && msg == NULL);
  }
  free(code);
  free(msg);
  rc = asbi_connect_parse_error(data, len, &code, &msg);
  FUZZ_CHECK(rc == 0 || rc == -1);
  if (rc == 0) FUZZ_CHECK(asbi_connect_code_valid(code));
  free(code);
  free(msg);
  (void)flags;
}

static int on_msg(void *ud, unsigned flags, const char *data, size_t len) {
  run *r = ud;
  FUZZ_CHECK(len <= r->max);
  FUZZ_CHECK(data != NULL && data[len] == '\0');
  FUZZ_CHECK((flags & ~(unsigned)ASBI_CONNECT_FLAG_END_STREAM) == 0);
  FUZZ_CHECK(asbi_connect_encode(&r->log, flags, data, len) == 0);
  r->count++;
  return 0;
}

/* mode 0: one feed; 1: pseudo-random chunks; 2: byte by byte. */
static int decode(const uint8_t *p, size_t n, size_t max, int mode, run *r) {
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, max);
  asbi_buf_init(&r->log, 0);
  r->max = d.max_msg;
  r->count = 0;
  fuzz_rng rng;
  fuzz_rng_init(&rng, p, n, 7);
  size_t at = 0;
  int rc = 0;
  while (at < n && rc == 0) {
    size_t k = mode == 0 ? n : mode == 2 ? 1 : fuzz_chunk(&rng, n - at);
    rc = asbi_connect_dec_feed(&d, p + at, k, on_msg, r);
    at += k;
  }
  int fin = asbi_connect_dec_finish(&d);
  if (rc) FUZZ_CHECK(fin == rc); /* failures are sticky */
  FUZZ_CHECK(asbi_connect_dec_feed(&d, "", 0, on_msg, r) == rc);
  asbi_connect_dec_free(&d);
  return rc ? rc : fin;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  static const size_t maxes[] = {0, 1, 2, 5, 16, 100, 4096, 0};
  size_t max = maxes[data[0] & 7];
  const uint8_t *p = data + 1;
  size_t n = size - 1;

  run whole, chunks, bytes;
  int rw = decode(p, n, max, 0, &whole);
  int rc = decode(p, n, max, 1, &chunks);
  int rb = decode(p, n, max, 2, &bytes);
  FUZZ_CHECK(rw == rc && rw == rb);
  FUZZ_CHECK(whole.log.len == chunks.log.len && whole.log.len == bytes.log.len);
  FUZZ_CHECK(whole.log.len == 0 || (memcmp(whole.log.data, chunks.log.data, whole.log.len) == 0 &&
                                    memcmp(whole.log.data, bytes.log.data, whole.log.len) == 0));
  /* Whatever was delivered is exactly a prefix of the input, re-encoded. */
  FUZZ_CHECK(whole.log.len <= n);
  FUZZ_CHECK(whole.log.len == 0 || memcmp(whole.log.data, p, whole.log.len) == 0);
  if (rw == ASBI_CONNECT_OK) FUZZ_CHECK(whole.log.len == n);
  FUZZ_CHECK(asbi_connect_strerror(rw) != NULL);

  /* Every delivered payload through the error parsers. */
  size_t at = 0;
  while (at < whole.log.len) {
    const unsigned char *h = (const unsigned char *)whole.log.data + at;
    size_t len = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
    check_payload(h[0], (const char *)h + 5, len);
    at += 5 + len;
  }
  /* And the raw input as a unary error body. */
  check_payload(0, (const char *)p, n);
  /* Code tables never produce an invalid code. */
  int status = n >= 2 ? (p[0] << 8 | p[1]) % 700 : 0;
  FUZZ_CHECK(asbi_connect_code_valid(asbi_connect_code_from_http(status)));

  asbi_buf_free(&whole.log);
  asbi_buf_free(&chunks.log);
  asbi_buf_free(&bytes.log);
  return 0;
}
