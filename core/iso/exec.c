/* Running programs inside a running sandbox without its agent, and sockets
 * into it.
 *
 * exec, fast path: ask the sandbox's exec service (asb-init -x, see
 * init/exec_proto.h), a process inside that is already in the workload
 * cgroups and under the seccomp filter, to fork the command; it passes back a
 * pidfd and later the exit status. No fork of the engine, no cgroup move
 * (an RCU grace period when cold), no seccomp load (a JIT compile).
 *
 * exec, fallback (service not up yet, or gone): fork an intermediate that
 * joins the workload cgroups (as host root), then setns(pidfd of the init,
 * every namespace); it clone3()s the real child with CLONE_PARENT (so the
 * child is ours to wait for, yet inside the pid namespace), reports its pid
 * and exits. The child starts a session of its own (it must never share the
 * engine's session or terminal), applies the sandbox's hardening, switches
 * user and execs.
 *
 * Sockets of /run/asb: everything under a sandbox's root is the sandbox's to
 * change, and /proc/<init>/root/... resolved the ordinary way follows a
 * symlink the sandbox planted against the HOST's root. So the engine never
 * hands such a path to connect(), libcurl or open(): asbe__run_open resolves
 * it inside the sandbox root with openat2 (RESOLVE_IN_ROOT, no symlinks, no
 * magic links), checks the type and that it lies on the sandbox's own
 * writable layer (a host file bound into the sandbox, /usr for one, is not
 * the sandbox's), and the engine connects through /proc/self/fd/<O_PATH fd>,
 * i.e. to exactly the inode it checked. Handing the sockets over as fds
 * (socket activation through asb-init) was the alternative; it needs envd
 * and the init to pass listeners along for no stronger guarantee, since the
 * socket the engine reaches is the sandbox's either way.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init/exec_path.h"
#include "init/exec_proto.h"
#include "iso_int.h"
#include "util/buf.h"
#include "util/util.h"

#define ALL_NS                                                                               \
  (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC | \
   CLONE_NEWCGROUP)

static const char *const k_default_env_root[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
    "USER=root",
    "TERM=xterm",
    "LANG=C.UTF-8",
    NULL};
static const char *const k_default_env_user[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
                                                 "HOME=/home/user",
                                                 "USER=user",
                                                 "TERM=xterm",
                                                 "LANG=C.UTF-8",
                                                 NULL};

static int connect_fd(int s, int sock_fd, int timeout_ms);

static void report_errno(int fd, int err) {
  if (write(fd, &err, sizeof err) < 0) {
  }
}

typedef struct exec_ctx {
  const asbe_exec_opts *o;
  asbe_sandbox *sb;
  int in[2], out[2], err[2];
  int pidpipe[2], errpipe[2];
  char *const *envp;
} exec_ctx;

static void child_stdio(exec_ctx *c) {
  const asbe_exec_opts *o = c->o;
  int null = -1;
  int want[3] = {o->pipes & ASBE_PIPE_STDIN ? c->in[0] : o->stdin_fd,
                 o->pipes & ASBE_PIPE_STDOUT ? c->out[1] : o->stdout_fd,
                 o->pipes & ASBE_PIPE_STDERR ? c->err[1] : o->stderr_fd};
  for (int i = 0; i < 3; i++) {
    if (want[i] < 0) {
      if (null < 0) null = open("/dev/null", O_RDWR | O_CLOEXEC);
      want[i] = null;
    }
  }
  /* move sources out of 0..2 first so dup2 order cannot clobber them */
  for (int i = 0; i < 3; i++)
    if (want[i] >= 0 && want[i] < 3) want[i] = fcntl(want[i], F_DUPFD_CLOEXEC, 3);
  for (int i = 0; i < 3; i++)
    if (want[i] >= 0) dup2(want[i], i);
}

