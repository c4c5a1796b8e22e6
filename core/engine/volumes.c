/* Volumes: E2B's /volumes API (openapi.yml `/volumes`), its volume content
 * API (the js-sdk's `Volume` file calls, /volumecontent/{id}/...) and the
 * volumes of a create's volumeMounts.
 *
 *   POST   /volumes            {name, sizeMB?}: 201 {volumeID, name, token}
 *   GET    /volumes            [{volumeID, name, sizeMB}]
 *   GET    /volumes/{id|name}  {volumeID, name, token, sizeMB}
 *   DELETE /volumes/{id|name}  204; 409 while a sandbox has it mounted
 *
 *   (Authorization: Bearer <the volume's token>)
 *   GET    /volumecontent/{id}/dir?path=&depth=     [VolumeEntryStat]
 *   POST   /volumecontent/{id}/dir?path=&uid=&gid=&mode=&force=  201 stat
 *   GET    /volumecontent/{id}/file?path=           the bytes
 *   PUT    /volumecontent/{id}/file?path=&uid=&gid=&mode=&force= 201 stat
 *   GET    /volumecontent/{id}/path?path=           stat
 *   PATCH  /volumecontent/{id}/path?path=  {uid?, gid?, mode?}   stat
 *   DELETE /volumecontent/{id}/path?path=           204 (recursive)
 *
 * A volume is <state>/volumes/<id>/{volume.json, disk.img}: an ext4 image of
 * the size asked for (its quota: ENOSPC, 507, when full) that iso mounts
 * detached (asbe_volume_open), one superblock for every sandbox and for the
 * content API. The engine opens it on first use and keeps the mount fd.
 *
 * Paths inside a volume are never resolved as host paths: every operation
 * starts from the volume's mount fd, resolves the parent with openat2
 * RESOLVE_IN_ROOT (a symlink a sandbox planted resolves inside the volume,
 * ".." stops at its root, no magic links, no other mount) and acts on the
 * last component with *at() calls and O_NOFOLLOW.
 * SPDX-License-Identifier: Apache-2.0 */
#include "volumes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "apiio.h"
#include "httpd/httpd.h"
#include "iso/iso.h"
#include "registry.h"
#include "util/log.h"
#include "util/util.h"
#include "volpath.h"

#define NAME_MAX_LEN 63
#define ID_LEN 20
#define DEFAULT_MB 1024
#define MIN_MB 16
#define MAX_MB (1024 * 1024)
#define TREE_DEPTH_MAX 64 /* recursive list and delete */
#define LIST_MAX 100000   /* entries in one dir listing */

typedef struct volume {
  char id[ID_LEN + 1];
  char name[NAME_MAX_LEN + 1];
  char token[41];
  int64_t size_mb;
  int mfd;  /* the volume's filesystem (detached mount), -1 until first use */
  int refs; /* content operations in flight */
  struct volume *next;
} volume;

struct engine_volumes {
  pthread_mutex_t mu;
  char *dir; /* <state>/volumes */
  volume *head;
};

/* ---- the store ----------------------------------------------------------------- */

static int valid_name(const char *n) {
  size_t l = strlen(n);
  if (l < 1 || l > NAME_MAX_LEN) return 0;
  for (size_t i = 0; i < l; i++) {
    char c = n[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return 0;
  }
  return 1;
}

static void vol_path(const struct engine_volumes *vs, const volume *v, const char *f, char *buf,
                     size_t len) {
  snprintf(buf, len, "%s/%s%s%s", vs->dir, v->id, f ? "/" : "", f ? f : "");
}

static int save_meta(const struct engine_volumes *vs, const volume *v) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "volumeID", v->id);
  cJSON_AddStringToObject(j, "name", v->name);
  cJSON_AddStringToObject(j, "token", v->token);
  cJSON_AddNumberToObject(j, "sizeMB", (double)v->size_mb);
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  if (!s) return -ENOMEM;
  char tmp[4200], dst[4200];
  vol_path(vs, v, "volume.json.tmp", tmp, sizeof tmp);
  vol_path(vs, v, "volume.json", dst, sizeof dst);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  size_t n = strlen(s);
  int r = fd >= 0 && write(fd, s, n) == (ssize_t)n && fsync(fd) == 0 ? 0 : -errno;
  if (fd >= 0) close(fd);
  free(s);
  if (r == 0 && rename(tmp, dst) != 0) r = -errno;
  return r;
}

