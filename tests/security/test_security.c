/* Security of the local engine, tested from inside real sandboxes: what a
 * sandbox must not reach (host files and state, host and other sandboxes'
 * processes, host loopback, other sandboxes' files and ports), what it must
 * not do (mount, unshare, ptrace, modules, privilege gain), and that its
 * limits hold without taking the agent or the engine down. Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;
static asb_sandbox *SB;

typedef struct run_res {
  int rc, exit_code;
  char out[4096], err[4096];
} run_res;

/* Run as root inside the sandbox (the strongest position a user can reach). */
static run_res sh(asb_sandbox *sb, const char *user, const char *cmd, long timeout_ms) {
  run_res r;
  memset(&r, 0, sizeof r);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.user = user;
  o.timeout_ms = timeout_ms ? timeout_ms : 60000;
  asb_command_result *res = NULL;
  r.rc = asb_commands_run(&res, sb, cmd, &o);
  if (res) {
    r.exit_code = asb_command_result_exit_code(res);
    snprintf(r.out, sizeof r.out, "%s", asb_command_result_stdout(res, NULL));
    snprintf(r.err, sizeof r.err, "%s", asb_command_result_stderr(res, NULL));
    asb_command_result_free(res);
  } else {
    r.exit_code = -1000;
    snprintf(r.err, sizeof r.err, "%s", asb_error_last()->message);
  }
  return r;
}

#define EXPECT_DENIED(sb, user, cmd)                                           \
  do {                                                                         \
    run_res r_ = sh(sb, user, cmd, 0);                                         \
    if (r_.exit_code == 0)                                                     \
      ASBT_FAIL("as %s, `%s` succeeded but must fail: %s", user, cmd, r_.out); \
  } while (0)

TEST(host_files_and_engine_state_are_invisible) {
  /* A marker on the host that must never be readable. */
  FILE *f = fopen("/root/asb-host-secret", "w");
  REQUIRE(f != NULL);
  fputs("host secret", f);
  fclose(f);
  EXPECT_DENIED(SB, "root", "cat /root/asb-host-secret");
  EXPECT_DENIED(SB, "root", "grep -r 'host secret' /root /home /tmp /var 2>/dev/null");
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls %s || cat %s/api_key", F.state, F.state);
  EXPECT_DENIED(SB, "root", cmd);
  EXPECT_DENIED(SB, "root", "cat /proc/1/root/root/asb-host-secret");
  EXPECT_DENIED(SB, "root", "touch /usr/asb-should-fail");
  EXPECT_DENIED(SB, "root", "ls /var/lib/agent-sandbox");
  remove("/root/asb-host-secret");
}

TEST(host_processes_are_invisible) {
  run_res r = sh(SB, "root", "ps -e -o pid=,comm= | wc -l; cat /proc/1/cmdline | tr '\\0' ' '", 0);
  CHECK_INT(r.exit_code, 0);
  /* A handful of processes (init, envd, the shell and ps), not the host's. */
  CHECK(atoi(r.out) < 10);
  CHECK(strstr(r.out, "agent-sandboxd") == NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "kill -0 %d", (int)getpid());
  EXPECT_DENIED(SB, "root", cmd); /* not even visible */
}

TEST(host_loopback_is_unreachable) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 4) == 0);
  socklen_t l = sizeof a;
  getsockname(s, (struct sockaddr *)&a, &l);
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import socket; socket.create_connection(('127.0.0.1', %d), 2)\"",
           ntohs(a.sin_port));
  EXPECT_DENIED(SB, "root", cmd);
  /* the engine's own API: 127.0.0.1:<its port> in the sandbox is its
   * portal (portal.c), which serves sandboxes' URLs only — never the
   * control plane, not even with the key, nor /health */
  snprintf(cmd, sizeof cmd,
           "curl -sf --max-time 10 -H 'X-API-Key: %s' http://127.0.0.1:%d/sandboxes", F.key,
           F.port);
  EXPECT_DENIED(SB, "root", cmd);
  snprintf(cmd, sizeof cmd, "curl -sf --max-time 10 http://127.0.0.1:%d/health", F.port);
  EXPECT_DENIED(SB, "root", cmd);
  close(s);
  run_res r = sh(SB, "root", "ip -o link 2>/dev/null | wc -l || ls /sys/class/net | wc -l", 0);
  CHECK_STR(r.out, "1\n"); /* only lo */
}

