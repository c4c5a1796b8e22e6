/* engine.preflight: the host check passes here and names every check.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "testing.h"

TEST(preflight_report) {
  char *rep = NULL;
  int r = asbe_preflight(&rep);
  REQUIRE(rep != NULL);
  printf("%s", rep);
  CHECK_INT(r, 0);
  static const char *const names[] = {"user namespaces", "overlayfs in a user namespace",
                                      "idmapped mounts", "cgroups", "seccomp", "loop devices",
                                      "ext4", "pidfd"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) CHECK(strstr(rep, names[i]) != NULL);
  CHECK(strstr(rep, "FAIL") == NULL);
  free(rep);
}

TEST(engine_open_validates) {
  asbe_engine *e = NULL;
  asbe_engine_config cfg;
  memset(&cfg, 0, sizeof cfg);
  CHECK(asbe_engine_open(&cfg, &e) < 0);
  CHECK(strstr(asbe_errmsg(), "state_dir") != NULL);
  cfg.state_dir = "/tmp/asbt-nonexistent-state";
  cfg.agent_dir = "/tmp/asbt-nonexistent-agent";
  CHECK(asbe_engine_open(&cfg, &e) < 0);
  CHECK(strstr(asbe_errmsg(), "asb-init") != NULL);
  CHECK(e == NULL);
}

TEST(engine_open_close) {
  asbt_env env;
  REQUIRE(asbt_setup(&env, 0) == 0);
  printf("cgroups: %s\nworkload: %s\n", asbe_engine_cgroup_info(env.e),
         asbe_engine_workload_cgroups(env.e));
  CHECK(strstr(asbe_engine_workload_cgroups(env.e), "/run/asb/cgroup/") != NULL);
  asbt_teardown(&env);
  CHECK(system("rm -rf /tmp/asbt-nonexistent-state") == 0);
}

int main(void) {
  RUN(preflight_report);
  RUN(engine_open_validates);
  RUN(engine_open_close);
  TEST_MAIN_END();
}
