/* Local container images as template bases (image.h).
 *
 * Reading: an OCI layout (oci-layout, index.json, blobs/sha256/<hex>) or a
 * `docker save` tarball (manifest.json, the config, the layers; Docker 25+
 * tarballs are OCI layouts with a manifest.json, read the same way). The
 * JSON is imgjson.c's; archives are libarchive's (gzip, zstd, plain tar).
 * Every blob is checked against its sha256: manifests, configs and OCI
 * layers by their descriptors' digests, docker-save layers by the config's
 * diff_ids. A layer is read twice (whiteouts first, then its entries, so
 * a whiteout only hides what lower layers made) and checked both times.
 *
 * Writing: the root is an fd; every entry's parent is opened with openat2
 * RESOLVE_IN_ROOT (so a symlink of the image, "/etc" or "../../..", lands
 * inside the root, as it would inside the sandbox) and the entry made with
 * *at calls on that fd (O_NOFOLLOW, O_EXCL, AT_SYMLINK_NOFOLLOW), never a
 * host path. Names with a ".." component fail the import; a leading "/" is
 * dropped (as tar does). Hard links resolve their target in the root too.
 * Device nodes and sockets are skipped (a sandbox's /dev is its own);
 * set-user-ID and set-group-ID bits of files are dropped (sandboxes run
 * with no_new_privs: they could never take effect, and a copy taken out of
 * the layer stays harmless); xattrs are not applied.
 * SPDX-License-Identifier: Apache-2.0 */
#include "image.h"

#include <archive.h>
#include <archive_entry.h>
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
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/sha256.h"
#include "util/util.h"

#define JSON_MAX (4u << 20) /* index, manifest, config */

static pthread_mutex_t import_mu = PTHREAD_MUTEX_INITIALIZER;

void image_result_free(image_result *r) {
  if (r) imgj_config_free(&r->cfg);
}

int image_ref_is_local(const char *s) {
  return s && (!strncmp(s, "oci:", 4) || !strncmp(s, "docker-archive:", 15));
}

int image_ref_is_registry(const char *s) {
  if (!s || image_ref_is_local(s)) return 0;
  return strchr(s, '/') || strchr(s, '@') || strstr(s, "://");
}

static int oa2(int dirfd, const char *path, int flags, uint64_t resolve) {
  return asbi_openat2(dirfd, path, flags, 0, resolve);
}
#define IN_ROOT (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
#define BENEATH (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)

/* ---- blobs ---------------------------------------------------------------- */

/* Reads file fd whole (at most max bytes) into *out (NUL-terminated). */
static int read_fd(int fd, size_t max, char **out, size_t *len) {
  size_t cap = 8192, n = 0;
  char *b = malloc(cap + 1);
  if (!b) return -ENOMEM;
  for (;;) {
    if (n == cap) {
      if (cap >= max) {
        free(b);
        return -EFBIG;
      }
      cap = cap * 2 > max ? max : cap * 2;
      char *nb = realloc(b, cap + 1);
      if (!nb) {
        free(b);
        return -ENOMEM;
      }
      b = nb;
    }
    ssize_t k = read(fd, b + n, cap - n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      free(b);
      return -errno;
    }
    if (k == 0) break;
    n += (size_t)k;
  }
  b[n] = '\0';
  *out = b;
  *len = n;
  return 0;
}

/* A small file under dirfd (no symlinks out of it), whole. */
static int read_small(int dirfd, const char *rel, char **out, size_t *len, char *err,
                      size_t errlen) {
  int fd = oa2(dirfd, rel, O_RDONLY | O_NOFOLLOW, BENEATH);
  if (fd < 0) return asbi_errf(err, errlen, "%s: %s", rel, strerror(errno));
  struct stat st;
  int r = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
  if (!r) r = read_fd(fd, JSON_MAX, out, len);
  close(fd);
  if (r)
    return asbi_errf(err, errlen, "%s: %s", rel,
                     r == -EFBIG    ? "larger than 4 MiB"
                     : r == -EINVAL ? "not a regular file"
                                    : strerror(-r));
  return 0;
}

static int digest_check(const void *data, size_t len, const char *hex, const char *what, char *err,
                        size_t errlen) {
  char got[65];
  asbi_sha256_hex(data, len, got);
  if (strcmp(got, hex))
    return asbi_errf(err, errlen, "%s: digest mismatch (sha256:%.12s…, expected sha256:%.12s…)",
                     what, got, hex);
  return 0;
}

/* blobs/sha256/<hex> of an OCI layout, whole, checked. */
static int read_blob(int dirfd, const imgj_desc *d, const char *what, char **out, size_t *len,
                     char *err, size_t errlen) {
  char rel[128];
  snprintf(rel, sizeof rel, "blobs/sha256/%s", d->hex);
  if (read_small(dirfd, rel, out, len, err, errlen)) return -1;
  if ((int64_t)*len != d->size || digest_check(*out, *len, d->hex, what, err, errlen)) {
    if ((int64_t)*len != d->size)
      asbi_errf(err, errlen, "%s: %zu bytes, its descriptor says %lld", what, *len,
                (long long)d->size);
    free(*out);
    *out = NULL;
    return -1;
  }
  return 0;
}

/* ---- a layer stream: read through a hash ---------------------------------- */

typedef struct lstream {
  int fd;
  asbi_sha256_ctx h;
  uint64_t n;
  char buf[65536];
} lstream;

static la_ssize_t ls_read(struct archive *a, void *ud, const void **out) {
  lstream *s = ud;
  for (;;) {
    ssize_t k = read(s->fd, s->buf, sizeof s->buf);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      archive_set_error(a, errno, "read: %s", strerror(errno));
      return -1;
    }
    asbi_sha256_update(&s->h, s->buf, (size_t)k);
    s->n += (uint64_t)k;
    *out = s->buf;
    return k;
  }
}

