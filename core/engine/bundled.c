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
#include "engine.h"
#include "proto/pjson.h"
#include "proto/tar.h"
#include "util/buf.h"
#include "util/util.h"

#define BUNDLE_MAX (64u << 20)
#define MAX_DEPTH 32

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

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_file(const char *path, asbi_buf *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -errno;
  char chunk[65536];
  ssize_t n;
  int rc = 0;
  while ((n = read(fd, chunk, sizeof chunk)) > 0)
    if (out->len + (size_t)n > BUNDLE_MAX || asbi_buf_append(out, chunk, (size_t)n)) {
      rc = -EFBIG;
      break;
    }
  if (n < 0 && !rc) rc = -errno;
  close(fd);
  return rc;
}

/* Packs root/<rel> and everything under it, names sorted (as the client's
 * asb_templates_build does: the same directory hashes the same). */
static int pack(const char *root, const char *rel, asbi_buf *tar, int depth) {
  if (depth > MAX_DEPTH) return -ELOOP;
  char path[8192];
  snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
  DIR *d = opendir(path);
  if (!d) return -errno;
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      char **v = realloc(names, cap * sizeof *v);
      if (!v) {
        rc = -ENOMEM;
        break;
      }
      names = v;
    }
    if (!(names[n] = asbi_strdup(de->d_name))) {
      rc = -ENOMEM;
      break;
    }
    n++;
  }
  closedir(d);
  if (!rc && n) qsort(names, n, sizeof *names, cmp_str);
  asbi_buf data = ASBI_BUF_INIT;
  for (size_t i = 0; !rc && i < n; i++) {
    char child[8192], full[16400];
    snprintf(child, sizeof child, "%s%s%s", rel, *rel ? "/" : "", names[i]);
    snprintf(full, sizeof full, "%s/%s", root, child);
    struct stat st;
    if (lstat(full, &st) != 0) {
      rc = -errno;
      break;
    }
    int t = 0;
    if (S_ISDIR(st.st_mode)) {
      t = asbi_tar_add(tar, child, ASBI_TAR_DIR, st.st_mode & 07777, NULL, 0, NULL);
      if (!t) rc = pack(root, child, tar, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      asbi_buf_clear(&data);
      rc = read_file(full, &data);
      if (!rc)
        t = asbi_tar_add(tar, child, ASBI_TAR_FILE, st.st_mode & 07777, data.data, data.len,
                         NULL);
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t k = readlink(full, target, sizeof target - 1);
      if (k < 0) {
        rc = -errno;
        break;
      }
      target[k] = '\0';
      t = asbi_tar_add(tar, child, ASBI_TAR_SYMLINK, 0777, NULL, 0, target);
    }
    if (!rc && t) rc = t == -2 ? -ENAMETOOLONG : -ENOMEM;
  }
  asbi_buf_free(&data);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return rc;
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
  int rc = pack(dir, "", &tar, 0);
  if (!rc && asbi_tar_finish(&tar)) rc = -ENOMEM;
  if (rc) {
    snprintf(err, errlen, "built-in template %s: cannot read %s: %s", name, dir, strerror(-rc));
    engine_log("%s", err);
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
  int64_t t0 = now_unix_ms();
  build_handle(e, &q, &r);
  api_req_free(&q);
  asbi_buf_free(&tar);
  if (r.status == 200 || r.status == 201) {
    engine_log("built-in template %s: %s from %s in %lld ms", name,
               r.status == 200 ? "cached build" : "built", dir,
               (long long)(now_unix_ms() - t0));
    asbi_buf_append(&done, name, strlen(name) + 1);
    rc = 0;
  } else {
    cJSON *j = r.body ? asbi_pj_parse(r.body, strlen(r.body), NULL) : NULL;
    const char *msg = NULL;
    if (j) asbi_pj_get_str(j, "message", &msg);
    snprintf(err, errlen, "built-in template %s (%s) failed to build: %s", name, dir,
             msg ? msg : (r.body ? r.body : "no reply"));
    engine_log("%s", err);
    cJSON_Delete(j);
    rc = -1;
  }
  free(r.body);
  nbusy--;
  pthread_mutex_unlock(&bundled_mu);
  return rc;
}
