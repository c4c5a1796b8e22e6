/* Template registry: the built-in `base` (host /usr, read-only),
 * `code-interpreter-v1` and `busybox`, and templates built from
 * template.yaml (build.c), recorded under <state>/templates/<id>/:
 *
 *   template.json   {"alias", "base", "buildID", "hash", "layers": [own
 *                    layer dirs, relative to this dir], "lowerLayers": [the
 *                    base's layer dirs, relative to <state>/templates, or
 *                    absolute], "binds": [[src, dst]], "cpuCount",
 *                    "memoryMB", "diskSizeMB", "createdMs", "buildMs",
 *                    "spec": <normalised template.yaml>}
 *   builds/<build>/layer/   the layer of one build
 *
 * A template keeps the exact layers it was built on, so rebuilding its
 * base does not change it. Entries are reference-counted: a create that
 * found a template may use it while a build replaces it.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host.h"
#include "proto/pjson.h"
#include "registry.h"
#include "sbxnet.h"
#include "templates.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/util.h"

#define DEFAULT_CPU 2
#define DEFAULT_MEMORY_MB 512
#define DEFAULT_DISK_MB 1024

template_info *templates_info_new(const char *id, const char *alias, const char *dir) {
  template_info *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->id = asbi_strdup(id);
  t->alias = asbi_strdup(alias);
  t->dir = asbi_strdup(dir);
  t->build_id = asbi_strdup("");
  t->hash = asbi_strdup("");
  t->cpu_count = DEFAULT_CPU;
  t->memory_mb = DEFAULT_MEMORY_MB;
  t->disk_mb = DEFAULT_DISK_MB;
  t->created_ms = asbi_unix_ms();
  t->refs = 1;
  if (!t->id || !t->alias || !t->dir || !t->build_id || !t->hash) {
    free(t->id);
    free(t->alias);
    free(t->dir);
    free(t->build_id);
    free(t->hash);
    free(t);
    return NULL;
  }
  return t;
}

static void tinfo_free(template_info *t) {
  if (!t) return;
  asbe_template_free(t->tmpl);
  free(t->id);
  free(t->alias);
  free(t->dir);
  free(t->envd_version);
  free(t->build_id);
  free(t->hash);
  free(t->base);
  free(t->snap_source);
  cJSON_Delete(t->spec);
  free(t);
}

static void push(engine *e, template_info *t) {
  t->next = e->templates;
  e->templates = t;
}

static int builtin(engine *e, const char *name, int (*prepare)(const char *),
                   int (*make)(const char *, asbe_template **)) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/templates/%s", e->state_dir, name);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -errno;
  int rc = prepare(dir);
  if (rc) {
    asbi_log("template %s: cannot prepare %s: %s", name, dir, asbe_errmsg());
    return rc;
  }
  template_info *t = templates_info_new(name, name, dir);
  if (!t) return -ENOMEM;
  if ((rc = make(dir, &t->tmpl))) {
    asbi_log("template %s: %s", name, asbe_errmsg());
    tinfo_free(t);
    return rc;
  }
  t->builtin = 1;
  t->envd_version = asbi_strdup(e->envd_version);
  push(e, t);
  return 0;
}

/* A layer path of template.json: absolute, or relative to rel_to. */
static int layer_path(const char *rel_to, const char *p, char *out, size_t len) {
  if (!p || !*p || strstr(p, "..")) return -EINVAL;
  if ((size_t)snprintf(out, len, p[0] == '/' ? "%s" : "%s/%s", p[0] == '/' ? p : rel_to, p) >= len)
    return -ENAMETOOLONG;
  return 0;
}

