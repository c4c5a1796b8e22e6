/* engine.limits: fork bomb, memory hog, disk full, CPU quota; the agent and
 * the engine survive each of them. SPDX-License-Identifier: Apache-2.0 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "testing.h"

static asbt_env env;

static asbe_sandbox *make(const char *id, void (*tweak)(asbe_sandbox_spec *)) {
  asbe_sandbox_spec s;
  asbt_spec(&s, id, env.base);
  if (tweak) tweak(&s);
  asbe_sandbox *sb = NULL;
  if (asbe_sandbox_create(env.e, &s, &sb) < 0) fprintf(stderr, "create: %s\n", asbe_errmsg());
  return sb;
}

static void bomb_spec(asbe_sandbox_spec *s) {
  s->pids_max = 32;
  s->cpu_millicores = 500; /* keep the host usable while it spins */
}

TEST(fork_bomb_stops_at_pids_max) {
  asbe_sandbox *sb = make("sbx-bomb", bomb_spec);
  REQUIRE(sb != NULL);
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  asbe_exec_opts o;
  memset(&o, 0, sizeof o);
  const char *argv[] = {"bash", "-c", "b() { b | b & }; b", NULL};
  o.argv = argv;
  o.uid = 1000;
  o.stdin_fd = o.stdout_fd = o.stderr_fd = -1;
  asbe_proc *p = NULL;
  REQUIRE(asbe_sandbox_exec(sb, &o, &p) == 0);
  /* A bash fork bomb does not stay at its limit: the forks that fail make
   * their shells exit, so the count rises and falls. The test records the
   * peak it saw instead of sampling once after the wait. */
  asbe_stats st;
  uint64_t peak = 0;
  WAIT_UNTIL((asbe_sandbox_stats(sb, &st) == 0 && st.pids_current > peak ? (peak = st.pids_current)
                                                                         : peak) >= 32,
             ASBT_DEADLINE_MS);
  CHECK(peak >= 32);
  /* the workload never gets past its limit; the agent (own cgroup) answers */
  for (int i = 0; i < 50; i++) {
    if (asbe_sandbox_stats(sb, &st) == 0 && st.pids_current > peak) peak = st.pids_current;
    usleep(10000);
  }
  CHECK(peak <= 32 + 2);
  char buf[64];
  CHECK(asbt_agent(sb, "ping", buf, sizeof buf) == 0 && !strcmp(buf, "pong"));
  CHECK(asbe_sandbox_alive(sb));
  asbe_proc_free(p);
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

static void hog_spec(asbe_sandbox_spec *s) {
  s->memory_bytes = 64ull << 20;
}

TEST(memory_hog_is_oom_killed_alone) {
  asbe_sandbox *sb = make("sbx-hog", hog_spec);
  REQUIRE(sb != NULL);
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  char buf[64];
  CHECK(asbt_agent(sb, "pid", buf, sizeof buf) == 0);
  int agent_pid = atoi(buf);
  int rc = asbt_sh(sb, 1000, "python3 -c 'b = bytearray(512 << 20); print(len(b))'", NULL);
  CHECK(rc == 128 + SIGKILL || rc == 137);
  asbe_stats st;
  CHECK(asbe_sandbox_stats(sb, &st) == 0);
  CHECK(st.oom_kills >= 1);
  CHECK_INT(st.agent_oom_kills, 0);
  CHECK(st.memory_limit_bytes == 64ull << 20);
  /* the agent is the same process, and the sandbox still works */
  CHECK(asbt_agent(sb, "pid", buf, sizeof buf) == 0 && atoi(buf) == agent_pid);
  CHECK(asbt_sh_eq(sb, 1000, "echo still here", "still here"));
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

static void disk_spec(asbe_sandbox_spec *s) {
  s->memory_bytes = 128ull << 20; /* smaller than what is written */
  s->disk_bytes = 256ull << 20;
}

TEST(disk_full_is_enospc) {
  struct statvfs host_before;
  REQUIRE(statvfs(env.state, &host_before) == 0);
  asbe_sandbox *sb = make("sbx-disk", disk_spec);
  REQUIRE(sb != NULL);
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  char *out = NULL;
  /* 400 MiB into a 256 MiB disk of a 128 MiB sandbox: ENOSPC, not OOM */
  int rc = asbt_sh(sb, 1000, "dd if=/dev/zero of=/home/user/big bs=1M count=400 2>&1", &out);
  CHECK(rc == 1);
  CHECK(out && strstr(out, "No space left on device"));
  free(out);
  asbe_stats st;
  CHECK(asbe_sandbox_stats(sb, &st) == 0);
  CHECK_INT(st.oom_kills, 0);
  CHECK(st.disk_total_bytes <= 256ull << 20 && st.disk_total_bytes >= 200ull << 20);
  CHECK(st.disk_used_bytes + (16u << 20) >= st.disk_total_bytes);
  /* more writes fail too (root has no reserve either), the sandbox and its
   * agent keep working */
  CHECK(asbt_sh(sb, 0, "dd if=/dev/zero of=/tmp/more bs=1M count=8", NULL) == 1);
  char buf[64];
  CHECK(asbt_agent(sb, "ping", buf, sizeof buf) == 0 && !strcmp(buf, "pong"));
  CHECK(asbt_sh_eq(sb, 1000, "rm /home/user/big && echo x > ~/small && cat ~/small", "x"));
  /* the image on the host is sparse and bounded */
  char img[PATH_MAX];
  snprintf(img, sizeof img, "%s/disk.img", asbe_sandbox_dir(sb));
  struct stat is;
  CHECK(stat(img, &is) == 0 && is.st_size == (off_t)(256ull << 20));
  CHECK((uint64_t)is.st_blocks * 512 <= (256ull << 20) + (1u << 20));
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

static void tmpfs_spec(asbe_sandbox_spec *s) {
  s->disk_tmpfs = 1;
  s->disk_bytes = 32ull << 20;
}

TEST(tmpfs_disk_is_enospc_too) {
  asbe_sandbox *sb = make("sbx-tmpfs-full", tmpfs_spec);
  REQUIRE(sb != NULL);
  char *out = NULL;
  int rc = asbt_sh(sb, 1000, "dd if=/dev/zero of=/tmp/big bs=1M count=64 2>&1", &out);
  CHECK(rc == 1 && out && strstr(out, "No space left on device"));
  free(out);
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

static void cpu_spec(asbe_sandbox_spec *s) {
  s->cpu_millicores = 250;
}

TEST(cpu_quota) {
  asbe_sandbox *sb = make("sbx-cpu", cpu_spec);
  REQUIRE(sb != NULL);
  asbe_stats a, b;
  REQUIRE(asbe_sandbox_stats(sb, &a) == 0);
  CHECK_INT(asbt_sh(sb, 1000, "timeout 2 sh -c 'while :; do :; done'; true", NULL), 0);
  REQUIRE(asbe_sandbox_stats(sb, &b) == 0);
  double used = (double)(b.cpu_usage_ns - a.cpu_usage_ns) / 1e9;
  printf("  cpu used in 2 s at 250 millicores: %.2f s\n", used);
  CHECK(used > 0.02 && used < 1.0); /* ~0.5 s (less on a busy host); unlimited ~2 s */
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

int main(void) {
  if (asbt_setup(&env, 0) < 0) return 1;
  RUN(fork_bomb_stops_at_pids_max);
  RUN(memory_hog_is_oom_killed_alone);
  RUN(disk_full_is_enospc);
  RUN(tmpfs_disk_is_enospc_too);
  RUN(cpu_quota);
  asbt_teardown(&env);
  TEST_MAIN_END();
}
