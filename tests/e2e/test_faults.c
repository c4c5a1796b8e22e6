/* Faults: kill -9 of the engine while sandboxes are being created and while
 * output streams, then a restart on the same state: every sandbox it still
 * lists works, the rest are reported gone, and once they are killed the
 * machine is as it was (mounts, sandbox loop devices, cgroups, processes,
 * state). Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static atomic_int stop_flag;

static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, f)) n++;
  fclose(f);
  return n;
}

static int count_procs(const char *needle, int verbose);
static int count_matching_procs(const char *needle) { return count_procs(needle, 1); }
static int count_matching_procs_quiet(const char *needle) { return count_procs(needle, 0); }

static int count_procs(const char *needle, int verbose) {
  DIR *d = opendir("/proc");
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    char path[300], buf[4096] = "";
    snprintf(path, sizeof path, "/proc/%s/cgroup", de->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    buf[got] = 0;
    fclose(f);
    if (strstr(buf, needle) && atoi(de->d_name) != F.pid) {
      char cmd[300] = "", cpath[300];
      snprintf(cpath, sizeof cpath, "/proc/%s/cmdline", de->d_name);
      FILE *cf = fopen(cpath, "r");
      if (cf) {
        size_t k = fread(cmd, 1, sizeof cmd - 1, cf);
        cmd[k] = 0;
        fclose(cf);
      }
      char st[512] = "", spath[300];
      snprintf(spath, sizeof spath, "/proc/%s/stat", de->d_name);
      FILE *sf = fopen(spath, "r");
      if (sf) {
        if (!fgets(st, sizeof st, sf)) st[0] = 0;
        fclose(sf);
      }
      if (verbose) printf("  left in the engine's cgroups: pid %s (%s) %s", de->d_name, cmd, st);
      n++;
    }
  }
  if (d) closedir(d);
  return n;
}

static int count_cgroup_dirs(void) {
  char cmd[256];
  snprintf(cmd, sizeof cmd,
           "find /sys/fs/cgroup -mindepth 2 -type d -path '*%s/*' 2>/dev/null | wc -l",
           F.cgroup);
  FILE *p = popen(cmd, "r");
  int n = -1;
  if (p && fscanf(p, "%d", &n) != 1) n = -1;
  if (p) pclose(p);
  return n;
}

static int count_sandbox_loops(void) {
  DIR *d = opendir("/sys/block");
  char want[256];
  snprintf(want, sizeof want, "%s/sandboxes/", F.state);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (strncmp(de->d_name, "loop", 4) != 0) continue;
    char path[512], back[512] = "";
    snprintf(path, sizeof path, "/sys/block/%s/loop/backing_file", de->d_name);
    FILE *f = fopen(path, "r");
    if (f && fgets(back, sizeof back, f) && strncmp(back, want, strlen(want)) == 0) n++;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

static void *creator(void *arg) {
  (void)arg;
  asb_client *c = NULL;
  if (engine_fixture_client(&F, &c)) return NULL;
  while (!atomic_load(&stop_flag)) {
    asb_sandbox *sb = NULL;
    if (asb_sandbox_create(&sb, c, NULL) == ASB_OK) asb_sandbox_free(sb);
    else usleep(20000);
  }
  asb_client_free(c);
  return NULL;
}

static void *streamer(void *arg) {
  asb_sandbox *sb = arg;
  asb_command_result *r = NULL;
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.timeout_ms = -1;
  /* Fails when the engine dies under it: that is the point. */
  asb_commands_run(&r, sb, "for i in $(seq 1 400); do echo line $i; sleep 0.01; done", &o);
  asb_command_result_free(r);
  return NULL;
}