int templates_load(engine *e, const char *id, template_info **out) {
  *out = NULL;
  char dir[4096], path[4200], tdir[4096];
  snprintf(tdir, sizeof tdir, "%s/templates", e->state_dir);
  snprintf(dir, sizeof dir, "%s/%s", tdir, id);
  snprintf(path, sizeof path, "%s/template.json", dir);
  asbi_buf b = ASBI_BUF_INIT;
  int frc = asbi_buf_read_file(&b, path, 1u << 20);
  if (frc) {
    asbi_buf_free(&b);
    return frc;
  }
  cJSON *j = b.data ? asbi_pj_parse(b.data, b.len, NULL) : NULL;
  asbi_buf_free(&b);
  if (!j) {
    asbi_log("template %s: %s is not valid JSON; skipped", id, path);
    return -EINVAL;
  }
  const char *alias = NULL, *base = NULL, *bid = NULL, *hash = NULL;
  asbi_pj_get_str(j, "alias", &alias);
  asbi_pj_get_str(j, "base", &base);
  asbi_pj_get_str(j, "buildID", &bid);
  asbi_pj_get_str(j, "hash", &hash);
  template_info *t = templates_info_new(id, alias ? alias : id, dir);
  int rc = t ? 0 : -ENOMEM;
  if (!rc && !(t->tmpl = asbe_template_new())) rc = -ENOMEM;
  const cJSON *it;
  /* The base's layers and binds as they were at build time. */
  cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "lowerLayers")) {
    char layer[4200];
    if (rc || !cJSON_IsString(it) ||
        (rc = layer_path(tdir, it->valuestring, layer, sizeof layer)) ||
        (rc = asbe_template_add_layer(t->tmpl, layer))) {
      rc = rc ? rc : -EINVAL;
      break;
    }
  }
  cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "layers")) {
    char layer[4200];
    if (rc || !cJSON_IsString(it) || (rc = layer_path(dir, it->valuestring, layer, sizeof layer)) ||
        (rc = asbe_template_add_layer(t->tmpl, layer))) {
      rc = rc ? rc : -EINVAL;
      break;
    }
  }
  cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "binds")) {
    const cJSON *src = cJSON_GetArrayItem(it, 0), *dst = cJSON_GetArrayItem(it, 1);
    if (rc || !cJSON_IsString(src) || !cJSON_IsString(dst) ||
        (rc = asbe_template_add_bind(t->tmpl, src->valuestring, dst->valuestring))) {
      rc = rc ? rc : -EINVAL;
      break;
    }
  }
  if (!rc && asbe_template_layer_count(t->tmpl) == 0) rc = -EINVAL;
  const cJSON *v;
  if (!rc) {
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "cpuCount")) && cJSON_IsNumber(v))
      t->cpu_count = v->valueint;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "memoryMB")) && cJSON_IsNumber(v))
      t->memory_mb = v->valueint;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "diskSizeMB")) && cJSON_IsNumber(v))
      t->disk_mb = v->valueint;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "createdMs")) && cJSON_IsNumber(v))
      t->created_ms = (int64_t)v->valuedouble;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "buildMs")) && cJSON_IsNumber(v))
      t->build_ms = (int64_t)v->valuedouble;
    free(t->build_id);
    free(t->hash);
    t->build_id = asbi_strdup(bid ? bid : "");
    t->hash = asbi_strdup(hash ? hash : "");
    t->base = base ? asbi_strdup(base) : NULL;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "spec")) && cJSON_IsObject(v))
      t->spec = cJSON_Duplicate(v, 1);
    t->envd_version = asbi_strdup(e->envd_version);
    if (!t->build_id || !t->hash || !t->envd_version) rc = -ENOMEM;
    t->start_codei = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "startCodeInterpreter"));
    const cJSON *snap = cJSON_GetObjectItemCaseSensitive(j, "snapshot");
    const char *src = NULL;
    if (cJSON_IsObject(snap) && !asbi_pj_get_str(snap, "sandboxID", &src) && src) {
      if (!(t->snap_source = asbi_strdup(src))) rc = -ENOMEM;
      t->hidden = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(snap, "hidden"));
    }
  }
  cJSON_Delete(j);
  if (rc) {
    asbi_log("template %s: cannot load (%s): %s", id, strerror(-rc), asbe_errmsg());
    tinfo_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

int templates_init(engine *e) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/templates", e->state_dir);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -errno;
  int rc = builtin(e, "base", asbe_template_prepare_base, asbe_template_base);
  if (rc) return rc;
  /* E2B's code-interpreter template: base, with the code interpreter
   * started at create so its default kernel is warm for the first call. */
  template_info *b = e->templates;
  template_info *ci =
      b ? templates_info_new("code-interpreter-v1", "code-interpreter", b->dir) : NULL;
  if (ci && asbe_template_base(b->dir, &ci->tmpl) == 0) {
    ci->start_codei = 1;
    ci->builtin = 1;
    ci->envd_version = asbi_strdup(e->envd_version);
    push(e, ci);
  } else {
    tinfo_free(ci);
  }
  /* busybox is optional: Debian's busybox-static provides /bin/busybox. */
  if (builtin(e, "busybox", asbe_template_prepare_busybox, asbe_template_busybox))
    asbi_log("template busybox unavailable (install busybox-static)");
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || strcmp(de->d_name, "base") == 0 ||
        strcmp(de->d_name, "code-interpreter-v1") == 0 || strcmp(de->d_name, "busybox") == 0)
      continue;
    template_info *t = NULL;
    if (templates_load(e, de->d_name, &t) == 0) push(e, t);
  }
  closedir(d);
  return 0;
}

