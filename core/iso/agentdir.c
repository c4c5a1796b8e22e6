/* The agent dir, bound read-only at /.asb in every sandbox: asb-init, the
 * agent binaries and every shared library they need plus the ELF
 * interpreter, so a dynamically linked agent runs in any template (even one
 * without /usr/lib) as  /.asb/lib/<interp> --library-path /.asb/lib
 * /.asb/bin/<agent>. Libraries are resolved once with ldd.
 *
 * Sandboxes do not get a bind of the host dir itself: a bind mount's root
 * shows in /proc/self/mountinfo as its path on the host filesystem, i.e. the
 * engine's state dir. The engine copies the dir once into a detached tmpfs
 * (asbe__agentdir_mount; ~20 MiB, shared by every sandbox of the engine)
 * whose root is "/", and each sandbox gets an idmapped clone of that.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iso_int.h"
#include "util/util.h"

#if defined(__x86_64__)
#define INTERP "ld-linux-x86-64.so.2"
#elif defined(__aarch64__)
#define INTERP "ld-linux-aarch64.so.1"
#else
#define INTERP "ld.so"
#endif

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static int install(const char *src, const char *dir, const char *sub, const char *name) {
  char dst[PATH_MAX];
  snprintf(dst, sizeof dst, "%s/%s/%s", dir, sub, name);
  int r = asbe__copy_file(src, dst, 0755);
  return r < 0 ? asbe__fail(r, "copy %s to %s", src, dst) : 0;
}

/* Copies every library ldd lists for bin into dir/lib. */
static int install_libs(const char *bin, const char *dir) {
  const char *argv[] = {"ldd", bin, NULL};
  char *out = NULL;
  int st = asbe__run_capture(argv, &out);
  if (st < 0) {
    free(out);
    return asbe__fail(st, "ldd %s", bin);
  }
  int r = 0;
  for (char *l = out, *nl; l && *l && r == 0; l = nl) {
    nl = strchr(l, '\n');
    if (nl) *nl++ = '\0';
    while (*l == ' ' || *l == '\t') l++;
    char *arrow = strstr(l, " => ");
    if (strstr(l, "not found")) {
      r = asbe__fail(-ENOENT, "%s needs %s", bin, l);
      break;
    }
    char name[256], path[PATH_MAX];
    if (arrow) {
      /* "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" */
      snprintf(name, sizeof name, "%.*s", (int)(arrow - l), l);
      if (sscanf(arrow + 4, "%4095s", path) != 1 || path[0] != '/') continue;
    } else if (l[0] == '/') {
      /* the interpreter: "/lib64/ld-linux-x86-64.so.2 (0x...)" */
      if (sscanf(l, "%4095s", path) != 1) continue;
      snprintf(name, sizeof name, "%s", base_name(path));
    } else {
      continue; /* linux-vdso, "statically linked", ... */
    }
    r = install(path, dir, "lib", name);
  }
  free(out);
  return r;
}

int asbe_agentdir_build(const char *dir, const char *init_path, const char *const *bins,
                        size_t n_bins) {
  asbe__clear_error();
  char p[PATH_MAX];
  int r;
  if (!dir || !init_path) return asbe__fail(-EINVAL, "agent dir: dir and init_path required");
  snprintf(p, sizeof p, "%s/bin", dir);
  if ((r = asbe__mkdir_p(p, 0755)) < 0) return asbe__fail(r, "mkdir %s", p);
  snprintf(p, sizeof p, "%s/lib", dir);
  if ((r = asbe__mkdir_p(p, 0755)) < 0) return asbe__fail(r, "mkdir %s", p);
  chmod(dir, 0755);
  if ((r = install(init_path, dir, "bin", "asb-init")) < 0) return r;
  for (size_t i = 0; i < n_bins; i++) {
    if ((r = install(bins[i], dir, "bin", base_name(bins[i]))) < 0) return r;
    if ((r = install_libs(bins[i], dir)) < 0) return r;
  }
  return 0;
}

