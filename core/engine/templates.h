/* The template registry (templates.c): built-in templates and the ones
 * built from template.yaml, reference-counted.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_TEMPLATES_H
#define ASB_ENGINE_TEMPLATES_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "eng_err.h"
#include "engine.h"

struct template_info {
  char *id;              /* template id ("base", or a built template's id) */
  int start_codei;       /* start the code interpreter at create (code-interpreter-v1) */
  int builtin;           /* base, busybox, code-interpreter-v1 */
  int refs;              /* under tmpl_mu; the registry holds one */
  char *build_id, *hash; /* built templates: this build, its inputs' hash */
  char *base;            /* built templates: the template it was built on */
  cJSON *spec;           /* built templates: the normalised template.yaml */
  int64_t build_ms;      /* how long the build took */
  char *alias;           /* name */
  /* Snapshots (snapshots.c): the sandbox it was taken of (NULL: not a
   * snapshot); hidden: a fork's, not listed (removed once unused). */
  char *snap_source;
  int hidden;
  char *dir; /* prepared template dir */
  asbe_template *tmpl;
  int cpu_count, memory_mb, disk_mb;
  char *envd_version;
  int64_t created_ms;
  uint64_t spawn_count;
  int64_t last_spawned_ms;
  /* Its warm pool (under tmpl_mu): sandboxes made ahead of time, oldest
   * first; closed once drained (deleted, replaced by a rebuild, engine
   * stopping): nothing goes in any more. Claims and misses (creates that
   * found it empty) since start; the last failed prepare (refill backs off). */
  struct sbx *pool, **pool_tail;
  unsigned pool_ready;
  int pool_closed;
  uint64_t pool_claims, pool_misses;
  int64_t pool_fail_ms;
  template_info *next;
};
int templates_init(engine *e);
void templates_free(engine *e);
/* By id or alias, referenced (release with templates_put); NULL if unknown. */
template_info *templates_find(engine *e, const char *name);
void templates_put(engine *e, template_info *t);
/* Every template, each referenced; release with templates_put_all. With
 * retired, also those replaced or deleted that are still in use. */
template_info **templates_snapshot(engine *e, size_t *n);
template_info **templates_snapshot_all(engine *e, size_t *n);
void templates_put_all(engine *e, template_info **v, size_t n);
/* Load the built template recorded in <state>/templates/<id>/template.json
 * (not registered). 0 or a negative errno. */
int templates_load(engine *e, const char *id, template_info **out);
/* Register t (taking the caller's reference), replacing a template of the
 * same id. */
void templates_install(engine *e, template_info *t);
/* Unregister t unless someone besides the caller and the registry holds
 * it (a create in progress): 0 or -EBUSY. Its files stay. */
int templates_uninstall(engine *e, template_info *t);
/* The layer dirs of t as a JSON array (for sandbox records). */
cJSON *templates_layers_json(const template_info *t);
/* One more reference to t (a template the caller holds already). */
void templates_hold(engine *e, template_info *t);
/* A fresh record (refs 1, not registered; defaults: 2 CPUs, 512 MiB, 1 GiB,
 * created now), or NULL without memory. Release with templates_put. */
template_info *templates_info_new(const char *id, const char *alias, const char *dir);
/* Deletes the built template id (name or id) and its files, unless it is
 * built in (ENG_EINVAL), in use by sandboxes or a create, or the base of
 * another template (ENG_ECONFLICT). 0, or -1 with err. */
int templates_delete(engine *e, const char *id, eng_err *err);

/* ---- warm pools (pool.c fills them, sandboxes_create claims from them) ---- */
/* Puts s, made ahead of time, into t's pool: 0, or -1 when the pool is
 * closed or the engine stopping (the caller kills s). Wakes nobody. */
int templates_pool_put(engine *e, template_info *t, struct sbx *s);
/* The oldest sandbox of t's pool, taken out (the caller owns it), or NULL
 * when it is empty or the create does not fit a pooled sandbox (fits 0):
 * counted as a miss. Wakes the refill thread. */
struct sbx *templates_pool_take(engine *e, template_info *t, int fits);
/* Closes t's pool and kills what it holds; with wait, first waits until
 * the refill thread is no longer preparing a sandbox of t (so it holds no
 * reference to t). The number killed. */
unsigned templates_pool_drain(engine *e, template_info *t, int wait);
/* Takes the sandboxes of t's pool whose init died (an OOM kill, a crash)
 * out and kills what is left of them; the number. */
unsigned templates_pool_sweep(engine *e, template_info *t);
/* Opens a pool that templates_pool_drain closed (a delete that failed). */
void templates_pool_reopen(engine *e, template_info *t);
#endif
