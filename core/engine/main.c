/* agent-sandboxd — the local engine: E2B's control plane and sandbox router
 * on one Linux machine. See docs/engine.md.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "util/buf.h"
#include "util/util.h"

#ifndef ASB_DEFAULT_ENVD
#define ASB_DEFAULT_ENVD "/usr/local/bin/agent-sandbox-envd"
#endif
#ifndef ASB_DEFAULT_CODEI
#define ASB_DEFAULT_CODEI "/usr/local/bin/agent-sandbox-code-interpreter"
#endif
#ifndef ASB_DEFAULT_TEMPLATES_DIR
#define ASB_DEFAULT_TEMPLATES_DIR "/usr/share/agent-sandbox/templates"
#endif
#ifndef ASB_INSTALLED_ENVD
#define ASB_INSTALLED_ENVD ASB_DEFAULT_ENVD
#endif
#ifndef ASB_INSTALLED_CODEI
#define ASB_INSTALLED_CODEI ASB_DEFAULT_CODEI
#endif
#ifndef ASB_INSTALLED_TEMPLATES_DIR
#define ASB_INSTALLED_TEMPLATES_DIR ASB_DEFAULT_TEMPLATES_DIR
#endif
#ifndef ASB_DEFAULT_INIT
#define ASB_DEFAULT_INIT "/usr/local/libexec/agent-sandbox/asb-init"
#endif
#ifndef ASB_INSTALLED_INIT
#define ASB_INSTALLED_INIT ASB_DEFAULT_INIT
#endif

/* A default: this build tree's file while it exists, else where
 * `cmake --install` put it. */
static const char *default_path(const char *built, const char *installed) {
  return access(built, F_OK) == 0 ? built : installed;
}

int64_t now_unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rfc3339_ms(int64_t ms, char out[40]) {
  asbi_rfc3339(ms / 1000, (long)(ms % 1000) * 1000000L, out);
}

void json_add_time(cJSON *obj, const char *key, int64_t ms) {
  char t[40];
  rfc3339_ms(ms, t);
  cJSON_AddStringToObject(obj, key, t);
}

void engine_log(const char *fmt, ...) {
  char ts[40];
  asbi_rfc3339_now(ts);
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s agent-sandboxd: %s\n", ts, msg);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: agent-sandboxd [options]\n"
          "  --state-dir DIR   engine state (default $ASB_STATE_DIR or /var/lib/agent-sandbox)\n"
          "  --listen H:P      control plane + router address (default 127.0.0.1:49982;\n"
          "                    port 0 picks a free one)\n"
          "  --socket PATH     also serve on this unix socket (default <state>/engine.sock)\n"
          "  --envd PATH       envd binary run inside sandboxes (default %s)\n"
          "  --init PATH       asb-init binary (default %s)\n"
          "  --code-interpreter PATH  code interpreter run inside sandboxes for\n"
          "                    port 49999 (default %s; absent = disabled)\n"
          "  --templates-dir DIR  bundled templates, built on first use (default\n"
          "                    $ASB_TEMPLATES_DIR or %s)\n"
          "  --cgroup-name N   name of the engine's cgroups (default agent-sandbox)\n"
          "  --pool N          keep N pre-formatted disk images ready (default 8)\n"
          "  --max-connections N  connections each listener (TCP, unix socket) serves\n"
          "                    at once (default 1000)\n"
          "  --max-connections-per-ip N  TCP connections one client address may hold\n"
          "                    (default 256)\n"
          "  --header-timeout S  seconds a connection may take to send a request\n"
          "                    head, counted from its start or its previous request\n"
          "                    (default 30)\n"
          "  --daemon          detach; log to <state>/engine.log, pid in <state>/engine.pid\n"
          "  --kill-on-exit    kill every sandbox when stopping (default: keep them\n"
          "                    running; a restarted engine adopts them)\n"
          "  --preflight       check what the engine needs, print the report, exit\n"
          "  --version         print the version and exit\n",
          ASB_DEFAULT_ENVD, ASB_DEFAULT_INIT, ASB_DEFAULT_CODEI, ASB_DEFAULT_TEMPLATES_DIR);
}

static int write_file(const char *path, const char *text, mode_t mode) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return -errno;
  size_t n = strlen(text);
  int rc = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0 ? 0 : -EIO;
  close(fd);
  if (rc == 0 && rename(tmp, path) != 0) rc = -errno;
  return rc;
}

