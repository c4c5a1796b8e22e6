/* E2B's Template builder, the pure part (builder.c): the trigger body of
 * POST /v2/templates/{id}/builds/{build} turned into a template.yaml for
 * our one build engine (build.c), and the file archives the SDK uploads
 * checked and unpacked. No I/O; api_builder.c serves the HTTP side.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_BUILDER_H
#define ASB_ENGINE_BUILDER_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "util/buf.h"

/* An uploaded archive at most (gzip'd or not) and unpacked at most. */
#define BUILDER_UPLOAD_MAX (128u << 20)
#define BUILDER_UNPACKED_MAX (256u << 20)
/* Where the build sandbox finds the files of the step with hash h:
 * BUILDER_FILES_DIR "/<h>/" inside the build context. */
#define BUILDER_FILES_DIR "files"

/* The translation of one trigger body. */
typedef struct builder_plan {
  char *yaml;    /* the template.yaml text (YAML flow style) */
  char **hashes; /* the COPY steps' filesHash values, distinct */
  size_t nhashes;
  int force; /* "force" on the body or a step */
  /* E2B's step index (1-based; 0 = the base) of each template.yaml step */
  int *step_of;
  /* what each template.yaml step was in E2B's terms, for its errors:
   * "RUN apt-get install foo", "COPY app /opt/app", ... (at most ~160
   * characters) */
  char **step_label;
  size_t nsteps;
} builder_plan;
void builder_plan_free(builder_plan *p);

/* body: TemplateBuildStartV2. name: the template's name; cpu, memory_mb:
 * from POST /v3/templates. 0 with *p filled, or -1 with a message for a
 * 400 in err (unknown step type, bad arguments, fromImage with a registry
 * name, ...). */
int builder_translate(const cJSON *body, const char *name, int cpu, int memory_mb, builder_plan *p,
                      char *err, size_t errlen);

/* 1 if s is a filesHash we accept: 64 lowercase hex digits. */
int builder_hash_ok(const char *s);

/* An uploaded archive (a tar, gzip'd or not) checked entry by entry and
 * written to out as a plain tar with the names prefixed by prefix (""
 * for none), without the end marker: files, dirs and symlinks only,
 * relative names without "..". 0, or -1 with why in err. */
int builder_archive_repack(const void *data, size_t len, const char *prefix, asbi_buf *out,
                           char *err, size_t errlen);

#endif