/* Drains the rest of the stream into the hash and compares. */
static int ls_finish(lstream *s, const char *hex, int64_t size, const char *what, char *err,
                     size_t errlen) {
  for (;;) {
    ssize_t k = read(s->fd, s->buf, sizeof s->buf);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return asbi_errf(err, errlen, "%s: read: %s", what, strerror(errno));
    if (k == 0) break;
    asbi_sha256_update(&s->h, s->buf, (size_t)k);
    s->n += (uint64_t)k;
  }
  unsigned char d[32];
  char got[65];
  asbi_sha256_final(&s->h, d);
  for (int i = 0; i < 32; i++) snprintf(got + 2 * i, 3, "%02x", d[i]);
  if (size >= 0 && (int64_t)s->n != size)
    return asbi_errf(err, errlen, "%s: %llu bytes, its descriptor says %lld", what,
                     (unsigned long long)s->n, (long long)size);
  if (strcmp(got, hex))
    return asbi_errf(err, errlen, "%s: digest mismatch (sha256:%.12s…, expected sha256:%.12s…)",
                     what, got, hex);
  return 0;
}

/* ---- writing under the root ------------------------------------------------ */

static int clear_dir(int fd);

/* Removes name in dirfd, a directory tree too, without following links. */
static int rm_at(int pdir, const char *name) {
  if (unlinkat(pdir, name, 0) == 0 || errno == ENOENT) return 0;
  if (errno != EISDIR && errno != EPERM) return -errno;
  int fd = openat(pdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  int r = clear_dir(fd);
  close(fd);
  if (!r && unlinkat(pdir, name, AT_REMOVEDIR) < 0 && errno != ENOENT) r = -errno;
  return r;
}

/* Removes the tree at path (the engine's own cache dir). */
static void host_rm_tree(const char *path) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path);
  char *s = strrchr(buf, '/');
  if (!s || !s[1]) return;
  *s = '\0';
  int dfd = open(buf[0] ? buf : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  rm_at(dfd, s + 1);
  close(dfd);
}

/* Empties the directory fd (an opaque whiteout; rm_at's directories). */
static int clear_dir(int fd) {
  int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return -errno;
  DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return -errno;
  }
  int r = 0;
  struct dirent *de;
  while (!r && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) r = rm_at(dirfd(d), de->d_name);
  closedir(d);
  return r;
}

/* Normalises a tar name in place: drops leading "/" and "./", "." and
 * empty components and a trailing "/"; -EPERM for a ".." component. ""
 * is the root itself. */
static int norm(char *s) {
  char *w = s;
  const char *p = s;
  while (*p) {
    while (*p == '/') p++;
    const char *e = strchr(p, '/');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    if (k == 2 && p[0] == '.' && p[1] == '.') return -EPERM;
    if (k && !(k == 1 && p[0] == '.')) {
      if (w != s) *w++ = '/';
      memmove(w, p, k);
      w += k;
    }
    p += k;
  }
  *w = '\0';
  return 0;
}

/* Normalises like norm, but a ".." removes the component before it (none
 * at the top: the root's ".." is the root, as RESOLVE_IN_ROOT has it). */
static void norm_clamp(const char *in, char *out, size_t cap) {
  out[0] = '\0';
  const char *p = in;
  while (*p) {
    while (*p == '/') p++;
    const char *e = strchr(p, '/');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    if (k == 2 && p[0] == '.' && p[1] == '.') {
      char *l = strrchr(out, '/');
      if (l)
        *l = '\0';
      else
        out[0] = '\0';
    } else if (k && !(k == 1 && p[0] == '.')) {
      size_t ol = strlen(out);
      snprintf(out + ol, cap - ol, "%s%.*s", ol ? "/" : "", (int)k, p);
    }
    p += k;
  }
}

/* Opens directory rel (normalised) under the root, in the root's terms;
 * with create, makes missing components (0755, root-owned). A component
 * that is a symlink to a missing directory is followed (its target made,
 * in the root, as Docker does): its target replaces it in the path,
 * resolved against the root (depth: how many links so far). */
static int open_dir_(int root, const char *rel, int create, int depth) {
  if (!*rel) return dup(root);
  int fd = oa2(root, rel, O_PATH | O_DIRECTORY, IN_ROOT);
  if (fd >= 0 || errno != ENOENT || !create) return fd;
  /* walk: each prefix resolved in the root, the missing one made in its
   * (already resolved) parent */
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", rel);
  int cur = dup(root);
  char *p = buf;
  while (cur >= 0 && *p) {
    char *slash = strchr(p, '/');
    if (slash) *slash = '\0';
    int next = oa2(root, buf, O_PATH | O_DIRECTORY, IN_ROOT);
    if (next < 0 && errno == ENOENT) {
      struct stat st;
      if (mkdirat(cur, p, 0755) < 0) {
        int e = errno;
        char tgt[PATH_MAX];
        ssize_t tl;
        if (e == EEXIST && depth < 40 && fstatat(cur, p, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(st.st_mode) && (tl = readlinkat(cur, p, tgt, sizeof tgt - 1)) > 0) {
          tgt[tl] = '\0';
          char joined[PATH_MAX * 2], res[PATH_MAX];
          const char *rest = slash ? slash + 1 : "";
          if (tgt[0] == '/')
            snprintf(joined, sizeof joined, "%s/%s", tgt, rest);
          else
            snprintf(joined, sizeof joined, "%.*s/%s/%s", (int)(p - buf), buf, tgt, rest);
          norm_clamp(joined, res, sizeof res);
          close(cur);
          return open_dir_(root, res, create, depth + 1);
        }
        close(cur);
        errno = e;
        return -1;
      }
      next = oa2(root, buf, O_PATH | O_DIRECTORY, IN_ROOT);
    }
    int e = errno;
    close(cur);
    cur = next;
    errno = e;
    if (!slash) break;
    *slash = '/';
    p = slash + 1;
  }
  return cur;
}

static int open_dir(int root, const char *rel, int create) {
  return open_dir_(root, rel, create, 0);
}

typedef struct unpack {
  int root;
  const image_limits *lim;
  uint64_t bytes, entries;
  unsigned devices;
  char *err;
  size_t errlen;
  const char *what;
} unpack;

static void split(char *path, char **parent, char **base) {
  char *s = strrchr(path, '/');
  if (s) {
    *s = '\0';
    *parent = path;
    *base = s + 1;
  } else {
    *parent = path + strlen(path); /* "" */
    *base = path;
  }
}

static int whiteout(unpack *u, const char *name) {
  char path[PATH_MAX], *parent, *base;
  snprintf(path, sizeof path, "%s", name);
  split(path, &parent, &base);
  int pfd = open_dir(u->root, parent, 0);
  if (pfd < 0) return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
  int r;
  if (!strcmp(base, ".wh..wh..opq")) {
    r = clear_dir(pfd);
  } else {
    r = rm_at(pfd, base + 4);
  }
  close(pfd);
  return r;
}

static int write_data(struct archive *a, int fd) {
  const void *buf;
  size_t len;
  la_int64_t off, at = 0;
  for (;;) {
    int r = archive_read_data_block(a, &buf, &len, &off);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) return -EIO;
    if (off != at && lseek(fd, off, SEEK_SET) < 0) return -errno;
    const char *p = buf;
    while (len) {
      ssize_t k = write(fd, p, len);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) return -errno;
      p += k;
      len -= (size_t)k;
    }
    at = off + (la_int64_t)(p - (const char *)buf);
  }
  /* a sparse tail */
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size < at && ftruncate(fd, at) < 0) return -errno;
  return 0;
}

