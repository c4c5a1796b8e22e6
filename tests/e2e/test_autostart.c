/* The local-engine default: with nothing configured but the state dir, the
 * library reads the engine's key there and starts agent-sandboxd itself
 * when it is not running. Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <arpa/inet.h>
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

static void stop_engine(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/engine.pid", STATE);
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
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", STATE);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
}

/* Another engine on the default port (127.0.0.1:49982), as on a machine
 * where one already runs: it answers every request with 401, as an engine
 * does to a request without its key. Our state dir's engine never ran, so
 * the library must start it rather than talk to this one. If the port is
 * taken already, someone else plays this part. */
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

TEST(nothing_configured_starts_the_engine) {
  asb_client *c = NULL;
  REQUIRE_RC(asb_client_new(&c, NULL), ASB_OK);
  CHECK_INT(asb_client_has_api_key(c), 0); /* read lazily from the state dir */
  asb_sandbox *sb = NULL;
  REQUIRE_RC(asb_sandbox_create(&sb, c, NULL), ASB_OK);
  asb_command_result *r = NULL;
  REQUIRE_RC(asb_commands_run(sb, "echo started on demand", NULL, &r), ASB_OK);
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
  CHECK_RC(asb_sandbox_list(c, NULL, &p), ASB_OK);
  asb_sandbox_page_free(p);
  asb_client_free(c);
}

int main(void) {
  snprintf(STATE, sizeof STATE, "/tmp/asb-autostart-%d", (int)getpid());
  const char *vars[] = {"E2B_API_KEY", "E2B_API_URL", "E2B_DOMAIN", "E2B_SANDBOX_URL",
                        "E2B_DEBUG", "ASB_API_KEY", "ASB_API_URL", "ASB_DOMAIN",
                        "ASB_SANDBOX_URL", "ASB_DEBUG"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
  setenv("ASB_STATE_DIR", STATE, 1);
  setenv("ASB_ENGINE_BIN", ASB_ENGINE_BIN, 1);
  char args[128];
  snprintf(args, sizeof args, "--listen 127.0.0.1:0 --cgroup-name asbt-auto-%d --pool 1 --kill-on-exit",
           (int)getpid());
  setenv("ASB_ENGINE_ARGS", args, 1);
  pthread_t other;
  int other_running = start_other_engine(&other);
  RUN(nothing_configured_starts_the_engine);
  if (other_running) {
    atomic_store(&other_stop, 1);
    pthread_join(other, NULL);
  }
  if (other_fd >= 0) close(other_fd);
  stop_engine();
  TEST_MAIN_END();
}
