/* asb-init: PID 1 of a sandbox. Linked statically so it runs in any template.
 *
 *   asb-init [-r MIN_MS] [-R MAX_MS] [-g GRACE_MS] [-x EXEC_SOCK] [-a N [-d]]
 *            [-- AGENT ARGS... [AUX...]]
 *
 * Spawns the agent (its own session; asb-init has one too, made by the
 * engine, so nothing here shares a session or terminal with the host),
 * restarts it when it dies with an
 * exponential backoff (MIN_MS doubling up to MAX_MS, back to MIN_MS after
 * 10 s of uptime), so an agent crash never ends the sandbox. Reaps every
 * orphan. On SIGTERM/SIGINT: SIGTERM to every process, SIGKILL to what is
 * left after GRACE_MS, exit. SIGHUP, SIGUSR1 and SIGUSR2 go to the agent.
 *
 * With -a N the last N words are a second agent, the aux agent (the code
 * interpreter), supervised the same way: its leading NAME=VALUE words are
 * added to its environment (as env(1) takes them), the rest is its argv.
 * With -d it starts on demand: at the first ASB_INIT_AUX_SIGNAL (see
 * exec_proto.h, sent by the engine), else with the agent. Restarted with the
 * same backoff; the agent's signals (SIGHUP, SIGUSR1/2) are not passed to it.
 *
 * With -x it also runs the exec service (see exec_proto.h) as a supervised
 * child that first moves itself into the workload cgroups
 * (ASB_WORKLOAD_CGROUPS), so the engine can start commands without forking
 * itself, joining cgroups or loading a seccomp filter for each one.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec_path.h"
#include "exec_proto.h"

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

__attribute__((format(printf, 1, 2))) static void logmsg(const char *fmt, ...) {
  char buf[512];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  int n = (int)strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ asb-init: ", &tm);
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  if (write(2, buf, (size_t)n) < 0) {
  }
}

/* ---- the exec service ---------------------------------------------------- */

static int write_file(const char *path, const char *s) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  int r = write(fd, s, strlen(s)) < 0 ? -errno : 0;
  close(fd);
  return r;
}

typedef struct client {
  int fd;
  pid_t pid; /* 0 until a process runs for it */
} client;

#define MAX_CLIENTS 256

