/* envd: command line and startup. See docs/envd.md.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "proto/url.h"
#include "server.h"
#include "state.h"
#include "util/buf.h"
#include "util/util.h"
#include "watch.h"
#include "sudo.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: envd [options]\n"
          "  --port N             listen on TCP port N (0 = any free port; the\n"
          "                       port is printed on stdout). Default 49983.\n"
          "  --listen ADDR        TCP address (default 127.0.0.1)\n"
          "  --unix PATH          listen on a unix socket instead of TCP\n"
          "  --sudo-socket PATH   serve sudo there (default with --unix: sudo.sock beside it)\n"
          "  --access-token TOK   require X-Access-Token (also ENVD_ACCESS_TOKEN)\n"
          "  --default-user NAME  user when a request names none (default root)\n"
          "  --default-workdir D  working directory default (default: home)\n"
          "  --max-body BYTES     bound on one RPC/JSON body (default 16 MiB)\n"
          "  --stream-buffer B    output queued per stream reader before envd stops\n"
          "                       reading the process (default 16 MiB)\n"
          "  --stream-stall-ms N  a reader stuck that long is cut off (default 60000)\n"
          "  --verbose            log to stderr\n"
          "  --version            print the E2B envd version implemented\n"
          "env: ASB_WORKLOAD_CGROUPS=dir[:dir...]  ASB_OOM_COUNTER=file\n"
          "     ASB_NOFILE=soft:hard (open-file limit of the processes it starts)\n");
}

static int parse_size(const char *s, size_t *out) {
  int64_t v;
  if (!s || asbi_parse_i64(s, strlen(s), &v) != 0 || v <= 0) return -1;
  *out = (size_t)v;
  return 0;
}

static volatile sig_atomic_t g_quit;
static void on_term(int sig) {
  (void)sig;
  g_quit = 1;
}

int main(int argc, char **argv) {
  /* envd run as "sudo" (the base template's symlink) is sudo's client */
  const char *self = strrchr(argv[0], '/');
  if (!strcmp(self ? self + 1 : argv[0], "sudo")) {
    /* the command's status and nothing else: no exit handlers (a
     * sanitizer's leak check at exit cannot run in a sandbox and would
     * turn every status into 1) */
    int st = envd_sudo_client_main(argc, argv);
    fflush(NULL);
    _exit(st);
  }
  const char *sudo_sock = NULL;
  envd_listen l = {NULL, "127.0.0.1", ASBI_ENVD_PORT};
  int port_given = 0;
  g_envd.max_body = 16u << 20;
  g_envd.sub_buffer = 16u << 20;
  g_envd.stall_ms = 60000;
  const char *tok = asbi_getenv("ENVD_ACCESS_TOKEN");
  const char *duser = NULL, *dwork = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV()                                       \
  do {                                                \
    if (!v) {                                         \
      fprintf(stderr, "envd: %s needs a value\n", a); \
      return 2;                                       \
    }                                                 \
    i++;                                              \
  } while (0)
    if (strcmp(a, "--version") == 0 || strcmp(a, "-version") == 0) {
      printf("%s\n", ENVD_E2B_VERSION);
      return 0;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--port") == 0 || strcmp(a, "-port") == 0) {
      NEEDV();
      int64_t p;
      if (asbi_parse_i64(v, strlen(v), &p) != 0 || p < 0 || p > 65535) {
        fprintf(stderr, "envd: bad port '%s'\n", v);
        return 2;
      }
      l.port = (int)p;
      port_given = 1;
    } else if (strcmp(a, "--listen") == 0) {
      NEEDV();
      l.addr = v;
    } else if (strcmp(a, "--unix") == 0) {
      NEEDV();
      l.unix_path = v;
    } else if (strcmp(a, "--sudo-socket") == 0) {
      NEEDV();
      sudo_sock = v;
    } else if (strcmp(a, "--access-token") == 0) {
      NEEDV();
      tok = v;
    } else if (strcmp(a, "--default-user") == 0) {
      NEEDV();
      duser = v;
    } else if (strcmp(a, "--default-workdir") == 0) {
      NEEDV();
      dwork = v;
    } else if (strcmp(a, "--max-body") == 0) {
      NEEDV();
      if (parse_size(v, &g_envd.max_body) != 0) return 2;
    } else if (strcmp(a, "--stream-buffer") == 0) {
      NEEDV();
      if (parse_size(v, &g_envd.sub_buffer) != 0) return 2;
    } else if (strcmp(a, "--stream-stall-ms") == 0) {
      NEEDV();
      char *end = NULL;
      unsigned long ms = strtoul(v, &end, 10);
      if (!*v || *end || ms < 100 || ms > 86400000UL) return 2;
      g_envd.stall_ms = (unsigned)ms;
    } else if (strcmp(a, "--verbose") == 0) {
      g_envd_verbose = 1;
    } else {
      fprintf(stderr, "envd: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  (void)port_given;

  /* fds 0-2 must exist so no pipe lands there; the first one above them
   * is closed again (it would be inherited by every process envd starts). */
  for (int fd = open("/dev/null", O_RDWR); fd >= 0; fd = open("/dev/null", O_RDWR)) {
    if (fd > 2) {
      close(fd);
      break;
    }
  }
  /* Descriptors envd inherited are no business of the processes it starts:
   * close-on-exec for all of them (kernels before 5.11: left as they are). */
  close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);

  /* SIGCHLD is read through a signalfd; SIGPIPE becomes EPIPE. Blocked
   * before any thread starts so every thread inherits the mask. */
  sigset_t ss;
  sigemptyset(&ss);
  sigaddset(&ss, SIGCHLD);
  sigaddset(&ss, SIGPIPE);
  /* SIGTERM/SIGINT are blocked in every thread too and taken only by the
   * main thread's sigsuspend(&ss) below, which unblocks them: a stop signal
   * delivered to another thread set g_quit without waking main, and envd
   * then ignored SIGTERM (seen as a hung npm.envd under ASan). */
  sigset_t blocked = ss;
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGINT);
  pthread_sigmask(SIG_BLOCK, &blocked, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  /* Orphaned descendants are re-parented to us and reaped. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);

  g_envd.started_us = asbi_now_us();
  g_envd.path_env = asbi_strdup(
      asbi_getenv("PATH") ? asbi_getenv("PATH")
                          : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  if (tok) g_envd.access_token = asbi_strdup(tok);
  if (duser) {
    g_envd.default_user = asbi_strdup(duser);
  } else if (geteuid() != 0) {
    struct passwd *pw = getpwuid(geteuid());
    g_envd.default_user = asbi_strdup(pw ? pw->pw_name : "root");
  } else {
    g_envd.default_user = asbi_strdup("root");
  }
  if (dwork) g_envd.default_workdir = asbi_strdup(dwork);
  const char *cg = asbi_getenv("ASB_WORKLOAD_CGROUPS");
  if (cg) {
    char *dup = asbi_strdup(cg), *save = NULL;
    for (char *t = strtok_r(dup, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
      char **n = realloc(g_envd.cgroups, (g_envd.n_cgroups + 1) * sizeof *n);
      if (!n) break;
      g_envd.cgroups = n;
      g_envd.cgroups[g_envd.n_cgroups++] = asbi_strdup(t);
    }
    free(dup);
    if (g_envd.n_cgroups) {
      g_envd.cgroup_procs = calloc(g_envd.n_cgroups + 1, sizeof *g_envd.cgroup_procs);
      for (size_t i = 0; g_envd.cgroup_procs && i < g_envd.n_cgroups; i++) {
        asbi_buf b = ASBI_BUF_INIT;
        asbi_buf_printf(&b, "%s/cgroup.procs", g_envd.cgroups[i]);
        g_envd.cgroup_procs[i] = asbi_buf_detach(&b, NULL);
      }
    }
  }
  envd_timing_init(asbi_getenv("ASB_TIMING"));
  if (asbi_getenv("ASB_OOM_COUNTER"))
    g_envd.oom_counter = asbi_strdup(asbi_getenv("ASB_OOM_COUNTER"));
  const char *nofile = asbi_getenv("ASB_NOFILE");
  if (nofile) {
    unsigned long s = 0, h = 0;
    if (sscanf(nofile, "%lu:%lu", &s, &h) == 2 && h > 0 && s <= h) {
      g_envd.nofile_cur = s;
      g_envd.nofile_max = h;
    } else {
      fprintf(stderr, "envd: ignoring ASB_NOFILE=%s (want <soft>:<hard>)\n", nofile);
    }
  }
  envd_env_set_internal("E2B_SANDBOX", "true");

  if (envd_proc_init() != 0) {
    fprintf(stderr, "envd: cannot start the process service: %s\n", strerror(errno));
    return 1;
  }
  int bound = 0;
  if (envd_server_start(&l, &bound) != 0) {
    envd_proc_shutdown();
    envd_state_free();
    return 1;
  }
  if (!l.unix_path) {
    printf("%d\n", bound);
    fflush(stdout);
  }
  /* sudo's socket: given, or beside the unix socket the engine gives */
  char sudo_def[108];
  if (!sudo_sock && l.unix_path) {
    const char *sl = strrchr(l.unix_path, '/');
    if (sl && (size_t)snprintf(sudo_def, sizeof sudo_def, "%.*s/sudo.sock", (int)(sl - l.unix_path),
                               l.unix_path) < sizeof sudo_def)
      sudo_sock = sudo_def;
  }
  if (sudo_sock && *sudo_sock && envd_sudo_serve_start(sudo_sock) != 0)
    fprintf(stderr, "envd: sudo is not served at %s: %s\n", sudo_sock, strerror(errno));
  envd_log("listening on %s%s%d", l.unix_path ? l.unix_path : l.addr, l.unix_path ? "" : ":",
           l.unix_path ? 0 : bound);

  /* Wait for SIGTERM/SIGINT; SIGCHLD stays blocked (the signalfd reads it). */
  while (!g_quit) sigsuspend(&ss);
  envd_sudo_serve_stop();
  envd_server_stop();
  envd_watch_shutdown();
  envd_proc_shutdown();
  envd_state_free();
  return 0;
}
