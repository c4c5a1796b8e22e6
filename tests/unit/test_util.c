/* Unit tests for core/util: buf, base64, numbers, UTF-8, randomness.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>

#include "testing.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/util.h"

/* ---- buf --------------------------------------------------------------- */

TEST(buf_basic) {
  asbi_buf b = ASBI_BUF_INIT;
  CHECK(b.data == NULL);
  CHECK_INT(asbi_buf_puts(&b, "hello"), 0);
  CHECK_INT(asbi_buf_putc(&b, ' '), 0);
  CHECK_INT(asbi_buf_printf(&b, "%d-%s", 42, "x"), 0);
  CHECK_STR(b.data, "hello 42-x");
  CHECK_INT(b.len, 10);
  CHECK_INT(b.data[b.len], 0);
  asbi_buf_consume(&b, 6);
  CHECK_STR(b.data, "42-x");
  asbi_buf_consume(&b, 100);
  CHECK_INT(b.len, 0);
  CHECK_STR(b.data, "");
  CHECK_INT(asbi_buf_append(&b, NULL, 0), 0);
  CHECK_INT(asbi_buf_append(&b, "a\0b", 3), 0);
  CHECK_MEM(b.data, b.len, "a\0b", 3);
  size_t len = 0;
  char *p = asbi_buf_detach(&b, &len);
  CHECK_MEM(p, len, "a\0b", 3);
  CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
  free(p);
  asbi_buf_free(&b);
}

TEST(buf_sh_quote) {
  asbi_buf b = ASBI_BUF_INIT;
  CHECK_INT(asbi_buf_sh_quote(&b, "plain"), 0);
  CHECK_INT(asbi_buf_puts(&b, " "), 0);
  CHECK_INT(asbi_buf_sh_quote(&b, "it's $HOME `x` \"q\""), 0);
  CHECK_INT(asbi_buf_puts(&b, " "), 0);
  CHECK_INT(asbi_buf_sh_quote(&b, ""), 0);
  CHECK_STR(b.data, "'plain' 'it'\\''s $HOME `x` \"q\"' ''");
  asbi_buf_free(&b);
}

TEST(errf) {
  char m[8];
  CHECK_INT(asbi_errf(m, sizeof m, "bad %d items", 12345), -1);
  CHECK_STR(m, "bad 123"); /* truncated, terminated */
  CHECK_INT(asbi_errf(NULL, 0, "nothing %s", "written"), -1);
}

TEST(buf_detach_empty) {
  asbi_buf b = ASBI_BUF_INIT;
  size_t len = 99;
  char *p = asbi_buf_detach(&b, &len);
  REQUIRE(p != NULL);
  CHECK_STR(p, "");
  CHECK_INT(len, 0);
  free(p);
}

TEST(buf_reserve_terminates) {
  /* The buffer is NUL-terminated as soon as it has storage. */
  asbi_buf b = ASBI_BUF_INIT;
  CHECK_INT(asbi_buf_reserve(&b, 0), 0);
  REQUIRE(b.data != NULL);
  CHECK_STR(b.data, "");
  asbi_buf_free(&b);
  asbi_buf_init(&b, 0);
  CHECK_INT(asbi_buf_reserve(&b, 1000), 0);
  CHECK_STR(b.data, "");
  CHECK_INT(asbi_buf_puts(&b, "ab"), 0);
  CHECK_INT(asbi_buf_reserve(&b, 100000), 0);
  CHECK_STR(b.data, "ab");
  asbi_buf_free(&b);
}

TEST(buf_bounded) {
  asbi_buf b;
  asbi_buf_init(&b, 8);
  CHECK_INT(asbi_buf_puts(&b, "12345678"), 0);
  CHECK_INT(asbi_buf_putc(&b, '9'), -1);
  CHECK_INT(b.len, 8);
  CHECK_STR(b.data, "12345678");
  CHECK_INT(asbi_buf_printf(&b, "%s", "x"), -1);
  CHECK_STR(b.data, "12345678");
  asbi_buf_clear(&b);
  CHECK_INT(asbi_buf_append(&b, "123456789", 9), -1);
  CHECK_INT(b.len, 0);
  CHECK_INT(asbi_buf_printf(&b, "%08d", 7), 0);
  CHECK_STR(b.data, "00000007");
  asbi_buf_free(&b);
}

