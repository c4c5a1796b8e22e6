/* envd: sudo inside a sandbox, without set-user-ID.
 *
 * E2B's base template gives its default user passwordless sudo. Ours cannot
 * use a set-user-ID sudo: every sandbox process runs with no_new_privs and a
 * seccomp filter, so exec never raises privileges. Instead envd, which runs
 * as the sandbox's root, serves a unix socket (/run/asb/sudo.sock, inside
 * the sandbox only), and `sudo` is envd itself run under that name (a
 * symlink in the base template): the client sends its argv, environment,
 * cwd and its stdin/stdout/stderr (SCM_RIGHTS); envd checks the caller's
 * credentials as the kernel reports them (SO_PEERCRED: root, or a member of
 * the group "sudo", as Debian's %sudo rule), forks a monitor that starts the
 * command as the target user in a session of its own with the caller's
 * descriptors, relays the signals the client forwards, and answers with the
 * wait status, which the client exits with (or dies of).
 *
 * What the command gets is exactly what envd's own processes get (root
 * inside: the same user namespace, seccomp filter, no_new_privs, cgroups):
 * nothing beyond root inside the sandbox, which is an unprivileged uid
 * outside. The command is not in the caller's session, so it has no
 * controlling terminal (a terminal on its stdio still works for I/O).
 *
 * Hand-written: no Debian package does this (sudo itself is set-user-ID).
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "state.h"
#include "sudo.h"
#include "sudo_req.h"
#include "util/util.h"

#define SUDO_MAGIC 0x31555341u /* "ASU1" */
#define SUDO_MAX_REQ (1u << 20)
#define SECURE_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

extern char **environ;

/* ---- the request ------------------------------------------------------------
 * header {magic, length} with SCM_RIGHTS {stdin, stdout, stderr}, then
 * length bytes of fields (sudo_req.h). */
typedef struct sudo_hdr {
  uint32_t magic, len;
} sudo_hdr;

/* ---- the server (in envd) -------------------------------------------------- */

static struct {
  int fd; /* listening socket, -1 when not serving */
  pthread_t thread;
  int running;
  char path[108];
} g_sudo = {-1, 0, 0, ""};

typedef struct strv {
  char **v;
  size_t n, cap;
} strv;

static int strv_add(strv *s, const char *a, size_t n) {
  if (s->n + 2 > s->cap) {
    size_t c = s->cap ? s->cap * 2 : 16;
    char **nv = realloc(s->v, c * sizeof *nv);
    if (!nv) return -1;
    s->v = nv;
    s->cap = c;
  }
  char *d = malloc(n + 1);
  if (!d) return -1;
  memcpy(d, a, n);
  d[n] = '\0';
  s->v[s->n++] = d;
  s->v[s->n] = NULL;
  return 0;
}

static int strv_addf(strv *s, const char *k, const char *v) {
  size_t kl = strlen(k), vl = strlen(v);
  char *b = malloc(kl + vl + 2);
  if (!b) return -1;
  memcpy(b, k, kl);
  b[kl] = '=';
  memcpy(b + kl + 1, v, vl + 1);
  int r = strv_add(s, b, kl + vl + 1);
  free(b);
  return r;
}

static void strv_free(strv *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}

static const char *env_get(char *const *v, size_t n, const char *key) {
  size_t kl = strlen(key);
  for (size_t i = 0; i < n; i++)
    if (!strncmp(v[i], key, kl) && v[i][kl] == '=') return v[i] + kl + 1;
  return NULL;
}

/* Reads n bytes before deadline_ms (asbi_now_ms): a client that trickles
 * its request cannot hold the socket's thread longer than that. */
