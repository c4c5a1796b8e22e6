/* The child side of sandbox creation (see child.h).
 * SPDX-License-Identifier: Apache-2.0 */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int asbe__send_fds(int sock, const void *data, size_t len, const int *fds, int nfds) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * ASBE_MAX_FDS)];
    struct cmsghdr align;
  } u;
  if (nfds > ASBE_MAX_FDS) return -EINVAL;
  struct iovec io = {(void *)data, len};
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &io;
  mh.msg_iovlen = 1;
  if (nfds > 0) {
    memset(&u, 0, sizeof u);
    mh.msg_control = u.buf;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
  }
  for (;;) {
    ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    if (n >= 0) return (size_t)n == len ? 0 : -EIO;
    if (errno != EINTR) return -errno;
  }
}

int asbe__recv_fds(int sock, void *data, size_t len, int *fds, int max, int *nfds) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * ASBE_MAX_FDS)];
    struct cmsghdr align;
  } u;
  struct iovec io = {data, len};
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &io;
  mh.msg_iovlen = 1;
  mh.msg_control = u.buf;
  mh.msg_controllen = sizeof u.buf;
  if (nfds) *nfds = 0;
  ssize_t n;
  do n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int cnt = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    int *in = (int *)CMSG_DATA(c);
    for (int i = 0; i < cnt; i++) {
      if (fds && nfds && *nfds < max)
        fds[(*nfds)++] = in[i];
      else
        close(in[i]);
    }
  }
  return (int)n;
}

/* ---- child --------------------------------------------------------------- */

static void copy_str(char *dst, size_t cap, const char *src) {
  size_t i = 0;
  for (; src[i] && i + 1 < cap; i++) dst[i] = src[i];
  dst[i] = '\0';
}

__attribute__((noreturn)) static void die(const asbe_plan *p, const char *what,
                                          int err) {
  asbe_msg m;
  memset(&m, 0, sizeof m);
  m.type = ASBE_MSG_ERR;
  m.err = err > 0 ? err : EIO;
  copy_str(m.what, sizeof m.what, what);
  asbe__send_fds(p->sock, &m, sizeof m, NULL, 0);
  _exit(1);
}

#define TRY(expr, what)                    \
  do {                                     \
    if ((expr) < 0) die(p, what, errno);   \
  } while (0)

static void mkdir_ok(const asbe_plan *p, const char *path, mode_t mode) {
  if (mkdir(path, mode) < 0 && errno != EEXIST) die(p, path, errno);
}

static void move_fd(const asbe_plan *p, int fd, const char *to) {
  if (move_mount(fd, "", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH) < 0)
    die(p, to, errno);
  close(fd);
}

/* mkdir -p for a path relative to the stage (no allocation). */
static void mkdirs(const asbe_plan *p, const char *path) {
  char tmp[PATH_MAX];
  copy_str(tmp, sizeof tmp, path);
  for (char *s = tmp + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    mkdir(tmp, 0755);
    *s = '/';
  }
  mkdir_ok(p, tmp, 0755);
}

static void bind_dev(const asbe_plan *p, const char *name) {
  char src[32] = "/dev/", dst[32] = "r/dev/";
  copy_str(src + 5, sizeof src - 5, name);
  copy_str(dst + 6, sizeof dst - 6, name);
  int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) die(p, dst, errno);
  close(fd);
  TRY(mount(src, dst, NULL, MS_BIND, NULL), dst);
}

static void write_file(const char *path, const char *data) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return; /* a template without /etc: fine */
  size_t n = strlen(data);
  if (write(fd, data, n) < 0) {
  }
  close(fd);
}

static void lo_up(const asbe_plan *p) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) die(p, "socket", errno);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  copy_str(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  TRY(ioctl(s, SIOCGIFFLAGS, &ifr), "SIOCGIFFLAGS lo");
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  TRY(ioctl(s, SIOCSIFFLAGS, &ifr), "SIOCSIFFLAGS lo");
  close(s);
}

static void expect(const asbe_plan *p, int type, int *fds, int max, int *nfds) {
  asbe_msg m;
  int r = asbe__recv_fds(p->sock, &m, sizeof m, fds, max, nfds);
  if (r <= 0) _exit(1); /* parent gone */
  if (m.type != type) die(p, "protocol", EPROTO);
}

