/* The local-engine default: with nothing configured but the state dir, the
 * library reads the engine's key there and starts agent-sandboxd itself
 * when it is not running. Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "asb_testing.h"

static char STATE[128];

/* Stops the engine of a state dir and removes the dir. */
static void stop_engine_in(const char *state) {
  char path[256];
  snprintf(path, sizeof path, "%s/engine.pid", state);
  FILE *f = fopen(path, "r");
  int pid = 0;
  if (f) {
    if (fscanf(f, "%d", &pid) != 1) pid = 0;
    fclose(f);
  }
  if (pid > 0) {
    /* --kill-on-exit: a sandbox a failed check left goes with it */
    kill(pid, SIGTERM);
    WAIT_UNTIL(kill(pid, 0) != 0, ASBT_DEADLINE_MS);
    if (kill(pid, 0) == 0) {
      fprintf(stderr, "the engine (pid %d) did not stop on SIGTERM; killing it\n", pid);
      kill(pid, SIGKILL);
    }
  }
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", state);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
}

static void stop_engine(void) {
  stop_engine_in(STATE);
}

static int engine_pid(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/engine.pid", STATE);
  FILE *f = fopen(path, "r");
  int pid = 0;
  if (f) {
    if (fscanf(f, "%d", &pid) != 1) pid = 0;
    fclose(f);
  }
  return pid;
}

/* The bits of a "SigIgn:"/"SigBlk:" line of /proc/<pid>/status. */
static unsigned long long proc_sigset(int pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE *f = fopen(path, "r");
  unsigned long long bits = 0;
  size_t n = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, field, n) == 0) bits = strtoull(line + n, NULL, 16);
  if (f) fclose(f);
  return bits;
}

/* Switched off, the library never starts an engine: by the option, and by
 * ASB_AUTOSTART=0 for a program that sets no options. */
TEST(autostart_off_never_starts_the_engine) {
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.autostart = -1;
  asb_client *c = NULL;
  REQUIRE_RC(asb_client_new(&c, &o), ASB_OK);
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, c, NULL), ASB_ECONNECTION);
  CHECK(strstr(asb_error_last()->message, "autostart") != NULL);
  CHECK(sb == NULL);
  asb_client_free(c);
  setenv("ASB_AUTOSTART", "0", 1);
  REQUIRE_RC(asb_client_new(&c, NULL), ASB_OK);
  CHECK_RC(asb_sandbox_create(&sb, c, NULL), ASB_ECONNECTION);
  asb_client_free(c);
  unsetenv("ASB_AUTOSTART");
  CHECK_INT(engine_pid(), 0);
}

TEST(nothing_configured_starts_the_engine) {
  asb_client *c = NULL;
  REQUIRE_RC(asb_client_new(&c, NULL), ASB_OK);
  CHECK_INT(asb_client_has_api_key(c), 0); /* read lazily from the state dir */
  asb_sandbox *sb = NULL;
  /* The engine the library starts inherits nothing of the host's that
   * could break it or that it could hold on to: a host (an FFI host, a
   * daemon) may ignore SIGCHLD (the engine would lose its children's exit
   * statuses), block signals in the calling thread, and hold descriptors
   * without O_CLOEXEC (the engine would keep them open for its lifetime). */
  int leak[2];
  REQUIRE(pipe(leak) == 0);
  struct sigaction ign = {.sa_handler = SIG_IGN}, old_chld, old_usr1;
  sigaction(SIGCHLD, &ign, &old_chld);
  sigaction(SIGUSR1, &ign, &old_usr1);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  int rc = asb_sandbox_create(&sb, c, NULL);
  pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
  sigaction(SIGCHLD, &old_chld, NULL);
  sigaction(SIGUSR1, &old_usr1, NULL);
  REQUIRE_RC(rc, ASB_OK);
  int pid = engine_pid();
  CHECK(pid > 0);
  unsigned long long ignored = proc_sigset(pid, "SigIgn:"), blocked = proc_sigset(pid, "SigBlk:");
  CHECK(!(ignored & (1ull << (SIGCHLD - 1))));
  CHECK(!(ignored & (1ull << (SIGUSR1 - 1))));
  CHECK(!(blocked & (1ull << (SIGUSR2 - 1))));
  char want[64], fdpath[64], dirpath[64], got[64];
  snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", leak[0]);
  ssize_t wn = readlink(fdpath, want, sizeof want - 1);
  REQUIRE(wn > 0);
  want[wn] = 0;
  snprintf(dirpath, sizeof dirpath, "/proc/%d/fd", pid);
  DIR *d = opendir(dirpath);
  CHECK(d != NULL);
  for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dirpath, de->d_name);
    ssize_t n = readlink(p, got, sizeof got - 1);
    if (n <= 0) continue;
    got[n] = 0;
    if (strcmp(got, want) == 0) ASBT_FAIL("the engine holds the host's pipe as fd %s", de->d_name);
  }
  if (d) closedir(d);
  close(leak[0]);
  close(leak[1]);
  asb_command_result *r = NULL;
  REQUIRE_RC(asb_commands_run(&r, sb, "echo started on demand", NULL), ASB_OK);
  CHECK_STR(asb_command_result_stdout(r, NULL), "started on demand\n");
  asb_command_result_free(r);
  char path[256];
  snprintf(path, sizeof path, "%s/api_key", STATE);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
  asb_client_free(c);
  /* A second client finds the running engine (no second start). */
  REQUIRE_RC(asb_client_new(&c, NULL), ASB_OK);
  asb_sandbox_page *p = NULL;
  CHECK_RC(asb_sandbox_list(&p, c, NULL), ASB_OK);
  asb_sandbox_page_free(p);
  asb_client_free(c);
}

