/* asb-init: PID 1 of a sandbox. Linked statically so it runs in any template.
 *
 *   asb-init [-r MIN_MS] [-R MAX_MS] [-g GRACE_MS] [-- AGENT ARGS...]
 *
 * Spawns the agent (its own session), restarts it when it dies with an
 * exponential backoff (MIN_MS doubling up to MAX_MS, back to MIN_MS after
 * 10 s of uptime), so an agent crash never ends the sandbox. Reaps every
 * orphan. On SIGTERM/SIGINT: SIGTERM to every process, SIGKILL to what is
 * left after GRACE_MS, exit. SIGHUP, SIGUSR1 and SIGUSR2 go to the agent.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

__attribute__((format(printf, 1, 2))) static void logmsg(const char *fmt, ...) {
  char buf[512];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  int n = (int)strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ asb-init: ", &tm);
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  if (write(2, buf, (size_t)n) < 0) {
  }
}

static pid_t spawn(char **argv, const sigset_t *orig) {
  pid_t pid = fork();
  if (pid < 0) {
    logmsg("fork: %s", strerror(errno));
    return 0;
  }
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, orig, NULL);
    setsid();
    execvp(argv[0], argv);
    logmsg("exec %s: %s", argv[0], strerror(errno));
    _exit(127);
  }
  return pid;
}

static void usage(void) {
  fprintf(stderr, "usage: asb-init [-r MIN_MS] [-R MAX_MS] [-g GRACE_MS] [-- AGENT ARGS...]\n");
  exit(2);
}

int main(int argc, char **argv) {
  long min_ms = 100, max_ms = 5000, grace_ms = 2000;
  int i = 1;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "--")) {
      i++;
      break;
    }
    if (i + 1 >= argc) usage();
    char *end;
    long v = strtol(argv[i + 1], &end, 10);
    if (*end || v < 0) usage();
    if (!strcmp(argv[i], "-r")) min_ms = v;
    else if (!strcmp(argv[i], "-R")) max_ms = v;
    else if (!strcmp(argv[i], "-g")) grace_ms = v;
    else usage();
    i++;
  }
  char **agent = i < argc ? argv + i : NULL;
  if (min_ms < 1) min_ms = 1;
  if (max_ms < min_ms) max_ms = min_ms;

  sigset_t mask, orig;
  sigemptyset(&mask);
  int sigs[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE};
  for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) sigaddset(&mask, sigs[k]);
  sigprocmask(SIG_BLOCK, &mask, &orig);
  sigdelset(&orig, SIGPIPE);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    logmsg("signalfd: %s", strerror(errno));
    return 1;
  }

  pid_t agent_pid = agent ? spawn(agent, &orig) : 0;
  uint64_t started = now_ms(), restart_at = 0, term_at = 0;
  long delay = min_ms;
  int terminating = 0;
  if (agent && !agent_pid) restart_at = now_ms() + (uint64_t)delay;

  for (;;) {
    uint64_t now = now_ms(), next = 0;
    if (restart_at) next = restart_at;
    if (terminating && (!next || term_at < next)) next = term_at;
    int timeout = next ? (next > now ? (int)(next - now) : 0) : -1;
    struct pollfd pf = {sfd, POLLIN, 0};
    int pr = poll(&pf, 1, timeout);
    if (pr > 0) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGTERM || sig == SIGINT || sig == SIGQUIT) {
          if (!terminating) {
            terminating = 1;
            restart_at = 0;
            term_at = now_ms() + (uint64_t)grace_ms;
            kill(-1, SIGTERM);
          }
        } else if (sig == SIGHUP || sig == SIGUSR1 || sig == SIGUSR2) {
          if (agent_pid > 0) kill(agent_pid, sig);
        }
      }
    }
    /* reap everything that exited: the agent and every orphan */
    for (;;) {
      int st;
      pid_t pid = waitpid(-1, &st, WNOHANG);
      if (pid <= 0) {
        if (pid < 0 && errno == ECHILD && terminating) {
          logmsg("all processes gone, exiting");
          return 0;
        }
        break;
      }
      if (pid != agent_pid) continue;
      agent_pid = 0;
      uint64_t ran = now_ms() - started;
      if (WIFEXITED(st))
        logmsg("agent exited with %d after %llu ms", WEXITSTATUS(st), (unsigned long long)ran);
      else
        logmsg("agent killed by signal %d after %llu ms", WTERMSIG(st), (unsigned long long)ran);
      if (terminating) continue;
      if (ran > 10000) delay = min_ms;
      restart_at = now_ms() + (uint64_t)delay;
      logmsg("restarting the agent in %ld ms", delay);
      delay = delay * 2 > max_ms ? max_ms : delay * 2;
    }
    now = now_ms();
    if (terminating && now >= term_at) {
      logmsg("grace period over, killing what is left");
      kill(-1, SIGKILL);
      return 0;
    }
    if (restart_at && now >= restart_at && !terminating) {
      restart_at = 0;
      started = now;
      agent_pid = spawn(agent, &orig);
      if (!agent_pid) restart_at = now + (uint64_t)delay;
    }
  }
}
