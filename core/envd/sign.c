/* envd: signed /files URLs and the constant-time token comparison. The
 * signature is E2B's:
 *   "v1_" + base64-nopad(sha256("path:read|write:user:token[:expiration]"))
 * (SHA-256 from util/sha256.c: envd does not map libcrypto for one hash.)
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "httpd/httpd.h"
#include "sign.h"
#include "util/base64.h"
#include "util/sha256.h"
#include "util/util.h"

void envd_sign(const char *path, const char *op, const char *user, const char *token,
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
  char b64[64];
  asbi_b64_encode(md, sizeof md, b64, 0, 0);
  snprintf(out, n, "v1_%s", b64);
}

int envd_sign_verify(const char *tok, const char *h, const char *sig, const char *exp,
                     const char *user, const char *path, const char *op, int64_t now, char *msg,
                     size_t n) {
  if (!tok) return 0;
  if (!asbi_empty(h)) {
    if (asbi_httpd_token_eq(h, tok)) return 0;
    snprintf(msg, n, "access token present in header but does not match");
    return -1;
  }
  if (!sig) {
    snprintf(msg, n, "missing signature query parameter");
    return -1;
  }
  int64_t e = 0;
  char expbuf[32];
  if (exp && asbi_parse_i64(exp, strlen(exp), &e) != 0) {
    snprintf(msg, n, "invalid signature_expiration");
    return -1;
  }
  if (exp) snprintf(expbuf, sizeof expbuf, "%lld", (long long)e);
  char want[80];
  envd_sign(path ? path : "", op, user ? user : "", tok, exp ? expbuf : NULL, want, sizeof want);
  if (!asbi_httpd_token_eq(want, sig)) {
    snprintf(msg, n, "invalid signature");
    return -1;
  }
  if (exp && e < now) {
    snprintf(msg, n, "signature is already expired");
    return -1;
  }
  return 0;
}
