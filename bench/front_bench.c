/* The engine's TCP front (core/engine/front.c) with plain sockets and a
 * keyed GET /sandboxes on an engine without sandboxes (its reply is "[]",
 * and its connection stays open, as an SDK's calls do), so what is
 * measured is the front and libmicrohttpd:
 *   - keep-alive: THREADS connections, each sending REQS requests one
 *     after another: requests/s
 *   - a connection per request: THREADS threads connecting, asking once,
 *     closing: connections/s
 *   - bursts of BURST connections from one address (past
 *     --max-connections-per-ip, 256): each sends its request before any is
 *     read, then all are read: the burst's time p50/p99, and how many were
 *     answered (the rest were reset or refused)
 * usage: front_bench [port key]   (an engine already listening on
 * 127.0.0.1:port with API key key; else one is started, as root, from
 * this build tree)
 * SPDX-License-Identifier: Apache-2.0 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "../tests/support/engine_fixture.h"
#include "bench.h"

#define THREADS 8
#define REQS 2000
#define CONNS 500
#define BURST 600
#define ROUNDS 10

static char REQ[512];
static size_t reqlen;
static int port;

static int connect_to(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* One 200 with "[]" read off fd: 0, or -1. */
static int read_200(int fd) {
  char b[1024];
  size_t n = 0;
  for (;;) {
    ssize_t r = recv(fd, b + n, sizeof b - 1 - n, 0);
    if (r <= 0) return -1;
    n += (size_t)r;
    b[n] = 0;
    const char *end = strstr(b, "\r\n\r\n");
    if (end && strcmp(end + 4, "[]") == 0) return strncmp(b, "HTTP/1.1 200", 12) == 0 ? 0 : -1;
    if (n == sizeof b - 1) return -1;
  }
}

static int ask(int fd) {
  return send(fd, REQ, reqlen, MSG_NOSIGNAL) == (ssize_t)reqlen ? read_200(fd) : -1;
}

static void *keepalive(void *arg) {
  int fd = connect_to(), *bad = arg;
  for (int i = 0; i < REQS; i++)
    if (fd < 0 || ask(fd) != 0) ++*bad;
  if (fd >= 0) close(fd);
  return NULL;
}

static void *per_request(void *arg) {
  int *bad = arg;
  for (int i = 0; i < CONNS; i++) {
    int fd = connect_to();
    if (fd < 0 || ask(fd) != 0) ++*bad;
    if (fd >= 0) close(fd);
  }
  return NULL;
}

static double run_threads(void *(*fn)(void *), int *bad) {
  pthread_t t[THREADS];
  int b[THREADS] = {0};
  double t0 = bench_now();
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, fn, &b[i]);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < THREADS; i++) *bad += b[i];
  return bench_now() - t0;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
    rl.rlim_cur = 4096;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  engine_fixture F = {0};
  static const char *const args[] = {"--pool", "0", NULL};
  if (argc > 2) {
    port = atoi(argv[1]);
    snprintf(F.key, sizeof F.key, "%s", argv[2]);
  } else if (engine_fixture_start_args(&F, "frontbench", args) == 0) {
    port = F.port;
  } else {
    fprintf(stderr, "cannot start the engine\n");
    engine_fixture_stop(&F);
    return 1;
  }
  reqlen = (size_t)snprintf(REQ, sizeof REQ,
                            "GET /sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\n\r\n", F.key);
  int bad = 0;
  double s = run_threads(keepalive, &bad);
  printf("keep-alive, %d connections: %.0f requests/s (%d failed)\n", THREADS, THREADS * REQS / s,
         bad);
  bad = 0;
  s = run_threads(per_request, &bad);
  printf("a connection per request, %d threads: %.0f connections/s (%d failed)\n", THREADS,
         THREADS * CONNS / s, bad);
  static int fds[BURST];
  double v[ROUNDS];
  int answered = 0;
  for (int r = 0; r < ROUNDS; r++) {
    double t0 = bench_now();
    for (int i = 0; i < BURST; i++) {
      fds[i] = connect_to();
      if (fds[i] >= 0 && send(fds[i], REQ, reqlen, MSG_NOSIGNAL) < 0) {
        close(fds[i]);
        fds[i] = -1;
      }
    }
    for (int i = 0; i < BURST; i++)
      if (fds[i] >= 0 && read_200(fds[i]) == 0) answered++;
    v[r] = bench_now() - t0;
    for (int i = 0; i < BURST; i++)
      if (fds[i] >= 0) close(fds[i]);
  }
  char name[96];
  snprintf(name, sizeof name, "burst of %d connections, one address", BURST);
  bench_report(name, v, ROUNDS);
  printf("  answered %d of %d\n", answered, BURST * ROUNDS);
  if (argc <= 2) engine_fixture_stop(&F);
  return 0;
}