void templates_free(engine *e) {
  pthread_mutex_lock(&e->tmpl_mu);
  template_info *t = e->templates;
  e->templates = NULL;
  pthread_mutex_unlock(&e->tmpl_mu);
  /* retired ones go with their last user */
  while (t) {
    template_info *n = t->next;
    templates_pool_drain(e, t, 0);
    templates_put(e, t);
    t = n;
  }
}

template_info *templates_find(engine *e, const char *name) {
  if (!name || !*name) return NULL;
  template_info *found = NULL;
  pthread_mutex_lock(&e->tmpl_mu);
  for (template_info *t = e->templates; t && !found; t = t->next)
    if (strcmp(t->id, name) == 0) found = t;
  for (template_info *t = e->templates; t && !found; t = t->next)
    if (strcmp(t->alias, name) == 0) found = t;
  if (found) found->refs++;
  pthread_mutex_unlock(&e->tmpl_mu);
  const char *colon = strchr(name, ':');
  if (!found && colon && colon != name && !strchr(colon + 1, ':') && strlen(name) < 256) {
    /* "name:tag" (E2B's builder): the template, if tag names its build;
     * "default" names the latest (what E2B's snapshot ids carry) */
    char base[256], ours[40];
    snprintf(base, sizeof base, "%.*s", (int)(colon - name), name);
    if (!strcmp(colon + 1, "default")) return templates_find(e, base);
    int (*tag_build)(engine *, const char *, const char *, char *, size_t) =
        __atomic_load_n(&e->tag_build, __ATOMIC_ACQUIRE);
    found = tag_build ? templates_find(e, base) : NULL;
    if (found &&
        (tag_build(e, base, colon + 1, ours, sizeof ours) || strcmp(ours, found->build_id))) {
      templates_put(e, found);
      found = NULL;
    }
  }
  return found;
}

void templates_put(engine *e, template_info *t) {
  if (!t) return;
  pthread_mutex_lock(&e->tmpl_mu);
  int last = --t->refs == 0;
  if (last) /* a retired one leaves the retired list */
    for (template_info **pp = &e->retired; *pp; pp = &(*pp)->next)
      if (*pp == t) {
        *pp = t->next;
        break;
      }
  pthread_mutex_unlock(&e->tmpl_mu);
  if (last) tinfo_free(t);
}

static template_info **snapshot(engine *e, size_t *n, int retired) {
  pthread_mutex_lock(&e->tmpl_mu);
  size_t k = 0;
  for (template_info *t = e->templates; t; t = t->next) k++;
  for (template_info *t = retired ? e->retired : NULL; t; t = t->next) k++;
  template_info **v = malloc((k ? k : 1) * sizeof *v);
  *n = 0;
  if (v) {
    /* oldest first: the list is newest first */
    size_t i = k;
    for (template_info *t = e->templates; t; t = t->next) {
      t->refs++;
      v[--i] = t;
    }
    for (template_info *t = retired ? e->retired : NULL; t; t = t->next) {
      t->refs++;
      v[--i] = t;
    }
    *n = k;
  }
  pthread_mutex_unlock(&e->tmpl_mu);
  return v;
}

template_info **templates_snapshot(engine *e, size_t *n) {
  return snapshot(e, n, 0);
}
template_info **templates_snapshot_all(engine *e, size_t *n) {
  return snapshot(e, n, 1);
}

/* Puts t (just unlinked from the registry, whose reference the caller then
 * drops) on the retired list if others still use it. Under tmpl_mu. */
static void retire_locked(engine *e, template_info *t) {
  if (t->refs > 1) {
    t->next = e->retired;
    e->retired = t;
  } else {
    t->next = NULL;
  }
}

void templates_put_all(engine *e, template_info **v, size_t n) {
  for (size_t i = 0; i < n; i++) templates_put(e, v[i]);
  free(v);
}

/* ---- warm pools -------------------------------------------------------------------- */

int templates_pool_put(engine *e, template_info *t, sbx *s) {
  pthread_mutex_lock(&e->tmpl_mu);
  int rc = t->pool_closed || e->pool_stop ? -1 : 0;
  if (rc == 0) {
    s->pool_next = NULL;
    if (!t->pool) t->pool_tail = &t->pool;
    *t->pool_tail = s;
    t->pool_tail = &s->pool_next;
    t->pool_ready++;
  }
  pthread_mutex_unlock(&e->tmpl_mu);
  return rc;
}

