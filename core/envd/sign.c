/* envd: the check of signed /files URLs (the signature itself:
 * proto/sign.c) and the constant-time token comparison.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "httpd/httpd.h"
#include "sign.h"
#include "proto/sign.h"
#include "util/util.h"

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
  char want[ASBI_FILES_SIG_MAX];
  asbi_files_sign(path ? path : "", op, user ? user : "", tok, exp ? expbuf : NULL, want,
                  sizeof want);
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
