/* Exporting a stopped sandbox's writable layer as a template layer: the
 * upper dir of its ext4 image is copied into a host directory with
 * ownership shifted back to in-sandbox ids, so the result works as a
 * read-only lower layer of later sandboxes (template builds commit their
 * build sandbox this way). The image is mounted read-only as a detached
 * mount, never in the host's namespace; nothing of it is followed outside
 * the image (every lookup is fd-relative with O_NOFOLLOW).
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "iso_int.h"
#include "util/util.h"

#define MAX_DEPTH 256

typedef struct exp_ctx {
  uid_t base; /* host uid of root inside */
  uint64_t files, bytes;
} exp_ctx;

static uid_t unshift(const exp_ctx *x, uid_t u) {
  if (u >= x->base && u < x->base + ASBE_UID_RANGE) return u - x->base;
  return 65534; /* not the sandbox's: nobody */
}

/* user.* xattrs: the build's own, and of overlay's markers (userxattr
 * mode) only "opaque" — a directory that replaced a lower one — which a
 * lower layer honours too; origin/impure/nlink describe the upper fs and
 * mean nothing in a layer. File capabilities (security.capability) are not
 * kept: set inside a user namespace they name its root, which differs in
 * every sandbox, and on the host they would be capabilities of a host file.
 * fd must be open on the object. */
static int copy_xattrs(int src, int dst) {
  char names[65536];
  ssize_t n = flistxattr(src, names, sizeof names);
  if (n < 0) return errno == ENOTSUP ? 0 : -errno;
  for (ssize_t i = 0; i < n;) {
    const char *name = names + i;
    i += (ssize_t)strlen(name) + 1;
    if (strncmp(name, "user.", 5) != 0) continue;
    if (!strncmp(name, "user.overlay.", 13) && strcmp(name, "user.overlay.opaque") != 0) continue;
    char val[65536];
    ssize_t vl = fgetxattr(src, name, val, sizeof val);
    if (vl < 0) continue;
    if (fsetxattr(dst, name, val, (size_t)vl, 0) < 0 && errno != ENOTSUP && errno != EPERM)
      return -errno;
  }
  return 0;
}

static int copy_data(int in, int out, off_t size) {
  loff_t io = 0, oo = 0;
  off_t left = size;
  while (left > 0) {
    ssize_t n = copy_file_range(in, &io, out, &oo, (size_t)left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS)) {
      char buf[65536];
      if (lseek(in, io, SEEK_SET) < 0 || lseek(out, oo, SEEK_SET) < 0) return -errno;
      while (left > 0) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return r < 0 ? -errno : -EIO;
        for (ssize_t w = 0; w < r;) {
          ssize_t k = write(out, buf + w, (size_t)(r - w));
          if (k < 0 && errno == EINTR) continue;
          if (k <= 0) return -errno;
          w += k;
        }
        left -= r;
      }
      return 0;
    }
    if (n <= 0) return n < 0 ? -errno : -EIO; /* the file shrank: image changed */
    left -= n;
  }
  return 0;
}

static int copy_tree(exp_ctx *x, int sfd, int dfd, int depth);

static int copy_entry(exp_ctx *x, int sfd, int dfd, const char *name, int depth) {
  struct stat st;
  if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return asbe__failerr("export: stat %s", name);
  uid_t uid = unshift(x, st.st_uid);
  gid_t gid = (gid_t)unshift(x, (uid_t)st.st_gid);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  int r = 0;
  if (S_ISDIR(st.st_mode)) {
    if (mkdirat(dfd, name, 0700) < 0) return asbe__failerr("export: mkdir %s", name);
    int s2 = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int d2 = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s2 < 0 || d2 < 0) r = asbe__failerr("export: open dir %s", name);
    if (!r) r = copy_tree(x, s2, d2, depth + 1);
    if (!r && copy_xattrs(s2, d2) < 0) r = asbe__failerr("export: xattrs of %s", name);
    if (!r && (fchown(d2, uid, gid) < 0 || fchmod(d2, st.st_mode & 07777) < 0))
      r = asbe__failerr("export: owner of %s", name);
    if (!r) futimens(d2, times);
    if (s2 >= 0) close(s2);
    if (d2 >= 0) close(d2);
    return r;
  }
  if (S_ISREG(st.st_mode)) {
    int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (in < 0 || out < 0) r = asbe__failerr("export: open %s", name);
    if (!r && (r = copy_data(in, out, st.st_size)) < 0) r = asbe__fail(r, "export: copy %s", name);
    if (!r && copy_xattrs(in, out) < 0) r = asbe__failerr("export: xattrs of %s", name);
    /* No set-user-ID or set-group-ID bit survives: the layer is a host
     * directory, and a build step's `chmod 4755` on a file it owns as root
     * inside would otherwise leave a set-uid-root binary on the host (its
     * owner unshifted to host uid 0). Inside sandboxes they never worked
     * (no_new_privs, nosuid mounts), so nothing a template does is lost. */
    if (!r && (fchown(out, uid, gid) < 0 || fchmod(out, st.st_mode & 01777) < 0))
      r = asbe__failerr("export: owner of %s", name);
    if (!r) futimens(out, times);
    if (in >= 0) close(in);
    if (out >= 0) close(out);
    x->files++;
    x->bytes += (uint64_t)st.st_size;
    return r;
  }
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlinkat(sfd, name, target, sizeof target - 1);
    if (n < 0) return asbe__failerr("export: readlink %s", name);
    target[n] = '\0';
    if (symlinkat(target, dfd, name) < 0) return asbe__failerr("export: symlink %s", name);
    if (fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
      return asbe__failerr("export: owner of %s", name);
    utimensat(dfd, name, times, AT_SYMLINK_NOFOLLOW);
    return 0;
  }
  if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 0 && minor(st.st_rdev) == 0) {
    /* an overlay whiteout: the file was deleted from a lower layer */
    if (mknodat(dfd, name, S_IFCHR | 0000, makedev(0, 0)) < 0)
      return asbe__failerr("export: whiteout %s", name);
    fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW);
    return 0;
  }
  if (S_ISFIFO(st.st_mode)) {
    if (mkfifoat(dfd, name, st.st_mode & 07777) < 0) return asbe__failerr("export: fifo %s", name);
    fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW);
    return 0;
  }
  return 0; /* sockets and device nodes are not part of a template */
}