static int read_full(int fd, void *buf, size_t n, uint64_t deadline_ms) {
  char *p = buf;
  while (n) {
    uint64_t now = asbi_now_ms();
    if (now >= deadline_ms) return -1;
    struct pollfd pf = {fd, POLLIN, 0};
    int pr = poll(&pf, 1, (int)(deadline_ms - now));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) return -1;
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static void write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

static void say(int fd, const char *fmt, const char *a) {
  char m[512];
  int n = snprintf(m, sizeof m, fmt, a);
  if (n > 0) write_all(fd, m, (size_t)n < sizeof m ? (size_t)n : sizeof m - 1);
}

/* The program to exec: as given with a '/', else the first executable
 * regular file in PATH. NULL: not found. */
static char *find_program(const char *cmd, const char *path) {
  if (strchr(cmd, '/')) return strdup(cmd);
  const char *p = path;
  while (p && *p) {
    const char *e = strchr(p, ':');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    char buf[4096];
    if (l && (size_t)snprintf(buf, sizeof buf, "%.*s/%s", (int)l, p, cmd) < sizeof buf) {
      struct stat st;
      if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0) return strdup(buf);
    }
    p = e ? e + 1 : NULL;
  }
  return NULL;
}

static int in_sudo_group(const envd_user *u) {
  char buf[4096];
  struct group gr, *res = NULL;
  if (getgrnam_r("sudo", &gr, buf, sizeof buf, &res) != 0 || !res) return 0;
  if (u->gid == gr.gr_gid) return 1;
  for (int i = 0; i < u->ngroups; i++)
    if (u->groups[i] == gr.gr_gid) return 1;
  return 0;
}

/* Runs in the forked monitor; async-signal-safe calls only (envd is
 * multi-threaded). fds: 3 = the connection, 4-6 = the caller's stdio. */
static void monitor(const envd_user *t, const char *exe, char *const *argv, char *const *envp,
                    const char *cwd) {
  pid_t c = fork();
  if (c < 0) {
    int32_t st = 1 << 8;
    write_all(3, &st, sizeof st);
    _exit(1);
  }
  if (c == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setsid();
    /* the workload cgroups and OOM preference envd's processes get */
    for (size_t i = 0; g_envd.cgroup_procs && g_envd.cgroup_procs[i]; i++) {
      int fd = open(g_envd.cgroup_procs[i], O_WRONLY | O_CLOEXEC);
      if (fd >= 0) {
        write_all(fd, "0", 1);
        close(fd);
      }
    }
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
      write_all(oom, "100", 3);
      close(oom);
    }
    if (dup2(4, 0) < 0 || dup2(5, 1) < 0 || dup2(6, 2) < 0) _exit(1);
    syscall(SYS_close_range, 3U, ~0U, 0U);
    if (syscall(SYS_setgroups, (size_t)t->ngroups, t->groups) != 0 ||
        syscall(SYS_setresgid, t->gid, t->gid, t->gid) != 0 ||
        syscall(SYS_setresuid, t->uid, t->uid, t->uid) != 0) {
      say(2, "sudo: cannot become user %s\n", t->name);
      _exit(1);
    }
    if (chdir(cwd) != 0) {
      say(2, "sudo: unable to change directory to %s\n", cwd);
      _exit(1);
    }
    execve(exe, argv, envp);
    int e = errno;
    if (e == ENOENT)
      say(2, "sudo: %s: command not found\n", argv[0]);
    else
      say(2, "sudo: unable to execute %s\n", exe);
    _exit(e == ENOENT ? 1 : 126);
  }
  close(4);
  close(5);
  close(6);
  int pfd = (int)syscall(SYS_pidfd_open, c, 0);
  int sock_open = 1;
  for (;;) {
    struct pollfd p[2] = {{pfd, POLLIN, 0}, {sock_open ? 3 : -1, POLLIN, 0}};
    if (pfd < 0) break; /* no pidfd: just wait below */
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[0].revents) break;
    if (p[1].revents) {
      unsigned char sig[16];
      ssize_t n = read(3, sig, sizeof sig);
      if (n <= 0) {
        sock_open = 0; /* the client is gone: the command runs on */
      } else {
        for (ssize_t i = 0; i < n; i++)
          if (sig[i] > 0 && sig[i] < 65) kill(c, sig[i]);
      }
    }
  }
  int st = 0;
  while (waitpid(c, &st, 0) < 0 && errno == EINTR) {
  }
  int32_t out = st;
  if (sock_open) write_all(3, &out, sizeof out);
  _exit(0);
}