static int entry(unpack *u, struct archive *a, struct archive_entry *en) {
  const char *raw = archive_entry_pathname(en);
  char name[PATH_MAX];
  if (!raw || strlen(raw) >= sizeof name)
    return asbi_errf(u->err, u->errlen, "%s: an entry without a name or longer than %d", u->what,
                     PATH_MAX - 1);
  snprintf(name, sizeof name, "%s", raw);
  if (norm(name))
    return asbi_errf(u->err, u->errlen, "%s: entry '%.200s' has a '..' component", u->what, raw);
  const char *slash = strrchr(name, '/');
  const char *bn = slash ? slash + 1 : name;
  if (!strncmp(bn, ".wh.", 4)) return 0; /* applied in the first pass */
  mode_t type = archive_entry_filetype(en);
  const char *hl = archive_entry_hardlink(en);
  if (!*name) { /* the root itself: its mode and owner */
    if (type != AE_IFDIR) return 0;
    if (fchmod(u->root, archive_entry_perm(en) & 01777) < 0 ||
        fchown(u->root, (uid_t)archive_entry_uid(en), (gid_t)archive_entry_gid(en)) < 0)
      return asbi_errf(u->err, u->errlen, "%s: /: %s", u->what, strerror(errno));
    return 0;
  }
  if (!hl && (type == AE_IFCHR || type == AE_IFBLK || type == AE_IFSOCK)) {
    u->devices++;
    return 0;
  }
  if (++u->entries > u->lim->max_entries)
    return asbi_errf(u->err, u->errlen, "the image has more than %llu entries",
                     (unsigned long long)u->lim->max_entries);
  int64_t size = archive_entry_size(en);
  if (!hl && type == AE_IFREG && size > 0) {
    u->bytes += (uint64_t)size;
    if (u->bytes > u->lim->max_bytes)
      return asbi_errf(u->err, u->errlen, "the image unpacks to more than %llu bytes",
                       (unsigned long long)u->lim->max_bytes);
  }
  la_int64_t uid = archive_entry_uid(en), gid = archive_entry_gid(en);
  if (uid < 0 || gid < 0 || uid > 0x7fffffff || gid > 0x7fffffff)
    return asbi_errf(u->err, u->errlen, "%s: '%.200s': owner out of range", u->what, name);
  mode_t perm = archive_entry_perm(en) & 07777;
  char path[PATH_MAX], *parent, *base;
  snprintf(path, sizeof path, "%s", name);
  split(path, &parent, &base);
  int pfd = open_dir(u->root, parent, 1);
  if (pfd < 0)
    return asbi_errf(u->err, u->errlen, "%s: '%.200s': its directory: %s", u->what, name,
                     strerror(errno));
  int rc = 0, fd = -1;
  struct stat st;
  int have = fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (have && !(type == AE_IFDIR && !hl && S_ISDIR(st.st_mode)) && (rc = rm_at(pfd, base)))
    goto out;
  if (hl) {
    char tgt[PATH_MAX];
    snprintf(tgt, sizeof tgt, "%s", hl);
    if (strlen(hl) >= sizeof tgt || norm(tgt) || !*tgt) {
      rc = asbi_errf(u->err, u->errlen, "%s: hard link '%.200s' to '%.200s' leaves the root",
                     u->what, name, hl);
      goto out;
    }
    int tfd = oa2(u->root, tgt, O_PATH | O_NOFOLLOW, IN_ROOT);
    if (tfd < 0 || fstat(tfd, &st) < 0 || S_ISDIR(st.st_mode)) {
      rc = asbi_errf(u->err, u->errlen, "%s: hard link '%.200s': target '%.200s' %s", u->what, name,
                     hl, tfd < 0 ? "is not in the image" : "is a directory");
      if (tfd >= 0) close(tfd);
      goto out;
    }
    if (linkat(tfd, "", pfd, base, AT_EMPTY_PATH) < 0) rc = -errno;
    close(tfd);
    goto out;
  }
  switch (type) {
    case AE_IFDIR:
      if (!have || !S_ISDIR(st.st_mode)) {
        if (mkdirat(pfd, base, 0700) < 0) {
          rc = -errno;
          break;
        }
      }
      fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 || fchown(fd, (uid_t)uid, (gid_t)gid) < 0 || fchmod(fd, perm & 03777) < 0)
        rc = -errno;
      break;
    case AE_IFREG:
      fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0) {
        rc = -errno;
        break;
      }
      if ((rc = write_data(a, fd))) {
        if (rc == -EIO)
          rc = asbi_errf(u->err, u->errlen, "%s: '%.200s': %s", u->what, name,
                         archive_error_string(a) ? archive_error_string(a) : "truncated");
        break;
      }
      if (fchown(fd, (uid_t)uid, (gid_t)gid) < 0 || fchmod(fd, perm & 01777) < 0) {
        rc = -errno;
        break;
      }
      {
        struct timespec ts[2] = {{archive_entry_mtime(en), 0}, {archive_entry_mtime(en), 0}};
        futimens(fd, ts);
      }
      break;
    case AE_IFLNK: {
      const char *t = archive_entry_symlink(en);
      if (!t || symlinkat(t, pfd, base) < 0 ||
          fchownat(pfd, base, (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW) < 0)
        rc = t ? -errno : -EINVAL;
      break;
    }
    case AE_IFIFO:
      if (mknodat(pfd, base, S_IFIFO | 0600, 0) < 0 ||
          fchownat(pfd, base, (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW) < 0 ||
          fchmodat(pfd, base, perm & 01777, 0) < 0)
        rc = -errno;
      break;
    default:
      break; /* unknown types are skipped */
  }
out:
  if (fd >= 0) close(fd);
  close(pfd);
  if (rc < -1) rc = asbi_errf(u->err, u->errlen, "%s: '%.200s': %s", u->what, name, strerror(-rc));
  return rc;
}

