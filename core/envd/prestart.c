/* envd: the child environment, and the pre-started login shell.
 *
 * Every commands.run of the SDKs is Start("/bin/bash", ["-l", "-c", CMD]);
 * most of its time is bash's start-up with the profile (docs/envd.md,
 * "Where a command's time goes"). So one such shell is started ahead, for
 * the user, cwd and stdin mode of the last command: its pipes made, its
 * session, cgroups, oom_score_adj, limits and ids done by the same spawn as
 * any process, `bash -l -c BOOT` with the environment a Start without envs
 * gives, the profile sourced in that cwd. BOOT then blocks reading a line
 * from fd 3 (the control pipe). A Start that matches takes it: envd writes
 * CMD into the command file (a memfd, fd 4), a newline into the control
 * pipe, and the shell reads CMD, closes 3 and 4 and evals it, then exits as
 * `bash -l -c CMD` would. The next one is started by this file's thread
 * while the command runs. Everything that could make it differ from a fresh
 * `bash -l -c CMD` either makes the Start take the fresh path (the checks
 * of envd_pre_take) or is listed in docs/envd.md.
 * SPDX-License-Identifier: Apache-2.0 */
#include "prestart.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "proc_tab.h"
#include "spawn.h"
#include "state.h"
#include "util/buf.h"
#include "util/util.h"

/* ---- the child environment -------------------------------------------- */

static int env_put(char **v, size_t *n, const char *k, const char *val) {
  size_t kl = strlen(k);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "%s=%s", k, val);
  char *s = asbi_buf_detach(&b, NULL);
  if (!s) return -1;
  for (size_t i = 0; i < *n; i++) {
    if (strncmp(v[i], k, kl) == 0 && v[i][kl] == '=') {
      free(v[i]);
      v[i] = s;
      return 0;
    }
  }
  v[(*n)++] = s;
  return 0;
}

char **envd_child_env(const envd_user *u, const cJSON *envs, const char **path_out) {
  size_t ninit = 0;
  char **initv = envd_env_snapshot(&ninit);
  size_t cap = 5 + ninit + (size_t)cJSON_GetArraySize(envs);
  char **v = calloc(cap, sizeof *v);
  size_t n = 0;
  int bad = !v || !initv;
  if (!bad)
    bad = env_put(v, &n, "PATH", g_envd.path_env ? g_envd.path_env : "") ||
          env_put(v, &n, "HOME", u->home) || env_put(v, &n, "USER", u->name) ||
          env_put(v, &n, "LOGNAME", u->name);
  for (size_t i = 0; !bad && i < ninit; i++) {
    char *eq = strchr(initv[i], '=');
    if (!eq) continue;
    *eq = '\0';
    bad = env_put(v, &n, initv[i], eq + 1);
    *eq = '=';
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, envs) {
    if (!bad) bad = env_put(v, &n, it->string, it->valuestring);
  }
  envd_strv_free(initv);
  if (bad) {
    envd_strv_free(v);
    return NULL;
  }
  if (path_out) {
    *path_out = NULL;
    for (size_t i = 0; i < n; i++)
      if (strncmp(v[i], "PATH=", 5) == 0) *path_out = v[i] + 5;
  }
  return v;
}

/* ---- the pre-started shell ---------------------------------------------- */

/* After the command that held the next shell back is done, its end event
 * still has to cross the router to the client, which need the CPUs then:
 * the next shell's start-up (~1 ms of CPU) waits this much longer
 * (measured, cmd_bench_ab.sh at load 9-10: commands.run("true") p50
 * 0.66 ms with 1 or 3 ms against 1.66-1.73 ms without, same run). */
#define PRE_DELAY_MS 2u

/* The -c string of a pre-started shell. A function, so that `$_` is
 * what the profile's last command left (the call's last argument is that
 * value; the function is gone by then): it removes itself, waits for the
 * line on fd 3, reads the command from fd 4 and closes both (`exec` of a
 * function stays), and the command is eval'd at the top level. */
static const char k_boot[] =
    "__asb_boot() { builtin unset -f __asb_boot; "
    "builtin read -r -u 3 BASH_EXECUTION_STRING || builtin exit 1; "
    "IFS= builtin read -r -d '' -u 4 BASH_EXECUTION_STRING || builtin :; exec 3<&- 4<&-; }; "
    "__asb_boot \"$_\"; builtin eval \"$BASH_EXECUTION_STRING\"";