/* The real child: inside every namespace, still root there. */
__attribute__((noreturn)) static void grandchild(exec_ctx *c) {
  const asbe_exec_opts *o = c->o;
  const asbe_secure *sec = &c->sb->e->sec;
  int ep = c->errpipe[1];
  /* Out of the engine's session first: a process sharing it could reach the
   * engine's controlling terminal (TIOCSTI types into the operator's shell).
   * A new session has no controlling terminal. */
  if (setsid() < 0) {
    report_errno(ep, errno);
    _exit(127);
  }
  child_stdio(c);
  syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
  int r = asbe__secure_bounding(sec);
  if (r == 0) r = asbe__rlimits_set(0); /* the engine's own are higher */
  gid_t gid = o->gid_set ? o->gid : (gid_t)o->uid;
  /* raw syscalls: no glibc setxid broadcast to threads of a process that
   * was cloned without glibc (see child.c) */
  if (r == 0 && (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, gid, gid, gid) < 0 ||
                 syscall(SYS_setresuid, o->uid, o->uid, o->uid) < 0))
    r = -errno;
  if (r == 0 && chdir(o->cwd ? o->cwd : "/") < 0) r = -errno;
  const char *what = "";
  if (r == 0) r = asbe__secure_finish(sec, &what);
  if (r == 0) {
    asb_exec_path(o->argv[0], (char *const *)o->argv, c->envp);
    r = -errno;
  }
  report_errno(ep, -r);
  _exit(127);
}

/* The intermediate: joins cgroups and namespaces, forks the real child as
 * a child of the engine (CLONE_PARENT), reports its pid. */
