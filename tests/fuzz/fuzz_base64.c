/* Fuzz base64 (and the small number/UTF-8 helpers beside it).
 * Invariants: decoding accepts only canonical encodings (re-encoding the
 * result gives the input back, modulo alphabet and padding); encoding in
 * every mode decodes back; parse_i64 round-trips through printf.
 * SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>

#include "fuzz.h"
#include "util/base64.h"
#include "util/util.h"

/* Well-formed UTF-8 byte sequences (The Unicode Standard, Table 3-7). */
static int ref_utf8_valid(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    uint8_t lo = 0x80, hi = 0xBF;
    size_t k;
    if (c <= 0x7F) {
      i++;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      k = 1;
    } else if (c == 0xE0) {
      k = 2, lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      k = 2;
    } else if (c == 0xED) {
      k = 2, hi = 0x9F;
    } else if (c == 0xF0) {
      k = 3, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      k = 3;
    } else if (c == 0xF4) {
      k = 3, hi = 0x8F;
    } else {
      return 0;
    }
    if (n - i <= k) return 0;
    if (s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t j = 2; j <= k; j++)
      if (s[i + j] < 0x80 || s[i + j] > 0xBF) return 0;
    i += k + 1;
  }
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *in = (const char *)data;
  /* 1. decode */
  unsigned char *dec = malloc(asbi_b64_decoded_max(size) + 1);
  size_t dl = (size_t)-1;
  if (asbi_b64_decode(in, size, dec, &dl) == 0) {
    FUZZ_CHECK(dl <= asbi_b64_decoded_max(size));
    /* Canonical: strip padding, map the URL alphabet to the standard one,
     * and it must equal the unpadded standard encoding of the result. */
    char *norm = malloc(size + 1);
    size_t nl = 0;
    for (size_t i = 0; i < size; i++) {
      char c = in[i];
      if (c == '=') continue;
      norm[nl++] = c == '-' ? '+' : c == '_' ? '/' : c;
    }
    char *enc = malloc(asbi_b64_encoded_len(dl) + 1);
    size_t el = asbi_b64_encode(dec, dl, enc, 0, 0);
    FUZZ_CHECK(el == nl && memcmp(enc, norm, nl) == 0);
    /* Padding, if present, is exactly what the padded encoding has. */
    size_t padded = asbi_b64_encoded_len(dl);
    FUZZ_CHECK(size == nl || size == padded);
    free(enc);
    free(norm);
  }
  free(dec);

  /* 2. encode in all four modes, decode back */
  for (int mode = 0; mode < 4; mode++) {
    int url = mode & 1, pad = mode >> 1;
    char *enc = malloc(asbi_b64_encoded_len(size) + 1);
    size_t el = asbi_b64_encode(data, size, enc, url, pad);
    FUZZ_CHECK(enc[el] == '\0' && strlen(enc) == el);
    FUZZ_CHECK(pad ? el == asbi_b64_encoded_len(size) : el <= asbi_b64_encoded_len(size));
    unsigned char *back = malloc(asbi_b64_decoded_max(el) + 1);
    size_t bl = 0;
    FUZZ_CHECK(asbi_b64_decode(enc, el, back, &bl) == 0);
    FUZZ_CHECK(bl == size && (size == 0 || memcmp(back, data, size) == 0));
    free(back);
    free(enc);
  }

  /* 3. parse_i64: accepted text prints back to the same value, and is an
   * optional sign followed by digits only. */
  int64_t v;
  if (asbi_parse_i64(in, size, &v) == 0) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    int64_t w;
    FUZZ_CHECK(asbi_parse_i64(buf, strlen(buf), &w) == 0 && w == v);
    size_t i = (in[0] == '-' || in[0] == '+') ? 1 : 0;
    FUZZ_CHECK(i < size);
    for (; i < size; i++) FUZZ_CHECK(in[i] >= '0' && in[i] <= '9');
  }

  /* 4. utf8_valid against a reference written from Unicode Table 3-7. */
  FUZZ_CHECK(asbi_utf8_valid(in, size) == ref_utf8_valid(data, size));
  return 0;
}
