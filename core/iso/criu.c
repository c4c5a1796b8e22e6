/* A pause with memory to disk: CRIU (checkpoint/restore in userspace) dumps
 * a sandbox's processes into <dir>/checkpoint and restores them later, also
 * after an engine restart or a host reboot (docs/lifecycle.md, "Pause with
 * memory to disk"). Runs the criu binary the engine names, as root.
 *
 * The dump: criu dump of the init's tree, every mount whose source is
 * outside the sandbox's mount namespace declared external (the idmapped
 * template binds and /.asb, /run/asb, the cgroup binds, the /dev and /proc
 * masks of /dev/null and friends, the boot id), the agent log an external
 * file; criu ends the processes once their images are written. Which
 * mount is which is written beside the images (`externals`), so a restore
 * knows what to bind where.
 *
 * The restore: a process forked from the engine makes a mount namespace of
 * its own, mounts the sandbox's root there as a create does (the writable
 * layer, the template's layers idmapped to the sandbox's uid slot under
 * an overlay) and the idmapped binds, and execs criu restore with that
 * root, the host paths of the externals and the agent log as an inherited
 * fd. criu makes the sandbox's namespaces again; the restored init is the
 * engine's child (--restore-sibling).
 *
 * Against a hostile sandbox (tests/security/test_criu.c, docs/lifecycle.md):
 * criu makes a deleted file a process holds again at restore at its old
 * path resolved in the host's mount namespace, so a ghost whose dir is a
 * symlink or crosses a mount is refused after the dump (ghosts_ok, the
 * tasks stopped by --leave-stopped). Tried and holding: a ghost's owner is
 * the sandbox's uid; a deleted unix socket is bound in the sandbox's own
 * namespace; the images are out of the sandbox's reach; a restored task
 * keeps its caps, ids and seccomp filter; a traced task does not hang the
 * dump. Bounded: criu runs in a session of its own and is killed with it
 * at a time limit (base + per GiB); a dump needs room for the memory on
 * the state filesystem (ckpt_reserve). Open: the restored user namespace
 * is owned by host root (its per-user counts are root's, docs/lifecycle.md).
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <linux/openat2.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "iso_int.h"
#include "util/buf.h"
#include "util/util.h"

#define CKPT_DIR "checkpoint"
#define CKPT_DONE "complete"
#define CKPT_EXT "externals"
#define CKPT_PID "restored.pid"
/* a running sandbox's images for its forks, and whose they are */
#define FORK_DIR "fork-checkpoint"
#define FORK_SRC "source"

/* ---- where the images go ------------------------------------------------- */

/* An fd of <dir>/<name> (made 0700 if create), never a symlink, root's,
 * readable by its group at most (while a restore reads it). */
static int ckpt_open_named(const char *dir, const char *name, int create) {
  int d = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d < 0) return -errno;
  if (create && mkdirat(d, name, 0700) < 0 && errno != EEXIST) {
    int r = -errno;
    close(d);
    return r;
  }
  int fd = openat(d, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int r = fd < 0 ? -errno : fd;
  close(d);
  if (r >= 0) {
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 027)) {
      close(fd);
      return -EPERM;
    }
  }
  return r;
}

/* <dir>/checkpoint: a pause's, or a fork's images moved to this sandbox */
static int ckpt_open(const char *dir, int create) {
  return ckpt_open_named(dir, CKPT_DIR, create);
}

int asbe_paused_checkpointed(asbe_engine *e, const char *id) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s", e->sandboxes_dir, id);
  int fd = ckpt_open(dir, 0);
  if (fd < 0) return 0;
  struct stat st;
  int ok = fstatat(fd, CKPT_DONE, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
  close(fd);
  return ok;
}

int asbe_paused_checkpoint_drop(asbe_engine *e, const char *id) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s/%s", e->sandboxes_dir, id, CKPT_DIR);
  /* criu's logs of the last dump and restore stay beside it (root's, in
   * the 0700 state dir): what went wrong, if anything did */
  char from[PATH_MAX + 16], to[PATH_MAX + 16];
  static const char *const logs[] = {"dump.log", "restore.log"};
  for (size_t i = 0; i < sizeof logs / sizeof logs[0]; i++) {
    snprintf(from, sizeof from, "%s/%s", dir, logs[i]);
    snprintf(to, sizeof to, "%s/%s/criu-%s", e->sandboxes_dir, id, logs[i]);
    if (rename(from, to) == 0 && chown(to, 0, 0) == 0) chmod(to, 0600); /* root's again */
  }
  int r = asbe__rm_rf(dir);
  return r < 0 && r != -ENOENT ? asbe__fail(r, "remove %s", dir) : 0;
}

/* ---- running criu -------------------------------------------------------- */

