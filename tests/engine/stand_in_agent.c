/* A stand-in for envd in the engine tests and the benchmark: listens on a
 * unix socket (default /run/asb/envd.sock) and optionally on 127.0.0.1:PORT,
 * and answers one-line commands:
 *   ping -> pong | pid | uid | hostname | cgroup | env NAME | exit CODE
 *   workload  -> moves itself into the workload cgroups (ASB_WORKLOAD_CGROUPS)
 *   write PATH TEXT -> writes TEXT to PATH ("ok" or the errno text)
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAXC 64

static void reply(int fd, const char *s) {
  size_t n = strlen(s);
  if (write(fd, s, n) < 0 || write(fd, "\n", 1) < 0) {
  }
}

static int write_to(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t w = write(fd, text, strlen(text));
  int e = w < 0 ? errno : 0;
  close(fd);
  return e;
}

static void handle(int fd, char *line) {
  char out[4096];
  if (!strcmp(line, "ping")) {
    reply(fd, "pong");
  } else if (!strcmp(line, "pid")) {
    snprintf(out, sizeof out, "%d", (int)getpid());
    reply(fd, out);
  } else if (!strcmp(line, "uid")) {
    snprintf(out, sizeof out, "%d", (int)getuid());
    reply(fd, out);
  } else if (!strcmp(line, "hostname")) {
    gethostname(out, sizeof out);
    reply(fd, out);
  } else if (!strcmp(line, "cgroup")) {
    int f = open("/proc/self/cgroup", O_RDONLY);
    ssize_t n = f >= 0 ? read(f, out, sizeof out - 1) : 0;
    if (f >= 0) close(f);
    out[n > 0 ? n : 0] = '\0';
    for (char *p = out; *p; p++)
      if (*p == '\n') *p = ';';
    reply(fd, out);
  } else if (!strncmp(line, "env ", 4)) {
    const char *v = getenv(line + 4);
    reply(fd, v ? v : "");
  } else if (!strncmp(line, "exit ", 5)) {
    reply(fd, "bye");
    exit(atoi(line + 5));
  } else if (!strcmp(line, "workload")) {
    const char *dirs = getenv("ASB_WORKLOAD_CGROUPS");
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", dirs ? dirs : "");
    int err = 0;
    for (char *d = strtok(buf, ":"); d && !err; d = strtok(NULL, ":")) {
      char p[512];
      snprintf(p, sizeof p, "%s/cgroup.procs", d);
      err = write_to(p, "0");
    }
    reply(fd, err ? strerror(err) : "ok");
  } else if (!strncmp(line, "write ", 6)) {
    char *path = line + 6, *sp = strchr(path, ' ');
    if (!sp) {
      reply(fd, "usage");
      return;
    }
    *sp = '\0';
    int err = write_to(path, sp + 1);
    reply(fd, err ? strerror(err) : "ok");
  } else {
    reply(fd, "?");
  }
}

int main(int argc, char **argv) {
  const char *path = "/run/asb/envd.sock";
  int port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-s")) path = argv[i + 1];
    if (!strcmp(argv[i], "-t")) port = atoi(argv[i + 1]);
  }
  signal(SIGPIPE, SIG_IGN);
  struct pollfd pf[MAXC + 2];
  char bufs[MAXC + 2][512];
  size_t lens[MAXC + 2];
  int n = 0;
  int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  unlink(path);
  if (bind(u, (struct sockaddr *)&a, sizeof a) < 0 || listen(u, 128) < 0) {
    perror("unix listen");
    return 1;
  }
  pf[n++] = (struct pollfd){u, POLLIN, 0};
  int nlisten = 1;
  if (port) {
    int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in in;
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    in.sin_port = htons((uint16_t)port);
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(t, (struct sockaddr *)&in, sizeof in) < 0 || listen(t, 128) < 0) {
      perror("tcp listen");
      return 1;
    }
    pf[n++] = (struct pollfd){t, POLLIN, 0};
    nlisten = 2;
  }
  fprintf(stderr, "asbt-agent %d listening on %s\n", (int)getpid(), path);
  for (;;) {
    if (poll(pf, (nfds_t)n, -1) < 0) continue;
    for (int i = 0; i < nlisten; i++) {
      if (!(pf[i].revents & POLLIN)) continue;
      int c = accept4(pf[i].fd, NULL, NULL, SOCK_CLOEXEC);
      if (c < 0) continue;
      if (n >= MAXC + 2) {
        close(c);
        continue;
      }
      lens[n] = 0;
      pf[n++] = (struct pollfd){c, POLLIN, 0};
    }
    for (int i = nlisten; i < n; i++) {
      if (!pf[i].revents) continue;
      ssize_t r = read(pf[i].fd, bufs[i] + lens[i], sizeof bufs[i] - 1 - lens[i]);
      if (r <= 0) {
        close(pf[i].fd);
        pf[i] = pf[n - 1];
        memcpy(bufs[i], bufs[n - 1], lens[n - 1]);
        lens[i] = lens[n - 1];
        n--;
        i--;
        continue;
      }
      lens[i] += (size_t)r;
      bufs[i][lens[i]] = '\0';
      char *nl;
      while ((nl = strchr(bufs[i], '\n'))) {
        *nl = '\0';
        handle(pf[i].fd, bufs[i]);
        size_t used = (size_t)(nl + 1 - bufs[i]);
        memmove(bufs[i], nl + 1, lens[i] - used + 1);
        lens[i] -= used;
      }
      if (lens[i] >= sizeof bufs[i] - 1) lens[i] = 0;
    }
  }
}