/* The startup files a login bash reads (and Debian's /etc/profile and
 * ~/.profile source): a change to any of them after the shell was started
 * makes it stale. Watched for changes of the file itself and, through the
 * directory, for its creation, removal or replacement by a rename. */
static const char *const k_etc_files[] = {"profile", "bash.bashrc", "profile.d", NULL};
static const char *const k_home_files[] = {".bash_profile", ".bash_login", ".profile", ".bashrc",
                                           NULL};

#define W_FILE (IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
#define W_DIR_NAMES (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)

typedef struct pre_key {
  envd_user u;
  char *cwd;
  dev_t dev;
  ino_t ino;
  int want_stdin;
  uint64_t env_gen;
} pre_key;

/* The waiting shell: under the table lock (the I/O thread reaps under it) */
static struct {
  int used;
  int dead;
  pre_key key;
  envd_pre_proc pp;
  uint64_t changes; /* g_ino.changes when it was started */
} g_slot;

/* The startup files' watches: one inotify descriptor for envd's life (a
 * close waits for an RCU grace period: milliseconds, not for the hot
 * path). Every relevant event read counts one change; a shell started
 * after the count it saw is stale once it moved. Under the table lock but
 * the watches, which only the thread adds. */
enum { MAX_DIR_WDS = 16 };
static struct {
  int fd;
  uint64_t changes;
  int dir_wd[MAX_DIR_WDS]; /* /etc and the homes: events filtered by name */
  int dir_is_home[MAX_DIR_WDS];
  int ndir;
} g_ino = {.fd = -1};

/* The thread and what it is asked for */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t th;
  int running, stop, pending;
  pre_key want;
  /* The command that took the last shell, while its stream is not done:
   * the next shell waits for it, so that its start-up does not take the
   * CPU the command and its end need (the stream releases it once done or
   * after ENVD_PRE_HOLD_MS: proc.c). */
  pid_t hold_pid;
  uint64_t released_ms; /* when it was released: PRE_DELAY_MS more */
  int devnull;
} g_pre = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .devnull = -1};

static int same_user(const envd_user *a, const envd_user *b) {
  return a->uid == b->uid && a->gid == b->gid && a->ngroups == b->ngroups &&
         strcmp(a->name, b->name) == 0 && strcmp(a->home, b->home) == 0 &&
         memcmp(a->groups, b->groups, (size_t)a->ngroups * sizeof a->groups[0]) == 0;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void pp_close(envd_pre_proc *pp) {
  close_fd(&pp->fd_in);
  close_fd(&pp->fd_out);
  close_fd(&pp->fd_err);
  close_fd(&pp->ctl);
  close_fd(&pp->cmdfd);
}

/* Table lock held. Kills the waiting shell (the I/O thread reaps it). */
static void slot_drop(void) {
  if (!g_slot.used) return;
  if (!g_slot.dead) {
    kill(-g_slot.pp.pid, SIGKILL);
    kill(g_slot.pp.pid, SIGKILL);
  }
  pp_close(&g_slot.pp);
  free(g_slot.key.cwd);
  g_slot.key.cwd = NULL;
  g_slot.used = 0;
}

static int name_in(const char *name, const char *const *set) {
  for (; *set; set++)
    if (strcmp(name, *set) == 0) return 1;
  return 0;
}

/* Reads the pending events: every one about a startup file counts. */
static void ino_drain(void) {
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    ssize_t n = read(g_ino.fd, buf, sizeof buf);
    if (n <= 0) {
      if (n < 0 && errno != EAGAIN && errno != EINTR) g_ino.changes++; /* can't tell: stale */
      return;
    }
    for (char *p = buf; p < buf + n;) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      int filtered = 0;
      for (int i = 0; i < g_ino.ndir; i++) {
        if (ev->wd != g_ino.dir_wd[i]) continue;
        filtered = ev->len && !name_in(ev->name, g_ino.dir_is_home[i] ? k_home_files : k_etc_files);
        break;
      }
      if (!filtered) g_ino.changes++;
    }
  }
}