/* The last lines of criu's log in the checkpoint dir, for the error. */
static void log_tail(int dfd, const char *name, char *out, size_t len) {
  out[0] = '\0';
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  char buf[16384];
  off_t end = lseek(fd, 0, SEEK_END);
  off_t from = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
  ssize_t n = pread(fd, buf, sizeof buf - 1, from);
  close(fd);
  if (n <= 0) return;
  buf[n] = '\0';
  /* the first "Error" line that is not one criu prints on every run here
   * (its RLIMIT_NOFILE, the iptables it does not need) nor its summary */
  static const char *const noise[] = {"RLIMIT_NOFILE", "tables", "FAILED.", "cgroupd"};
  char *err = NULL, *last = NULL;
  for (char *p = buf; !err && (p = strstr(p, "Error")); p++) {
    char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    int skip = 0;
    for (size_t k = 0; k < sizeof noise / sizeof noise[0] && !skip; k++) {
      const char *h = memmem(p, n, noise[k], strlen(noise[k]));
      skip = h != NULL;
    }
    if (!skip) err = p;
    last = p;
  }
  if (!err) err = last;
  const char *src = err ? err : buf;
  size_t i = 0;
  for (; src[i] && src[i] != '\n' && i + 1 < len; i++) out[i] = src[i];
  out[i] = '\0';
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How long criu may take to write or read `bytes` of a sandbox's memory. */
static int64_t criu_limit_ms(const asbe_engine *e, uint64_t bytes) {
  return (int64_t)e->criu_timeout_ms +
         (int64_t)((double)e->criu_timeout_per_gib_ms * (double)bytes / (double)(1ull << 30));
}

/* The state, parent and session of a process (/proc/<pid>/stat): 0, -1 if
 * it is gone. */
static int proc_ids(pid_t pid, char *state, pid_t *ppid, pid_t *sid) {
  char p[64], buf[1024];
  snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
  if (asbe__read_small(p, buf, sizeof buf) <= 0) return -1;
  const char *rp = strrchr(buf, ')'); /* the comm may hold anything */
  int pp = 0, pg = 0, ss = 0;
  if (!rp || sscanf(rp + 1, " %c %d %d %d", state, &pp, &pg, &ss) != 4) return -1;
  *ppid = pp;
  *sid = ss;
  return 0;
}

/* 1 if the process is in a cgroup of the sandbox `id` (a path component
 * of one of its /proc/<pid>/cgroup lines: the ids are unique). */
static int in_cgroup_of(pid_t pid, const char *id) {
  char p[64], buf[8192], pat[80];
  snprintf(p, sizeof p, "/proc/%d/cgroup", (int)pid);
  if (asbe__read_small(p, buf, sizeof buf) <= 0) return 0;
  snprintf(pat, sizeof pat, "/%s", id);
  size_t pl = strlen(pat);
  for (const char *h = buf; (h = strstr(h, pat)); h += pl)
    if (h[pl] == '/' || h[pl] == '\n' || h[pl] == '\0') return 1;
  return 0;
}

/* criu ran out of time: SIGKILL to its process group and to every process
 * of its session (run_criu made it their leader; it is not reaped yet, so
 * no other session has that id), and with id (a restore) to the engine's
 * children in that sandbox's cgroups: the restored init, criu's sibling
 * (--restore-sibling), once it left criu's session. Those are the
 * engine's to reap: waited for here (the tasks of a restore that failed
 * are not the sandbox's yet). Rounds until none is left alive (a process
 * may fork while the scan passes it). */
static void kill_criu(pid_t cp, const char *id) {
  pid_t self = getpid(), seen[32];
  int reap[32], nreap = 0;
  kill(-cp, SIGKILL);
  for (int round = 0; round < 3000; round++) { /* 30 s: a bound, not a wait */
    int live = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
      if (de->d_name[0] < '1' || de->d_name[0] > '9') continue;
      pid_t p = (pid_t)atoi(de->d_name);
      char st = 0;
      pid_t ppid = 0, sid = 0;
      if (p == cp || proc_ids(p, &st, &ppid, &sid) < 0 || st == 'Z' || st == 'X') continue;
      int child = ppid == self;
      if (sid != cp && !(child && id && in_cgroup_of(p, id))) continue;
      int known = 0;
      for (int i = 0; i < nreap && !known; i++) known = seen[i] == p;
      if (child && !known && nreap < 32) {
        int fd = (int)syscall(SYS_pidfd_open, p, 0);
        if (fd >= 0) {
          seen[nreap] = p;
          reap[nreap++] = fd;
        }
      }
      kill(p, SIGKILL);
      live++;
    }
    if (d) closedir(d);
    if (!live) break;
    struct timespec ts = {0, 10000000L}; /* until the killed ones are gone */
    nanosleep(&ts, NULL);
  }
  for (int i = 0; i < nreap; i++) {
    struct pollfd pf = {reap[i], POLLIN, 0};
    poll(&pf, 1, 5000);
    siginfo_t si;
    waitid((idtype_t)P_PIDFD, (id_t)reap[i], &si, WEXITED | WNOHANG);
    close(reap[i]);
  }
}

/* fork + exec criu with argv, in a session of its own; fd `keep` (or -1)
 * as fd 3 of criu, the image dir as fd 4. setup (or NULL) runs in the
 * child first (only syscalls: the engine is multi-threaded); its failure
 * is exit 120+. After limit_ms it is killed (kill_criu; id: the sandbox a
 * restore makes) and -ETIMEDOUT returned. The exit status, or -errno. */