/* One pass over a layer's archive: whiteouts (pass 0) or entries (1). */
static int layer_pass(unpack *u, int blobfd, int pass, const char *hex, int64_t size) {
  if (lseek(blobfd, 0, SEEK_SET) < 0)
    return asbi_errf(u->err, u->errlen, "%s: seek: %s", u->what, strerror(errno));
  struct archive *a = archive_read_new();
  lstream *s = calloc(1, sizeof *s);
  if (!a || !s) {
    archive_read_free(a);
    free(s);
    return asbi_errf(u->err, u->errlen, "out of memory");
  }
  s->fd = blobfd;
  asbi_sha256_init(&s->h);
  /* libarchive's own decompressors only: a filter it would run as an
   * external program (ARCHIVE_WARN: not compiled in) is left out, so no
   * host program ever reads a layer */
  static int (*const filters[])(struct archive *) = {
      archive_read_support_filter_gzip, archive_read_support_filter_zstd,
      archive_read_support_filter_xz, archive_read_support_filter_bzip2};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(filters); i++) {
    struct archive *probe = archive_read_new();
    int ok = probe && filters[i](probe) == ARCHIVE_OK;
    archive_read_free(probe);
    if (ok) filters[i](a);
  }
  archive_read_support_format_tar(a);
  archive_read_support_format_gnutar(a);
  int rc = 0;
  if (archive_read_open(a, s, NULL, ls_read, NULL) != ARCHIVE_OK) {
    rc = asbi_errf(u->err, u->errlen, "%s: not a tar archive: %s", u->what,
                   archive_error_string(a) ? archive_error_string(a) : "?");
    goto out;
  }
  struct archive_entry *en;
  for (;;) {
    int r = archive_read_next_header(a, &en);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      rc = asbi_errf(u->err, u->errlen, "%s: a corrupt or truncated archive: %s", u->what,
                     archive_error_string(a) ? archive_error_string(a) : "?");
      goto out;
    }
    if (pass == 0) {
      const char *raw = archive_entry_pathname(en);
      char name[PATH_MAX];
      if (!raw || strlen(raw) >= sizeof name) continue; /* pass 1 reports it */
      snprintf(name, sizeof name, "%s", raw);
      if (norm(name)) continue;
      const char *sl = strrchr(name, '/');
      const char *bn = sl ? sl + 1 : name;
      if (strncmp(bn, ".wh.", 4) || !bn[4]) continue;
      int w = whiteout(u, name);
      if (w < 0) {
        rc = asbi_errf(u->err, u->errlen, "%s: whiteout '%.200s': %s", u->what, name, strerror(-w));
        goto out;
      }
    } else if ((rc = entry(u, a, en))) {
      goto out;
    }
  }
  rc = ls_finish(s, hex, size, u->what, u->err, u->errlen);
out:
  archive_read_free(a);
  free(s);
  return rc;
}

static int apply_layer(unpack *u, int blobfd, const char *hex, int64_t size) {
  if (layer_pass(u, blobfd, 0, hex, size) || layer_pass(u, blobfd, 1, hex, size)) return -1;
  return 0;
}

/* ---- the root's fix-ups: what a sandbox needs inside ------------------------ */

static int put_file(int root, const char *dir, const char *name, const char *data, mode_t mode) {
  int dfd = open_dir(root, dir, 1);
  if (dfd < 0) return -errno;
  char tmp[64];
  snprintf(tmp, sizeof tmp, ".asb-tmp.%d", (int)getpid());
  unlinkat(dfd, tmp, 0);
  int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  int r = fd < 0 ? -errno : 0;
  size_t len = strlen(data);
  if (!r && (write(fd, data, len) != (ssize_t)len || fchmod(fd, mode) < 0)) r = -EIO;
  if (fd >= 0) close(fd);
  if (!r && renameat(dfd, tmp, dfd, name) < 0) r = -errno;
  if (r) unlinkat(dfd, tmp, 0);
  close(dfd);
  return r;
}

/* The contents of rel under the root ("" when missing; 1 MiB at most). */
static char *get_file(int root, const char *rel) {
  int fd = oa2(root, rel, O_RDONLY | O_NOFOLLOW, IN_ROOT);
  char *b = NULL;
  size_t n = 0;
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read_fd(fd, 1u << 20, &b, &n) == 0) {
    close(fd);
    return b;
  }
  if (fd >= 0) close(fd);
  return asbi_strdup("");
}

static int has_line(const char *text, const char *prefix) {
  size_t n = strlen(prefix);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (!strncmp(l, prefix, n)) return 1;
  return 0;
}

