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
  static const char *const names[] = {"user namespaces",
                                      "overlayfs in a user namespace",
                                      "idmapped mounts",
                                      "cgroups",
                                      "seccomp",
                                      "loop devices",
                                      "ext4",
                                      "pidfd"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) CHECK(strstr(rep, names[i]) != NULL);
  CHECK(strstr(rep, "FAIL") == NULL);
  /* the machine-wide counts sandboxes share, when they are small */
  FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
  long pid_max = 0;
  if (f) {
    if (fscanf(f, "%ld", &pid_max) != 1) pid_max = 0;
    fclose(f);
  }
  if (pid_max && pid_max < 4194304) CHECK(strstr(rep, "tip  kernel.pid_max is") != NULL);
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

TEST(favor_dynmods_option) {
  char point[1024], opts[1024], now[1024], orig[1024];
  if (asbt_cgroup2(point, sizeof point, orig, sizeof orig) < 0) {
    printf("  no cgroup2 mount: skipped\n");
    return;
  }
  asbt_env env;
  memset(&env, 0, sizeof env);
  REQUIRE(asbt_setup(&env, 0) == 0);
  asbe_engine_close(env.e);
  env.e = NULL;
  asbe_engine_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.state_dir = env.state;
  cfg.agent_dir = env.agent_dir;
  cfg.cgroup_name = env.cgname;
  cfg.cgroup_favor_dynmods = 1;
  CHECK(asbe_engine_open(&cfg, &env.e) == 0);
  CHECK(asbt_cgroup2(point, sizeof point, now, sizeof now) == 0 && strstr(now, "favordynmods"));
  /* the other options survive */
  snprintf(opts, sizeof opts, "%s", orig);
  for (char *o = strtok(opts, ","); o; o = strtok(NULL, ","))
    if (strcmp(o, "rw") && strcmp(o, "ro")) CHECK(strstr(now, o) != NULL);
  asbe_sandbox *sb = asbt_create(&env, "sbx-fdm", env.busybox);
  CHECK(sb && asbt_sh_eq(sb, 0, "echo ok", "ok"));
  if (sb) {
    asbe_sandbox_kill(sb, 1);
    asbe_sandbox_release(sb);
  }
  asbt_teardown(&env);
  /* put the host back as it was */
  if (!strstr(orig, "favordynmods")) {
    CHECK_INT(asbt_cgroup2_restore(point, orig), 0);
    CHECK(asbt_cgroup2(point, sizeof point, now, sizeof now) == 0 && !strstr(now, "favordynmods"));
  }
}

int main(void) {
  RUN(preflight_report);
  RUN(engine_open_validates);
  RUN(engine_open_close);
  RUN(favor_dynmods_option);
  TEST_MAIN_END();
}
