/* Named snapshots and fork (docs/snapshots.md):
 *
 *   POST /sandboxes/{id}/snapshots {name?}  → 201 {snapshotID, names}
 *   GET  /snapshots?sandboxID=&name=&limit=&nextToken=
 *   DELETE /templates/{snapshotID}
 *   POST /sandboxes/{id}/fork {timeout, count} → 201 [{sandbox} | {error}]
 *
 * A snapshot is a template: the source sandbox's template layers, read-only
 * and shared (nothing of them is copied), under one new layer, a copy of
 * the sandbox's writable layer taken while its cgroup is frozen
 * (asbe_sandbox_export_live), so every file is of one instant. Its
 * template.json (the build's format, plus "snapshot") makes it survive
 * engine restarts and the source's kill. A sandbox started from it boots
 * fresh: envd, the template's start command, the code interpreter start
 * again; memory and processes are not kept. A fork on an engine with
 * --pause-criu keeps them: the running parent's processes are dumped by
 * criu in the freeze that copies its files, and each fork is restored
 * from those images (sandboxes_fork_restore), booted fresh if that fails.
 * SPDX-License-Identifier: Apache-2.0 */
#include "snapshots.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "build.h"
#include "host.h"
#include "lifecycle.h"
#include "net/policy.h"
#include "proto/pjson.h"
#include "sandboxes.h"
#include "util/log.h"
#include "util/util.h"

const char *snapshots_name_invalid(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0) return "the name is empty";
  if (n > 128) return "the name is longer than 128 characters";
  if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
    return "the name must start with a lowercase letter or a digit";
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
      return "the name may hold only lowercase letters, digits, '-', '_' and '.'";
  }
  return NULL;
}

/* The layers s runs on, as template.json stores them: its record's (the
 * build it was created from, even if rebuilt since), else its template's. */
static cJSON *source_layers(engine *e, sbx *s, const template_info *src) {
  if (!s->tmpl_layers) return build_rel_layers(e, src->tmpl);
  char tdir[4200];
  snprintf(tdir, sizeof tdir, "%s/templates/", e->state_dir);
  cJSON *a = cJSON_CreateArray();
  const cJSON *it;
  cJSON_ArrayForEach(it, s->tmpl_layers) {
    if (!cJSON_IsString(it)) continue;
    const char *l = it->valuestring;
    cJSON_AddItemToArray(a, cJSON_CreateString(asbi_startswith(l, tdir) ? l + strlen(tdir) : l));
  }
  return a;
}

/* The freeze of a running s: its writable layer copied into layer and,
 * with dump, its processes dumped for forks (asbe_sandbox_checkpoint_fork)
 * in the same freeze, so files and memory are of one instant; *dumped
 * then says whether that worked (dwhy why not). Under s->boot_mu and
 * s->mu. 0, or -1 with xwhy (the copy failed). */
static int freeze_copy(engine *e, sbx *s, const char *layer, int dump, int *dumped, char *dwhy,
                       size_t dwl, char *xwhy, size_t xwl) {
  *dumped = 0;
  /* the dump's needs first (as a --pause-criu pause's): off its link,
   * none of the engine's connections into it */
  int idle = 0, shut = dump ? lifecycle_unlink_for_dump(e, s, &idle) : 0;
  int xrc = -1;
  for (int again = 0;; again++) {
    if (asbe_sandbox_freeze(s->iso) != 0) {
      snprintf(xwhy, xwl, "freeze: %s", asbe_errmsg());
      break;
    }
    xrc = asbe_sandbox_export_live(s->iso, layer);
    if (xrc) snprintf(xwhy, xwl, "%s", asbe_errmsg());
    int drc = 0;
    if (xrc == 0 && dump) {
      int64_t t0 = asbi_unix_ms();
      drc = asbe_sandbox_checkpoint_fork(s->iso, e->criu_path);
      if (drc == 0) {
        *dumped = 1;
        asbi_log("sandbox %s: its processes dumped for a fork in %lld ms", s->id,
                 (long long)(asbi_unix_ms() - t0));
      } else {
        snprintf(dwhy, dwl, "%s", asbe_errmsg());
      }
    }
    if (asbe_sandbox_thaw(s->iso))
      asbi_log("sandbox %s: thaw after snapshot: %s", s->id, asbe_errmsg());
    /* the streams shut just before: their ends in the sandbox close once
     * it runs again (the freeze held them); then the whole instant again */
    if (xrc || drc == 0 || !(shut + idle) || again == 3 || !asbe_sandbox_alive(s->iso)) break;
    asbi_log("sandbox %s: fork dump (%d open streams shut): %s; trying again", s->id, shut, dwhy);
    host_rm_rf(layer);
    struct timespec ts = {0, 100000000L * (again + 1)};
    nanosleep(&ts, NULL);
  }
  if (dump && asbe_sandbox_alive(s->iso)) lifecycle_relink(e, s);
  return xrc ? -1 : 0;
}

