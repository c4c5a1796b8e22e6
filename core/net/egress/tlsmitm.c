/* The egress CA, its leaves and the two TLS contexts (tlsmitm.h).
 * SPDX-License-Identifier: Apache-2.0 */
#include "tlsmitm.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LEAF_CACHE 256
#define LEAF_DAYS 30

typedef struct leaf {
  char name[254];
  SSL_CTX *ctx;
  time_t made;
} leaf;

struct tlsmitm {
  pthread_mutex_t mu;
  EVP_PKEY *ca_key, *leaf_key;
  X509 *ca;
  SSL_CTX *client;
  char *ca_path;
  leaf cache[LEAF_CACHE];
  size_t next; /* round-robin eviction */
};

static EVP_PKEY *p256(void) {
  return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
  X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
  if (!ex) return -1;
  int ok = X509_add_ext(cert, ex, -1);
  X509_EXTENSION_free(ex);
  return ok ? 0 : -1;
}

static X509 *new_cert(EVP_PKEY *key, const char *cn, long days) {
  X509 *c = X509_new();
  if (!c) return NULL;
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
  ASN1_INTEGER *sn = bn ? BN_to_ASN1_INTEGER(bn, NULL) : NULL;
  BN_free(bn);
  int ok = sn && X509_set_version(c, 2) && X509_set_serialNumber(c, sn) &&
           X509_gmtime_adj(X509_getm_notBefore(c), -3600) &&
           X509_gmtime_adj(X509_getm_notAfter(c), days * 86400L) && X509_set_pubkey(c, key);
  ASN1_INTEGER_free(sn);
  X509_NAME *nm = X509_get_subject_name(c);
  ok = ok &&
       X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
  if (!ok) {
    X509_free(c);
    return NULL;
  }
  return c;
}

