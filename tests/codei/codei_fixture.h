/* Starts a real code-interpreter on a free loopback port for tests and
 * benchmarks, and a client + sandbox handle pointed at it the way E2B's
 * debug mode does. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CODEI_FIXTURE_H
#define ASB_CODEI_FIXTURE_H

#include "../support/debug_client.h"
#include <agentsandbox.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CODEI_BIN
#error "define CODEI_BIN to the code-interpreter binary"
#endif

typedef struct codei_fixture {
  pid_t pid;
  int port;
  char url[64];
} codei_fixture;

/* Runs `code-interpreter --port 0 [extra...]` (extra NULL-ended) with
 * env ("K=V", NULL-ended) added to ours, and reads the port it prints. The
 * server dies with the test. 0 or -1. */
static inline int codei_start(codei_fixture *f, const char *const *extra, const char *const *env) {
  int out[2];
  if (pipe(out) != 0) return -1;
  const char *argv[32];
  int n = 0;
  argv[n++] = CODEI_BIN;
  argv[n++] = "--port";
  argv[n++] = "0";
  for (; extra && *extra && n < 30; extra++) argv[n++] = *extra;
  argv[n] = NULL;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    for (; env && *env; env++) putenv((char *)*env);
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(out[1]);
  FILE *fp = fdopen(out[0], "r");
  char line[64];
  f->pid = pid;
  f->port = fgets(line, sizeof line, fp) ? atoi(line) : 0;
  fclose(fp);
  if (f->port <= 0 || f->port > 65535) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
  }
  snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", f->port);
  return 0;
}

/* SIGTERM and reap; returns the exit status (or -1 if it had to be killed). */
static inline int codei_stop(codei_fixture *f) {
  int st = -1;
  if (f->pid > 0) {
    kill(f->pid, SIGTERM);
    /* it stops its kernels first: give a slow machine time (120 s) */
    for (int i = 0; i < 12000; i++) {
      if (waitpid(f->pid, &st, WNOHANG) == f->pid) {
        f->pid = 0;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      usleep(10000);
    }
    kill(f->pid, SIGKILL);
    waitpid(f->pid, NULL, 0);
    f->pid = 0;
  }
  return -1;
}

/* A client in E2B debug mode whose sandbox URL is the server, and a sandbox
 * handle on it (token may be NULL). */
static inline int codei_connect(const codei_fixture *f, const char *token, asb_client **client,
                                asb_sandbox **sb) {
  return asbt_debug_connect(f->url, token, client, sb);
}

#endif