int envd_pre_take(const envd_user *u, const char *cwd, const struct stat *st, int want_stdin,
                  envd_pre_proc *out) {
  if (!g_slot.used) return -1;
  const pre_key *k = &g_slot.key;
  ino_drain();
  if (g_slot.dead || k->env_gen != envd_env_gen() || g_ino.changes != g_slot.changes) {
    slot_drop();
    return -1;
  }
  if (!same_user(&k->u, u) || strcmp(k->cwd, cwd) != 0 || k->dev != st->st_dev ||
      k->ino != st->st_ino || k->want_stdin != want_stdin)
    return -1; /* another kind of command: the thread replaces it if asked */
  *out = g_slot.pp;
  g_slot.pp.fd_in = g_slot.pp.fd_out = g_slot.pp.fd_err = g_slot.pp.ctl = g_slot.pp.cmdfd = -1;
  g_slot.dead = 1; /* nothing to kill in slot_drop: the caller owns it now */
  slot_drop();
  return 0;
}

int envd_pre_send(envd_pre_proc *pp, const char *cmd) {
  size_t len = strlen(cmd), off = 0;
  int rc = 0;
  while (off < len) {
    ssize_t w = pwrite(pp->cmdfd, cmd + off, len - off, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      rc = -1;
      break;
    }
    off += (size_t)w;
  }
  if (rc == 0) {
    ssize_t w;
    do {
      w = write(pp->ctl, "\n", 1);
    } while (w < 0 && errno == EINTR);
    if (w != 1) rc = -1; /* EPIPE: the shell died (SIGPIPE is blocked) */
  }
  close_fd(&pp->ctl);
  close_fd(&pp->cmdfd);
  return rc;
}

void envd_pre_reaped(pid_t pid) {
  if (g_slot.used && g_slot.pp.pid == pid) g_slot.dead = 1;
}

const char *envd_pre_eligible(const char *cmd, const cJSON *args, const cJSON *envs,
                              const cJSON *pty) {
  if (!g_pre.running || pty || cJSON_GetArraySize(envs) > 0 || strcmp(cmd, "/bin/bash") != 0 ||
      cJSON_GetArraySize(args) != 3)
    return NULL;
  const cJSON *a = args->child, *b = a->next, *c = b->next;
  if (!cJSON_IsString(a) || strcmp(a->valuestring, "-l") != 0 || !cJSON_IsString(b) ||
      strcmp(b->valuestring, "-c") != 0 || !cJSON_IsString(c))
    return NULL;
  return c->valuestring;
}

void envd_pre_want(const envd_user *u, const char *cwd, int want_stdin, pid_t after) {
  if (!g_pre.running) return;
  char *c = asbi_strdup(cwd);
  if (!c) return;
  pthread_mutex_lock(&g_pre.mu);
  if (g_pre.stop) { /* shutting down: nothing more is started */
    pthread_mutex_unlock(&g_pre.mu);
    free(c);
    return;
  }
  free(g_pre.want.cwd);
  g_pre.want.u = *u;
  g_pre.want.cwd = c;
  g_pre.want.want_stdin = want_stdin;
  g_pre.pending = 1;
  g_pre.hold_pid = after;
  if (after <= 0) pthread_cond_signal(&g_pre.cv); /* else envd_pre_release does */
  pthread_mutex_unlock(&g_pre.mu);
}

void envd_pre_release(pid_t pid) {
  if (!g_pre.running || pid <= 0) return;
  pthread_mutex_lock(&g_pre.mu);
  if (g_pre.hold_pid == pid) {
    g_pre.hold_pid = 0;
    g_pre.released_ms = asbi_now_ms();
    pthread_cond_signal(&g_pre.cv);
  }
  pthread_mutex_unlock(&g_pre.mu);
}

static void dir_watch(int wd, int is_home) {
  if (wd < 0) return;
  envd_ptab_lock();
  int i = 0;
  while (i < g_ino.ndir && g_ino.dir_wd[i] != wd) i++;
  if (i == g_ino.ndir && i < MAX_DIR_WDS) {
    g_ino.dir_wd[i] = wd;
    g_ino.dir_is_home[i] = is_home;
    g_ino.ndir++;
  }
  envd_ptab_unlock();
}