/* One request on the accepted connection conn. */
static void handle(int conn) {
  uint64_t t0 = asbi_now_ms();
  struct timeval tv = {10, 0};
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct ucred cr;
  socklen_t crl = sizeof cr;
  if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0) return;
  sudo_hdr h;
  int fds[3] = {-1, -1, -1};
  union {
    char buf[CMSG_SPACE(3 * sizeof(int))];
    struct cmsghdr align;
  } cm;
  struct iovec iov = {&h, sizeof h};
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cm.buf;
  mh.msg_controllen = sizeof cm.buf;
  ssize_t n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  int nfds = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < k; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (nfds < 3)
        fds[nfds++] = fd;
      else
        close(fd);
    }
  }
  char *req = NULL;
  envd_sudo_req rq = {0};
  strv env = {0}, argv = {0};
  char *exe = NULL, *joined = NULL;
  int32_t fail = 1 << 8; /* exit status 1 */
  int err = nfds == 3 ? fds[2] : -1;
  if (n != (ssize_t)sizeof h || h.magic != SUDO_MAGIC || h.len > SUDO_MAX_REQ || nfds != 3 ||
      (mh.msg_flags & MSG_CTRUNC))
    goto out;
  req = malloc(h.len + 1);
  if (!req || read_full(conn, req, h.len, t0 + 10000) != 0) goto out;
  req[h.len] = '\0';
  if (envd_sudo_req_parse(req, h.len, &rq) != 0) goto out;
  const char *tuser = rq.user, *cwd = rq.cwd;
  int fl_env = rq.fl_env, fl_login = rq.fl_login, fl_shell = rq.fl_shell;
  /* who asks: the kernel's word, not the client's */
  char pwb[4096];
  struct passwd pw, *pr = NULL;
  envd_user caller, target;
  if (getpwuid_r(cr.uid, &pw, pwb, sizeof pwb, &pr) != 0 || !pr ||
      envd_user_lookup(pr->pw_name, &caller) != 0) {
    say(err, "sudo: you do not exist in the passwd database%s\n", "");
    goto out;
  }
  if (cr.uid != 0 && !in_sudo_group(&caller)) {
    say(err, "sudo: %s is not in the sudoers file (the group sudo)\n", caller.name);
    goto out;
  }
  if (envd_user_lookup(tuser, &target) != 0) {
    say(err, "sudo: unknown user %s\n", tuser);
    goto out;
  }
  char tpwb[4096];
  struct passwd tpw, *tpr = NULL;
  const char *tshell = "/bin/sh";
  if (getpwnam_r(target.name, &tpw, tpwb, sizeof tpwb, &tpr) == 0 && tpr && tpr->pw_shell &&
      *tpr->pw_shell)
    tshell = tpr->pw_shell;
  /* the environment: sudo's env_reset (or the caller's with -E) */
  if (fl_env) {
    for (size_t i = 0; i < rq.n_env; i++) {
      const char *e = rq.env[i];
      if (!strncmp(e, "PATH=", 5) || !strncmp(e, "USER=", 5) || !strncmp(e, "LOGNAME=", 8) ||
          !strncmp(e, "SUDO_", 5) || (fl_login && !strncmp(e, "HOME=", 5)) ||
          (fl_login && !strncmp(e, "SHELL=", 6)))
        continue;
      if (strv_add(&env, e, strlen(e)) != 0) goto out;
    }
  } else {
    static const char *const keep[] = {"TERM", "COLORTERM", "LANG",    "LANGUAGE",
                                       "TZ",   "DISPLAY",   "COLUMNS", "LINES"};
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
      const char *v = env_get((char *const *)rq.env, rq.n_env, keep[k]);
      if (v && strv_addf(&env, keep[k], v) != 0) goto out;
    }
    for (size_t i = 0; i < rq.n_env; i++)
      if (!strncmp(rq.env[i], "LC_", 3) && strv_add(&env, rq.env[i], strlen(rq.env[i])) != 0)
        goto out;
  }
  if ((!fl_env || fl_login || !env_get(env.v, env.n, "HOME")) &&
      strv_addf(&env, "HOME", target.home))
    goto out;
  if ((!fl_env || fl_login || !env_get(env.v, env.n, "SHELL")) && strv_addf(&env, "SHELL", tshell))
    goto out;
  char num[32];
  if (strv_addf(&env, "PATH", SECURE_PATH) || strv_addf(&env, "USER", target.name) ||
      strv_addf(&env, "LOGNAME", target.name) || strv_addf(&env, "SUDO_USER", caller.name))
    goto out;
  snprintf(num, sizeof num, "%u", (unsigned)cr.uid);
  if (strv_addf(&env, "SUDO_UID", num)) goto out;
  snprintf(num, sizeof num, "%u", (unsigned)caller.gid);
  if (strv_addf(&env, "SUDO_GID", num)) goto out;
  /* the command */
  if (fl_login || fl_shell) {
    const char *sh = tshell;
    if (fl_shell && !fl_login) {
      const char *s = env_get((char *const *)rq.env, rq.n_env, "SHELL");
      if (s && *s) sh = s;
    }
    if (strv_add(&argv, sh, strlen(sh))) goto out;
    if (fl_login && strv_add(&argv, "-l", 2)) goto out;
    if (rq.n_args) {
      joined = envd_sudo_shell_join(rq.args);
      if (!joined || strv_add(&argv, "-c", 2) || strv_add(&argv, joined, strlen(joined))) goto out;
    }
    exe = strdup(sh);
    if (fl_login) cwd = target.home;
  } else {
    if (!rq.n_args) goto out;
    for (size_t i = 0; i < rq.n_args; i++)
      if (strv_add(&argv, rq.args[i], strlen(rq.args[i]))) goto out;
    exe = find_program(rq.args[0], SECURE_PATH);
    if (!exe) {
      say(err, "sudo: %s: command not found\n", rq.args[0]);
      goto out;
    }
  }
  joined = joined ? joined : envd_sudo_shell_join((const char *const *)argv.v);
  if (joined && strv_addf(&env, "SUDO_COMMAND", joined)) goto out;
  if (!exe) goto out;
  /* the monitor's layout: 3 = the connection, 4-6 = the caller's stdio */
  int dups[4] = {conn, fds[0], fds[1], fds[2]};
  pid_t m = fork();
  if (m == 0) {
    int hi[4];
    for (int i = 0; i < 4; i++)
      if ((hi[i] = fcntl(dups[i], F_DUPFD, 16)) < 0) _exit(1);
    for (int i = 0; i < 4; i++)
      if (dup2(hi[i], 3 + i) < 0) _exit(1);
    syscall(SYS_close_range, 7U, ~0U, 0U);
    monitor(&target, exe, argv.v, env.v, cwd);
  }
  if (m > 0) fail = 0; /* the monitor answers; envd's reaper collects it */