/* The API key: e2b_ + 40 hex, made on first start, mode 0600. */
static int load_api_key(engine *e) {
  char path[4096];
  snprintf(path, sizeof path, "%s/api_key", e->state_dir);
  FILE *f = fopen(path, "re");
  if (f) {
    char key[128] = "";
    int ok = fgets(key, sizeof key, f) != NULL;
    fclose(f);
    key[strcspn(key, "\r\n")] = 0;
    if (ok && asbi_startswith(key, "e2b_") && strlen(key) == 44) {
      snprintf(e->api_key, sizeof e->api_key, "%s", key);
      chmod(path, 0600);
      return 0;
    }
    engine_log("%s is malformed; making a new key", path);
  }
  char hex[41];
  if (asbi_random_hex(hex, 40)) return -EIO;
  snprintf(e->api_key, sizeof e->api_key, "e2b_%s", hex);
  char line[64];
  snprintf(line, sizeof line, "%s\n", e->api_key);
  return write_file(path, line, 0600);
}

/* `envd --version` prints the E2B envd version it implements. */
static char *envd_version(const char *envd) {
  int p[2];
  if (pipe(p)) return NULL;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    close(p[1]);
    execl(envd, envd, "--version", (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  char buf[128] = "";
  ssize_t n = pid > 0 ? read(p[0], buf, sizeof buf - 1) : -1;
  close(p[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  if (n <= 0) return NULL;
  buf[n] = 0;
  /* The last token that looks like a version. */
  char *v = NULL;
  for (char *t = strtok(buf, " \t\r\n"); t; t = strtok(NULL, " \t\r\n"))
    if (t[0] >= '0' && t[0] <= '9' && strchr(t, '.')) v = t;
  return v ? asbi_strdup(v) : NULL;
}

/* The engine keeps no terminal. Run in the foreground (`sudo
 * agent-sandboxd` on a terminal), it would otherwise be the controlling
 * terminal of the engine's session, and any process the engine forks
 * before it enters a sandbox inherits that: one that reached a sandbox with
 * it could type into the operator's shell (TIOCSTI). Sandbox processes get
 * sessions of their own anyway; this is the second wall. stdin becomes
 * /dev/null; stdout and stderr stay (the log), and no sandbox process gets
 * them (every one has its stdio set explicitly). Ctrl-C still stops the
 * engine: the terminal signals its foreground process group, which the
 * engine stays in. */
static void detach_terminal(void) {
  int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (nul >= 0) {
    if (nul != 0) {
      dup2(nul, 0);
      close(nul);
    }
  }
  int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (tty < 0) return; /* no controlling terminal: nothing to drop */
  /* a session leader giving up its terminal sends SIGHUP to the terminal's
   * foreground group, which may be ours */
  int leader = getsid(0) == getpid();
  struct sigaction ign, old;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  if (leader) sigaction(SIGHUP, &ign, &old);
  if (ioctl(tty, TIOCNOTTY) != 0)
    fprintf(stderr, "agent-sandboxd: cannot drop the controlling terminal: %s\n",
            strerror(errno));
  if (leader) sigaction(SIGHUP, &old, NULL);
  close(tty);
}

/* ---- adopting sandboxes after a restart -------------------------------------- */

typedef struct adopt_ctx {
  engine *e;
  unsigned adopted;
} adopt_ctx;

static void on_live(const char *id, void *ctx) {
  adopt_ctx *a = ctx;
  engine *e = a->e;
  sbx *s = reg_load(e, id);
  if (!s) {
    engine_log("sandbox %s is alive but has no engine record; killing it", id);
    asbe_sandbox *iso = NULL;
    if (asbe_sandbox_adopt(e->iso, id, &iso) != 0) {
      engine_log("sandbox %s: cannot adopt it to kill it: %s", id, asbe_errmsg());
      return;
    }
    if (asbe_sandbox_kill(iso, 1) != 0)
      engine_log("sandbox %s: kill: %s", id, asbe_errmsg());
    asbe_sandbox_release(iso);
    return;
  }
  if (asbe_sandbox_adopt(e->iso, id, &s->iso) != 0) {
    engine_log("sandbox %s: cannot adopt: %s", id, asbe_errmsg());
    sbx_free(s);
    return;
  }
  /* A paused sandbox stays frozen; make sure the runtime agrees. */
  if (s->state == SBX_PAUSED) asbe_sandbox_freeze(s->iso);
  reg_add(e, s);
  a->adopted++;
}

static void adopt_or_reap(engine *e) {
  /* Remember every recorded sandbox first: the reaper removes dead ones. */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/sandboxes", e->state_dir);
  char **known = NULL;
  size_t nknown = 0;
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char **v = realloc(known, (nknown + 1) * sizeof *v);
    if (!v) break;
    known = v;
    known[nknown++] = asbi_strdup(de->d_name);
  }
  if (d) closedir(d);
  reg_load_tombs(e);
  adopt_ctx a = {e, 0};
  asbe_reap_report rep;
  memset(&rep, 0, sizeof rep);
  if (asbe_reap(e->iso, on_live, &a, &rep) != 0)
    engine_log("reaper: %s", asbe_errmsg());
  for (size_t i = 0; i < nknown; i++) {
    sbx *s = known[i] ? reg_get(e, known[i]) : NULL;
    if (s) {
      reg_put(e, s);
    } else if (known[i] && strlen(known[i]) <= ENGINE_ID_LEN) {
      /* Recorded but not alive: it ended while the engine was down. */
      char tb[32];
      if (!reg_tomb(e, known[i], tb, sizeof tb))
        reg_tomb_add(e, known[i], "engine_restart");
    }
    free(known[i]);
  }
  free(known);
  engine_log("start-up: adopted %u live sandbox(es); cleaned %u dead, %u cgroup(s), "
             "%u loop device(s), %u file(s)",
             a.adopted, rep.sandboxes, rep.cgroups, rep.loops, rep.files);
}

/* ---- main ---------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  engine eng;
  engine *e = &eng;
  memset(e, 0, sizeof *e);
  pthread_mutex_init(&e->mu, NULL);
  const char *state = asbi_getenv("ASB_STATE_DIR");
  const char *listen_addr = "127.0.0.1:49982";
  const char *sock = NULL, *cgroup_name = NULL;
  const char *envd = default_path(ASB_DEFAULT_ENVD, ASB_INSTALLED_ENVD);
  const char *init = default_path(ASB_DEFAULT_INIT, ASB_INSTALLED_INIT);
  const char *codei = default_path(ASB_DEFAULT_CODEI, ASB_INSTALLED_CODEI);
  const char *tdir = asbi_getenv("ASB_TEMPLATES_DIR");
  int daemonize = 0, kill_on_exit = 0, preflight_only = 0, pool = 8;
  e->max_conns = 1000;
  e->max_conns_per_ip = 256;
  e->header_timeout_s = 30;
  enum { O_STATE = 1, O_LISTEN, O_SOCKET, O_ENVD, O_INIT, O_CODEI, O_TDIR, O_CGROUP, O_POOL,
         O_DAEMON, O_KILL, O_PREFLIGHT, O_VERSION, O_HELP, O_MAXCONN, O_MAXCONN_IP,
         O_HDR_TIMEOUT };
  static const struct option opts[] = {
      {"state-dir", required_argument, 0, O_STATE}, {"listen", required_argument, 0, O_LISTEN},
      {"socket", required_argument, 0, O_SOCKET},   {"envd", required_argument, 0, O_ENVD},
      {"init", required_argument, 0, O_INIT},
      {"code-interpreter", required_argument, 0, O_CODEI},
      {"templates-dir", required_argument, 0, O_TDIR},       {"cgroup-name", required_argument, 0, O_CGROUP},
      {"pool", required_argument, 0, O_POOL},       {"daemon", no_argument, 0, O_DAEMON},
      {"kill-on-exit", no_argument, 0, O_KILL},     {"preflight", no_argument, 0, O_PREFLIGHT},
      {"version", no_argument, 0, O_VERSION},       {"help", no_argument, 0, O_HELP},
      {"max-connections", required_argument, 0, O_MAXCONN},
      {"max-connections-per-ip", required_argument, 0, O_MAXCONN_IP},
      {"header-timeout", required_argument, 0, O_HDR_TIMEOUT},
      {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
      case O_STATE: state = optarg; break;
      case O_LISTEN: listen_addr = optarg; break;
      case O_SOCKET: sock = optarg; break;
      case O_ENVD: envd = optarg; break;
      case O_INIT: init = optarg; break;
      case O_CODEI: codei = optarg; break;
      case O_TDIR: tdir = optarg; break;
      case O_CGROUP: cgroup_name = optarg; break;
      case O_POOL: pool = atoi(optarg); break;
      case O_DAEMON: daemonize = 1; break;
      case O_KILL: kill_on_exit = 1; break;
      case O_PREFLIGHT: preflight_only = 1; break;
      case O_VERSION: printf("agent-sandboxd 1.0.0\n"); return 0;
      case O_HELP: usage(stdout); return 0;
      case O_MAXCONN:
      case O_MAXCONN_IP:
      case O_HDR_TIMEOUT: {
        char *end = NULL;
        long v = strtol(optarg, &end, 10);
        if (!*optarg || *end || v < 1 || v > 100000) {
          fprintf(stderr, "agent-sandboxd: --%s wants a whole number 1..100000, not '%s'\n",
                  o == O_MAXCONN ? "max-connections"
                  : o == O_MAXCONN_IP ? "max-connections-per-ip" : "header-timeout", optarg);
          return 2;
        }
        if (o == O_MAXCONN) e->max_conns = (unsigned)v;
        else if (o == O_MAXCONN_IP) e->max_conns_per_ip = (unsigned)v;
        else e->header_timeout_s = (unsigned)v;
        break;
      }
      default: usage(stderr); return 2;
    }
  }
  if (!state) state = "/var/lib/agent-sandbox";
  detach_terminal();

  char *report = NULL;
  int pf = asbe_preflight(&report);
  if (preflight_only || pf != 0) {
    fprintf(pf ? stderr : stdout, "%s", report ? report : "");
    free(report);
    if (pf) fprintf(stderr, "agent-sandboxd: the checks above failed; fix them and retry\n");
    return pf ? 1 : 0;
  }
  free(report);
  if (access(envd, X_OK) != 0 || access(init, X_OK) != 0) {
    fprintf(stderr, "agent-sandboxd: cannot run %s: %s (use --envd/--init)\n",
            access(envd, X_OK) ? envd : init, strerror(errno));
    return 1;
  }
  /* Set once, before any thread: templates, writable layers and their dirs
   * get the modes the code asks for whatever umask the operator runs with,
   * and nothing changes it later (umask is per process; a thread that
   * narrowed it for a moment once made the pool thread create a 0700 upper
   * dir, and user commands in that sandbox failed with EACCES). */
  umask(022);
  if (mkdir(state, 0700) != 0 && errno != EEXIST) {
    fprintf(stderr, "agent-sandboxd: cannot create %s: %s\n", state, strerror(errno));
    return 1;
  }
  chmod(state, 0700); /* holds the API key and every sandbox's token */
  e->state_dir = realpath(state, NULL);
  char path[4096];
  if (daemonize) {
    snprintf(path, sizeof path, "%s/engine.log", e->state_dir);
    int logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid > 0) _exit(0);
    setsid();
    if (logfd >= 0) {
      dup2(logfd, 2);
      close(logfd);
    }
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
      dup2(nul, 0);
      dup2(nul, 1);
      close(nul);
    }
  }
  if (load_api_key(e)) {
    engine_log("cannot write the API key under %s", e->state_dir);
    return 1;
  }
  e->envd_path = realpath(envd, NULL);
  e->init_path = realpath(init, NULL);
  e->codei_path = access(codei, X_OK) == 0 ? realpath(codei, NULL) : NULL;
  if (!e->codei_path)
    engine_log("no code interpreter at %s: port 49999 is not served", codei);
  if (!tdir) tdir = default_path(ASB_DEFAULT_TEMPLATES_DIR, ASB_INSTALLED_TEMPLATES_DIR);
  e->templates_dir = *tdir ? realpath(tdir, NULL) : NULL;
  if (*tdir && !e->templates_dir)
    engine_log("no bundled templates at %s (python-base): %s", tdir, strerror(errno));
  e->envd_version = envd_version(e->envd_path);
  if (!e->envd_version) e->envd_version = asbi_strdup(ENGINE_ENVD_VERSION_FALLBACK);
  char agent_dir[4096];
  snprintf(agent_dir, sizeof agent_dir, "%s/agent", e->state_dir);
  const char *bins[] = {e->envd_path, e->codei_path};
  if (asbe_agentdir_build(agent_dir, e->init_path, bins, e->codei_path ? 2 : 1)) {
    engine_log("cannot assemble the agent dir: %s", asbe_errmsg());
    return 1;
  }
  /* Inside sandboxes the programs are called "envd" and "code-interpreter"
   * whatever their names on the host. */
  const char *host_bins[] = {e->envd_path, e->codei_path};
  const char *names[] = {"envd", "code-interpreter"};
  for (int i = 0; i < 2; i++) {
    if (!host_bins[i]) continue;
    const char *base = strrchr(host_bins[i], '/');
    base = base ? base + 1 : host_bins[i];
    if (strcmp(base, names[i]) == 0) continue;
    char link[4200];
    snprintf(link, sizeof link, "%s/bin/%s", agent_dir, names[i]);
    unlink(link);
    if (symlink(base, link) != 0) engine_log("cannot link %s: %s", link, strerror(errno));
  }
  asbe_engine_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.state_dir = e->state_dir;
  cfg.agent_dir = agent_dir;
  cfg.cgroup_name = cgroup_name;
  cfg.pool_disk_bytes = pool > 0 ? 1024ull << 20 : 0;
  cfg.pool_target = pool > 0 ? (unsigned)pool : 0;
  /* Stop signals are taken by sigwait in this thread only: block them
   * before the first thread (the disk-pool thread of asbe_engine_open)
   * starts, or one arriving during start-up could land in a thread that
   * does not block it and end the engine without any cleanup. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, NULL); /* threads inherit the mask */
  if (asbe_engine_open(&cfg, &e->iso)) {
    engine_log("cannot open the isolation runtime: %s", asbe_errmsg());
    return 1;
  }
  if (templates_init(e)) {
    engine_log("cannot prepare the base template");
    return 1;
  }
  adopt_or_reap(e);
  build_cleanup(e); /* build sandboxes of builds a crash interrupted */
  templates_gc(e);  /* builds no template and no live sandbox uses */
  signal(SIGPIPE, SIG_IGN);
  if (lifecycle_start(e)) {
    engine_log("cannot start the lifecycle thread");
    return 1;
  }
  char sockbuf[4200];
  if (!sock) {
    snprintf(sockbuf, sizeof sockbuf, "%s/engine.sock", e->state_dir);
    sock = sockbuf;
  }
  if (server_start(e, listen_addr, sock)) return 1;
  char dom[64];
  snprintf(dom, sizeof dom, "localhost:%d", e->listen_port);
  e->domain = asbi_strdup(dom);
  snprintf(path, sizeof path, "%s/engine.pid", e->state_dir);
  char pidline[32];
  snprintf(pidline, sizeof pidline, "%d\n", (int)getpid());
  write_file(path, pidline, 0644);
  snprintf(path, sizeof path, "%s/engine.url", e->state_dir);
  char urlline[128];
  snprintf(urlline, sizeof urlline, "http://127.0.0.1:%d\n", e->listen_port);
  write_file(path, urlline, 0644);
  engine_log("listening on %s (port %d), unix socket %s, state %s, envd %s",
             listen_addr, e->listen_port, sock, e->state_dir, e->envd_version);
  printf("listening on 127.0.0.1:%d\n", e->listen_port);
  fflush(stdout);

  int sig = 0;
  sigwait(&set, &sig);
  engine_log("stopping (signal %d)%s", sig, kill_on_exit ? ", killing sandboxes" : "");
  server_stop(e);
  lifecycle_stop(e);
  size_t n = 0;
  sbx **v = reg_list(e, &n);
  for (size_t i = 0; v && i < n; i++) {
    if (kill_on_exit) lifecycle_kill(e, v[i], "engine_stopped");
  }
  reg_put_all(e, v, n);
  /* Drop the table's references; sandboxes not killed keep running. */
  pthread_mutex_lock(&e->mu);
  sbx **all = e->sbx;
  size_t nall = e->nsbx;
  e->sbx = NULL;
  e->nsbx = 0;
  pthread_mutex_unlock(&e->mu);
  for (size_t i = 0; i < nall; i++) reg_put(e, all[i]);
  free(all);
  templates_free(e);
  asbe_engine_close(e->iso);
  snprintf(path, sizeof path, "%s/engine.pid", e->state_dir);
  unlink(path);
  unlink(sock);
  free(e->tombs);
  free(e->state_dir);
  free(e->envd_path);
  free(e->init_path);
  free(e->codei_path);
  free(e->templates_dir);
  free(e->envd_version);
  free(e->domain);
  return 0;
}
