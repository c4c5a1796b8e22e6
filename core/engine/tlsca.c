/* The engine's TLS identity. A CA of its own (EC P-256, ten years), made
 * on the engine's first start in <state>/tls/ (ca.pem 0644, ca.key 0600,
 * the dir 0700) and kept across restarts, so a client trusts it once. The
 * CA is name-constrained to localhost, *.localhost and the loopback
 * addresses: trusting it cannot let anyone holding its key speak for any
 * other site.
 *
 * Server certificates are issued per host name as SNI asks for them and
 * cached for the engine's run (one leaf key per run, 30-day certificates).
 * A wildcard "*.localhost" would spare the issuing, but clients refuse it:
 * OpenSSL (Node, Python, curl) never lets a wildcard stand for a label
 * right below a one-label suffix, so each sandbox host gets its own name.
 * SPDX-License-Identifier: Apache-2.0 */
#include "tlsca.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#define CACHE_MAX 4096 /* issued certificates kept; past it the cache restarts */
#define NAME_MAX_LEN 253

typedef struct issued {
  char name[NAME_MAX_LEN + 1];
  X509 *cert;
} issued;

struct tlsca {
  char path[4200];
  X509 *ca;
  EVP_PKEY *ca_key;
  EVP_PKEY *leaf_key;
  X509 *dflt; /* localhost, 127.0.0.1, ::1: for clients that send no SNI */
  SSL_CTX *ctx;
  pthread_mutex_t mu;
  issued *cache;
  size_t ncache;
};

int tlsca_cert_path(const char *state_dir, char *out, size_t n) {
  int w = snprintf(out, n, "%s/tls/ca.pem", state_dir);
  return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

int tlsca_name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > NAME_MAX_LEN) return 0;
  static const char suffix[] = "localhost";
  const size_t sl = sizeof suffix - 1;
  if (n < sl || strcasecmp(name + n - sl, suffix) != 0) return 0;
  if (n > sl && name[n - sl - 1] != '.') return 0;
  size_t label = 0;
  for (size_t i = 0; i < n - sl; i++) {
    unsigned char ch = (unsigned char)name[i];
    if (ch == '.') {
      if (label == 0) return 0;
      label = 0;
      continue;
    }
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '-';
    if (!ok || ++label > 63) return 0;
  }
  return 1;
}

/* ---- certificates ------------------------------------------------------ */

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
  X509V3_CTX v;
  X509V3_set_ctx(&v, issuer, cert, NULL, NULL, 0);
  X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &v, nid, value);
  if (!ex) return -1;
  int rc = X509_add_ext(cert, ex, -1) ? 0 : -1;
  X509_EXTENSION_free(ex);
  return rc;
}

static int random_serial(X509 *cert) {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) return -1;
  b[0] &= 0x7f; /* positive */
  BIGNUM *bn = BN_bin2bn(b, sizeof b, NULL);
  int rc = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) ? 0 : -1;
  BN_free(bn);
  return rc;
}

/* A certificate for key, named cn, valid from an hour ago for days days,
 * signed by (issuer, ikey) or by itself when issuer is NULL. exts: pairs of
 * NID and value, ending with 0. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *ikey, long days,
                       const int *nids, const char *const *values) {
  X509 *c = X509_new();
  if (!c) return NULL;
  X509_NAME *nm = X509_get_subject_name(c);
  int ok =
      X509_set_version(c, 2) && random_serial(c) == 0 &&
      X509_gmtime_adj(X509_getm_notBefore(c), -3600) &&
      X509_gmtime_adj(X509_getm_notAfter(c), days * 86400L) && X509_set_pubkey(c, key) &&
      X509_NAME_add_entry_by_txt(nm, "O", MBSTRING_ASC, (const unsigned char *)"agent-sandbox", -1,
                                 -1, 0) &&
      X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) &&
      X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : nm);
  for (size_t i = 0; ok && nids[i]; i++)
    ok = add_ext(c, issuer ? issuer : c, nids[i], values[i]) == 0;
  if (!ok || !X509_sign(c, ikey ? ikey : key, EVP_sha256())) {
    X509_free(c);
    return NULL;
  }
  return c;
}

static X509 *make_ca(EVP_PKEY *key) {
  static const int nids[] = {NID_basic_constraints, NID_key_usage, NID_subject_key_identifier,
                             NID_name_constraints, 0};
  static const char *const values[] = {
      "critical,CA:TRUE,pathlen:0", "critical,keyCertSign,cRLSign", "hash",
      /* one value, split for the line (parenthesised: clang's
       * -Wstring-concatenation takes it for a missing comma otherwise) */
      ("critical,permitted;DNS:localhost,permitted;IP:127.0.0.0/255.0.0.0,"
       "permitted;IP:::1/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")};
  char cn[128], host[64] = "";
  gethostname(host, sizeof host - 1);
  snprintf(cn, sizeof cn, "agent-sandbox engine CA (%s)", host);
  return make_cert(key, cn, NULL, NULL, 3650, nids, values);
}