sbx *templates_pool_take(engine *e, template_info *t, int fits) {
  pthread_mutex_lock(&e->tmpl_mu);
  sbx *s = fits ? t->pool : NULL;
  if (s) {
    t->pool = s->pool_next;
    s->pool_next = NULL;
    t->pool_ready--;
    t->pool_claims++;
  } else {
    t->pool_misses++;
  }
  pthread_cond_broadcast(&e->pool_cv); /* refill */
  pthread_mutex_unlock(&e->tmpl_mu);
  return s;
}

unsigned templates_pool_drain(engine *e, template_info *t, int wait) {
  pthread_mutex_lock(&e->tmpl_mu);
  t->pool_closed = 1;
  sbx *s = t->pool;
  t->pool = NULL;
  t->pool_ready = 0;
  while (wait && e->pool_busy == t) pthread_cond_wait(&e->pool_cv, &e->tmpl_mu);
  pthread_mutex_unlock(&e->tmpl_mu);
  unsigned n = 0;
  while (s) {
    sbx *next = s->pool_next;
    sbxnet_detach(e, s, 1);
    asbe_sandbox_kill(s->iso, 1);
    reg_sbx_free(s);
    s = next;
    n++;
  }
  if (n) asbi_log("template %s: warm pool drained (%u sandbox(es) killed)", t->alias, n);
  return n;
}

unsigned templates_pool_sweep(engine *e, template_info *t) {
  sbx *dead = NULL;
  pthread_mutex_lock(&e->tmpl_mu);
  t->pool_tail = &t->pool;
  for (sbx **pp = &t->pool; *pp;) {
    sbx *s = *pp;
    if (asbe_sandbox_alive(s->iso)) {
      t->pool_tail = &s->pool_next;
      pp = &s->pool_next;
      continue;
    }
    *pp = s->pool_next;
    s->pool_next = dead;
    dead = s;
    t->pool_ready--;
  }
  pthread_mutex_unlock(&e->tmpl_mu);
  unsigned n = 0;
  while (dead) {
    sbx *next = dead->pool_next;
    asbi_log("sandbox %s: died in template %s's warm pool; removed", dead->id, t->alias);
    sbxnet_detach(e, dead, 1);
    asbe_sandbox_kill(dead->iso, 1);
    reg_sbx_free(dead);
    dead = next;
    n++;
  }
  return n;
}

void templates_pool_reopen(engine *e, template_info *t) {
  pthread_mutex_lock(&e->tmpl_mu);
  t->pool_closed = 0;
  pthread_cond_broadcast(&e->pool_cv);
  pthread_mutex_unlock(&e->tmpl_mu);
}

void templates_install(engine *e, template_info *t) {
  template_info *old = NULL;
  pthread_mutex_lock(&e->tmpl_mu);
  for (template_info **pp = &e->templates; *pp; pp = &(*pp)->next)
    if (strcmp((*pp)->id, t->id) == 0) {
      old = *pp;
      *pp = old->next;
      retire_locked(e, old);
      break;
    }
  t->next = e->templates;
  e->templates = t;
  pthread_cond_broadcast(&e->pool_cv); /* its pool, if it has one */
  pthread_mutex_unlock(&e->tmpl_mu);
  /* A rebuild: sandboxes made of the old build are not handed out. */
  if (old) templates_pool_drain(e, old, 0);
  templates_put(e, old); /* the registry's reference */
}

int templates_uninstall(engine *e, template_info *t) {
  int rc = -ENOENT;
  pthread_mutex_lock(&e->tmpl_mu);
  for (template_info **pp = &e->templates; *pp; pp = &(*pp)->next)
    if (*pp == t) {
      if (t->refs > 2) { /* the registry, the caller, and someone else */
        rc = -EBUSY;
        break;
      }
      *pp = t->next;
      retire_locked(e, t);
      rc = 0;
      break;
    }
  pthread_mutex_unlock(&e->tmpl_mu);
  if (rc == 0) templates_put(e, t); /* the registry's reference */
  return rc;
}

cJSON *templates_layers_json(const template_info *t) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; a && i < asbe_template_layer_count(t->tmpl); i++)
    cJSON_AddItemToArray(a, cJSON_CreateString(asbe_template_layer(t->tmpl, i)));
  return a;
}

void templates_hold(engine *e, template_info *t) {
  pthread_mutex_lock(&e->tmpl_mu);
  t->refs++;
  pthread_mutex_unlock(&e->tmpl_mu);
}

/* ---- delete ------------------------------------------------------------------------- */

