/* The child side of sandbox creation (see child.h).
 * SPDX-License-Identifier: Apache-2.0 */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/util.h"

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

__attribute__((noreturn)) static void die(const asbe_plan *p, const char *what, int err) {
  asbe_msg m;
  memset(&m, 0, sizeof m);
  m.type = ASBE_MSG_ERR;
  m.err = err > 0 ? err : EIO;
  copy_str(m.what, sizeof m.what, what);
  asbe__send_fds(p->sock, &m, sizeof m, NULL, 0);
  _exit(1);
}

#define TRY(expr, what)                  \
  do {                                   \
    if ((expr) < 0) die(p, what, errno); \
  } while (0)

static void mkdir_ok(const asbe_plan *p, const char *path, mode_t mode) {
  if (mkdir(path, mode) < 0 && errno != EEXIST) die(p, path, errno);
}

static void move_fd(const asbe_plan *p, int fd, const char *to) {
  if (move_mount(fd, "", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH) < 0) die(p, to, errno);
  close(fd);
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

/* ---- paths in the template's tree ---------------------------------------- */

/* The template's layers are what a build step (root in a build sandbox)
 * made, and this process still sees the host's tree: an absolute symlink
 * in them, followed here the ordinary way, resolves against the host
 * ("/etc/hostname -> /etc/shadow", "/run -> /tmp"). So every path under r/
 * is resolved below the new root without following any symlink (openat2),
 * and mounts go onto the directory fd through /proc/self/fd/N. */

static int openat2_fd(int dirfd, const char *path, int flags, uint64_t resolve) {
  return asbi_openat2(dirfd, path, flags, 0, resolve);
}

#define IN_TREE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* "/proc/self/fd/<fd>" into buf (no allocation). */
static const char *fd_path(char buf[32], int fd) {
  char digits[12];
  int n = 0;
  do digits[n++] = (char)('0' + fd % 10);
  while ((fd /= 10) > 0);
  copy_str(buf, 32, "/proc/self/fd/");
  size_t at = strlen(buf);
  while (n) buf[at++] = digits[--n];
  buf[at] = '\0';
  return buf;
}

__attribute__((noreturn)) static void die_path(const asbe_plan *p, const char *rel, int err) {
  char what[120];
  copy_str(what, sizeof what,
           err == ELOOP || err == ENOTDIR
               ? "a mount point of the sandbox is a symlink or no directory: /"
               : "mount point /");
  size_t at = strlen(what);
  copy_str(what + at, sizeof what - at, rel);
  die(p, what, err);
}

/* mkdir -p of rel (relative to the new root, fd root) that creates and
 * enters only real directories; an O_PATH fd of the last one. */
static int tree_dir(const asbe_plan *p, int root, const char *rel) {
  char comp[PATH_MAX];
  int cur = root;
  for (const char *s = rel; *s;) {
    size_t n = strcspn(s, "/");
    if (n && n < sizeof comp) {
      memcpy(comp, s, n);
      comp[n] = '\0';
      if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) die_path(p, rel, errno);
      int next = openat2_fd(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, IN_TREE);
      if (next < 0) die_path(p, rel, errno);
      if (cur != root) close(cur);
      cur = next;
    }
    s += n;
    while (*s == '/') s++;
  }
  return cur == root ? openat2_fd(root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC, IN_TREE) : cur;
}