static X509 *make_leaf(tlsca *ca, const char *name, const char *san) {
  static const int nids[] = {NID_basic_constraints,
                             NID_key_usage,
                             NID_ext_key_usage,
                             NID_subject_alt_name,
                             NID_subject_key_identifier,
                             NID_authority_key_identifier,
                             0};
  const char *values[] = {
      "critical,CA:FALSE", "critical,digitalSignature", "serverAuth", san, "hash", "keyid:always"};
  return make_cert(ca->leaf_key, name, ca->ca, ca->ca_key, 30, nids, values);
}

/* ---- the files --------------------------------------------------------- */

/* Writes via a temporary file and a rename: a reader sees the old file or
 * the whole new one. */
static int write_pem(const char *path, mode_t mode, EVP_PKEY *key, X509 *cert) {
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return -errno;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    unlink(tmp);
    return -ENOMEM;
  }
  int ok =
      key ? PEM_write_PKCS8PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) : PEM_write_X509(f, cert);
  ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
  if (fclose(f) != 0) ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return -EIO;
  }
  return 0;
}

static FILE *open_read(const char *path) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "r");
  if (!f) close(fd);
  return f;
}

static int load(tlsca *ca, const char *keypath) {
  FILE *f = open_read(ca->path);
  if (!f) return -errno;
  ca->ca = PEM_read_X509(f, NULL, NULL, NULL);
  fclose(f);
  if (!(f = open_read(keypath))) return -errno;
  ca->ca_key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
  fclose(f);
  if (!ca->ca || !ca->ca_key || X509_check_private_key(ca->ca, ca->ca_key) != 1) return -EINVAL;
  return 0;
}

/* ---- SNI --------------------------------------------------------------- */

static X509 *cert_for(tlsca *ca, const char *sni) {
  char name[NAME_MAX_LEN + 1];
  size_t n = strlen(sni);
  for (size_t i = 0; i <= n; i++)
    name[i] = (char)(sni[i] >= 'A' && sni[i] <= 'Z' ? sni[i] - 'A' + 'a' : sni[i]);
  pthread_mutex_lock(&ca->mu);
  X509 *c = NULL;
  for (size_t i = 0; i < ca->ncache && !c; i++)
    if (strcmp(ca->cache[i].name, name) == 0) c = ca->cache[i].cert;
  if (c) X509_up_ref(c);
  pthread_mutex_unlock(&ca->mu);
  if (c) return c;
  char san[NAME_MAX_LEN + 8];
  snprintf(san, sizeof san, "DNS:%s", name);
  c = make_leaf(ca, name, san);
  if (!c) return NULL;
  pthread_mutex_lock(&ca->mu);
  if (ca->ncache == CACHE_MAX) { /* bounded: any name under .localhost is valid */
    for (size_t i = 0; i < ca->ncache; i++) X509_free(ca->cache[i].cert);
    ca->ncache = 0;
  }
  if (!ca->cache) ca->cache = calloc(CACHE_MAX, sizeof *ca->cache);
  if (ca->cache) {
    snprintf(ca->cache[ca->ncache].name, sizeof ca->cache[0].name, "%s", name);
    ca->cache[ca->ncache++].cert = c;
    X509_up_ref(c);
  }
  pthread_mutex_unlock(&ca->mu);
  return c;
}