static volume *load_meta(const char *dir, const char *id) {
  char p[4200];
  snprintf(p, sizeof p, "%s/%s/volume.json", dir, id);
  int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return NULL;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return NULL;
  buf[n] = '\0';
  cJSON *j = cJSON_Parse(buf);
  const cJSON *vid = cJSON_GetObjectItemCaseSensitive(j, "volumeID"),
              *nm = cJSON_GetObjectItemCaseSensitive(j, "name"),
              *tk = cJSON_GetObjectItemCaseSensitive(j, "token"),
              *sz = cJSON_GetObjectItemCaseSensitive(j, "sizeMB");
  volume *v = NULL;
  if (cJSON_IsString(vid) && !strcmp(vid->valuestring, id) && cJSON_IsString(nm) &&
      valid_name(nm->valuestring) && cJSON_IsString(tk) && strlen(tk->valuestring) == 40 &&
      cJSON_IsNumber(sz) && (v = calloc(1, sizeof *v))) {
    snprintf(v->id, sizeof v->id, "%s", id);
    snprintf(v->name, sizeof v->name, "%s", nm->valuestring);
    snprintf(v->token, sizeof v->token, "%s", tk->valuestring);
    v->size_mb = (int64_t)sz->valuedouble;
    v->mfd = -1;
  }
  cJSON_Delete(j);
  return v;
}

int volumes_open(engine *e) {
  struct engine_volumes *vs = calloc(1, sizeof *vs);
  if (!vs) return -ENOMEM;
  pthread_mutex_init(&vs->mu, NULL);
  char d[4200];
  snprintf(d, sizeof d, "%s/volumes", e->state_dir);
  vs->dir = asbi_strdup(d);
  if (!vs->dir || (mkdir(d, 0700) != 0 && errno != EEXIST)) {
    int r = -errno;
    free(vs->dir);
    free(vs);
    return r ? r : -ENOMEM;
  }
  DIR *dd = opendir(d);
  struct dirent *de;
  while (dd && (de = readdir(dd))) {
    if (de->d_name[0] == '.') continue;
    volume *v = load_meta(d, de->d_name);
    if (!v) {
      /* a create that did not finish (no volume.json yet): not a volume */
      asbi_log("volumes: %s/%s is no volume; left alone", d, de->d_name);
      continue;
    }
    v->next = vs->head;
    vs->head = v;
  }
  if (dd) closedir(dd);
  e->volumes = vs;
  return 0;
}

void volumes_close(engine *e) {
  struct engine_volumes *vs = e->volumes;
  if (!vs) return;
  for (volume *v = vs->head, *nx; v; v = nx) {
    nx = v->next;
    if (v->mfd >= 0) close(v->mfd);
    free(v);
  }
  pthread_mutex_destroy(&vs->mu);
  free(vs->dir);
  free(vs);
  e->volumes = NULL;
}

/* By id or name; under vs->mu. */
static volume *find(struct engine_volumes *vs, const char *key) {
  for (volume *v = vs->head; v; v = v->next)
    if (!strcmp(v->id, key) || !strcmp(v->name, key)) return v;
  return NULL;
}

/* The volume's mount fd, opened on first use; under vs->mu. */
static int vol_mfd(struct engine_volumes *vs, volume *v, char *why, size_t len) {
  if (v->mfd >= 0) return v->mfd;
  char img[4200];
  vol_path(vs, v, "disk.img", img, sizeof img);
  int m = -1;
  if (asbe_volume_open(img, 0, 0, &m)) {
    snprintf(why, len, "cannot mount volume %s: %s", v->name, asbe_errmsg());
    return -1;
  }
  v->mfd = m;
  return m;
}

static cJSON *vol_json(const volume *v, int with_token) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "volumeID", v->id);
  cJSON_AddStringToObject(j, "name", v->name);
  if (with_token) cJSON_AddStringToObject(j, "token", v->token);
  cJSON_AddNumberToObject(j, "sizeMB", (double)v->size_mb);
  return j;
}

/* Removes <state>/volumes/<id> (its two files and the dir). */
static void remove_files(struct engine_volumes *vs, const volume *v) {
  static const char *const files[] = {"disk.img", "disk.img.new", "volume.json", "volume.json.tmp"};
  char p[4200];
  for (size_t i = 0; i < ASBI_ARRAY_LEN(files); i++) {
    vol_path(vs, v, files[i], p, sizeof p);
    unlink(p);
  }
  vol_path(vs, v, NULL, p, sizeof p);
  rmdir(p);
}

