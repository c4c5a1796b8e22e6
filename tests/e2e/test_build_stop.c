/* The engine's stop does not wait for a template build's running step:
 * SIGTERM while a step runs `sleep 600` kills the step (and its build
 * sandbox), fails the build with "the engine is stopping", answers its
 * waiting POST, and the engine exits in far less than the step's 600 s.
 * The same through E2B's builder API (a build thread runs the step, one
 * waits for its turn: neither holds the stop up; the waiting one never
 * starts). The next engine on the same state dir has no trace of them (no
 * template of that name, no build sandbox left) and a rebuild works.
 * Runs as root; cleans up its engines, their sandboxes and state.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "asb_testing.h"
#include "engine_fixture.h"
#include "template_dir.h"

/* Well under the step's 600 s, far over what the stop takes (about the
 * time to kill the build sandbox): fails clearly with a stop that waits
 * for the step. */
#define STOP_BOUND_S 60

static engine_fixture F;
static char WORK[128], LOG[160];

static const char *write_tdir(const char *sub, const char *yaml) {
  return asbt_template_dir(WORK, sub, yaml, NULL);
}

/* 1 while a process runs `sleep 600` in this test engine's cgroups. */
static int step_running(void) {
  DIR *d = opendir("/proc");
  int found = 0;
  for (int pid; !found && (pid = asbt_next_pid(d));) {
    char path[300], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    long n = asbt_read_text(path, buf, sizeof buf);
    static const char want[] =
        "sleep\0"
        "600"; /* \0 then 600: not octal \060 */
    if (n != (long)sizeof want || memcmp(buf, want, sizeof want)) continue;
    snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
    found = asbt_read_text(path, buf, sizeof buf) >= 0 && strstr(buf, F.cgroup) != NULL;
  }
  if (d) closedir(d);
  return found;
}

static int build_sandboxes_on_disk(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/sandboxes", F.state);
  DIR *d = opendir(path);
  struct dirent *de;
  int n = 0;
  while (d && (de = readdir(d)))
    if (!strncmp(de->d_name, "bld", 3)) n++;
  if (d) closedir(d);
  return n;
}

static int file_has(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return strstr(buf, needle) != NULL;
}

typedef struct {
  asb_client *c;
  const char *dir;
  int rc;
  char msg[1024];
} build_call;

static void *do_build(void *arg) {
  build_call *b = arg;
  asb_template *t = NULL;
  b->rc = asb_templates_build(&t, b->c, b->dir, NULL);
  snprintf(b->msg, sizeof b->msg, "%s", b->rc ? asb_error_last()->message : "");
  asb_template_free(t);
  return NULL;
}

/* The engine's stderr (its log) to LOG while it starts, so its children
 * keep writing there; ours back after. */
static int launch_logged(void) {
  int saved = dup(2);
  int fd = open(LOG, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (saved < 0 || fd < 0) return -1;
  dup2(fd, 2);
  close(fd);
  int rc = engine_fixture_launch(&F, 1);
  dup2(saved, 2);
  close(saved);
  return rc;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

TEST(stop_during_a_build_step) {
  asb_client *c = NULL;
  REQUIRE(engine_fixture_client(&F, &c) == 0);
  build_call b = {c, write_tdir("slow", "name: stopper\nsteps:\n  - run: sleep 600\n"), -1, ""};
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, do_build, &b) == 0);
  /* the step is running (generous: the build sandbox starts first) */
  int64_t t0 = now_ms();
  while (!step_running() && now_ms() - t0 < 120000) usleep(50000);
  int running = step_running();
  CHECK(running);
  if (!running) fprintf(stderr, "no step seen running; the build: %d %s\n", b.rc, b.msg);
  int64_t ts = now_ms();
  F.keep_state = 1;
  engine_fixture_signal(&F, SIGTERM); /* returns once the engine has exited */
  int64_t took = now_ms() - ts;
  fprintf(stderr, "engine stopped in %lld ms during the step\n", (long long)took);
  CHECK(took < STOP_BOUND_S * 1000);
  pthread_join(th, NULL);
  fprintf(stderr, "the build call: %d %s\n", b.rc, b.msg);
  /* answered before the engine closed its connections: the step failed */
  CHECK_INT(b.rc, ASB_EBUILD);
  CHECK(strstr(b.msg, "run: sleep 600") && strstr(b.msg, "interrupted: the engine is stopping"));
  CHECK(!step_running()); /* the build sandbox was killed with its step */
  CHECK(file_has(LOG, "interrupted: the engine is stopping"));
  asb_client_free(c);
}

/* The build stop_during_an_e2b_builder_build stopped (E2B's ids). */
static char STOPPED_TID[64], STOPPED_BID[64];

/* E2B's builder: its builds run on threads the engine's close waits for.
 * One runs the step, one waits for its turn; the stop ends both. */
