/* E2B's /files URL signature:
 *   "v1_" + base64-nopad(sha256("path:read|write:user:token[:expiration]"))
 * with util's SHA-256, so envd (which does not map libcrypto for one hash),
 * the client library and the engine share one definition.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "sign.h"
#include "util/base64.h"
#include "util/sha256.h"

void asbi_files_sign(const char *path, const char *op, const char *user, const char *token,
                     const char *exp, char *out, size_t n) {
  asbi_sha256_ctx s;
  unsigned char md[32];
  asbi_sha256_init(&s);
  asbi_sha256_update(&s, path, strlen(path));
  asbi_sha256_update(&s, ":", 1);
  asbi_sha256_update(&s, op, strlen(op));
  asbi_sha256_update(&s, ":", 1);
  asbi_sha256_update(&s, user, strlen(user));
  asbi_sha256_update(&s, ":", 1);
  asbi_sha256_update(&s, token, strlen(token));
  if (exp) {
    asbi_sha256_update(&s, ":", 1);
    asbi_sha256_update(&s, exp, strlen(exp));
  }
  asbi_sha256_final(&s, md);
  char b64[48];
  asbi_b64_encode(md, sizeof md, b64, 0, 0);
  snprintf(out, n, "v1_%s", b64);
}