static int copy_tree(exp_ctx *x, int sfd, int dfd, int depth) {
  if (depth > MAX_DEPTH) return asbe__fail(-ELOOP, "export: directories nest too deep");
  int dup_fd = dup(sfd);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (!d) {
    if (dup_fd >= 0) close(dup_fd);
    return asbe__failerr("export: read dir");
  }
  struct dirent *de;
  int r = 0;
  while (!r && (de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    r = copy_entry(x, sfd, dfd, de->d_name, depth);
  }
  closedir(d);
  return r;
}

/* The upper dir of the writable layer mounted at mfd (closed here) into
 * dest, as a layer. */
static int export_mount(asbe_sandbox *sb, int mfd, const char *what, const char *dest) {
  int r;
  int up = openat(mfd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (up < 0) {
    r = asbe__failerr("export: %s has no upper dir", what);
    close(mfd);
    return r;
  }
  if (mkdir(dest, 0755) < 0) {
    r = asbe__failerr("export: mkdir %s", dest);
    close(up);
    close(mfd);
    return r;
  }
  int dfd = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  exp_ctx x = {sb->host_uid, 0, 0};
  r = dfd < 0 ? asbe__failerr("export: open %s", dest) : copy_tree(&x, up, dfd, 0);
  if (!r) {
    struct stat st;
    if (fstat(up, &st) == 0) {
      copy_xattrs(up, dfd);
      if (fchown(dfd, unshift(&x, st.st_uid), (gid_t)unshift(&x, (uid_t)st.st_gid)) < 0 ||
          fchmod(dfd, st.st_mode & 07777) < 0)
        r = asbe__failerr("export: owner of %s", dest);
    }
  }
  if (!r && dfd >= 0 && syncfs(dfd) < 0) r = asbe__failerr("export: sync %s", dest);
  if (dfd >= 0) close(dfd);
  close(up);
  close(mfd);
  if (r < 0) {
    char msg[512];
    asbe__save_error(msg, sizeof msg);
    asbe__rm_rf(dest);
    asbe__restore_error(msg);
  }
  return r;
}

int asbe_sandbox_export_upper(asbe_sandbox *sb, const char *dest) {
  asbe__clear_error();
  if (!sb->dead) return asbe__fail(-EBUSY, "export: sandbox %s still runs", sb->id);
  char img[PATH_MAX];
  snprintf(img, sizeof img, "%s/disk.img", sb->dir);
  if (access(img, F_OK) < 0) return asbe__failerr("export: %s", img);
  /* The sandbox's own loop device goes once its mounts are gone. */
  for (int waited = 0; asbe__loop_count_under(sb->dir) > 0; waited += 10) {
    if (waited > 20000) return asbe__fail(-EBUSY, "export: %s is still attached", img);
    usleep(10000);
  }
  int mfd = -1;
  int r = asbe__disk_mount_ro(img, &mfd);
  if (r < 0) return r;
  return export_mount(sb, mfd, img, dest);
}

int asbe_sandbox_export_live(asbe_sandbox *sb, const char *dest) {
  asbe__clear_error();
  if (sb->dead) return asbe__fail(-ESRCH, "export: sandbox %s is not running", sb->id);
  if (!sb->frozen) return asbe__fail(-EBUSY, "export: sandbox %s is not frozen", sb->id);
  int mfd = -1;
  int r = asbe__disk_mount_live(sb, &mfd);
  if (r < 0) return r;
  return export_mount(sb, mfd, "the writable layer", dest);
}
