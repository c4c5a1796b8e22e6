/* envd: the filesystem service (filesystem.Filesystem): Stat, ListDir,
 * MakeDir, Move and Remove (EntryInfo is entry.c). Every call but MakeDir
 * runs with the requesting user's filesystem credentials (dispatch.c enters
 * them), so the kernel enforces that user's permissions on every path
 * component. MakeDir is E2B's: as root, the directories it makes chowned to
 * the user (entry.c).
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "entry.h"
#include "fs.h"
#include "path.h"
#include "proto/pjson.h"
#include "util/util.h"

static char *req_path(const envd_call *c, const cJSON *req, const char *field, envd_err *e) {
  const char *path = NULL;
  if (asbi_pj_get_str(req, field, &path) != 0) {
    envd_err_set(e, "invalid_argument", "%s must be a string", field);
    return NULL;
  }
  const char *perr = NULL;
  char *r = envd_resolve_path(path ? path : "", c->user, &perr);
  if (!r)
    envd_err_set(e, "invalid_argument", "failed to expand path '%s' for user '%s': %s",
                 path ? path : "", c->user->name, perr);
  return r;
}

static void errno_err(envd_err *e, const char *what, const char *path, int err) {
  char m[128];
  envd_errno_text(err, m, sizeof m);
  envd_err_set(e, envd_errno_code(err), "%s: %s: %s", what, path, m);
}

/* ---- Stat -------------------------------------------------------------- */
static int stat_fn(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  char *path = req_path(c, req, "path", e);
  if (!path) return -1;
  cJSON *ent = envd_entry_info(path, e);
  free(path);
  if (!ent) return -1;
  *resp = cJSON_CreateObject();
  cJSON_AddItemToObject(*resp, "entry", ent);
  return 0;
}

/* ---- ListDir ----------------------------------------------------------- */
static int name_cmp(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static int not_dots(const struct dirent *d) {
  return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

/* Go's filepath.WalkDir, lexical order, to depth; unreadable
 * subdirectories are skipped. */
static void walk(const char *real, const char *shown, unsigned depth, unsigned cur, cJSON *arr) {
  struct dirent **list = NULL;
  int n = scandir(real, &list, not_dots, name_cmp);
  if (n < 0) return;
  for (int i = 0; i < n; i++) {
    char *rp = envd_path_join(real, list[i]->d_name);
    char *sp = envd_path_join(shown, list[i]->d_name);
    struct stat ls;
    if (rp && sp && lstat(rp, &ls) == 0) {
      cJSON *ent = envd_entry_from_stat(rp, &ls);
      cJSON_ReplaceItemInObject(ent, "path", cJSON_CreateString(sp));
      cJSON_AddItemToArray(arr, ent);
      /* Bounded so a hostile, deeply nested tree cannot exhaust the
       * thread's stack. */
      if (S_ISDIR(ls.st_mode) && cur < depth && cur < 1024) walk(rp, sp, depth, cur + 1, arr);
    }
    free(rp);
    free(sp);
    free(list[i]);
  }
  free(list);
}

static int list_fn(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  uint32_t depth = 0;
  if (asbi_pj_get_u32(req, "depth", &depth) != 0) {
    envd_err_set(e, "invalid_argument", "depth must be a non-negative integer");
    return -1;
  }
  if (depth == 0) depth = 1;
  char *path = req_path(c, req, "path", e);
  if (!path) return -1;
  char *real = realpath(path, NULL);
  if (!real) {
    int err = errno;
    char m[128];
    envd_errno_text(err, m, sizeof m);
    if (err == ENOENT)
      envd_err_set(e, "not_found", "path not found: lstat %s: %s", path, m);
    else if (err == ELOOP)
      envd_err_set(e, "failed_precondition", "cyclic symlink or chain >255 links at \"%s\"", path);
    else
      envd_err_set(e, envd_errno_code(err), "error resolving symlink: %s: %s", path, m);
    free(path);
    return -1;
  }
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (errno == ENOENT)
      envd_err_set(e, "not_found", "directory not found: %s", real);
    else
      envd_err_set(e, "invalid_argument", "path is not a directory: %s", real);
    free(real);
    free(path);
    return -1;
  }
  DIR *probe = opendir(real);
  if (!probe) {
    errno_err(e, "error reading directory", real, errno);
    free(real);
    free(path);
    return -1;
  }
  closedir(probe);
  cJSON *arr = cJSON_CreateArray();
  walk(real, path, depth, 1, arr);
  free(real);
  free(path);
  *resp = cJSON_CreateObject();
  if (cJSON_GetArraySize(arr))
    cJSON_AddItemToObject(*resp, "entries", arr);
  else
    cJSON_Delete(arr);
  return 0;
}

/* ---- MakeDir ----------------------------------------------------------- */
static int mkdir_fn(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  char *path = req_path(c, req, "path", e);
  if (!path) return -1;
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      envd_err_set(e, "already_exists", "directory already exists: %s", path);
    else
      envd_err_set(e, "invalid_argument", "path already exists but it is not a directory: %s",
                   path);
    free(path);
    return -1;
  }
  if (errno != ENOENT) {
    errno_err(e, "error getting file info", path, errno);
    free(path);
    return -1;
  }
  if (envd_mkdirs_owned(path, c->user) != 0) {
    errno_err(e, "failed to create directory", path, errno);
    free(path);
    return -1;
  }
  cJSON *ent = envd_entry_info(path, e);
  free(path);
  if (!ent) return -1;
  *resp = cJSON_CreateObject();
  cJSON_AddItemToObject(*resp, "entry", ent);
  return 0;
}

