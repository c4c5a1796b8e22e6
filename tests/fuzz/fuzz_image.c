/* Fuzz the JSON readers of local container images (core/engine/imgjson.c):
 * the first byte picks the document (index.json, a manifest, an image
 * config, a docker save manifest.json), the rest is it. Invariants: each
 * is read or refused with a message; what is read has well-formed
 * digests (sha256, 64 lowercase hex, the hex part matching), sizes that
 * are not negative, at most IMGJ_MAX_LAYERS layers, Env entries that are
 * NAME=value, an absolute or empty WorkingDir.
 * SPDX-License-Identifier: Apache-2.0 */
#include "engine/imgjson.h"
#include "fuzz.h"

static void check_desc(const imgj_desc *d) {
  FUZZ_CHECK(imgj_digest_ok(d->digest, NULL));
  FUZZ_CHECK(strlen(d->hex) == 64 && !strcmp(d->digest + 7, d->hex));
  FUZZ_CHECK(d->size >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *buf = (const char *)data + 1;
  size_t len = size - 1;
  char err[1024] = "";
  int rc;
  switch (data[0] % 4) {
    case 0: {
      imgj_desc m;
      rc = imgj_index(buf, len, (data[0] & 4) ? "v1" : NULL, &m, err, sizeof err);
      if (!rc) check_desc(&m);
      break;
    }
    case 1: {
      imgj_desc c, *l = NULL;
      size_t n = 0;
      rc = imgj_manifest(buf, len, &c, &l, &n, err, sizeof err);
      if (!rc) {
        check_desc(&c);
        FUZZ_CHECK(n <= IMGJ_MAX_LAYERS);
        for (size_t i = 0; i < n; i++) check_desc(&l[i]);
      } else {
        FUZZ_CHECK(l == NULL && n == 0);
      }
      free(l);
      break;
    }
    case 2: {
      imgj_config c;
      rc = imgj_parse_config(buf, len, &c, err, sizeof err);
      if (!rc) {
        FUZZ_CHECK(c.n_diff_ids <= IMGJ_MAX_LAYERS);
        for (size_t i = 0; i < c.n_env; i++) FUZZ_CHECK(strchr(c.env[i], '=') != NULL);
        FUZZ_CHECK(c.workdir && (!c.workdir[0] || c.workdir[0] == '/'));
        FUZZ_CHECK(c.user != NULL);
      }
      imgj_config_free(&c);
      break;
    }
    default: {
      char *cfg = NULL, **layers = NULL;
      size_t n = 0;
      rc = imgj_docker_manifest(buf, len, (data[0] & 4) ? "a:1" : NULL, &cfg, &layers, &n, err,
                                sizeof err);
      if (!rc) {
        FUZZ_CHECK(cfg && *cfg && n <= IMGJ_MAX_LAYERS);
        for (size_t i = 0; i < n; i++) FUZZ_CHECK(layers[i] != NULL);
      } else {
        FUZZ_CHECK(!cfg && !layers && !n);
      }
      free(cfg);
      imgj_strv_free(layers, n);
      break;
    }
  }
  if (rc) FUZZ_CHECK(err[0] != '\0');
  return 0;
}