static int on_sni(SSL *ssl, int *alert, void *arg) {
  tlsca *ca = arg;
  const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (!sni) return SSL_TLSEXT_ERR_OK; /* the default certificate */
  if (!tlsca_name_ok(sni)) {
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  X509 *c = cert_for(ca, sni);
  int ok = c && SSL_use_certificate(ssl, c) == 1 && SSL_use_PrivateKey(ssl, ca->leaf_key) == 1;
  X509_free(c);
  if (!ok) {
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  return SSL_TLSEXT_ERR_OK;
}

/* libmicrohttpd speaks HTTP/1.1 only: say so to clients that offer h2. */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned inlen, void *arg) {
  (void)ssl;
  (void)arg;
  static const unsigned char h11[] = "\x08http/1.1";
  unsigned char *sel = NULL;
  if (SSL_select_next_proto(&sel, outlen, h11, sizeof h11 - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = sel;
  return SSL_TLSEXT_ERR_OK;
}

/* ---- open / free ------------------------------------------------------- */

tlsca *tlsca_open(const char *state_dir, char *err, size_t n) {
  tlsca *ca = calloc(1, sizeof *ca);
  if (!ca) {
    snprintf(err, n, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&ca->mu, NULL);
  char dir[4200], keypath[4200];
  snprintf(dir, sizeof dir, "%s/tls", state_dir);
  snprintf(keypath, sizeof keypath, "%s/tls/ca.key", state_dir);
  if (tlsca_cert_path(state_dir, ca->path, sizeof ca->path) != 0) {
    snprintf(err, n, "state dir path too long");
    goto fail;
  }
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    snprintf(err, n, "mkdir %s: %s", dir, strerror(errno));
    goto fail;
  }
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, n, "%s is not a directory", dir);
    goto fail;
  }
  chmod(dir, 0700);
  int rc = load(ca, keypath);
  if (rc == -ENOENT) { /* first start */
    X509_free(ca->ca);
    EVP_PKEY_free(ca->ca_key);
    ca->ca = NULL;
    ca->ca_key = EVP_EC_gen("P-256");
    if (ca->ca_key) ca->ca = make_ca(ca->ca_key);
    if (!ca->ca) {
      snprintf(err, n, "cannot make the engine's CA");
      goto fail;
    }
    /* the key first: a certificate without its key would be useless */
    if ((rc = write_pem(keypath, 0600, ca->ca_key, NULL)) != 0 ||
        (rc = write_pem(ca->path, 0644, NULL, ca->ca)) != 0) {
      snprintf(err, n, "cannot write the engine's CA under %s: %s", dir, strerror(-rc));
      goto fail;
    }
  } else if (rc != 0) {
    snprintf(err, n, "cannot load the engine's CA (%s, %s): %s", ca->path, keypath,
             rc == -EINVAL ? "not a matching certificate and key" : strerror(-rc));
    goto fail;
  }
  chmod(keypath, 0600);
  ca->leaf_key = EVP_EC_gen("P-256");
  ca->dflt = ca->leaf_key
                 ? make_leaf(ca, "localhost", "DNS:localhost,IP:127.0.0.1,IP:0:0:0:0:0:0:0:1")
                 : NULL;
  ca->ctx = ca->dflt ? SSL_CTX_new(TLS_server_method()) : NULL;
  if (!ca->ctx || !SSL_CTX_set_min_proto_version(ca->ctx, TLS1_2_VERSION) ||
      SSL_CTX_use_certificate(ca->ctx, ca->dflt) != 1 ||
      SSL_CTX_use_PrivateKey(ca->ctx, ca->leaf_key) != 1) {
    snprintf(err, n, "cannot set up TLS");
    goto fail;
  }
  SSL_CTX_set_mode(ca->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_session_id_context(ca->ctx, (const unsigned char *)"asb", 3);
  SSL_CTX_set_tlsext_servername_callback(ca->ctx, on_sni);
  SSL_CTX_set_tlsext_servername_arg(ca->ctx, ca);
  SSL_CTX_set_alpn_select_cb(ca->ctx, on_alpn, NULL);
  return ca;
fail:
  ERR_clear_error();
  tlsca_free(ca);
  return NULL;
}

void tlsca_free(tlsca *ca) {
  if (!ca) return;
  for (size_t i = 0; i < ca->ncache; i++) X509_free(ca->cache[i].cert);
  free(ca->cache);
  SSL_CTX_free(ca->ctx);
  X509_free(ca->dflt);
  X509_free(ca->ca);
  EVP_PKEY_free(ca->ca_key);
  EVP_PKEY_free(ca->leaf_key);
  pthread_mutex_destroy(&ca->mu);
  free(ca);
}

const char *tlsca_path(const tlsca *ca) {
  return ca->path;
}

SSL_CTX *tlsca_ctx(tlsca *ca) {
  return ca->ctx;
}