/* Another engine on the default port (127.0.0.1:49982), as on a machine
 * where one already runs: it answers every request with 401, as an engine
 * does to a request without its key. If the port is taken already,
 * someone else plays this part. */
static atomic_int other_stop;
static int other_fd = -1;

static void *other_engine(void *arg) {
  (void)arg;
  static const char reply[] =
      "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: "
      "40\r\nConnection: close\r\n\r\n{\"code\":401,\"message\":\"invalid API key\"}";
  while (!atomic_load(&other_stop)) {
    struct pollfd p = {other_fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    int c = accept(other_fd, NULL, NULL);
    if (c < 0) continue;
    char buf[4096];
    struct pollfd q = {c, POLLIN, 0};
    if (poll(&q, 1, 1000) > 0 && read(c, buf, sizeof buf) > 0 &&
        write(c, reply, sizeof reply - 1) < 0)
      fprintf(stderr, "other engine: write failed\n");
    close(c);
  }
  return NULL;
}

static int start_other_engine(pthread_t *t) {
  other_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(other_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(49982);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(other_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(other_fd, 16) != 0) {
    printf("  127.0.0.1:49982 is taken already: that one is the other engine\n");
    close(other_fd);
    other_fd = -1;
    return 0;
  }
  return pthread_create(t, NULL, other_engine, NULL) == 0;
}

/* A state dir whose engine never ran (no key, no engine.url): the library
 * starts that engine rather than send a request without a key to whatever
 * answers on the default port. */
TEST(another_engine_on_the_default_port_is_not_ours) {
  char fresh[128];
  snprintf(fresh, sizeof fresh, "/tmp/asb-autostart-fresh-%d", (int)getpid());
  setenv("ASB_STATE_DIR", fresh, 1);
  pthread_t other;
  int other_running = start_other_engine(&other);
  asb_client *c = NULL;
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_client_new(&c, NULL), ASB_OK);
  if (c) CHECK_RC(asb_sandbox_create(&sb, c, NULL), ASB_OK);
  if (sb) CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
  asb_client_free(c);
  if (other_running) {
    atomic_store(&other_stop, 1);
    pthread_join(other, NULL);
  }
  if (other_fd >= 0) close(other_fd);
  stop_engine_in(fresh);
  setenv("ASB_STATE_DIR", STATE, 1);
}

int main(void) {
  snprintf(STATE, sizeof STATE, "/tmp/asb-autostart-%d", (int)getpid());
  const char *vars[] = {"E2B_API_KEY", "E2B_API_URL", "E2B_DOMAIN", "E2B_SANDBOX_URL", "E2B_DEBUG",
                        "ASB_API_KEY", "ASB_API_URL", "ASB_DOMAIN", "ASB_SANDBOX_URL", "ASB_DEBUG"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
  setenv("ASB_STATE_DIR", STATE, 1);
  setenv("ASB_ENGINE_BIN", ASB_ENGINE_BIN, 1);
  char args[128];
  snprintf(args, sizeof args,
           "--listen 127.0.0.1:0 --cgroup-name asbt-auto-%d --pool 1 --kill-on-exit",
           (int)getpid());
  setenv("ASB_ENGINE_ARGS", args, 1);
  /* Point the client at a port nobody listens on (the engine, once
   * started, records its own): the default 127.0.0.1:49982 may be another
   * engine's on a shared machine, which would answer instead. */
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &alen) != 0 || mkdir(STATE, 0700) != 0) {
    fprintf(stderr, "cannot prepare %s\n", STATE);
    return 1;
  }
  char path[256];
  snprintf(path, sizeof path, "%s/engine.url", STATE);
  FILE *f = fopen(path, "w");
  if (!f) return 1;
  fprintf(f, "http://127.0.0.1:%d\n", ntohs(a.sin_port));
  fclose(f);
  close(s); /* unbound again: connecting there is refused */
  RUN(autostart_off_never_starts_the_engine);
  RUN(nothing_configured_starts_the_engine);
  stop_engine();
  RUN(another_engine_on_the_default_port_is_not_ours);
  TEST_MAIN_END();
}
