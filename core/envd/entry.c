/* envd: E2B's EntryInfo (name, type, path, size, mode, permissions, owner,
 * group, modified time, symlink target, user.e2b.* metadata) and EnsureDirs,
 * shared by the filesystem service, the watchers and /files. Run with the
 * requesting user's filesystem credentials.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "entry.h"
#include "path.h"
#include "proto/pjson.h"
#include "util/util.h"

#define XATTR_PREFIX "user.e2b."

/* Go's os.FileMode.String(). */
static void go_mode_string(mode_t m, char *out) {
  int w = 0;
  if (S_ISDIR(m)) out[w++] = 'd';
  if (S_ISLNK(m)) out[w++] = 'L';
  if (S_ISBLK(m) || S_ISCHR(m)) out[w++] = 'D';
  if (S_ISFIFO(m)) out[w++] = 'p';
  if (S_ISSOCK(m)) out[w++] = 'S';
  if (m & S_ISUID) out[w++] = 'u';
  if (m & S_ISGID) out[w++] = 'g';
  if (S_ISCHR(m)) out[w++] = 'c';
  if (m & S_ISVTX) out[w++] = 't';
  if (w == 0) out[w++] = '-';
  const char *rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; i++) out[w++] = (m & (1u << (8 - i))) ? rwx[i] : '-';
  out[w] = '\0';
}

/* protobuf Timestamp JSON: RFC 3339, UTC, 0/3/6/9 fraction digits. */
static void pb_time(const struct timespec *ts, char *out, size_t n) {
  struct tm tm;
  time_t s = ts->tv_sec;
  gmtime_r(&s, &tm);
  int w = (int)strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
  long ns = ts->tv_nsec;
  if (ns) {
    if (ns % 1000000 == 0)
      w += snprintf(out + w, n - (size_t)w, ".%03ld", ns / 1000000);
    else if (ns % 1000 == 0)
      w += snprintf(out + w, n - (size_t)w, ".%06ld", ns / 1000);
    else
      w += snprintf(out + w, n - (size_t)w, ".%09ld", ns);
  }
  snprintf(out + w, n - (size_t)w, "Z");
}

static const char *base_name(const char *p, char *buf, size_t n) {
  size_t l = strlen(p);
  while (l > 1 && p[l - 1] == '/') l--;
  size_t s = l;
  while (s > 0 && p[s - 1] != '/') s--;
  if (l == 0) return ".";
  if (l - s == 0) return "/";
  snprintf(buf, n, "%.*s", (int)(l - s), p + s);
  return buf;
}

static int entry_type(mode_t m) {
  if (S_ISREG(m)) return 1;
  if (S_ISDIR(m)) return 2;
  if (S_ISLNK(m)) return 3;
  return 0;
}

static cJSON *read_metadata(const char *path) {
  char names[8192];
  ssize_t n = listxattr(path, names, sizeof names);
  if (n <= 0) return NULL;
  cJSON *md = NULL;
  for (ssize_t i = 0; i < n;) {
    const char *nm = names + i;
    size_t l = strlen(nm);
    i += (ssize_t)l + 1;
    if (strncmp(nm, XATTR_PREFIX, sizeof XATTR_PREFIX - 1) != 0) continue;
    char val[4097];
    ssize_t vl = getxattr(path, nm, val, sizeof val - 1);
    if (vl < 0) continue;
    val[vl] = '\0';
    const char *key = nm + sizeof XATTR_PREFIX - 1;
    if (!asbi_utf8_valid(key, strlen(key)) || !asbi_utf8_valid(val, (size_t)vl) ||
        memchr(val, 0, (size_t)vl))
      continue;
    if (!md) md = cJSON_CreateObject();
    cJSON_AddStringToObject(md, key, val);
  }
  return md;
}

cJSON *envd_entry_from_stat(const char *path, const struct stat *ls) {
  static const asbi_pj_enum types[] = {{0, "FILE_TYPE_UNSPECIFIED"},
                                       {1, "FILE_TYPE_FILE"},
                                       {2, "FILE_TYPE_DIRECTORY"},
                                       {3, "FILE_TYPE_SYMLINK"},
                                       {0, NULL}};
  char namebuf[256], perm[32], owner[64], group[64], mt[64];
  int type = 0;
  mode_t mode = 0;
  char *target = NULL;
  if (S_ISLNK(ls->st_mode)) {
    target = realpath(path, NULL);
    if (!target) target = asbi_strdup(path);
    struct stat ts;
    if (stat(target, &ts) == 0) {
      type = entry_type(ts.st_mode);
      mode = ts.st_mode & 0777;
    }
  } else {
    type = entry_type(ls->st_mode);
    mode = ls->st_mode & 0777;
  }
  go_mode_string(ls->st_mode, perm);
  envd_uid_name(ls->st_uid, owner, sizeof owner);
  envd_gid_name(ls->st_gid, group, sizeof group);
  pb_time(&ls->st_mtim, mt, sizeof mt);
  cJSON *o = cJSON_CreateObject();
  asbi_pj_add_str(o, "name", base_name(path, namebuf, sizeof namebuf));
  asbi_pj_add_enum(o, "type", types, type);
  asbi_pj_add_str(o, "path", path);
  asbi_pj_add_i64(o, "size", (int64_t)ls->st_size);
  asbi_pj_add_u32(o, "mode", (uint32_t)mode);
  asbi_pj_add_str(o, "permissions", perm);
  asbi_pj_add_str(o, "owner", owner);
  asbi_pj_add_str(o, "group", group);
  if (ls->st_mtim.tv_sec || ls->st_mtim.tv_nsec) asbi_pj_add_str(o, "modifiedTime", mt);
  if (target) cJSON_AddStringToObject(o, "symlinkTarget", target);
  free(target);
  cJSON *md = read_metadata(path);
  if (md) cJSON_AddItemToObject(o, "metadata", md);
  return o;
}

