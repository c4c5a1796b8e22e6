/* Starts a real agent-sandboxd on a free loopback port with its own state
 * dir and cgroup name, and a client configured for it. Stopping kills every
 * sandbox it made and removes the state dir. Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_FIXTURE_H
#define ASB_ENGINE_FIXTURE_H

#include <agentsandbox.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef ASB_ENGINE_BIN
#error "define ASB_ENGINE_BIN"
#endif

typedef struct engine_fixture {
  pid_t pid;
  int port;
  char url[64];
  char state[128];
  char cgroup[64];
  char key[128];
  int keep_state;                /* do not remove the state dir on stop (restart tests) */
  const char *const *extra_args; /* more engine options, NULL-ended (or NULL) */
  int ctty;                      /* > 0: a terminal (pty slave) the engine starts with as its
                                    controlling terminal and stdin, as `sudo agent-sandboxd`
                                    on a terminal does */
} engine_fixture;

/* Engines running, by pid and state dir (copies: a fixture may live on a
 * test's stack), for engine_fixture_at_exit. */
static struct {
  pid_t pid;
  char state[128];
} engine_fixture_live[8];

static void engine_fixture_live_set(pid_t pid, const char *state) {
  for (size_t i = 0; i < sizeof engine_fixture_live / sizeof *engine_fixture_live; i++)
    if (engine_fixture_live[i].pid == (state ? 0 : pid)) {
      engine_fixture_live[i].pid = state ? pid : 0;
      snprintf(engine_fixture_live[i].state, sizeof engine_fixture_live[i].state, "%s",
               state ? state : "");
      return;
    }
}

static inline int engine_fixture_launch(engine_fixture *f, int kill_on_exit) {
  int out[2];
  if (pipe(out) != 0) return -1;
  char listen[32] = "127.0.0.1:0";
  if (f->port) snprintf(listen, sizeof listen, "127.0.0.1:%d", f->port);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    /* Should the test die without stopping it (a crash, an abort, a ctest
     * timeout), the engine gets SIGTERM and, started with --kill-on-exit,
     * kills its sandboxes: no engine, loop device or cgroup outlives the
     * test. (PDEATHSIG follows the forking thread: fixtures are started
     * from the test's main thread.) */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    if (f->ctty > 0) {
      setsid();
      if (ioctl(f->ctty, TIOCSCTTY, 0) != 0) _exit(126);
      dup2(f->ctty, 0);
    }
    /* ASB_TEST_ENVD / ASB_TEST_INIT: run these instead of the build
     * tree's envd and asb-init. */
    const char *envd = getenv("ASB_TEST_ENVD"), *init = getenv("ASB_TEST_INIT");
    const char *argv[48];
    int n = 0;
    argv[n++] = ASB_ENGINE_BIN;
    argv[n++] = "--state-dir";
    argv[n++] = f->state;
    argv[n++] = "--listen";
    argv[n++] = listen;
    argv[n++] = "--cgroup-name";
    argv[n++] = f->cgroup;
    argv[n++] = "--pool";
    argv[n++] = "2";
    if (envd && *envd) {
      argv[n++] = "--envd";
      argv[n++] = envd;
    }
    if (init && *init) {
      argv[n++] = "--init";
      argv[n++] = init;
    }
    if (kill_on_exit) argv[n++] = "--kill-on-exit";
    for (size_t i = 0; f->extra_args && f->extra_args[i] && n < 47; i++)
      argv[n++] = f->extra_args[i];
    argv[n] = NULL;
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(out[1]);
  FILE *fp = fdopen(out[0], "r");
  char line[256];
  int port = 0;
  while (fgets(line, sizeof line, fp)) {
    const char *c = strrchr(line, ':');
    if (strncmp(line, "listening on", 12) == 0 && c) {
      port = atoi(c + 1);
      break;
    }
  }
  fclose(fp);
  if (!port) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
  }
  f->pid = pid;
  engine_fixture_live_set(pid, f->state);
  f->port = port;
  snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", port);
  char path[256];
  snprintf(path, sizeof path, "%s/api_key", f->state);
  FILE *k = fopen(path, "r");
  if (!k || !fgets(f->key, sizeof f->key, k)) {
    if (k) fclose(k);
    return -1;
  }
  fclose(k);
  f->key[strcspn(f->key, "\r\n")] = 0;
  return 0;
}

/* When a test kills the engine with SIGKILL, the sandboxes' inits are
 * re-parented to the nearest subreaper, normally PID 1, which reaps them
 * once the restarted engine has killed them. Some machines' PID 1 (in
 * containers and VMs, this one's included) does not reap, so the zombies
 * would pin their cgroups; the test process stands in for a proper PID 1 by
 * being a subreaper that reaps. */