int snapshots_take(engine *e, sbx *s, const char *name, int hidden, template_info **out,
                   eng_err *err) {
  return snapshots_take_ex(e, s, name, hidden, 0, NULL, NULL, 0, out, err);
}

int snapshots_take_ex(engine *e, sbx *s, const char *name, int hidden, int dump, int *dumped,
                      char *dwhy, size_t dwl, template_info **out, eng_err *err) {
  *out = NULL;
  eng_err_clear(err);
  int dumped_ = 0;
  char dwhy_[8];
  if (!dumped) dumped = &dumped_;
  if (!dwhy) dwhy = dwhy_, dwl = sizeof dwhy_;
  *dumped = 0;
  dwhy[0] = '\0';
  if (name && !*name) name = NULL;
  const char *why = name ? snapshots_name_invalid(name) : NULL;
  if (why) return eng_err_set(err, ENG_EINVAL, NULL, "invalid snapshot name \"%s\": %s", name, why);
  template_info *src = templates_find(e, s->template_id);
  if (!src)
    return eng_err_set(err, ENG_ECONFLICT, NULL, "the template \"%s\" of sandbox \"%s\" is gone",
                       s->template_id, s->id);
  int rc = -1;
  char tdir[4200] = "", bdir[4300] = "", layer[4400];
  int made_tdir = 0;
  pthread_mutex_lock(&e->build_mu); /* against builds, deletes and build_gc */
  template_info *existing = name ? templates_find(e, name) : NULL;
  if (existing && (!existing->snap_source || strcmp(existing->alias, name) != 0)) {
    eng_err_set(err, ENG_ECONFLICT, NULL, "\"%s\" names a template that is not a snapshot", name);
    goto out;
  }
  char id[ENGINE_ID_LEN + 1], bid[32];
  if (existing)
    snprintf(id, sizeof id, "%s", existing->id);
  else if (asbi_random_alnum(id, ENGINE_ID_LEN)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "no randomness available");
    goto out;
  }
  memcpy(bid, "snap-", 5);
  if (asbi_random_alnum(bid + 5, 16)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "no randomness available");
    goto out;
  }
  bid[21] = '\0';
  snprintf(tdir, sizeof tdir, "%s/templates/%s", e->state_dir, id);
  snprintf(bdir, sizeof bdir, "%s/builds/%s", tdir, bid);
  snprintf(layer, sizeof layer, "%s/layer", bdir);
  char builds[4300];
  snprintf(builds, sizeof builds, "%s/builds", tdir);
  if (mkdir(tdir, 0755) == 0)
    made_tdir = 1;
  else if (errno != EEXIST || !existing) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot make %s: %s", tdir, strerror(errno));
    goto out;
  }
  if ((mkdir(builds, 0755) && errno != EEXIST) || mkdir(bdir, 0755)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot make %s: %s", bdir, strerror(errno));
    goto out;
  }
  /* ---- the files, at one instant ---- */
  int64_t t0 = asbi_unix_ms();
  pthread_mutex_lock(&s->boot_mu); /* a resume without memory boots under it, not s->mu */
  pthread_mutex_lock(&s->mu);
  int state = s->state, xrc = -1;
  char xwhy[512] = "";
  if (state == SBX_RUNNING) {
    xrc = freeze_copy(e, s, layer, dump && e->criu_path, dumped, dwhy, dwl, xwhy, sizeof xwhy);
  } else if (state == SBX_PAUSED && s->iso && asbe_sandbox_alive(s->iso)) {
    xrc = asbe_sandbox_export_live(s->iso, layer); /* frozen by the pause */
    if (xrc) snprintf(xwhy, sizeof xwhy, "%s", asbe_errmsg());
  } else if (state == SBX_PAUSED && s->paused_nomem) {
    /* paused without memory: no process runs, its writable layer is on
     * disk (and s->mu keeps a resume off it meanwhile) */
    xrc = asbe_paused_export(e->iso, s->id, layer);
    if (xrc) snprintf(xwhy, sizeof xwhy, "%s", asbe_errmsg());
  }
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_unlock(&s->boot_mu);
  if (state != SBX_RUNNING && state != SBX_PAUSED) {
    eng_err_set(err, ENG_ENOTFOUND, "killed", "sandbox \"%s\" is gone", s->id);
    goto out;
  }
  if (xrc) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot snapshot sandbox \"%s\": %s", s->id, xwhy);
    if (*dumped) asbe_fork_images_drop(e->iso, s->id);
    *dumped = 0;
    goto out;
  }
  int64_t took = asbi_unix_ms() - t0;
  /* ---- record it as a template ---- */
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "alias", name ? name : id);
  cJSON_AddStringToObject(j, "base", src->id);
  cJSON_AddStringToObject(j, "buildID", bid);
  cJSON_AddStringToObject(j, "hash", "");
  cJSON *own = cJSON_AddArrayToObject(j, "layers");
  char rel[64];
  snprintf(rel, sizeof rel, "builds/%s/layer", bid);
  cJSON_AddItemToArray(own, cJSON_CreateString(rel));
  cJSON_AddItemToObject(j, "lowerLayers", source_layers(e, s, src));
  cJSON *binds = cJSON_AddArrayToObject(j, "binds");
  for (size_t i = 0; i < asbe_template_bind_count(src->tmpl); i++) {
    const char *dst = NULL;
    const char *bsrc = asbe_template_bind(src->tmpl, i, &dst);
    cJSON *pair = cJSON_CreateArray();
    cJSON_AddItemToArray(pair, cJSON_CreateString(bsrc));
    cJSON_AddItemToArray(pair, cJSON_CreateString(dst));
    cJSON_AddItemToArray(binds, pair);
  }
  cJSON_AddNumberToObject(j, "cpuCount", s->cpu_count);
  cJSON_AddNumberToObject(j, "memoryMB", s->memory_mb);
  cJSON_AddNumberToObject(j, "diskSizeMB", s->disk_mb);
  cJSON_AddNumberToObject(j, "createdMs", (double)asbi_unix_ms());
  cJSON_AddNumberToObject(j, "buildMs", (double)took);
  cJSON_AddBoolToObject(j, "startCodeInterpreter", src->start_codei);
  if (src->spec) cJSON_AddItemToObject(j, "spec", cJSON_Duplicate(src->spec, 1));
  cJSON *sj = cJSON_AddObjectToObject(j, "snapshot");
  cJSON_AddStringToObject(sj, "sandboxID", s->id);
  cJSON_AddBoolToObject(sj, "hidden", hidden);
  char path[4300];
  snprintf(path, sizeof path, "%s/template.json", tdir);
  int wrc = build_write_json(path, j);
  cJSON_Delete(j);
  template_info *t = NULL;
  if (wrc || (wrc = templates_load(e, id, &t))) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot record the snapshot: %s", strerror(-wrc));
    if (*dumped) asbe_fork_images_drop(e->iso, s->id);
    *dumped = 0;
    goto out;
  }
  templates_hold(e, t); /* the caller's, next to the registry's */
  templates_install(e, t);
  asbi_log("sandbox %s: snapshot %s (%s) taken in %lld ms", s->id, t->alias, id, (long long)took);
  *out = t;
  rc = 0;
  bdir[0] = '\0'; /* keep it */
  made_tdir = 0;
  /* an old build of this name, and snapshots deleted while in use, go
   * once no sandbox runs on them */
  build_gc(e);
