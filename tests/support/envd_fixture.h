/* Starts a real envd process on a free loopback port for tests, and a client
 * + sandbox handle pointed at it the way E2B's debug mode does.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_FIXTURE_H
#define ASB_ENVD_FIXTURE_H

#include "debug_client.h"
#include <agentsandbox.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef ASB_ENVD_BIN
#error "define ASB_ENVD_BIN to the envd binary"
#endif

typedef struct envd_fixture {
  pid_t pid;
  int port;
  char url[64];
} envd_fixture;

/* Runs `envd --port 0 [extra...]` and reads the port it prints. Extra args
 * are NULL-terminated. Returns 0 or -1. */
static inline int envd_start(envd_fixture *f, const char *const *extra) {
  int out[2];
  if (pipe(out) != 0) return -1;
  const char *argv[32];
  int n = 0;
  argv[n++] = ASB_ENVD_BIN;
  argv[n++] = "--port";
  argv[n++] = "0";
  /* Like an E2B sandbox: commands run as the unprivileged "user" (the test
   * suite's set-up creates that account). Root's own login profile on a
   * development machine can be slow and is not what sandboxes run. */
  if (getpwnam("user")) {
    argv[n++] = "--default-user";
    argv[n++] = "user";
  }
  for (; extra && *extra && n < 30; extra++) argv[n++] = *extra;
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* no envd outlives a test that died */
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(out[1]);
  FILE *fp = fdopen(out[0], "r");
  char line[256];
  f->pid = pid;
  f->port = 0;
  while (fgets(line, sizeof line, fp)) {
    /* The first line holding a number is the port. */
    char *p = line;
    while (*p && (*p < '0' || *p > '9')) p++;
    char *colon = strrchr(line, ':');
    if (colon) p = colon + 1;
    int port = atoi(p);
    if (port > 0 && port < 65536) {
      f->port = port;
      break;
    }
  }
  fclose(fp);
  if (!f->port) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
  }
  snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", f->port);
  return 0;
}

static inline void envd_stop(envd_fixture *f) {
  if (f->pid > 0) {
    kill(f->pid, SIGTERM);
    for (int i = 0; i < 200; i++) {
      if (waitpid(f->pid, NULL, WNOHANG) == f->pid) {
        f->pid = 0;
        return;
      }
      usleep(10000);
    }
    kill(f->pid, SIGKILL);
    waitpid(f->pid, NULL, 0);
    f->pid = 0;
  }
}

/* A client in E2B debug mode whose sandbox URL is the fixture's envd, and
 * a sandbox handle on it (token may be NULL). */
static inline int envd_connect(const envd_fixture *f, const char *token, asb_client **client,
                               asb_sandbox **sb) {
  return asbt_debug_connect(f->url, token, client, sb);
}

#endif
