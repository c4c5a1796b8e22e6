/* The HTTP front of templates (E2B's /templates API and our builds):
 *
 *   POST   /templates/builds[?force=true]   body: a tar of the template dir
 *   GET    /templates, /templates/{id|name}
 *   DELETE /templates/{id|name}
 *
 * It reads the request, calls the operations (build_run, templates_*,
 * bundled_*) and writes their results as E2B's Template objects (and our
 * fields), their errors as E2B's error bodies: 201 built, 200 cached, 400
 * invalid input (with file, line, column, field), 422 a failed step (with
 * its output and the build log).
 * SPDX-License-Identifier: Apache-2.0 */
#include "api_templates.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_builder.h"
#include "build.h"
#include "bundled.h"
#include "eng_err.h"
#include "pool.h"
#include "proto/pjson.h"
#include "templates.h"
#include "util/util.h"

/* ---- the Template object ------------------------------------------------------- */

static cJSON *template_json(engine *e, const template_info *t) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "templateID", t->id);
  cJSON_AddStringToObject(j, "buildID", *t->build_id ? t->build_id : t->id);
  cJSON_AddNumberToObject(j, "cpuCount", t->cpu_count);
  cJSON_AddNumberToObject(j, "memoryMB", t->memory_mb);
  cJSON_AddNumberToObject(j, "diskSizeMB", t->disk_mb);
  cJSON_AddBoolToObject(j, "public", 1);
  cJSON *aliases = cJSON_AddArrayToObject(j, "aliases");
  cJSON_AddItemToArray(aliases, cJSON_CreateString(t->alias));
  cJSON *names = cJSON_AddArrayToObject(j, "names");
  cJSON_AddItemToArray(names, cJSON_CreateString(t->alias));
  asbi_pj_add_time(j, "createdAt", t->created_ms);
  asbi_pj_add_time(j, "updatedAt", t->created_ms);
  cJSON_AddNullToObject(j, "createdBy");
  if (t->last_spawned_ms)
    asbi_pj_add_time(j, "lastSpawnedAt", t->last_spawned_ms);
  else
    cJSON_AddNullToObject(j, "lastSpawnedAt");
  cJSON_AddNumberToObject(j, "spawnCount", (double)t->spawn_count);
  cJSON_AddNumberToObject(j, "buildCount", 1);
  cJSON_AddStringToObject(j, "envdVersion", t->envd_version ? t->envd_version : e->envd_version);
  cJSON_AddStringToObject(j, "buildStatus", "ready");
  /* ours */
  cJSON_AddStringToObject(j, "name", t->alias);
  cJSON_AddBoolToObject(j, "builtIn", t->builtin);
  const cJSON *spec = t->spec;
  const char *desc = NULL, *version = NULL;
  asbi_pj_get_str(spec, "description", &desc);
  asbi_pj_get_str(spec, "version", &version);
  cJSON_AddStringToObject(j, "description", desc ? desc : "");
  cJSON_AddStringToObject(j, "version", version ? version : "");
  if (t->base) cJSON_AddStringToObject(j, "base", t->base);
  if (*t->hash) cJSON_AddStringToObject(j, "buildHash", t->hash);
  if (t->build_ms) cJSON_AddNumberToObject(j, "buildDurationMs", (double)t->build_ms);
  cJSON_AddItemToObject(j, "pool", pool_json(e, t)); /* its warm pool */
  if (spec) {
    static const char *const keys[] = {"start", "ready",        "ports", "capabilities",
                                       "env",   "commandsPort", "tags",  "image"};
    for (size_t i = 0; i < ASBI_ARRAY_LEN(keys); i++) {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, keys[i]);
      if (v) cJSON_AddItemToObject(j, keys[i], cJSON_Duplicate(v, 1));
    }
    cJSON *cmds = cJSON_AddArrayToObject(j, "customCommands");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "commands")) {
      const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");
      if (cJSON_IsString(n)) cJSON_AddItemToArray(cmds, cJSON_CreateString(n->valuestring));
    }
  }
  return j;
}

/* A bundled template not built yet: its Template object, marked so. */
static cJSON *waiting_json(engine *e, const template_info *t, const char *why) {
  cJSON *j = template_json(e, t);
  cJSON_ReplaceItemInObjectCaseSensitive(j, "buildID", cJSON_CreateString(""));
  cJSON_ReplaceItemInObjectCaseSensitive(j, "buildCount", cJSON_CreateNumber(0));
  cJSON_ReplaceItemInObjectCaseSensitive(j, "buildStatus",
                                         cJSON_CreateString(t->spec ? "waiting" : "error"));
  if (!t->spec) cJSON_AddStringToObject(j, "buildError", why);
  return j;
}

/* ---- routes ---------------------------------------------------------------------- */