/* Adds the lines (each "name:...\n") whose name the file lacks. */
static int ensure_lines(int root, const char *name, const char *const *lines, size_t n) {
  char rel[64];
  snprintf(rel, sizeof rel, "etc/%s", name);
  char *cur = get_file(root, rel);
  if (!cur) return -ENOMEM;
  size_t len = strlen(cur), add = 0;
  for (size_t i = 0; i < n; i++) add += strlen(lines[i]);
  char *out = malloc(len + add + 2);
  if (!out) {
    free(cur);
    return -ENOMEM;
  }
  memcpy(out, cur, len + 1);
  int changed = 0;
  if (len && out[len - 1] != '\n') strcat(out, "\n");
  for (size_t i = 0; i < n; i++) {
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)(strchr(lines[i], ':') - lines[i] + 1), lines[i]);
    if (!has_line(cur, key)) {
      strcat(out, lines[i]);
      changed = 1;
    }
  }
  int r = changed ? put_file(root, "etc", name, out, 0644) : 0;
  free(cur);
  free(out);
  return r;
}

/* Makes directory rel in the root where it is missing. With real, rel must
 * end up a directory itself, not a symlink (the sandbox's mount points:
 * the isolation runtime refuses a symlinked one): a symlink or file the
 * image has there is replaced. */
static int mkdir_missing(int root, const char *rel, mode_t mode, uid_t uid, int real) {
  char path[256], *parent, *base;
  snprintf(path, sizeof path, "%s", rel);
  split(path, &parent, &base);
  int pfd = open_dir(root, parent, 1);
  if (pfd < 0) return -errno;
  struct stat st;
  int r = 0, have = fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (have && !S_ISDIR(st.st_mode)) {
    int fd = real ? -1 : oa2(root, rel, O_PATH | O_DIRECTORY, IN_ROOT);
    if (fd >= 0) { /* a symlink to a directory will do */
      close(fd);
      close(pfd);
      return 0;
    }
    if ((r = rm_at(pfd, base))) {
      close(pfd);
      return r;
    }
    have = 0;
  }
  if (!have) {
    r = mkdirat(pfd, base, mode) < 0 && errno != EEXIST ? -errno : 0;
    if (!r && (fchownat(pfd, base, uid, uid, AT_SYMLINK_NOFOLLOW) < 0 ||
               fchmodat(pfd, base, mode, 0) < 0))
      r = -errno;
  }
  close(pfd);
  return r;
}

static void sh_quote(char *out, size_t cap, const char *s) {
  size_t w = 0;
  if (w < cap) out[w++] = '\'';
  for (; *s && w + 5 < cap; s++) {
    if (*s == '\'') {
      memcpy(out + w, "'\\''", 4);
      w += 4;
    } else {
      out[w++] = *s;
    }
  }
  if (w < cap) out[w++] = '\'';
  out[w < cap ? w : cap - 1] = '\0';
}

static int fixups(int root, const imgj_config *c) {
  static const struct {
    const char *rel;
    mode_t mode;
    uid_t uid;
    int real; /* a mount point of the sandbox */
  } dirs[] = {{"etc", 0755, 0, 0},     {"dev", 0755, 0, 1},  {"proc", 0555, 0, 1},
              {"sys", 0555, 0, 1},     {"run", 0755, 0, 1},  {"run/asb", 0755, 0, 1},
              {"tmp", 01777, 0, 0},    {"var", 0755, 0, 0},  {"var/tmp", 01777, 0, 0},
              {"var/log", 0755, 0, 0}, {"home", 0755, 0, 0}, {"home/user", 0755, 1000, 0},
              {"root", 0700, 0, 0},    {".asb", 0755, 0, 1}, {"etc/profile.d", 0755, 0, 0}};
  int r = 0;
  for (size_t i = 0; !r && i < ASBI_ARRAY_LEN(dirs); i++)
    r = mkdir_missing(root, dirs[i].rel, dirs[i].mode, dirs[i].uid, dirs[i].real);
  if (r) return r;
  /* the accounts every template has: root and user (1000) */
  static const char *const pw[] = {"root:x:0:0:root:/root:/bin/sh\n",
                                   "user:x:1000:1000:user:/home/user:/bin/sh\n"};
  static const char *const gr[] = {"root:x:0:\n", "user:x:1000:\n"};
  if ((r = ensure_lines(root, "passwd", pw, 2)) || (r = ensure_lines(root, "group", gr, 2)))
    return r;
  static const char *const files[][2] = {
      {"hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"},
      {"hostname", "sandbox\n"},
      {"resolv.conf", "nameserver 127.0.0.1\n"},
      {"profile",
       "if [ -d /etc/profile.d ]; then\n  for i in /etc/profile.d/*.sh; do\n"
       "    if [ -r \"$i\" ]; then . \"$i\"; fi\n  done\n  unset i\nfi\n"}};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(files); i++) {
    char rel[64];
    snprintf(rel, sizeof rel, "etc/%s", files[i][0]);
    int fd = oa2(root, rel, O_PATH, IN_ROOT);
    if (fd >= 0) {
      close(fd);
      continue;
    }
    if ((r = put_file(root, "etc", files[i][0], files[i][1], 0644))) return r;
  }
  /* the image's Env for envd's login shells (the build steps and the
   * start command get it as the template's env) */
  size_t cap = 64;
  for (size_t i = 0; i < c->n_env; i++) cap += strlen(c->env[i]) * 4 + 16;
  char *sh = malloc(cap), *q = malloc(cap);
  if (!sh || !q) {
    free(sh);
    free(q);
    return -ENOMEM;
  }
  snprintf(sh, cap, "# the image config's Env (agent-sandbox)\n");
  for (size_t i = 0; i < c->n_env; i++) {
    const char *eq = strchr(c->env[i], '=');
    sh_quote(q, cap, eq + 1);
    size_t at = strlen(sh);
    snprintf(sh + at, cap - at, "export %.*s=%s\n", (int)(eq - c->env[i]), c->env[i], q);
  }
  r = put_file(root, "etc/profile.d", "00-image-env.sh", sh, 0644);
  free(sh);
  free(q);
  return r;
}

/* ---- the two transports ---------------------------------------------------- */

typedef struct src {
  int dirfd;     /* the OCI layout, or the docker archive's members dir */
  int docker;    /* members are named by sha256 of their archive names */
  char **mnames; /* docker: member names and symlink targets */
  char **mlinks; /* NULL for a file */
  size_t nm;
} src;

