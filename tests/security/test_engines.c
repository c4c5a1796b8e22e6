/* Several engines on one host: an engine never touches another engine's
 * sandboxes. Two engines with different state dirs and the same cgroup name
 * do not run at once (the second refuses to start, clearly); an engine with
 * another cgroup name kills nothing of a live one's; a crashed engine's name
 * can be taken over, and its sandboxes, live or dead, are left to an engine
 * with its state dir. Real agent-sandboxd processes, as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture A; /* the first engine: it owns the cgroup name */
static char g_name[64];  /* the cgroup name both contend for */

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Prepares a fixture with its own state dir and the given cgroup name
 * (not started). */
static void fixture_init(engine_fixture *f, const char *tag, const char *cgname) {
  memset(f, 0, sizeof *f);
  snprintf(f->state, sizeof f->state, "/tmp/asb-%s-%d", tag, (int)getpid());
  snprintf(f->cgroup, sizeof f->cgroup, "%s", cgname);
}

/* Starts an engine that must NOT come up. Returns 0 if it exited by itself
 * (its stdout and stderr in out), 1 if it came up (it is stopped again). */
static int engine_refused(const engine_fixture *f, char *out, size_t cap) {
  int p[2];
  if (pipe(p) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    close(p[0]);
    close(p[1]);
    const char *argv[16];
    engine_fixture_argv(f, "127.0.0.1:0", "0", 1, NULL, argv, 16);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(p[1]);
  size_t len = 0;
  int up = 0;
  char buf[512];
  ssize_t k;
  while (!up && (k = read(p[0], buf, sizeof buf)) > 0) {
    if (len + (size_t)k >= cap) k = (ssize_t)(cap - 1 - len);
    memcpy(out + len, buf, (size_t)k);
    len += (size_t)k;
    out[len] = '\0';
    up = strstr(out, "listening on") != NULL;
  }
  out[len] = '\0';
  close(p[0]);
  if (up) kill(pid, SIGTERM);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
  return up;
}

/* A value of the iso record of sandbox `id` of engine f ("pid", or the
 * first "cgroup.*" path when key is "cgroup"). */
static int rec_value(const engine_fixture *f, const char *id, const char *key, char *v,
                     size_t cap) {
  char p[512], line[4200];
  snprintf(p, sizeof p, "%s/sandboxes/%s/state", f->state, id);
  FILE *fp = fopen(p, "r");
  if (!fp) return -1;
  int found = -1;
  size_t kl = strlen(key);
  while (found < 0 && fgets(line, sizeof line, fp)) {
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, key, kl) || (line[kl] != '=' && line[kl] != '.')) continue;
    const char *eq = strchr(line, '=');
    if (!eq) continue;
    snprintf(v, cap, "%s", eq + 1);
    found = 0;
  }
  fclose(fp);
  return found;
}

/* The sandbox answers a command through its engine. */
static int answers(asb_sandbox *sb) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.timeout_ms = 60000;
  asb_command_result *res = NULL;
  int rc = asb_commands_run(&res, sb, "echo alive", &o);
  int ok = rc == ASB_OK && res && !strcmp(asb_command_result_stdout(res, NULL), "alive\n");
  asb_command_result_free(res);
  return ok;
}

static int pid_alive(pid_t pid) {
  char p[64], st = 'Z';
  snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(p, "r");
  if (!f) return 0;
  if (fscanf(f, "%*d %*s %c", &st) != 1) st = 'Z';
  fclose(f);
  return st != 'Z';
}

static void rm_state(engine_fixture *f) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->state);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", f->state);
}

static asb_client *g_ca;
static asb_sandbox *g_x; /* A's sandbox */
static char g_xid[64];

TEST(same_cgroup_name_is_refused) {
  engine_fixture b;
  fixture_init(&b, "sec-eng-b", g_name);
  char out[8192] = "";
  int up = engine_refused(&b, out, sizeof out);
  CHECK(!up);
  /* a clear reason, naming the owner */
  CHECK(strstr(out, "cgroup name") != NULL);
  CHECK(strstr(out, A.state) != NULL);
  if (up || !strstr(out, "cgroup name")) fprintf(stderr, "second engine said:\n%s\n", out);
  CHECK(answers(g_x));
  rm_state(&b);
}

