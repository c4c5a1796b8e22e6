/* SPDX-License-Identifier: Apache-2.0 */
/* Table-driven base64.
 *
 * Encoding maps 12 bits at a time to a pair of characters (one lookup per
 * two output characters, two per 3-byte group). Decoding uses four 256-entry
 * tables holding each character's 6-bit value already shifted into place for
 * its position in a quantum, so a quantum of 4 characters is 4 lookups ORed
 * together. Characters outside both alphabets map to BAD, a bit no valid
 * value can reach, so validity is checked once per quantum. */
#include "base64.h"

#include <stdint.h>
#include <string.h>

static const char STD[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* ---- tables, built at compile time ---------------------------------------- */

/* Character of 6-bit value v in the standard (u=0) or URL-safe (u=1)
 * alphabet. */
#define ENC_CHAR(v, u)             \
  ((v) < 26    ? 'A' + (v)         \
   : (v) < 52  ? 'a' + (v)-26      \
   : (v) < 62  ? '0' + (v)-52      \
   : (v) == 62 ? ((u) ? '-' : '+') \
               : ((u) ? '_' : '/'))
/* Two characters for 12 bits. */
#define P1(x, u) \
  { (char)ENC_CHAR((x) >> 6, u), (char)ENC_CHAR((x)&63, u) }
#define P4(x, u) P1(x, u), P1((x) + 1, u), P1((x) + 2, u), P1((x) + 3, u)
#define P16(x, u) P4(x, u), P4((x) + 4, u), P4((x) + 8, u), P4((x) + 12, u)
#define P64(x, u) P16(x, u), P16((x) + 16, u), P16((x) + 32, u), P16((x) + 48, u)
#define P256(x, u) P64(x, u), P64((x) + 64, u), P64((x) + 128, u), P64((x) + 192, u)
#define P1024(x, u) P256(x, u), P256((x) + 256, u), P256((x) + 512, u), P256((x) + 768, u)
#define P4096(u) P1024(0, u), P1024(1024, u), P1024(2048, u), P1024(3072, u)

static const char PAIRS[2][4096][2] = {{P4096(0)}, {P4096(1)}};

/* Any set bit here marks a character outside both alphabets. */
#define BAD 0x01000000u
/* 6-bit value of character c (either alphabet), or 64 if it has none. */
#define DEC_VAL(c)                             \
  ((c) >= 'A' && (c) <= 'Z'   ? (c) - 'A'      \
   : (c) >= 'a' && (c) <= 'z' ? (c) - 'a' + 26 \
   : (c) >= '0' && (c) <= '9' ? (c) - '0' + 52 \
   : (c) == '+' || (c) == '-' ? 62             \
   : (c) == '/' || (c) == '_' ? 63             \
                              : 64)
#define D1(c, s) (DEC_VAL(c) == 64 ? BAD : (uint32_t)DEC_VAL(c) << (s))
#define D4(c, s) D1(c, s), D1((c) + 1, s), D1((c) + 2, s), D1((c) + 3, s)
#define D16(c, s) D4(c, s), D4((c) + 4, s), D4((c) + 8, s), D4((c) + 12, s)
#define D64(c, s) D16(c, s), D16((c) + 16, s), D16((c) + 32, s), D16((c) + 48, s)
#define D256(s) D64(0, s), D64(64, s), D64(128, s), D64(192, s)

/* DEC[k][c]: the value of c as the k-th character of a quantum. */
static const uint32_t DEC[4][256] = {{D256(18)}, {D256(12)}, {D256(6)}, {D256(0)}};

/* ---- encode ---------------------------------------------------------------- */

size_t asbi_b64_encoded_len(size_t n) {
  return (n + 2) / 3 * 4;
}

size_t asbi_b64_encode(const void *in, size_t n, char *out, int url, int pad) {
  const unsigned char *p = in;
  const char(*pairs)[2] = PAIRS[url ? 1 : 0];
  char *o = out;
  size_t i = 0;
  /* Six bytes (two groups) per step. */
  for (; n - i >= 6; i += 6, o += 8) {
    uint32_t a = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    uint32_t b = (uint32_t)p[i + 3] << 16 | (uint32_t)p[i + 4] << 8 | p[i + 5];
    memcpy(o, pairs[a >> 12], 2);
    memcpy(o + 2, pairs[a & 0xFFF], 2);
    memcpy(o + 4, pairs[b >> 12], 2);
    memcpy(o + 6, pairs[b & 0xFFF], 2);
  }
  if (n - i >= 3) {
    uint32_t a = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    memcpy(o, pairs[a >> 12], 2);
    memcpy(o + 2, pairs[a & 0xFFF], 2);
    o += 4;
    i += 3;
  }
  const char *a = url ? URL : STD;
  if (n - i == 1) {
    uint32_t v = (uint32_t)p[i] << 16;
    *o++ = a[v >> 18];
    *o++ = a[(v >> 12) & 63];
    if (pad) {
      *o++ = '=';
      *o++ = '=';
    }
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
    *o++ = a[v >> 18];
    *o++ = a[(v >> 12) & 63];
    *o++ = a[(v >> 6) & 63];
    if (pad) *o++ = '=';
  }
  *o = '\0';
  return (size_t)(o - out);
}

/* ---- decode ---------------------------------------------------------------- */

size_t asbi_b64_decoded_max(size_t n) {
  return (n + 3) / 4 * 3;
}

/* The 24 bits of one 4-character quantum; BAD set if any character is not
 * in the alphabets. */
static inline uint32_t quantum(const unsigned char *s) {
  return DEC[0][s[0]] | DEC[1][s[1]] | DEC[2][s[2]] | DEC[3][s[3]];
}

int asbi_b64_decode(const char *in, size_t n, void *out, size_t *outlen) {
  const unsigned char *s = (const unsigned char *)in;
  unsigned char *o = out;
  size_t len = n;
  /* Strip up to two '=' of padding; then the rest must be alphabet only. */
  if (len > 0 && in[len - 1] == '=') {
    len--;
    if (len > 0 && in[len - 1] == '=') len--;
    if (n % 4 != 0) return -1; /* padded input comes in whole quanta */
  }
  if (len % 4 == 1) return -1;
  size_t full = len / 4 * 4, i = 0;
  /* Four quanta (16 characters, 12 bytes) per step, checked together. */
  for (; full - i >= 16; i += 16, o += 12) {
    uint32_t a = quantum(s + i), b = quantum(s + i + 4);
    uint32_t c = quantum(s + i + 8), d = quantum(s + i + 12);
    if ((a | b | c | d) & BAD) return -1;
    o[0] = (unsigned char)(a >> 16);
    o[1] = (unsigned char)(a >> 8);
    o[2] = (unsigned char)a;
    o[3] = (unsigned char)(b >> 16);
    o[4] = (unsigned char)(b >> 8);
    o[5] = (unsigned char)b;
    o[6] = (unsigned char)(c >> 16);
    o[7] = (unsigned char)(c >> 8);
    o[8] = (unsigned char)c;
    o[9] = (unsigned char)(d >> 16);
    o[10] = (unsigned char)(d >> 8);
    o[11] = (unsigned char)d;
  }
  for (; i < full; i += 4, o += 3) {
    uint32_t a = quantum(s + i);
    if (a & BAD) return -1;
    o[0] = (unsigned char)(a >> 16);
    o[1] = (unsigned char)(a >> 8);
    o[2] = (unsigned char)a;
  }
  /* A final partial quantum of 2 or 3 characters holds 1 or 2 bytes; the
   * bits it carries beyond them must be zero (canonical encoding). */
  if (len - full == 2) {
    uint32_t a = DEC[0][s[i]] | DEC[1][s[i + 1]];
    if ((a & BAD) || (a & 0xFFFFu)) return -1;
    *o++ = (unsigned char)(a >> 16);
  } else if (len - full == 3) {
    uint32_t a = DEC[0][s[i]] | DEC[1][s[i + 1]] | DEC[2][s[i + 2]];
    if ((a & BAD) || (a & 0xFFu)) return -1;
    *o++ = (unsigned char)(a >> 16);
    *o++ = (unsigned char)(a >> 8);
  }
  *outlen = (size_t)(o - (unsigned char *)out);
  return 0;
}
