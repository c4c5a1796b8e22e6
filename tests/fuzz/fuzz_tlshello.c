/* Fuzz the engine's TLS server side (core/engine/tlsca.c) with what a
 * client sends first: the input is the client's first flight, fed to a
 * server SSL of the engine's context over memory BIOs, so the SNI and ALPN
 * callbacks and the per-name issuing run on hostile ClientHellos. Also
 * the SNI name check on the input as a string. Invariants: no crash or
 * leak; a name the check accepts is <labels>.localhost or localhost, in
 * bounds, of letters, digits, '-' and '.'; a handshake never completes on
 * one flight. SPDX-License-Identifier: Apache-2.0 */
#include <openssl/err.h>
#include <sys/stat.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "engine/tlsca.h"
#include "fuzz.h"

static tlsca *CA;

static void cleanup(void) {
  tlsca_free(CA);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf /tmp/asb-fuzz-tls-%d", (int)getpid());
  if (system(cmd) != 0) fprintf(stderr, "cannot remove the fuzz CA dir\n");
}

static tlsca *ca(void) {
  if (CA) return CA;
  char dir[64], err[256];
  snprintf(dir, sizeof dir, "/tmp/asb-fuzz-tls-%d", (int)getpid());
  mkdir(dir, 0700);
  CA = tlsca_open(dir, err, sizeof err);
  if (!CA) fprintf(stderr, "tlsca_open: %s\n", err);
  FUZZ_CHECK(CA != NULL);
  atexit(cleanup);
  return CA;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  /* the name check */
  char *name = malloc(n + 1);
  memcpy(name, d, n);
  name[n] = 0;
  if (tlsca_name_ok(name)) {
    size_t len = strlen(name);
    FUZZ_CHECK(len >= 9 && len <= 253);
    FUZZ_CHECK(strcasecmp(name + len - 9, "localhost") == 0);
    FUZZ_CHECK(len == 9 || name[len - 10] == '.');
    FUZZ_CHECK(name[0] != '.' && strstr(name, "..") == NULL);
    for (size_t i = 0; i < len; i++)
      FUZZ_CHECK(name[i] == '.' || name[i] == '-' || (name[i] >= '0' && name[i] <= '9') ||
                 ((name[i] | 0x20) >= 'a' && (name[i] | 0x20) <= 'z'));
  }
  free(name);
  /* the handshake */
  SSL *ssl = SSL_new(tlsca_ctx(ca()));
  BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
  BIO_write(in, d, (int)n);
  SSL_set_bio(ssl, in, out);
  int r = SSL_accept(ssl);
  FUZZ_CHECK(r != 1);
  SSL_free(ssl);
  ERR_clear_error();
  return 0;
}