void asbe__child_main(const asbe_plan *p) {
  /* If the engine dies before we exec, die too; cleared before exec. */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  for (int s = 1; s < 65; s++)
    if (s != SIGKILL && s != SIGSTOP) sigaction(s, &sa, NULL);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);

  int fds[ASBE_MAX_LAYERS + ASBE_MAX_BINDS + 2], nfds = 0;
  expect(p, ASBE_MSG_GO, fds, (int)(sizeof fds / sizeof fds[0]), &nfds);
  if (nfds != p->n_layers + p->n_binds + 1) die(p, "fds", EPROTO);

  /* the parent has written our uid/gid maps: become root inside. Raw
   * syscalls: glibc's wrappers would try to change the credentials of the
   * engine's other threads too, which do not exist here (and can hang) */
  TRY(syscall(SYS_setgroups, 0, NULL), "setgroups");
  TRY(syscall(SYS_setresgid, 0, 0, 0), "setresgid");
  TRY(syscall(SYS_setresuid, 0, 0, 0), "setresuid");
  umask(022);

  /* we are in <sb> of every hierarchy now: that becomes our cgroup root */
  TRY(unshare(CLONE_NEWCGROUP), "unshare cgroup ns");
  asbe_msg m;
  memset(&m, 0, sizeof m);
  m.type = ASBE_MSG_CG;
  if (asbe__send_fds(p->sock, &m, sizeof m, NULL, 0) < 0) _exit(1);

  TRY(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "make / private");
  TRY(mount("asb-stage", p->stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
            "mode=0700,size=64k"),
      "mount stage tmpfs");
  TRY(chdir(p->stage), "chdir stage");
  mkdir_ok(p, "w", 0700);
  mkdir_ok(p, "r", 0755);
  move_fd(p, p->wfd, "w");
  for (int i = 0; i < p->n_layers; i++) {
    mkdir_ok(p, p->layer_dir[i], 0700);
    move_fd(p, fds[i], p->layer_dir[i]);
  }
  TRY(mount("overlay", "r", "overlay", 0, p->ovl_opts), "mount overlay");

  for (int i = 0; i < p->n_binds; i++) {
    mkdirs(p, p->bind_dst[i]);
    move_fd(p, fds[p->n_layers + i], p->bind_dst[i]);
  }
  mkdirs(p, "r/.asb");
  move_fd(p, fds[p->n_layers + p->n_binds], "r/.asb");

  /* /run/asb = the run dir on the writable layer */
  mkdirs(p, "r/run/asb");
  TRY(mount("w/run", "r/run/asb", NULL, MS_BIND, NULL), "bind /run/asb");
  if (p->n_cg) {
    mkdir_ok(p, "r/run/asb/cgroup", 0755);
    TRY(mount("asb-cgroup", "r/run/asb/cgroup", "tmpfs",
              MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=4k"),
        "mount cgroup tmpfs");
    for (int i = 0; i < p->n_cg; i++) {
      mkdir_ok(p, p->cg_dst[i], 0755);
      TRY(mount(p->cg_src[i], p->cg_dst[i], NULL, MS_BIND, NULL), p->cg_dst[i]);
    }
    TRY(mount(NULL, "r/run/asb/cgroup", NULL,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL),
        "remount cgroup tmpfs ro");
  }

  mkdirs(p, "r/proc");
  TRY(mount("proc", "r/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL),
      "mount /proc");

  mkdirs(p, "r/dev");
  TRY(mount("asb-dev", "r/dev", "tmpfs", MS_NOSUID | MS_NOEXEC,
            "mode=0755,size=64k"),
      "mount /dev");
  static const char *const devs[] = {"null", "zero", "full", "random", "urandom",
                                     "tty"};
  for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) bind_dev(p, devs[i]);
  mkdir_ok(p, "r/dev/pts", 0755);
  TRY(mount("devpts", "r/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
            "newinstance,ptmxmode=0666,mode=0620,gid=5,max=" ASBE_PTY_MAX),
      "mount devpts");
  TRY(symlink("pts/ptmx", "r/dev/ptmx"), "r/dev/ptmx");
  mkdir_ok(p, "r/dev/shm", 01777);
  TRY(mount("shm", "r/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, p->shm_opts),
      "mount /dev/shm");
  TRY(symlink("/proc/self/fd", "r/dev/fd"), "r/dev/fd");
  TRY(symlink("/proc/self/fd/0", "r/dev/stdin"), "r/dev/stdin");
  TRY(symlink("/proc/self/fd/1", "r/dev/stdout"), "r/dev/stdout");
  TRY(symlink("/proc/self/fd/2", "r/dev/stderr"), "r/dev/stderr");

  /* /sys read-only if the kernel lets us (it does with our own netns) */
  if (mkdir("r/sys", 0755) == 0 || errno == EEXIST)
    mount("sysfs", "r/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
          NULL);

  write_file("r/etc/hostname", p->hostname_line);
  write_file("r/etc/hosts", p->hosts);

  lo_up(p);
  TRY(sethostname(p->hostname, strlen(p->hostname)), "sethostname");

  TRY(chdir("r"), "chdir root");
  TRY(syscall(SYS_pivot_root, ".", "."), "pivot_root");
  TRY(umount2(".", MNT_DETACH), "detach old root");
  TRY(chdir("/"), "chdir /");

  expect(p, ASBE_MSG_EXEC, NULL, 0, NULL);

  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  int log = open("/run/asb/agent.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                 0600);
  if (null < 0 || log < 0) die(p, "open /dev/null or /run/asb/agent.log", errno);
  TRY(dup2(null, 0), "dup2");
  TRY(dup2(log, 1), "dup2");
  TRY(dup2(log, 2), "dup2");
  /* every other inherited fd is closed: only the socket (CLOEXEC) remains */
  int keep = p->sock;
  if (keep > 3) syscall(SYS_close_range, 3, keep - 1, 0);
  syscall(SYS_close_range, keep + 1, ~0U, 0);

  int r = asbe__rlimits_set(1);
  if (r < 0) die(p, "resource limits", -r);
  r = asbe__secure_bounding(p->sec);
  if (r < 0) die(p, "capability bounding set", -r);
  const char *what = "";
  r = asbe__secure_finish(p->sec, &what);
  if (r < 0) die(p, what, -r);
  prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
  execve("/.asb/bin/asb-init", p->argv, p->envp);
  die(p, "exec /.asb/bin/asb-init", errno);
}