static void reply(int fd, int type, int err, int pid, int status, int pass_fd) {
  asb_exec_rep r = {type, err, pid, status};
  struct iovec io = {&r, sizeof r};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &io;
  mh.msg_iovlen = 1;
  if (pass_fd >= 0) {
    memset(&u, 0, sizeof u);
    mh.msg_control = u.buf;
    mh.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Forks and execs the request; returns the pid, or -errno if it could not
 * exec (the child is reaped then). */
static pid_t spawn(const asb_exec_req *q, char *cwd, char **argv, char **envp, const int *fds) {
  int ep[2];
  if (pipe2(ep, O_CLOEXEC) < 0) return -errno;
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(ep[0]);
    close(ep[1]);
    return -e;
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid();
    int null = -1, k = 0, src[3];
    for (int i = 0; i < 3; i++) {
      if (q->fds & (1u << i)) {
        src[i] = fds[k++];
      } else {
        if (null < 0) null = open("/dev/null", O_RDWR | O_CLOEXEC);
        src[i] = null;
      }
      /* out of the way of 0..2 before dup2 */
      if (src[i] >= 0 && src[i] < 3) src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
    }
    for (int i = 0; i < 3; i++)
      if (src[i] >= 0) dup2(src[i], i);
    syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
    int err = 0;
    if (setgroups(0, NULL) < 0 || setresgid(q->gid, q->gid, q->gid) < 0 ||
        setresuid(q->uid, q->uid, q->uid) < 0 || chdir(cwd[0] ? cwd : "/") < 0)
      err = errno;
    if (!err) {
      asb_exec_path(argv[0], argv, envp);
      err = errno;
    }
    if (write(ep[1], &err, sizeof err) < 0) {
    }
    _exit(127);
  }
  close(ep[1]);
  int err = 0;
  ssize_t n;
  do n = read(ep[0], &err, sizeof err);
  while (n < 0 && errno == EINTR);
  close(ep[0]);
  if (n == (ssize_t)sizeof err && err) {
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    return -err;
  }
  return pid;
}

/* Parses a request message; returns 0 and the pieces or -EINVAL. */
static int parse(char *buf, size_t n, asb_exec_req *q, char **cwd, char ***argv, char ***envp) {
  if (n < sizeof *q) return -EINVAL;
  memcpy(q, buf, sizeof *q);
  if (q->magic != ASB_EXEC_MAGIC || q->argc < 1 || q->argc > 65536 || q->envc > 65536 ||
      q->cwd_len > 4095 || sizeof *q + q->cwd_len > n)
    return -EINVAL;
  char *p = buf + sizeof *q, *end = buf + n;
  *cwd = malloc(q->cwd_len + 1);
  *argv = calloc(q->argc + 1, sizeof(char *));
  *envp = calloc(q->envc + 1, sizeof(char *));
  if (!*cwd || !*argv || !*envp) return -ENOMEM;
  memcpy(*cwd, p, q->cwd_len);
  (*cwd)[q->cwd_len] = '\0';
  p += q->cwd_len;
  for (uint32_t i = 0; i < q->argc + q->envc; i++) {
    char *z = memchr(p, '\0', (size_t)(end - p));
    if (!z) return -EINVAL;
    if (i < q->argc)
      (*argv)[i] = p;
    else
      (*envp)[i - q->argc] = p;
    p = z + 1;
  }
  return 0;
}

static void serve_request(client *c) {
  static char buf[sizeof(asb_exec_req) + ASB_EXEC_MAX];
  union {
    char b[CMSG_SPACE(sizeof(int) * 3)];
    struct cmsghdr align;
  } u;
  struct iovec io = {buf, sizeof buf};
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &io;
  mh.msg_iovlen = 1;
  mh.msg_control = u.b;
  mh.msg_controllen = sizeof u.b;
  ssize_t n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  int fds[3] = {-1, -1, -1}, nf = 0;
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    int cnt = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < cnt; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
      if (nf < 3)
        fds[nf++] = fd;
      else
        close(fd);
    }
  }
  if (n <= 0) { /* the engine went away before asking */
    close(c->fd);
    c->fd = -1;
    for (int i = 0; i < nf; i++) close(fds[i]);
    return;
  }
  asb_exec_req q;
  char *cwd = NULL, **argv = NULL, **envp = NULL;
  int r = parse(buf, (size_t)n, &q, &cwd, &argv, &envp);
  if (r == 0 && (int)__builtin_popcount(q.fds & 7u) != nf) r = -EINVAL;
  pid_t pid = r < 0 ? r : spawn(&q, cwd, argv, envp, fds);
  for (int i = 0; i < nf; i++) close(fds[i]);
  free(cwd);
  free(argv);
  free(envp);
  if (pid < 0) {
    reply(c->fd, ASB_EXEC_FAILED, -pid, 0, 0, -1);
    close(c->fd);
    c->fd = -1;
    return;
  }
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  reply(c->fd, ASB_EXEC_STARTED, 0, pid, 0, pidfd);
  if (pidfd >= 0) close(pidfd);
  c->pid = pid;
}

/* The open-file limit of user processes (ASB_NOFILE=<soft>:<hard>; the init
 * and the agent have more): set on the exec service, whose children inherit
 * it. Lowering only, like everything inside. */
static void user_nofile(void) {
  const char *v = getenv("ASB_NOFILE");
  unsigned long s = 0, h = 0;
  if (!v) return;
  struct rlimit cur, want;
  if (sscanf(v, "%lu:%lu", &s, &h) != 2 || !h || s > h || getrlimit(RLIMIT_NOFILE, &cur) < 0) {
    logmsg("exec service: ignoring ASB_NOFILE=%s", v);
    return;
  }
  want.rlim_max = h < cur.rlim_max ? h : cur.rlim_max;
  want.rlim_cur = s < want.rlim_max ? s : want.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &want) < 0)
    logmsg("exec service: RLIMIT_NOFILE: %s", strerror(errno));
}