/* 1 if pid is a zombie child of ours that belonged to a sandbox: an init
 * (asb-init), or any process in a test engine's cgroups (a sandbox child
 * that died before it exec'd asb-init still carries the engine thread's
 * name). */
static int engine_fixture_adopted_zombie(const char *pid, pid_t self) {
  char path[300], st[512] = "";
  snprintf(path, sizeof path, "/proc/%s/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  if (!fgets(st, sizeof st, f)) st[0] = 0;
  fclose(f);
  const char *close_paren = strrchr(st, ')');
  char state = 0;
  int ppid = 0;
  if (!close_paren || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2 || state != 'Z' ||
      ppid != (int)self)
    return 0;
  if (strstr(st, "(asb-init)")) return 1;
  char cg[4096] = "";
  snprintf(path, sizeof path, "/proc/%s/cgroup", pid);
  f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(cg, 1, sizeof cg - 1, f);
  cg[n] = 0;
  fclose(f);
  return strstr(cg, "/asbt-") != NULL;
}

/* The reaper stops at exit (engine_fixture_at_exit joins it), so that no
 * thread is inside fopen/fgets while the process ends: valgrind (ffi.unload)
 * reported such a half-read FILE as a leak. */
static atomic_int engine_fixture_reaper_stop;
static pthread_t engine_fixture_reaper_thread;
static int engine_fixture_reaper_running;

static void *engine_fixture_reaper(void *arg) {
  (void)arg;
  pid_t self = getpid();
  while (!engine_fixture_reaper_stop) {
    /* Reap only what sandboxes left us: the test's own children (engines,
     * system(), popen()) are waited for by the code that started them, and
     * one of them being waitable must not hide the rest. */
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
      if (de->d_name[0] < '1' || de->d_name[0] > '9') continue;
      if (engine_fixture_adopted_zombie(de->d_name, self)) waitpid(atoi(de->d_name), NULL, WNOHANG);
    }
    if (d) closedir(d);
    usleep(20000);
  }
  return NULL;
}

/* A test that exits without stopping an engine (exit() from a helper, a
 * failed REQUIRE that returned past a fixture's stop) still stops it (it
 * kills its sandboxes: --kill-on-exit) and removes its state. */
static void engine_fixture_at_exit(void) {
  if (engine_fixture_reaper_running) {
    engine_fixture_reaper_stop = 1;
    pthread_join(engine_fixture_reaper_thread, NULL);
    engine_fixture_reaper_running = 0;
  }
  for (size_t i = 0; i < sizeof engine_fixture_live / sizeof *engine_fixture_live; i++) {
    pid_t pid = engine_fixture_live[i].pid;
    if (pid <= 0) continue;
    kill(pid, SIGTERM);
    while (waitpid(pid, NULL, WNOHANG) != pid && kill(pid, 0) == 0) usleep(10000);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", engine_fixture_live[i].state);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", engine_fixture_live[i].state);
    engine_fixture_live[i].pid = 0;
  }
}

/* engine_fixture_start with more engine options (NULL-ended, or NULL; the
 * array must outlive the fixture: restarts pass it again) and ctty (> 0) as
 * the engine's controlling terminal (see engine_fixture.ctty). */
static inline int engine_fixture_start_full(engine_fixture *f, const char *tag,
                                            const char *const *extra_args, int ctty) {
  static int reaping;
  if (!reaping) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    engine_fixture_reaper_running =
        pthread_create(&engine_fixture_reaper_thread, NULL, engine_fixture_reaper, NULL) == 0;
    atexit(engine_fixture_at_exit);
    reaping = 1;
  }
  memset(f, 0, sizeof *f);
  snprintf(f->state, sizeof f->state, "/tmp/asb-%s-%d", tag, (int)getpid());
  snprintf(f->cgroup, sizeof f->cgroup, "asbt-%s-%d", tag, (int)getpid());
  f->extra_args = extra_args;
  f->ctty = ctty;
  return engine_fixture_launch(f, 1);
}

/* Like engine_fixture_start, with more engine options. */
static inline int engine_fixture_start_args(engine_fixture *f, const char *tag,
                                            const char *const *extra_args) {
  return engine_fixture_start_full(f, tag, extra_args, 0);
}

/* Like engine_fixture_start, with ctty as the engine's controlling terminal. */
static inline int engine_fixture_start_ctty(engine_fixture *f, const char *tag, int ctty) {
  return engine_fixture_start_full(f, tag, NULL, ctty);
}