/* Moves the detached mount fd onto the directory rel of the new root. */
static void move_into(const asbe_plan *p, int fd, int root, const char *rel) {
  int t = tree_dir(p, root, rel);
  if (move_mount(fd, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    die_path(p, rel, errno);
  close(t);
  close(fd);
}

/* mount(2) onto the directory rel of the new root. */
static int mount_into(const asbe_plan *p, int root, const char *rel, const char *src,
                      const char *type, unsigned long flags, const char *opts) {
  char buf[32];
  int t = tree_dir(p, root, rel);
  int r = mount(src, fd_path(buf, t), type, flags, opts);
  int e = errno;
  close(t);
  errno = e;
  return r;
}

/* Writes /etc/<name> of the new root: a new file renamed over whatever is
 * there, so a symlink (or fifo) the template put in its place is replaced,
 * never followed. No /etc, or /etc a symlink: nothing to do. */
static void write_etc(int root, const char *name, const char *data) {
  int etc = openat2_fd(root, "etc", O_PATH | O_DIRECTORY | O_CLOEXEC, IN_TREE);
  if (etc < 0) return;
  char tmp[64] = ".asb-";
  copy_str(tmp + 5, sizeof tmp - 5, name);
  unlinkat(etc, tmp, 0);
  int fd = openat(etc, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0) {
    size_t n = strlen(data);
    int ok = write(fd, data, n) == (ssize_t)n;
    close(fd);
    if (!ok || renameat(etc, tmp, etc, name) < 0) unlinkat(etc, tmp, 0);
  }
  close(etc);
}

/* Adds pem to the new root's /etc/ssl/certs/ca-certificates.crt (the
 * bundle Debian's OpenSSL, GnuTLS, curl, Python and git read) unless it is
 * there already. Not by appending: opening the template's file for
 * writing copies it up to the writable layer, and overlayfs fsyncs a
 * copy-up (5-22 ms a create here, for 220 KB). Instead the bundle is read
 * and written to a new file beside it (no copy-up, no fsync: a new file on
 * the writable layer), the PEM added, and renamed over it. Opened beneath
 * the root without following a symlink; must be a regular file
 * (O_NONBLOCK: a fifo put there does not hang the child); streamed through
 * a static buffer (the child does not allocate). Any failure leaves the
 * bundle as it was: the sandbox then trusts only what it trusted before. */
static void add_ca(int root, const char *pem) {
  static char buf[65536];
  size_t n = strlen(pem);
  if (n == 0 || n >= sizeof buf) return;
  int dir = openat2_fd(root, "etc/ssl/certs", O_PATH | O_DIRECTORY | O_CLOEXEC, IN_TREE);
  if (dir < 0) return;
  int in =
      openat2_fd(dir, "ca-certificates.crt", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, IN_TREE);
  struct stat st;
  if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
    if (in >= 0) close(in);
    close(dir);
    return;
  }
  static const char tmp[] = ".asb-ca-certificates.crt";
  unlinkat(dir, tmp, 0);
  int out =
      openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 07777);
  int ok = out >= 0, found = 0;
  size_t keep = 0; /* the last n-1 bytes, kept in front: a match may straddle chunks */
  char last = '\n';
  while (ok && !found) {
    ssize_t r = read(in, buf + keep, sizeof buf - keep);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) ok = 0;
    if (r <= 0) break;
    size_t have = keep + (size_t)r;
    last = buf[have - 1];
    if (memmem(buf, have, pem, n))
      found = 1;
    else if (write(out, buf + keep, (size_t)r) != r)
      ok = 0;
    keep = have < n - 1 ? have : n - 1;
    memmove(buf, buf + have - keep, keep);
  }
  close(in);
  if (ok && !found)
    ok = (last == '\n' || write(out, "\n", 1) == 1) && write(out, pem, n) == (ssize_t)n;
  if (out >= 0) close(out);
  if (!ok || found || renameat(dir, tmp, dir, "ca-certificates.crt") < 0) unlinkat(dir, tmp, 0);
  close(dir);
}

/* add_ca for each certificate of pem in turn: a bundle that holds one of
 * them already (a sandbox made from a snapshot of one that got an earlier
 * set) keeps that one once and gets the others. */
static void add_cas(int root, const char *pem) {
  static const char end[] = "-----END CERTIFICATE-----";
  static char one[8192];
  const char *p = pem;
  while (*p) {
    while (*p == '\n' || *p == '\r' || *p == ' ') p++;
    if (!*p) break;
    const char *e = strstr(p, end);
    size_t n = e ? (size_t)(e - p) + sizeof end - 1 : strlen(p);
    if (p[n] == '\n') n++;
    if (n < sizeof one) {
      memcpy(one, p, n);
      one[n] = '\0';
      add_ca(root, one);
    }
    p += n;
  }
}

/* What /proc and /sys of the host show that a sandbox must not see: the
 * host's boot command line, kernel memory and keys, timers and scheduler
 * internals (as container runtimes mask them), and every block device's
 * details (a loop device's backing_file names another sandbox's state dir
 * and id). Files get /dev/null bound over them, directories an empty
 * read-only tmpfs; what this kernel lacks is skipped. */
static void mask_file(const asbe_plan *p, const char *path) {
  if (mount("/dev/null", path, NULL, MS_BIND, NULL) < 0 && errno != ENOENT) die(p, path, errno);
}