out:
  if (bdir[0]) host_rm_rf(bdir);
  if (made_tdir) host_rm_rf(tdir);
  pthread_mutex_unlock(&e->build_mu);
  templates_put(e, existing);
  templates_put(e, src);
  return rc;
}

/* name (a filter of GET /snapshots) names t: its name or id, with an
 * optional "namespace/" before and ":tag" after ("default" only: a
 * snapshot has one build). */
static int name_matches(const template_info *t, const char *name) {
  const char *slash = strrchr(name, '/');
  if (slash) name = slash + 1;
  size_t n = strlen(name);
  const char *colon = strchr(name, ':');
  if (colon) {
    if (strcmp(colon + 1, "default") != 0) return 0;
    n = (size_t)(colon - name);
  }
  return (strlen(t->alias) == n && !strncmp(t->alias, name, n)) ||
         (strlen(t->id) == n && !strncmp(t->id, name, n));
}

static int by_id(const void *a, const void *b) {
  return strcmp((*(template_info *const *)a)->id, (*(template_info *const *)b)->id);
}

template_info **snapshots_list(engine *e, const char *sandbox_id, const char *name,
                               const char *after, size_t limit, size_t *n, int *more) {
  *n = 0;
  *more = 0;
  size_t all = 0;
  template_info **v = templates_snapshot(e, &all);
  if (!v) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < all; i++) {
    template_info *t = v[i];
    int keep = t->snap_source && !t->hidden &&
               (!sandbox_id || !*sandbox_id || !strcmp(t->snap_source, sandbox_id)) &&
               (!name || !*name || name_matches(t, name)) &&
               (!after || !*after || strcmp(t->id, after) > 0);
    if (keep)
      v[k++] = t;
    else
      templates_put(e, t);
  }
  qsort(v, k, sizeof *v, by_id);
  if (limit && k > limit) {
    for (size_t i = limit; i < k; i++) templates_put(e, v[i]);
    k = limit;
    *more = 1;
  }
  *n = k;
  return v;
}