void api_templates_build(engine *e, api_req *q, api_reply *r) {
  const char *force_q = api_query(q, "force");
  int force = force_q && (asbi_parse_bool(force_q, 0) || !*force_q);
  if (!q->body || !q->body_len) {
    api_error(r, 400,
              "the body must be a tar archive of the template directory "
              "(Content-Type: application/x-tar)");
    return;
  }
  template_info *t = NULL;
  build_report rep;
  eng_err err;
  if (build_run(e, q->body, q->body_len, force, bundled_ensure, &t, &rep, &err) == 0) {
    cJSON *j = template_json(e, t);
    cJSON_AddBoolToObject(j, "cached", rep.cached);
    cJSON_AddStringToObject(j, "buildLog", rep.log ? rep.log : "");
    api_reply_json(r, rep.cached ? 200 : 201, j);
    templates_put(e, t);
  } else if (err.status == ENG_EINVAL && rep.file[0]) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "code", 400);
    cJSON_AddStringToObject(j, "message", err.message);
    cJSON_AddStringToObject(j, "file", rep.file);
    if (rep.line) {
      cJSON_AddNumberToObject(j, "line", rep.line);
      cJSON_AddNumberToObject(j, "column", rep.column);
    }
    if (rep.field[0]) cJSON_AddStringToObject(j, "field", rep.field);
    api_reply_json(r, 400, j);
  } else if (err.status == ENG_EFAILED) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "code", 422);
    cJSON_AddStringToObject(j, "message", err.message);
    cJSON_AddNumberToObject(j, "step", rep.step);
    if (rep.step_line) cJSON_AddNumberToObject(j, "line", rep.step_line);
    cJSON_AddStringToObject(j, "output", rep.output ? rep.output : "");
    cJSON_AddStringToObject(j, "buildLog", rep.log ? rep.log : "");
    api_reply_json(r, 422, j);
  } else {
    api_reply_err(r, &err);
  }
  build_report_free(&rep);
}

void api_templates_get(engine *e, const char *name, api_reply *r) {
  template_info *t = templates_find(e, name);
  if (!t) {
    template_info *w = NULL;
    char why[1024];
    if (bundled_waiting(e, name, &w, why, sizeof why) == 0) {
      api_reply_json(r, 200, waiting_json(e, w, why));
      templates_put(e, w);
      return;
    }
    api_error(r, 404, "template \"%s\" not found", name);
    return;
  }
  api_reply_json(r, 200, template_json(e, t));
  templates_put(e, t);
}

/* 1 if the list arr has a template of that id or name. */
static int listed(const cJSON *arr, const char *name) {
  const cJSON *it;
  cJSON_ArrayForEach(it, arr) {
    const char *id = NULL, *n = NULL;
    asbi_pj_get_str(it, "templateID", &id);
    asbi_pj_get_str(it, "name", &n);
    if ((id && !strcmp(id, name)) || (n && !strcmp(n, name))) return 1;
  }
  return 0;
}

void api_templates_list(engine *e, api_reply *r) {
  cJSON *arr = cJSON_CreateArray();
  size_t n = 0;
  template_info **v = templates_snapshot(e, &n);
  for (size_t i = 0; v && i < n; i++)
    if (!v[i]->hidden) cJSON_AddItemToArray(arr, template_json(e, v[i])); /* not forks' */
  templates_put_all(e, v, n);
  /* and the bundled ones that are not built yet */
  size_t nb = 0;
  char **names = bundled_names(e, &nb);
  for (size_t i = 0; i < nb; i++) {
    template_info *w = NULL;
    char why[1024];
    if (listed(arr, names[i]) || bundled_waiting(e, names[i], &w, why, sizeof why) != 0) continue;
    cJSON_AddItemToArray(arr, waiting_json(e, w, why));
    templates_put(e, w);
  }
  bundled_names_free(names, nb);
  api_reply_json(r, 200, arr);
}

void api_templates_delete(engine *e, const char *id, api_reply *r) {
  eng_err err;
  /* A build of E2B's builder API under way (or queued behind another
   * build): 409 at once, rather than deleting what the build is about to
   * install or waiting for it. build.c's own rebuilds: templates_delete. */
  template_info *t = templates_find(e, id);
  char bid[40];
  if (t && api_builder_building(e, t->id, bid, sizeof bid)) {
    api_error(r, 409,
              "template \"%s\" is being built (build %s); delete it once the build has ended",
              t->alias, bid);
    templates_put(e, t);
    return;
  }
  templates_put(e, t);
  if (templates_delete(e, id, &err) == 0) {
    r->status = 204;
    pthread_mutex_lock(&e->build_mu); /* what it alone used: e.g. its local image */
    build_gc(e);
    pthread_mutex_unlock(&e->build_mu);
  } else
    api_reply_err(r, &err);
}
