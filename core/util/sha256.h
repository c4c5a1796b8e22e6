/* SHA-256 (FIPS 180-4), and checking a secret against its hash in constant
 * time: servers that run as an unprivileged user inside a sandbox get only
 * the SHA-256 of a token (anything they hold, that user can read), and
 * compare each request's token with it. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_UTIL_SHA256_H
#define ASB_UTIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct asbi_sha256_ctx {
  uint32_t h[8];
  uint64_t len;
  unsigned char buf[64];
  size_t n;
} asbi_sha256_ctx;

void asbi_sha256_init(asbi_sha256_ctx *s);
void asbi_sha256_update(asbi_sha256_ctx *s, const void *data, size_t n);
void asbi_sha256_final(asbi_sha256_ctx *s, unsigned char out[32]);
void asbi_sha256(const void *data, size_t n, unsigned char out[32]);
/* Lower-case hex digest, NUL-terminated. */
void asbi_sha256_hex(const void *data, size_t n, char out[65]);
/* 64 hex digits (any case) → 32 bytes; 0, or -1 if not that. */
int asbi_sha256_hex_parse(const char *hex, unsigned char out[32]);
/* 1 if sha256(secret) == want (constant time in the digest; NULL → 0). */
int asbi_sha256_matches(const char *secret, const unsigned char want[32]);

#endif