/* 1 if path lies in dir (dir itself or below it). */
static int under(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

int templates_delete(engine *e, const char *id, eng_err *err) {
  template_info *t = templates_find(e, id);
  if (!t) return eng_err_set(err, ENG_ENOTFOUND, NULL, "template \"%s\" not found", id);
  if (t->builtin) {
    eng_err_set(err, ENG_EINVAL, NULL, "template \"%s\" is built in and cannot be deleted",
                t->alias);
    templates_put(e, t);
    return -1;
  }
  int rc = -1;
  /* being rebuilt: 409 now rather than after the build (build_mu) */
  pthread_mutex_lock(&e->mu);
  int rebuilding = !strcmp(e->rebuilding, t->id);
  pthread_mutex_unlock(&e->mu);
  if (rebuilding) {
    eng_err_set(err, ENG_ECONFLICT, NULL,
                "template \"%s\" is being built; delete it once the build has ended", t->alias);
    templates_put(e, t);
    return -1;
  }
  pthread_mutex_lock(&e->build_mu);
  /* A build that ended while we waited for build_mu may have replaced t
   * (a rebuild installs a new template_info of the same id): delete what
   * the registry holds now, or t would count as the base of its successor. */
  template_info *now = templates_find(e, t->id);
  if (now != t) {
    templates_put(e, t);
    t = now;
    if (!t) {
      pthread_mutex_unlock(&e->build_mu);
      return eng_err_set(err, ENG_ENOTFOUND, NULL, "template \"%s\" not found", id);
    }
  } else
    templates_put(e, now);
  /* in use by sandboxes? */
  size_t ns = 0, users = 0;
  sbx **v = reg_list(e, &ns);
  for (size_t i = 0; v && i < ns; i++)
    if (v[i]->template_id && !strcmp(v[i]->template_id, t->id)) users++;
  reg_put_all(e, v, ns);
  /* the base of other templates? */
  size_t nt = 0;
  template_info **all = templates_snapshot(e, &nt);
  char child[128] = "";
  for (size_t i = 0; all && i < nt && !child[0]; i++) {
    if (all[i] == t) continue;
    for (size_t k = 0; k < asbe_template_layer_count(all[i]->tmpl); k++)
      if (under(asbe_template_layer(all[i]->tmpl, k), t->dir))
        snprintf(child, sizeof child, "%s", all[i]->alias);
  }
  templates_put_all(e, all, nt); /* before uninstall counts the users */
  /* Its warm pool goes first (its sandboxes are nobody's yet, and one
   * being prepared holds the template); it refills if the template stays. */
  int busy = 0;
  if (t->snap_source && (users || child[0])) {
    /* A snapshot in use: it goes from the registry now (no new sandbox
     * from it, not listed), its files stay for those that run on them or
     * build on them; build_gc removes them once nothing does. */
    templates_pool_drain(e, t, 1);
    if (templates_uninstall(e, t) != 0) {
      templates_pool_reopen(e, t);
      eng_err_set(err, ENG_ECONFLICT, NULL,
                  "snapshot \"%s\" is in use (a sandbox is being created from it); try again",
                  t->alias);
    } else {
      char from[4300], to[4300];
      snprintf(from, sizeof from, "%s/template.json", t->dir);
      snprintf(to, sizeof to, "%s/template.json.deleted", t->dir);
      if (rename(from, to) != 0)
        asbi_log("template %s: rename %s: %s", t->id, from, strerror(errno));
      asbi_log("snapshot %s (%s): deleted; its files stay while sandboxes use them", t->alias,
               t->id);
      rc = 0;
    }
    pthread_mutex_unlock(&e->build_mu);
    templates_put(e, t);
    return rc;
  }
  if (!users && !child[0]) {
    templates_pool_drain(e, t, 1);
    if ((busy = templates_uninstall(e, t) != 0)) templates_pool_reopen(e, t);
  }
  if (users) {
    eng_err_set(err, ENG_ECONFLICT, NULL,
                "template \"%s\" is in use by %zu sandbox(es); kill them first", t->alias, users);
  } else if (child[0]) {
    eng_err_set(err, ENG_ECONFLICT, NULL,
                "template \"%s\" is the base of template \"%s\"; delete that first", t->alias,
                child);
  } else if (busy) {
    eng_err_set(err, ENG_ECONFLICT, NULL,
                "template \"%s\" is in use (a sandbox is being created from it); try again",
                t->alias);
  } else {
    char gone[4300];
    snprintf(gone, sizeof gone, "%s.deleted", t->dir);
    /* rename first: a crash mid-delete leaves no half template behind */
    if (rename(t->dir, gone) == 0)
      host_rm_rf(gone);
    else
      host_rm_rf(t->dir);
    asbi_log("template %s (%s): deleted", t->alias, t->id);
    rc = 0;
  }
  pthread_mutex_unlock(&e->build_mu);
  templates_put(e, t);
  return rc;
}
