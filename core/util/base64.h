/* Base64 (RFC 4648). Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_UTIL_BASE64_H
#define ASB_UTIL_BASE64_H

#include <stddef.h>

/* Length of the padded standard encoding of n bytes (without NUL). */
size_t asbi_b64_encoded_len(size_t n);
/* Encode n bytes into out (room for asbi_b64_encoded_len(n)+1); NUL-ends it.
 * url=1 uses the URL-safe alphabet; pad=0 omits '=' padding. Returns the
 * number of characters written. */
size_t asbi_b64_encode(const void *in, size_t n, char *out, int url, int pad);
/* Upper bound of the decoded size of n characters. */
size_t asbi_b64_decoded_max(size_t n);
/* Decode as proto3 JSON allows: standard or URL-safe alphabet, padding
 * optional. Rejects any other character, misplaced padding and non-zero
 * trailing bits. out needs asbi_b64_decoded_max(n) bytes. Returns 0 and sets
 * *outlen, or -1. */
int asbi_b64_decode(const char *in, size_t n, void *out, size_t *outlen);

#endif
