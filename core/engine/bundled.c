/* Bundled templates: template directories shipped with the engine, under
 * its templates dir (--templates-dir, $ASB_TEMPLATES_DIR, default the build
 * tree's templates/; e.g. <dir>/python-base/template.yaml). They are
 * ordinary template.yaml builds (build.c) made on first use: the first
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

#include "api.h"
#include "build.h"
#include "bundled.h"
#include "proto/pjson.h"
#include "proto/tar.h"
#include "templates.h"
#include "tmpl/tmpl.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/util.h"

#define BUNDLE_MAX (64u << 20)

/* Recursive: a bundled template built on another bundled one builds that
 * one first, on the same thread. */
static pthread_mutex_t bundled_mu;
static pthread_once_t bundled_once = PTHREAD_ONCE_INIT;
/* Names built (or found cached) in this engine run, "\0"-separated. */
static asbi_buf done = ASBI_BUF_INIT;
/* Names being built on the thread that holds bundled_mu (a template built
 * on itself, directly or not, must not recurse forever). */
static const char *busy[16];
static int nbusy;

static void init_mu(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&bundled_mu, &a);
  pthread_mutexattr_destroy(&a);
}

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

static int was_done(const char *name) {
  for (size_t off = 0; off < done.len; off += strlen(done.data + off) + 1)
    if (!strcmp(done.data + off, name)) return 1;
  return 0;
}

int bundled_ensure(engine *e, const char *name, char *err, size_t errlen) {
  if (!e->templates_dir || !name || !valid_name(name)) return 0;
  char dir[4400], yaml[4500];
  snprintf(dir, sizeof dir, "%s/%s", e->templates_dir, name);
  snprintf(yaml, sizeof yaml, "%s/template.yaml", dir);
  if (access(yaml, R_OK) != 0) return 0;
  pthread_once(&bundled_once, init_mu);
  pthread_mutex_lock(&bundled_mu);
  int in_progress = 0;
  for (int i = 0; i < nbusy; i++)
    if (!strcmp(busy[i], name)) in_progress = 1;
  if (was_done(name) || in_progress || nbusy == (int)(sizeof busy / sizeof busy[0])) {
    pthread_mutex_unlock(&bundled_mu);
    return 0; /* the build reports the cycle (or a missing base) itself */
  }
  busy[nbusy++] = name;
  asbi_buf tar = ASBI_BUF_INIT;
  asbi_buf_init(&tar, BUNDLE_MAX);
  char why[8400];
  int rc = asbi_tar_pack_dir(dir, &tar, BUNDLE_MAX, why, sizeof why);
  if (!rc && asbi_tar_finish(&tar)) {
    snprintf(why, sizeof why, "%s: too big", dir);
    rc = -EFBIG;
  }
  if (rc) {
    snprintf(err, errlen, "built-in template %s: cannot pack %s", name, why);
    asbi_log("%s", err);
    asbi_buf_free(&tar);
    nbusy--;
    pthread_mutex_unlock(&bundled_mu);
    return -1;
  }
  api_req q;
  memset(&q, 0, sizeof q);
  q.method = "POST";
  q.path = "/templates/builds";
  q.query = "";
  q.body = tar.data;
  q.body_len = tar.len;
  api_reply r;
  memset(&r, 0, sizeof r);
  r.total_running = -1;
  int64_t t0 = asbi_unix_ms();
  build_handle(e, &q, &r);
  api_req_free(&q);
  asbi_buf_free(&tar);
  if (r.status == 200 || r.status == 201) {
    asbi_log("built-in template %s: %s from %s in %lld ms", name,
               r.status == 200 ? "cached build" : "built", dir,
               (long long)(asbi_unix_ms() - t0));
    asbi_buf_append(&done, name, strlen(name) + 1);
    rc = 0;
  } else {
    cJSON *j = r.body ? asbi_pj_parse(r.body, strlen(r.body), NULL) : NULL;
    const char *msg = NULL;
    if (j) asbi_pj_get_str(j, "message", &msg);
    snprintf(err, errlen, "built-in template %s (%s) failed to build: %s", name, dir,
             msg ? msg : (r.body ? r.body : "no reply"));
    asbi_log("%s", err);
    cJSON_Delete(j);
    rc = -1;
  }
  free(r.body);
  nbusy--;
  pthread_mutex_unlock(&bundled_mu);
  return rc;
}

/* ---- listing templates that are not built yet ------------------------------------ */

cJSON *bundled_waiting_json(engine *e, const char *name) {
  if (!e->templates_dir || !name || !valid_name(name)) return NULL;
  char yaml[4500];
  snprintf(yaml, sizeof yaml, "%s/%s/template.yaml", e->templates_dir, name);
  struct stat st;
  int fd = open(yaml, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return NULL;
  }
  cJSON *spec = NULL;
  char why[1024] = "";
  if (st.st_size > (off_t)ASBI_TMPL_MAX_BYTES) {
    snprintf(why, sizeof why, "%s: larger than %u bytes", yaml, ASBI_TMPL_MAX_BYTES);
  } else {
    char *text = malloc((size_t)st.st_size + 1);
    ssize_t got = text ? read(fd, text, (size_t)st.st_size) : -1;
    asbi_tmpl_error te;
    if (got != (ssize_t)st.st_size)
      snprintf(why, sizeof why, "%s: cannot read it", yaml);
    else if (!(spec = asbi_tmpl_parse(text, (size_t)got, &te)))
      asbi_tmpl_format_error(&te, yaml, why, sizeof why);
    free(text);
  }
  close(fd);
  /* The Template object of a built one (build.c), from what template.yaml
   * says, then marked as not built. */
  const cJSON *res = cJSON_GetObjectItemCaseSensitive(spec, "resources");
  int32_t cpu = 0, mem = 0, disk = 0;
  asbi_pj_get_i32(res, "cpu", &cpu);
  asbi_pj_get_i32(res, "memoryMB", &mem);
  asbi_pj_get_i32(res, "diskMB", &disk);
  template_info t = {.id = (char *)name, .alias = (char *)name, .build_id = "", .hash = "",
                     .builtin = 1, .spec = spec, .cpu_count = cpu, .memory_mb = mem,
                     .disk_mb = disk,
                     .created_ms = (int64_t)st.st_mtim.tv_sec * 1000 +
                                   st.st_mtim.tv_nsec / 1000000};
  cJSON *j = template_json(e, &t);
  cJSON_ReplaceItemInObjectCaseSensitive(j, "buildID", cJSON_CreateString(""));
  cJSON_ReplaceItemInObjectCaseSensitive(j, "buildCount", cJSON_CreateNumber(0));
  cJSON_ReplaceItemInObjectCaseSensitive(j, "buildStatus",
                                         cJSON_CreateString(spec ? "waiting" : "error"));
  if (!spec) cJSON_AddStringToObject(j, "buildError", why);
  cJSON_Delete(spec);
  return j;
}

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

void bundled_list_waiting(engine *e, cJSON *arr) {
  DIR *d = e->templates_dir ? opendir(e->templates_dir) : NULL;
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || !valid_name(de->d_name) || listed(arr, de->d_name)) continue;
    cJSON *j = bundled_waiting_json(e, de->d_name);
    if (j) cJSON_AddItemToArray(arr, j);
  }
  closedir(d);
}
