/* Jupyter wire messages: signing, building, parsing.
 * SPDX-License-Identifier: Apache-2.0 */
#include "jmsg.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pjson.h"
#include "util/util.h"

struct ci_hmac {
  EVP_MAC *mac;
  EVP_MAC_CTX *keyed; /* initialised with the key; duplicated per message */
};

int ci_hmac_new(ci_hmac **out, const void *key, size_t key_len) {
  ci_hmac *h = calloc(1, sizeof *h);
  if (!h) return -1;
  if (key_len) {
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    h->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    h->keyed = h->mac ? EVP_MAC_CTX_new(h->mac) : NULL;
    if (!h->keyed || !EVP_MAC_init(h->keyed, key, key_len, params)) {
      ci_hmac_free(h);
      return -1;
    }
  }
  *out = h;
  return 0;
}

void ci_hmac_free(ci_hmac *h) {
  if (!h) return;
  EVP_MAC_CTX_free(h->keyed);
  EVP_MAC_free(h->mac);
  free(h);
}

int ci_hmac_sign(ci_hmac *h, const ci_frame parts[4], char out[65]) {
  out[0] = '\0';
  if (!h->keyed) return 0;
  EVP_MAC_CTX *c = EVP_MAC_CTX_dup(h->keyed);
  if (!c) return -1;
  unsigned char md[32];
  size_t mdlen = 0;
  int ok = 1;
  for (int i = 0; i < 4 && ok; i++) ok = EVP_MAC_update(c, parts[i].data, parts[i].len);
  ok = ok && EVP_MAC_final(c, md, &mdlen, sizeof md) && mdlen == sizeof md;
  EVP_MAC_CTX_free(c);
  if (!ok) return -1;
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < sizeof md; i++) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 15];
  }
  out[64] = '\0';
  return 0;
}

/* ---- parsing ---------------------------------------------------------- */

/* Rewrite each "\u0000" escape to "\uFFFD" (same length). Escapes are
 * recognised only where a backslash starts one, so "\\u0000" (a literal
 * backslash) stays as it is. */
static void defuse_nul_escapes(char *p, size_t n) {
  for (size_t i = 0; i + 1 < n; i++) {
    if (p[i] != '\\') continue;
    if (p[i + 1] == 'u' && i + 5 < n && memcmp(p + i + 2, "0000", 4) == 0)
      memcpy(p + i + 2, "FFFD", 4);
    i++; /* skip the escaped character */
  }
}

static cJSON *parse_object(ci_frame *f) {
  defuse_nul_escapes((char *)f->data, f->len);
  cJSON *j = asbi_pj_parse(f->data, f->len, NULL);
  if (j && !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    j = NULL;
  }
  return j;
}

