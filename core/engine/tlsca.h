/* The engine's TLS identity (see tlsca.c): a per-engine CA kept in the
 * state dir and server certificates it issues per host name on demand.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_TLSCA_H
#define ASB_ENGINE_TLSCA_H

#include <stddef.h>

#include <openssl/ssl.h>

typedef struct tlsca tlsca;

/* Where the CA certificate is (or will be) under a state dir: a path for
 * NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, REQUESTS_CA_BUNDLE. */
int tlsca_cert_path(const char *state_dir, char *out, size_t n);

/* Loads <state>/tls/ca.pem and ca.key, making them on first use (the dir
 * 0700, the key 0600). NULL with a message in err on failure. */
tlsca *tlsca_open(const char *state_dir, char *err, size_t n);
void tlsca_free(tlsca *ca);
/* The CA certificate's path. */
const char *tlsca_path(const tlsca *ca);
/* A server context (TLS 1.2+, ALPN http/1.1) whose certificate is picked
 * by SNI: "localhost" or any name under ".localhost" gets one issued for
 * it (cached); no SNI gets the certificate for localhost, 127.0.0.1 and
 * ::1; any other name ends the handshake with unrecognized_name. Owned by
 * ca. */
SSL_CTX *tlsca_ctx(tlsca *ca);

/* 1 when name (NUL-terminated, as SNI gives it) is one the engine issues a
 * certificate for: "localhost" or <labels>.localhost, lower case letters,
 * digits and '-', labels 1..63 bytes, at most 253 bytes. */
int tlsca_name_ok(const char *name);

#endif
