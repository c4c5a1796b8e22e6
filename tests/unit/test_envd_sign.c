/* Unit tests for envd's signed /files URLs (core/envd/sign.c, the signature in core/proto/sign.c):
 * the signature checked against a second implementation (OpenSSL's SHA-256 and base64), and every
 * branch of the request check — header token, missing, wrong and expired signatures, expiration
 * parsing. SPDX-License-Identifier: Apache-2.0 */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "proto/sign.h"
#include "sign.h"
#include "testing.h"

/* "v1_" + base64-nopad(sha256("path:op:user:token[:exp]")), by OpenSSL. */
static void ref_sign(const char *path, const char *op, const char *user, const char *tok,
                     const char *exp, char *out, size_t n) {
  char in[1024];
  snprintf(in, sizeof in, "%s:%s:%s:%s%s%s", path, op, user, tok, exp ? ":" : "", exp ? exp : "");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  EVP_Digest(in, strlen(in), md, &mdlen, EVP_sha256(), NULL);
  unsigned char b64[128];
  int bl = EVP_EncodeBlock(b64, md, (int)mdlen);
  while (bl > 0 && b64[bl - 1] == '=') b64[--bl] = '\0';
  snprintf(out, n, "v1_%s", (const char *)b64);
}

static void check_sign(const char *path, const char *op, const char *user, const char *tok,
                       const char *exp) {
  char got[128], want[128];
  asbi_files_sign(path, op, user, tok, exp, got, sizeof got);
  ref_sign(path, op, user, tok, exp, want, sizeof want);
  if (strcmp(got, want) != 0)
    ASBT_FAIL("sign(%s,%s,%s,%s,%s) = %s, want %s", path, op, user, tok, exp ? exp : "-", got,
              want);
}

TEST(signature_matches_a_second_implementation) {
  check_sign("/home/user/a.txt", "read", "user", "s3cret", NULL);
  check_sign("/home/user/a.txt", "write", "user", "s3cret", NULL);
  check_sign("/home/user/a.txt", "read", "user", "s3cret", "1700000000");
  check_sign("", "read", "", "t", NULL);
  check_sign("/päth with spaces/ü", "write", "root", "tök:with:colons", "1");
  char sig[128];
  asbi_files_sign("/x", "read", "u", "t", NULL, sig, sizeof sig);
  CHECK(strncmp(sig, "v1_", 3) == 0);
  CHECK_INT(strlen(sig), 3 + 43); /* 32 bytes, base64 without padding */
  CHECK(strchr(sig, '=') == NULL);
}

/* Runs the check; returns its result and the message in msg. */
static int verify(const char *tok, const char *h, const char *sig, const char *exp,
                  const char *user, const char *path, const char *op, long long now, char *msg) {
  msg[0] = '\0';
  return envd_sign_verify(tok, h, sig, exp, user, path, op, now, msg, 256);
}

TEST(verify_without_a_token_lets_everything_through) {
  char msg[256];
  CHECK_INT(verify(NULL, NULL, NULL, NULL, NULL, "/x", "read", 0, msg), 0);
  CHECK_INT(verify(NULL, "anything", "v1_bad", "x", NULL, "/x", "write", 0, msg), 0);
}

TEST(verify_header_token) {
  char msg[256];
  CHECK_INT(verify("tok", "tok", NULL, NULL, NULL, "/x", "read", 0, msg), 0);
  CHECK_INT(verify("tok", "tok2", NULL, NULL, NULL, "/x", "read", 0, msg), -1);
  CHECK_STR(msg, "access token present in header but does not match");
  /* a matching header wins even over a bad signature */
  CHECK_INT(verify("tok", "tok", "v1_bad", "zz", NULL, "/x", "read", 0, msg), 0);
  /* an empty header counts as none: the signature is looked at */
  CHECK_INT(verify("tok", "", NULL, NULL, NULL, "/x", "read", 0, msg), -1);
  CHECK_STR(msg, "missing signature query parameter");
}

