/* The same resource limits on every way a process starts in a sandbox: the
 * init and its agent, commands of the exec service, and commands of the
 * setns fallback (a fork of the engine, which has its own, higher limits):
 * rlimits, the socket family filter, and the owner of the sandbox's user
 * namespace (its own host uid: the kernel counts per-user resources against
 * it). Runs on the isolation runtime directly, as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common.h"
#include "testing.h"

static asbt_env env;

static const char k_limits[] =
    "ulimit -S -n; ulimit -H -n; ulimit -H -c;"
    "python3 -c \"import resource as r, socket\n"
    "print(*r.getrlimit(r.RLIMIT_RTPRIO), *r.getrlimit(r.RLIMIT_NICE))\n"
    "for f in (1, 2, 40):\n"
    " try:\n"
    "  socket.socket(f, socket.SOCK_STREAM).close(); print(f, 'ok')\n"
    " except OSError as e: print(f, e.errno)\"";
/* Limits above the engine's own hard limit cannot be had (nothing here has
 * CAP_SYS_RESOURCE in the initial namespace): the sandbox's are at most it. */
static unsigned long g_hard;
static unsigned long at_most_ours(unsigned long v) {
  return v < g_hard ? v : g_hard;
}

static void check_both_uids(asbe_sandbox *sb, const char *path) {
  char k_want[128];
  snprintf(k_want, sizeof k_want, "%lu\n%lu\n0\n0 0 0 0\n1 ok\n2 ok\n40 97", at_most_ours(1024),
           at_most_ours(4096));
  for (uid_t uid = 0; uid <= 1000; uid += 1000) {
    char *out = NULL;
    CHECK_INT(asbt_sh(sb, uid, k_limits, &out), 0);
    size_t n = out ? strlen(out) : 0;
    if (n && out[n - 1] == '\n') out[n - 1] = '\0';
    if (!out || strcmp(out, k_want) != 0)
      ASBT_FAIL("%s, uid %u: got\n%s\nwant\n%s", path, (unsigned)uid, out ? out : "(null)", k_want);
    free(out);
  }
}

TEST(both_exec_paths_get_the_sandbox_limits) {
  /* the engine (this process) may have more: make sure it does, so that a
   * path that forgets to lower them shows */
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  g_hard = (unsigned long)rl.rlim_max;
  struct rlimit core = {0, RLIM_INFINITY};
  setrlimit(RLIMIT_CORE, &core);
  asbe_sandbox *sb = asbt_create(&env, "sbx-rlim", env.base);
  REQUIRE(sb != NULL);
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  char sock[128];
  snprintf(sock, sizeof sock, "/proc/%d/root/run/asb/.exec.sock", (int)asbe_sandbox_pid(sb));
  /* the exec service, not the fallback, must run the next command */
  WAIT_UNTIL(access(sock, F_OK) == 0, ASBT_DEADLINE_MS);
  CHECK(access(sock, F_OK) == 0);
  /* PPid != 0: forked inside the sandbox by the exec service */
  CHECK(asbt_sh_eq(sb, 0, "grep -c '^PPid:.0$' /proc/$$/status", "0"));
  check_both_uids(sb, "exec service");
  /* the init and the agent: room for the agent's many pipes */
  char want[64];
  snprintf(want, sizeof want, "Max open files %lu %lu files ", at_most_ours(16384),
           at_most_ours(16384));
  CHECK(asbt_sh_eq(sb, 0, "grep 'Max open files' /proc/1/limits | tr -s ' '", want));
  CHECK_INT(asbt_sh(sb, 0, "rm /run/asb/.exec.sock", NULL), 0);
  CHECK(asbt_sh_eq(sb, 0, "grep -c '^PPid:.0$' /proc/$$/status", "1")); /* the fallback */
  check_both_uids(sb, "setns fallback");
  /* the user namespace belongs to the sandbox's own host uid, not root */
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/ns/user", (int)asbe_sandbox_pid(sb));
  int ns = open(p, O_RDONLY | O_CLOEXEC);
  uid_t owner = (uid_t)-1;
  CHECK(ns >= 0 && ioctl(ns, NS_GET_OWNER_UID, &owner) == 0);
  CHECK_INT(owner, asbe_sandbox_host_uid(sb));
  if (ns >= 0) close(ns);
  /* ... and this thread is root again, with all its capabilities */
  CHECK_INT(geteuid(), 0);
  CHECK(asbt_sh_eq(sb, 0, "echo ok", "ok"));
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

int main(void) {
  if (asbt_setup(&env, 0) < 0) return 1;
  RUN(both_exec_paths_get_the_sandbox_limits);
  asbt_teardown(&env);
  TEST_MAIN_END();
}