out:
  if (fail) write_all(conn, &fail, sizeof fail);
  for (int i = 0; i < 3; i++)
    if (fds[i] >= 0) close(fds[i]);
  envd_sudo_req_free(&rq);
  strv_free(&env);
  strv_free(&argv);
  free(exe);
  free(joined);
  free(req);
}

static void *serve(void *arg) {
  (void)arg;
  for (;;) {
    int c = accept4(g_sudo.fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
        if (errno == EMFILE || errno == ENFILE) poll(NULL, 0, 100);
        continue;
      }
      return NULL; /* shut down */
    }
    handle(c);
    close(c);
  }
}

int envd_sudo_serve_start(const char *path) {
  if (geteuid() != 0) return 0; /* only root can run commands as others */
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof a.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  unlink(path);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || chmod(path, 0666) != 0 ||
      listen(fd, 64) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  g_sudo.fd = fd;
  snprintf(g_sudo.path, sizeof g_sudo.path, "%s", path);
  if (pthread_create(&g_sudo.thread, NULL, serve, NULL) != 0) {
    close(fd);
    g_sudo.fd = -1;
    return -1;
  }
  g_sudo.running = 1;
  return 0;
}

void envd_sudo_serve_stop(void) {
  if (!g_sudo.running) return;
  shutdown(g_sudo.fd, SHUT_RDWR);
  pthread_join(g_sudo.thread, NULL);
  close(g_sudo.fd);
  unlink(g_sudo.path);
  g_sudo.fd = -1;
  g_sudo.running = 0;
}

