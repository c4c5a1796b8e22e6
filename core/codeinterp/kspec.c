/* Kernelspec discovery: kernel.json files in Jupyter's data directories,
 * and the built-in fallbacks. SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"
#include "proto/pjson.h"
#include "util/buf.h"
#include "util/util.h"

#define MAX_SPEC_BYTES (1u << 20)

static void strv_free(char **v) {
  for (size_t i = 0; v && v[i]; i++) free(v[i]);
  free(v);
}

void ci_kspec_free(ci_kspec *s) {
  if (!s) return;
  free(s->name);
  free(s->language);
  free(s->dir);
  strv_free(s->argv);
  strv_free(s->env);
  free(s);
}

static char **strv_of(const char *const *src) {
  size_t n = 0;
  while (src[n]) n++;
  char **v = calloc(n + 1, sizeof *v);
  for (size_t i = 0; v && i < n; i++)
    if (!(v[i] = asbi_strdup(src[i]))) {
      strv_free(v);
      return NULL;
    }
  return v;
}

static char *lower_dup(const char *s) {
  char *d = asbi_strdup(s);
  for (char *p = d; p && *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p + 32);
  return d;
}

static int read_file(const char *path, asbi_buf *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  asbi_buf_init(out, MAX_SPEC_BYTES);
  char tmp[4096];
  size_t n;
  int rc = 0;
  while (rc == 0 && (n = fread(tmp, 1, sizeof tmp, f)) > 0) rc = asbi_buf_append(out, tmp, n);
  fclose(f);
  if (rc || !out->data) {
    asbi_buf_free(out);
    return -1;
  }
  return 0;
}

/* kernel.json in dir → spec, or NULL if it is not a usable spec. */
static ci_kspec *load_spec(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/kernel.json", dir);
  asbi_buf b;
  if (read_file(path, &b) != 0) return NULL;
  cJSON *j = asbi_pj_parse(b.data, b.len, NULL);
  asbi_buf_free(&b);
  const cJSON *argv = cJSON_GetObjectItemCaseSensitive(j, "argv");
  int n = cJSON_GetArraySize(argv);
  ci_kspec *s = NULL;
  if (!cJSON_IsArray(argv) || n < 1 || n > 256) goto out;
  s = calloc(1, sizeof *s);
  if (!s || !(s->argv = calloc((size_t)n + 1, sizeof *s->argv))) goto fail;
  int i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, argv) {
    if (!cJSON_IsString(it) || !(s->argv[i++] = asbi_strdup(it->valuestring))) goto fail;
  }
  const cJSON *lang = cJSON_GetObjectItemCaseSensitive(j, "language");
  s->language = lower_dup(cJSON_IsString(lang) ? lang->valuestring : name);
  s->name = asbi_strdup(name);
  s->dir = asbi_strdup(dir);
  const cJSON *im = cJSON_GetObjectItemCaseSensitive(j, "interrupt_mode");
  s->interrupt_message = cJSON_IsString(im) && strcmp(im->valuestring, "message") == 0;
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(j, "env");
  int ne = cJSON_IsObject(env) ? cJSON_GetArraySize(env) : 0;
  if (!(s->env = calloc((size_t)ne + 1, sizeof *s->env))) goto fail;
  i = 0;
  cJSON_ArrayForEach(it, env) {
    if (!cJSON_IsString(it) || strchr(it->string, '=')) continue;
    if (asprintf(&s->env[i], "%s=%s", it->string, it->valuestring) < 0) {
      s->env[i] = NULL;
      goto fail;
    }
    i++;
  }
  if (!s->language || !s->name || !s->dir) goto fail;
  s->kind = CI_KIND_JUPYTER;
  goto out;
fail:
  ci_kspec_free(s);
  s = NULL;
out:
  cJSON_Delete(j);
  return s;
}

/* Jupyter's data path, most specific first. */
static size_t data_dirs(char dirs[][512], size_t max) {
  size_t n = 0;
  const char *jp = asbi_getenv("JUPYTER_PATH");
  while (jp && *jp && n < max) {
    const char *c = strchr(jp, ':');
    size_t l = c ? (size_t)(c - jp) : strlen(jp);
    if (l && l < 400) snprintf(dirs[n++], 512, "%.*s/kernels", (int)l, jp);
    jp = c ? c + 1 : NULL;
  }
  const char *home = asbi_getenv("HOME");
  const char *xdg = asbi_getenv("XDG_DATA_HOME");
  if (n < max && xdg)
    snprintf(dirs[n++], 512, "%s/jupyter/kernels", xdg);
  else if (n < max && home)
    snprintf(dirs[n++], 512, "%s/.local/share/jupyter/kernels", home);
  if (n < max) snprintf(dirs[n++], 512, "/usr/local/share/jupyter/kernels");
  if (n < max) snprintf(dirs[n++], 512, "/usr/share/jupyter/kernels");
  return n;
}

static ci_kspec *find_installed(const char *language) {
  char dirs[16][512];
  size_t nd = data_dirs(dirs, 16);
  ci_kspec *by_lang = NULL;
  for (size_t d = 0; d < nd; d++) {
    DIR *dh = opendir(dirs[d]);
    if (!dh) continue;
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
      if (e->d_name[0] == '.') continue;
      int name_match = asbi_strcaseeq(e->d_name, language);
      if (!name_match && by_lang) continue;
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
      ci_kspec *s = load_spec(path, e->d_name);
      if (!s) continue;
      if (name_match) {
        closedir(dh);
        ci_kspec_free(by_lang);
        return s;
      }
      if (strcmp(s->language, language) == 0)
        by_lang = s;
      else
        ci_kspec_free(s);
    }
    closedir(dh);
  }
  return by_lang;
}

static ci_kspec *builtin(const char *language) {
  static const char *const py[] = {"python3",           "-m", "ipykernel_launcher", "-f",
                                   "{connection_file}", NULL};
  static const char *const none[] = {NULL};
  ci_kind kind;
  const char *name;
  if (strcmp(language, "python") == 0) {
    kind = CI_KIND_JUPYTER;
    name = "python3";
  } else if (strcmp(language, "javascript") == 0) {
    kind = CI_KIND_NODE;
    name = "node";
  } else if (strcmp(language, "bash") == 0) {
    kind = CI_KIND_BASH;
    name = "bash";
#if CI_HAVE_JAVA
  } else if (strcmp(language, "java") == 0) {
    kind = CI_KIND_JAVA;
    name = "java";
#endif
  } else {
    return NULL;
  }
  ci_kspec *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->kind = kind;
  s->name = asbi_strdup(name);
  s->language = asbi_strdup(language);
  s->argv = strv_of(kind == CI_KIND_JUPYTER ? py : none);
  s->env = strv_of(none);
  /* Debian's python3-ipykernel lives with /usr/bin/python3, which need not
   * be the python3 first on PATH. */
  if (s->argv && s->argv[0] && access("/usr/bin/python3", X_OK) == 0) {
    free(s->argv[0]);
    s->argv[0] = asbi_strdup("/usr/bin/python3");
  }
  if (!s->name || !s->language || !s->argv || !s->env ||
      (s->argv[0] == NULL && kind == CI_KIND_JUPYTER)) {
    ci_kspec_free(s);
    return NULL;
  }
  return s;
}

ci_kspec *ci_kspec_find(const char *language) {
  ci_kspec *s = find_installed(language);
  return s ? s : builtin(language);
}