TEST(other_sandboxes_are_unreachable) {
  asb_sandbox *other = NULL;
  REQUIRE_RC(asb_sandbox_create(&other, C, NULL), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, other, "/tmp/other-secret", "x", 1, NULL), ASB_OK);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.timeout_ms = -1;
  asb_process *srv = NULL;
  REQUIRE_RC(asb_commands_start(&srv, other, "python3 -m http.server 8765 --bind 127.0.0.1", &o),
             ASB_OK);
  /* The server must be up (its own sandbox reaches it) for "unreachable"
   * to mean anything: wait for that, not for half a second. */
  run_res up = sh(other, "root",
                  "for i in $(seq 1200); do (exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null && "
                  "echo up && exit 0; sleep 0.1; done; exit 1",
                  ASBT_DEADLINE_MS + 60000);
  CHECK_STR(up.out, "up\n");
  EXPECT_DENIED(SB, "root", "cat /tmp/other-secret");
  EXPECT_DENIED(SB, "root",
                "python3 -c \"import urllib.request; "
                "urllib.request.urlopen('http://127.0.0.1:8765', timeout=2)\"");
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ls /proc/*/root/tmp/other-secret 2>/dev/null | grep -q . ");
  EXPECT_DENIED(SB, "root", cmd);
  asb_process_free(srv);
  asb_sandbox_kill(other, NULL);
  asb_sandbox_free(other);
}

TEST(dangerous_syscalls_are_denied) {
  EXPECT_DENIED(SB, "root", "mount -t tmpfs none /mnt");
  EXPECT_DENIED(SB, "root", "unshare -r true");
  EXPECT_DENIED(SB, "root", "unshare -m true");
  EXPECT_DENIED(SB, "root",
                "python3 -c \"import ctypes,sys; l=ctypes.CDLL(None); "
                "sys.exit(0 if l.ptrace(16, 1, 0, 0) == 0 else 1)\"");
  EXPECT_DENIED(SB, "root",
                "python3 -c \"import ctypes,os,sys; l=ctypes.CDLL(None); "
                "fd=os.open('/dev/null', os.O_RDONLY); "
                "sys.exit(0 if l.syscall(313, fd, b'', 0) == 0 else 1)\"");
  EXPECT_DENIED(SB, "root",
                "python3 -c \"import ctypes,sys; l=ctypes.CDLL(None); "
                "sys.exit(0 if l.syscall(250, 0, 0, 0, 0, 0) >= 0 else 1)\"");
  EXPECT_DENIED(SB, "root",
                "python3 -c \"import ctypes,sys; l=ctypes.CDLL(None); "
                "sys.exit(0 if l.syscall(321, 0, 0, 0) >= 0 else 1)\"");
  EXPECT_DENIED(SB, "root", "hostname other");
}

TEST(no_privilege_gain) {
  /* root inside is not root outside: its uid maps to an unprivileged one. */
  run_res r = sh(SB, "root", "cat /proc/self/uid_map", 0);
  CHECK(strstr(r.out, "         0          0") == NULL);
  /* A setuid copy of a shell gives the user nothing (no_new_privs). */
  r = sh(SB, "root", "cp /usr/bin/id /tmp/suid-id && chmod 4755 /tmp/suid-id && echo ok", 0);
  CHECK_STR(r.out, "ok\n");
  r = sh(SB, "user", "/tmp/suid-id -u", 0);
  CHECK_STR(r.out, "1000\n");
  run_res s = sh(SB, "user", "grep NoNewPrivs /proc/self/status", 0);
  CHECK(strstr(s.out, "1") != NULL);
  s = sh(SB, "user", "grep CapEff /proc/self/status", 0);
  CHECK(strstr(s.out, "0000000000000000") != NULL);
}

