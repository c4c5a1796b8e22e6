/* envd: process creation. clone(CLONE_VM | CLONE_VFORK) on a small
 * per-thread stack, as glibc's posix_spawn does, so a spawn costs no page
 * table copy; the child only makes raw system calls (no allocation, no
 * locks, no glibc set*id broadcast) between clone and execve.
 * SPDX-License-Identifier: Apache-2.0 */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#define CHILD_STACK (64u * 1024u)

/* One stack: callers serialise spawns (the process table lock). */
static void *t_stack;

__attribute__((no_sanitize("address", "undefined"))) static size_t c_strlen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

__attribute__((no_sanitize("address", "undefined"))) static void c_fail(envd_spawn *s,
                                                                        const char *stage,
                                                                        int err) {
  size_t i = 0;
  for (; stage[i] && i + 1 < sizeof s->fail_stage; i++) s->fail_stage[i] = stage[i];
  s->fail_stage[i] = '\0';
  s->fail_errno = err ? err : EINVAL;
  syscall(SYS_exit_group, 127);
}

__attribute__((no_sanitize("address", "undefined"))) static int child_main(void *arg) {
  envd_spawn *s = arg;
  /* Signals: envd blocks SIGCHLD/SIGPIPE/...; a new program starts with an
   * empty mask (handled signals are reset by execve itself). */
  unsigned long empty[2] = {0, 0};
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, empty, NULL, sizeof(long));
  if (s->pty) {
    if (syscall(SYS_setsid) < 0) c_fail(s, "setsid", errno);
    if (syscall(SYS_ioctl, s->fd_out, TIOCSCTTY, 0) < 0) c_fail(s, "set controlling tty", errno);
  } else if (syscall(SYS_setpgid, 0, 0) < 0) {
    c_fail(s, "setpgid", errno);
  }
  long x3 = -1, x4 = -1;
  if (s->extra_fds) {
    /* above 4 first, so that neither dup2 below clobbers the other's source */
    x3 = syscall(SYS_fcntl, s->fd_3, F_DUPFD_CLOEXEC, 16);
    x4 = syscall(SYS_fcntl, s->fd_4, F_DUPFD_CLOEXEC, 16);
    if (x3 < 0 || x4 < 0) c_fail(s, "dup2", errno);
  }
  if (syscall(SYS_dup2, s->fd_in, 0) < 0 || syscall(SYS_dup2, s->fd_out, 1) < 0 ||
      syscall(SYS_dup2, s->fd_err, 2) < 0)
    c_fail(s, "dup2", errno);
  if (s->extra_fds && (syscall(SYS_dup2, x3, 3) < 0 || syscall(SYS_dup2, x4, 4) < 0))
    c_fail(s, "dup2", errno);
  if (s->cgroup_procs) {
    char num[24];
    long pid = syscall(SYS_getpid);
    int n = 0;
    char tmp[24];
    do {
      tmp[n++] = (char)('0' + pid % 10);
      pid /= 10;
    } while (pid);
    for (int i = 0; i < n; i++) num[i] = tmp[n - 1 - i];
    num[n++] = '\n';
    for (char *const *cg = s->cgroup_procs; *cg; cg++) {
      long fd = syscall(SYS_openat, AT_FDCWD, *cg, O_WRONLY | O_CLOEXEC);
      if (fd < 0) c_fail(s, "join cgroup", errno);
      if (syscall(SYS_write, fd, num, (size_t)n) != n) c_fail(s, "join cgroup", errno);
      syscall(SYS_close, fd);
    }
  }
  if (s->oom_score_adj >= -1000) {
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      char v[8];
      int n = 0, x = s->oom_score_adj;
      if (x < 0) {
        v[n++] = '-';
        x = -x;
      }
      if (x >= 1000) v[n++] = (char)('0' + x / 1000 % 10);
      if (x >= 100) v[n++] = (char)('0' + x / 100 % 10);
      if (x >= 10) v[n++] = (char)('0' + x / 10 % 10);
      v[n++] = (char)('0' + x % 10);
      syscall(SYS_write, fd, v, (size_t)n);
      syscall(SYS_close, fd);
    }
  }
  if (s->nofile_max) {
    /* lower only: a hard limit above envd's own cannot be set anyway */
    struct rlimit cur, want = {s->nofile_cur, s->nofile_max};
    if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &cur) == 0 && want.rlim_max > cur.rlim_max) {
      want.rlim_max = cur.rlim_max;
      if (want.rlim_cur > want.rlim_max) want.rlim_cur = want.rlim_max;
    }
    if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &want, NULL) < 0)
      c_fail(s, "set the open-file limit", errno);
  }
  if (s->set_ids) {
    if (syscall(SYS_setgroups, (size_t)s->ngroups, s->groups) < 0) c_fail(s, "setgroups", errno);
    if (syscall(SYS_setresgid, s->gid, s->gid, s->gid) < 0) c_fail(s, "setgid", errno);
    if (syscall(SYS_setresuid, s->uid, s->uid, s->uid) < 0) c_fail(s, "setuid", errno);
  }
  if (syscall(SYS_chdir, s->cwd) < 0) c_fail(s, "chdir", errno);
  syscall(SYS_execve, s->path, s->argv, s->envp);
  int e = errno;
  const char *m = e == EACCES ? s->msg_acces : s->msg_noent;
  if (m) syscall(SYS_write, 2, m, c_strlen(m));
  syscall(SYS_exit_group, e == EACCES ? 126 : 127);
  return 0;
}

pid_t envd_spawn_run(envd_spawn *s) {
  if (!t_stack) {
    void *p = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return -1;
    t_stack = p;
  }
  s->fail_errno = 0;
  s->fail_stage[0] = '\0';
  pid_t pid = clone(child_main, (char *)t_stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, s);
  return pid;
}