static void mask_dir(const asbe_plan *p, const char *path) {
  if (mount("asb-masked", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
            "size=4k,mode=0555") < 0 &&
      errno != ENOENT)
    die(p, path, errno);
}

static void mask_proc(const asbe_plan *p) {
  static const char *const files[] = {"r/proc/cmdline", "r/proc/kcore", "r/proc/keys",
                                      "r/proc/timer_list", "r/proc/sched_debug",
                                      "r/proc/sysrq-trigger",
                                      /* the host's block devices (other
                                       * sandboxes' disks) and swap files */
                                      "r/proc/partitions", "r/proc/diskstats", "r/proc/swaps"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) mask_file(p, files[i]);
  static const char *const dirs[] = {"r/proc/acpi", "r/proc/scsi"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) mask_dir(p, dirs[i]);
}

/* 16 random bytes as a version-4 UUID, the kernel's boot_id text (36
 * characters and a newline, in id); its length. */
int asbe__boot_id_text(unsigned char b[16], char id[40]) {
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  int w = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) id[w++] = '-';
    w += snprintf(id + w, 40 - (size_t)w, "%02x", b[i]);
  }
  id[w++] = '\n';
  return w;
}

/* /proc/sys/kernel/random/boot_id: the host's is the same for every
 * sandbox and never changes while the host is up. Each start of a sandbox
 * (a reboot of it: create, restart, resume without memory) gets a random
 * version-4 UUID of its own, as a VM would: a file written on the
 * writable layer, outside the sandbox's tree (log/boot_id, beside the
 * agent log: only upper/ and run/ of that filesystem are mounted inside),
 * bound read-only over the host's. A file that stays (not a deleted one):
 * a checkpoint (CRIU, docs/lifecycle.md) takes the bind as an external
 * mount of a file the engine can name again at restore; a deleted source
 * would come back empty. A restore keeps the id (the same boot goes on);
 * the next boot writes a new one. */
static void fake_boot_id(const asbe_plan *p) {
  unsigned char b[16];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = getrandom(b + got, sizeof b - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die(p, "getrandom", errno);
    got += (size_t)n;
  }
  char id[40];
  int w = asbe__boot_id_text(b, id);
  static const char dst[] = "r/proc/sys/kernel/random/boot_id";
  /* w/log is the engine's dir on the layer (no path of the sandbox
   * reaches it); the last boot's file is replaced, never followed */
  int log = openat2_fd(AT_FDCWD, "w/log", O_PATH | O_DIRECTORY | O_CLOEXEC, IN_TREE);
  if (log < 0) die(p, "w/log", errno);
  static const char tmp[] = ".boot_id.new";
  unlinkat(log, tmp, 0);
  int fd = openat(log, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0) die(p, "log/boot_id", errno);
  if (write(fd, id, (size_t)w) != w) die(p, "log/boot_id", errno ? errno : EIO);
  close(fd);
  TRY(renameat(log, tmp, log, ASBE_BOOT_ID_FILE), "log/boot_id");
  char src[32];
  int sfd = openat(log, ASBE_BOOT_ID_FILE, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (sfd < 0) die(p, "log/boot_id", errno);
  close(log);
  if (mount(fd_path(src, sfd), dst, NULL, MS_BIND, NULL) < 0) {
    if (errno != ENOENT) die(p, dst, errno);
  } else {
    TRY(mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL),
        "remount boot_id ro");
  }
  close(sfd);
}

static void mask_sys(const asbe_plan *p) {
  static const char *const dirs[] = {"r/sys/block", "r/sys/class/block", "r/sys/dev/block",
                                     "r/sys/devices/virtual/block", "r/sys/firmware"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) mask_dir(p, dirs[i]);
}

