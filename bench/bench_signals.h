/* A benchmark that starts engines (tests/support/engine_fixture.h) stops
 * them and removes their state dirs in atexit handlers, and its own host
 * processes, cgroups and files in its own: a signal's default action skips
 * them all. `cmd_bench | head` (SIGPIPE at the first write after head is
 * gone), ^C and kill left the state dirs, cgroups, files and standalone
 * envds behind (the engines themselves end: PDEATHSIG, --kill-on-exit).
 *
 * bench_exit_on_signals() turns SIGPIPE, SIGINT, SIGTERM and SIGHUP into
 * exit(128 + signal), so the atexit handlers run. exit is not
 * async-signal-safe: the handler only writes the signal's number to a pipe
 * and a thread of its own reads it and exits (the write that raised
 * SIGPIPE fails with EPIPE meanwhile). Handlers, unlike ignored signals or
 * a blocked mask, do not pass to the programs a bench starts (exec resets
 * them), so the engines and envds keep the default actions.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_BENCH_SIGNALS_H
#define ASB_BENCH_SIGNALS_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int bench_sig_fds[2] = {-1, -1};

static void bench_sig_note(int sig) {
  int e = errno;
  unsigned char c = (unsigned char)sig;
  if (write(bench_sig_fds[1], &c, 1) < 0) { /* full: one is already there */
  }
  errno = e;
}

static void *bench_sig_waiter(void *arg) {
  (void)arg;
  unsigned char c = 0;
  ssize_t n;
  while ((n = read(bench_sig_fds[0], &c, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) return NULL;
  /* stderr: stdout may be the pipe that is gone */
  fprintf(stderr, "%s: stopping the engines, removing what the bench made\n", strsignal(c));
  exit(128 + c);
}

/* Call it first in main. */
static inline void bench_exit_on_signals(void) {
  static const int sigs[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP};
  pthread_t t;
  if (pipe2(bench_sig_fds, O_CLOEXEC) != 0) return;
  fcntl(bench_sig_fds[1], F_SETFL, O_NONBLOCK);
  if (pthread_create(&t, NULL, bench_sig_waiter, NULL) != 0) return; /* the defaults stay */
  pthread_detach(t);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = bench_sig_note;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

#endif
