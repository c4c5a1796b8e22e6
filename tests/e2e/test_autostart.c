/* The local-engine default: with nothing configured but the state dir, the
 * library reads the engine's key there and starts agent-sandboxd itself
 * when it is not running. Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <signal.h>
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
  RUN(nothing_configured_starts_the_engine);
  stop_engine();
  TEST_MAIN_END();
}