TEST(buf_reserve_overflow) {
  asbi_buf b = ASBI_BUF_INIT;
  CHECK_INT(asbi_buf_puts(&b, "abc"), 0);
  CHECK_INT(asbi_buf_reserve(&b, (size_t)-1), -1);
  CHECK_INT(asbi_buf_reserve(&b, (size_t)-1 - 3), -1);
  CHECK_STR(b.data, "abc");
  asbi_buf_free(&b);
}

TEST(buf_growth) {
  asbi_buf b = ASBI_BUF_INIT;
  for (int i = 0; i < 10000; i++) REQUIRE(asbi_buf_putc(&b, (char)('a' + i % 26)) == 0);
  CHECK_INT(b.len, 10000);
  CHECK(b.cap > b.len);
  int ok = 1;
  for (int i = 0; i < 10000; i++) ok &= b.data[i] == (char)('a' + i % 26);
  CHECK(ok);
  asbi_buf_free(&b);
  asbi_buf_free(&b); /* idempotent */
}

/* ---- base64 ------------------------------------------------------------ */

TEST(b64_rfc4648_vectors) {
  static const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  static const char *std[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
  static const char *nopad[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
  for (size_t i = 0; i < 7; i++) {
    char out[16];
    size_t n = strlen(in[i]);
    CHECK_INT(asbi_b64_encoded_len(n), strlen(std[i]));
    CHECK_INT(asbi_b64_encode(in[i], n, out, 0, 1), strlen(std[i]));
    CHECK_STR(out, std[i]);
    CHECK_INT(asbi_b64_encode(in[i], n, out, 1, 0), strlen(nopad[i]));
    CHECK_STR(out, nopad[i]);
    unsigned char dec[16];
    size_t dl = 99;
    CHECK_INT(asbi_b64_decode(std[i], strlen(std[i]), dec, &dl), 0);
    CHECK_MEM(dec, dl, in[i], n);
    dl = 99;
    CHECK_INT(asbi_b64_decode(nopad[i], strlen(nopad[i]), dec, &dl), 0);
    CHECK_MEM(dec, dl, in[i], n);
  }
}

TEST(b64_url_alphabet) {
  const unsigned char raw[] = {0xfb, 0xff, 0xbf};
  char out[8];
  asbi_b64_encode(raw, 3, out, 0, 1);
  CHECK_STR(out, "+/+/");
  asbi_b64_encode(raw, 3, out, 1, 1);
  CHECK_STR(out, "-_-_");
  unsigned char dec[8];
  size_t dl;
  CHECK_INT(asbi_b64_decode("-_-_", 4, dec, &dl), 0);
  CHECK_MEM(dec, dl, raw, 3);
  CHECK_INT(asbi_b64_decode("+/+/", 4, dec, &dl), 0);
  CHECK_MEM(dec, dl, raw, 3);
  /* Mixed alphabets are accepted too (each character is unambiguous). */
  CHECK_INT(asbi_b64_decode("-/+_", 4, dec, &dl), 0);
  CHECK_MEM(dec, dl, raw, 3);
}

TEST(b64_invalid) {
  static const char *bad[] = {
      "Z",                            /* one leftover character can hold no byte */
      "Zm9vY",                        /* ditto after a quantum */
      "Zg=",                          /* padded input must come in whole quanta */
      "Zg===",                        /* three '=' */
      "Z===",                         /* ditto */
      "====",                         /* padding only */
      "=",        "==",      "Zm9v=", /* padding after a full quantum */
      "Zm=v",                         /* padding in the middle */
      "Z=g=",     "Zm 9v",            /* whitespace */
      "Zm9v\n",   "Zm9*",    "Zm9.",
      "Zm9v\x80", "Zm9\xff", "Zh==", /* non-canonical: trailing bits not zero */
      "Zm9=",                        /* "fo" is Zm8=, 9 leaves bits set */
      "Zh",       "Zm9",
  };
  unsigned char dec[16];
  for (size_t i = 0; i < ASBI_ARRAY_LEN(bad); i++) {
    size_t dl = 0;
    if (asbi_b64_decode(bad[i], strlen(bad[i]), dec, &dl) != -1)
      ASBT_FAIL("accepted invalid base64 \"%s\"", bad[i]);
  }
  /* An embedded NUL is an invalid character, not an end marker. */
  size_t dl;
  CHECK_INT(asbi_b64_decode("Zg\0=", 4, dec, &dl), -1);
  CHECK_INT(asbi_b64_decode("", 0, dec, &dl), 0);
  CHECK_INT(dl, 0);
}

TEST(b64_round_trip_all_lengths) {
  unsigned char raw[300];
  for (size_t i = 0; i < sizeof raw; i++) raw[i] = (unsigned char)(i * 37 + 11);
  for (size_t n = 0; n <= sizeof raw; n++) {
    for (int mode = 0; mode < 4; mode++) {
      int url = mode & 1, pad = mode >> 1;
      char enc[512];
      size_t el = asbi_b64_encode(raw, n, enc, url, pad);
      REQUIRE(el < sizeof enc);
      CHECK_INT(el, strlen(enc));
      if (pad) CHECK_INT(el, asbi_b64_encoded_len(n));
      REQUIRE(asbi_b64_decoded_max(el) >= n);
      unsigned char dec[300];
      size_t dl = 0;
      CHECK_INT(asbi_b64_decode(enc, el, dec, &dl), 0);
      CHECK_MEM(dec, dl, raw, n);
    }
  }
}

TEST(b64_all_bytes) {
  unsigned char raw[256];
  for (int i = 0; i < 256; i++) raw[i] = (unsigned char)i;
  char enc[400];
  size_t el = asbi_b64_encode(raw, 256, enc, 0, 1);
  unsigned char dec[400];
  size_t dl;
  CHECK_INT(asbi_b64_decode(enc, el, dec, &dl), 0);
  CHECK_MEM(dec, dl, raw, 256);
  /* Every single non-alphabet byte in a quantum is rejected. */
  for (int c = 0; c < 256; c++) {
    char q[4] = {'Q', 'U', 'I', (char)c};
    int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                c == '+' || c == '/' || c == '-' || c == '_' || c == '=';
    int rc = asbi_b64_decode(q, 4, dec, &dl);
    if (alpha) {
      /* "QUI=" is canonical "AB"; alphabet characters give 3 bytes. */
      CHECK_INT(rc, 0);
    } else if (rc != -1) {
      ASBT_FAIL("accepted byte 0x%02x", c);
    }
  }
}

/* The decoder as first written (one character at a time, a bit
 * accumulator), kept as the reference the table-driven one must agree with
 * on every input: same verdict, same bytes. */
static int ref_b64_val(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

static int ref_b64_decode(const char *in, size_t n, unsigned char *o, size_t *outlen) {
  size_t len = n;
  if (len > 0 && in[len - 1] == '=') {
    len--;
    if (len > 0 && in[len - 1] == '=') len--;
    if (n % 4 != 0) return -1;
  }
  if (len % 4 == 1) return -1;
  size_t w = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = ref_b64_val((unsigned char)in[i]);
    if (v < 0) return -1;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      o[w++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (acc != 0) return -1;
  *outlen = w;
  return 0;
}

static int b64_alpha(int c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/' || c == '-' || c == '_';
}

/* Every byte value at every position of encodings long enough to reach the
 * decoder's multi-quantum steps, its single-quantum loop and the partial
 * final quantum: a byte outside the alphabets is rejected wherever it sits
 * in a quantum, and on every input the verdict and output equal the
 * reference's. */
TEST(b64_bad_byte_at_every_position) {
  unsigned char raw[40];
  for (size_t i = 0; i < sizeof raw; i++) raw[i] = (unsigned char)(i * 73 + 5);
  int mismatches = 0;
  for (size_t n = 0; n <= sizeof raw; n++) {
    for (int mode = 0; mode < 4; mode++) {
      char enc[64];
      size_t el = asbi_b64_encode(raw, n, enc, mode & 1, mode >> 1);
      for (size_t p = 0; p < el; p++) {
        for (int c = 0; c < 256; c++) {
          char in[64];
          memcpy(in, enc, el);
          in[p] = (char)c;
          unsigned char got[64], want[64];
          size_t gl = 0, wl = 0;
          int rc = asbi_b64_decode(in, el, got, &gl);
          int ref = ref_b64_decode(in, el, want, &wl);
          if (!b64_alpha(c) && c != '=' && rc != -1) {
            ASBT_FAIL("n=%zu mode=%d: byte 0x%02x at %zu accepted", n, mode, c, p);
            mismatches++;
          }
          if (rc != ref || (rc == 0 && (gl != wl || memcmp(got, want, gl) != 0))) {
            if (mismatches++ < 5)
              ASBT_FAIL("n=%zu mode=%d: byte 0x%02x at %zu: rc %d, reference %d", n, mode, c, p, rc,
                        ref);
          }
        }
      }
    }
  }
  CHECK_INT(mismatches, 0);
}

/* Long inputs: the bulk path decodes them exactly, and one bad character
 * anywhere (first, in the middle of a step, last) fails the whole input. */
TEST(b64_long_inputs) {
  size_t n = 100000;
  unsigned char *raw = malloc(n);
  char *enc = malloc(asbi_b64_encoded_len(n) + 1);
  unsigned char *dec = malloc(asbi_b64_decoded_max(asbi_b64_encoded_len(n)) + 1);
  REQUIRE(raw && enc && dec);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    raw[i] = (unsigned char)(x >> 16);
  }
  for (size_t len = n - 3; len <= n; len++) {
    size_t el = asbi_b64_encode(raw, len, enc, (int)(len & 1), 1);
    size_t dl = 0;
    CHECK_INT(asbi_b64_decode(enc, el, dec, &dl), 0);
    CHECK_MEM(dec, dl, raw, len);
    size_t at[] = {0, 1, 15, 16, 17, el / 2, el - 5, el - 1};
    for (size_t k = 0; k < ASBI_ARRAY_LEN(at); k++) {
      char keep = enc[at[k]];
      if (keep == '=') continue;
      enc[at[k]] = '*';
      CHECK_INT(asbi_b64_decode(enc, el, dec, &dl), -1);
      enc[at[k]] = keep;
    }
  }
  free(raw);
  free(enc);
  free(dec);
}

/* ---- numbers ----------------------------------------------------------- */

static int p64(const char *s, int64_t *v) {
  return asbi_parse_i64(s, strlen(s), v);
}

TEST(parse_i64_edges) {
  int64_t v = 0;
  CHECK_INT(p64("0", &v), 0);
  CHECK_INT(v, 0);
  CHECK_INT(p64("-0", &v), 0);
  CHECK_INT(v, 0);
  CHECK_INT(p64("+17", &v), 0);
  CHECK_INT(v, 17);
  CHECK_INT(p64("9223372036854775807", &v), 0);
  CHECK(v == INT64_MAX);
  CHECK_INT(p64("-9223372036854775808", &v), 0);
  CHECK(v == INT64_MIN);
  CHECK_INT(p64("-9223372036854775807", &v), 0);
  CHECK(v == -INT64_MAX);
  CHECK_INT(p64("0009223372036854775807", &v), 0);
  CHECK(v == INT64_MAX);
  v = 5;
  CHECK_INT(p64("9223372036854775808", &v), -1);
  CHECK_INT(p64("-9223372036854775809", &v), -1);
  CHECK_INT(p64("9223372036854775810", &v), -1);
  CHECK_INT(p64("18446744073709551615", &v), -1);
  CHECK_INT(p64("18446744073709551616", &v), -1);
  CHECK_INT(p64("99999999999999999999999999", &v), -1);
  CHECK_INT(v, 5); /* untouched on failure */
  static const char *bad[] = {"",   "-",  "+",   "--1", "+-1",  "1a", "a1",
                              " 1", "1 ", "1.0", "1e3", "0x10", "١"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(bad); i++)
    if (p64(bad[i], &v) != -1) ASBT_FAIL("accepted \"%s\"", bad[i]);
  /* Length-bounded: digits past n are not read. */
  CHECK_INT(asbi_parse_i64("12345", 2, &v), 0);
  CHECK_INT(v, 12);
  CHECK_INT(asbi_parse_i64("1\0"
                           "2",
                           3, &v),
            -1);
}

TEST(parse_bool) {
  CHECK_INT(asbi_parse_bool("TRUE", 0), 1);
  CHECK_INT(asbi_parse_bool("on", 0), 1);
  CHECK_INT(asbi_parse_bool("1", 0), 1);
  CHECK_INT(asbi_parse_bool("No", 1), 0);
  CHECK_INT(asbi_parse_bool("off", 1), 0);
  CHECK_INT(asbi_parse_bool("maybe", 7), 7);
  CHECK_INT(asbi_parse_bool(NULL, -1), -1);
  CHECK_INT(asbi_parse_bool("", 3), 3);
}

TEST(strings) {
  CHECK(asbi_strdup(NULL) == NULL);
  char *s = asbi_strndup("abcdef", 3);
  CHECK_STR(s, "abc");
  free(s);
  s = asbi_strndup("", 0);
  CHECK_STR(s, "");
  free(s);
  CHECK(asbi_strcaseeq("Content-Type", "content-type"));
  CHECK(!asbi_strcaseeq("abc", "abcd"));
  CHECK(asbi_strcaseeq(NULL, NULL));
  CHECK(!asbi_strcaseeq("a", NULL));
  CHECK(asbi_startswith("multipart/form-data", "multipart/"));
  CHECK(!asbi_startswith("multi", "multipart/"));
  CHECK(asbi_empty(NULL) && asbi_empty("") && !asbi_empty(" "));
}

/* ---- UTF-8 ------------------------------------------------------------- */

static int u8(const char *s) {
  return asbi_utf8_valid(s, strlen(s));
}

TEST(utf8_valid) {
  CHECK(asbi_utf8_valid("", 0));
  CHECK(u8("plain ascii"));
  CHECK(u8("\xC3\xA9"));             /* é */
  CHECK(u8("\xE2\x82\xAC"));         /* € */
  CHECK(u8("\xF0\x9F\x98\x80"));     /* 😀 */
  CHECK(u8("\xF4\x8F\xBF\xBF"));     /* U+10FFFF */
  CHECK(u8("\xED\x9F\xBF"));         /* U+D7FF */
  CHECK(u8("\xEE\x80\x80"));         /* U+E000 */
  CHECK(u8("\xEF\xBB\xBF"));         /* BOM is a valid character */
  CHECK(asbi_utf8_valid("a\0b", 3)); /* NUL is valid UTF-8 */
  static const char *bad[] = {
      "\x80", /* lone continuation */
      "\xBF",
      "\xC0\x80",         /* overlong NUL */
      "\xC1\xBF",         /* overlong */
      "\xE0\x80\x80",     /* overlong */
      "\xE0\x9F\xBF",     /* overlong U+07FF */
      "\xF0\x80\x80\x80", /* overlong */
      "\xF0\x8F\xBF\xBF", /* overlong U+FFFF */
      "\xED\xA0\x80",     /* surrogate U+D800 */
      "\xED\xBF\xBF",     /* surrogate U+DFFF */
      "\xF4\x90\x80\x80", /* U+110000 */
      "\xF5\x80\x80\x80",
      "\xF8\x88\x80\x80\x80",
      "\xFC\x84\x80\x80\x80\x80",
      "\xFE",
      "\xFF",
      "\xC3", /* truncated */
      "\xE2\x82",
      "\xF0\x9F\x98",
      "\xC3\x28", /* bad continuation */
      "\xE2\x28\xA1",
      "\xF0\x9F\x28\x80",
      "ok\xC3", /* truncated at the end of otherwise valid text */
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(bad); i++)
    if (u8(bad[i])) ASBT_FAIL("accepted invalid UTF-8 #%zu", i);
  /* Length-bounded: a valid sequence cut by n is invalid. */
  CHECK(!asbi_utf8_valid("\xE2\x82\xAC", 2));
  CHECK(asbi_utf8_valid("\xE2\x82\xAC", 0));
}

/* The validator checks ASCII 16 bytes at a time: sequences, valid or not,
 * at every offset of and across those steps, and cut short by the end of
 * the buffer, get the same verdict as at the start of a string. */
TEST(utf8_valid_at_every_offset) {
  static const struct {
    const char *seq;
    int ok;
  } cases[] = {
      {"\xC3\xA9", 1},
      {"\xE2\x82\xAC", 1},
      {"\xF0\x9F\x98\x80", 1},
      {"\xF4\x8F\xBF\xBF", 1},
      {"\xED\x9F\xBF", 1},
      {"\x7F", 1},
      {"\x80", 0},
      {"\xBF", 0},
      {"\xC0\x80", 0},
      {"\xC1\xBF", 0},
      {"\xC3", 0},
      {"\xC3\x41", 0},
      {"\xE0\x9F\xBF", 0},
      {"\xED\xA0\x80", 0},
      {"\xE2\x82", 0},
      {"\xF0\x8F\xBF\xBF", 0},
      {"\xF4\x90\x80\x80", 0},
      {"\xF5\x80\x80\x80", 0},
      {"\xFF", 0},
      {"\xF0\x9F\x98", 0},
  };
  char buf[80];
  for (size_t k = 0; k < ASBI_ARRAY_LEN(cases); k++) {
    size_t sl = strlen(cases[k].seq);
    for (size_t at = 0; at + sl <= 48; at++) {
      /* In the middle of ASCII text ... */
      memset(buf, 'a', sizeof buf);
      memcpy(buf + at, cases[k].seq, sl);
      if (asbi_utf8_valid(buf, 64) != cases[k].ok) ASBT_FAIL("case %zu at %zu of 64", k, at);
      /* ... and where the buffer ends right after it. */
      if (asbi_utf8_valid(buf, at + sl) != cases[k].ok)
        ASBT_FAIL("case %zu at the end (%zu)", k, at + sl);
      /* A valid sequence cut by the end of the buffer is invalid. */
      if (sl > 1 && asbi_utf8_valid(buf, at + sl - 1))
        ASBT_FAIL("case %zu cut at %zu accepted", k, at + sl - 1);
    }
  }
}

/* ---- randomness -------------------------------------------------------- */

TEST(random_alnum) {
  char a[65], b[65];
  CHECK_INT(asbi_random_alnum(a, 64), 0);
  CHECK_INT(asbi_random_alnum(b, 64), 0);
  CHECK_INT(strlen(a), 64);
  CHECK(strcmp(a, b) != 0);
  int seen[256] = {0};
  char big[4001];
  CHECK_INT(asbi_random_alnum(big, 4000), 0);
  CHECK_INT(big[4000], 0);
  for (int i = 0; i < 4000; i++) seen[(unsigned char)big[i]]++;
  int distinct = 0, outside = 0;
  for (int c = 0; c < 256; c++) {
    int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (seen[c] && !ok) outside++;
    if (seen[c] && ok) distinct++;
  }
  CHECK_INT(outside, 0);
  CHECK_INT(distinct, 36); /* 4000 draws: all 36 appear (p(miss) ~ 1e-45) */
  char z[1] = {'x'};
  CHECK_INT(asbi_random_alnum(z, 0), 0);
  CHECK_INT(z[0], 0);
}

TEST(random_hex) {
  char h[130];
  for (size_t n = 0; n <= 129; n++) {
    memset(h, 'Z', sizeof h);
    CHECK_INT(asbi_random_hex(h, n), 0);
    CHECK_INT(strlen(h), n);
    for (size_t i = 0; i < n; i++)
      if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
        ASBT_FAIL("non-hex character in random_hex(%zu)", n);
  }
  unsigned char r1[32], r2[32];
  CHECK_INT(asbi_random_bytes(r1, sizeof r1), 0);
  CHECK_INT(asbi_random_bytes(r2, sizeof r2), 0);
  CHECK(memcmp(r1, r2, sizeof r1) != 0);
}

TEST(rfc3339) {
  char out[40];
  asbi_rfc3339(0, 0, out);
  CHECK_STR(out, "1970-01-01T00:00:00Z");
  asbi_rfc3339(1767323045, 123456789, out);
  CHECK_STR(out, "2026-01-02T03:04:05.123456789Z");
  uint64_t a = asbi_now_us(), b = asbi_now_us();
  CHECK(b >= a);
}

int main(void) {
  RUN(buf_basic);
  RUN(buf_sh_quote);
  RUN(errf);
  RUN(buf_detach_empty);
  RUN(buf_reserve_terminates);
  RUN(buf_bounded);
  RUN(buf_reserve_overflow);
  RUN(buf_growth);
  RUN(b64_rfc4648_vectors);
  RUN(b64_url_alphabet);
  RUN(b64_invalid);
  RUN(b64_round_trip_all_lengths);
  RUN(b64_all_bytes);
  RUN(b64_bad_byte_at_every_position);
  RUN(b64_long_inputs);
  RUN(parse_i64_edges);
  RUN(parse_bool);
  RUN(strings);
  RUN(utf8_valid);
  RUN(utf8_valid_at_every_offset);
  RUN(random_alnum);
  RUN(random_hex);
  RUN(rfc3339);
  TEST_MAIN_END();
}