/* ---- Move -------------------------------------------------------------- */
static int move_fn(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  char *src = req_path(c, req, "source", e);
  if (!src) return -1;
  char *dst = req_path(c, req, "destination", e);
  if (!dst) {
    free(src);
    return -1;
  }
  int rc = -1;
  char *parent = envd_path_join(dst, "..");
  if (envd_mkdirs(parent) != 0) {
    errno_err(e, "error ensuring directories", parent, errno);
  } else if (rename(src, dst) != 0) {
    int err = errno;
    char m[128];
    envd_errno_text(err, m, sizeof m);
    if (err == ENOENT)
      envd_err_set(e, "not_found", "source file not found: rename %s %s: %s", src, dst, m);
    else
      envd_err_set(e, envd_errno_code(err), "error renaming: rename %s %s: %s", src, dst, m);
  } else {
    cJSON *ent = envd_entry_info(dst, e);
    if (ent) {
      *resp = cJSON_CreateObject();
      cJSON_AddItemToObject(*resp, "entry", ent);
      rc = 0;
    }
  }
  free(parent);
  free(src);
  free(dst);
  return rc;
}

/* ---- Remove (Go's os.RemoveAll; never follows symlinks) ----------------- */
static int rm_at(int dfd, const char *name, int depth) {
  if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT) return 0;
  if (errno != EISDIR && errno != EPERM) return -1;
  if (depth > 2048) {
    errno = ELOOP;
    return -1;
  }
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return -1;
  }
  struct dirent *de;
  int rc = 0, saved = 0;
  while ((de = readdir(d)) != NULL) {
    if (!not_dots(de)) continue;
    if (rm_at(fd, de->d_name, depth + 1) != 0 && !saved) {
      saved = errno;
      rc = -1;
    }
  }
  closedir(d);
  if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return 0;
  if (rc && saved) errno = saved;
  return -1;
}

static int remove_fn(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  char *path = req_path(c, req, "path", e);
  if (!path) return -1;
  int rc = rm_at(AT_FDCWD, path, 0);
  if (rc != 0) errno_err(e, "error removing file or directory", path, errno);
  free(path);
  if (rc == 0) *resp = cJSON_CreateObject();
  return rc;
}

const envd_method envd_fs_methods[] = {
    {"/filesystem.Filesystem/Stat", ENVD_UNARY, stat_fn, NULL, NULL, 1},
    {"/filesystem.Filesystem/ListDir", ENVD_UNARY, list_fn, NULL, NULL, 1},
    {"/filesystem.Filesystem/MakeDir", ENVD_UNARY, mkdir_fn, NULL, NULL, 0},
    {"/filesystem.Filesystem/Move", ENVD_UNARY, move_fn, NULL, NULL, 1},
    {"/filesystem.Filesystem/Remove", ENVD_UNARY, remove_fn, NULL, NULL, 1},
    {NULL, 0, NULL, NULL, NULL, 0}};
