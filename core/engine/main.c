/* agent-sandboxd — the local engine: E2B's control plane and sandbox router
 * on one Linux machine. See docs/engine.md. The program: options, checks,
 * the process (daemon, terminal, signals, umask, API key, pid and URL
 * files) around the engine library (engine_open, server_start).
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codei.h"
#include "eng_err.h"
#include "build.h"
#include "engine.h"
#include "pool.h"
#include "proto/url.h"
#include "server.h"
#include "swap.h"
#include "tlsca.h"
#include "util/log.h"
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

static void usage(FILE *f) {
  fprintf(f,
          "usage: agent-sandboxd [options]\n"
          "  --state-dir DIR   engine state (default $ASB_STATE_DIR or /var/lib/agent-sandbox)\n"
          "  --listen H:P      control plane + router address (default 127.0.0.1:%d;\n"
          "                    port 0 picks a free one)\n"
          "  --socket PATH     also serve on this unix socket (default <state>/engine.sock)\n"
          "  --envd PATH       envd binary run inside sandboxes (default %s)\n"
          "  --init PATH       asb-init binary (default %s)\n"
          "  --code-interpreter PATH  code interpreter run inside sandboxes for\n"
          "                    port %d (default %s; absent = disabled)\n"
          "  --templates-dir DIR  bundled templates, built on first use (default\n"
          "                    $ASB_TEMPLATES_DIR or %s)\n"
          "  --cgroup-name N   name of the engine's cgroups (default agent-sandbox)\n"
          "  --pool N          keep N pre-formatted disk images ready (default 8)\n"
          "  --pool-template NAME=N  keep N sandboxes of template NAME (name or id)\n"
          "                    made ahead of time, for creates to claim (repeatable;\n"
          "                    a template.yaml's pool: {size: N} is the default)\n"
          "  --pool-min-available MB  refill warm pools only while the host has this\n"
          "                    much MemAvailable (default 512)\n"
          "  --no-network      sandboxes get loopback only (no eth0, no nftables;\n"
          "                    also ASB_NO_NETWORK=1)\n"
          "  --net-cidr CIDR   the sandboxes' link range, one /30 each (default\n"
          "                    10.88.0.0/16; give each engine on a host its own)\n"
          "  --net-cidr6 CIDR|off  their IPv6 range, a ULA /48../112, a /126 each\n"
          "                    (default: a /64 of fd00::/8 from --cgroup-name when\n"
          "                    the host has an IPv6 default route; off: no IPv6)\n"
          "  --dns-upstream A[:P]  the sandboxes' resolver asks this server (up to 4\n"
          "                    times; default: the nameservers of /etc/resolv.conf)\n"
          "  --image-dir DIR   local images (oci:, docker-archive:) may be read from\n"
          "                    DIR and beneath it (repeatable, up to 8), beside\n"
          "                    <state>/images; no other host path is read\n"
          "  --egress-upstream-ca FILE  CA bundle the egress proxy verifies servers\n"
          "                    against when it intercepts TLS for header rules\n"
          "                    (default: the system's)\n"
          "  --max-connections N  connections each listener (TCP, unix socket) serves\n"
          "                    at once (default 1000)\n"
          "  --max-connections-per-ip N  TCP connections one client address may hold\n"
          "                    (default 256)\n"
          "  --header-timeout S  seconds a connection may take to send a request\n"
          "                    head, counted from its start or its previous request\n"
          "                    (default 30)\n"
          "  --daemon          detach; log to <state>/engine.log, pid in <state>/engine.pid\n"
          "  --pause-swap SIZE  a pause with memory frees the sandbox's RAM: the engine\n"
          "                    keeps a swap file of SIZE (e.g. 8G) at <state>/pause.swap\n"
          "                    and swaps paused sandboxes out to it; running ones\n"
          "                    never swap (root; ext4, xfs or btrfs; see docs/lifecycle.md)\n"
          "  --pause-swap-prefetch  with --pause-swap: a resume starts reading the\n"
          "                    memory back at once (default: as it is touched)\n"
          "  --pause-criu      a pause with memory writes the sandbox's processes and\n"
          "                    memory to its disk with CRIU (frees the RAM, survives\n"
          "                    an engine restart and a host reboot; docs/lifecycle.md)\n"
          "  --criu PATH       the criu binary for --pause-criu (default\n"
          "                    " ENGINE_DEFAULT_CRIU
          ")\n"
          "  --criu-timeout S  with --pause-criu: seconds one criu dump or restore may\n"
          "                    take, plus --criu-timeout-per-gib S for each GiB of the\n"
          "                    sandbox's memory (default 60 and 30); then it is killed\n"
          "                    and the pause or restore fails as when criu fails\n"
          "  --criu-timeout-per-gib S  see --criu-timeout\n"
          "  --criu-disk-reserve SIZE  with --pause-criu: what a checkpoint leaves free\n"
          "                    on the state dir's filesystem; a sandbox whose memory\n"
          "                    does not fit besides it is not checkpointed (default 256M)\n"
          "  --kill-on-exit    kill every sandbox when stopping (default: keep them\n"
          "                    running; a restarted engine adopts them)\n"
          "  --preflight       check what the engine needs, print the report, exit\n"
          "  --print-ca-path   print where the engine's CA certificate is (for\n"
          "                    NODE_EXTRA_CA_CERTS, SSL_CERT_FILE; https:// on the\n"
          "                    same port as http://) and exit\n"
          "  --version         print the version and exit\n",
          ASBI_ENGINE_PORT, ASB_DEFAULT_ENVD, ASB_DEFAULT_INIT, ASBI_CODE_PORT, ASB_DEFAULT_CODEI,
          ASB_DEFAULT_TEMPLATES_DIR);
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
static int load_api_key(engine *e, const char *state_dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/api_key", state_dir);
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
    asbi_log("%s is malformed; making a new key", path);
  }
  char hex[41];
  if (asbi_random_hex(hex, 40)) return -EIO;
  snprintf(e->api_key, sizeof e->api_key, "e2b_%s", hex);
  char line[64];
  snprintf(line, sizeof line, "%s\n", e->api_key);
  return write_file(path, line, 0600);
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
    fprintf(stderr, "agent-sandboxd: cannot drop the controlling terminal: %s\n", strerror(errno));
  if (leader) sigaction(SIGHUP, &old, NULL);
  close(tty);
}

/* ---- main ---------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  asbi_log_init("agent-sandboxd", ASBI_LOG_TIME);
  engine eng;
  engine *e = &eng;
  engine_init(e);
  const char *state = asbi_getenv("ASB_STATE_DIR");
  const char *listen_addr = "127.0.0.1:" ASBI_STRINGIFY(ASBI_ENGINE_PORT);
  const char *sock = NULL, *cgroup_name = NULL, *net_cidr = NULL, *upstream_ca = NULL,
             *net_cidr6 = NULL;
  /* ASB_NO_NETWORK=1: --no-network for every engine a process starts (the
   * client library's autostart passes its environment on; the test suite
   * sets it) */
  const char *nn = asbi_getenv("ASB_NO_NETWORK");
  int no_network = nn && *nn && strcmp(nn, "0") != 0;
  const char *dns_up[4];
  size_t ndns_up = 0;
  const char *image_dirs[ENGINE_MAX_IMAGE_DIRS];
  size_t nimage_dirs = 0;
  const char *envd = default_path(ASB_DEFAULT_ENVD, ASB_INSTALLED_ENVD);
  const char *init = default_path(ASB_DEFAULT_INIT, ASB_INSTALLED_INIT);
  const char *codei = default_path(ASB_DEFAULT_CODEI, ASB_INSTALLED_CODEI);
  const char *tdir = asbi_getenv("ASB_TEMPLATES_DIR");
  int daemonize = 0, kill_on_exit = 0, preflight_only = 0, print_ca = 0, pool = 8;
  e->max_conns = 1000;
  e->max_conns_per_ip = 256;
  e->header_timeout_s = 30;
  enum {
    O_STATE = 1,
    O_LISTEN,
    O_SOCKET,
    O_ENVD,
    O_INIT,
    O_CODEI,
    O_TDIR,
    O_CGROUP,
    O_POOL,
    O_DAEMON,
    O_KILL,
    O_PREFLIGHT,
    O_PRINT_CA,
    O_VERSION,
    O_HELP,
    O_MAXCONN,
    O_MAXCONN_IP,
    O_HDR_TIMEOUT,
    O_POOL_TEMPLATE,
    O_POOL_MIN_AVAIL,
    O_NO_NET,
    O_NET_CIDR,
    O_DNS_UP,
    O_IMAGE_DIR,
    O_UPSTREAM_CA,
    O_NET_CIDR6,
    O_PAUSE_SWAP,
    O_PAUSE_SWAP_PREFETCH,
    O_PAUSE_CRIU,
    O_CRIU,
    O_CRIU_TIMEOUT,
    O_CRIU_TIMEOUT_GIB,
    O_CRIU_RESERVE
  };
  static const struct option opts[] = {
      {"state-dir", required_argument, 0, O_STATE},
      {"listen", required_argument, 0, O_LISTEN},
      {"socket", required_argument, 0, O_SOCKET},
      {"envd", required_argument, 0, O_ENVD},
      {"init", required_argument, 0, O_INIT},
      {"code-interpreter", required_argument, 0, O_CODEI},
      {"templates-dir", required_argument, 0, O_TDIR},
      {"cgroup-name", required_argument, 0, O_CGROUP},
      {"pool", required_argument, 0, O_POOL},
      {"daemon", no_argument, 0, O_DAEMON},
      {"kill-on-exit", no_argument, 0, O_KILL},
      {"preflight", no_argument, 0, O_PREFLIGHT},
      {"print-ca-path", no_argument, 0, O_PRINT_CA},
      {"version", no_argument, 0, O_VERSION},
      {"help", no_argument, 0, O_HELP},
      {"max-connections", required_argument, 0, O_MAXCONN},
      {"max-connections-per-ip", required_argument, 0, O_MAXCONN_IP},
      {"header-timeout", required_argument, 0, O_HDR_TIMEOUT},
      {"pool-template", required_argument, 0, O_POOL_TEMPLATE},
      {"pool-min-available", required_argument, 0, O_POOL_MIN_AVAIL},
      {"no-network", no_argument, 0, O_NO_NET},
      {"net-cidr", required_argument, 0, O_NET_CIDR},
      {"dns-upstream", required_argument, 0, O_DNS_UP},
      {"image-dir", required_argument, 0, O_IMAGE_DIR},
      {"egress-upstream-ca", required_argument, 0, O_UPSTREAM_CA},
      {"net-cidr6", required_argument, 0, O_NET_CIDR6},
      {"pause-swap", required_argument, 0, O_PAUSE_SWAP},
      {"pause-swap-prefetch", no_argument, 0, O_PAUSE_SWAP_PREFETCH},
      {"pause-criu", no_argument, 0, O_PAUSE_CRIU},
      {"criu", required_argument, 0, O_CRIU},
      {"criu-timeout", required_argument, 0, O_CRIU_TIMEOUT},
      {"criu-timeout-per-gib", required_argument, 0, O_CRIU_TIMEOUT_GIB},
      {"criu-disk-reserve", required_argument, 0, O_CRIU_RESERVE},
      {0, 0, 0, 0}};
  const char *pool_tmpl[64];
  size_t npool_tmpl = 0;
  uint64_t pool_min_avail_mb = 512, pause_swap = 0;
  int pause_swap_prefetch = 0, pause_criu = 0;
  const char *criu = NULL;
  unsigned criu_timeout = 0, criu_timeout_gib = 0;
  uint64_t criu_reserve = 0;
  int criu_opts = 0; /* one of the --criu-* options was given */
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
      case O_STATE:
        state = optarg;
        break;
      case O_LISTEN:
        listen_addr = optarg;
        break;
      case O_SOCKET:
        sock = optarg;
        break;
      case O_ENVD:
        envd = optarg;
        break;
      case O_INIT:
        init = optarg;
        break;
      case O_CODEI:
        codei = optarg;
        break;
      case O_TDIR:
        tdir = optarg;
        break;
      case O_CGROUP:
        cgroup_name = optarg;
        break;
      case O_POOL:
        pool = atoi(optarg);
        break;
      case O_DAEMON:
        daemonize = 1;
        break;
      case O_KILL:
        kill_on_exit = 1;
        break;
      case O_NO_NET:
        no_network = 1;
        break;
      case O_NET_CIDR:
        net_cidr = optarg;
        break;
      case O_DNS_UP:
        if (ndns_up == 4) {
          fprintf(stderr, "agent-sandboxd: at most 4 --dns-upstream\n");
          return 2;
        }
        dns_up[ndns_up++] = optarg;
        break;
      case O_IMAGE_DIR:
        if (nimage_dirs == ENGINE_MAX_IMAGE_DIRS || optarg[0] != '/') {
          fprintf(stderr, "agent-sandboxd: --image-dir wants an absolute path (at most %d)\n",
                  ENGINE_MAX_IMAGE_DIRS);
          return 2;
        }
        image_dirs[nimage_dirs++] = optarg;
        break;
      case O_NET_CIDR6:
        net_cidr6 = optarg;
        break;
      case O_PAUSE_SWAP:
        if (swap_parse_size(optarg, &pause_swap)) {
          fprintf(stderr,
                  "agent-sandboxd: --pause-swap wants a size of at least 1M (e.g. 512M, 8G), "
                  "not '%s'\n",
                  optarg);
          return 2;
        }
        break;
      case O_PAUSE_SWAP_PREFETCH:
        pause_swap_prefetch = 1;
        break;
      case O_PAUSE_CRIU:
        pause_criu = 1;
        break;
      case O_CRIU:
        criu = optarg;
        break;
      case O_CRIU_TIMEOUT:
      case O_CRIU_TIMEOUT_GIB: {
        char *end = NULL;
        long v = strtol(optarg, &end, 10);
        if (!*optarg || *end || v < 1 || v > 86400) {
          fprintf(stderr, "agent-sandboxd: --%s wants seconds 1..86400, not '%s'\n",
                  o == O_CRIU_TIMEOUT ? "criu-timeout" : "criu-timeout-per-gib", optarg);
          return 2;
        }
        *(o == O_CRIU_TIMEOUT ? &criu_timeout : &criu_timeout_gib) = (unsigned)v;
        criu_opts = 1;
        break;
      }
      case O_CRIU_RESERVE:
        if (swap_parse_size(optarg, &criu_reserve)) {
          fprintf(stderr,
                  "agent-sandboxd: --criu-disk-reserve wants a size of at least 1M (e.g. 256M, "
                  "2G), not '%s'\n",
                  optarg);
          return 2;
        }
        criu_opts = 1;
        break;
      case O_UPSTREAM_CA:
        upstream_ca = optarg;
        break;
      case O_PREFLIGHT:
        preflight_only = 1;
        break;
      case O_PRINT_CA:
        print_ca = 1;
        break;
      case O_VERSION:
        printf("agent-sandboxd 1.0.0\n");
        return 0;
      case O_HELP:
        usage(stdout);
        return 0;
      case O_MAXCONN:
      case O_MAXCONN_IP:
      case O_HDR_TIMEOUT: {
        char *end = NULL;
        long v = strtol(optarg, &end, 10);
        if (!*optarg || *end || v < 1 || v > 100000) {
          fprintf(stderr, "agent-sandboxd: --%s wants a whole number 1..100000, not '%s'\n",
                  o == O_MAXCONN      ? "max-connections"
                  : o == O_MAXCONN_IP ? "max-connections-per-ip"
                                      : "header-timeout",
                  optarg);
          return 2;
        }
        if (o == O_MAXCONN)
          e->max_conns = (unsigned)v;
        else if (o == O_MAXCONN_IP)
          e->max_conns_per_ip = (unsigned)v;
        else
          e->header_timeout_s = (unsigned)v;
        break;
      }
      case O_POOL_TEMPLATE: {
        char *name = NULL;
        int n = 0;
        if (pool_parse(optarg, &name, &n) || npool_tmpl == ASBI_ARRAY_LEN(pool_tmpl)) {
          fprintf(stderr,
                  "agent-sandboxd: --pool-template wants NAME=N (N 0..%d, at most %zu of "
                  "them), not '%s'\n",
                  POOL_SIZE_MAX, ASBI_ARRAY_LEN(pool_tmpl), optarg);
          free(name);
          return 2;
        }
        free(name);
        pool_tmpl[npool_tmpl++] = optarg;
        break;
      }
      case O_POOL_MIN_AVAIL: {
        char *end = NULL;
        long v = strtol(optarg, &end, 10);
        if (!*optarg || *end || v < 0 || v > (1L << 30)) {
          fprintf(stderr, "agent-sandboxd: --pool-min-available wants MiB, not '%s'\n", optarg);
          return 2;
        }
        pool_min_avail_mb = (uint64_t)v;
        break;
      }
      default:
        usage(stderr);
        return 2;
    }
  }
  if (!state) state = "/var/lib/agent-sandbox";
  if (criu && !pause_criu) {
    fprintf(stderr, "agent-sandboxd: --criu PATH is for --pause-criu\n");
    return 2;
  }
  if (criu_opts && !pause_criu) {
    fprintf(stderr,
            "agent-sandboxd: --criu-timeout, --criu-timeout-per-gib and --criu-disk-reserve "
            "are for --pause-criu\n");
    return 2;
  }
  if (pause_criu && pause_swap) {
    fprintf(stderr,
            "agent-sandboxd: --pause-criu and --pause-swap: pick one (a checkpoint "
            "leaves no RAM to swap)\n");
    return 2;
  }
  if (pause_criu && !criu) criu = ENGINE_DEFAULT_CRIU;
  if (pause_criu && (criu[0] != '/' || access(criu, X_OK) != 0)) {
    fprintf(stderr,
            "agent-sandboxd: --pause-criu: no criu at %s (an absolute path; build it with "
            "scripts/build-criu.sh, or give --criu PATH)\n",
            criu);
    return 2;
  }
  if (pause_swap_prefetch && !pause_swap) {
    fprintf(stderr, "agent-sandboxd: --pause-swap-prefetch needs --pause-swap SIZE\n");
    return 2;
  }
  if (print_ca) {
    /* the engine makes it on its first start (server.c, tlsca.c) */
    char abs[4096], ca[4200];
    if (!realpath(state, abs)) snprintf(abs, sizeof abs, "%s", state);
    tlsca_cert_path(abs, ca, sizeof ca);
    printf("%s\n", ca);
    return 0;
  }
  detach_terminal();

  char *report = NULL;
  int pf = asbe_preflight(&report);
  char *ci_report = codei_preflight();
  if (preflight_only || pf != 0) {
    fprintf(pf ? stderr : stdout, "%s%s", report ? report : "", ci_report ? ci_report : "");
    free(report);
    free(ci_report);
    if (pf) fprintf(stderr, "agent-sandboxd: the checks above failed; fix them and retry\n");
    return pf ? 1 : 0;
  }
  free(report);
  /* say so at start when kernels would lack what E2B programs expect */
  if (ci_report && strncmp(ci_report, "WARN", 4) == 0) {
    char *nl = strchr(ci_report, '\n');
    if (nl) *nl = '\0';
    asbi_log("%s", ci_report + 5);
  }
  free(ci_report);
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
  chmod(state, 0700);                      /* holds the API key and every sandbox's token */
  char *state_dir = realpath(state, NULL); /* engine_open keeps its own */
  char path[4096];
  if (daemonize) {
    snprintf(path, sizeof path, "%s/engine.log", state_dir);
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
  if (load_api_key(e, state_dir)) {
    asbi_log("cannot write the API key under %s", state_dir);
    return 1;
  }
  engine_config ec;
  memset(&ec, 0, sizeof ec);
  ec.state_dir = state_dir;
  ec.envd = envd;
  ec.init = init;
  ec.codei = codei;
  ec.templates_dir =
      tdir ? tdir : default_path(ASB_DEFAULT_TEMPLATES_DIR, ASB_INSTALLED_TEMPLATES_DIR);
  ec.cgroup_name = cgroup_name;
  ec.pool = pool;
  ec.pool_templates = pool_tmpl;
  ec.npool_templates = npool_tmpl;
  ec.pool_min_avail_mb = pool_min_avail_mb;
  ec.no_network = no_network;
  ec.net_cidr = net_cidr;
  ec.net_cidr6 = net_cidr6;
  for (size_t i = 0; i < ndns_up; i++) ec.dns_upstream[i] = dns_up[i];
  ec.ndns_upstream = ndns_up;
  for (size_t i = 0; i < nimage_dirs; i++) ec.image_dirs[i] = image_dirs[i];
  ec.nimage_dirs = nimage_dirs;
  ec.egress_upstream_ca = upstream_ca;
  ec.pause_swap_bytes = pause_swap;
  ec.pause_swap_prefetch = pause_swap_prefetch;
  ec.pause_criu = pause_criu ? criu : NULL;
  ec.criu_timeout_s = criu_timeout;
  ec.criu_timeout_per_gib_s = criu_timeout_gib;
  ec.criu_disk_reserve = criu_reserve;
  /* Stop signals are taken by sigwait in this thread only: block them
   * before the first thread (the disk-pool thread of the isolation
   * runtime) starts, or one arriving during start-up could land in a
   * thread that does not block it and end the engine without any
   * cleanup. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, NULL); /* threads inherit the mask */
  signal(SIGPIPE, SIG_IGN);
  eng_err err;
  if (engine_open(e, &ec, &err)) {
    asbi_log("%s", err.message);
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
  asbi_log("listening on %s (port %d), unix socket %s, state %s, envd %s", listen_addr,
           e->listen_port, sock, e->state_dir, e->envd_version);
  if (server_ca_path(e)) asbi_log("https on the same port; CA certificate %s", server_ca_path(e));
  printf("listening on 127.0.0.1:%d\n", e->listen_port);
  fflush(stdout);

  int sig = 0;
  sigwait(&set, &sig);
  asbi_log("stopping (signal %d)%s", sig, kill_on_exit ? ", killing sandboxes" : "");
  /* first: a build under way kills its step and fails, its waiting POST
   * and E2B's status get why, so neither the HTTP server's stop (waiting
   * for that POST's thread) nor engine_close (for E2B's build threads)
   * waits for a step that may run for minutes */
  build_stop_all(e);
  server_drain_builds(e, BUILD_STOP_DRAIN_MS);
  server_stop(e);
  engine_close(e, kill_on_exit);
  snprintf(path, sizeof path, "%s/engine.pid", e->state_dir);
  unlink(path);
  unlink(sock);
  engine_free(e);
  free(state_dir);
  return 0;
}