static const char *str_field(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

void ci_jmsg_free(ci_jmsg *m) {
  if (!m) return;
  cJSON_Delete(m->header);
  cJSON_Delete(m->parent);
  cJSON_Delete(m->metadata);
  cJSON_Delete(m->content);
  memset(m, 0, sizeof *m);
}

int ci_jmsg_parse(ci_hmac *h, ci_frame *frames, size_t n, ci_jmsg *out) {
  return ci_jmsg_parse_lazy(h, frames, n, 0, out);
}

int ci_jmsg_content(ci_jmsg *m) {
  if (m->content) return CI_JMSG_OK;
  if (!m->raw_content.data || !(m->content = parse_object(&m->raw_content))) return CI_JMSG_EJSON;
  m->raw_content.data = NULL;
  m->raw_content.len = 0;
  return CI_JMSG_OK;
}

int ci_jmsg_parse_lazy(ci_hmac *h, ci_frame *frames, size_t n, size_t lazy_over, ci_jmsg *out) {
  memset(out, 0, sizeof *out);
  size_t d = 0;
  static const size_t dl = sizeof CI_JMSG_DELIM - 1;
  while (d < n && !(frames[d].len == dl && memcmp(frames[d].data, CI_JMSG_DELIM, dl) == 0)) d++;
  if (d == n) return CI_JMSG_ENODELIM;
  if (n - d - 1 < 5) return CI_JMSG_ESHORT;
  ci_frame *sig = &frames[d + 1], *parts = &frames[d + 2];
  if (h->keyed) {
    char want[65];
    if (ci_hmac_sign(h, parts, want) != 0) return CI_JMSG_ENOMEM;
    if (sig->len != 64 || CRYPTO_memcmp(sig->data, want, 64) != 0) return CI_JMSG_ESIG;
  }
  out->nids = d;
  out->nbuffers = n - d - 6;
  int lazy = lazy_over && parts[3].len > lazy_over;
  if (lazy) {
    defuse_nul_escapes((char *)parts[3].data, parts[3].len);
    out->raw_content = parts[3];
  }
  if (!(out->header = parse_object(&parts[0])) || !(out->parent = parse_object(&parts[1])) ||
      !(out->metadata = parse_object(&parts[2])) ||
      (!lazy && !(out->content = parse_object(&parts[3])))) {
    ci_jmsg_free(out);
    return CI_JMSG_EJSON;
  }
  out->msg_type = str_field(out->header, "msg_type");
  out->msg_id = str_field(out->header, "msg_id");
  out->date = str_field(out->header, "date");
  out->parent_id = str_field(out->parent, "msg_id");
  if (!out->msg_type || !out->msg_id) {
    ci_jmsg_free(out);
    return CI_JMSG_EFIELD;
  }
  return CI_JMSG_OK;
}

/* ---- scanning object text ------------------------------------------------ */

static size_t skip_ws(const char *s, size_t n, size_t i) {
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
  return i;
}

/* s[i] is '"': the index of the closing quote, or n. */
static size_t string_end(const char *s, size_t n, size_t i) {
  for (i++; i < n; i++) {
    if (s[i] == '\\')
      i++;
    else if (s[i] == '"')
      return i;
  }
  return n;
}

/* The index just past the value at s[i], or n if it runs off the end. */
static size_t value_end(const char *s, size_t n, size_t i) {
  if (i < n && s[i] == '"') {
    size_t e = string_end(s, n, i);
    return e < n ? e + 1 : n;
  }
  int depth = 0;
  for (; i < n; i++) {
    char c = s[i];
    if (c == '"') {
      i = string_end(s, n, i);
      if (i >= n) return n;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return i;
      if (--depth == 0) return i + 1;
    } else if (c == ',' && depth == 0) {
      return i;
    }
  }
  return n;
}

int ci_json_member_body(const char *s, size_t n, const char *key, const char **body, size_t *len) {
  size_t kl = strlen(key);
  size_t i = skip_ws(s, n, 0);
  if (i >= n || s[i] != '{') return -1;
  i = skip_ws(s, n, i + 1);
  while (i < n && s[i] == '"') {
    size_t ke = string_end(s, n, i);
    if (ke >= n) return -1;
    int match = ke - i - 1 == kl && memcmp(s + i + 1, key, kl) == 0;
    i = skip_ws(s, n, ke + 1);
    if (i >= n || s[i] != ':') return -1;
    i = skip_ws(s, n, i + 1);
    size_t ve = value_end(s, n, i);
    if (ve >= n || ve <= i) return -1;
    if (match) {
      if (s[i] != '"') return -1;
      *body = s + i + 1;
      *len = ve - i - 2;
      return 0;
    }
    i = skip_ws(s, n, ve);
    if (i < n && s[i] == ',')
      i = skip_ws(s, n, i + 1);
    else
      break;
  }
  return -1;
}

const char *ci_jmsg_strerror(int rc) {
  switch (rc) {
    case CI_JMSG_OK:
      return "ok";
    case CI_JMSG_ENODELIM:
      return "no <IDS|MSG> delimiter";
    case CI_JMSG_ESHORT:
      return "fewer than five frames after the delimiter";
    case CI_JMSG_ESIG:
      return "bad signature";
    case CI_JMSG_EJSON:
      return "a message part is not a JSON object";
    case CI_JMSG_EFIELD:
      return "the header lacks msg_id or msg_type";
    case CI_JMSG_ENOMEM:
      return "out of memory";
    default:
      return "unknown error";
  }
}

/* ---- building ------------------------------------------------------- */

void ci_jout_free(ci_jout *o) {
  free(o->header);
  free(o->content);
  o->header = o->content = NULL;
}

int ci_jmsg_build(ci_hmac *h, const char *session, const char *msg_type, const char *content_json,
                  ci_jout *out) {
  memset(out, 0, sizeof *out);
  char date[40];
  asbi_rfc3339_now(date);
  if (asbi_random_hex(out->msg_id, 32) != 0) return -1;
  /* session and msg_type are ours: hex and [a-z_]. */
  int n = asprintf(&out->header,
                   "{\"msg_id\":\"%s\",\"username\":\"asb\",\"session\":\"%s\","
                   "\"date\":\"%s\",\"msg_type\":\"%s\",\"version\":\"" CI_JMSG_VERSION "\"}",
                   out->msg_id, session, date, msg_type);
  if (n < 0) {
    out->header = NULL;
    return -1;
  }
  if (!(out->content = asbi_strdup(content_json))) {
    ci_jout_free(out);
    return -1;
  }
  static const char empty[] = "{}";
  out->frames[0] = (ci_frame){CI_JMSG_DELIM, sizeof CI_JMSG_DELIM - 1};
  out->frames[2] = (ci_frame){out->header, (size_t)n};
  out->frames[3] = (ci_frame){empty, 2};
  out->frames[4] = (ci_frame){empty, 2};
  out->frames[5] = (ci_frame){out->content, strlen(out->content)};
  if (ci_hmac_sign(h, &out->frames[2], out->sig) != 0) {
    ci_jout_free(out);
    return -1;
  }
  out->frames[1] = (ci_frame){out->sig, strlen(out->sig)};
  return 0;
}
