/* SPDX-License-Identifier: Apache-2.0 */
#include "base64.h"

#include <stdint.h>

static const char STD[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char URL[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t asbi_b64_encoded_len(size_t n) { return (n + 2) / 3 * 4; }

size_t asbi_b64_encode(const void *in, size_t n, char *out, int url, int pad) {
  const unsigned char *p = in;
  const char *a = url ? URL : STD;
  size_t o = 0, i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    out[o++] = a[v >> 18];
    out[o++] = a[(v >> 12) & 63];
    out[o++] = a[(v >> 6) & 63];
    out[o++] = a[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)p[i] << 16;
    out[o++] = a[v >> 18];
    out[o++] = a[(v >> 12) & 63];
    if (pad) {
      out[o++] = '=';
      out[o++] = '=';
    }
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
    out[o++] = a[v >> 18];
    out[o++] = a[(v >> 12) & 63];
    out[o++] = a[(v >> 6) & 63];
    if (pad) out[o++] = '=';
  }
  out[o] = '\0';
  return o;
}

size_t asbi_b64_decoded_max(size_t n) { return (n + 3) / 4 * 3; }

static int val(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

int asbi_b64_decode(const char *in, size_t n, void *out, size_t *outlen) {
  unsigned char *o = out;
  size_t len = n;
  /* Strip up to two '=' of padding; then the rest must be alphabet only. */
  if (len > 0 && in[len - 1] == '=') {
    len--;
    if (len > 0 && in[len - 1] == '=') len--;
    if (n % 4 != 0) return -1; /* padded input comes in whole quanta */
  }
  if (len % 4 == 1) return -1;
  size_t w = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = val((unsigned char)in[i]);
    if (v < 0) return -1;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      o[w++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (acc != 0) return -1; /* non-canonical trailing bits */
  *outlen = w;
  return 0;
}