TEST(kill_9_during_creates_and_streams) {
  int mounts0 = count_lines("/proc/self/mountinfo");
  asb_client *c = NULL;
  REQUIRE_RC(engine_fixture_client(&F, &c), ASB_OK);
  asb_sandbox *streaming = NULL;
  REQUIRE_RC(asb_sandbox_create(&streaming, c, NULL), ASB_OK);
  char streaming_id[64];
  snprintf(streaming_id, sizeof streaming_id, "%s", asb_sandbox_id(streaming));
  pthread_t t[3];
  pthread_create(&t[0], NULL, streamer, streaming);
  pthread_create(&t[1], NULL, creator, NULL);
  pthread_create(&t[2], NULL, creator, NULL);
  usleep(1500000);
  engine_fixture_signal(&F, SIGKILL); /* mid-create, mid-stream */
  atomic_store(&stop_flag, 1);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);

  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  /* Every sandbox the new engine lists works; the streaming one survived.
   * All pages first (more than a page's 100 may have been made), then each. */
  char **ids = NULL;
  size_t n_ids = 0;
  char *token = NULL;
  do {
    asb_sandbox_list_options lo = ASB_SANDBOX_LIST_OPTIONS_INIT;
    lo.next_token = token;
    asb_sandbox_page *p = NULL;
    int rc = asb_sandbox_list(&p, c, &lo);
    free(token);
    token = NULL;
    CHECK_RC(rc, ASB_OK);
    if (rc != ASB_OK) break;
    for (size_t i = 0; i < asb_sandbox_page_count(p); i++) {
      char **nv = realloc(ids, (n_ids + 1) * sizeof *nv);
      REQUIRE(nv != NULL);
      ids = nv;
      ids[n_ids++] = strdup(asb_sandbox_info_id(asb_sandbox_page_get(p, i)));
    }
    const char *next = asb_sandbox_page_next_token(p);
    if (next && *next) token = strdup(next);
    asb_sandbox_page_free(p);
  } while (token);
  int found_streaming = 0;
  printf("  after the crash the engine lists %zu sandbox(es)\n", n_ids);
  for (size_t i = 0; i < n_ids; i++) {
    const char *id = ids[i];
    if (strcmp(id, streaming_id) == 0) found_streaming = 1;
    asb_sandbox *sb = NULL;
    REQUIRE_RC(asb_sandbox_connect(&sb, c, id, 60000, NULL), ASB_OK);
    asb_command_result *r = NULL;
    CHECK_RC(asb_commands_run(&r, sb, "echo alive", NULL), ASB_OK);
    if (r) CHECK_STR(asb_command_result_stdout(r, NULL), "alive\n");
    asb_command_result_free(r);
    CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
    asb_sandbox_free(sb);
  }
  for (size_t i = 0; i < n_ids; i++) free(ids[i]);
  free(ids);
  CHECK(found_streaming);
  asb_sandbox_free(streaming);
  asb_client_free(c);

  /* Nothing of the killed or half-made sandboxes is left. */
  CHECK_INT(count_sandbox_loops(), 0);
  CHECK_INT(count_cgroup_dirs(), 0);
  /* Killed inits are reaped asynchronously (by the engine, or by this
   * test standing in for PID 1): give them a moment, then none may stay. */
  for (int i = 0; i < 100 && count_matching_procs_quiet(F.cgroup) > 0; i++) usleep(100000);
  CHECK_INT(count_matching_procs(F.cgroup), 0);
  CHECK_INT(count_lines("/proc/self/mountinfo"), mounts0);
  char sdir[256];
  snprintf(sdir, sizeof sdir, "%s/sandboxes", F.state);
  DIR *d = opendir(sdir);
  int left = 0;
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.') {
      left++;
      char cmd[600];
      snprintf(cmd, sizeof cmd, "ls -la '%s/%s'; cat '%s/%s'/*.json '%s/%s'/rec* 2>/dev/null; "
               "find /sys/fs/cgroup -type d -path '*%s/*' 2>/dev/null | head -3",
               sdir, de->d_name, sdir, de->d_name, sdir, de->d_name, F.cgroup);
      printf("  left: %s\n", de->d_name);
      if (system(cmd) != 0) printf("  (cannot list it)\n");
    }
  if (d) closedir(d);
  CHECK_INT(left, 0);
}

TEST(two_hundred_create_kill_cycles_leave_nothing) {
  int mounts0 = count_lines("/proc/self/mountinfo");
  asb_client *c = NULL;
  REQUIRE_RC(engine_fixture_client(&F, &c), ASB_OK);
  for (int i = 0; i < 200; i++) {
    asb_sandbox *sb = NULL;
    REQUIRE_RC(asb_sandbox_create(&sb, c, NULL), ASB_OK);
    REQUIRE_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
    asb_sandbox_free(sb);
  }
  asb_client_free(c);
  CHECK_INT(count_sandbox_loops(), 0);
  CHECK_INT(count_cgroup_dirs(), 0);
  /* Killed inits are reaped asynchronously (by the engine, or by this
   * test standing in for PID 1): give them a moment, then none may stay. */
  for (int i = 0; i < 100 && count_matching_procs_quiet(F.cgroup) > 0; i++) usleep(100000);
  CHECK_INT(count_matching_procs(F.cgroup), 0);
  CHECK_INT(count_lines("/proc/self/mountinfo"), mounts0);
}

int main(void) {
  if (engine_fixture_start(&F, "faults") != 0) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  RUN(kill_9_during_creates_and_streams);
  RUN(two_hundred_create_kill_cycles_leave_nothing);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
