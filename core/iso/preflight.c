/* asbe_preflight: can this host run sandboxes? Each check names what is
 * missing and how to fix it. Risky probes run in throwaway child processes.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "iso_int.h"
#include "util/buf.h"

typedef struct pf {
  asbi_buf out;
  int failed;
} pf;

static void ok(pf *p, const char *what) {
  asbi_buf_printf(&p->out, "ok   %s\n", what);
}

__attribute__((format(printf, 4, 5))) static void bad(pf *p, const char *what, const char *fix,
                                                      const char *fmt, ...) {
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  asbi_buf_printf(&p->out, "FAIL %s: %s. Fix: %s\n", what, why, fix);
  p->failed = 1;
}

static int has_fs(const char *name) {
  char buf[4096];
  if (asbe__read_small("/proc/filesystems", buf, sizeof buf) <= 0) return 0;
  for (char *l = buf; l && *l;) {
    char *nl = strchr(l, '\n');
    if (nl) *nl = '\0';
    char *t = strrchr(l, '\t');
    if (!strcmp(t ? t + 1 : l, name)) return 1;
    l = nl ? nl + 1 : NULL;
  }
  return 0;
}

/* Runs fn in a child; returns its exit code (0 = fine) or -errno. */
static int in_child(int (*fn)(void *), void *arg) {
  pid_t pid = fork();
  if (pid < 0) return -errno;
  if (pid == 0) _exit(fn(arg));
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int probe_userns(void *arg) {
  (void)arg;
  return unshare(CLONE_NEWUSER) < 0 ? errno : 0;
}

static int write_self(const char *file, const char *v) {
  return asbe__write_str(file, v) < 0 ? errno : 0;
}

/* overlay mounted by root of a new userns (tmpfs layers). */
static int probe_overlay(void *arg) {
  const char *dir = arg;
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) return 10;
  if (write_self("/proc/self/setgroups", "deny") || write_self("/proc/self/uid_map", "0 0 1") ||
      write_self("/proc/self/gid_map", "0 0 1"))
    return 11;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) return 12;
  if (mount("none", dir, "tmpfs", 0, NULL) < 0) return 13;
  if (chdir(dir) < 0) return 14;
  if (mkdir("l", 0755) || mkdir("u", 0755) || mkdir("w", 0755) || mkdir("m", 0755)) return 15;
  if (mount("overlay", "m", "overlay", 0, "lowerdir=l,upperdir=u,workdir=w,userxattr") < 0)
    return 20 + (errno & 0x3f);
  return 0;
}

static int probe_seccomp(void *arg) {
  const asbe_secure *s = arg;
  const char *what;
  if (asbe__secure_finish(s, &what) < 0) return 1;
  /* mount must now fail with EPERM */
  return mount("none", "/", "tmpfs", 0, NULL) < 0 && errno == EPERM ? 0 : 2;
}

/* A userns with the slot-0 mapping, as an fd (for idmapping). */
static int make_userns(pid_t *helper) {
  int sync[2];
  if (pipe2(sync, O_CLOEXEC) < 0) return -errno;
  pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
  if (pid < 0) {
    close(sync[0]);
    close(sync[1]);
    return -errno;
  }
  if (pid == 0) {
    char c;
    close(sync[1]);
    if (read(sync[0], &c, 1) < 0) {
    }
    _exit(0);
  }
  close(sync[0]);
  *helper = pid;
  char p[64], v[64];
  snprintf(v, sizeof v, "0 %u %u\n", ASBE_UID_BASE, ASBE_UID_RANGE);
  snprintf(p, sizeof p, "/proc/%d/uid_map", (int)pid);
  int r = asbe__write_str(p, v);
  snprintf(p, sizeof p, "/proc/%d/gid_map", (int)pid);
  if (r == 0) r = asbe__write_str(p, v);
  snprintf(p, sizeof p, "/proc/%d/ns/user", (int)pid);
  int fd = r == 0 ? open(p, O_RDONLY | O_CLOEXEC) : r;
  if (fd < 0 && r == 0) fd = -errno;
  close(sync[1]); /* helper exits; the fd keeps the userns */
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
  return fd;
}