TEST(other_cgroup_name_kills_nothing) {
  engine_fixture c;
  char name[64];
  snprintf(name, sizeof name, "%s-other", g_name);
  fixture_init(&c, "sec-eng-c", name);
  REQUIRE(engine_fixture_launch(&c, 1) == 0);
  asb_client *cc = NULL;
  asb_sandbox *y = NULL;
  CHECK_RC(engine_fixture_client(&c, &cc), ASB_OK);
  if (cc) CHECK_RC(asb_sandbox_create(&y, cc, NULL), ASB_OK);
  CHECK(answers(g_x));
  if (y) {
    CHECK(answers(y));
    asb_sandbox_kill(y, NULL);
    asb_sandbox_free(y);
  }
  asb_client_free(cc);
  engine_fixture_stop(&c);
  CHECK(answers(g_x));
}

/* A dies with kill -9; its sandbox lives on. Another state dir's engine may
 * take the name then, but leaves A's sandbox alone, alive or dead; A's
 * state dir, back, cleans the dead one up. */
TEST(crashed_engine_name_is_taken_over) {
  char v[4200], cg[4200];
  REQUIRE(rec_value(&A, g_xid, "pid", v, sizeof v) == 0);
  pid_t init = (pid_t)atoi(v);
  REQUIRE(init > 0);
  REQUIRE(rec_value(&A, g_xid, "cgroup", cg, sizeof cg) == 0);
  REQUIRE(access(cg, F_OK) == 0);
  A.keep_state = 1;
  engine_fixture_signal(&A, SIGKILL);
  asb_sandbox_free(g_x);
  g_x = NULL;
  asb_client_free(g_ca);
  g_ca = NULL;
  CHECK(pid_alive(init));

  engine_fixture b;
  fixture_init(&b, "sec-eng-b", g_name);
  REQUIRE(engine_fixture_launch(&b, 1) == 0); /* the name is free again */
  CHECK(pid_alive(init));
  CHECK(access(cg, F_OK) == 0);
  engine_fixture_signal(&b, SIGTERM);

  /* now A's sandbox dies too: still not b's to clean */
  kill(init, SIGKILL);
  for (long long end = now_ms() + 60000; pid_alive(init) && now_ms() < end;) usleep(10000);
  CHECK(!pid_alive(init));
  b.port = 0;
  REQUIRE(engine_fixture_launch(&b, 1) == 0);
  CHECK(access(cg, F_OK) == 0);
  engine_fixture_stop(&b);

  /* A's state dir comes back (under the same name): it reaps its own */
  A.port = 0;
  REQUIRE(engine_fixture_launch(&A, 1) == 0);
  CHECK(access(cg, F_OK) < 0);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/sandboxes/%s", A.state, g_xid);
  CHECK(access(dir, F_OK) < 0);
}

int main(void) {
  if (engine_fixture_start(&A, "sec-eng-a") != 0 || engine_fixture_client(&A, &g_ca) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    engine_fixture_stop(&A);
    return 1;
  }
  snprintf(g_name, sizeof g_name, "%s", A.cgroup);
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 600000;
  if (asb_sandbox_create(&g_x, g_ca, &o) != ASB_OK) {
    fprintf(stderr, "create: %s\n", asb_error_last()->message);
    engine_fixture_stop(&A);
    return 1;
  }
  snprintf(g_xid, sizeof g_xid, "%s", asb_sandbox_id(g_x));
  RUN(same_cgroup_name_is_refused);
  RUN(other_cgroup_name_kills_nothing);
  RUN(crashed_engine_name_is_taken_over);
  if (g_x) {
    asb_sandbox_kill(g_x, NULL);
    asb_sandbox_free(g_x);
  }
  asb_client_free(g_ca);
  /* a sandbox of A's that outlived a failed check dies with A's kill-on-exit */
  A.keep_state = 0;
  if (A.pid <= 0) {
    A.port = 0;
    engine_fixture_launch(&A, 1);
  }
  engine_fixture_stop(&A);
  TEST_MAIN_END();
}