TEST(verify_signatures) {
  char msg[256], sig[128];
  const long long now = 1700000000;
  CHECK_INT(verify("tok", NULL, NULL, NULL, NULL, "/x", "read", now, msg), -1);
  CHECK_STR(msg, "missing signature query parameter");
  /* no expiration, user empty */
  ref_sign("/x", "read", "", "tok", NULL, sig, sizeof sig);
  CHECK_INT(verify("tok", NULL, sig, NULL, NULL, "/x", "read", now, msg), 0);
  /* bound to the operation, the path, the user and the token */
  CHECK_INT(verify("tok", NULL, sig, NULL, NULL, "/x", "write", now, msg), -1);
  CHECK_STR(msg, "invalid signature");
  CHECK_INT(verify("tok", NULL, sig, NULL, NULL, "/y", "read", now, msg), -1);
  CHECK_INT(verify("tok", NULL, sig, NULL, "user", "/x", "read", now, msg), -1);
  CHECK_INT(verify("tok2", NULL, sig, NULL, NULL, "/x", "read", now, msg), -1);
  /* a NULL path signs as "" */
  ref_sign("", "read", "", "tok", NULL, sig, sizeof sig);
  CHECK_INT(verify("tok", NULL, sig, NULL, NULL, NULL, "read", now, msg), 0);
  /* with a user */
  ref_sign("/x", "write", "user", "tok", NULL, sig, sizeof sig);
  CHECK_INT(verify("tok", NULL, sig, NULL, "user", "/x", "write", now, msg), 0);
  /* cut or extended signatures */
  char cut[128];
  snprintf(cut, sizeof cut, "%.*s", (int)strlen(sig) - 1, sig);
  CHECK_INT(verify("tok", NULL, cut, NULL, "user", "/x", "write", now, msg), -1);
  snprintf(cut, sizeof cut, "%sA", sig);
  CHECK_INT(verify("tok", NULL, cut, NULL, "user", "/x", "write", now, msg), -1);
}

TEST(verify_expiration) {
  char msg[256], sig[128];
  const long long now = 1700000000;
  ref_sign("/x", "read", "", "tok", "1700000100", sig, sizeof sig);
  CHECK_INT(verify("tok", NULL, sig, "1700000100", NULL, "/x", "read", now, msg), 0);
  /* expiring exactly now is still valid, a second later is not */
  CHECK_INT(verify("tok", NULL, sig, "1700000100", NULL, "/x", "read", 1700000100, msg), 0);
  CHECK_INT(verify("tok", NULL, sig, "1700000100", NULL, "/x", "read", 1700000101, msg), -1);
  CHECK_STR(msg, "signature is already expired");
  /* the expiration is part of what is signed */
  CHECK_INT(verify("tok", NULL, sig, "1700000200", NULL, "/x", "read", now, msg), -1);
  CHECK_STR(msg, "invalid signature");
  CHECK_INT(verify("tok", NULL, sig, NULL, NULL, "/x", "read", now, msg), -1);
  CHECK_STR(msg, "invalid signature");
  /* it is signed as the number it parses to (Go: strconv then Itoa) */
  CHECK_INT(verify("tok", NULL, sig, "01700000100", NULL, "/x", "read", now, msg), 0);
  /* not a number */
  CHECK_INT(verify("tok", NULL, sig, "soon", NULL, "/x", "read", now, msg), -1);
  CHECK_STR(msg, "invalid signature_expiration");
  CHECK_INT(verify("tok", NULL, sig, "", NULL, "/x", "read", now, msg), -1);
  CHECK_STR(msg, "invalid signature_expiration");
  CHECK_INT(verify("tok", NULL, sig, "99999999999999999999", NULL, "/x", "read", now, msg), -1);
  CHECK_STR(msg, "invalid signature_expiration");
  /* negative expirations parse, and are long past */
  ref_sign("/x", "read", "", "tok", "-5", sig, sizeof sig);
  CHECK_INT(verify("tok", NULL, sig, "-5", NULL, "/x", "read", now, msg), -1);
  CHECK_STR(msg, "signature is already expired");
}

int main(void) {
  RUN(signature_matches_a_second_implementation);
  RUN(verify_without_a_token_lets_everything_through);
  RUN(verify_header_token);
  RUN(verify_signatures);
  RUN(verify_expiration);
  TEST_MAIN_END();
}