static void src_free(src *s) {
  if (s->dirfd >= 0) close(s->dirfd);
  for (size_t i = 0; i < s->nm; i++) {
    free(s->mnames[i]);
    free(s->mlinks[i]);
  }
  free(s->mnames);
  free(s->mlinks);
}

/* docker: the file holding member name (following member symlinks). */
static int member(const src *s, const char *name, char out[65]) {
  char cur[PATH_MAX];
  snprintf(cur, sizeof cur, "%s", name);
  if (norm(cur)) return -1;
  for (int hop = 0; hop < 16; hop++) {
    size_t i = 0;
    while (i < s->nm && strcmp(s->mnames[i], cur)) i++;
    if (i == s->nm) return -1;
    if (!s->mlinks[i]) {
      asbi_sha256_hex(cur, strlen(cur), out);
      return 0;
    }
    char next[PATH_MAX];
    const char *t = s->mlinks[i];
    const char *sl = strrchr(cur, '/');
    if (t[0] == '/' || !sl)
      snprintf(next, sizeof next, "%s", t);
    else
      snprintf(next, sizeof next, "%.*s/%s", (int)(sl - cur), cur, t);
    /* resolve ".." lexically inside the archive's names */
    char res[PATH_MAX] = "";
    const char *p = next;
    while (*p) {
      while (*p == '/') p++;
      const char *e = strchr(p, '/');
      size_t k = e ? (size_t)(e - p) : strlen(p);
      if (k == 2 && p[0] == '.' && p[1] == '.') {
        char *l = strrchr(res, '/');
        if (l)
          *l = '\0';
        else if (res[0])
          res[0] = '\0';
        else
          return -1;
      } else if (k && !(k == 1 && p[0] == '.')) {
        size_t rl = strlen(res);
        snprintf(res + rl, sizeof res - rl, "%s%.*s", rl ? "/" : "", (int)k, p);
      }
      p += k;
    }
    snprintf(cur, sizeof cur, "%s", res);
  }
  return -1;
}

static int open_member(const src *s, const char *name, char *err, size_t errlen) {
  char h[65];
  if (member(s, name, h)) return asbi_errf(err, errlen, "the archive has no '%.200s'", name), -1;
  int fd = openat(s->dirfd, h, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) asbi_errf(err, errlen, "'%.200s': %s", name, strerror(errno));
  return fd;
}

/* Unpacks the outer tar of a docker-archive: its regular files into dir
 * (flat, named by sha256 of the member name), its symlinks remembered. */
static int docker_members(const char *file, int ffd, int dirfd, src *s, const image_limits *lim,
                          char *err, size_t errlen) {
  struct archive *a = archive_read_new();
  archive_read_support_format_tar(a);
  archive_read_support_format_gnutar(a);
  int rc = 0;
  uint64_t total = 0;
  if (archive_read_open_fd(a, ffd, 65536) != ARCHIVE_OK) {
    rc = asbi_errf(err, errlen, "%s: not a tar archive: %s", file, archive_error_string(a));
    goto out;
  }
  struct archive_entry *en;
  for (;;) {
    int r = archive_read_next_header(a, &en);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      rc = asbi_errf(err, errlen, "%s: a corrupt or truncated archive: %s", file,
                     archive_error_string(a));
      goto out;
    }
    const char *raw = archive_entry_pathname(en);
    char name[PATH_MAX];
    if (!raw || strlen(raw) >= sizeof name) continue;
    snprintf(name, sizeof name, "%s", raw);
    mode_t type = archive_entry_filetype(en);
    const char *link = archive_entry_hardlink(en);
    if (!link && type == AE_IFLNK) link = archive_entry_symlink(en);
    if (norm(name) || !*name || (type != AE_IFREG && type != AE_IFLNK && !link)) continue;
    if (s->nm >= 100000) {
      rc = asbi_errf(err, errlen, "%s: too many members", file);
      goto out;
    }
    char **nn = realloc(s->mnames, (s->nm + 1) * sizeof *nn);
    if (nn) s->mnames = nn;
    char **nl = nn ? realloc(s->mlinks, (s->nm + 1) * sizeof *nl) : NULL;
    if (nl) s->mlinks = nl;
    if (!nn || !nl) {
      rc = asbi_errf(err, errlen, "out of memory");
      goto out;
    }
    s->mnames[s->nm] = asbi_strdup(name);
    /* a hard link names its target from the archive's top */
    s->mlinks[s->nm] = NULL;
    if (link) {
      size_t ll = strlen(link);
      s->mlinks[s->nm] = malloc(ll + 2);
      if (s->mlinks[s->nm])
        snprintf(s->mlinks[s->nm], ll + 2, "%s%s", type == AE_IFLNK ? "" : "/", link);
    }
    s->nm++;
    if (!s->mnames[s->nm - 1] || (link && !s->mlinks[s->nm - 1])) {
      rc = asbi_errf(err, errlen, "out of memory");
      goto out;
    }
    if (link) continue;
    int64_t sz = archive_entry_size(en);
    total += sz > 0 ? (uint64_t)sz : 0;
    if (total > lim->max_bytes) {
      rc = asbi_errf(err, errlen, "%s: larger than %llu bytes", file,
                     (unsigned long long)lim->max_bytes);
      goto out;
    }
    char h[65];
    asbi_sha256_hex(name, strlen(name), h);
    unlinkat(dirfd, h, 0);
    int fd = openat(dirfd, h, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      rc = asbi_errf(err, errlen, "member %.200s: %s", name, strerror(errno));
      goto out;
    }
    int w = write_data(a, fd);
    close(fd);
    if (w) {
      rc = asbi_errf(err, errlen, "%s: member %.200s: %s", file, name,
                     w == -EIO && archive_error_string(a) ? archive_error_string(a) : strerror(-w));
      goto out;
    }
  }
out:
  archive_read_free(a);
  close(ffd);
  return rc;
}

/* ---- import ----------------------------------------------------------------- */

typedef struct plan {
  imgj_desc config;
  imgj_desc *layers; /* OCI: descriptors; docker: digest = diff_id, size -1 */
  char **lnames;     /* docker: member names */
  size_t n;
} plan;

