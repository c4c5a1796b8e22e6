/* Helpers for the tests that check a chunked stream's end leaves a hop in
 * one write (core/httpd/endhold.h): strace attached to a running process
 * (its threads as they are; only the send system calls, with their data),
 * and a count of the sends that carry the body's last chunk `0\r\n\r\n`:
 * with the data before it in the same call, or alone. Header-only.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_STRACE_ENDS_H
#define ASB_STRACE_ENDS_H

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STE_STRACE "/usr/bin/strace"
#define STE_TRACED "trace=sendto,sendmsg,write,writev"

static inline int ste_have_strace(void) {
  return access(STE_STRACE, X_OK) == 0;
}

/* 1 when every thread of pid has a tracer. */
static inline int ste_all_traced(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d) return 0;
  int all = 1;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char sp[128], line[128];
    snprintf(sp, sizeof sp, "/proc/%d/task/%s/status", (int)pid, de->d_name);
    FILE *f = fopen(sp, "r");
    if (!f) continue;
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "TracerPid:", 10)) all &= atoi(line + 10) != 0;
    fclose(f);
  }
  closedir(d);
  return all;
}

/* strace -p on each thread pid has now (not -f: its children are not
 * traced, and so neither are the sandboxes' processes), into out. The
 * strace's pid once every thread is traced, or -1. */
static inline pid_t ste_attach(pid_t pid, const char *out) {
  const char *argv[160] = {STE_STRACE, "-qq", "-s", "65536", "-e", STE_TRACED, "-o", out};
  int n = 8;
  static char tids[64][16];
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d) return -1;
  struct dirent *de;
  int k = 0;
  while ((de = readdir(d)) && k < 64) {
    if (de->d_name[0] == '.') continue;
    snprintf(tids[k], sizeof tids[k], "%s", de->d_name);
    argv[n++] = "-p";
    argv[n++] = tids[k++];
  }
  closedir(d);
  argv[n] = NULL;
  pid_t s = fork();
  if (s == 0) {
    execv(STE_STRACE, (char *const *)argv);
    _exit(127);
  }
  if (s < 0) return -1;
  for (int i = 0; i < 12000 && !ste_all_traced(pid); i++) { /* up to 120 s */
    int st;
    if (waitpid(s, &st, WNOHANG) == s) return -1;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (!ste_all_traced(pid)) {
    kill(s, SIGKILL);
    waitpid(s, NULL, 0);
    return -1;
  }
  return s;
}

/* Detaches (SIGINT) and waits for strace's exit: the trace is complete. */
static inline void ste_detach(pid_t s) {
  if (s <= 0) return;
  kill(s, SIGINT);
  waitpid(s, NULL, 0);
}

/* The sends in the trace that carry the last chunk: *together with data
 * before it in the same call, *alone without. -1 if unreadable. */
static inline int ste_count_ends(const char *trace, int *together, int *alone) {
  FILE *f = fopen(trace, "r");
  if (!f) return -1;
  *together = *alone = 0;
  size_t cap = 0;
  char *line = NULL;
  while (getline(&line, &cap, f) > 0) {
    int is_send = strstr(line, "sendto(") || strstr(line, "sendmsg(") || strstr(line, "write(") ||
                  strstr(line, "writev(");
    if (!is_send) continue;
    /* as strace prints it: a string "0\r\n\r\n" of its own (an iovec of a
     * sendmsg, or the whole of a sendto), or the end of a longer one */
    const char *own = strstr(line, "\"0\\r\\n\\r\\n\"");
    const char *tail = strstr(line, "\\r\\n0\\r\\n\\r\\n\"");
    if (!own && !tail) continue;
    if (tail || (strstr(line, "msg_iovlen=2") && strstr(line, "sendmsg(")))
      (*together)++;
    else
      (*alone)++;
  }
  free(line);
  fclose(f);
  return 0;
}

/* The sends in the trace that carry a head starting with start ("HTTP/1.1 "
 * for a response, "POST " for a request): *joined with the body's first
 * bytes in the same call, *alone without. -1 if unreadable. */
static inline int ste_count_heads(const char *trace, const char *start, int *joined, int *alone) {
  FILE *f = fopen(trace, "r");
  if (!f) return -1;
  *joined = *alone = 0;
  size_t cap = 0;
  char *line = NULL;
  while (getline(&line, &cap, f) > 0) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s", start);
    const char *h = strstr(line, pat);
    if (!h || !(strstr(line, "sendto(") || strstr(line, "sendmsg("))) continue;
    /* the head's own string ends at its blank line */
    const char *q = strstr(h, "\\r\\n\\r\\n");
    int more = q && q[8] != '"';
    if (more || (strstr(line, "sendmsg(") && strstr(line, "msg_iovlen=2")))
      (*joined)++;
    else
      (*alone)++;
  }
  free(line);
  fclose(f);
  return 0;
}

#endif