TEST(fork_bomb_stops_at_the_pids_limit) {
  run_res r =
      sh(SB, "user",
         "python3 -c \"\nimport os\nn=0\ntry:\n  while n < 100000:\n"
         "    pid=os.fork()\n    if pid==0:\n      import time; time.sleep(30); os._exit(0)\n"
         "    n+=1\nexcept OSError as e:\n  print('stopped', n, e.errno)\n\"",
         60000);
  CHECK(strstr(r.out, "stopped") != NULL);
  /* The agent still answers, and the sandbox cleans up. */
  run_res ok = sh(SB, "root", "pkill -9 -u user python3; echo alive", 0);
  CHECK(strstr(ok.out, "alive") != NULL);
}

TEST(memory_hog_is_oom_killed_alone) {
  run_res r = sh(SB, "user",
                 "python3 -c \"x = bytearray(2 << 30); x[::4096] = b'1' * len(x[::4096])\"", 60000);
  CHECK(r.exit_code != 0);
  CHECK_RC(r.rc, ASB_ECOMMANDEXIT);
  run_res ok = sh(SB, "user", "echo still-here", 0);
  CHECK_STR(ok.out, "still-here\n");
}

TEST(disk_fill_stops_at_its_limit) {
  run_res r = sh(SB, "user", "dd if=/dev/zero of=/home/user/fill bs=1M count=4096 2>&1; echo rc=$?",
                 120000);
  CHECK(strstr(r.out, "No space left") != NULL);
  run_res ok = sh(SB, "user", "rm -f /home/user/fill; echo cleaned", 0);
  CHECK_STR(ok.out, "cleaned\n");
  /* The engine still serves others. */
  asb_sandbox *another = NULL;
  REQUIRE_RC(asb_sandbox_create(&another, C, NULL), ASB_OK);
  run_res r2 = sh(another, NULL, "echo fine", 0);
  CHECK_STR(r2.out, "fine\n");
  asb_sandbox_kill(another, NULL);
  asb_sandbox_free(another);
}

TEST(api_and_envd_need_credentials) {
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.api_url = F.url;
  o.sandbox_url = F.url;
  o.debug = -1;
  o.api_key = "e2b_1111111111111111111111111111111111111111";
  asb_client *nokey = NULL;
  REQUIRE_RC(asb_client_new(&nokey, &o), ASB_OK);
  asb_sandbox_page *p = NULL;
  CHECK_RC(asb_sandbox_list(&p, nokey, NULL), ASB_EAUTH);
  asb_sandbox *stolen = NULL;
  REQUIRE_RC(asb_sandbox_attach(&stolen, nokey, asb_sandbox_id(SB), NULL), ASB_OK);
  run_res r = sh(stolen, NULL, "echo nope", 0);
  CHECK_RC(r.rc, ASB_EAUTH);
  asb_sandbox_free(stolen);
  asb_client_free(nokey);
}

int main(void) {
  if (engine_fixture_start(&F, "sec") != 0 || engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    engine_fixture_stop(&F);
    return 1;
  }
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 600000;
  if (asb_sandbox_create(&SB, C, &o) != ASB_OK) {
    fprintf(stderr, "create: %s\n", asb_error_last()->message);
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(host_files_and_engine_state_are_invisible);
  RUN(host_processes_are_invisible);
  RUN(host_loopback_is_unreachable);
  RUN(other_sandboxes_are_unreachable);
  RUN(dangerous_syscalls_are_denied);
  RUN(no_privilege_gain);
  RUN(fork_bomb_stops_at_the_pids_limit);
  RUN(memory_hog_is_oom_killed_alone);
  RUN(disk_fill_stops_at_its_limit);
  RUN(api_and_envd_need_credentials);
  asb_sandbox_kill(SB, NULL);
  asb_sandbox_free(SB);
  asb_client_free(C);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