static unsigned long long sysctl_ull(const char *path) {
  char buf[32];
  return asbe__read_small(path, buf, sizeof buf) > 0 ? strtoull(buf, NULL, 10) : 0;
}

/* Machine-wide counts every sandbox draws on (docs/engine.md, "Limits and
 * resources"): fine for a few sandboxes, tight for many. */
static void shared_counts(pf *p) {
  unsigned long long pid_max = sysctl_ull("/proc/sys/kernel/pid_max");
  if (pid_max && pid_max < 4194304)
    asbi_buf_printf(&p->out,
                    "tip  kernel.pid_max is %llu: every sandbox process takes a host pid too "
                    "(an engine's sandboxes together stop an eighth short of it). For many "
                    "sandboxes: sysctl -w kernel.pid_max=4194304\n",
                    pid_max);
  unsigned long long file_max = sysctl_ull("/proc/sys/fs/file-max");
  if (file_max && file_max < (1ull << 40))
    asbi_buf_printf(&p->out,
                    "tip  fs.file-max is %llu: sandboxes' open files count against it (%u per "
                    "process; their memory is charged to each sandbox's limit). Like systemd: "
                    "sysctl -w fs.file-max=9223372036854775807\n",
                    file_max, ASBE_NOFILE_HARD);
  unsigned long long pty_max = sysctl_ull("/proc/sys/kernel/pty/max"),
                     pty_reserve = sysctl_ull("/proc/sys/kernel/pty/reserve");
  if (pty_max && pty_max < pty_reserve + 64ull * (unsigned long long)atoi(ASBE_PTY_MAX))
    asbi_buf_printf(&p->out,
                    "tip  kernel.pty.max is %llu (%llu of them for the host): each sandbox may "
                    "hold %s. For many sandboxes: sysctl -w kernel.pty.max=%llu\n",
                    pty_max, pty_reserve, ASBE_PTY_MAX,
                    pty_reserve + 64ull * (unsigned long long)atoi(ASBE_PTY_MAX));
}

