/* The JSON documents of a local container image (image.c): an OCI image
 * layout's index.json, an image manifest, an image config, and the
 * manifest.json of a `docker save` tarball. Pure parsers over untrusted
 * bytes (cJSON), no I/O: tests/fuzz/fuzz_image.c drives them.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_IMGJSON_H
#define ASB_ENGINE_IMGJSON_H

#include <stddef.h>
#include <stdint.h>

#define IMGJ_MAX_LAYERS 256
#define IMGJ_MAX_ENV 1024

/* A content descriptor: "sha256:" + 64 lowercase hex digits (the only
 * algorithm accepted), its media type and size in bytes. */
typedef struct imgj_desc {
  char digest[72];
  char hex[65]; /* the digest's hex part: the blob's file name */
  char media_type[128];
  int64_t size;
} imgj_desc;

/* The image config's fields a template takes. */
typedef struct imgj_config {
  char **env; /* "NAME=value", names [A-Za-z_][A-Za-z0-9_]* */
  size_t n_env;
  char *workdir; /* "" when unset */
  char *user;    /* "" when unset */
  char **entrypoint, **cmd;
  size_t n_entrypoint, n_cmd;
  char diff_ids[IMGJ_MAX_LAYERS][65]; /* rootfs.diff_ids, hex */
  size_t n_diff_ids;
} imgj_config;
void imgj_config_free(imgj_config *c);

/* 1 if s is "sha256:<64 lowercase hex>" (hex out gets the digits). */
int imgj_digest_ok(const char *s, char hex_out[65]);

/* index.json of an OCI layout: the manifest whose annotation
 * org.opencontainers.image.ref.name is ref (ref NULL or "": the only
 * manifest; more than one is an error that lists them). 0, or -1 with
 * err. */
int imgj_index(const char *buf, size_t len, const char *ref, imgj_desc *manifest, char *err,
               size_t errlen);
/* An image manifest (OCI or Docker schema 2): its config and layers
 * (*layers malloc'd, at most IMGJ_MAX_LAYERS). 0, or -1 with err. */
int imgj_manifest(const char *buf, size_t len, imgj_desc *config, imgj_desc **layers,
                  size_t *n_layers, char *err, size_t errlen);
/* An image config (linux, this machine's architecture or none given).
 * 0, or -1 with err; *c is zeroed first and filled either way (free it). */
int imgj_parse_config(const char *buf, size_t len, imgj_config *c, char *err, size_t errlen);
/* manifest.json of a `docker save` tarball: the entry whose RepoTags has
 * ref (NULL/"": the only entry): its Config and Layers member names
 * (malloc'd strings; free with imgj_strv_free). 0, or -1 with err. */
int imgj_docker_manifest(const char *buf, size_t len, const char *ref, char **config,
                         char ***layers, size_t *n_layers, char *err, size_t errlen);
void imgj_strv_free(char **v, size_t n);

#endif
