/* The JSON of a local container image (imgjson.h). Hand-written over
 * cJSON because no Debian C library reads OCI image layouts: umoci and
 * skopeo are Go programs, not libraries, and would add a second
 * unpacker whose path handling we could not hold to openat2
 * RESOLVE_IN_ROOT. Only what a template needs is read; every size is
 * bounded and every digest checked for shape here (and against the bytes
 * in image.c).
 * SPDX-License-Identifier: Apache-2.0 */
#include "imgjson.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pjson.h"
#include "util/util.h"

#define REF_ANNOTATION "org.opencontainers.image.ref.name"

#if defined(__x86_64__)
#define ARCH "amd64"
#elif defined(__aarch64__)
#define ARCH "arm64"
#else
#define ARCH ""
#endif

int imgj_digest_ok(const char *s, char hex_out[65]) {
  if (!s || strncmp(s, "sha256:", 7) != 0) return 0;
  const char *h = s + 7;
  size_t n = 0;
  for (; h[n]; n++)
    if (!((h[n] >= '0' && h[n] <= '9') || (h[n] >= 'a' && h[n] <= 'f')) || n >= 64) return 0;
  if (n != 64) return 0;
  if (hex_out) memcpy(hex_out, h, 65);
  return 1;
}

static const char *str_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int desc_of(const cJSON *d, const char *what, imgj_desc *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!cJSON_IsObject(d)) return asbi_errf(err, errlen, "%s: expected a descriptor object", what);
  const char *dg = str_of(d, "digest"), *mt = str_of(d, "mediaType");
  const cJSON *sz = cJSON_GetObjectItemCaseSensitive(d, "size");
  if (!imgj_digest_ok(dg, out->hex))
    return asbi_errf(err, errlen, "%s: digest '%.80s' is not sha256:<64 lowercase hex>", what,
                     dg ? dg : "");
  snprintf(out->digest, sizeof out->digest, "%s", dg);
  if (!cJSON_IsNumber(sz) || sz->valuedouble < 0 || sz->valuedouble > 1099511627776.0 ||
      sz->valuedouble != (double)(int64_t)sz->valuedouble)
    return asbi_errf(err, errlen, "%s: size must be a whole number of bytes (at most 1 TiB)", what);
  out->size = (int64_t)sz->valuedouble;
  if (mt && strlen(mt) >= sizeof out->media_type)
    return asbi_errf(err, errlen, "%s: mediaType too long", what);
  snprintf(out->media_type, sizeof out->media_type, "%s", mt ? mt : "");
  return 0;
}

static cJSON *parse(const char *buf, size_t len, const char *what, char *err, size_t errlen) {
  cJSON *j = buf ? asbi_pj_parse(buf, len, NULL) : NULL;
  if (!j) asbi_errf(err, errlen, "%s is not valid JSON", what);
  return j;
}

int imgj_index(const char *buf, size_t len, const char *ref, imgj_desc *manifest, char *err,
               size_t errlen) {
  cJSON *j = parse(buf, len, "index.json", err, errlen);
  if (!j) return -1;
  int rc = -1;
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(j, "manifests");
  if (!cJSON_IsObject(j) || !cJSON_IsArray(ms)) {
    asbi_errf(err, errlen, "index.json: no manifests list");
    goto out;
  }
  const cJSON *pick = NULL, *m;
  int n = 0;
  char names[512] = "";
  cJSON_ArrayForEach(m, ms) {
    const char *name = str_of(cJSON_GetObjectItemCaseSensitive(m, "annotations"), REF_ANNOTATION);
    n++;
    if (name && strlen(names) + strlen(name) + 3 < sizeof names) {
      if (names[0]) strcat(names, ", ");
      strcat(names, name);
    }
    if (ref && *ref && name && !strcmp(name, ref)) pick = m;
  }
  if (ref && *ref && !pick) {
    asbi_errf(err, errlen, "index.json: no manifest named '%.128s' (it has: %s)", ref,
              names[0] ? names : "no named manifests");
    goto out;
  }
  if (!pick && n != 1) {
    asbi_errf(err, errlen,
              n ? "index.json has %d manifests (%s): name one as oci:<dir>:<name>"
                : "index.json has %d manifests%s",
              n, names[0] ? names : "");
    goto out;
  }
  if (!pick) pick = cJSON_GetArrayItem(ms, 0);
  if (desc_of(pick, "index.json manifest", manifest, err, errlen)) goto out;
  if (strstr(manifest->media_type, "index") || strstr(manifest->media_type, "manifest.list")) {
    asbi_errf(err, errlen,
              "index.json: the manifest is itself an index (%s): multi-platform images are not "
              "supported; export one platform (skopeo copy --override-arch ...)",
              manifest->media_type);
    goto out;
  }
  rc = 0;
out:
  cJSON_Delete(j);
  return rc;
}