/* ---- the client (envd run as "sudo") -------------------------------------- */

static volatile sig_atomic_t g_pending[65];

static void on_sig(int s) {
  if (s > 0 && s < 65) g_pending[s] = 1;
}

static int usage(void) {
  fprintf(stderr,
          "usage: sudo [-E] [-u user] [-n] [-H] command [arg ...]\n"
          "       sudo [-E] [-u user] -i|-s [command [arg ...]]\n");
  return 1;
}

static int put(char **buf, size_t *len, size_t *cap, char tag, const char *v) {
  size_t l = strlen(v) + 2;
  if (*len + l > SUDO_MAX_REQ) return -1;
  if (*len + l > *cap) {
    size_t c = *cap ? *cap : 4096;
    while (c < *len + l) c *= 2;
    char *nb = realloc(*buf, c);
    if (!nb) return -1;
    *buf = nb;
    *cap = c;
  }
  (*buf)[(*len)++] = tag;
  memcpy(*buf + *len, v, l - 1);
  *len += l - 1;
  return 0;
}

int envd_sudo_client_main(int argc, char **argv) {
  const char *user = NULL;
  char flags[8] = "";
  size_t nf = 0;
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || !a[1]) break;
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if (!strncmp(a, "--", 2)) {
      if (!strcmp(a, "--preserve-env")) {
        if (nf < 6 && !strchr(flags, 'E')) flags[nf++] = 'E';
      } else if (!strcmp(a, "--login")) {
        if (nf < 6 && !strchr(flags, 'i')) flags[nf++] = 'i';
      } else if (!strcmp(a, "--shell")) {
        if (nf < 6 && !strchr(flags, 's')) flags[nf++] = 's';
      } else if (!strncmp(a, "--user=", 7)) {
        user = a + 7;
      } else if (!strcmp(a, "--user") && i + 1 < argc) {
        user = argv[++i];
      } else if (!strcmp(a, "--non-interactive") || !strcmp(a, "--set-home") ||
                 !strcmp(a, "--stdin") || !strcmp(a, "--reset-timestamp")) {
      } else if (!strcmp(a, "--version")) {
        printf("agent-sandbox sudo (envd)\n");
        return 0;
      } else {
        fprintf(stderr, "sudo: unrecognized option '%s'\n", a);
        return usage();
      }
      continue;
    }
    for (const char *c = a + 1; *c; c++) {
      switch (*c) {
        case 'E':
        case 'i':
        case 's':
          if (nf < 6 && !strchr(flags, *c)) flags[nf++] = *c;
          break;
        case 'n':
        case 'H':
        case 'S':
        case 'k':
        case 'K':
        case 'v':
          break; /* no password is ever asked */
        case 'u':
          if (c[1]) {
            user = c + 1;
          } else if (i + 1 < argc) {
            user = argv[++i];
          } else {
            fprintf(stderr, "sudo: option requires an argument -- 'u'\n");
            return usage();
          }
          goto next; /* the rest of the word was the user */
        case 'V':
          printf("agent-sandbox sudo (envd)\n");
          return 0;
        case 'h':
          usage();
          return 0;
        default:
          fprintf(stderr, "sudo: invalid option -- '%c'\n", *c);
          return usage();
      }
    }
  next:;
  }
  flags[nf] = '\0';
  int shellish = strchr(flags, 'i') || strchr(flags, 's');
  if (i >= argc && !shellish) {
    /* -v, -k, -K alone: nothing to validate (no password) */
    for (int k = 1; k < argc; k++)
      if (!strcmp(argv[k], "-v") || !strcmp(argv[k], "-k") || !strcmp(argv[k], "-K")) return 0;
    return usage();
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/");
  int bad = put(&buf, &len, &cap, 'u', user ? user : "root") || put(&buf, &len, &cap, 'f', flags) ||
            put(&buf, &len, &cap, 'd', cwd);
  for (char **e = environ; !bad && e && *e; e++) bad = put(&buf, &len, &cap, 'e', *e);
  for (int k = i; !bad && k < argc; k++) bad = put(&buf, &len, &cap, 'a', argv[k]);
  if (bad) {
    fprintf(stderr, "sudo: command and environment too large\n");
    free(buf);
    return 1;
  }
  const char *sp = getenv("ASB_SUDO_SOCKET");
  if (!sp || !*sp) sp = ENVD_SUDO_SOCKET;
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", sp);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    fprintf(stderr, "sudo: cannot reach envd at %s: %s\n", sp, strerror(errno));
    free(buf);
    return 1;
  }
  sudo_hdr h = {SUDO_MAGIC, (uint32_t)len};
  int fds[3] = {0, 1, 2};
  union {
    char b[CMSG_SPACE(sizeof fds)];
    struct cmsghdr align;
  } cm;
  memset(&cm, 0, sizeof cm);
  struct iovec iov = {&h, sizeof h};
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cm.b;
  mh.msg_controllen = sizeof cm.b;
  struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  if (sendmsg(s, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof h) {
    fprintf(stderr, "sudo: cannot talk to envd: %s\n", strerror(errno));
    free(buf);
    return 1;
  }
  write_all(s, buf, len);
  free(buf);
  /* relay the signals a terminal or kill sends us; the command is in a
   * session of its own, so it would not get them otherwise */
  static const int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
  sigset_t blk, old;
  sigemptyset(&blk);
  for (size_t k = 0; k < sizeof fwd / sizeof fwd[0]; k++) sigaddset(&blk, fwd[k]);
  sigprocmask(SIG_BLOCK, &blk, &old);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sig;
  for (size_t k = 0; k < sizeof fwd / sizeof fwd[0]; k++) sigaction(fwd[k], &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  int32_t st = 0;
  size_t got = 0;
  sigset_t during = old;
  for (size_t k = 0; k < sizeof fwd / sizeof fwd[0]; k++) sigdelset(&during, fwd[k]);
  for (;;) {
    struct pollfd p = {s, POLLIN, 0};
    int r = ppoll(&p, 1, NULL, &during);
    for (int k = 1; k < 65; k++) {
      if (!g_pending[k]) continue;
      g_pending[k] = 0;
      unsigned char b = (unsigned char)k;
      write_all(s, &b, 1);
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    ssize_t n = read(s, (char *)&st + got, sizeof st - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
    if (got == sizeof st) break;
  }
  close(s);
  if (got != sizeof st) {
    fprintf(stderr, "sudo: envd closed the connection\n");
    return 1;
  }
  if (WIFSIGNALED(st)) {
    /* die of the same signal, as sudo does, so the shell sees 128+N */
    int sig = WTERMSIG(st);
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    return 128 + sig;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
