/* Templates built from template.yaml (build.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_BUILD_H
#define ASB_ENGINE_BUILD_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "eng_err.h"
#include "engine.h"
#include "templates.h"

/* What a build did, for the reply (free with build_report_free). */
typedef struct build_report {
  char *log;  /* the build log (malloc'd; NULL when it never started) */
  int cached; /* a build of the same inputs existed: nothing ran */
  /* ENG_EINVAL about a file of the archive (file "" when not): */
  char file[16];    /* "template.yaml" or "template.yml" */
  int line, column; /* 0 = not about a line */
  char field[64];   /* e.g. "steps[2].copy.src", or "" */
  /* ENG_EFAILED: the failed step */
  int step;      /* 1-based */
  int step_line; /* its line in template.yaml, 0 = unknown */
  char *output;  /* its whole output (malloc'd) */
  char *why;     /* what went wrong ("failed with exit code 3"; malloc'd) */
} build_report;
void build_report_free(build_report *rep);

/* Called with the base's name before the base is looked up, so that the
 * caller can make it exist first (bundled templates are built on first
 * use: bundled_ensure). 0, or -1 with why in err. */
typedef int (*build_base_fn)(engine *e, const char *name, eng_err *err);

/* Builds the template whose directory the tar archive holds (template.yaml
 * at its top level) on its base, or finds the build of the same inputs
 * (unless force). One build at a time. 0 with *out the template
 * (referenced: release with templates_put) and rep filled; or -1 with
 * err (ENG_EINVAL: the archive or template.yaml, where in rep; ENG_EFAILED:
 * a step failed, which in rep; ENG_EINTERNAL). rep is filled either way. */
int build_run(engine *e, const void *tar, size_t tar_len, int force, build_base_fn base_fn,
              template_info **out, build_report *rep, eng_err *err);
/* build_run, and a template of a new name gets the id new_id (ENGINE_ID_LEN
 * characters; NULL: a random one): E2B's builder API hands out the id
 * before the build. */
int build_run_as(engine *e, const void *tar, size_t tar_len, int force, build_base_fn base_fn,
                 const char *new_id, template_info **out, build_report *rep, eng_err *err);
/* The engine is stopping: the build under way has its running step (or
 * whatever it runs in its build sandbox) killed within about a second and
 * fails with BUILD_STOPPING_WHY (ENG_EFAILED for a step), builds waiting
 * for their turn fail without starting, and so does every later one. */
void build_stop_all(engine *e);
#define BUILD_STOPPING_WHY "interrupted: the engine is stopping"
/* How long the engine's stop waits for interrupted builds' POSTs to be
 * answered (a client that does not read its reply is not waited for). */
#define BUILD_STOP_DRAIN_MS 20000
/* Writes j to path atomically (a temporary file renamed over it). 0 or a
 * negative errno. */
int build_write_json(const char *path, cJSON *j);
/* t's layer paths as template.json stores them (relative to the
 * templates dir when inside it). */
cJSON *build_rel_layers(engine *e, const asbe_template *t);
/* Remove build dirs that no template and no live sandbox uses. */
void build_gc(engine *e);
/* Remove state dirs of build sandboxes left by a crash (start-up). */
void build_cleanup(engine *e);

#endif