TEST(stop_during_an_e2b_builder_build) {
  REQUIRE(launch_logged() == 0);
  asb_client *c = NULL;
  REQUIRE(engine_fixture_client(&F, &c) == 0);
  asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  o.background = 1; /* back once the build has started */
  asb_template_build *b1 = NULL, *b2 = NULL;
  CHECK_RC(asb_templates_build_steps(
               &b1, c, "bstopper",
               "{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"RUN\", \"args\": "
               "[\"sleep 600\"]}]}",
               &o),
           ASB_OK);
  /* the second is sent once the first runs its step, so holds the engine's
   * one-build-at-a-time lock: sent at once, the two builds' threads raced
   * for it, and when the second won, it was built (not "not started") and
   * outlived the stop, which the next test found */
  int64_t t0 = now_ms();
  while (!step_running() && now_ms() - t0 < 120000) usleep(50000);
  CHECK(step_running());
  CHECK_RC(asb_templates_build_steps(
               &b2, c, "bqueued",
               "{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"RUN\", \"args\": "
               "[\"true\"]}]}",
               &o),
           ASB_OK);
  int64_t ts = now_ms();
  F.keep_state = 1;
  engine_fixture_signal(&F, SIGTERM);
  int64_t took = now_ms() - ts;
  fprintf(stderr, "engine stopped in %lld ms during an E2B builder step\n", (long long)took);
  CHECK(took < STOP_BOUND_S * 1000);
  CHECK(!step_running());
  CHECK(file_has(LOG, "template bstopper: build failed (interrupted: the engine is stopping)"));
  CHECK(file_has(LOG, "template bqueued: build not started: the engine is stopping"));
  if (b1) {
    snprintf(STOPPED_TID, sizeof STOPPED_TID, "%s", asb_template_build_template_id(b1));
    snprintf(STOPPED_BID, sizeof STOPPED_BID, "%s", asb_template_build_build_id(b1));
  }
  asb_template_build_free(b1);
  asb_template_build_free(b2);
  asb_client_free(c);
}

TEST(next_engine_has_no_trace_and_rebuilds) {
  REQUIRE(launch_logged() == 0);
  F.keep_state = 0;
  asb_client *c = NULL;
  REQUIRE(engine_fixture_client(&F, &c) == 0);
  CHECK_INT(build_sandboxes_on_disk(), 0);
  asb_template *t = NULL;
  CHECK_RC(asb_templates_get(&t, c, "stopper", NULL), ASB_ENOTFOUND);
  asb_template_free(t);
  t = NULL;
  CHECK_RC(asb_templates_get(&t, c, "bstopper", NULL), ASB_ENOTFOUND);
  asb_template_free(t);
  t = NULL;
  CHECK_RC(asb_templates_get(&t, c, "bqueued", NULL), ASB_ENOTFOUND);
  asb_template_free(t);
  t = NULL;
  CHECK_RC(asb_templates_build(&t, c, write_tdir("quick", "name: stopper\nsteps:\n  - run: true\n"),
                               NULL),
           ASB_OK);
  CHECK(t && !strcmp(asb_template_name(t), "stopper"));
  CHECK(t && asb_template_cached(t) == 0);
  asb_template_free(t);
  CHECK_RC(asb_templates_delete(c, "stopper", NULL), ASB_OK);
  asb_client_free(c);
}

/* A record file into the engine's <state>/builder (0600, as the engine's). */
static void put_record(const char *name, const char *text) {
  char path[300];
  snprintf(path, sizeof path, "%s/builder", F.state);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/builder/%s", F.state, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) fprintf(stderr, "short write\n");
    close(fd);
  }
}

/* E2B's builder API keeps its builds across engine restarts: a ready
 * build's status and log, its alias and tags; the build the earlier stop
 * interrupted is "error" saying so; a build a record says was under way
 * when its engine ended (a crash) comes back "error" naming that; a
 * corrupt record is logged and skipped. */