static void create_volume(struct engine_volumes *vs, api_req *q, api_reply *r) {
  cJSON *b = q->body_len ? cJSON_ParseWithLength(q->body, q->body_len) : NULL;
  if (!cJSON_IsObject(b)) {
    cJSON_Delete(b);
    return api_error(r, 400, "the body must be a JSON object {\"name\": ...}");
  }
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(b, "name"),
              *sz = cJSON_GetObjectItemCaseSensitive(b, "sizeMB");
  int64_t mb = DEFAULT_MB;
  if (!cJSON_IsString(nm) || !valid_name(nm->valuestring)) {
    cJSON_Delete(b);
    return api_error(r, 400, "'name' must match ^[a-zA-Z0-9_-]+$ (1..%d characters)", NAME_MAX_LEN);
  }
  if (sz && !cJSON_IsNull(sz)) {
    if (!cJSON_IsNumber(sz) || sz->valuedouble != (double)(int64_t)sz->valuedouble ||
        sz->valuedouble < MIN_MB || sz->valuedouble > MAX_MB) {
      cJSON_Delete(b);
      return api_error(r, 400, "'sizeMB' must be a whole number of MiB in %d..%d", MIN_MB, MAX_MB);
    }
    mb = (int64_t)sz->valuedouble;
  }
  volume *v = calloc(1, sizeof *v);
  if (!v) {
    cJSON_Delete(b);
    return api_error(r, 500, "out of memory");
  }
  snprintf(v->name, sizeof v->name, "%s", nm->valuestring);
  cJSON_Delete(b);
  v->size_mb = mb;
  v->mfd = -1;
  if (asbi_random_alnum(v->id, ID_LEN) || asbi_random_hex(v->token, 40)) {
    free(v);
    return api_error(r, 500, "no randomness available");
  }
  pthread_mutex_lock(&vs->mu);
  if (find(vs, v->name)) {
    pthread_mutex_unlock(&vs->mu);
    api_error(r, 409, "a volume named \"%s\" exists", v->name);
    free(v);
    return;
  }
  /* Under the lock: names are unique. mkfs of a sparse image is quick
   * (lazy inode tables and journal). */
  char d[4200], img[4200];
  vol_path(vs, v, NULL, d, sizeof d);
  vol_path(vs, v, "disk.img", img, sizeof img);
  int m = -1, rc = mkdir(d, 0700) == 0 ? 0 : -errno;
  if (rc) {
    api_error(r, 500, "cannot make %s: %s", d, strerror(-rc));
  } else if (asbe_volume_open(img, (uint64_t)mb << 20, 1, &m)) {
    api_error(r, 500, "cannot make the volume's filesystem: %s", asbe_errmsg());
    rc = -1;
  } else if ((rc = save_meta(vs, v))) {
    api_error(r, 500, "cannot record the volume: %s", strerror(-rc));
    close(m);
  }
  if (rc) {
    remove_files(vs, v);
    pthread_mutex_unlock(&vs->mu);
    free(v);
    return;
  }
  v->mfd = m;
  v->next = vs->head;
  vs->head = v;
  api_reply_json(r, 201, vol_json(v, 1));
  pthread_mutex_unlock(&vs->mu);
}

/* Ids of the live sandboxes that have the volume name mounted, ", "-joined
 * into buf; 0 if none. */
static int mounted_by(engine *e, const char *name, char *buf, size_t len) {
  size_t n = 0, at = 0;
  int hits = 0;
  buf[0] = '\0';
  sbx **all = reg_list(e, &n);
  for (size_t i = 0; all && i < n; i++) {
    const cJSON *m;
    cJSON_ArrayForEach(m, all[i]->volume_mounts) {
      const cJSON *nm = cJSON_GetObjectItemCaseSensitive(m, "name");
      if (!cJSON_IsString(nm) || strcmp(nm->valuestring, name)) continue;
      if (at < len)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", hits ? ", " : "", all[i]->id);
      hits++;
      break;
    }
  }
  reg_put_all(e, all, n);
  return hits;
}

/* Whether the loop device of img is still held, waiting up to 5 s: the
 * kernel tears a killed sandbox's mount namespace down, and a loop device
 * its last mount released, asynchronously. */