int snapshots_fork(engine *e, sbx *s, int timeout_s, int count, int processes, sbx **out,
                   eng_err *errs, eng_err *err) {
  eng_err_clear(err);
  for (int i = 0; i < count; i++) out[i] = NULL;
  snapshots_gc(e);
  /* --pause-criu: a running parent's processes too, dumped in the freeze
   * that copies its files (snapshots_take_ex); else, or when that fails,
   * forks boot fresh on the files */
  pthread_mutex_lock(&s->mu);
  int running = s->state == SBX_RUNNING, codei = s->codei_started;
  char ptok[sizeof s->token];
  snprintf(ptok, sizeof ptok, "%s", s->token);
  pthread_mutex_unlock(&s->mu);
  int want = processes && e->criu_path && running, dumped = 0;
  char dwhy[600] = "";
  template_info *t = NULL;
  if (snapshots_take_ex(e, s, NULL, 1, want, &dumped, dwhy, sizeof dwhy, &t, err)) return -1;
  if (want && !dumped)
    asbi_log(
        "sandbox %s: fork: its processes cannot be kept (%s); its forks boot fresh on its "
        "files",
        s->id, dwhy[0] ? dwhy : "no dump");
  /* the parent's metadata, env vars and network policy, copied now */
  pthread_mutex_lock(&s->mu);
  cJSON *meta = s->metadata ? cJSON_Duplicate(s->metadata, 1) : NULL;
  cJSON *env = s->env_vars ? cJSON_Duplicate(s->env_vars, 1) : NULL;
  asbn_policy pol;
  int have_pol = s->net_policy && asbn_policy_copy(s->net_policy, &pol) == 0;
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < count; i++) {
    sandboxes_create_req rq;
    memset(&rq, 0, sizeof rq);
    rq.template_id = t->id;
    rq.timeout_s = timeout_s;
    rq.metadata = meta;
    rq.env_vars = env;
    rq.network = have_pol ? &pol : NULL;
    if (dumped) {
      if (sandboxes_fork_restore(e, &rq, s->id, ptok, codei, &out[i], &errs[i]) == 0) continue;
      asbi_log("sandbox %s: fork %d of %d: %s; booting it fresh on the files instead", s->id, i + 1,
               count, errs[i].message);
      eng_err_clear(&errs[i]);
    }
    if (sandboxes_create(e, &rq, &out[i], &errs[i])) {
      out[i] = NULL;
      continue;
    }
    pthread_mutex_lock(&out[i]->mu);
    snprintf(out[i]->fork_mode, sizeof out[i]->fork_mode, "files");
    pthread_mutex_unlock(&out[i]->mu);
    reg_save(e, out[i]);
  }
  if (dumped) asbe_fork_images_drop(e->iso, s->id);
  if (have_pol) asbn_policy_free(&pol);
  cJSON_Delete(meta);
  cJSON_Delete(env);
  templates_put(e, t);
  return 0;
}

void snapshots_gc(engine *e) {
  size_t n = 0;
  template_info **v = templates_snapshot(e, &n);
  char ids[64][ENGINE_ID_LEN + 1];
  size_t k = 0;
  for (size_t i = 0; v && i < n && k < 64; i++)
    if (v[i]->snap_source && v[i]->hidden) snprintf(ids[k++], sizeof ids[0], "%s", v[i]->id);
  templates_put_all(e, v, n);
  for (size_t i = 0; i < k; i++) {
    size_t ns = 0, users = 0;
    sbx **sv = reg_list(e, &ns);
    for (size_t j = 0; sv && j < ns; j++)
      if (sv[j]->template_id && !strcmp(sv[j]->template_id, ids[i])) users++;
    reg_put_all(e, sv, ns);
    eng_err err;
    if (!users && templates_delete(e, ids[i], &err) == 0)
      asbi_log("fork snapshot %s: no sandbox uses it any more; deleted", ids[i]);
  }
  /* and the files of snapshots deleted while in use, now unused */
  pthread_mutex_lock(&e->build_mu);
  build_gc(e);
  pthread_mutex_unlock(&e->build_mu);
}