int asbe_preflight(char **report) {
  pf p;
  memset(&p, 0, sizeof p);
  if (report) *report = NULL;
  if (geteuid() != 0)
    bad(&p, "running as root",
        "start the engine as root (it manages cgroups, loop devices and idmapped mounts)", "%s",
        "euid is not 0");
  else
    ok(&p, "running as root");

  char buf[64] = "";
  asbe__read_small("/proc/sys/user/max_user_namespaces", buf, sizeof buf);
  int r = in_child(probe_userns, NULL);
  if (r != 0)
    bad(&p, "user namespaces",
        "sysctl -w user.max_user_namespaces=15000; on Debian/Ubuntu also sysctl -w "
        "kernel.unprivileged_userns_clone=1 and kernel.apparmor_restrict_unprivileged_userns=0",
        "unshare(CLONE_NEWUSER) failed: %s (max_user_namespaces=%.20s)", strerror(r), buf);
  else
    ok(&p, "user namespaces");

  char tmp[] = "/tmp/asb-preflight-XXXXXX";
  int have_tmp = mkdtemp(tmp) != NULL;
  if (!has_fs("overlay"))
    bad(&p, "overlayfs", "modprobe overlay (CONFIG_OVERLAY_FS)", "%s", "not in /proc/filesystems");
  else if (!have_tmp || (r = in_child(probe_overlay, tmp)) != 0)
    bad(&p, "overlayfs in a user namespace",
        "use Linux >= 5.11 (overlay mounts in user namespaces, 'userxattr')",
        "probe failed (step %d)", have_tmp ? r : -1);
  else
    ok(&p, "overlayfs in a user namespace");

  pid_t helper = 0;
  int uns = make_userns(&helper);
  if (uns < 0) {
    bad(&p, "idmapped mounts", "needs user namespaces (see above)", "no userns: %s",
        strerror(-uns));
  } else {
    int fd = have_tmp ? open_tree(AT_FDCWD, tmp, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC) : -1;
    struct mount_attr a;
    memset(&a, 0, sizeof a);
    a.attr_set = MOUNT_ATTR_IDMAP;
    a.userns_fd = (uint64_t)uns;
    if (fd < 0 || mount_setattr(fd, "", AT_EMPTY_PATH, &a, sizeof a) < 0)
      bad(&p, "idmapped mounts",
          "use Linux >= 5.12 and keep templates on a filesystem with idmapped-mount "
          "support (ext4, xfs, btrfs; tmpfs needs >= 6.3)",
          "open_tree/mount_setattr(MOUNT_ATTR_IDMAP): %s", strerror(errno));
    else
      ok(&p, "idmapped mounts");
    if (fd >= 0) close(fd);
    close(uns);
  }
  if (have_tmp) rmdir(tmp);

  asbe_cg cg;
  char name[64];
  snprintf(name, sizeof name, "asb-preflight-%d", (int)getpid());
  if ((r = asbe__cg_open(&cg, name, 0)) < 0) {
    bad(&p, "cgroups",
        "mount the v1 memory, pids, cpu(,cpuacct) controllers, or cgroup2 with them enabled "
        "(boot with cgroup_enable=memory; systemd: Delegate=yes for the engine's unit)",
        "%s", asbe_errmsg());
  } else {
    char line[1200];
    snprintf(line, sizeof line, "cgroups: %.1100s", cg.info);
    ok(&p, line);
    if (cg.v2_opts && !strstr(cg.v2_opts, "favordynmods"))
      asbi_buf_printf(&p.out,
                      "tip  cgroup moves wait for an RCU grace period. Faster: "
                      "mount -o remount,favordynmods %s (or engine config "
                      "cgroup_favor_dynmods)\n",
                      cg.v2_mount);
    asbe__cg_close(&cg);
  }

  asbe_secure sec;
  if (asbe__read_small("/proc/sys/kernel/seccomp/actions_avail", buf, sizeof buf) <= 0 ||
      !strstr(buf, "errno"))
    bad(&p, "seccomp", "use a kernel with CONFIG_SECCOMP_FILTER", "%s",
        "no SECCOMP_RET_ERRNO in actions_avail");
  else if ((r = asbe__secure_init(&sec)) < 0)
    bad(&p, "seccomp", "apt-get install libseccomp2", "%s", asbe_errmsg());
  else {
    if ((r = in_child(probe_seccomp, &sec)) != 0)
      bad(&p, "seccomp", "use a kernel with CONFIG_SECCOMP_FILTER", "filter probe failed (%d)", r);
    else
      ok(&p, "seccomp filter (no_new_privs + deny-list)");
    asbe__secure_free(&sec);
  }

  int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0 || ioctl(ctl, LOOP_CTL_GET_FREE) < 0)
    bad(&p, "loop devices",
        "modprobe loop (CONFIG_BLK_DEV_LOOP); in a container pass /dev/loop-control",
        "/dev/loop-control: %s", strerror(errno));
  else
    ok(&p, "loop devices");
  if (ctl >= 0) close(ctl);

  if (!has_fs("ext4"))
    bad(&p, "ext4", "modprobe ext4", "%s", "not in /proc/filesystems");
  else if (access("/usr/sbin/mkfs.ext4", X_OK) < 0 && access("/sbin/mkfs.ext4", X_OK) < 0)
    bad(&p, "mkfs.ext4", "apt-get install e2fsprogs", "%s", "not found");
  else
    ok(&p, "ext4 + mkfs.ext4 (disk limits)");

  int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (pfd < 0)
    bad(&p, "pidfd", "use Linux >= 5.10", "pidfd_open: %s", strerror(errno));
  else {
    ok(&p, "pidfd");
    close(pfd);
  }
  int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0)
    bad(&p, "new mount API", "use Linux >= 5.10", "fsopen: %s", strerror(errno));
  else {
    ok(&p, "new mount API (fsopen/fsmount/move_mount)");
    close(fs);
  }
  shared_counts(&p);
  if (access("/bin/busybox", X_OK) < 0 && access("/usr/bin/busybox", X_OK) < 0)
    asbi_buf_puts(&p.out,
                  "note busybox template unavailable. Fix: apt-get install busybox-static\n");
  if (report) *report = asbi_buf_detach(&p.out, NULL);
  asbi_buf_free(&p.out);
  return p.failed ? -1 : 0;
}
