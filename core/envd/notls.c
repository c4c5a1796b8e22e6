/* envd links libmicrohttpd statically and never serves TLS (as in E2B, TLS
 * ends at the proxy in front of the sandbox). The archive still refers to
 * GnuTLS; these inert definitions satisfy those references so that the TLS
 * stack (GnuTLS, p11-kit, nettle, gmp, …: ~2.5 MiB of resident pages) is not
 * mapped into every sandbox. They are only reachable through
 * MHD_USE_TLS, which envd never sets; all but the global init fail.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>

#define NOTLS_ERR (-1250) /* GNUTLS_E_UNIMPLEMENTED_FEATURE */

typedef void *(*notls_alloc_fn)(size_t);
extern notls_alloc_fn gnutls_malloc;
notls_alloc_fn gnutls_malloc = malloc;

#define NOTLS_INT(name, ...) \
  int name(__VA_ARGS__);     \
  int name(__VA_ARGS__) {    \
    return NOTLS_ERR;        \
  }
#define NOTLS_VOID(name, ...) \
  void name(__VA_ARGS__);     \
  void name(__VA_ARGS__) {}

int gnutls_global_init(void);
int gnutls_global_init(void) {
  return 0;
}
NOTLS_VOID(gnutls_global_deinit, void)
NOTLS_INT(gnutls_alpn_set_protocols, void *s, const void *p, unsigned n, unsigned f)
NOTLS_INT(gnutls_bye, void *s, int how)
NOTLS_INT(gnutls_certificate_allocate_credentials, void **c)
NOTLS_VOID(gnutls_certificate_free_credentials, void *c)
NOTLS_VOID(gnutls_certificate_server_set_request, void *s, int r)
NOTLS_VOID(gnutls_certificate_set_dh_params, void *c, void *d)
NOTLS_VOID(gnutls_certificate_set_retrieve_function2, void *c, void *f)
NOTLS_VOID(gnutls_certificate_set_retrieve_function3, void *c, void *f)
NOTLS_INT(gnutls_certificate_set_x509_key_mem, void *c, const void *a, const void *b, int f)
NOTLS_INT(gnutls_certificate_set_x509_key_mem2, void *c, const void *a, const void *b, int f,
          const char *p, unsigned fl)
NOTLS_INT(gnutls_certificate_set_x509_trust_mem, void *c, const void *a, int f)
NOTLS_INT(gnutls_cipher_get, void *s)
NOTLS_INT(gnutls_credentials_set, void *s, int t, void *c)
NOTLS_VOID(gnutls_deinit, void *s)
NOTLS_VOID(gnutls_dh_params_deinit, void *d)
NOTLS_INT(gnutls_dh_params_import_pkcs3, void *d, const void *p, int f)
NOTLS_INT(gnutls_dh_params_init, void **d)
NOTLS_INT(gnutls_handshake, void *s)
NOTLS_INT(gnutls_init, void **s, unsigned f)
NOTLS_VOID(gnutls_priority_deinit, void *p)
NOTLS_INT(gnutls_priority_init, void **p, const char *s, const char **e)
NOTLS_INT(gnutls_priority_set, void *s, void *p)
NOTLS_INT(gnutls_protocol_get_version, void *s)
NOTLS_INT(gnutls_psk_allocate_server_credentials, void **c)
NOTLS_VOID(gnutls_psk_free_server_credentials, void *c)
NOTLS_VOID(gnutls_psk_set_server_credentials_function, void *c, void *f)
NOTLS_INT(gnutls_record_get_direction, void *s)
NOTLS_VOID(gnutls_session_set_ptr, void *s, void *p)
NOTLS_VOID(gnutls_transport_set_int2, void *s, int r, int w)

size_t gnutls_record_check_pending(void *s);
size_t gnutls_record_check_pending(void *s) {
  (void)s;
  return 0;
}
ssize_t gnutls_record_recv(void *s, void *d, size_t n);
ssize_t gnutls_record_recv(void *s, void *d, size_t n) {
  (void)s;
  (void)d;
  (void)n;
  return NOTLS_ERR;
}
ssize_t gnutls_record_send(void *s, const void *d, size_t n);
ssize_t gnutls_record_send(void *s, const void *d, size_t n) {
  (void)s;
  (void)d;
  (void)n;
  return NOTLS_ERR;
}
void *gnutls_session_get_ptr(void *s);
void *gnutls_session_get_ptr(void *s) {
  (void)s;
  return NULL;
}
const char *gnutls_strerror(int e);
const char *gnutls_strerror(int e) {
  (void)e;
  return "TLS is not available in envd";
}