__attribute__((noreturn)) static void exec_service(const char *path) {
  user_nofile();
  /* into the workload first: everything forked here inherits it */
  const char *dirs = getenv("ASB_WORKLOAD_CGROUPS");
  if (dirs) {
    char *copy = strdup(dirs), *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
      char p[4096];
      snprintf(p, sizeof p, "%s/cgroup.procs", d);
      int r = write_file(p, "0");
      if (r < 0) logmsg("exec service: join %s: %s", p, strerror(-r));
    }
    free(copy);
  }
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_SETMASK, &mask, NULL); /* SIGTERM etc. end us normally */
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  int ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  unlink(path);
  mode_t old = umask(077);
  int ok =
      sfd >= 0 && ls >= 0 && bind(ls, (struct sockaddr *)&a, sizeof a) == 0 && listen(ls, 64) == 0;
  umask(old);
  if (!ok) {
    logmsg("exec service: listen on %s: %s", path, strerror(errno));
    _exit(1);
  }
  static client cl[MAX_CLIENTS];
  int ncl = 0;
  struct pollfd pf[MAX_CLIENTS + 2];
  for (;;) {
    pf[0] = (struct pollfd){ls, ncl < MAX_CLIENTS ? POLLIN : 0, 0};
    pf[1] = (struct pollfd){sfd, POLLIN, 0};
    for (int i = 0; i < ncl; i++) pf[2 + i] = (struct pollfd){cl[i].fd, POLLIN, 0};
    if (poll(pf, (nfds_t)(2 + ncl), -1) < 0) continue;
    if (pf[0].revents & POLLIN) {
      int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
      if (c >= 0) {
        struct ucred cr;
        socklen_t cl_len = sizeof cr;
        /* only the engine: a peer outside our pid namespace shows as pid 0 */
        if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl_len) < 0 || cr.pid != 0 ||
            ncl >= MAX_CLIENTS) {
          close(c);
        } else {
          cl[ncl++] = (client){c, 0};
        }
      }
    }
    for (int i = 0; i < ncl; i++) {
      short re = pf[2 + i].revents;
      if (!re || cl[i].fd < 0) continue;
      if (cl[i].pid == 0) {
        serve_request(&cl[i]);
      } else { /* the engine hung up; the process keeps running */
        close(cl[i].fd);
        cl[i].fd = -1;
      }
    }
    if (pf[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
      }
      for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0) break;
        for (int i = 0; i < ncl; i++)
          if (cl[i].pid == pid) {
            if (cl[i].fd >= 0) {
              reply(cl[i].fd, ASB_EXEC_EXITED, 0, pid, st, -1);
              close(cl[i].fd);
            }
            cl[i].fd = -1;
            cl[i].pid = -1;
          }
      }
    }
    /* drop finished clients */
    int k = 0;
    for (int i = 0; i < ncl; i++)
      if (cl[i].fd >= 0 || cl[i].pid > 0) cl[k++] = cl[i];
    ncl = k;
  }
}

/* ---- init ---------------------------------------------------------------- */

typedef struct kid {
  const char *name;
  char **argv;      /* exec'd, or NULL for the exec service */
  const char *sock; /* exec service socket */
  pid_t pid;
  uint64_t started, restart_at;
  long delay;
  char **env; /* NAME=VALUE words added to the environment, or NULL */
  int nenv;
  int forward; /* gets SIGHUP, SIGUSR1, SIGUSR2 */
  int enabled; /* 0: on demand, not asked for yet */
} kid;

/* execvp with the kid's NAME=VALUE words set first (in the child). */
static void exec_kid(const kid *k) {
  for (int i = 0; i < k->nenv; i++) {
    char *eq = strchr(k->env[i], '=');
    *eq = '\0';
    setenv(k->env[i], eq + 1, 1);
    *eq = '=';
  }
  execvp(k->argv[0], k->argv);
}

static void start(kid *k, const sigset_t *orig) {
  k->restart_at = 0;
  k->started = now_ms();
  pid_t pid = fork();
  if (pid < 0) {
    logmsg("fork %s: %s", k->name, strerror(errno));
    k->restart_at = now_ms() + (uint64_t)k->delay;
    return;
  }
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, orig, NULL);
    setsid(); /* each its own session (the exec service's commands get theirs) */
    if (!k->argv) exec_service(k->sock);
    exec_kid(k);
    logmsg("exec %s: %s", k->argv[0], strerror(errno));
    _exit(127);
  }
  k->pid = pid;
}

static void usage(void) {
  fprintf(stderr,
          "usage: asb-init [-r MIN_MS] [-R MAX_MS] [-g GRACE_MS] [-x EXEC_SOCK] [-a N [-d]]\n"
          "                [-- AGENT ARGS... [AUX...]]\n");
  exit(2);
}