static inline int engine_fixture_start(engine_fixture *f, const char *tag) {
  return engine_fixture_start_full(f, tag, NULL, 0);
}

/* SIGTERM (clean stop) or SIGKILL (crash). */
static inline void engine_fixture_signal(engine_fixture *f, int sig) {
  if (f->pid <= 0) return;
  kill(f->pid, sig);
  /* A subreaper thread of the test may reap it first: then wait for it to
   * be gone rather than for its status. */
  while (waitpid(f->pid, NULL, WNOHANG) != f->pid && kill(f->pid, 0) == 0) usleep(10000);
  engine_fixture_live_set(f->pid, NULL);
  f->pid = 0;
}

static inline void engine_fixture_stop(engine_fixture *f) {
  engine_fixture_signal(f, SIGTERM);
  if (!f->keep_state && f->state[0]) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->state);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", f->state);
  }
}

/* The memory cgroup dir of f's sandbox id on the host, <the engine's
 * cgroup>/<f's cgroup name>/<id>, on cgroup v2 or in v1's memory
 * hierarchy: 1 if v1's. */
static inline int engine_fixture_memcg(const engine_fixture *f, const char *id, char *out,
                                       size_t len) {
  char p[64], line[512], v2[512] = "", v1[512] = "";
  snprintf(p, sizeof p, "/proc/%d/cgroup", (int)f->pid);
  FILE *fp = fopen(p, "r");
  while (fp && fgets(line, sizeof line, fp)) {
    line[strcspn(line, "\n")] = 0;
    if (!strncmp(line, "0::", 3)) snprintf(v2, sizeof v2, "%s", line + 3);
    const char *m = strstr(line, ":memory:");
    if (m) snprintf(v1, sizeof v1, "%s", m + 8);
  }
  if (fp) fclose(fp);
  struct stat st;
  if (stat("/sys/fs/cgroup/memory", &st) == 0) {
    snprintf(out, len, "/sys/fs/cgroup/memory%s/%s/%s", v1, f->cgroup, id);
    return 1;
  }
  snprintf(out, len, "/sys/fs/cgroup%s/%s/%s", v2, f->cgroup, id);
  return 0;
}

/* The value of key in sandbox id's runtime record (the isolation
 * runtime's <state>/sandboxes/<id>/state, a key=value a line: host_uid,
 * pid, starttime, boot_id, cgroup.<hierarchy>...) in out, "" if it has
 * none: out. */
static inline char *engine_fixture_record(const engine_fixture *f, const char *id, const char *key,
                                          char *out, size_t len) {
  char p[300], line[4200];
  snprintf(p, sizeof p, "%s/sandboxes/%s/state", f->state, id);
  out[0] = 0;
  FILE *fp = fopen(p, "r");
  size_t kl = strlen(key);
  while (fp && fgets(line, sizeof line, fp))
    if (!strncmp(line, key, kl) && line[kl] == '=') {
      line[strcspn(line, "\n")] = 0;
      snprintf(out, len, "%s", line + kl + 1);
    }
  if (fp) fclose(fp);
  return out;
}

/* Rewrites id's runtime record with new values for some of its keys (kv:
 * "key", "value" pairs, NULL-ended), as a crash or a reboot would leave
 * it: 0; -1 if a key is not in it or it could not be rewritten. */
static inline int engine_fixture_record_set(const engine_fixture *f, const char *id,
                                            const char *const *kv) {
  char p[300], buf[8192], out[8300];
  snprintf(p, sizeof p, "%s/sandboxes/%s/state", f->state, id);
  FILE *fp = fopen(p, "r");
  if (!fp) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  fclose(fp);
  buf[n] = 0;
  size_t o = 0;
  int keys = 0, set = 0;
  for (const char *const *k = kv; k[0]; k += 2) keys++;
  for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    const char *const *k = kv;
    while (k[0] && !(!strncmp(l, k[0], strlen(k[0])) && l[strlen(k[0])] == '=')) k += 2;
    if (k[0])
      o += (size_t)snprintf(out + o, sizeof out - o, "%s=%s\n", k[0], k[1]), set++;
    else
      o += (size_t)snprintf(out + o, sizeof out - o, "%s\n", l);
  }
  if (set != keys || o >= sizeof out || !(fp = fopen(p, "w"))) return -1;
  int rc = fputs(out, fp) < 0;
  return fclose(fp) || rc ? -1 : 0;
}

static inline int engine_fixture_client(const engine_fixture *f, asb_client **c) {
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.api_url = f->url;
  o.sandbox_url = f->url;
  o.api_key = f->key;
  o.debug = -1;
  return asb_client_new(c, &o);
}

#endif