static int run_criu(const char *const *argv, int dirfd, int keep, int (*setup)(const void *),
                    const void *arg, int64_t limit_ms, const char *id) {
  pid_t pid = fork();
  if (pid < 0) return -errno;
  if (pid == 0) {
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    if (setsid() < 0) _exit(120);
    if (setup && setup(arg) < 0) _exit(121);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) _exit(122);
    if (keep >= 0 && dup2(keep, 3) < 0) _exit(123);
    if (dup2(dirfd, 4) < 0) _exit(123);
    syscall(SYS_close_range, 5, ~0U, 0);
    if (keep < 0) close(3);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  /* our unreaped child: its pid is not reused before the waitpid below */
  int pfd = (int)syscall(SYS_pidfd_open, pid, 0), timed_out = 0;
  int64_t end = mono_ms() + limit_ms;
  while (pfd >= 0) {
    int64_t left = end - mono_ms();
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    struct pollfd pf = {pfd, POLLIN, 0};
    int n = poll(&pf, 1, left > 3600000 ? 3600000 : (int)left);
    if (n > 0 || (n < 0 && errno != EINTR)) break;
  }
  if (pfd >= 0) close(pfd);
  if (timed_out) kill_criu(pid, id);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -errno;
  if (timed_out) return -ETIMEDOUT;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

typedef struct argv_b {
  const char *v[256];
  char *own[256];
  int n, nown;
} argv_b;

static void av_add(argv_b *a, const char *s) {
  if (a->n < 255) a->v[a->n++] = s;
  a->v[a->n] = NULL;
}

static void av_addf(argv_b *a, const char *fmt, const char *x, const char *y) {
  char *s = asbe__strfmt(fmt, x, y);
  if (!s || a->nown >= 256) {
    free(s);
    return;
  }
  a->own[a->nown++] = s;
  av_add(a, s);
}

static void av_free(argv_b *a) {
  for (int i = 0; i < a->nown; i++) free(a->own[i]);
}

/* ---- ghost files ---------------------------------------------------------- */

/* criu keeps a file a process holds open after its unlink (a "ghost":
 * an fd, a cwd, a mapping) in the images and makes it again at restore,
 * as the host's root, at its old path under its mount, resolved in criu's
 * own mount namespace, which is the host's: a symlink the sandbox put on
 * that path (its dir removed, a link to /etc made in its place) would
 * make the file there, with the owner and mode the image says. So every
 * ghost's dir must be reached from its mount's root through directories
 * of that very mount, no symlink and no other mount on the way (criu sees
 * the mount alone), as criu will look for it (a missing dir: its parent).
 * Checked on the stopped tasks after the dump (--leave-stopped): nothing
 * of the sandbox runs between the check and the restore. 0 if every
 * ghost is safe, -EPERM with why filled if not. */
static int ghost_dir_ok(pid_t pid, const char *file, const char *mi, char *why, size_t wl) {
  struct statx fx;
  if (statx(AT_FDCWD, file, 0, STATX_NLINK | STATX_MNT_ID, &fx) < 0) return 0; /* gone: no ghost */
  if (fx.stx_nlink > 0 || !(fx.stx_mask & STATX_MNT_ID)) return 0;
  char link[PATH_MAX];
  ssize_t n = readlink(file, link, sizeof link - 1);
  if (n <= 0) return 0;
  link[n] = '\0';
  static const char del[] = " (deleted)";
  size_t dl = sizeof del - 1;
  if ((size_t)n <= dl || strcmp(link + n - dl, del) || link[0] != '/') return 0; /* memfd, ... */
  link[n - dl] = '\0';
  /* its mount in the task's mountinfo: none (a memfd, shm) is criu's own kind */
  char mp[PATH_MAX] = "";
  for (const char *l = mi; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    unsigned long long id = 0;
    char m[PATH_MAX];
    if (sscanf(l, "%llu %*s %*s %*s %4095s", &id, m) == 2 && id == fx.stx_mnt_id) {
      snprintf(mp, sizeof mp, "%s", m);
      break;
    }
  }
  if (!mp[0]) return 0;
  size_t ml = strcmp(mp, "/") ? strlen(mp) : 0;
  if (strchr(mp, '\\') || strncmp(link, mp, ml) || link[ml] != '/') {
    snprintf(why, wl, "%s is not under its mount %s", link, mp);
    return -EPERM;
  }
  char root[64];
  snprintf(root, sizeof root, "/proc/%d/root", (int)pid);
  int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rfd < 0) return 0; /* the task is gone: criu dumped none of it */
  int mfd = asbi_openat2(rfd, ml ? mp : ".", O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                         RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  close(rfd);
  struct statx mx;
  if (mfd < 0 || statx(mfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &mx) < 0 ||
      mx.stx_mnt_id != fx.stx_mnt_id || !(mx.stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
    if (mfd >= 0) close(mfd);
    snprintf(why, wl, "the mount %s of %s is covered", mp, link);
    return -EPERM;
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", link + ml + 1);
  char *slash = strrchr(dir, '/');
  int r = 0;
  for (;;) {
    if (!slash) break; /* the mount's root itself */
    *slash = '\0';
    int d = asbi_openat2(
        mfd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
    if (d >= 0) {
      close(d);
      break;
    }
    int err = errno;
    if (err != ENOENT) {
      snprintf(why, wl, "the dir of the deleted %s is no plain dir of its mount (%s)", link,
               strerror(err));
      r = -EPERM;
      break;
    }
    slash = strrchr(dir, '/'); /* criu tries the parent of a dir that is gone */
  }
  close(mfd);
  return r;
}

/* Every ghost of the task pid and its threads' children, recursively. */
static int ghosts_ok(pid_t pid, int depth, char *why, size_t wl) {
  if (depth > 64) {
    snprintf(why, wl, "its process tree is too deep");
    return -EPERM;
  }
  char p[128], mi[65536];
  snprintf(p, sizeof p, "/proc/%d/mountinfo", (int)pid);
  ssize_t n = asbe__read_small(p, mi, sizeof mi);
  if (n <= 0) return 0; /* gone */
  int r = 0;
  static const char *const one[] = {"cwd", "root", "exe"};
  for (size_t i = 0; i < 3 && r == 0; i++) {
    snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, one[i]);
    r = ghost_dir_ok(pid, p, mi, why, wl);
  }
  static const char *const dirs[] = {"fd", "map_files"};
  for (size_t i = 0; i < 2 && r == 0; i++) {
    snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, dirs[i]);
    DIR *d = opendir(p);
    struct dirent *de;
    while (d && r == 0 && (de = readdir(d))) {
      if (de->d_name[0] == '.') continue;
      char f[400];
      snprintf(f, sizeof f, "%s/%s", p, de->d_name);
      r = ghost_dir_ok(pid, f, mi, why, wl);
    }
    if (d) closedir(d);
  }
  snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
  DIR *t = opendir(p);
  struct dirent *te;
  while (t && r == 0 && (te = readdir(t))) {
    if (te->d_name[0] == '.') continue;
    char c[400], kids[8192];
    snprintf(c, sizeof c, "%s/%s/children", p, te->d_name);
    ssize_t k = asbe__read_small(c, kids, sizeof kids);
    for (char *save = NULL, *s = k > 0 ? strtok_r(kids, " \n", &save) : NULL; s && r == 0;
         s = strtok_r(NULL, " \n", &save))
      r = ghosts_ok((pid_t)atoi(s), depth + 1, why, wl);
  }
  if (t) closedir(t);
  return r;
}

/* The stopped tree goes on (a refused checkpoint): SIGCONT to each. */
static void tree_cont(pid_t pid, int depth) {
  if (depth > 64) return;
  char p[128];
  snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
  DIR *t = opendir(p);
  struct dirent *te;
  while (t && (te = readdir(t))) {
    if (te->d_name[0] == '.') continue;
    char c[400], kids[8192];
    snprintf(c, sizeof c, "%s/%s/children", p, te->d_name);
    ssize_t k = asbe__read_small(c, kids, sizeof kids);
    for (char *save = NULL, *s = k > 0 ? strtok_r(kids, " \n", &save) : NULL; s;
         s = strtok_r(NULL, " \n", &save))
      tree_cont((pid_t)atoi(s), depth + 1);
  }
  if (t) closedir(t);
  kill(pid, SIGCONT);
}

/* ---- dump ---------------------------------------------------------------- */

/* What an external mount of a sandbox is, by its mountpoint and type. */
static const char *ext_kind(const char *mp, const char *fstype, const char *root) {
  if (!strcmp(mp, "/.asb")) return "agent";
  if (!strcmp(mp, "/run/asb")) return "run";
  if (!strcmp(mp, "/proc/sys/kernel/random/boot_id")) return "bootid";
  if (!strncmp(mp, "/run/asb/cgroup/", 16) &&
      (!strcmp(fstype, "cgroup") || !strcmp(fstype, "cgroup2")))
    return "cgroup";
  if (!strcmp(fstype, "devtmpfs")) {
    static const char *const devs[] = {"/null", "/zero", "/full", "/random", "/urandom"};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++)
      if (!strcmp(root, devs[i])) return "dev";
    return NULL;
  }
  /* what criu makes again itself */
  static const char *const inner[] = {"proc", "sysfs", "devpts", "tmpfs", "overlay", "mqueue"};
  for (size_t i = 0; i < sizeof inner / sizeof inner[0]; i++)
    if (!strcmp(fstype, inner[i])) return "";
  return "bind"; /* a template bind or a volume, found again by its mountpoint */
}

/* What a dump of sb writes, about: its anonymous and shmem memory (tmpfs
 * files too), resident or swapped; criu's own records on top. */
static uint64_t dump_bytes(asbe_sandbox *sb) {
  asbe_stats st;
  memset(&st, 0, sizeof st);
  if (asbe__cg_stats(&sb->cg, sb->id, &st) < 0) asbe__clear_error();
  return st.anon_bytes + st.swap_bytes + (8ull << 20);
}

/* Checkpoint images count against the filesystem they are written to (the
 * state dir's), not the sandbox's disk quota (its writable layer): a dump
 * is refused before it starts unless that filesystem has room for it and
 * for what the dumps in progress may still write, with the engine's
 * reserve left free. Its need is then added to those in progress (until
 * ckpt_release). 0, or -ENOSPC with the numbers in the message. */
static int ckpt_reserve(asbe_sandbox *sb, int dfd, uint64_t *need) {
  asbe_engine *e = sb->e;
  *need = dump_bytes(sb);
  struct statvfs vs;
  if (fstatvfs(dfd, &vs) < 0) return asbe__failerr("sandbox %s: statvfs of its checkpoint", sb->id);
  uint64_t avail = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
  pthread_mutex_lock(&e->lock);
  uint64_t others = e->ckpt_reserved;
  int ok = avail >= others && avail - others >= *need + e->criu_disk_reserve;
  if (ok) e->ckpt_reserved += *need;
  pthread_mutex_unlock(&e->lock);
  if (ok) return 0;
  return asbe__fail(-ENOSPC,
                    "sandbox %s: not checkpointed: its memory needs %llu MiB on the state "
                    "filesystem, which has %llu MiB free (%llu MiB of them for checkpoints in "
                    "progress, %llu MiB kept free)",
                    sb->id, (unsigned long long)(*need >> 20), (unsigned long long)(avail >> 20),
                    (unsigned long long)(others >> 20),
                    (unsigned long long)(e->criu_disk_reserve >> 20));
}

static void ckpt_release(asbe_engine *e, uint64_t need) {
  pthread_mutex_lock(&e->lock);
  e->ckpt_reserved = e->ckpt_reserved >= need ? e->ckpt_reserved - need : 0;
  pthread_mutex_unlock(&e->lock);
}

static int dump_run(asbe_sandbox *sb, const char *criu, int dfd, uint64_t need, int live,
                    const char *freezer);

/* live 0: a pause's dump into <dir>/checkpoint (criu leaves the tasks
 * stopped, the stop that follows ends them). live 1: a fork's, into
 * <dir>/fork-checkpoint, of a sandbox the caller froze: criu seizes its
 * tasks through the frozen freezer cgroup (--freeze-cgroup: it thaws the
 * cgroup once they are all ptrace-stopped, and freezes it again before it
 * lets them go, as it found it), and leaves them running. Either needs
 * room on the state filesystem first (ckpt_reserve). */
static int dump_impl(asbe_sandbox *sb, const char *criu, int live) {
  asbe__clear_error();
  if (sb->dead || !asbe_sandbox_alive(sb))
    return asbe__fail(-ESRCH, "sandbox %s is not running", sb->id);
  if (sb->disk_tmpfs)
    return asbe__fail(-EOPNOTSUPP, "sandbox %s: a tmpfs writable layer is no disk to checkpoint to",
                      sb->id);
  if (!live && sb->frozen) return asbe__fail(-EBUSY, "sandbox %s is frozen", sb->id);
  if (live && !sb->frozen) return asbe__fail(-EBUSY, "sandbox %s is not frozen", sb->id);
  const char *dname = live ? FORK_DIR : CKPT_DIR;
  char freezer[PATH_MAX] = "";
  if (live) {
    /* the one asbe__cg_freeze froze: v2's core files, else v1's freezer */
    static const unsigned want[] = {ASBE_CG_CORE, ASBE_CG_FREEZER};
    for (int w = 0; w < 2 && !freezer[0]; w++)
      for (int i = 0; i < sb->cg.n && !freezer[0]; i++)
        if (sb->cg.h[i].ctrl & want[w])
          asbe__cg_path(&sb->cg, i, sb->id, ASBE_CGW_SB, freezer, sizeof freezer);
    if (!freezer[0]) return asbe__fail(-ENOTSUP, "sandbox %s: no freezer cgroup", sb->id);
    asbe_fork_images_drop(sb->e, sb->id); /* an earlier fork's */
  } else {
    asbe_paused_checkpoint_drop(sb->e, sb->id); /* an earlier, used one */
  }
  int dfd = ckpt_open_named(sb->dir, dname, 1);
  if (dfd < 0) return asbe__fail(dfd, "sandbox %s: %s/%s", sb->id, sb->dir, dname);
  uint64_t need = 0;
  int r = ckpt_reserve(sb, dfd, &need);
  if (r < 0) {
    close(dfd);
    char msg[512];
    asbe__save_error(msg, sizeof msg);
    if (live)
      asbe_fork_images_drop(sb->e, sb->id);
    else
      asbe_paused_checkpoint_drop(sb->e, sb->id);
    asbe__restore_error(msg);
    return r;
  }
  r = dump_run(sb, criu, dfd, need, live, freezer);
  ckpt_release(sb->e, need);
  return r;
}

/* The dump itself, in dfd (closed here); need: the bytes it may write. */
static int dump_run(asbe_sandbox *sb, const char *criu, int dfd, uint64_t need, int live,
                    const char *freezer) {
  char path[64], mi[65536];
  snprintf(path, sizeof path, "/proc/%d/mountinfo", (int)sb->pid);
  ssize_t n = asbe__read_small(path, mi, sizeof mi);
  if (n <= 0) {
    close(dfd);
    return asbe__fail(n < 0 ? (int)n : -EIO, "sandbox %s: read %s", sb->id, path);
  }
  argv_b a = {.n = 0};
  av_add(&a, criu);
  av_add(&a, "dump");
  char pid[16];
  snprintf(pid, sizeof pid, "%d", (int)sb->pid);
  av_add(&a, "-t");
  av_add(&a, pid);
  av_add(&a, "-D");
  av_add(&a, "/proc/self/fd/4");
  av_add(&a, "-o");
  av_add(&a, "dump.log");
  av_add(&a, "-v4");
  asbi_buf ext = ASBI_BUF_INIT;
  int k = 0;
  for (char *save = NULL, *l = strtok_r(mi, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    /* id parent maj:min root mountpoint opts [optional...] - fstype source super */
    char root[PATH_MAX], mp[PATH_MAX], fstype[64];
    const char *dash = strstr(l, " - ");
    if (!dash || sscanf(l, "%*s %*s %*s %4095s %4095s", root, mp) != 2 ||
        sscanf(dash + 3, "%63s", fstype) != 1)
      continue;
    const char *kind = ext_kind(mp, fstype, root);
    if (!kind || !*kind) continue;
    if (strchr(mp, '\\') || strchr(mp, ' ')) continue; /* escaped: none of ours */
    char key[16];
    snprintf(key, sizeof key, "e%d", k++);
    av_add(&a, "--external");
    av_addf(&a, "mnt[%s]:%s", mp, key);
    asbi_buf_printf(&ext, "%s %s %s %s\n", key, kind, mp, !strcmp(kind, "dev") ? root : "-");
  }
  /* the agent log (the init's stdout): an external file, an inherited fd
   * at restore */
  char fdinfo[64], fi[1024];
  snprintf(fdinfo, sizeof fdinfo, "/proc/%d/fdinfo/1", (int)sb->pid);
  n = asbe__read_small(fdinfo, fi, sizeof fi);
  unsigned long long mnt = 0, ino = 0;
  if (n > 0) {
    const char *m = strstr(fi, "mnt_id:"), *i = strstr(fi, "ino:");
    if (m) mnt = strtoull(m + 7, NULL, 10);
    if (i) ino = strtoull(i + 4, NULL, 10);
  }
  char filekey[64] = "";
  if (mnt && ino == (unsigned long long)sb->log_ino) {
    snprintf(filekey, sizeof filekey, "file[%llx:%llx]", mnt, ino);
    asbi_buf_printf(&ext, "log file %s -\n", filekey);
    av_add(&a, "--external");
    av_add(&a, filekey);
  }
  /* envd's inotify watches: criu finds a watched file again by its path
   * (overlayfs gives no file handles); /etc it searches itself */
  av_add(&a, "--irmap-scan-path");
  av_add(&a, "/home");
  av_add(&a, "--irmap-scan-path");
  av_add(&a, "/root");
  /* nothing but loopback is left in its netns (the engine took its link
   * away); the TCP connections on it (a code interpreter's kernel talks
   * zmq over loopback) are kept, with TCP repair: nothing is on the link
   * to lock out, and every process of the netns is frozen */
  av_add(&a, "--tcp-established");
  av_add(&a, "--network-lock");
  av_add(&a, "skip");
  if (live) {
    /* they go on; frozen still (criu restores the freezer's state), so
     * the ghost check below sees them as the images do */
    av_add(&a, "--leave-running");
    av_add(&a, "--freeze-cgroup");
    av_add(&a, freezer);
  } else {
    /* the tasks stay stopped after the dump, for the ghost check below;
     * the stop that follows kills them */
    av_add(&a, "--leave-stopped");
  }
  int r = 0;
  int64_t limit = criu_limit_ms(sb->e, need);
  if (!ext.data) r = asbe__fail(-ENOMEM, "sandbox %s: checkpoint", sb->id);
  if (r == 0) {
    int efd = openat(dfd, CKPT_EXT, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (efd < 0 || write(efd, ext.data, ext.len) != (ssize_t)ext.len || fsync(efd) < 0)
      r = asbe__failerr("sandbox %s: write %s", sb->id, CKPT_EXT);
    if (efd >= 0) close(efd);
  }
  if (r == 0) {
    int st = run_criu(a.v, dfd, -1, NULL, NULL, limit, NULL);
    if (st == -ETIMEDOUT) {
      /* criu was killed wherever it was: the tasks it had seized are
       * detached by the kernel; those it had stopped go on */
      tree_cont(sb->pid, 0);
      r = asbe__fail(-ETIMEDOUT,
                     "sandbox %s: criu dump did not finish within %lld s (the time limit for %llu "
                     "MiB): killed",
                     sb->id, (long long)(limit / 1000), (unsigned long long)(need >> 20));
    } else if (st != 0) {
      char why[400];
      log_tail(dfd, "dump.log", why, sizeof why);
      r = asbe__fail(st < 0 ? st : -EIO, "sandbox %s: criu dump failed (exit %d): %s", sb->id, st,
                     why[0] ? why : "see its dump.log");
    } else {
      char why[PATH_MAX + 128] = "";
      if (ghosts_ok(sb->pid, 0, why, sizeof why) < 0) {
        if (!live) tree_cont(sb->pid, 0);
        r = asbe__fail(-EPERM,
                       "sandbox %s: not checkpointed: %s (criu would make it again as root on "
                       "that path)",
                       sb->id, why);
      }
    }
  }
  asbi_buf_free(&ext);
  av_free(&a);
  if (r == 0 && live) {
    /* whose images they are: the forks' restores move them to their own
     * id and uid slot */
    char src[128];
    int n2 = snprintf(src, sizeof src, "%s %u\n", sb->id, (unsigned)sb->host_uid);
    int sfd = openat(dfd, FORK_SRC, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (sfd < 0 || write(sfd, src, (size_t)n2) != n2)
      r = asbe__failerr("sandbox %s: write %s", sb->id, FORK_SRC);
    if (sfd >= 0) close(sfd);
  }
  if (r == 0) {
    /* the images on the disk before anything says they are complete */
    int done = openat(dfd, CKPT_DONE, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (done < 0 || syncfs(dfd) < 0 || fsync(done) < 0 || fsync(dfd) < 0)
      r = asbe__failerr("sandbox %s: record the checkpoint", sb->id);
    if (done >= 0) close(done);
  }
  close(dfd);
  if (r < 0 && live) {
    char msg[512];
    asbe__save_error(msg, sizeof msg);
    asbe_fork_images_drop(sb->e, sb->id);
    asbe__restore_error(msg);
    return r;
  }
  if (r < 0) {
    char msg[512];
    asbe__save_error(msg, sizeof msg);
    /* criu resumed the processes (or never stopped them): it runs as before */
    if (!asbe_sandbox_alive(sb)) {
      /* it did stop them: nothing to go back to but what the images hold */
      asbe__restore_error(msg);
      return r;
    }
    asbe_paused_checkpoint_drop(sb->e, sb->id);
    asbe__restore_error(msg);
    return r;
  }
  return 0;
}

int asbe__criu_dump(asbe_sandbox *sb, const char *criu) {
  return dump_impl(sb, criu, 0);
}

int asbe_sandbox_checkpoint_fork(asbe_sandbox *sb, const char *criu) {
  return dump_impl(sb, criu, 1);
}

int asbe_fork_images_drop(asbe_engine *e, const char *id) {
  asbe__clear_error();
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s/%s", e->sandboxes_dir, id, FORK_DIR);
  int r = asbe__rm_rf(dir);
  return r < 0 && r != -ENOENT ? asbe__fail(r, "remove %s", dir) : 0;
}

/* ---- a fork's images ------------------------------------------------------ */

/* Just enough protobuf for criu's userns image (message userns_entry {
 * repeated uid_gid_extent uid_map = 1; repeated uid_gid_extent gid_map =
 * 2; }, uid_gid_extent { uint32 first = 1, lower_first = 2, count = 3 }).
 * Hand-written: Debian ships no descriptors of criu's images (libprotobuf-c
 * would need criu's .proto compiled in; crit needs python3-protobuf and
 * criu's pycriu), and these are three varints. */
static int pb_varint(const unsigned char *p, size_t n, size_t *at, uint64_t *v) {
  *v = 0;
  for (int sh = 0; sh < 64 && *at < n; sh += 7) {
    unsigned char c = p[(*at)++];
    *v |= (uint64_t)(c & 0x7f) << sh;
    if (!(c & 0x80)) return 0;
  }
  return -EPROTO;
}

static void pb_put_varint(asbi_buf *b, uint64_t v) {
  unsigned char c[10];
  size_t k = 0;
  do {
    c[k] = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v) c[k] |= 0x80;
    k++;
  } while (v);
  asbi_buf_append(b, c, k);
}

/* One uid_gid_extent, its lower_first in [from, from + ASBE_UID_RANGE)
 * moved to the same offset from `to`; re-encoded into out. */
static int pb_extent(const unsigned char *p, size_t n, uid_t from, uid_t to, asbi_buf *out) {
  uint64_t f[4] = {0, 0, 0, 0};
  int seen = 0;
  for (size_t at = 0; at < n;) {
    uint64_t key, v;
    if (pb_varint(p, n, &at, &key) < 0 || (key & 7) != 0 || (key >> 3) < 1 || (key >> 3) > 3 ||
        pb_varint(p, n, &at, &v) < 0)
      return -EPROTO;
    f[key >> 3] = v;
    seen |= 1 << (key >> 3);
  }
  if (seen != 0xe) return -EPROTO;
  if (f[2] >= from && f[2] < (uint64_t)from + ASBE_UID_RANGE) f[2] = f[2] - from + to;
  for (int i = 1; i <= 3; i++) {
    pb_put_varint(out, (uint64_t)i << 3);
    pb_put_varint(out, f[i]);
  }
  return 0;
}

/* A userns image (two magics, then entries of a u32 size and a
 * userns_entry) with its maps moved from the uid slot `from` to `to`. */
static int rewrite_userns(const unsigned char *in, size_t n, uid_t from, uid_t to, asbi_buf *out) {
  if (n < 8) return -EPROTO;
  asbi_buf_append(out, in, 8);
  for (size_t at = 8; at < n;) {
    uint32_t sz;
    if (n - at < 4) return -EPROTO;
    memcpy(&sz, in + at, 4);
    at += 4;
    if (sz > n - at) return -EPROTO;
    const unsigned char *m = in + at;
    asbi_buf msg = ASBI_BUF_INIT;
    int r = 0;
    for (size_t k = 0; k < sz && r == 0;) {
      uint64_t key, len;
      if (pb_varint(m, sz, &k, &key) < 0 || (key & 7) != 2 ||
          ((key >> 3) != 1 && (key >> 3) != 2) || pb_varint(m, sz, &k, &len) < 0 || len > sz - k) {
        r = -EPROTO;
        break;
      }
      asbi_buf ext = ASBI_BUF_INIT;
      r = pb_extent(m + k, (size_t)len, from, to, &ext);
      k += (size_t)len;
      if (r == 0) {
        pb_put_varint(&msg, key);
        pb_put_varint(&msg, ext.len);
        asbi_buf_append(&msg, ext.data, ext.len);
      }
      asbi_buf_free(&ext);
    }
    at += sz;
    uint32_t nsz = (uint32_t)msg.len;
    if (r == 0) {
      asbi_buf_append(out, &nsz, 4);
      if (msg.len) asbi_buf_append(out, msg.data, msg.len);
    }
    asbi_buf_free(&msg);
    if (r < 0) return r;
  }
  return out->data ? 0 : -ENOMEM;
}

/* Every occurrence of the parent's id replaced by the fork's (same
 * length: the protobuf lengths stay right). The cgroup image names the
 * id in every path, the uts image's hostname is it. */
static int rewrite_id(const unsigned char *in, size_t n, const char *from, const char *to,
                      asbi_buf *out) {
  size_t il = strlen(from);
  if (asbi_buf_append(out, in, n) < 0 || !out->data) return -ENOMEM;
  unsigned char *p = (unsigned char *)out->data;
  for (unsigned char *h = p; n >= il && (h = memmem(h, n - (size_t)(h - p), from, il));) {
    memcpy(h, to, il);
    h += il;
  }
  return 0;
}

static int has_prefix_suffix(const char *s, const char *pre, const char *suf) {
  size_t n = strlen(s), pl = strlen(pre), sl = strlen(suf);
  return n >= pl + sl && !strncmp(s, pre, pl) && !strcmp(s + n - sl, suf);
}

/* A fresh boot id for the fork (w/log/boot_id, as a boot writes it; the
 * restore binds it over /proc/sys/kernel/random/boot_id). */
static int fork_boot_id(int wfd) {
  unsigned char b[16];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) return -EIO;
  char id[40];
  int w = asbe__boot_id_text(b, id);
  int log = openat(wfd, "log", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (log < 0) return -errno;
  int fd =
      openat(log, ASBE_BOOT_ID_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  int r = fd < 0 ? -errno : write(fd, id, (size_t)w) == w ? 0 : -EIO;
  if (fd >= 0) close(fd);
  close(log);
  return r;
}

int asbe__criu_fork_images(asbe_sandbox *sb, const char *parent, int wfd) {
  char pdir[PATH_MAX];
  snprintf(pdir, sizeof pdir, "%s/%s", sb->e->sandboxes_dir, parent);
  int pfd = ckpt_open_named(pdir, FORK_DIR, 0);
  if (pfd < 0) return asbe__fail(pfd, "sandbox %s: no fork images of %s", sb->id, parent);
  struct stat st;
  char src[128] = "", pid_[64] = "";
  unsigned from = 0;
  int sfd = openat(pfd, FORK_SRC, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  ssize_t n = sfd < 0 ? -1 : read(sfd, src, sizeof src - 1);
  if (sfd >= 0) close(sfd);
  src[n > 0 ? n : 0] = '\0';
  int r = 0;
  if (fstatat(pfd, CKPT_DONE, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
      sscanf(src, "%63s %u", pid_, &from) != 2 || strcmp(pid_, parent) || !from)
    r = asbe__fail(-ENOENT, "sandbox %s: the fork images of %s are not complete", sb->id, parent);
  else if (strlen(parent) != strlen(sb->id))
    r = asbe__fail(-EINVAL, "sandbox %s: ids of another length than %s's", sb->id, parent);
  int dfd = r < 0 ? -1 : ckpt_open(sb->dir, 1);
  if (r == 0 && dfd < 0) r = asbe__fail(dfd, "sandbox %s: %s/%s", sb->id, sb->dir, CKPT_DIR);
  int dd = r == 0 ? dup(pfd) : -1;
  DIR *d = dd >= 0 ? fdopendir(dd) : NULL;
  if (r == 0 && !d) r = asbe__failerr("sandbox %s: read the fork images", sb->id);
  struct dirent *de;
  while (r == 0 && (de = readdir(d))) {
    const char *nm = de->d_name;
    if (nm[0] == '.' || !strcmp(nm, FORK_SRC) || !strcmp(nm, CKPT_DONE) || !strcmp(nm, CKPT_PID) ||
        has_prefix_suffix(nm, "", ".log"))
      continue;
    if (fstatat(pfd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) continue;
    int uns = has_prefix_suffix(nm, "userns-", ".img");
    int ids = !strcmp(nm, "cgroup.img") || has_prefix_suffix(nm, "utsns-", ".img");
    if (!uns && !ids) {
      /* the rest as it is: linked, not copied (the memory pages are the
       * most of it; the restore only reads them) */
      if (linkat(pfd, nm, dfd, nm, 0) < 0) r = asbe__failerr("sandbox %s: link %s", sb->id, nm);
      continue;
    }
    asbi_buf in = ASBI_BUF_INIT, out = ASBI_BUF_INIT;
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s/%s", pdir, FORK_DIR, nm);
    if (asbi_buf_read_file(&in, path, 16u << 20) < 0) {
      r = asbe__failerr("sandbox %s: read %s", sb->id, nm);
    } else {
      r = uns ? rewrite_userns((const unsigned char *)in.data, in.len, from, sb->host_uid, &out)
              : rewrite_id((const unsigned char *)in.data, in.len, parent, sb->id, &out);
      if (r < 0) r = asbe__fail(r, "sandbox %s: rewrite %s of %s's images", sb->id, nm, parent);
    }
    if (r == 0) {
      int fd = openat(dfd, nm, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0 || write(fd, out.data, out.len) != (ssize_t)out.len)
        r = asbe__failerr("sandbox %s: write %s", sb->id, nm);
      if (fd >= 0) close(fd);
    }
    asbi_buf_free(&in);
    asbi_buf_free(&out);
  }
  if (d)
    closedir(d);
  else if (dd >= 0)
    close(dd);
  if (r == 0 && (r = fork_boot_id(wfd)) < 0) r = asbe__fail(r, "sandbox %s: its boot id", sb->id);
  /* the mountpoint a boot makes in /run/asb (child.c) for the cgroup
   * tmpfs the images hold; a fork's run/ is new */
  if (r == 0 && mkdirat(wfd, "run/cgroup", 0755) < 0 && errno != EEXIST)
    r = asbe__failerr("sandbox %s: /run/asb/cgroup", sb->id);
  if (r == 0) {
    int done = openat(dfd, CKPT_DONE, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (done < 0) r = asbe__failerr("sandbox %s: record the checkpoint", sb->id);
    if (done >= 0) close(done);
  }
  if (dfd >= 0) close(dfd);
  close(pfd);
  return r;
}

/* ---- restore ------------------------------------------------------------- */

typedef struct restore_plan {
  const char *stage;
  int wfd;
  int n_layers;
  const int *layer_fds;
  char layer_dir[ASBE_MAX_LAYERS][8];
  char ovl_opts[4096];
  int n_binds;
  const int *bind_fds;
  char bind_dir[ASBE_MAX_BINDS][8];
  int agent_fd;
  int dfd;                  /* the checkpoint dir, opened in the engine's namespace */
  char ckpt_path[PATH_MAX]; /* and its path, to open it again in the new one */
} restore_plan;

/* In the forked child, before criu: a mount namespace of its own with the
 * sandbox's root at <stage>/r and the idmapped sources beside it. */
static int restore_setup(const void *arg) {
  const restore_plan *p = arg;
  if (unshare(CLONE_NEWNS) < 0) return -1;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) return -1;
  /* criu mounts in its image dir (its cgroup yard): that must be a
   * mount of this namespace, so the dir again by its path here, taken
   * only if it is the very dir the engine checked */
  int nd = open(p->ckpt_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat a, b;
  if (nd < 0 || fstat(nd, &a) < 0 || fstat(p->dfd, &b) < 0 || a.st_dev != b.st_dev ||
      a.st_ino != b.st_ino || dup2(nd, p->dfd) < 0)
    return -1;
  close(nd);
  if (mount("asb-restore", p->stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k") < 0)
    return -1;
  if (chdir(p->stage) < 0) return -1;
  if (mkdir("w", 0700) < 0 || mkdir("r", 0755) < 0 || mkdir("asb", 0755) < 0) return -1;
  if (move_mount(p->wfd, "", AT_FDCWD, "w", MOVE_MOUNT_F_EMPTY_PATH) < 0) return -1;
  for (int i = 0; i < p->n_layers; i++)
    if (mkdir(p->layer_dir[i], 0700) < 0 ||
        move_mount(p->layer_fds[i], "", AT_FDCWD, p->layer_dir[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
      return -1;
  for (int i = 0; i < p->n_binds; i++)
    if (mkdir(p->bind_dir[i], 0755) < 0 ||
        move_mount(p->bind_fds[i], "", AT_FDCWD, p->bind_dir[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
      return -1;
  if (move_mount(p->agent_fd, "", AT_FDCWD, "asb", MOVE_MOUNT_F_EMPTY_PATH) < 0) return -1;
  if (mount("overlay", "r", "overlay", 0, p->ovl_opts) < 0) return -1;
  return 0;
}

/* A user namespace of the slot's mapping (0 -> host_uid, ASBE_UID_RANGE)
 * for idmapping the layers: an fd of it, or -errno. */
static int slot_userns(uid_t host_uid) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) < 0) return -errno;
  pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
  if (pid == 0) {
    char c;
    close(pipefd[1]);
    while (read(pipefd[0], &c, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  close(pipefd[0]);
  int r = pid < 0 ? -errno : 0, fd = -1;
  if (r == 0) {
    char path[64], v[64];
    snprintf(v, sizeof v, "0 %u %u\n", (unsigned)host_uid, ASBE_UID_RANGE);
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
    if ((r = asbe__write_str(path, v)) == 0) {
      snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
      asbe__write_str(path, "deny");
      snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
      r = asbe__write_str(path, v);
    }
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
    if (r == 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) r = -errno;
  }
  close(pipefd[1]);
  if (pid > 0)
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
  return r < 0 ? r : fd;
}

int asbe__criu_userns(uid_t host_uid) {
  return slot_userns(host_uid);
}

int asbe__criu_restore(asbe_sandbox *sb, const char *criu, int wfd, const char *ovl_opts,
                       int n_layers, const int *layer_fds, const char *const *bind_dst, int n_binds,
                       const int *bind_fds, int agent_fd) {
  asbe_engine *e = sb->e;
  int dfd = ckpt_open(sb->dir, 0);
  if (dfd < 0) return asbe__fail(dfd, "sandbox %s: no checkpoint", sb->id);
  char ext[8192];
  int efd = openat(dfd, CKPT_EXT, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  ssize_t n = efd < 0 ? -1 : read(efd, ext, sizeof ext - 1);
  if (efd >= 0) close(efd);
  if (n < 0) {
    close(dfd);
    return asbe__fail(-EIO, "sandbox %s: the checkpoint's %s", sb->id, CKPT_EXT);
  }
  ext[n] = '\0';
  restore_plan p;
  memset(&p, 0, sizeof p);
  p.stage = e->stage_dir;
  p.wfd = wfd;
  p.n_layers = n_layers;
  p.layer_fds = layer_fds;
  for (int i = 0; i < n_layers; i++) snprintf(p.layer_dir[i], sizeof p.layer_dir[i], "l%d", i);
  snprintf(p.ovl_opts, sizeof p.ovl_opts, "%s", ovl_opts);
  p.n_binds = n_binds;
  p.bind_fds = bind_fds;
  for (int i = 0; i < n_binds; i++) snprintf(p.bind_dir[i], sizeof p.bind_dir[i], "b%d", i);
  p.agent_fd = agent_fd;
  p.dfd = dfd;
  snprintf(p.ckpt_path, sizeof p.ckpt_path, "%s/%s", sb->dir, CKPT_DIR);

  argv_b a = {.n = 0};
  av_add(&a, criu);
  av_add(&a, "restore");
  av_add(&a, "-D");
  av_add(&a, "/proc/self/fd/4");
  av_add(&a, "-o");
  av_add(&a, "restore.log");
  av_add(&a, "-v4");
  av_add(&a, "-d");
  av_add(&a, "--restore-sibling");
  av_add(&a, "--pidfile");
  av_add(&a, CKPT_PID);
  char root[PATH_MAX];
  snprintf(root, sizeof root, "%s/r", e->stage_dir);
  av_add(&a, "--root");
  av_add(&a, root);
  av_add(&a, "--tcp-established");
  av_add(&a, "--network-lock");
  av_add(&a, "skip");
  /* Our criu's option (scripts/criu/restore-userns-owner.patch): the
   * sandbox's new user namespace is owned by its slot uid, as a create's
   * (clone_sandbox), not by root, so its per-user counts (inotify, ...)
   * are the slot uid's; a criu without it refuses the restore. */
  char owner[32];
  snprintf(owner, sizeof owner, "%u:%u", (unsigned)sb->host_uid, (unsigned)sb->host_uid);
  av_add(&a, "--userns-owner");
  av_add(&a, owner);
  int r = 0, have_log = 0;
  uint64_t images = 0;
  for (char *save = NULL, *l = strtok_r(ext, "\n", &save); l && r == 0;
       l = strtok_r(NULL, "\n", &save)) {
    char key[64], kind[16], mp[PATH_MAX], arg[64], host[PATH_MAX];
    if (sscanf(l, "%63s %15s %4095s %63s", key, kind, mp, arg) != 4) continue;
    host[0] = '\0';
    if (!strcmp(key, "log") && !strcmp(kind, "file")) {
      if (strncmp(mp, "file[", 5) || strchr(mp, ']') != mp + strlen(mp) - 1) continue;
      av_add(&a, "--inherit-fd");
      av_addf(&a, "fd[3]:%s%s", mp, "");
      have_log = 1;
      continue;
    }
    if (key[0] != 'e') continue;
    if (!strcmp(kind, "agent")) {
      snprintf(host, sizeof host, "%s/asb", e->stage_dir);
    } else if (!strcmp(kind, "run")) {
      snprintf(host, sizeof host, "%s/w/run", e->stage_dir);
    } else if (!strcmp(kind, "bootid")) {
      snprintf(host, sizeof host, "%s/w/log/%s", e->stage_dir, ASBE_BOOT_ID_FILE);
    } else if (!strcmp(kind, "dev")) {
      if (strchr(arg + 1, '/') || arg[0] != '/') continue;
      snprintf(host, sizeof host, "/dev%s", arg);
    } else if (!strcmp(kind, "cgroup")) {
      const char *name = mp + 16;
      for (int i = 0; i < sb->cg.n; i++)
        if (!strcmp(sb->cg.h[i].name, name))
          asbe__cg_path(&sb->cg, i, sb->id, ASBE_CGW_WORKLOAD, host, sizeof host);
    } else if (!strcmp(kind, "bind")) {
      for (int i = 0; i < n_binds; i++)
        if (!strcmp(bind_dst[i], mp)) snprintf(host, sizeof host, "%s/b%d", e->stage_dir, i);
    }
    if (!host[0]) {
      r = asbe__fail(-ENOENT, "sandbox %s: the checkpoint's mount %s (%s) has no source now",
                     sb->id, mp, kind);
      break;
    }
    av_add(&a, "--external");
    char *s = asbe__strfmt("mnt[%s]:%s", key, host);
    if (!s) {
      r = asbe__fail(-ENOMEM, "sandbox %s", sb->id);
      break;
    }
    a.own[a.nown++] = s;
    av_add(&a, s);
  }
  if (r == 0) {
    /* The restored tasks read their images themselves: first as the
     * slot uid and gid (--userns-owner, before criu writes their user
     * namespace's maps), then as the sandbox's root (the same host ids).
     * So root's files, readable by the sandbox's gid, in a dir it may
     * search. Still out of the sandbox's reach: no path of it leads here
     * (the state dir is root's, 0700), and they go after the restore. */
    int dd = dup(dfd);
    DIR *d = dd >= 0 ? fdopendir(dd) : NULL;
    struct dirent *de;
    struct stat is;
    while (d && (de = readdir(d)))
      if (de->d_name[0] != '.') {
        if (fchownat(dfd, de->d_name, 0, sb->host_uid, AT_SYMLINK_NOFOLLOW) == 0)
          fchmodat(dfd, de->d_name, 0640, 0);
        if (fstatat(dfd, de->d_name, &is, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(is.st_mode))
          images += (uint64_t)is.st_size; /* what criu reads back */
      }
    if (d)
      closedir(d);
    else if (dd >= 0)
      close(dd);
    if (fchown(dfd, 0, sb->host_uid) < 0 || fchmod(dfd, 0750) < 0)
      r = asbe__failerr("sandbox %s: chown its checkpoint", sb->id);
  }
  if (r == 0) {
    unlinkat(dfd, CKPT_PID, 0);
    unlinkat(dfd, "restore.log", 0); /* a log found below is this run's */
    int64_t limit = criu_limit_ms(e, images);
    int st = run_criu(a.v, dfd, have_log ? sb->log_fd : -1, restore_setup, &p, limit, sb->id);
    if (st == -ETIMEDOUT) {
      r = asbe__fail(-ETIMEDOUT,
                     "sandbox %s: criu restore did not finish within %lld s (the time limit for "
                     "%llu MiB of images): killed",
                     sb->id, (long long)(limit / 1000), (unsigned long long)(images >> 20));
    } else if (st != 0) {
      char why[400];
      log_tail(dfd, "restore.log", why, sizeof why);
      /* criu parses its options before it opens its log: none written is
       * (most likely) a criu that does not know --userns-owner */
      int no_log = faccessat(dfd, "restore.log", F_OK, AT_SYMLINK_NOFOLLOW) != 0;
      r = asbe__fail(-EIO, "sandbox %s: criu restore failed (exit %d): %s", sb->id, st,
                     why[0]                  ? why
                     : st >= 120 && st < 128 ? "setting up its root"
                     : no_log
                         ? "it wrote no restore.log: it refused its options (a criu without our "
                           "patches? the engine needs --userns-owner: run scripts/build-criu.sh)"
                         : "see restore.log");
    }
  }
  av_free(&a);
  if (r == 0) {
    char buf[32];
    int pf = openat(dfd, CKPT_PID, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t m = pf < 0 ? -1 : read(pf, buf, sizeof buf - 1);
    if (pf >= 0) close(pf);
    buf[m > 0 ? m : 0] = '\0';
    sb->pid = (pid_t)atoi(buf);
    if (sb->pid <= 0) r = asbe__fail(-ESRCH, "sandbox %s: criu restore: no pid", sb->id);
  }
  close(dfd);
  return r;
}