int main(int argc, char **argv) {
  long min_ms = 100, max_ms = 5000, grace_ms = 2000;
  const char *exec_sock = NULL;
  long aux_n = 0;
  int aux_on_demand = 0;
  int i = 1;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "--")) {
      i++;
      break;
    }
    if (!strcmp(argv[i], "-d")) {
      aux_on_demand = 1;
      continue;
    }
    if (i + 1 >= argc) usage();
    if (!strcmp(argv[i], "-x")) {
      exec_sock = argv[++i];
      continue;
    }
    char *end;
    long v = strtol(argv[i + 1], &end, 10);
    if (*end || v < 0) usage();
    if (!strcmp(argv[i], "-r"))
      min_ms = v;
    else if (!strcmp(argv[i], "-R"))
      max_ms = v;
    else if (!strcmp(argv[i], "-g"))
      grace_ms = v;
    else if (!strcmp(argv[i], "-a"))
      aux_n = v;
    else
      usage();
    i++;
  }
  if (min_ms < 1) min_ms = 1;
  if (max_ms < min_ms) max_ms = min_ms;

  sigset_t mask, orig;
  sigemptyset(&mask);
  int sigs[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE};
  for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) sigaddset(&mask, sigs[k]);
  sigaddset(&mask, ASB_INIT_AUX_SIGNAL);
  sigprocmask(SIG_BLOCK, &mask, &orig);
  sigdelset(&orig, SIGPIPE);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    logmsg("signalfd: %s", strerror(errno));
    return 1;
  }

  kid kids[3];
  int nk = 0, aux = -1;
  if (aux_n < 0 || aux_n > argc - i) usage();
  if (exec_sock)
    kids[nk++] = (kid){"exec service", NULL, exec_sock, 0, 0, 0, min_ms, NULL, 0, 0, 1};
  int agent_end = argc - (int)aux_n;
  if (i < agent_end) {
    /* the agent's argv ends where the aux agent's begins */
    char **av = calloc((size_t)(agent_end - i) + 1, sizeof *av);
    if (!av) return 1;
    memcpy(av, argv + i, (size_t)(agent_end - i) * sizeof *av);
    kids[nk++] = (kid){"agent", av, NULL, 0, 0, 0, min_ms, NULL, 0, 1, 1};
  }
  if (aux_n) {
    char **w = argv + agent_end;
    int ne = 0;
    while (ne < aux_n && w[ne][0] != '=' && strchr(w[ne], '=')) ne++;
    if (ne == aux_n) usage();
    aux = nk;
    kids[nk++] = (kid){"aux agent", w + ne, NULL, 0, 0, 0, min_ms, w, ne, 0, !aux_on_demand};
  }
  for (int k = 0; k < nk; k++)
    if (kids[k].enabled) start(&kids[k], &orig);
  int terminating = 0;
  uint64_t term_at = 0;

  for (;;) {
    uint64_t now = now_ms(), next = 0;
    for (int k = 0; k < nk; k++)
      if (kids[k].restart_at && (!next || kids[k].restart_at < next)) next = kids[k].restart_at;
    if (terminating && (!next || term_at < next)) next = term_at;
    int timeout = next ? (next > now ? (int)(next - now) : 0) : -1;
    struct pollfd pf = {sfd, POLLIN, 0};
    if (poll(&pf, 1, timeout) > 0) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGTERM || sig == SIGINT || sig == SIGQUIT) {
          if (!terminating) {
            terminating = 1;
            for (int k = 0; k < nk; k++) kids[k].restart_at = 0;
            term_at = now_ms() + (uint64_t)grace_ms;
            kill(-1, SIGTERM);
          }
        } else if (sig == SIGHUP || sig == SIGUSR1 || sig == SIGUSR2) {
          for (int k = 0; k < nk; k++)
            if (kids[k].argv && kids[k].forward && kids[k].pid > 0) kill(kids[k].pid, sig);
        } else if (sig == ASB_INIT_AUX_SIGNAL && aux >= 0 && !kids[aux].enabled && !terminating) {
          kids[aux].enabled = 1; /* on demand: from now on like the others */
          start(&kids[aux], &orig);
        }
      }
    }
    /* reap everything that exited: our children and every orphan */
    for (;;) {
      int st;
      pid_t pid = waitpid(-1, &st, WNOHANG);
      if (pid <= 0) {
        if (pid < 0 && errno == ECHILD && terminating) {
          logmsg("all processes gone, exiting");
          return 0;
        }
        break;
      }
      for (int k = 0; k < nk; k++) {
        kid *c = &kids[k];
        if (pid != c->pid) continue;
        c->pid = 0;
        uint64_t ran = now_ms() - c->started;
        if (WIFEXITED(st))
          logmsg("%s exited with %d after %llu ms", c->name, WEXITSTATUS(st),
                 (unsigned long long)ran);
        else
          logmsg("%s killed by signal %d after %llu ms", c->name, WTERMSIG(st),
                 (unsigned long long)ran);
        if (terminating) continue;
        if (ran > 10000) c->delay = min_ms;
        c->restart_at = now_ms() + (uint64_t)c->delay;
        logmsg("restarting the %s in %ld ms", c->name, c->delay);
        c->delay = c->delay * 2 > max_ms ? max_ms : c->delay * 2;
      }
    }
    now = now_ms();
    if (terminating && now >= term_at) {
      logmsg("grace period over, killing what is left");
      kill(-1, SIGKILL);
      return 0;
    }
    for (int k = 0; k < nk && !terminating; k++)
      if (kids[k].restart_at && now >= kids[k].restart_at) start(&kids[k], &orig);
  }
}
