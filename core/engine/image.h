/* Local container images as template bases (image.c): an OCI image layout
 * directory (`oci:/dir[:name]`) or a `docker save` tarball
 * (`docker-archive:/file.tar[:repo:tag]`) on the engine's host, unpacked
 * layer by layer (whiteouts applied) into one read-only root layer under
 * a cache dir, keyed by the image config's digest.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_IMAGE_H
#define ASB_ENGINE_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "imgjson.h"

#define IMAGE_DEFAULT_MAX_BYTES (16ull << 30) /* unpacked file bytes per image */
#define IMAGE_DEFAULT_MAX_ENTRIES 2000000ull  /* tar entries per image */

typedef struct image_limits {
  uint64_t max_bytes, max_entries; /* 0: the defaults above */
  /* the directories an image may be read from (absolute, real paths,
   * NULL-ended): the image's path must be one of them or beneath one, and
   * is opened from that dir's fd with RESOLVE_BENEATH, so neither `..` nor
   * a symlink leads out. NULL: any path (tests and tools; the engine
   * always passes its --image-dir list) */
  const char *const *dirs;
} image_limits;

typedef struct image_result {
  char id[65];       /* the config's sha256 (hex): the cache key */
  char rootfs[4200]; /* <cache>/<id>/rootfs: the layer */
  int cached;        /* found unpacked already */
  unsigned skipped_devices;
  imgj_config cfg; /* Env, WorkingDir, User, Entrypoint, Cmd */
} image_result;
void image_result_free(image_result *r);

/* 1 if s names a local image (starts with "oci:" or "docker-archive:"). */
int image_ref_is_local(const char *s);
/* 1 if s can only be a container registry reference (has '/', '@' or a
 * "docker://"-like transport) and is not a local one. */
int image_ref_is_registry(const char *s);

/* Imports the local image ref into cache_dir (made if missing), or finds
 * it there. Every blob's sha256 (and size) is checked; layer entries are
 * created only through fds under the root (openat2 RESOLVE_IN_ROOT):
 * `..` components, device nodes (skipped, counted), set-user/group-ID bits
 * (dropped) and limits are handled as docs/templates.md says. 0, or -1
 * with err (nothing is left in cache_dir). */
int image_import(const char *ref, const char *cache_dir, const image_limits *lim, image_result *out,
                 char *err, size_t errlen);

#endif
