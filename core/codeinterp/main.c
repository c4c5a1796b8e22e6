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
#include "kernel.h"
#include "server.h"
#include "util/util.h"

#ifndef ASB_VERSION
#define ASB_VERSION "0"
#endif

static void usage(FILE *f) {
  fprintf(f,
          "usage: code-interpreter [--port N] [--listen ADDR] [--access-token T]\n"
          "                        [--cwd DIR] [--no-default-context] [--version]\n"
          "  --port N             port to serve (default 49999; 0 = any free port)\n"
          "  --listen ADDR        address to bind (default 127.0.0.1)\n"
          "  --access-token T     require X-Access-Token: T on every route but GET /health\n"
          "                       (default: $ASB_ACCESS_TOKEN; unset = no auth)\n"
          "  --token-scope S      all (default) or execute: the token guards only\n"
          "                       POST /execute, as the stock E2B SDKs expect (they send\n"
          "                       it nowhere else); a wrong token is refused anywhere\n"
          "  --cwd DIR            cwd of contexts created without one (default /home/user\n"
          "                       if it exists, else the current directory)\n"
          "  --no-default-context do not start a python kernel ahead of the first call\n"
          "The chosen port is printed on stdout, alone on its line, once listening;\n"
          "GET /health answers 200 once the default python kernel is ready.\n");
}

int main(int argc, char **argv) {
  int port = 49999, default_ctx = 1, execute_only = 0;
  const char *listen = "127.0.0.1", *cwd = NULL;
  char *token = asbi_strdup(asbi_getenv("ASB_ACCESS_TOKEN"));
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--version") == 0) {
      printf("code-interpreter %s\n", ASB_VERSION);
      free(token);
      return 0;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      free(token);
      return 0;
    } else if (strcmp(a, "--no-default-context") == 0) {
      default_ctx = 0;
    } else if (v && strcmp(a, "--port") == 0) {
      int64_t p;
      if (asbi_parse_i64(v, strlen(v), &p) != 0 || p < 0 || p > 65535) {
        fprintf(stderr, "code-interpreter: --port %s: not a port number\n", v);
        free(token);
        return 2;
      }
      port = (int)p;
      i++;
    } else if (v && strcmp(a, "--listen") == 0) {
      listen = v;
      i++;
    } else if (v && strcmp(a, "--access-token") == 0) {
      free(token);
      token = asbi_strdup(v);
      i++;
    } else if (v && strcmp(a, "--token-scope") == 0 &&
               (strcmp(v, "all") == 0 || strcmp(v, "execute") == 0)) {
      execute_only = strcmp(v, "execute") == 0;
      i++;
    } else if (v && strcmp(a, "--cwd") == 0) {
      cwd = v;
      i++;
    } else {
      fprintf(stderr, "code-interpreter: unknown or incomplete option %s\n", a);
      usage(stderr);
      free(token);
      return 2;
    }
  }
  /* kernels inherit our environment: not the token */
  unsetenv("ASB_ACCESS_TOKEN");

  char here[PATH_MAX];
  struct stat st;
  if (!cwd) {
    if (stat("/home/user", &st) == 0 && S_ISDIR(st.st_mode)) cwd = "/home/user";
    else if (getcwd(here, sizeof here)) cwd = here;
    else cwd = "/";
  }
  if (stat(cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "code-interpreter: --cwd %s: not a directory\n", cwd);
    free(token);
    return 2;
  }

  const char *tmp = asbi_getenv("TMPDIR");
  char rundir[PATH_MAX];
  snprintf(rundir, sizeof rundir, "%s/asb-codei-XXXXXX", tmp ? tmp : "/tmp");
  if (!mkdtemp(rundir)) {
    fprintf(stderr, "code-interpreter: cannot create a run directory %s: %s\n", rundir,
            strerror(errno));
    free(token);
    return 1;
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

  ci_config cfg = {.rundir = rundir, .default_cwd = cwd, .default_context = default_ctx};
  ci_ctx_init(&cfg);
  ci_server_opts so = {.listen = listen, .port = port, .access_token = token,
                        .token_execute_only = execute_only};
  char err[512];
  int bound = ci_server_start(&so, err, sizeof err);
  free(token);
  if (bound < 0) {
    fprintf(stderr, "code-interpreter: %s\n", err);
    rmdir(rundir);
    return 1;
  }
  printf("%d\n", bound);
  fflush(stdout);
  if (default_ctx) ci_ctx_start_default();

  int sig = 0;
  sigwait(&stop, &sig);
  ci_ctx_shutdown(); /* ends running executions, so their streams finish */
  ci_server_stop();
  ci_zmq_term();
  rmdir(rundir); /* kernels removed their files; spool files are unlinked */
  return 0;
}