int imgj_manifest(const char *buf, size_t len, imgj_desc *config, imgj_desc **layers,
                  size_t *n_layers, char *err, size_t errlen) {
  *layers = NULL;
  *n_layers = 0;
  cJSON *j = parse(buf, len, "the image manifest", err, errlen);
  if (!j) return -1;
  int rc = -1;
  const char *mt = str_of(j, "mediaType");
  if (mt && (strstr(mt, "index") || strstr(mt, "manifest.list"))) {
    asbi_errf(err, errlen, "the manifest is an index (%s): multi-platform images are not supported",
              mt);
    goto out;
  }
  if (desc_of(cJSON_GetObjectItemCaseSensitive(j, "config"), "manifest config", config, err,
              errlen))
    goto out;
  const cJSON *ls = cJSON_GetObjectItemCaseSensitive(j, "layers");
  if (!cJSON_IsArray(ls)) {
    asbi_errf(err, errlen, "the manifest has no layers list");
    goto out;
  }
  int n = cJSON_GetArraySize(ls);
  if (n > IMGJ_MAX_LAYERS) {
    asbi_errf(err, errlen, "the manifest has %d layers (at most %d)", n, IMGJ_MAX_LAYERS);
    goto out;
  }
  *layers = calloc(n ? (size_t)n : 1, sizeof **layers);
  if (!*layers) {
    asbi_errf(err, errlen, "out of memory");
    goto out;
  }
  const cJSON *l;
  cJSON_ArrayForEach(l, ls) {
    char what[32];
    snprintf(what, sizeof what, "layers[%zu]", *n_layers);
    imgj_desc *d = &(*layers)[*n_layers];
    if (desc_of(l, what, d, err, errlen)) goto out;
    if (d->media_type[0] && !strstr(d->media_type, "tar")) {
      asbi_errf(err, errlen, "%s: media type %s is not a tar layer", what, d->media_type);
      goto out;
    }
    ++*n_layers;
  }
  rc = 0;
out:
  if (rc) {
    free(*layers);
    *layers = NULL;
    *n_layers = 0;
  }
  cJSON_Delete(j);
  return rc;
}

