/* Bundled templates: template directories shipped with the engine, under
 * its templates dir (--templates-dir, $ASB_TEMPLATES_DIR, default the build
 * tree's templates/; e.g. <dir>/python-base/template.yaml). They are
 * ordinary template.yaml builds (build_run) made on first use: the first
 * create (or build on top) that names one in an engine run packs its
 * directory and builds it — at once when its inputs' hash matches the
 * build recorded in the state dir (cached), so a new engine picks up
 * changed template files and an unchanged one costs a hash.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build.h"
#include "bundled.h"
#include "eng_err.h"
#include "proto/pjson.h"
#include "proto/tar.h"
#include "templates.h"
#include "tmpl/tmpl.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/util.h"

#define BUNDLE_MAX (64u << 20)

static int valid_name(const char *n) {
  size_t len = strlen(n);
  if (len < 1 || len > 63) return 0;
  if (!((n[0] >= 'a' && n[0] <= 'z') || (n[0] >= '0' && n[0] <= '9'))) return 0;
  for (size_t i = 0; i < len; i++) {
    char c = n[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return strstr(n, "..") == NULL;
}

static int was_done(engine *e, const char *name) {
  const asbi_buf *d = &e->bundled_done;
  for (size_t off = 0; off < d->len; off += strlen(d->data + off) + 1)
    if (!strcmp(d->data + off, name)) return 1;
  return 0;
}

int bundled_ensure(engine *e, const char *name, eng_err *err) {
  if (!e->templates_dir || !name || !valid_name(name)) return 0;
  char dir[4400], yaml[4500];
  snprintf(dir, sizeof dir, "%s/%s", e->templates_dir, name);
  snprintf(yaml, sizeof yaml, "%s/template.yaml", dir);
  if (access(yaml, R_OK) != 0) return 0;
  pthread_mutex_lock(&e->bundled_mu);
  int in_progress = 0;
  for (int i = 0; i < e->bundled_nbusy; i++)
    if (!strcmp(e->bundled_busy[i], name)) in_progress = 1;
  if (was_done(e, name) || in_progress ||
      e->bundled_nbusy == (int)ASBI_ARRAY_LEN(e->bundled_busy)) {
    pthread_mutex_unlock(&e->bundled_mu);
    return 0; /* the build reports the cycle (or a missing base) itself */
  }
  e->bundled_busy[e->bundled_nbusy++] = name;
  asbi_buf tar = ASBI_BUF_INIT;
  asbi_buf_init(&tar, BUNDLE_MAX);
  char why[8400];
  int rc = asbi_tar_pack_dir(dir, &tar, BUNDLE_MAX, why, sizeof why);
  if (!rc && asbi_tar_finish(&tar)) {
    snprintf(why, sizeof why, "%s: too big", dir);
    rc = -EFBIG;
  }
  if (rc) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "built-in template %s: cannot pack %s", name, why);
    asbi_log("%s", err->message);
    asbi_buf_free(&tar);
    e->bundled_nbusy--;
    pthread_mutex_unlock(&e->bundled_mu);
    return -1;
  }
  int64_t t0 = asbi_unix_ms();
  template_info *t = NULL;
  build_report rep;
  eng_err berr;
  /* its base may be bundled too: built first, by the same call */
  rc = build_run(e, tar.data, tar.len, 0, bundled_ensure, &t, &rep, &berr);
  asbi_buf_free(&tar);
  if (rc == 0) {
    asbi_log("built-in template %s: %s from %s in %lld ms", name,
             rep.cached ? "cached build" : "built", dir, (long long)(asbi_unix_ms() - t0));
    asbi_buf_append(&e->bundled_done, name, strlen(name) + 1);
    templates_put(e, t);
  } else {
    eng_err_set(err, ENG_EINTERNAL, NULL, "built-in template %s (%s) failed to build: %s", name,
                dir, berr.message);
    asbi_log("%s", err->message);
  }
  build_report_free(&rep);
  e->bundled_nbusy--;
  pthread_mutex_unlock(&e->bundled_mu);
  return rc;
}

/* ---- templates that are not built yet ---------------------------------------------- */

int bundled_waiting(engine *e, const char *name, template_info **out, char *why, size_t whylen) {
  *out = NULL;
  why[0] = '\0';
  if (!e->templates_dir || !name || !valid_name(name)) return -1;
  char dir[4400], yaml[4500];
  snprintf(dir, sizeof dir, "%s/%s", e->templates_dir, name);
  snprintf(yaml, sizeof yaml, "%s/template.yaml", dir);
  struct stat st;
  int fd = open(yaml, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return -1;
  }
  cJSON *spec = NULL;
  if (st.st_size > (off_t)ASBI_TMPL_MAX_BYTES) {
    snprintf(why, whylen, "%s: larger than %u bytes", yaml, ASBI_TMPL_MAX_BYTES);
  } else {
    char *text = malloc((size_t)st.st_size + 1);
    ssize_t got = text ? read(fd, text, (size_t)st.st_size) : -1;
    asbi_tmpl_error te;
    if (got != (ssize_t)st.st_size)
      snprintf(why, whylen, "%s: cannot read it", yaml);
    else if (!(spec = asbi_tmpl_parse(text, (size_t)got, &te)))
      asbi_tmpl_format_error(&te, yaml, why, whylen);
    free(text);
  }
  close(fd);
  /* A built-in template, as template.yaml describes it, not built yet. */
  template_info *t = templates_info_new(name, name, dir);
  if (!t) {
    cJSON_Delete(spec);
    return -1;
  }
  const cJSON *res = cJSON_GetObjectItemCaseSensitive(spec, "resources");
  int32_t cpu = 0, mem = 0, disk = 0;
  asbi_pj_get_i32(res, "cpu", &cpu);
  asbi_pj_get_i32(res, "memoryMB", &mem);
  asbi_pj_get_i32(res, "diskMB", &disk);
  t->builtin = 1;
  t->spec = spec;
  t->cpu_count = cpu;
  t->memory_mb = mem;
  t->disk_mb = disk;
  t->created_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
  *out = t;
  return 0;
}

char **bundled_names(engine *e, size_t *n) {
  *n = 0;
  DIR *d = e->templates_dir ? opendir(e->templates_dir) : NULL;
  if (!d) return NULL;
  char **v = NULL;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || !valid_name(de->d_name)) continue;
    char **nv = realloc(v, (*n + 1) * sizeof *nv);
    char *name = asbi_strdup(de->d_name);
    if (!nv || !name) {
      free(name);
      if (nv) v = nv;
      break;
    }
    v = nv;
    v[(*n)++] = name;
  }
  closedir(d);
  return v;
}

void bundled_names_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}