static void plan_free(plan *p) {
  free(p->layers);
  imgj_strv_free(p->lnames, p->n);
}

static int oci_plan(src *s, const char *ref, plan *p, imgj_config *cfg, char *err, size_t errlen) {
  char *buf = NULL;
  size_t len = 0;
  if (read_small(s->dirfd, "oci-layout", &buf, &len, err, errlen)) return -1;
  int ok = strstr(buf, "imageLayoutVersion") != NULL;
  free(buf);
  if (!ok) return asbi_errf(err, errlen, "oci-layout: no imageLayoutVersion");
  if (read_small(s->dirfd, "index.json", &buf, &len, err, errlen)) return -1;
  imgj_desc man;
  int rc = imgj_index(buf, len, ref, &man, err, errlen);
  free(buf);
  if (rc) return -1;
  if (read_blob(s->dirfd, &man, "the manifest", &buf, &len, err, errlen)) return -1;
  rc = imgj_manifest(buf, len, &p->config, &p->layers, &p->n, err, errlen);
  free(buf);
  if (rc) return -1;
  if (read_blob(s->dirfd, &p->config, "the image config", &buf, &len, err, errlen)) return -1;
  rc = imgj_parse_config(buf, len, cfg, err, errlen);
  free(buf);
  if (rc) return -1;
  if (cfg->n_diff_ids != p->n)
    return asbi_errf(err, errlen, "the manifest has %zu layers, the config's diff_ids %zu", p->n,
                     cfg->n_diff_ids);
  return 0;
}

/* "blobs/sha256/<hex>" or "<hex>.json": the hex a docker member claims. */
static int named_hex(const char *name, char hex[65]) {
  const char *b = strrchr(name, '/');
  b = b ? b + 1 : name;
  char d[80];
  snprintf(d, sizeof d, "sha256:%.64s", b);
  if (strlen(b) != 64 && !(strlen(b) == 69 && !strcmp(b + 64, ".json"))) return 0;
  return imgj_digest_ok(d, hex);
}

static int docker_plan(src *s, const char *ref, plan *p, imgj_config *cfg, char *err,
                       size_t errlen) {
  int fd = open_member(s, "manifest.json", err, errlen);
  if (fd < 0) return -1;
  char *buf = NULL, *cname = NULL;
  size_t len = 0;
  int r = read_fd(fd, JSON_MAX, &buf, &len);
  close(fd);
  if (r) return asbi_errf(err, errlen, "manifest.json: %s", strerror(-r));
  r = imgj_docker_manifest(buf, len, ref, &cname, &p->lnames, &p->n, err, errlen);
  free(buf);
  if (r) return -1;
  if (!named_hex(cname, p->config.hex)) {
    asbi_errf(err, errlen, "manifest.json: Config '%.200s' is not named by its sha256", cname);
    free(cname);
    return -1;
  }
  fd = open_member(s, cname, err, errlen);
  free(cname);
  if (fd < 0) return -1;
  r = read_fd(fd, JSON_MAX, &buf, &len);
  close(fd);
  if (r) return asbi_errf(err, errlen, "the image config: %s", strerror(-r));
  r = digest_check(buf, len, p->config.hex, "the image config", err, errlen);
  if (!r) r = imgj_parse_config(buf, len, cfg, err, errlen);
  free(buf);
  if (r) return -1;
  if (cfg->n_diff_ids != p->n)
    return asbi_errf(err, errlen, "manifest.json has %zu layers, the config's diff_ids %zu", p->n,
                     cfg->n_diff_ids);
  p->layers = calloc(p->n ? p->n : 1, sizeof *p->layers);
  if (!p->layers) return asbi_errf(err, errlen, "out of memory");
  for (size_t i = 0; i < p->n; i++) {
    memcpy(p->layers[i].hex, cfg->diff_ids[i], 65);
    p->layers[i].size = -1;
  }
  return 0;
}

/* Opens the image's path (a dir O_PATH for oci, the file O_RDONLY for a
 * docker-archive). With lim->dirs, the path must be one of those dirs or
 * beneath one: its components are plain names (no ".", "..", empty), and
 * it is opened from the dir's fd with RESOLVE_BENEATH, so a symlink that
 * leads out of the dir fails too. Without dirs, any path. */
static int open_image_path(const char *path, int docker, const image_limits *lim, char *err,
                           size_t errlen) {
  int flags = docker ? O_RDONLY : O_PATH | O_DIRECTORY;
  const char *what = docker ? "a docker save tarball" : "an OCI image layout directory";
  if (!lim || !lim->dirs) {
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0) asbi_errf(err, errlen, "%s: %s (%s)", path, strerror(errno), what);
    return fd;
  }
  for (const char *c = path + 1; *c;) {
    const char *e = strchr(c, '/');
    size_t n = e ? (size_t)(e - c) : strlen(c);
    if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) {
      asbi_errf(err, errlen, "%s: the path has an empty, '.' or '..' component", path);
      return -1;
    }
    c += n + (e ? 1 : 0);
  }
  for (size_t i = 0; lim->dirs[i]; i++) {
    const char *d = lim->dirs[i];
    size_t dn = strlen(d);
    while (dn > 1 && d[dn - 1] == '/') dn--;
    if (strncmp(path, d, dn) || (path[dn] && path[dn] != '/')) continue;
    const char *rel = path[dn] ? path + dn + 1 : ".";
    if (!*rel) rel = ".";
    int dfd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
      asbi_errf(err, errlen, "image directory %s: %s", d, strerror(errno));
      return -1;
    }
    int fd = oa2(dfd, rel, flags, BENEATH);
    int e = errno;
    close(dfd);
    if (fd < 0)
      asbi_errf(err, errlen, "%s: %s (%s%s)", path, strerror(e), what,
                e == EXDEV ? "; it leads out of the image directory" : "");
    return fd;
  }
  asbi_buf b = ASBI_BUF_INIT;
  for (size_t i = 0; lim->dirs[i]; i++) {
    if (i) asbi_buf_puts(&b, ", ");
    asbi_buf_puts(&b, lim->dirs[i]);
  }
  asbi_errf(err, errlen,
            "%s is not in the engine's image directories (%s); start the engine with "
            "--image-dir DIR to read images from DIR",
            path, b.len ? b.data : "none");
  asbi_buf_free(&b);
  return -1;
}