static int still_busy(const char *img) {
  for (int i = 0; i < 100; i++) {
    if (!asbe_volume_busy(img)) return 0;
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return 1;
}

static void delete_volume(engine *e, struct engine_volumes *vs, const char *key, api_reply *r) {
  pthread_mutex_lock(&vs->mu);
  volume *v = find(vs, key), **pp;
  if (!v) {
    pthread_mutex_unlock(&vs->mu);
    return api_error(r, 404, "volume \"%s\" not found", key);
  }
  char ids[512];
  int n = mounted_by(e, v->name, ids, sizeof ids);
  if (n) {
    api_error(r, 409, "volume \"%s\" is mounted by %d running sandbox%s (%s): kill %s first",
              v->name, n, n > 1 ? "es" : "", ids, n > 1 ? "them" : "it");
    pthread_mutex_unlock(&vs->mu);
    return;
  }
  if (v->refs) {
    api_error(r, 409, "volume \"%s\" has requests in flight", v->name);
    pthread_mutex_unlock(&vs->mu);
    return;
  }
  if (v->mfd >= 0) close(v->mfd);
  v->mfd = -1;
  char img[4200];
  vol_path(vs, v, "disk.img", img, sizeof img);
  /* a sandbox this engine does not know (of an engine before it) */
  if (still_busy(img)) {
    api_error(r, 409, "volume \"%s\" is still mounted (by a sandbox of an earlier engine?)",
              v->name);
    pthread_mutex_unlock(&vs->mu);
    return;
  }
  for (pp = &vs->head; *pp != v; pp = &(*pp)->next) {
  }
  *pp = v->next;
  remove_files(vs, v);
  pthread_mutex_unlock(&vs->mu);
  free(v);
  r->status = 204;
}

int api_volumes_handle(engine *e, api_req *q, api_reply *r) {
  const char *p = q->path;
  if (strcmp(p, "/volumes") != 0 && !asbi_startswith(p, "/volumes/")) return 0;
  struct engine_volumes *vs = e->volumes;
  if (!vs) {
    api_error(r, 500, "the volume store is not open");
    return 1;
  }
  const char *id = p[8] == '/' ? p + 9 : NULL;
  if (id && (!*id || strchr(id, '/'))) {
    api_error(r, 404, "no such endpoint: %s %s", q->method, q->path);
    return 1;
  }
  int get = !strcmp(q->method, "GET"), post = !strcmp(q->method, "POST"),
      del = !strcmp(q->method, "DELETE");
  if (!id && get) {
    cJSON *a = cJSON_CreateArray();
    pthread_mutex_lock(&vs->mu);
    for (volume *v = vs->head; v; v = v->next) cJSON_AddItemToArray(a, vol_json(v, 0));
    pthread_mutex_unlock(&vs->mu);
    api_reply_json(r, 200, a);
  } else if (!id && post) {
    create_volume(vs, q, r);
  } else if (id && get) {
    pthread_mutex_lock(&vs->mu);
    volume *v = find(vs, id);
    if (v)
      api_reply_json(r, 200, vol_json(v, 1));
    else
      api_error(r, 404, "volume \"%s\" not found", id);
    pthread_mutex_unlock(&vs->mu);
  } else if (id && del) {
    delete_volume(e, vs, id, r);
  } else {
    api_error(r, 405, "%s is not allowed on %s", q->method, q->path);
  }
  return 1;
}

/* ---- paths inside a volume --------------------------------------------------------- */

static int openat2_in(int dirfd, const char *path, int flags) {
  return asbi_openat2(dirfd, path, flags, 0,
                      RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
}

/* The parent dir of norm (an O_PATH fd, resolved in the volume) and the
 * last component in *name ("" for the root: then the fd is the root). */
static int open_parent(int mfd, const char *norm, const char **name) {
  const char *slash = strrchr(norm, '/');
  *name = slash + 1;
  char parent[4200];
  size_t pl = (size_t)(slash - norm);
  if (!**name) return openat2_in(mfd, ".", O_PATH | O_DIRECTORY);
  memcpy(parent, norm, pl);
  parent[pl] = '\0';
  return openat2_in(mfd, pl ? parent + 1 : ".", O_PATH | O_DIRECTORY);
}

static const char *type_of(mode_t m) {
  return S_ISREG(m) ? "file" : S_ISDIR(m) ? "directory" : S_ISLNK(m) ? "symlink" : "unknown";
}

static void add_time(cJSON *j, const char *k, const struct timespec *t) {
  char ts[40];
  asbi_rfc3339(t->tv_sec, t->tv_nsec, ts);
  cJSON_AddStringToObject(j, k, ts);
}

/* VolumeEntryStat of name in dir (not followed). NULL if it is gone. */
static cJSON *stat_json(int dir, const char *name, const char *path) {
  struct stat st;
  if (fstatat(dir, *name ? name : "", &st, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH)) < 0)
    return NULL;
  cJSON *j = cJSON_CreateObject();
  const char *base = strrchr(path, '/');
  cJSON_AddStringToObject(j, "name", base && base[1] ? base + 1 : "/");
  cJSON_AddStringToObject(j, "type", type_of(st.st_mode));
  cJSON_AddStringToObject(j, "path", path);
  cJSON_AddNumberToObject(j, "size", (double)st.st_size);
  cJSON_AddNumberToObject(j, "mode", (double)(st.st_mode & 07777));
  cJSON_AddNumberToObject(j, "uid", (double)st.st_uid);
  cJSON_AddNumberToObject(j, "gid", (double)st.st_gid);
  add_time(j, "atime", &st.st_atim);
  add_time(j, "mtime", &st.st_mtim);
  add_time(j, "ctime", &st.st_ctim);
  if (S_ISLNK(st.st_mode)) {
    char t[4096];
    ssize_t n = readlinkat(dir, name, t, sizeof t - 1);
    if (n >= 0) {
      t[n] = '\0';
      cJSON_AddStringToObject(j, "target", t);
    }
  }
  return j;
}

/* Entries of the dir fd d (path its volume path), depth levels deep. */
static int list_dir(int d, const char *path, int depth, cJSON *out, size_t *count) {
  int fd = openat(d, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR *dd = fdopendir(fd);
  if (!dd) {
    close(fd);
    return -errno;
  }
  struct dirent *de;
  int r = 0;
  while (!r && (de = readdir(dd))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (++*count > LIST_MAX) {
      r = -E2BIG;
      break;
    }
    char child[4200];
    if ((size_t)snprintf(child, sizeof child, "%s%s%s", strcmp(path, "/") ? path : "", "/",
                         de->d_name) >= sizeof child)
      continue;
    cJSON *j = stat_json(d, de->d_name, child);
    if (!j) continue;
    int is_dir = !strcmp(cJSON_GetObjectItemCaseSensitive(j, "type")->valuestring, "directory");
    cJSON_AddItemToArray(out, j);
    if (is_dir && depth > 1) {
      int c = openat(d, de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (c >= 0) {
        r = list_dir(c, child, depth - 1, out, count);
        close(c);
      }
    }
  }
  closedir(dd);
  return r;
}

/* rm -r of name in dir, never following a symlink. */
static int remove_tree(int dir, const char *name, int depth) {
  if (unlinkat(dir, name, 0) == 0) return 0;
  if (errno != EISDIR && errno != EPERM) return -errno;
  if (depth > TREE_DEPTH_MAX) return -ELOOP;
  int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR *dd = fdopendir(fd);
  if (!dd) {
    close(fd);
    return -errno;
  }
  struct dirent *de;
  int r = 0;
  while (!r && (de = readdir(dd))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    /* entries not removed are still returned exactly once (POSIX) */
    r = remove_tree(dirfd(dd), de->d_name, depth + 1);
  }
  closedir(dd);
  if (!r && unlinkat(dir, name, AT_REMOVEDIR) < 0) r = -errno;
  return r;
}

/* ---- the content API ------------------------------------------------------------ */

static void vreply(vol_reply *r, int status, cJSON *body) {
  r->status = status;
  r->body = body ? cJSON_PrintUnformatted(body) : NULL;
  cJSON_Delete(body);
}

static void verror(vol_reply *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void verror(vol_reply *r, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cJSON *j = api_error_body(status, fmt, ap);
  va_end(ap);
  vreply(r, status, j);
}

/* errno of a path operation → status and reply */
static void verrno(vol_reply *r, int err, const char *path, const volume *v) {
  if (err == ENOENT || err == ENOTDIR) return verror(r, 404, "Path %s not found", path);
  if (err == EEXIST || err == ENOTEMPTY || err == EISDIR)
    return verror(r, 409, "Path %s already exists or is a directory", path);
  if (err == ENOSPC || err == EDQUOT)
    return verror(r, 507, "volume \"%s\" is full (its size is %lld MiB)", v->name,
                  (long long)v->size_mb);
  if (err == ELOOP) return verror(r, 409, "Path %s is a symlink", path);
  if (err == EXDEV) return verror(r, 400, "Path %s leaves the volume", path);
  verror(r, 500, "%s: %s", path, strerror(err));
}

/* An optional unsigned query value <= max; -1 absent, -2 invalid. */
static int64_t q_uint(api_req *q, const char *k, int64_t max) {
  const char *s = api_query(q, k);
  int64_t v;
  if (!s || !*s) return -1;
  if (asbi_parse_i64(s, strlen(s), &v) || v < 0 || v > max) return -2;
  return v;
}

typedef struct owner_opts {
  int64_t uid, gid, mode;
  int force;
} owner_opts;

/* uid/gid: the uids sandboxes see (their user namespaces map 0..65535) */
static int get_owner_opts(api_req *q, owner_opts *o, vol_reply *r) {
  o->uid = q_uint(q, "uid", 65535);
  o->gid = q_uint(q, "gid", 65535);
  o->mode = q_uint(q, "mode", 07777);
  const char *f = api_query(q, "force");
  o->force = f && (!strcmp(f, "true") || !strcmp(f, "1"));
  if (o->uid == -2 || o->gid == -2 || o->mode == -2) {
    verror(r, 400, "uid and gid must be 0..65535 (a sandbox's uids), mode 0..07777 (decimal)");
    return -1;
  }
  return 0;
}

static int apply_owner(int fd, const owner_opts *o, mode_t dflt_mode) {
  if (fchown(fd, o->uid >= 0 ? (uid_t)o->uid : 0, o->gid >= 0 ? (gid_t)o->gid : 0) < 0)
    return -errno;
  if (fchmod(fd, o->mode >= 0 ? (mode_t)o->mode : dflt_mode) < 0) return -errno;
  return 0;
}

/* mkdir of norm (with force: its parents too, and an existing dir is fine) */
static void make_dir(int mfd, const char *norm, const owner_opts *o, const volume *v,
                     vol_reply *r) {
  if (!strcmp(norm, "/")) return verror(r, 409, "Path / already exists");
  char cur[4200] = "";
  const char *s = norm;
  int d = openat2_in(mfd, ".", O_PATH | O_DIRECTORY);
  if (d < 0) return verrno(r, errno, norm, v);
  while (*s) {
    s++;
    size_t n = strcspn(s, "/");
    char comp[256];
    if (n >= sizeof comp) {
      close(d);
      return verror(r, 400, "a component of %s is too long", norm);
    }
    memcpy(comp, s, n);
    comp[n] = '\0';
    size_t cl = strlen(cur);
    snprintf(cur + cl, sizeof cur - cl, "/%s", comp);
    int last = !s[n], made = 0;
    if (last || o->force) {
      if (mkdirat(d, comp, 0700) == 0)
        made = 1;
      else if (errno != EEXIST || (last && !o->force)) {
        int err = errno;
        close(d);
        if (err == EEXIST) return verror(r, 409, "Path %s already exists", norm);
        return verrno(r, err, cur, v);
      }
    }
    /* the next dir: a real one (a symlink is not entered) */
    int next = openat(d, comp, (made ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    close(d);
    if (next < 0) {
      if (err == ENOENT || err == ENOTDIR) return verror(r, 404, "Path %s not found", cur);
      return verrno(r, err, cur, v);
    }
    int rc = made ? apply_owner(next, o, 0755) : 0;
    if (rc) {
      close(next);
      return verrno(r, -rc, cur, v);
    }
    d = next;
    s += n;
  }
  cJSON *j = stat_json(d, "", norm);
  close(d);
  vreply(r, 201, j);
}

static void write_file(int mfd, const char *norm, api_req *q, const owner_opts *o, const volume *v,
                       vol_reply *r) {
  const char *name;
  int d = open_parent(mfd, norm, &name);
  if (d < 0) return verror(r, 404, "Path %s not found", norm);
  if (!*name) {
    close(d);
    return verror(r, 409, "Path / is a directory");
  }
  /* a new file renamed into place: readers never see half of it, and a
   * full volume leaves the old one */
  char tmp[300];
  char rnd[17];
  asbi_random_hex(rnd, 16);
  snprintf(tmp, sizeof tmp, ".asb-upload-%s", rnd);
  struct stat st;
  if (fstatat(d, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) {
      close(d);
      return verror(r, 409, "Path %s is a directory", norm);
    }
    if (!o->force) {
      close(d);
      return verror(r, 409, "Path %s already exists (force=true overwrites it)", norm);
    }
  }
  int fd = openat(d, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    int err = errno;
    close(d);
    return verrno(r, err, norm, v);
  }
  int rc = 0;
  size_t at = 0;
  while (!rc && at < q->body_len) {
    ssize_t n = write(fd, q->body + at, q->body_len - at);
    if (n < 0 && errno != EINTR) rc = -errno;
    if (n > 0) at += (size_t)n;
  }
  if (!rc) rc = apply_owner(fd, o, 0644);
  if (!rc && fsync(fd) < 0) rc = -errno;
  close(fd);
  if (!rc && renameat(d, tmp, d, name) < 0) rc = -errno;
  if (rc) {
    unlinkat(d, tmp, 0);
    close(d);
    return verrno(r, -rc, norm, v);
  }
  cJSON *j = stat_json(d, name, norm);
  close(d);
  vreply(r, 201, j);
}

static void read_file(int mfd, const char *norm, const volume *v, vol_reply *r) {
  int fd = openat2_in(mfd, norm + 1, O_RDONLY | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return verrno(r, errno, norm, v);
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return verror(r, 404, "Path %s not found (no regular file)", norm);
  }
  r->status = 200;
  r->fd = fd;
  r->size = (uint64_t)st.st_size;
}

static void patch_path(int mfd, const char *norm, api_req *q, const volume *v, vol_reply *r) {
  cJSON *b = q->body_len ? cJSON_ParseWithLength(q->body, q->body_len) : NULL;
  if (!cJSON_IsObject(b)) {
    cJSON_Delete(b);
    return verror(r, 400, "the body must be a JSON object {uid?, gid?, mode?}");
  }
  int64_t vals[3] = {-1, -1, -1};
  static const char *const keys[] = {"uid", "gid", "mode"};
  static const int64_t max[] = {65535, 65535, 07777};
  for (int i = 0; i < 3; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(b, keys[i]);
    if (!x || cJSON_IsNull(x)) continue;
    if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > (double)max[i] ||
        x->valuedouble != (double)(int64_t)x->valuedouble) {
      cJSON_Delete(b);
      return verror(r, 400, "'%s' must be a whole number in 0..%lld", keys[i], (long long)max[i]);
    }
    vals[i] = (int64_t)x->valuedouble;
  }
  cJSON_Delete(b);
  const char *name;
  int d = open_parent(mfd, norm, &name);
  if (d < 0) return verrno(r, errno, norm, v);
  struct stat st;
  int rc = 0;
  if (fstatat(d, *name ? name : "", &st, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH)) < 0)
    rc = -errno;
  else if (S_ISLNK(st.st_mode)) {
    if (vals[2] >= 0)
      rc = -ELOOP;
    else if (fchownat(d, name, vals[0] >= 0 ? (uid_t)vals[0] : (uid_t)-1,
                      vals[1] >= 0 ? (gid_t)vals[1] : (gid_t)-1, AT_SYMLINK_NOFOLLOW) < 0)
      rc = -errno;
  } else {
    /* not a symlink: an fd of it (O_PATH cannot chmod); fifos do not block */
    int fd = *name ? openat(d, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
                   : openat2_in(mfd, ".", O_RDONLY | O_DIRECTORY);
    if (fd < 0)
      rc = -errno;
    else {
      if (fchown(fd, vals[0] >= 0 ? (uid_t)vals[0] : (uid_t)-1,
                 vals[1] >= 0 ? (gid_t)vals[1] : (gid_t)-1) < 0 ||
          (vals[2] >= 0 && fchmod(fd, (mode_t)vals[2]) < 0))
        rc = -errno;
      close(fd);
    }
  }
  if (rc) {
    close(d);
    return verrno(r, -rc, norm, v);
  }
  cJSON *j = stat_json(d, name, norm);
  close(d);
  vreply(r, 200, j);
}

/* The volume of a /volumecontent/{id}/... path into id (by id only). */
static int content_id(const char *path, char id[ID_LEN + 1], const char **op) {
  const char *p = path + strlen("/volumecontent/");
  size_t il = strcspn(p, "/");
  if (il == 0 || il > ID_LEN || p[il] != '/') return -1;
  memcpy(id, p, il);
  id[il] = '\0';
  *op = p + il + 1;
  return 0;
}

int volumes_content_authorized(engine *e, const char *path, const char *auth) {
  struct engine_volumes *vs = e->volumes;
  char id[ID_LEN + 1];
  const char *op;
  if (!vs || content_id(path, id, &op)) return 404;
  const char *tok = auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL;
  pthread_mutex_lock(&vs->mu);
  volume *v = find(vs, id);
  int st = !v || strcmp(v->id, id) ? 404 : asbi_httpd_token_eq(tok, v->token) ? 0 : 401;
  pthread_mutex_unlock(&vs->mu);
  return st;
}

void volumes_content(engine *e, api_req *q, const char *auth, vol_reply *r) {
  memset(r, 0, sizeof *r);
  r->fd = -1;
  struct engine_volumes *vs = e->volumes;
  char id[ID_LEN + 1];
  const char *op;
  if (!vs || content_id(q->path, id, &op))
    return verror(r, 404, "no such endpoint: %s %s", q->method, q->path);
  int is_dir = !strcmp(op, "dir"), is_file = !strcmp(op, "file"), is_path = !strcmp(op, "path");
  if (!is_dir && !is_file && !is_path)
    return verror(r, 404, "no such endpoint: %s %s", q->method, q->path);
  const char *tok = auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL;
  pthread_mutex_lock(&vs->mu);
  volume *v = find(vs, id);
  if (v && strcmp(v->id, id)) v = NULL; /* by id only here */
  if (!v) {
    pthread_mutex_unlock(&vs->mu);
    return verror(r, 404, "volume \"%s\" not found", id);
  }
  if (!asbi_httpd_token_eq(tok, v->token)) {
    pthread_mutex_unlock(&vs->mu);
    return verror(r, 401, "missing or invalid volume token (Authorization: Bearer <token>)");
  }
  char why[512];
  int mfd = vol_mfd(vs, v, why, sizeof why);
  if (mfd < 0) {
    pthread_mutex_unlock(&vs->mu);
    return verror(r, 500, "%s", why);
  }
  v->refs++;
  pthread_mutex_unlock(&vs->mu);

  char norm[4200];
  const char *path = api_query(q, "path");
  const char *m = q->method;
  owner_opts o;
  if (!path || volpath_norm(path, norm, sizeof norm)) {
    verror(r, 400, "'path' is required: a path in the volume without . or .. components");
  } else if (is_dir && !strcmp(m, "GET")) {
    int64_t depth = q_uint(q, "depth", TREE_DEPTH_MAX);
    if (depth == -2 || depth == 0) {
      verror(r, 400, "depth must be 1..%d", TREE_DEPTH_MAX);
    } else {
      int d = openat2_in(mfd, strcmp(norm, "/") ? norm + 1 : ".", O_PATH | O_DIRECTORY);
      if (d < 0) {
        verrno(r, errno, norm, v);
      } else {
        cJSON *a = cJSON_CreateArray();
        size_t count = 0;
        int rc = list_dir(d, norm, depth < 0 ? 1 : (int)depth, a, &count);
        close(d);
        if (rc == -E2BIG) {
          cJSON_Delete(a);
          verror(r, 400, "more than %d entries: list with a smaller depth", LIST_MAX);
        } else if (rc) {
          cJSON_Delete(a);
          verrno(r, -rc, norm, v);
        } else {
          vreply(r, 200, a);
        }
      }
    }
  } else if (is_dir && !strcmp(m, "POST")) {
    if (!get_owner_opts(q, &o, r)) make_dir(mfd, norm, &o, v, r);
  } else if (is_file && !strcmp(m, "GET")) {
    read_file(mfd, norm, v, r);
  } else if (is_file && !strcmp(m, "PUT")) {
    if (!get_owner_opts(q, &o, r)) write_file(mfd, norm, q, &o, v, r);
  } else if (is_path && !strcmp(m, "GET")) {
    const char *name;
    int d = open_parent(mfd, norm, &name);
    cJSON *j = d >= 0 ? stat_json(d, name, norm) : NULL;
    if (d >= 0) close(d);
    if (j)
      vreply(r, 200, j);
    else
      verror(r, 404, "Path %s not found", norm);
  } else if (is_path && !strcmp(m, "PATCH")) {
    patch_path(mfd, norm, q, v, r);
  } else if (is_path && !strcmp(m, "DELETE")) {
    const char *name;
    int d = strcmp(norm, "/") ? open_parent(mfd, norm, &name) : -1;
    if (d < 0) {
      verror(r, strcmp(norm, "/") ? 404 : 400,
             strcmp(norm, "/") ? "Path %s not found" : "Path %s: the root cannot be removed", norm);
    } else {
      int rc = remove_tree(d, name, 0);
      close(d);
      if (rc)
        verrno(r, -rc, norm, v);
      else
        r->status = 204;
    }
  } else {
    verror(r, 405, "%s is not allowed on %s", m, q->path);
  }
  pthread_mutex_lock(&vs->mu);
  v->refs--;
  pthread_mutex_unlock(&vs->mu);
}

/* ---- volumeMounts of a create ---------------------------------------------------- */

int volumes_parse_mounts(engine *e, const cJSON *v, cJSON **out, api_reply *r) {
  *out = NULL;
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsArray(v)) {
    api_error(r, 400, "'volumeMounts' must be an array of {name, path}");
    return -1;
  }
  if (cJSON_GetArraySize(v) > VOLUMES_MAX_MOUNTS) {
    api_error(r, 400, "at most %d volumeMounts", VOLUMES_MAX_MOUNTS);
    return -1;
  }
  struct engine_volumes *vs = e->volumes;
  cJSON *a = cJSON_CreateArray();
  const cJSON *it;
  cJSON_ArrayForEach(it, v) {
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name"),
                *pa = cJSON_GetObjectItemCaseSensitive(it, "path");
    char norm[4200];
    if (!cJSON_IsString(nm) || !cJSON_IsString(pa)) {
      api_error(r, 400, "each of 'volumeMounts' needs a string name and path");
      goto bad;
    }
    char why[1400];
    if (volpath_mount(pa->valuestring, norm, sizeof norm, why, sizeof why)) {
      api_error(r, 400, "%s", why);
      goto bad;
    }
    const cJSON *o;
    cJSON_ArrayForEach(o, a) {
      const char *op = cJSON_GetObjectItemCaseSensitive(o, "path")->valuestring;
      if (volpath_overlap(norm, op)) {
        api_error(r, 400, "volume mount paths %s and %s overlap", op, norm);
        goto bad;
      }
    }
    pthread_mutex_lock(&vs->mu);
    volume *vol = vs ? find(vs, nm->valuestring) : NULL;
    char name[NAME_MAX_LEN + 1] = "";
    if (vol) snprintf(name, sizeof name, "%s", vol->name);
    pthread_mutex_unlock(&vs->mu);
    if (!vol) {
      api_error(r, 404, "volume \"%s\" not found", nm->valuestring);
      goto bad;
    }
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "path", norm);
    cJSON_AddItemToArray(a, m);
  }
  *out = a;
  return 0;
bad:
  cJSON_Delete(a);
  return -1;
}

int volumes_add_to(engine *e, const cJSON *mounts, asbe_template *t, char *why, size_t len) {
  struct engine_volumes *vs = e->volumes;
  const cJSON *m;
  cJSON_ArrayForEach(m, mounts) {
    const char *name = cJSON_GetObjectItemCaseSensitive(m, "name")->valuestring,
               *path = cJSON_GetObjectItemCaseSensitive(m, "path")->valuestring;
    pthread_mutex_lock(&vs->mu);
    volume *v = find(vs, name);
    int mfd = v ? vol_mfd(vs, v, why, len) : -1;
    if (!v) snprintf(why, len, "volume \"%s\" not found", name);
    int rc = mfd >= 0 ? asbe_template_add_volume(t, mfd, path) : -1;
    if (mfd >= 0 && rc) snprintf(why, len, "volume %s at %s: %s", name, path, asbe_errmsg());
    pthread_mutex_unlock(&vs->mu);
    if (rc) return -1;
  }
  return 0;
}