char **asbe_agent_argv(const char *name, const char *const *args) {
  size_t na = 0, bytes = 0;
  if (args)
    for (; args[na]; na++) bytes += strlen(args[na]) + 1;
  static const char interp[] = "/.asb/lib/" INTERP;
  static const char libopt[] = "--library-path";
  static const char libdir[] = "/.asb/lib";
  char bin[PATH_MAX];
  if ((size_t)snprintf(bin, sizeof bin, "/.asb/bin/%s", name) >= sizeof bin) return NULL;
  bytes += sizeof interp + sizeof libopt + sizeof libdir + strlen(bin) + 1;
  size_t slots = 4 + na + 1;
  char **v = malloc(slots * sizeof(char *) + bytes);
  if (!v) return NULL;
  char *s = (char *)(v + slots);
  const char *parts[4] = {interp, libopt, libdir, bin};
  size_t k = 0;
  for (; k < 4; k++) {
    v[k] = s;
    s = stpcpy(s, parts[k]) + 1;
  }
  for (size_t i = 0; i < na; i++, k++) {
    v[k] = s;
    s = stpcpy(s, args[i]) + 1;
  }
  v[k] = NULL;
  return v;
}

/* ---- the detached copy sandboxes get ------------------------------------- */

static int copy_fd_tree(int src, int dst, int depth);

static int copy_fd_entry(int src, int dst, const char *name, int depth) {
  struct stat st;
  if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return -errno;
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlinkat(src, name, target, sizeof target - 1);
    if (n < 0) return -errno;
    target[n] = '\0';
    return symlinkat(target, dst, name) < 0 ? -errno : 0;
  }
  if (S_ISDIR(st.st_mode)) {
    if (mkdirat(dst, name, st.st_mode & 0755) < 0) return -errno;
    int s2 = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int d2 = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int r = s2 < 0 || d2 < 0 ? -errno : copy_fd_tree(s2, d2, depth + 1);
    if (s2 >= 0) close(s2);
    if (d2 >= 0) close(d2);
    return r;
  }
  if (!S_ISREG(st.st_mode)) return 0;
  int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  int out =
      openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0755);
  int r = in < 0 || out < 0 ? -errno : 0;
  for (off_t left = st.st_size; !r && left > 0;) {
    ssize_t n = sendfile(out, in, NULL, (size_t)(left > (1 << 30) ? (1 << 30) : left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      r = n < 0 ? -errno : -EIO;
    else
      left -= n;
  }
  if (!r && fchmod(out, st.st_mode & 0755) < 0) r = -errno;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  return r;
}

static int copy_fd_tree(int src, int dst, int depth) {
  if (depth > 16) return -ELOOP;
  int dup_fd = dup(src);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (!d) {
    int r = -errno;
    if (dup_fd >= 0) close(dup_fd);
    return r;
  }
  int r = 0;
  struct dirent *de;
  while (!r && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      r = copy_fd_entry(src, dst, de->d_name, depth);
  closedir(d);
  return r;
}

int asbe__agentdir_mount(const char *dir, int *mfd) {
  *mfd = -1;
  int src = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (src < 0) return asbe__failerr("agent dir %s", dir);
  int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
  int r = fs < 0 ? asbe__failerr("fsopen tmpfs") : 0;
  if (!r && (fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
             fsconfig(fs, FSCONFIG_SET_STRING, "source", "asb-agent", 0) < 0 ||
             fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0))
    r = asbe__failerr("tmpfs for the agent dir");
  int m = r < 0 ? -1 : fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID);
  if (!r && m < 0) r = asbe__failerr("fsmount tmpfs for the agent dir");
  if (fs >= 0) close(fs);
  if (!r) {
    int e = copy_fd_tree(src, m, 0);
    if (e < 0) r = asbe__fail(e, "copy the agent dir %s", dir);
  }
  close(src);
  if (r < 0) {
    if (m >= 0) close(m);
    return r;
  }
  *mfd = m;
  return 0;
}