/* Splits "oci:/dir[:name]" / "docker-archive:/file[:repo:tag]". */
static int split_ref(const char *ref, int *docker, char *path, size_t plen, const char **name,
                     char *err, size_t errlen) {
  *docker = !strncmp(ref, "docker-archive:", 15);
  const char *p = ref + (*docker ? 15 : 4);
  const char *colon = strchr(p, ':');
  size_t n = colon ? (size_t)(colon - p) : strlen(p);
  if (p[0] != '/' || n >= plen)
    return asbi_errf(err, errlen,
                     "'%.200s': the path must be absolute (oci:/dir[:name] or "
                     "docker-archive:/file.tar[:repo:tag])",
                     ref);
  memcpy(path, p, n);
  path[n] = '\0';
  *name = colon ? colon + 1 : "";
  return 0;
}

int image_import(const char *ref, const char *cache_dir, const image_limits *lim_in,
                 image_result *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  image_limits lim = {IMAGE_DEFAULT_MAX_BYTES, IMAGE_DEFAULT_MAX_ENTRIES, NULL};
  if (lim_in && lim_in->max_bytes) lim.max_bytes = lim_in->max_bytes;
  if (lim_in && lim_in->max_entries) lim.max_entries = lim_in->max_entries;
  if (!image_ref_is_local(ref)) return asbi_errf(err, errlen, "'%.200s' is not a local image", ref);
  int docker;
  char path[4096];
  const char *name = "";
  if (split_ref(ref, &docker, path, sizeof path, &name, err, errlen)) return -1;
  int ifd = open_image_path(path, docker, lim_in, err, errlen);
  if (ifd < 0) return -1;
  if (mkdir(cache_dir, 0700) < 0 && errno != EEXIST) {
    close(ifd);
    return asbi_errf(err, errlen, "%s: %s", cache_dir, strerror(errno));
  }
  pthread_mutex_lock(&import_mu);
  src s = {.dirfd = -1};
  plan p;
  memset(&p, 0, sizeof p);
  int rc = -1, root = -1;
  char tmp[4200] = "", members[4300] = "", final[4200];
  snprintf(tmp, sizeof tmp, "%s/tmp.%d", cache_dir, (int)getpid());
  host_rm_tree(tmp);
  if (mkdir(tmp, 0700) < 0) {
    asbi_errf(err, errlen, "%s: %s", tmp, strerror(errno));
    tmp[0] = '\0';
    goto out;
  }
  if (docker) {
    snprintf(members, sizeof members, "%s/members", tmp);
    if (mkdir(members, 0700) < 0 ||
        (s.dirfd = open(members, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
      asbi_errf(err, errlen, "%s: %s", members, strerror(errno));
      goto out;
    }
    s.docker = 1;
    int ffd = ifd;
    ifd = -1; /* docker_members closes it */
    if (docker_members(path, ffd, s.dirfd, &s, &lim, err, errlen) ||
        docker_plan(&s, name, &p, &out->cfg, err, errlen))
      goto out;
  } else {
    s.dirfd = ifd;
    ifd = -1;
    if (oci_plan(&s, name, &p, &out->cfg, err, errlen)) goto out;
  }
  snprintf(out->id, sizeof out->id, "%s", p.config.hex);
  snprintf(final, sizeof final, "%s/%s", cache_dir, out->id);
  snprintf(out->rootfs, sizeof out->rootfs, "%s/rootfs", final);
  char stamp[4300];
  snprintf(stamp, sizeof stamp, "%s/done", final);
  if (access(stamp, F_OK) == 0) {
    out->cached = 1;
    rc = 0;
    goto out;
  }
  char troot[4300];
  snprintf(troot, sizeof troot, "%s/rootfs", tmp);
  if (mkdir(troot, 0755) < 0 || (root = open(troot, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
    asbi_errf(err, errlen, "%s: %s", troot, strerror(errno));
    goto out;
  }
  unpack u = {.root = root, .lim = &lim, .err = err, .errlen = errlen};
  for (size_t i = 0; i < p.n; i++) {
    char what[64];
    snprintf(what, sizeof what, "layer %zu/%zu", i + 1, p.n);
    u.what = what;
    int bfd;
    if (docker) {
      bfd = open_member(&s, p.lnames[i], err, errlen);
    } else {
      char rel[128];
      snprintf(rel, sizeof rel, "blobs/sha256/%s", p.layers[i].hex);
      bfd = oa2(s.dirfd, rel, O_RDONLY | O_NOFOLLOW, BENEATH);
      if (bfd < 0) asbi_errf(err, errlen, "%s: %s: %s", what, rel, strerror(errno));
    }
    if (bfd < 0) goto out;
    int r = apply_layer(&u, bfd, p.layers[i].hex, p.layers[i].size);
    close(bfd);
    if (r) goto out;
  }
  out->skipped_devices = u.devices;
  int fr = fixups(root, &out->cfg);
  if (fr) {
    asbi_errf(err, errlen, "preparing the image's root: %s", strerror(-fr));
    goto out;
  }
  if (members[0]) host_rm_tree(members);
  host_rm_tree(final); /* a half-made one (no stamp) */
  if (rename(tmp, final) < 0) {
    asbi_errf(err, errlen, "rename %s: %s", tmp, strerror(errno));
    goto out;
  }
  tmp[0] = '\0';
  int sfd = open(stamp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (sfd < 0) {
    asbi_errf(err, errlen, "%s: %s", stamp, strerror(errno));
    goto out;
  }
  if (write(sfd, ref, strlen(ref)) < 0) {
  }
  close(sfd);
  rc = 0;
out:
  if (ifd >= 0) close(ifd);
  if (root >= 0) close(root);
  src_free(&s);
  plan_free(&p);
  if (tmp[0]) host_rm_tree(tmp);
  pthread_mutex_unlock(&import_mu);
  if (rc) image_result_free(out);
  return rc;
}