TEST(builder_builds_outlive_a_restart) {
  asb_client *c = NULL;
  REQUIRE(engine_fixture_client(&F, &c) == 0);
  asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  const char *tags[] = {"v1", NULL};
  o.tags = tags;
  asb_template_build *b = NULL;
  REQUIRE_RC(asb_templates_build_steps(&b, c, "bkept",
                                       "{\"fromTemplate\": \"base\", \"steps\": [{\"type\": "
                                       "\"RUN\", \"args\": [\"echo kept-output\"]}]}",
                                       &o),
             ASB_OK);
  char tid[64], bid[64];
  snprintf(tid, sizeof tid, "%s", asb_template_build_template_id(b));
  snprintf(bid, sizeof bid, "%s", asb_template_build_build_id(b));
  size_t nlog = asb_template_build_log_count(b);
  asb_template_build_free(b);
  b = NULL;
  asb_client_free(c);
  c = NULL;

  F.keep_state = 1;
  engine_fixture_signal(&F, SIGTERM);
  put_record("corruptrecord0000000.json", "{\"version\": 1, \"templateID\": ");
  put_record("crashedbuild00000001.json",
             "{\"version\":1,\"templateID\":\"crashedbuild00000001\",\"name\":\"bcrashed\","
             "\"cpuCount\":2,\"memoryMB\":1024,\"updatedAt\":1764650000000,\"tags\":[],"
             "\"builds\":[{\"buildID\":\"6a0e4a8e-1111-4222-8333-444455556666\",\"status\":"
             "\"building\",\"reason\":null,\"reasonStep\":-1,\"ours\":\"\",\"tags\":[\"default\"],"
             "\"createdAt\":1764650000000,\"updatedAt\":1764650000000,\"finishedAt\":0,"
             "\"logEntries\":[{\"timestamp\":\"2026-12-02T05:00:00.000Z\",\"level\":\"info\","
             "\"message\":\"building\"}]},{\"buildID\":\"7a0e4a8e-1111-4222-8333-444455556666\","
             "\"status\":\"waiting\",\"reasonStep\":-1,\"ours\":\"\",\"tags\":[\"default\"],"
             "\"createdAt\":\"1764650000000\",\"logEntries\":[]}]}");
  REQUIRE(launch_logged() == 0);
  REQUIRE(engine_fixture_client(&F, &c) == 0);

  /* the ready build: status and log as before, alias and tag */
  REQUIRE_RC(asb_templates_build_status(&b, c, tid, bid, 0, NULL), ASB_OK);
  CHECK_STR(asb_template_build_status(b), "ready");
  CHECK_INT((int)asb_template_build_log_count(b), (int)nlog);
  int seen = 0;
  for (size_t i = 0; i < asb_template_build_log_count(b); i++)
    seen |= strstr(asb_template_build_log_message(b, i), "kept-output") != NULL;
  CHECK(seen);
  asb_template_build_free(b);
  b = NULL;
  int exists = 0;
  CHECK_RC(asb_templates_alias_exists(&exists, c, "bkept", NULL), ASB_OK);
  CHECK_INT(exists, 1);
  char *tj = NULL;
  REQUIRE_RC(asb_templates_tags_list(&tj, c, tid, NULL), ASB_OK);
  CHECK(strstr(tj, "\"tag\":\"v1\""));
  asb_free(tj);
  asb_template *t = NULL;
  CHECK_RC(asb_templates_get(&t, c, "bkept:v1", NULL), ASB_OK); /* the tag names its build */
  asb_template_free(t);

  /* the build the earlier stop interrupted */
  REQUIRE(STOPPED_TID[0]);
  REQUIRE_RC(asb_templates_build_status(&b, c, STOPPED_TID, STOPPED_BID, 0, NULL), ASB_OK);
  CHECK_STR(asb_template_build_status(b), "error");
  CHECK(asb_template_build_error(b) &&
        strstr(asb_template_build_error(b), "the engine is stopping"));
  asb_template_build_free(b);
  b = NULL;

  /* the one a crash left "building" */
  REQUIRE_RC(asb_templates_build_status(&b, c, "crashedbuild00000001",
                                        "6a0e4a8e-1111-4222-8333-444455556666", 0, NULL),
             ASB_OK);
  CHECK_STR(asb_template_build_status(b), "error");
  CHECK(asb_template_build_error(b) &&
        strstr(asb_template_build_error(b), "the engine stopped while this build ran"));
  CHECK_INT((int)asb_template_build_log_count(b), 2);
  asb_template_build_free(b);
  b = NULL;
  /* one requested but never triggered stays waiting (its times as the
   * engine writes them: 0 left out) */
  REQUIRE_RC(asb_templates_build_status(&b, c, "crashedbuild00000001",
                                        "7a0e4a8e-1111-4222-8333-444455556666", 0, NULL),
             ASB_OK);
  CHECK_STR(asb_template_build_status(b), "waiting");
  asb_template_build_free(b);
  b = NULL;

  /* the corrupt record: skipped, named in the log, left for a look */
  CHECK(file_has(LOG, "builder: record corruptrecord0000000.json skipped"));
  CHECK_RC(asb_templates_build_status(&b, c, "corruptrecord0000000", "x", 0, NULL), ASB_ENOTFOUND);
  asb_template_build_free(b);
  CHECK_RC(asb_templates_delete(c, "bkept", NULL), ASB_OK);
  asb_client_free(c);
  F.keep_state = 0;
}

int main(void) {
  snprintf(WORK, sizeof WORK, "/tmp/asb-bstop-%d", (int)getpid());
  snprintf(LOG, sizeof LOG, "%s/engine.log", WORK);
  mkdir(WORK, 0755);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", WORK);
  /* engine_fixture_start's set-up (reaper, at-exit stop), then a restart
   * with the log redirected, on the same state dir and cgroup name */
  int ok = engine_fixture_start(&F, "bstop") == 0;
  if (ok) {
    F.keep_state = 1;
    engine_fixture_signal(&F, SIGTERM);
    ok = launch_logged() == 0;
  }
  if (!ok) {
    fprintf(stderr, "cannot start the engine\n");
    F.keep_state = 0;
    engine_fixture_stop(&F);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", WORK);
    return 1;
  }
  RUN(stop_during_a_build_step);
  RUN(stop_during_an_e2b_builder_build);
  RUN(next_engine_has_no_trace_and_rebuilds);
  RUN(builder_builds_outlive_a_restart);
  F.keep_state = 0;
  engine_fixture_stop(&F);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", WORK);
  TEST_MAIN_END();
}