/* Watches the startup files of a shell for home (again: a file made since
 * is a new inode; a watch already there is the same one). -1 when there
 * is no /etc to watch or no more directories fit: don't guess then. */
static int add_watches(const char *home) {
  char p[PATH_MAX];
  int wd_etc = inotify_add_watch(g_ino.fd, "/etc", W_DIR_NAMES);
  int wd_home = inotify_add_watch(g_ino.fd, home, W_DIR_NAMES);
  if (wd_etc < 0) return -1;
  dir_watch(wd_etc, 0);
  dir_watch(wd_home, 1);
  if (g_ino.ndir >= MAX_DIR_WDS) return -1;
  for (const char *const *f = k_etc_files; *f; f++) {
    snprintf(p, sizeof p, "/etc/%s", *f);
    /* profile.d: a file inside changed, came or went */
    inotify_add_watch(g_ino.fd, p, W_FILE | (strcmp(*f, "profile.d") == 0 ? W_DIR_NAMES : 0));
  }
  for (const char *const *f = k_home_files; *f; f++) {
    if (snprintf(p, sizeof p, "%s/%s", home, *f) < (int)sizeof p)
      inotify_add_watch(g_ino.fd, p, W_FILE);
  }
  return 0;
}

/* Starts a shell for w into the slot (replacing what is there). */
static void prestart(const pre_key *w) {
  struct stat st;
  if (stat(w->cwd, &st) != 0) return;
  const char *child_path = NULL;
  char **envp = envd_child_env(&w->u, NULL, &child_path);
  if (!envp) return;
  envd_pre_proc pp = {.pid = -1, .fd_in = -1, .fd_out = -1, .fd_err = -1, .ctl = -1, .cmdfd = -1};
  int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1}, pc[2] = {-1, -1};
  uint64_t gen = envd_env_gen(); /* before the watches and the spawn: a later change is seen */
  int ok = add_watches(w->u.home) == 0 && pipe2(po, O_CLOEXEC) == 0 && pipe2(pe, O_CLOEXEC) == 0 &&
           (!w->want_stdin || pipe2(pi, O_CLOEXEC) == 0) && pipe2(pc, O_CLOEXEC) == 0;
  if (ok) pp.cmdfd = memfd_create("asb-command", MFD_CLOEXEC);
  ok = ok && pp.cmdfd >= 0 && fcntl(po[0], F_SETFL, O_RDONLY | O_NONBLOCK) == 0 &&
       fcntl(pe[0], F_SETFL, O_RDONLY | O_NONBLOCK) == 0;
  if (ok) {
    char *argv[] = {"/bin/bash", "-l", "-c", (char *)k_boot, NULL};
    envd_spawn sp;
    memset(&sp, 0, sizeof sp);
    sp.path = "/bin/bash";
    sp.argv = argv;
    sp.envp = envp;
    sp.cwd = w->cwd;
    sp.fd_in = w->want_stdin ? pi[0] : g_pre.devnull;
    sp.fd_out = po[1];
    sp.fd_err = pe[1];
    sp.extra_fds = 1;
    sp.fd_3 = pc[0];
    sp.fd_4 = pp.cmdfd;
    sp.set_ids = geteuid() == 0;
    sp.uid = w->u.uid;
    sp.gid = w->u.gid;
    sp.groups = w->u.groups;
    sp.ngroups = w->u.ngroups;
    sp.cgroup_procs = g_envd.cgroup_procs;
    sp.oom_score_adj = 100;
    sp.nofile_cur = g_envd.nofile_cur;
    sp.nofile_max = g_envd.nofile_max;
    sp.msg_noent = "exec: /bin/bash: not found\n";
    sp.msg_acces = "exec: /bin/bash: Permission denied\n";
    envd_ptab_lock();
    ino_drain(); /* what happened before this spawn: the shell reads the files after it */
    uint64_t changes = g_ino.changes;
    pid_t pid = envd_spawn_run(&sp);
    if (pid > 0 && sp.fail_errno) {
      /* the I/O thread reaps it (no record has its pid) */
      ok = 0;
    } else if (pid > 0) {
      slot_drop();
      pp.pid = pid;
      pp.fd_out = po[0];
      pp.fd_err = pe[0];
      pp.fd_in = w->want_stdin ? pi[1] : -1;
      pp.ctl = pc[1];
      po[0] = pe[0] = pi[1] = pc[1] = -1;
      g_slot.used = 1;
      g_slot.dead = 0;
      g_slot.pp = pp;
      g_slot.key = *w;
      g_slot.key.cwd = asbi_strdup(w->cwd);
      g_slot.key.dev = st.st_dev;
      g_slot.key.ino = st.st_ino;
      g_slot.key.env_gen = gen;
      g_slot.changes = changes;
      pp.cmdfd = -1;
      if (!g_slot.key.cwd) slot_drop();
    }
    envd_ptab_unlock();
  }
  int fds[] = {po[0], po[1], pe[0], pe[1], pi[0], pi[1], pc[0], pc[1], pp.cmdfd};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (fds[i] >= 0) close(fds[i]);
  envd_strv_free(envp);
}