static int write_pem(const char *path, int mode, EVP_PKEY *key, X509 *cert) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    return -1;
  }
  int ok = key ? PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) : PEM_write_X509(f, cert);
  ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0 && fchmod(fileno(f), (mode_t)mode) == 0;
  fclose(f);
  if (!ok || rename(tmp, path) < 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

static int load_or_make_ca(tlsmitm *m, const char *dir, char *err, size_t errlen) {
  char kp[4096];
  snprintf(kp, sizeof kp, "%s/egress-ca.key", dir);
  size_t need = strlen(dir) + sizeof "/egress-ca.pem";
  m->ca_path = malloc(need);
  if (!m->ca_path) return -1;
  snprintf(m->ca_path, need, "%s/egress-ca.pem", dir);
  int kfd = open(kp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  FILE *kf = kfd >= 0 ? fdopen(kfd, "r") : NULL;
  FILE *cf = fopen(m->ca_path, "re");
  if (kf && cf) {
    m->ca_key = PEM_read_PrivateKey(kf, NULL, NULL, NULL);
    m->ca = PEM_read_X509(cf, NULL, NULL, NULL);
  }
  if (kf)
    fclose(kf);
  else if (kfd >= 0)
    close(kfd);
  if (cf) fclose(cf);
  if (m->ca_key && m->ca && X509_check_private_key(m->ca, m->ca_key) == 1) {
    struct stat st;
    if (stat(kp, &st) == 0 && (st.st_mode & 077)) chmod(kp, 0600);
    return 0;
  }
  EVP_PKEY_free(m->ca_key);
  X509_free(m->ca);
  m->ca_key = p256();
  unsigned char id[4];
  RAND_bytes(id, sizeof id);
  char cn[96];
  snprintf(cn, sizeof cn, "agent-sandbox egress CA %02x%02x%02x%02x", id[0], id[1], id[2], id[3]);
  m->ca = m->ca_key ? new_cert(m->ca_key, cn, 3650) : NULL;
  if (!m->ca || !X509_set_issuer_name(m->ca, X509_get_subject_name(m->ca)) ||
      add_ext(m->ca, m->ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      add_ext(m->ca, m->ca, NID_key_usage, "critical,keyCertSign,cRLSign") ||
      add_ext(m->ca, m->ca, NID_subject_key_identifier, "hash") ||
      !X509_sign(m->ca, m->ca_key, EVP_sha256())) {
    snprintf(err, errlen, "egress: cannot make the egress CA");
    return -1;
  }
  if (write_pem(kp, 0600, m->ca_key, NULL) < 0 || write_pem(m->ca_path, 0644, NULL, m->ca) < 0) {
    snprintf(err, errlen, "egress: cannot write the egress CA in %s: %s", dir, strerror(errno));
    return -1;
  }
  return 0;
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned inlen, void *arg) {
  (void)ssl;
  (void)arg;
  static const unsigned char h11[] = "\x08http/1.1";
  unsigned char *sel;
  if (SSL_select_next_proto(&sel, outlen, h11, sizeof h11 - 1, in, inlen) ==
      OPENSSL_NPN_NEGOTIATED) {
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK; /* no ALPN: HTTP/1.1 by default */
}

int tlsmitm_open(const char *state_dir, const char *upstream_ca_file, tlsmitm **out, char *err,
                 size_t errlen) {
  *out = NULL;
  tlsmitm *m = calloc(1, sizeof *m);
  if (!m) return -1;
  pthread_mutex_init(&m->mu, NULL);
  if (load_or_make_ca(m, state_dir, err, errlen) < 0) goto fail;
  m->leaf_key = p256();
  m->client = SSL_CTX_new(TLS_client_method());
  if (!m->leaf_key || !m->client) {
    snprintf(err, errlen, "egress: TLS setup failed");
    goto fail;
  }
  SSL_CTX_set_min_proto_version(m->client, TLS1_2_VERSION);
  SSL_CTX_set_verify(m->client, SSL_VERIFY_PEER, NULL);
  if (upstream_ca_file ? SSL_CTX_load_verify_locations(m->client, upstream_ca_file, NULL) != 1
                       : SSL_CTX_set_default_verify_paths(m->client) != 1) {
    snprintf(err, errlen, "egress: cannot load the upstream trust store%s%s",
             upstream_ca_file ? " " : "", upstream_ca_file ? upstream_ca_file : "");
    goto fail;
  }
  SSL_CTX_set_alpn_protos(m->client, (const unsigned char *)"\x08http/1.1", 9);
  SSL_CTX_set_mode(m->client, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  *out = m;
  return 0;
fail:
  tlsmitm_close(m);
  return -1;
}

void tlsmitm_close(tlsmitm *m) {
  if (!m) return;
  for (size_t i = 0; i < LEAF_CACHE; i++) SSL_CTX_free(m->cache[i].ctx);
  SSL_CTX_free(m->client);
  EVP_PKEY_free(m->ca_key);
  EVP_PKEY_free(m->leaf_key);
  X509_free(m->ca);
  free(m->ca_path);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

const char *tlsmitm_ca_path(const tlsmitm *m) {
  return m->ca_path;
}

static SSL_CTX *leaf_ctx(tlsmitm *m, const char *name) {
  char san[300];
  snprintf(san, sizeof san, "DNS:%s", name);
  X509 *c = new_cert(m->leaf_key, name, LEAF_DAYS);
  SSL_CTX *ctx = NULL;
  if (c && X509_set_issuer_name(c, X509_get_subject_name(m->ca)) &&
      !add_ext(c, m->ca, NID_subject_alt_name, san) &&
      !add_ext(c, m->ca, NID_basic_constraints, "critical,CA:FALSE") &&
      !add_ext(c, m->ca, NID_key_usage, "critical,digitalSignature") &&
      !add_ext(c, m->ca, NID_ext_key_usage, "serverAuth") &&
      !add_ext(c, m->ca, NID_authority_key_identifier, "keyid:always") &&
      X509_sign(c, m->ca_key, EVP_sha256())) {
    ctx = SSL_CTX_new(TLS_server_method());
    if (ctx &&
        (SSL_CTX_use_certificate(ctx, c) != 1 || SSL_CTX_use_PrivateKey(ctx, m->leaf_key) != 1 ||
         SSL_CTX_add1_chain_cert(ctx, m->ca) != 1)) {
      SSL_CTX_free(ctx);
      ctx = NULL;
    }
    if (ctx) {
      SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
      SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
      SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
  }
  X509_free(c);
  return ctx;
}

SSL *tlsmitm_server(tlsmitm *m, const char *name, int fd) {
  time_t now = time(NULL);
  pthread_mutex_lock(&m->mu);
  SSL_CTX *ctx = NULL;
  for (size_t i = 0; i < LEAF_CACHE && !ctx; i++)
    if (m->cache[i].ctx && strcmp(m->cache[i].name, name) == 0 &&
        now - m->cache[i].made < (LEAF_DAYS - 1) * 86400L)
      ctx = m->cache[i].ctx;
  if (!ctx && (ctx = leaf_ctx(m, name))) {
    leaf *l = &m->cache[m->next];
    m->next = (m->next + 1) % LEAF_CACHE;
    SSL_CTX_free(l->ctx); /* SSLs made from it hold their own reference */
    snprintf(l->name, sizeof l->name, "%s", name);
    l->ctx = ctx;
    l->made = now;
  }
  SSL *ssl = ctx ? SSL_new(ctx) : NULL;
  pthread_mutex_unlock(&m->mu);
  if (ssl && SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    ssl = NULL;
  }
  if (ssl) SSL_set_accept_state(ssl);
  return ssl;
}

SSL *tlsmitm_client(tlsmitm *m, const char *name, int fd) {
  SSL *ssl = SSL_new(m->client);
  if (!ssl) return NULL;
  if (SSL_set_fd(ssl, fd) != 1 || SSL_set_tlsext_host_name(ssl, name) != 1 ||
      SSL_set1_host(ssl, name) != 1) {
    SSL_free(ssl);
    return NULL;
  }
  SSL_set_connect_state(ssl);
  return ssl;
}
