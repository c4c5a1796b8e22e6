/* Every example runs to completion against a real engine, configured the
 * way users run them: nothing but ASB_STATE_DIR (the local-engine default).
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;

static void run_example(const char *name) {
  char cmd[1024];
  char base[64];
  snprintf(base, sizeof base, "%s", name);
  char *sp = strchr(base, ' ');
  if (sp) *sp = '_';
  snprintf(cmd, sizeof cmd, "%s/%s > /tmp/asb-example-%s.log 2>&1", ASB_EXAMPLES_DIR, name, base);
  int rc = system(cmd);
  if (rc != 0) {
    ASBT_FAIL("example %s exited with %d; see /tmp/asb-example-%s.log", name, rc, base);
    return;
  }
  snprintf(cmd, sizeof cmd, "/tmp/asb-example-%s.log", base);
  remove(cmd);
}

TEST(quickstart) {
  run_example("quickstart");
}
TEST(commands) {
  run_example("commands");
}
TEST(files) {
  run_example("files");
}
TEST(pty) {
  run_example("pty");
}
TEST(sandbox_lifecycle) {
  run_example("sandbox_lifecycle");
}
TEST(code) {
  run_example("code");
}
TEST(git) {
  run_example("git");
}
TEST(volumes) {
  run_example("volumes");
}
TEST(snapshot) {
  run_example("snapshot");
}
TEST(secrets) {
  run_example("secrets");
}
#ifdef ASB_TEMPLATE_DIR
/* builds the c-hello template, creates a sandbox from it, calls its commands */
TEST(named_commands) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s/named_commands %s > /tmp/asb-example-named.log 2>&1",
           ASB_EXAMPLES_DIR, ASB_TEMPLATE_DIR);
  int rc = system(cmd);
  if (rc != 0) {
    ASBT_FAIL("example named_commands exited with %d; see /tmp/asb-example-named.log", rc);
    return;
  }
  remove("/tmp/asb-example-named.log");
}
/* the server SDK in pull mode, answered by a poll loop and a worker */
TEST(server_pull) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s/server_pull", ASB_EXAMPLES_DIR);
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  char out[1024];
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  CHECK_INT(pclose(p), 0);
  CHECK(strstr(out, "add -> 42\n"));
  CHECK(strstr(out, "slow_square -> 144\n"));
  CHECK(strstr(out, "add -> ASB_EINVAL"));
}
#endif
#ifdef ASB_AGENTS_MODEL
/* The CLIs come from scripts/agents-cache.sh; without codex there, left out. */
TEST(agents) {
  if (access("/usr/local/lib/agent-sandbox/agents/bin/codex", X_OK) != 0) {
    printf("     (no codex in /usr/local/lib/agent-sandbox/agents: left out)\n");
    return;
  }
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s/agents %s codex > /tmp/asb-example-agents.log 2>&1",
           ASB_EXAMPLES_DIR, ASB_AGENTS_MODEL);
  int rc = system(cmd);
  if (rc != 0) {
    ASBT_FAIL("example agents exited with %d; see /tmp/asb-example-agents.log", rc);
    return;
  }
  FILE *f = fopen("/tmp/asb-example-agents.log", "r");
  static char out[1 << 16];
  size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
  if (f) fclose(f);
  out[n] = 0;
  CHECK(strstr(out, "turn 1: completed, final message 'done'") != NULL);
  CHECK(strstr(out, "echo hi > /tmp/x") && strstr(out, "(exit code 0)"));
  CHECK(strstr(out, "/tmp/x: hi\n") != NULL);
  CHECK(strstr(out, "turn 2: recall: yes") != NULL);
  remove("/tmp/asb-example-agents.log");
}
#endif

TEST(sessions) {
  run_example("sessions"); /* creates and saves */
  run_example("sessions"); /* reconnects */
  run_example("sessions done");
}

int main(void) {
  if (engine_fixture_start(&F, "examples") != 0) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  /* The examples configure nothing: the library finds this engine through
   * its state dir (engine.url, api_key). */
  setenv("ASB_STATE_DIR", F.state, 1);
  char sessions[160];
  snprintf(sessions, sizeof sessions, "%s/sessions", F.state);
  setenv("ASB_SESSION_DIR", sessions, 1);
  const char *vars[] = {"E2B_API_KEY", "E2B_API_URL", "E2B_DOMAIN", "E2B_SANDBOX_URL", "E2B_DEBUG",
                        "ASB_API_KEY", "ASB_API_URL", "ASB_DOMAIN", "ASB_SANDBOX_URL", "ASB_DEBUG"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
  RUN(quickstart);
  RUN(commands);
  RUN(files);
  RUN(pty);
  RUN(sandbox_lifecycle);
  RUN(code);
  RUN(git);
  RUN(volumes);
  RUN(secrets);
  RUN(snapshot);
  RUN(sessions);
#ifdef ASB_TEMPLATE_DIR
  RUN(named_commands);
  RUN(server_pull);
#endif
#ifdef ASB_AGENTS_MODEL
  RUN(agents);
#endif
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