/* Whether the waiting shell is already one for w (nothing to do). */
static int slot_serves(const pre_key *w) {
  envd_ptab_lock();
  int r = g_slot.used && !g_slot.dead && same_user(&g_slot.key.u, &w->u) &&
          strcmp(g_slot.key.cwd, w->cwd) == 0 && g_slot.key.want_stdin == w->want_stdin &&
          g_slot.key.env_gen == envd_env_gen();
  envd_ptab_unlock();
  return r;
}

static void *pre_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_pre.mu);
  for (;;) {
    while (!g_pre.pending && !g_pre.stop) pthread_cond_wait(&g_pre.cv, &g_pre.mu);
    if (g_pre.stop) break;
    if (g_pre.hold_pid > 0) { /* envd_pre_release wakes it */
      pthread_cond_wait(&g_pre.cv, &g_pre.mu);
      continue;
    }
    uint64_t now = asbi_now_ms();
    if (g_pre.released_ms && now < g_pre.released_ms + PRE_DELAY_MS) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      uint64_t ns = (g_pre.released_ms + PRE_DELAY_MS - now) * 1000000u;
      ts.tv_sec += (time_t)(ns / 1000000000u);
      ts.tv_nsec += (long)(ns % 1000000000u);
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&g_pre.cv, &g_pre.mu, &ts);
      continue;
    }
    g_pre.released_ms = 0;
    pre_key w = g_pre.want;
    g_pre.want.cwd = NULL;
    g_pre.pending = 0;
    pthread_mutex_unlock(&g_pre.mu);
    if (!slot_serves(&w)) prestart(&w);
    free(w.cwd);
    pthread_mutex_lock(&g_pre.mu);
  }
  pthread_mutex_unlock(&g_pre.mu);
  return NULL;
}

int envd_pre_init(void) {
  const char *v = asbi_getenv("ASB_PRESTART");
  if (v && strcmp(v, "0") == 0) return 0;
  g_pre.devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (g_pre.devnull < 0) return -1;
  pthread_condattr_t ca; /* the delay's timed wait: on the monotonic clock */
  if (pthread_condattr_init(&ca) == 0) {
    if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0) {
      pthread_cond_destroy(&g_pre.cv);
      pthread_cond_init(&g_pre.cv, &ca);
    }
    pthread_condattr_destroy(&ca);
  }
  g_ino.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (g_ino.fd < 0) {
    close_fd(&g_pre.devnull);
    return -1;
  }
  /* the spawn's clone stack is envd's own; signals stay with the I/O thread */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&g_pre.th, NULL, pre_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    close_fd(&g_pre.devnull);
    close_fd(&g_ino.fd);
    return -1;
  }
  g_pre.running = 1;
  return 0;
}

void envd_pre_shutdown(void) {
  if (!g_pre.running) return;
  pthread_mutex_lock(&g_pre.mu);
  g_pre.stop = 1;
  pthread_cond_signal(&g_pre.cv);
  pthread_mutex_unlock(&g_pre.mu);
  pthread_join(g_pre.th, NULL);
  g_pre.running = 0;
  pthread_mutex_lock(&g_pre.mu);
  free(g_pre.want.cwd);
  g_pre.want.cwd = NULL;
  pthread_mutex_unlock(&g_pre.mu);
  envd_ptab_lock();
  slot_drop();
  envd_ptab_unlock();
  close_fd(&g_pre.devnull);
  close_fd(&g_ino.fd);
}
