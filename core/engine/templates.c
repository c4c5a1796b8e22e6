/* Template registry: the built-in `base` (host /usr, read-only) and
 * `busybox`, and templates recorded on disk under <state>/templates/<id>/
 * (template.json + layer dirs; built from template.yaml by later tooling).
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine.h"
#include "proto/pjson.h"
#include "util/buf.h"
#include "util/util.h"

#define DEFAULT_CPU 2
#define DEFAULT_MEMORY_MB 512
#define DEFAULT_DISK_MB 1024

static template_info *tinfo_new(const char *id, const char *alias,
                                const char *dir) {
  template_info *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->id = asbi_strdup(id);
  t->alias = asbi_strdup(alias);
  t->dir = asbi_strdup(dir);
  t->cpu_count = DEFAULT_CPU;
  t->memory_mb = DEFAULT_MEMORY_MB;
  t->disk_mb = DEFAULT_DISK_MB;
  t->created_ms = now_unix_ms();
  if (!t->id || !t->alias || !t->dir) {
    free(t->id);
    free(t->alias);
    free(t->dir);
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
  free(t);
}

static void push(engine *e, template_info *t) {
  t->next = e->templates;
  e->templates = t;
}

static int builtin(engine *e, const char *name,
                   int (*prepare)(const char *),
                   int (*make)(const char *, asbe_template **)) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/templates/%s", e->state_dir, name);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -errno;
  int rc = prepare(dir);
  if (rc) {
    engine_log("template %s: cannot prepare %s: %s", name, dir, asbe_errmsg());
    return rc;
  }
  template_info *t = tinfo_new(name, name, dir);
  if (!t) return -ENOMEM;
  if ((rc = make(dir, &t->tmpl))) {
    engine_log("template %s: %s", name, asbe_errmsg());
    tinfo_free(t);
    return rc;
  }
  t->envd_version = asbi_strdup(e->envd_version);
  push(e, t);
  return 0;
}

/* A template on disk: template.json names its base and its own layers. */
static int load_one(engine *e, const char *id, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/template.json", dir);
  FILE *f = fopen(path, "re");
  if (!f) return -ENOENT;
  asbi_buf b = ASBI_BUF_INIT;
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) asbi_buf_append(&b, chunk, n);
  fclose(f);
  cJSON *j = b.data ? asbi_pj_parse(b.data, b.len, NULL) : NULL;
  asbi_buf_free(&b);
  if (!j) {
    engine_log("template %s: %s is not valid JSON; skipped", id, path);
    return -EINVAL;
  }
  const char *alias = NULL, *base = NULL;
  asbi_pj_get_str(j, "alias", &alias);
  asbi_pj_get_str(j, "base", &base);
  template_info *parent = base ? templates_find(e, base) : NULL;
  template_info *t = tinfo_new(id, alias ? alias : id, dir);
  int rc = t ? 0 : -ENOMEM;
  if (!rc && !(t->tmpl = asbe_template_new())) rc = -ENOMEM;
  /* Layers: the parent's chain (for `base`: its root layer and the /usr
   * bind), then this template's own layers on top. */
  if (!rc && parent) {
    if (strcmp(parent->id, "base") == 0) {
      char layer[4200];
      snprintf(layer, sizeof layer, "%s/rootfs", parent->dir);
      rc = asbe_template_add_layer(t->tmpl, layer);
      if (!rc) rc = asbe_template_add_bind(t->tmpl, "/usr", "/usr");
    } else if (strcmp(parent->id, "busybox") == 0) {
      char layer[4200];
      snprintf(layer, sizeof layer, "%s/rootfs", parent->dir);
      rc = asbe_template_add_layer(t->tmpl, layer);
    }
  }
  const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers"), *it;
  cJSON_ArrayForEach(it, layers) {
    if (rc || !cJSON_IsString(it) || strstr(it->valuestring, "..")) {
      rc = rc ? rc : -EINVAL;
      break;
    }
    char layer[4200];
    snprintf(layer, sizeof layer, "%s/%s", dir, it->valuestring);
    rc = asbe_template_add_layer(t->tmpl, layer);
  }
  const cJSON *v;
  if (t && (v = cJSON_GetObjectItemCaseSensitive(j, "cpuCount")) && cJSON_IsNumber(v))
    t->cpu_count = v->valueint;
  if (t && (v = cJSON_GetObjectItemCaseSensitive(j, "memoryMB")) && cJSON_IsNumber(v))
    t->memory_mb = v->valueint;
  if (t && (v = cJSON_GetObjectItemCaseSensitive(j, "diskSizeMB")) && cJSON_IsNumber(v))
    t->disk_mb = v->valueint;
  if (t) t->envd_version = asbi_strdup(e->envd_version);
  cJSON_Delete(j);
  if (rc) {
    engine_log("template %s: cannot load (%s); skipped", id, strerror(-rc));
    tinfo_free(t);
    return rc;
  }
  push(e, t);
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
  template_info *b = templates_find(e, "base");
  template_info *ci = b ? tinfo_new("code-interpreter-v1", "code-interpreter", b->dir) : NULL;
  if (ci && asbe_template_base(b->dir, &ci->tmpl) == 0) {
    ci->start_codei = 1;
    ci->envd_version = asbi_strdup(e->envd_version);
    push(e, ci);
  } else {
    tinfo_free(ci);
  }
  /* busybox is optional: Debian's busybox-static provides /bin/busybox. */
  if (builtin(e, "busybox", asbe_template_prepare_busybox, asbe_template_busybox))
    engine_log("template busybox unavailable (install busybox-static)");
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || strcmp(de->d_name, "base") == 0 ||
        strcmp(de->d_name, "code-interpreter-v1") == 0 ||
        strcmp(de->d_name, "busybox") == 0)
      continue;
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
    load_one(e, de->d_name, sub);
  }
  closedir(d);
  return 0;
}

void templates_free(engine *e) {
  while (e->templates) {
    template_info *t = e->templates;
    e->templates = t->next;
    tinfo_free(t);
  }
}

template_info *templates_find(engine *e, const char *name) {
  if (!name || !*name) return NULL;
  for (template_info *t = e->templates; t; t = t->next)
    if (strcmp(t->id, name) == 0 || strcmp(t->alias, name) == 0) return t;
  return NULL;
}