cJSON *envd_entry_info(const char *path, envd_err *e) {
  struct stat ls;
  if (lstat(path, &ls) != 0) {
    char m[128];
    int err = errno;
    envd_errno_text(err, m, sizeof m);
    if (err == ENOENT)
      envd_err_set(e, "not_found", "file not found: lstat %s: %s", path, m);
    else
      envd_err_set(e, envd_errno_code(err), "error getting file info: lstat %s: %s", path, m);
    return NULL;
  }
  return envd_entry_from_stat(path, &ls);
}

int envd_mkdirs(const char *path) {
  char *p = envd_path_clean(path);
  if (!p) return -1;
  size_t n = strlen(p);
  for (size_t i = 1; i <= n; i++) {
    if (i != n && p[i] != '/') continue;
    char save = p[i];
    p[i] = '\0';
    struct stat st;
    if (stat(p, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        free(p);
        errno = ENOTDIR;
        return -1;
      }
    } else if (errno != ENOENT) {
      free(p);
      return -1;
    } else if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      free(p);
      return -1;
    }
    p[i] = save;
  }
  free(p);
  return 0;
}

/* ---- E2B's writes: as root, then chown to the user ------------------------
 * E2B's envd runs as root and does every write as root: EnsureDirs makes
 * each missing directory (0755) and chowns it to the user, the upload
 * opens the file (O_CREAT) and chowns it, new or existing, to the user.
 * These do the same on the calling thread, which must run with envd's own
 * (root) credentials, not the user's. Every name is resolved with
 * RESOLVE_NO_MAGICLINKS: ordinary symlinks are followed as E2B follows them,
 * but never /proc's fd/, cwd, root or exe links, which would let a request
 * write through a descriptor envd (or another process) holds. Created
 * directories are chowned through their own descriptor (opened O_NOFOLLOW
 * relative to the parent's), never by path. */
static int open_nomagic(int dfd, const char *path, int flags, mode_t mode) {
  return asbi_openat2(dfd, path, flags, (unsigned)mode, RESOLVE_NO_MAGICLINKS);
}

/* A non-root envd can only give files to itself. */
static int may_chown_to(const envd_user *u) {
  uid_t me = geteuid();
  if (me == 0 || u->uid == me) return 0;
  errno = EPERM;
  return -1;
}

int envd_mkdirs_owned(const char *path, const envd_user *u) {
  if (may_chown_to(u) != 0) return -1;
  char *p = envd_path_clean(path);
  if (!p) return -1;
  if (p[0] != '/') {
    free(p);
    errno = EINVAL;
    return -1;
  }
  size_t n = strlen(p);
  int rc = 0;
  for (size_t i = 1; i <= n && rc == 0; i++) {
    if (i != n && p[i] != '/') continue;
    char save = p[i];
    p[i] = '\0';
    int fd = open_nomagic(AT_FDCWD, p, O_PATH | O_DIRECTORY, 0);
    if (fd >= 0) {
      close(fd);
    } else if (errno != ENOENT) {
      rc = -1; /* ENOTDIR: a file on the way */
    } else {
      /* missing: make it in its parent (opened the same way) */
      char *slash = strrchr(p, '/');
      char *name = slash + 1;
      int pfd;
      if (slash == p) {
        pfd = open_nomagic(AT_FDCWD, "/", O_PATH | O_DIRECTORY, 0);
      } else {
        *slash = '\0';
        pfd = open_nomagic(AT_FDCWD, p, O_PATH | O_DIRECTORY, 0);
        *slash = '/';
      }
      if (pfd < 0) {
        rc = -1;
      } else {
        if (mkdirat(pfd, name, 0755) != 0 && errno != EEXIST) {
          rc = -1;
        } else {
          /* chowned also when another request made it first (EEXIST), as
           * E2B does: its maker may not have chowned it yet */
          int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (dfd < 0 || fchown(dfd, u->uid, u->gid) != 0) rc = -1;
          if (dfd >= 0) {
            int e = errno;
            close(dfd);
            errno = e;
          }
        }
        int e = errno;
        close(pfd);
        errno = e;
      }
    }
    p[i] = save;
  }
  free(p);
  return rc;
}

int envd_open_owned(const char *path, const envd_user *u) {
  if (may_chown_to(u) != 0) return -1;
  int fd = open_nomagic(AT_FDCWD, path, O_WRONLY | O_CREAT, 0666);
  if (fd < 0) return -1;
  /* new or existing, the file becomes the user's (E2B chowns both) */
  if (fchown(fd, u->uid, u->gid) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}