void imgj_strv_free(char **v, size_t n) {
  for (size_t i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

/* A list of strings (or null/absent: none), at most max. */
static int strv_of(const cJSON *a, const char *what, size_t max, char ***out, size_t *n, char *err,
                   size_t errlen) {
  *out = NULL;
  *n = 0;
  if (!a || cJSON_IsNull(a)) return 0;
  if (!cJSON_IsArray(a)) return asbi_errf(err, errlen, "%s: expected a list of strings", what);
  size_t k = (size_t)cJSON_GetArraySize(a);
  if (k > max) return asbi_errf(err, errlen, "%s: more than %zu entries", what, max);
  *out = calloc(k ? k : 1, sizeof **out);
  if (!*out) return asbi_errf(err, errlen, "out of memory");
  const cJSON *it;
  cJSON_ArrayForEach(it, a) {
    if (!cJSON_IsString(it) || !((*out)[*n] = asbi_strdup(it->valuestring)))
      return asbi_errf(err, errlen, "%s: expected a list of strings", what);
    ++*n;
  }
  return 0;
}

static int env_name_ok(const char *s, size_t n) {
  if (!n || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
    return 0;
  for (size_t i = 1; i < n; i++)
    if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
          (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
      return 0;
  return 1;
}

void imgj_config_free(imgj_config *c) {
  if (!c) return;
  imgj_strv_free(c->env, c->n_env);
  imgj_strv_free(c->entrypoint, c->n_entrypoint);
  imgj_strv_free(c->cmd, c->n_cmd);
  free(c->workdir);
  free(c->user);
  memset(c, 0, sizeof *c);
}

int imgj_parse_config(const char *buf, size_t len, imgj_config *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  cJSON *j = parse(buf, len, "the image config", err, errlen);
  if (!j) return -1;
  int rc = -1;
  if (!cJSON_IsObject(j)) {
    asbi_errf(err, errlen, "the image config is not an object");
    goto out;
  }
  const char *os = str_of(j, "os"), *arch = str_of(j, "architecture");
  if (os && strcmp(os, "linux")) {
    asbi_errf(err, errlen, "the image is for os '%.32s', not linux", os);
    goto out;
  }
  if (arch && *ARCH && strcmp(arch, ARCH)) {
    asbi_errf(err, errlen, "the image is for architecture '%.32s', this machine is %s", arch, ARCH);
    goto out;
  }
  const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(j, "config");
  if (cfg && !cJSON_IsNull(cfg) && !cJSON_IsObject(cfg)) {
    asbi_errf(err, errlen, "the image config's config is not an object");
    goto out;
  }
  if (strv_of(cJSON_GetObjectItemCaseSensitive(cfg, "Env"), "config.Env", IMGJ_MAX_ENV, &c->env,
              &c->n_env, err, errlen) ||
      strv_of(cJSON_GetObjectItemCaseSensitive(cfg, "Entrypoint"), "config.Entrypoint", 4096,
              &c->entrypoint, &c->n_entrypoint, err, errlen) ||
      strv_of(cJSON_GetObjectItemCaseSensitive(cfg, "Cmd"), "config.Cmd", 4096, &c->cmd, &c->n_cmd,
              err, errlen))
    goto out;
  for (size_t i = 0; i < c->n_env; i++) {
    const char *eq = strchr(c->env[i], '=');
    if (!eq || !env_name_ok(c->env[i], (size_t)(eq - c->env[i]))) {
      asbi_errf(err, errlen, "config.Env[%zu]: '%.64s' is not NAME=value", i, c->env[i]);
      goto out;
    }
  }
  const char *wd = str_of(cfg, "WorkingDir"), *user = str_of(cfg, "User");
  if (wd && *wd && wd[0] != '/') {
    asbi_errf(err, errlen, "config.WorkingDir '%.64s' is not absolute", wd);
    goto out;
  }
  c->workdir = asbi_strdup(wd ? wd : "");
  c->user = asbi_strdup(user ? user : "");
  if (!c->workdir || !c->user) {
    asbi_errf(err, errlen, "out of memory");
    goto out;
  }
  const cJSON *rootfs = cJSON_GetObjectItemCaseSensitive(j, "rootfs");
  const cJSON *ids = cJSON_GetObjectItemCaseSensitive(rootfs, "diff_ids");
  if (!cJSON_IsArray(ids)) {
    asbi_errf(err, errlen, "the image config has no rootfs.diff_ids");
    goto out;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, ids) {
    if (c->n_diff_ids >= IMGJ_MAX_LAYERS) {
      asbi_errf(err, errlen, "rootfs.diff_ids: more than %d layers", IMGJ_MAX_LAYERS);
      goto out;
    }
    if (!cJSON_IsString(it) || !imgj_digest_ok(it->valuestring, c->diff_ids[c->n_diff_ids])) {
      asbi_errf(err, errlen, "rootfs.diff_ids[%zu] is not sha256:<64 lowercase hex>",
                c->n_diff_ids);
      goto out;
    }
    c->n_diff_ids++;
  }
  rc = 0;
out:
  cJSON_Delete(j);
  return rc;
}

int imgj_docker_manifest(const char *buf, size_t len, const char *ref, char **config,
                         char ***layers, size_t *n_layers, char *err, size_t errlen) {
  *config = NULL;
  *layers = NULL;
  *n_layers = 0;
  cJSON *j = parse(buf, len, "manifest.json", err, errlen);
  if (!j) return -1;
  int rc = -1;
  if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) < 1) {
    asbi_errf(err, errlen, "manifest.json: expected a non-empty list of images");
    goto out;
  }
  const cJSON *pick = NULL, *m;
  int n = cJSON_GetArraySize(j);
  cJSON_ArrayForEach(m, j) {
    const cJSON *tag;
    cJSON_ArrayForEach(tag, cJSON_GetObjectItemCaseSensitive(m, "RepoTags")) {
      if (ref && *ref && cJSON_IsString(tag) && !strcmp(tag->valuestring, ref)) pick = m;
    }
  }
  if (ref && *ref && !pick) {
    asbi_errf(err, errlen, "manifest.json: no image tagged '%.128s'", ref);
    goto out;
  }
  if (!pick && n != 1) {
    asbi_errf(err, errlen,
              "manifest.json has %d images: name one as docker-archive:<file>:<repo:tag>", n);
    goto out;
  }
  if (!pick) pick = cJSON_GetArrayItem(j, 0);
  const char *cf = str_of(pick, "Config");
  if (!cf || !*cf) {
    asbi_errf(err, errlen, "manifest.json: the image has no Config");
    goto out;
  }
  if (strv_of(cJSON_GetObjectItemCaseSensitive(pick, "Layers"), "manifest.json Layers",
              IMGJ_MAX_LAYERS, layers, n_layers, err, errlen))
    goto out;
  if (!(*config = asbi_strdup(cf))) {
    asbi_errf(err, errlen, "out of memory");
    goto out;
  }
  rc = 0;
out:
  if (rc) {
    imgj_strv_free(*layers, *n_layers);
    *layers = NULL;
    *n_layers = 0;
  }
  cJSON_Delete(j);
  return rc;
}