/* Closes every fd but the three given (the engine's are all inherited). */
static void close_all_but(int a, int b, int c) {
  int k[3] = {a, b, c};
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++)
      if (k[j] < k[i]) {
        int t = k[i];
        k[i] = k[j];
        k[j] = t;
      }
  unsigned lo = 3;
  for (int i = 0; i < 3; i++) {
    if (k[i] < (int)lo) continue;
    if ((unsigned)k[i] > lo) syscall(SYS_close_range, lo, (unsigned)k[i] - 1, 0);
    lo = (unsigned)k[i] + 1;
  }
  syscall(SYS_close_range, lo, ~0U, 0);
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
  /* A session of its own: the init and everything it starts must never
   * share the engine's session, nor so its controlling terminal. And none
   * of the engine's fds (clients, files, other sandboxes' pidfds). */
  if (setsid() < 0) die(p, "setsid", errno);
  close_all_but(p->sock, p->wfd, p->logfd);

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
  TRY(mount("asb-stage", p->stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=64k"),
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
  /* the new root: below it, nothing is followed (see tree_dir) */
  int root = openat2_fd(AT_FDCWD, "r", O_PATH | O_DIRECTORY | O_CLOEXEC, IN_TREE);
  if (root < 0) die(p, "open the new root", errno);

  for (int i = 0; i < p->n_binds; i++)
    move_into(p, fds[p->n_layers + i], root, p->bind_dst[i] + 2); /* after "r/" */
  move_into(p, fds[p->n_layers + p->n_binds], root, ".asb");

  /* /run/asb = the run dir on the writable layer (fresh: plain paths below) */
  TRY(mount_into(p, root, "run/asb", "w/run", NULL, MS_BIND, NULL), "bind /run/asb");
  if (p->n_cg) {
    mkdir_ok(p, "r/run/asb/cgroup", 0755);
    TRY(mount("asb-cgroup", "r/run/asb/cgroup", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755,size=4k"),
        "mount cgroup tmpfs");
    for (int i = 0; i < p->n_cg; i++) {
      mkdir_ok(p, p->cg_dst[i], 0755);
      TRY(mount(p->cg_src[i], p->cg_dst[i], NULL, MS_BIND, NULL), p->cg_dst[i]);
    }
    TRY(mount(NULL, "r/run/asb/cgroup", NULL,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL),
        "remount cgroup tmpfs ro");
  }

  TRY(mount_into(p, root, "proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL),
      "mount /proc");

  TRY(mount_into(p, root, "dev", "asb-dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k"),
      "mount /dev");
  /* No /dev/tty: it is whatever terminal its opener controls, and no
   * process of a sandbox may have one of the host (each gets a session of
   * its own); envd's terminals are the sandbox's own devpts below. */
  static const char *const devs[] = {"null", "zero", "full", "random", "urandom"};
  for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) bind_dev(p, devs[i]);
  mask_proc(p);
  fake_boot_id(p);
  mkdir_ok(p, "r/dev/pts", 0755);
  TRY(mount("devpts", "r/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
            "newinstance,ptmxmode=0666,mode=0620,gid=5,max=" ASBE_PTY_MAX),
      "mount devpts");
  TRY(symlink("pts/ptmx", "r/dev/ptmx"), "r/dev/ptmx");
  mkdir_ok(p, "r/dev/shm", 01777);
  TRY(mount("shm", "r/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, p->shm_opts), "mount /dev/shm");
  TRY(symlink("/proc/self/fd", "r/dev/fd"), "r/dev/fd");
  TRY(symlink("/proc/self/fd/0", "r/dev/stdin"), "r/dev/stdin");
  TRY(symlink("/proc/self/fd/1", "r/dev/stdout"), "r/dev/stdout");
  TRY(symlink("/proc/self/fd/2", "r/dev/stderr"), "r/dev/stderr");

  /* /sys read-only if the kernel lets us (it does with our own netns) */
  if (mount_into(p, root, "sys", "sysfs", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 NULL) == 0)
    mask_sys(p);

  write_etc(root, "hostname", p->hostname_line);
  write_etc(root, "hosts", p->hosts);
  if (p->resolv[0]) write_etc(root, "resolv.conf", p->resolv);
  if (p->ca_pem[0]) add_cas(root, p->ca_pem);
  close(root);

  lo_up(p);
  TRY(sethostname(p->hostname, strlen(p->hostname)), "sethostname");

  TRY(chdir("r"), "chdir root");
  TRY(syscall(SYS_pivot_root, ".", "."), "pivot_root");
  TRY(umount2(".", MNT_DETACH), "detach old root");
  TRY(chdir("/"), "chdir /");

  expect(p, ASBE_MSG_EXEC, NULL, 0, NULL);

  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) die(p, "open /dev/null", errno);
  TRY(dup2(null, 0), "dup2");
  TRY(dup2(p->logfd, 1), "dup2");
  TRY(dup2(p->logfd, 2), "dup2");
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