__attribute__((noreturn)) static void intermediate(exec_ctx *c) {
  asbe_sandbox *sb = c->sb;
  int err = 0;
  for (int i = 0; i < sb->n_cg_workload && !err; i++) {
    int fd = open(sb->cg_workload[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) err = errno ? errno : EIO;
    if (fd >= 0) close(fd);
  }
  if (!err && setns(sb->pidfd, ALL_NS) < 0) err = errno;
  if (err) {
    report_errno(c->errpipe[1], err);
    _exit(1);
  }
  struct clone_args ca;
  memset(&ca, 0, sizeof ca);
  ca.flags = CLONE_PARENT;
  ca.exit_signal = 0; /* CLONE_PARENT children use the parent's exit signal */
  pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
  if (pid == 0) grandchild(c);
  if (pid < 0) {
    report_errno(c->errpipe[1], errno);
    _exit(1);
  }
  if (write(c->pidpipe[1], &pid, sizeof pid) < 0) {
  }
  _exit(0);
}

static void close_pair(int p[2]) {
  for (int i = 0; i < 2; i++)
    if (p[i] >= 0) {
      close(p[i]);
      p[i] = -1;
    }
}

static ssize_t read_full(int fd, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* The setns path; fills p or returns -errno (message set). */
static int exec_setns(exec_ctx *c, asbe_proc *p) {
  asbe_sandbox *sb = c->sb;
  if (pipe2(c->pidpipe, O_CLOEXEC) < 0 || pipe2(c->errpipe, O_CLOEXEC) < 0)
    return asbe__failerr("exec: pipe");
  pid_t mid = fork();
  if (mid < 0) return asbe__failerr("exec: fork");
  if (mid == 0) intermediate(c);
  close(c->pidpipe[1]);
  c->pidpipe[1] = -1;
  close(c->errpipe[1]);
  c->errpipe[1] = -1;
  while (waitpid(mid, NULL, 0) < 0 && errno == EINTR) {
  }
  pid_t pid = 0;
  if (read_full(c->pidpipe[0], &pid, sizeof pid) != sizeof pid) pid = 0;
  int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
  /* EOF on errpipe = exec'd (CLOEXEC); else the child's errno */
  int err = 0;
  if (read_full(c->errpipe[0], &err, sizeof err) != sizeof err) err = 0;
  if (pid > 0 && (err || pidfd < 0)) {
    if (!err) err = errno;
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  if (!err && pid <= 0) err = ESRCH;
  if (err) {
    if (pidfd >= 0) close(pidfd);
    return asbe__fail(-err, "exec %s in sandbox %s", c->o->argv[0], sb->id);
  }
  p->pid = pid;
  p->pidfd = pidfd;
  return 0;
}

/* One reply from the exec service (and the fd it passed, else -1).
 * 1 = got one, 0 = timeout, -1 = connection gone. */
static int recv_rep(int s, asb_exec_rep *rep, int *fd, int timeout_ms) {
  struct pollfd pf = {s, POLLIN, 0};
  int pr;
  do pr = poll(&pf, 1, timeout_ms);
  while (pr < 0 && errno == EINTR);
  if (pr == 0) return 0;
  int got = -1, nf = 0;
  int n = asbe__recv_fds(s, rep, sizeof *rep, &got, 1, &nf);
  if (fd)
    *fd = nf ? got : -1;
  else if (nf)
    close(got);
  if (n != (int)sizeof *rep) {
    if (fd && *fd >= 0) close(*fd);
    return -1;
  }
  return 1;
}

/* Host pid of a pidfd (from fdinfo): 0 if fd is no pidfd, -1 if the
 * process is gone. */
static pid_t pidfd_pid(int fd) {
  char p[64], buf[1024];
  snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
  if (asbe__read_small(p, buf, sizeof buf) <= 0) return 0;
  char *l = strstr(buf, "\nPid:");
  return l ? (pid_t)atoi(l + 6) : 0;
}

/* The exec-service path. -ENOTCONN = service unavailable, use the fallback;
 * other errors are final (message set). */
static int exec_service(exec_ctx *c, asbe_proc *p) {
  const asbe_exec_opts *o = c->o;
  asbe_sandbox *sb = c->sb;
  const char *cwd = o->cwd ? o->cwd : "/";
  size_t argc = 0, envc = 0, len = sizeof(asb_exec_req) + strlen(cwd);
  for (; o->argv[argc]; argc++) len += strlen(o->argv[argc]) + 1;
  for (; c->envp[envc]; envc++) len += strlen(c->envp[envc]) + 1;
  if (len > sizeof(asb_exec_req) + ASB_EXEC_MAX || strlen(cwd) > 4095) return -ENOTCONN;
  char *buf = malloc(len);
  if (!buf) return asbe__fail(-ENOMEM, "exec");
  asb_exec_req q = {ASB_EXEC_MAGIC,
                    (uint32_t)o->uid,
                    (uint32_t)(o->gid_set ? o->gid : (gid_t)o->uid),
                    0,
                    (uint32_t)argc,
                    (uint32_t)envc,
                    (uint32_t)strlen(cwd),
                    0};
  int fds[3], nf = 0;
  int want[3] = {o->pipes & ASBE_PIPE_STDIN ? c->in[0] : o->stdin_fd,
                 o->pipes & ASBE_PIPE_STDOUT ? c->out[1] : o->stdout_fd,
                 o->pipes & ASBE_PIPE_STDERR ? c->err[1] : o->stderr_fd};
  for (int i = 0; i < 3; i++)
    if (want[i] >= 0) {
      q.fds |= 1u << i;
      fds[nf++] = want[i];
    }
  char *w = buf;
  memcpy(w, &q, sizeof q);
  w += sizeof q;
  memcpy(w, cwd, q.cwd_len);
  w += q.cwd_len;
  for (size_t i = 0; i < argc; i++) w = stpcpy(w, o->argv[i]) + 1;
  for (size_t i = 0; i < envc; i++) w = stpcpy(w, c->envp[i]) + 1;
  int r = -ENOTCONN;
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  int sock_fd = s >= 0 ? asbe__run_open(sb, strrchr(ASB_EXEC_SOCK, '/') + 1, S_IFSOCK) : -1;
  int conn = sock_fd >= 0 ? connect_fd(s, sock_fd, ASBE_CONNECT_TIMEOUT_MS) : -1;
  if (sock_fd >= 0) close(sock_fd);
  asbe__clear_error(); /* no service: the fallback below, not a failure */
  if (conn == 0 && asbe__send_fds(s, buf, len, fds, nf) == 0) {
    asb_exec_rep rep;
    int pidfd = -1;
    int got = recv_rep(s, &rep, &pidfd, 30000);
    if (got == 1 && rep.type == ASB_EXEC_FAILED) {
      r = asbe__fail(-(rep.err ? rep.err : EIO), "exec %s in sandbox %s", o->argv[0], sb->id);
    } else if (got == 1 && rep.type == ASB_EXEC_STARTED && pidfd >= 0) {
      /* 0 if it is already over (its status comes on the connection) */
      p->pid = pidfd_pid(pidfd);
      if (p->pid < 0) p->pid = 0;
      p->pidfd = pidfd;
      p->ctl = s;
      s = -1;
      r = 0;
    } else if (got == 1) {
      if (pidfd >= 0) close(pidfd);
      r = asbe__fail(-EPROTO, "exec service of sandbox %s", sb->id);
    }
  }
  if (s >= 0) close(s);
  free(buf);
  return r;
}

int asbe_sandbox_exec(asbe_sandbox *sb, const asbe_exec_opts *o, asbe_proc **out) {
  asbe__clear_error();
  *out = NULL;
  if (!o || !o->argv || !o->argv[0]) return asbe__fail(-EINVAL, "exec: argv required");
  if (sb->dead || sb->pidfd < 0) return asbe__fail(-ESRCH, "sandbox %s is dead", sb->id);
  if (sb->frozen) return asbe__fail(-EAGAIN, "sandbox %s is frozen", sb->id);
  exec_ctx c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.sb = sb;
  int *pairs[] = {c.in, c.out, c.err, c.pidpipe, c.errpipe};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(pairs); i++) pairs[i][0] = pairs[i][1] = -1;
  c.envp =
      (char *const *)(o->envp ? o->envp : (o->uid == 0 ? k_default_env_root : k_default_env_user));
  int r = 0;
  asbe_proc *p = NULL;
  if (((o->pipes & ASBE_PIPE_STDIN) && pipe2(c.in, O_CLOEXEC) < 0) ||
      ((o->pipes & ASBE_PIPE_STDOUT) && pipe2(c.out, O_CLOEXEC) < 0) ||
      ((o->pipes & ASBE_PIPE_STDERR) && pipe2(c.err, O_CLOEXEC) < 0)) {
    r = asbe__failerr("exec: pipe");
    goto out;
  }
  p = calloc(1, sizeof *p);
  if (!p) {
    r = asbe__fail(-ENOMEM, "exec");
    goto out;
  }
  p->ctl = p->pidfd = -1;
  r = exec_service(&c, p);
  if (r == -ENOTCONN) r = exec_setns(&c, p);
  if (r < 0) goto out;
  p->sb = sb;
  p->fd_in = c.in[1];
  p->fd_out = c.out[0];
  p->fd_err = c.err[0];
  c.in[1] = c.out[0] = c.err[0] = -1;
  pthread_mutex_lock(&sb->lock);
  p->next = sb->procs;
  sb->procs = p;
  pthread_mutex_unlock(&sb->lock);
  *out = p;
  p = NULL;
out:
  free(p);
  for (size_t i = 0; i < ASBI_ARRAY_LEN(pairs); i++) close_pair(pairs[i]);
  return r;
}

pid_t asbe_proc_pid(const asbe_proc *p) {
  return p->pid;
}
int asbe_proc_pidfd(const asbe_proc *p) {
  return p->pidfd;
}
int asbe_proc_stdin(const asbe_proc *p) {
  return p->fd_in;
}
int asbe_proc_stdout(const asbe_proc *p) {
  return p->fd_out;
}
int asbe_proc_stderr(const asbe_proc *p) {
  return p->fd_err;
}

void asbe_proc_close_stdin(asbe_proc *p) {
  if (p->fd_in >= 0) close(p->fd_in);
  p->fd_in = -1;
}

/* Status of a process of the exec service: 1 = known now (reaped set),
 * 0 = still running after timeout_ms. */
static int service_status(asbe_proc *p, int timeout_ms) {
  asb_exec_rep rep;
  int got = recv_rep(p->ctl, &rep, NULL, timeout_ms);
  if (got == 0) return 0;
  if (got == 1 && rep.type == ASB_EXEC_EXITED) {
    p->status = rep.status;
  } else {
    /* the service went away (sandbox killed?): status unknown */
    struct pollfd pf = {p->pidfd, POLLIN, 0};
    if (poll(&pf, 1, timeout_ms) == 0) return 0;
    p->status = 0xff00;
  }
  close(p->ctl);
  p->ctl = -1;
  p->reaped = 1;
  return 1;
}

/* Reaps p if it exited (WNOHANG). Caller holds the sandbox lock if any. */
static void try_reap(asbe_proc *p) {
  if (p->reaped) return;
  if (p->ctl >= 0) {
    service_status(p, 0);
    return;
  }
  int st;
  pid_t r = waitpid(p->pid, &st, WNOHANG);
  if (r == p->pid) {
    p->reaped = 1;
    p->status = st;
  } else if (r < 0 && errno == ECHILD) {
    p->reaped = 1; /* someone else reaped it: status unknown */
    p->status = 0xff00;
  }
}

void asbe__procs_reap(asbe_sandbox *sb) {
  pthread_mutex_lock(&sb->lock);
  for (asbe_proc **pp = &sb->procs; *pp;) {
    asbe_proc *p = *pp;
    try_reap(p);
    if (p->reaped && p->detached) {
      *pp = p->next;
      if (p->ctl >= 0) close(p->ctl);
      if (p->pidfd >= 0) close(p->pidfd);
      free(p);
      continue;
    }
    pp = &p->next;
  }
  pthread_mutex_unlock(&sb->lock);
}

int asbe_proc_wait(asbe_proc *p, int timeout_ms, int *status) {
  asbe__clear_error();
  if (!p->reaped && p->pidfd >= 0) {
    struct pollfd pf = {p->pidfd, POLLIN, 0};
    int r;
    do r = poll(&pf, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r == 0) return asbe__fail(-ETIMEDOUT, "process %d still running", (int)p->pid);
  }
  if (p->sb) pthread_mutex_lock(&p->sb->lock);
  if (!p->reaped && p->ctl >= 0) {
    if (!service_status(p, timeout_ms < 0 ? -1 : timeout_ms)) {
      if (p->sb) pthread_mutex_unlock(&p->sb->lock);
      return asbe__fail(-ETIMEDOUT, "process %d still running", (int)p->pid);
    }
  }
  if (!p->reaped) {
    int st;
    pid_t r;
    do r = waitpid(p->pid, &st, 0);
    while (r < 0 && errno == EINTR);
    p->reaped = 1;
    p->status = r == p->pid ? st : 0xff00;
  }
  if (p->sb) pthread_mutex_unlock(&p->sb->lock);
  if (status) *status = p->status;
  return 0;
}

int asbe_proc_signal(asbe_proc *p, int sig) {
  if (p->reaped) return asbe__fail(-ESRCH, "process %d exited", (int)p->pid);
  if (syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0) < 0)
    return asbe__failerr("signal %d", (int)p->pid);
  return 0;
}

void asbe_proc_free(asbe_proc *p) {
  if (!p) return;
  if (p->fd_in >= 0) close(p->fd_in);
  if (p->fd_out >= 0) close(p->fd_out);
  if (p->fd_err >= 0) close(p->fd_err);
  p->fd_in = p->fd_out = p->fd_err = -1;
  asbe_sandbox *sb = p->sb;
  if (sb) {
    /* the sandbox reaps it later (at kill at the latest) */
    pthread_mutex_lock(&sb->lock);
    p->detached = 1;
    try_reap(p);
    pthread_mutex_unlock(&sb->lock);
    asbe__procs_reap(sb);
    return;
  }
  if (!p->reaped && p->ctl < 0) waitpid(p->pid, NULL, WNOHANG);
  if (p->ctl >= 0) close(p->ctl);
  if (p->pidfd >= 0) close(p->pidfd);
  free(p);
}

int asbe_sandbox_run(asbe_sandbox *sb, const char *const *argv, uid_t uid, const char *stdin_data,
                     char **out, char **err, size_t max_out, int timeout_ms) {
  asbe_exec_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.uid = uid;
  o.cwd = uid == 0 ? "/root" : "/home/user";
  o.pipes = ASBE_PIPE_STDOUT | ASBE_PIPE_STDERR | (stdin_data ? ASBE_PIPE_STDIN : 0);
  o.stdin_fd = -1;
  asbe_proc *p;
  int r = asbe_sandbox_exec(sb, &o, &p);
  if (r < 0) {
    /* no /root or /home/user in this template: retry from / */
    o.cwd = "/";
    if (r == -ENOENT) r = asbe_sandbox_exec(sb, &o, &p);
    if (r < 0) return r;
  }
  if (stdin_data) {
    size_t n = strlen(stdin_data), off = 0;
    while (off < n) {
      ssize_t w = write(p->fd_in, stdin_data + off, n - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += (size_t)w;
    }
    asbe_proc_close_stdin(p);
  }
  asbi_buf bo = ASBI_BUF_INIT, be = ASBI_BUF_INIT;
  uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : asbi_now_ms() + (uint64_t)timeout_ms;
  int timed_out = 0;
  while (p->fd_out >= 0 || p->fd_err >= 0) {
    struct pollfd pf[2] = {{p->fd_out, POLLIN, 0}, {p->fd_err, POLLIN, 0}};
    uint64_t now = asbi_now_ms();
    if (now >= deadline) {
      timed_out = 1;
      break;
    }
    int left = deadline == UINT64_MAX ? -1 : (int)(deadline - now);
    int pr = poll(pf, 2, left);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    for (int i = 0; i < 2; i++) {
      if (!pf[i].revents) continue;
      int *fd = i ? &p->fd_err : &p->fd_out;
      asbi_buf *b = i ? &be : &bo;
      char chunk[4096];
      ssize_t n = read(*fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(*fd);
        *fd = -1;
        continue;
      }
      if (b->len < max_out)
        asbi_buf_append(b, chunk, (size_t)n < max_out - b->len ? (size_t)n : max_out - b->len);
    }
  }
  int status = 0;
  if (timed_out) {
    asbe_proc_signal(p, SIGKILL);
    asbe_proc_wait(p, -1, &status);
    r = asbe__fail(-ETIMEDOUT, "%s in sandbox %s", argv[0], sb->id);
  } else {
    int left = deadline == UINT64_MAX ? -1 : (int)(deadline - asbi_now_ms());
    if (asbe_proc_wait(p, left < 0 && deadline != UINT64_MAX ? 0 : left, &status) < 0) {
      asbe_proc_signal(p, SIGKILL);
      asbe_proc_wait(p, -1, &status);
      r = asbe__fail(-ETIMEDOUT, "%s in sandbox %s", argv[0], sb->id);
    } else {
      r = status;
    }
  }
  asbe_proc_free(p);
  if (out) *out = asbi_buf_detach(&bo, NULL);
  if (err) *err = asbi_buf_detach(&be, NULL);
  asbi_buf_free(&bo);
  asbi_buf_free(&be);
  return r;
}

/* ---- sockets ------------------------------------------------------------- */

/* Connects s to the unix socket the O_PATH fd sock_fd names, waiting at most
 * timeout_ms for room in its backlog. A unix-domain connect has no
 * EINPROGRESS: non-blocking, it fails at once with EAGAIN on a full backlog,
 * and nothing wakes a poller when room appears. SO_SNDTIMEO bounds the
 * kernel's own wait instead (it wakes us as soon as the listener accepts),
 * so a listener that never accepts cannot hold an engine thread. 0 or
 * -errno (-ETIMEDOUT for the deadline). */
static int connect_fd(int s, int sock_fd, int timeout_ms) {
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d", sock_fd);
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  if (setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0) return -errno;
  int r;
  do r = connect(s, (struct sockaddr *)&a, sizeof a);
  while (r < 0 && errno == EINTR);
  int err = r < 0 ? errno : 0;
  struct timeval none = {0, 0};
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  if (err == EAGAIN || err == EWOULDBLOCK) return -ETIMEDOUT;
  return -err;
}

static int openat2_fd(int dirfd, const char *path, uint64_t flags, uint64_t resolve) {
  return asbi_openat2(dirfd, path, (int)flags, 0, resolve);
}

int asbe__run_open(asbe_sandbox *sb, const char *name, mode_t type) {
  if (sb->dead || sb->pidfd < 0) return asbe__fail(-ESRCH, "sandbox %s is dead", sb->id);
  if (name && (!name[0] || strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, ".")))
    return asbe__fail(-EINVAL, "socket name \"%s\"", name);
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/root", (int)sb->pid);
  /* the magic link itself is ours to follow: it is the init's root */
  int root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return asbe__failerr("sandbox %s: open its root", sb->id);
  /* /proc/<pid> named our init only if it is still alive now */
  if (!asbe_sandbox_alive(sb)) {
    close(root);
    return asbe__fail(-ESRCH, "sandbox %s is dead", sb->id);
  }
  int dir = openat2_fd(root, "run/asb", O_PATH | O_DIRECTORY | O_CLOEXEC,
                       RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  int err = dir < 0 ? errno : 0;
  close(root);
  if (dir < 0) return asbe__fail(-err, "sandbox %s: /run/asb", sb->id);
  struct stat st;
  if (fstat(dir, &st) < 0 || (sb->run_dev && st.st_dev != sb->run_dev)) {
    close(dir);
    return asbe__fail(-EXDEV, "sandbox %s: /run/asb is not on its writable layer", sb->id);
  }
  if (!name) return dir;
  int fd =
      openat2_fd(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC,
                 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
  err = fd < 0 ? errno : 0;
  close(dir);
  if (fd < 0) return asbe__fail(-err, "sandbox %s: /run/asb/%s", sb->id, name);
  if (fstat(fd, &st) < 0 || (st.st_mode & S_IFMT) != type ||
      (sb->run_dev && st.st_dev != sb->run_dev)) {
    close(fd);
    return asbe__fail(type == S_IFSOCK ? -ECONNREFUSED : -EINVAL,
                      "sandbox %s: /run/asb/%s is no %s of the sandbox", sb->id, name,
                      type == S_IFSOCK ? "socket" : "file");
  }
  return fd;
}

int asbe_sandbox_connect_tcp(asbe_sandbox *sb, uint16_t port) {
  asbe__clear_error();
  if (sb->dead || sb->pidfd < 0) return asbe__fail(-ESRCH, "sandbox %s is dead", sb->id);
  /* the socket belongs to the netns it is created in: switch this thread
   * into the sandbox's netns just for socket() */
  if (setns(sb->pidfd, CLONE_NEWNET) < 0) return asbe__failerr("setns net %s", sb->id);
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int serr = errno;
  if (setns(sb->e->self_netns, CLONE_NEWNET) < 0) abort(); /* never stay inside */
  if (s < 0) return asbe__fail(-serr, "socket in sandbox %s", sb->id);
  /* Callers relay requests whose head and body arrive in separate writes
   * on kept-alive connections: without this, Nagle holds the body back
   * until the server's delayed ACK (40 ms). */
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  /* A deadline: a listener in the sandbox whose accept queue is full drops
   * our SYNs, and a plain connect would wait through every SYN retry (about
   * two minutes) holding an engine thread. SO_SNDTIMEO bounds the wait
   * (connect then fails with EINPROGRESS) and keeps the blocking connect's
   * fast path: on loopback the handshake completes within the call, where
   * a non-blocking connect plus poll waits for a softirq to wake us (5 ms
   * each on this loaded VM instead of 0.013, measured by iso_bench). */
  struct timeval tv = {ASBE_CONNECT_TIMEOUT_MS / 1000, (ASBE_CONNECT_TIMEOUT_MS % 1000) * 1000};
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int r;
  do r = connect(s, (struct sockaddr *)&a, sizeof a);
  while (r < 0 && errno == EINTR);
  int err = r < 0 ? (errno == EINPROGRESS || errno == EAGAIN ? ETIMEDOUT : errno) : 0;
  struct timeval none = {0, 0};
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  if (err) {
    r = asbe__fail(-err, "connect 127.0.0.1:%u in sandbox %s", port, sb->id);
    close(s);
    return r;
  }
  return s;
}

int asbe_sandbox_connect_unix(asbe_sandbox *sb, const char *name) {
  asbe__clear_error();
  if (!name || !name[0]) return asbe__fail(-EINVAL, "socket name \"%s\"", name ? name : "");
  int sock_fd = asbe__run_open(sb, name, S_IFSOCK);
  if (sock_fd < 0) return sock_fd;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    int r = asbe__failerr("socket");
    close(sock_fd);
    return r;
  }
  int r = connect_fd(s, sock_fd, ASBE_CONNECT_TIMEOUT_MS);
  close(sock_fd);
  if (r < 0) {
    r = r == -ETIMEDOUT
            ? asbe__fail(r, "connect /run/asb/%s of sandbox %s: nothing accepts within %d ms", name,
                         sb->id, ASBE_CONNECT_TIMEOUT_MS)
            : asbe__fail(r, "connect /run/asb/%s of sandbox %s", name, sb->id);
    close(s);
    return r;
  }
  return s;
}
