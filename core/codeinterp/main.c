/* code-interpreter: E2B's code interpreter API (port 49999) over Jupyter
 * kernels and built-in node/bash drivers. See docs/code-interpreter.md.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctx.h"
#include "drivers.h"
#include "kernel.h"
#include "server.h"
#include "util/sha256.h"
#include "util/util.h"

#ifndef ASB_VERSION
#define ASB_VERSION "0"
#endif

static void usage(FILE *f) {
  fprintf(f,
          "usage: code-interpreter [--port N] [--listen ADDR] [--access-token T]\n"
          "                        [--access-token-sha256 H] [--traffic-token T]\n"
          "                        [--traffic-token-sha256 H] [--token-file FILE]\n"
          "                        [--cwd DIR] [--state FILE] [--no-default-context]\n"
          "                        [--version]\n"
          "  --port N             port to serve (default 49999; 0 = any free port)\n"
          "  --listen ADDR        address to bind (default 127.0.0.1)\n"
          "  --access-token T     require X-Access-Token: T on every route but GET /health\n"
          "                       (default: $ASB_ACCESS_TOKEN; unset = no auth). Anyone\n"
          "                       can read a command line: prefer the variable, or\n"
          "  --access-token-sha256 H  the same, given the token's SHA-256 (64 hex\n"
          "                       digits; default $ASB_ACCESS_TOKEN_SHA256)\n"
          "  --traffic-token T, --traffic-token-sha256 H  also accept\n"
          "                       E2B-Traffic-Access-Token: T instead (default\n"
          "                       $ASB_TRAFFIC_TOKEN, $ASB_TRAFFIC_TOKEN_SHA256)\n"
          "  --token-file FILE    the hashes from FILE instead (lines \"access <sha256>\"\n"
          "                       and \"traffic <sha256>\"), read again for every\n"
          "                       request; while it is missing or unreadable every route\n"
          "                       but GET /health is refused\n"
          "  --cwd DIR            cwd of contexts created without one (default /home/user\n"
          "                       if it exists, else the current directory)\n"
          "  --state FILE         keep the contexts in FILE: started again with the\n"
          "                       same ids (reporting ContextRestarting once) by a\n"
          "                       server restarted after a crash\n"
          "  --no-default-context do not start a python kernel ahead of the first call\n"
          "The chosen port is printed on stdout, alone on its line, once listening;\n"
          "GET /health answers 200 once the default python kernel is ready.\n");
}

/* A token given as itself or as its SHA-256: into md (*have = 1). */
static int take_token(const char *raw, const char *hex, const char *what, unsigned char md[32],
                      int *have) {
  if (hex) {
    if (asbi_sha256_hex_parse(hex, md) != 0) {
      fprintf(stderr, "code-interpreter: %s-sha256: not 64 hex digits\n", what);
      return -1;
    }
    *have = 1;
  } else if (raw) {
    asbi_sha256(raw, strlen(raw), md);
    *have = 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  int port = 49999, default_ctx = 1;
  const char *listen = "127.0.0.1", *cwd = NULL, *state = NULL, *token_file = NULL;
  /* the variables first; options override them */
  const char *tok = asbi_getenv("ASB_ACCESS_TOKEN"),
             *tok_hex = asbi_getenv("ASB_ACCESS_TOKEN_SHA256");
  const char *tt = asbi_getenv("ASB_TRAFFIC_TOKEN"),
             *tt_hex = asbi_getenv("ASB_TRAFFIC_TOKEN_SHA256");
  unsigned char access_md[32], traffic_md[32];
  int have_access = 0, have_traffic = 0;
  if (take_token(tok, tok_hex, "$ASB_ACCESS_TOKEN", access_md, &have_access) ||
      take_token(tt, tt_hex, "$ASB_TRAFFIC_TOKEN", traffic_md, &have_traffic))
    return 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--version") == 0) {
      printf("code-interpreter %s\n", ASB_VERSION);
      return 0;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--no-default-context") == 0) {
      default_ctx = 0;
    } else if (v && strcmp(a, "--port") == 0) {
      int64_t p;
      if (asbi_parse_i64(v, strlen(v), &p) != 0 || p < 0 || p > 65535) {
        fprintf(stderr, "code-interpreter: --port %s: not a port number\n", v);
        return 2;
      }
      port = (int)p;
      i++;
    } else if (v && strcmp(a, "--listen") == 0) {
      listen = v;
      i++;
    } else if (v && (strcmp(a, "--access-token") == 0 || strcmp(a, "--access-token-sha256") == 0)) {
      int hex = strcmp(a, "--access-token-sha256") == 0;
      if (take_token(hex ? NULL : v, hex ? v : NULL, "--access-token", access_md, &have_access))
        return 2;
      i++;
    } else if (v &&
               (strcmp(a, "--traffic-token") == 0 || strcmp(a, "--traffic-token-sha256") == 0)) {
      int hex = strcmp(a, "--traffic-token-sha256") == 0;
      if (take_token(hex ? NULL : v, hex ? v : NULL, "--traffic-token", traffic_md, &have_traffic))
        return 2;
      i++;
    } else if (v && strcmp(a, "--cwd") == 0) {
      cwd = v;
      i++;
    } else if (v && strcmp(a, "--state") == 0) {
      state = v;
      i++;
    } else if (v && strcmp(a, "--token-file") == 0) {
      token_file = v;
      i++;
    } else {
      fprintf(stderr, "code-interpreter: unknown or incomplete option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  /* Run by asb-init as a sandbox's aux agent: kernels are user processes,
   * in the workload cgroups with the user processes' open-file limit. */
  ci_kernel_workload(asbi_getenv("ASB_WORKLOAD_CGROUPS"), asbi_getenv("ASB_NOFILE"));
  /* kernels inherit our environment: not the tokens, nor the agent's
   * conventions */
  static const char *const agent_vars[] = {"ASB_WORKLOAD_CGROUPS", "ASB_NOFILE", "ASB_RUN_DIR",
                                           "ASB_SANDBOX_ID"};
  for (size_t i = 0; i < sizeof agent_vars / sizeof agent_vars[0]; i++) unsetenv(agent_vars[i]);
  unsetenv("ASB_ACCESS_TOKEN");
  unsetenv("ASB_ACCESS_TOKEN_SHA256");
  unsetenv("ASB_TRAFFIC_TOKEN");
  unsetenv("ASB_TRAFFIC_TOKEN_SHA256");

  char here[PATH_MAX];
  struct stat st;
  if (!cwd) {
    if (stat("/home/user", &st) == 0 && S_ISDIR(st.st_mode))
      cwd = "/home/user";
    else if (getcwd(here, sizeof here))
      cwd = here;
    else
      cwd = "/";
  }
  if (stat(cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "code-interpreter: --cwd %s: not a directory\n", cwd);
    return 2;
  }

  const char *tmp = asbi_getenv("TMPDIR");
  char rundir[PATH_MAX];
  snprintf(rundir, sizeof rundir, "%s/asb-codei-XXXXXX", tmp ? tmp : "/tmp");
  if (!mkdtemp(rundir)) {
    fprintf(stderr, "code-interpreter: cannot create a run directory %s: %s\n", rundir,
            strerror(errno));
    return 1;
  }

  /* matplotlib of the python kernels: E2B's settings (CJK fallback font),
   * unless the environment names an rc of its own */
  char rc[PATH_MAX + 16];
  snprintf(rc, sizeof rc, "%s/matplotlibrc", rundir);
  if (!asbi_getenv("MATPLOTLIBRC")) {
    FILE *f = fopen(rc, "we");
    if (f && fputs(ci_matplotlibrc, f) >= 0 && fclose(f) == 0)
      setenv("MATPLOTLIBRC", rc, 1);
    else if (f)
      fclose(f);
  }

  /* Signals: SIGPIPE ignored (dead drivers' pipes, gone clients); the
   * termination signals are taken by sigwait below, so block them before
   * any thread starts. Kernels get default handling back when spawned. */
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);

  ci_config cfg = {
      .rundir = rundir, .default_cwd = cwd, .default_context = default_ctx, .state_path = state};
  ci_ctx_init(&cfg);
  ci_server_opts so = {.listen = listen,
                       .port = port,
                       .access_sha256 = have_access ? access_md : NULL,
                       .traffic_sha256 = have_traffic ? traffic_md : NULL,
                       .token_file = token_file};
  char err[512];
  /* the default contexts exist (starting) before the first request can
   * list them */
  if (default_ctx) ci_ctx_start_default();
  int bound = ci_server_start(&so, err, sizeof err);
  if (bound < 0) {
    fprintf(stderr, "code-interpreter: %s\n", err);
    ci_ctx_shutdown();
    ci_zmq_term();
    unlink(rc);
    rmdir(rundir);
    return 1;
  }
  printf("%d\n", bound);
  fflush(stdout);

  int sig = 0;
  sigwait(&stop, &sig);
  ci_ctx_shutdown(); /* ends running executions, so their streams finish */
  ci_server_stop();
  ci_zmq_term();
  unlink(rc);
  rmdir(rundir); /* kernels removed their files; spool files are unlinked */
  return 0;
}
