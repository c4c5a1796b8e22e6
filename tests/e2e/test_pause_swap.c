/* e2e.pause_swap: --pause-swap, a pause with memory that frees the RAM.
 * The engine keeps <state>/pause.swap active; a sandbox holding 256 MiB of
 * random data written by a process is paused with memory: its cgroup's
 * memory use drops by most of that and its swap use grows by it; resumed,
 * the same process reads its data back intact (sha256). A running
 * sandbox's cgroups never swap (v2 memory.swap.max 0, v1
 * memory.swappiness 0). A paused sandbox and the file outlive an engine
 * stopped without --kill-on-exit; a file an engine left active (SIGKILL)
 * is taken over by the next engine with the option and swapped off and
 * removed by one without, the pages back in their sandbox's RAM. Without
 * the option a memory pause keeps the RAM. --pause-swap-prefetch reads
 * it back at resume, before it is touched. What is swapped is read from
 * the sandbox's memory cgroup, not from the file's usage in /proc/swaps:
 * with another swap device active (the host's, another engine's) the
 * kernel may put the pages there; the checks that need them in our file
 * run only when it is the only one. The C ABI's swap getters
 * report the figures of a memory pause and "none" (-1) otherwise (running,
 * a pause without memory, an engine without the option; the RAM before the
 * pause once a next engine adopted it). Runs as
 * root; cleans up (the engines' --kill-on-exit, and the swap file swapped
 * off here) also when a check fails.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/swap.h>

#include "asb_testing.h"
#include "engine_http.h"

static engine_fixture F;
static asb_client *C;
static const char *const k_swap_args[] = {"--pause-swap", "640M", NULL};
static const char *const k_prefetch_args[] = {"--pause-swap", "640M", "--pause-swap-prefetch",
                                              NULL};
static char swap_file[200];

static long api(const char *method, const char *path, const char *json, char **body) {
  return engine_api(&F, method, path, json, body);
}

static long sbx_post(const char *id, const char *action, const char *json) {
  return engine_sandbox_post(&F, id, action, json, 300);
}

/* The sandbox's memory cgroup dir on the host, and whether it is v1's. */
static int sandbox_cgroup(const char *id, char *out, size_t len) {
  return engine_fixture_memcg(&F, id, out, len);
}

static long long read_num(const char *dir, const char *file) {
  return asbt_read_num(dir, file);
}

/* "key N" of the dir's memory.stat. */
static long long stat_key(const char *dir, const char *key) {
  char p[800], line[256];
  snprintf(p, sizeof p, "%s/memory.stat", dir);
  FILE *f = fopen(p, "r");
  long long v = -1;
  size_t kl = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ' ') v = atoll(line + kl + 1);
  if (f) fclose(f);
  return v;
}

typedef struct {
  char dir[600];
  int v1;
} memcg;

static long long mem_used(const memcg *m) {
  return read_num(m->dir, m->v1 ? "memory.usage_in_bytes" : "memory.current");
}

/* v1: memsw minus memory, two page counters exact when read (memory.stat's
 * total_swap lags the kernel's lazily flushed statistics by up to ~2 s) */
static long long swap_used(const memcg *m) {
  if (!m->v1) return read_num(m->dir, "memory.swap.current");
  long long mem = read_num(m->dir, "memory.usage_in_bytes");
  long long memsw = read_num(m->dir, "memory.memsw.usage_in_bytes");
  if (memsw < 0) return stat_key(m->dir, "total_swap");
  return memsw > mem ? memsw - mem : 0;
}

/* Whether the workload cgroup (where the user's processes are) may swap:
 * v1 memory.swappiness, v2 memory.swap.max ("max" reads as -1 here). */
static long long workload_swap_knob(const memcg *m) {
  char d[700];
  snprintf(d, sizeof d, "%s/workload", m->dir);
  return read_num(d, m->v1 ? "memory.swappiness" : "memory.swap.max");
}

/* Used bytes of our swap file in /proc/swaps; -1 if it is not active. */
static long long swap_file_used(void) {
  FILE *f = fopen("/proc/swaps", "r");
  char line[600], name[400];
  long long used = -1, size = 0, u = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "%399s %*s %lld %lld", name, &size, &u) == 3 && !strcmp(name, swap_file))
      used = u << 10;
  if (f) fclose(f);
  return used;
}

/* Whether a swap device other than our file is active (the host's, another
 * engine's): the kernel spreads swapped pages over all of them by priority,
 * and ours, swapped on last at the default, comes after the others. Then
 * our file's own usage says nothing about our sandboxes (other engines'
 * and the host's pages may be in it, ours elsewhere): the checks read the
 * sandbox's memory cgroup instead, and what needs the pages to be in our
 * file (a swapoff of it brings them back into RAM) is checked only when
 * it is the only one. */
static int other_swap_active(void) {
  FILE *f = fopen("/proc/swaps", "r");
  char line[600], name[400];
  int other = 0;
  if (f && !fgets(line, sizeof line, f)) other = 0; /* the header */
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "%399s", name) == 1 && strcmp(name, swap_file) != 0) other = 1;
  if (f) fclose(f);
  return other;
}

/* A process holding `mib` MiB of random bytes: it writes their sha256 to
 * /tmp/sum, then once /tmp/go exists hashes them again into /tmp/sum2. */
static int start_holder(asb_sandbox *sb, int mib) {
  char cmd[600];
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import os, hashlib, time\n"
           "n = %d << 20; b = bytearray(n)\n"
           "for i in range(0, n, 1 << 20): b[i:i + (1 << 20)] = os.urandom(1 << 20)\n"
           "open('/tmp/sum', 'w').write(hashlib.sha256(b).hexdigest())\n"
           "while not os.path.exists('/tmp/go'): time.sleep(0.05)\n"
           "open('/tmp/sum2', 'w').write(hashlib.sha256(b).hexdigest())\n"
           "time.sleep(100000)\"",
           mib);
  return asbt_start(NULL, sb, NULL, cmd);
}

#define MIB (1ll << 20)

/* A sandbox for 300 s (autoPause as asked) with a holder of `mib` MiB
 * that has written /tmp/sum: the sandbox (NULL on a failure), the sum in
 * *sum (malloc'd) and, with m, its memory cgroup in *m. */
static asb_sandbox *holding_sandbox(int mib, int auto_pause, char **sum, memcg *m) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  o.auto_pause = auto_pause;
  *sum = NULL;
  CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  if (!sb) return NULL;
  CHECK_RC(start_holder(sb, mib), ASB_OK);
  if (!(*sum = asbt_wait_file(sb, "/tmp/sum", 64))) {
    ASBT_FAIL("the holder of %d MiB wrote no /tmp/sum", mib);
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
    return NULL;
  }
  if (m) m->v1 = sandbox_cgroup(asb_sandbox_id(sb), m->dir, sizeof m->dir);
  return sb;
}

/* Told to (/tmp/go), the holder hashes its bytes again: the same sum as
 * when it wrote them, its memory intact. */
static void check_intact(asb_sandbox *sb, const char *sum) {
  REQUIRE_RC(asb_files_write(NULL, sb, "/tmp/go", "", 0, NULL), ASB_OK);
  char *sum2 = asbt_wait_file(sb, "/tmp/sum2", 64);
  CHECK(sum2 != NULL);
  if (sum2) CHECK_STR(sum2, sum);
  free(sum2);
}

/* GET /sandboxes/{id}'s swap.swappedBytes (ours), -1 without one. */
static long long reported_swap(const char *id) {
  char p[128], *b = NULL;
  snprintf(p, sizeof p, "/sandboxes/%s", id);
  const char *key = "\"swap\":{\"swappedBytes\":";
  long long v = -1;
  if (api("GET", p, NULL, &b) == 200 && b && strstr(b, key))
    v = atoll(strstr(b, key) + strlen(key));
  free(b);
  return v;
}

/* The option's swap file, and a memory pause that moves 256 MiB out to it
 * and a resume that brings them back intact. */
TEST(memory_pause_swaps_out_and_resume_faults_back) {
  struct stat st;
  REQUIRE(stat(swap_file, &st) == 0);
  CHECK_INT(st.st_mode & 07777, 0600);
  CHECK_INT(st.st_uid, 0);
  REQUIRE(swap_file_used() >= 0); /* active */
  char *sum = NULL;
  memcg m;
  asb_sandbox *sb = holding_sandbox(256, 1, &sum, &m);
  REQUIRE(sb != NULL);
  const char *id = asb_sandbox_id(sb);
  CHECK_INT(workload_swap_knob(&m), 0); /* running: never swaps */
  long long before = mem_used(&m), swap0 = swap_used(&m);
  CHECK(before > 256 * MIB);
  CHECK(swap0 >= 0 && swap0 < 16 * MIB);

  int alone = !other_swap_active(); /* ours the only swap while it pauses */
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  alone = alone && !other_swap_active();
  long long after = mem_used(&m), swap1 = swap_used(&m);
  fprintf(stderr, "memory %lld -> %lld MiB, swap %lld -> %lld MiB\n", before / MIB, after / MIB,
          swap0 / MIB, swap1 / MIB);
  CHECK(after >= 0 && after < before - 200 * MIB); /* most of it is out of RAM */
  CHECK(swap1 > swap0 + 200 * MIB);                /* in swap */
  if (alone) CHECK(swap_file_used() >= 200 * MIB); /* in ours, the only one */
  CHECK(workload_swap_knob(&m) != 0);              /* paused: it may */
  CHECK(reported_swap(id) > 200 * MIB);

  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  CHECK_INT(workload_swap_knob(&m), 0); /* running again: no more swapping */
  check_intact(sb, sum);                /* the same process, its memory intact */
  CHECK(swap_used(&m) < swap1);         /* it faulted back what it read */
  CHECK_INT(reported_swap(id), -1);     /* running: nothing to report */
  /* autoPause at the end of its lifetime swaps it out the same way */
  char p[128];
  snprintf(p, sizeof p, "/sandboxes/%s/timeout", id);
  CHECK_INT(api("POST", p, "{\"timeout\": 1}", NULL), 204);
  long long out = -1;
  WAIT_UNTIL((out = reported_swap(id)) > 200 * MIB, ASBT_DEADLINE_MS);
  CHECK(out > 200 * MIB);
  CHECK(mem_used(&m) < before - 200 * MIB);
  free(sum);
  asbt_kill(sb);
}

/* The same figures through the C ABI (asb_sandbox_get_info's swap
 * getters): a memory pause of 256 MiB shows more than 200 MiB swapped out
 * of the RAM it had; resumed, or paused without memory, there is nothing
 * to report: "none" (-1), not 0. */
TEST(info_getters_report_the_swap) {
  char *sum = NULL;
  asb_sandbox *sb = holding_sandbox(256, 0, &sum, NULL);
  REQUIRE(sb != NULL);
  free(sum);
  asb_sandbox_info *i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_info_swapped_bytes(i), -1); /* running */
  CHECK_INT(asb_sandbox_info_resident_bytes(i), -1);
  CHECK_INT(asb_sandbox_info_resident_before_bytes(i), -1);
  asb_sandbox_info_free(i);
  CHECK_INT(asb_sandbox_pause(sb, NULL), 1);
  i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  long long sw = asb_sandbox_info_swapped_bytes(i), res = asb_sandbox_info_resident_bytes(i),
            before = asb_sandbox_info_resident_before_bytes(i);
  fprintf(stderr, "info: swapped %lld MiB, resident %lld MiB (before %lld MiB)\n", sw / MIB,
          res / MIB, before / MIB);
  CHECK_STR(asb_sandbox_info_state(i), "paused");
  CHECK_STR(asb_sandbox_info_pause_mode(i), "memory");
  CHECK(sw > 200 * MIB);
  CHECK(before > 256 * MIB);
  CHECK(res >= 0 && res < before - 200 * MIB);
  asb_sandbox_info_free(i);

  CHECK_RC(asb_sandbox_resume(sb, 300000, NULL), ASB_OK);
  i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_info_state(i), "running");
  CHECK(asb_sandbox_info_pause_mode(i) == NULL);
  CHECK_INT(asb_sandbox_info_swapped_bytes(i), -1);
  CHECK_INT(asb_sandbox_info_resident_bytes(i), -1);
  CHECK_INT(asb_sandbox_info_resident_before_bytes(i), -1);
  asb_sandbox_info_free(i);

  CHECK_INT(asb_sandbox_pause_memory(sb, 0, NULL), 1); /* nothing frozen, nothing swapped */
  i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_info_pause_mode(i), "filesystem");
  CHECK_INT(asb_sandbox_info_swapped_bytes(i), -1);
  CHECK_INT(asb_sandbox_info_resident_before_bytes(i), -1);
  asb_sandbox_info_free(i);
  asbt_kill(sb);
}

/* Without --pause-swap a memory pause has no swap figures: "none". */
TEST(info_getters_without_the_option_say_none) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  CHECK_INT(asb_sandbox_pause(sb, NULL), 1);
  asb_sandbox_info *i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_info_pause_mode(i), "memory");
  CHECK_INT(asb_sandbox_info_swapped_bytes(i), -1);
  CHECK_INT(asb_sandbox_info_resident_bytes(i), -1);
  CHECK_INT(asb_sandbox_info_resident_before_bytes(i), -1);
  asb_sandbox_info_free(i);
  asbt_kill(sb);
}

/* An engine stopped without --kill-on-exit leaves a paused sandbox's pages
 * in the file, active; the next engine takes both over and resumes it with
 * its memory intact. */
TEST(paused_sandbox_and_its_swap_outlive_an_engine_stop) {
  engine_fixture_signal(&F, SIGTERM);
  REQUIRE(engine_fixture_launch(&F, 0) == 0); /* stops leaving sandboxes */
  char *sum = NULL;
  asb_sandbox *sb = holding_sandbox(64, 0, &sum, NULL);
  REQUIRE(sb != NULL);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  int alone = !other_swap_active();
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  alone = alone && !other_swap_active();
  CHECK(reported_swap(id) > 48 * MIB);
  memcg m;
  m.v1 = sandbox_cgroup(id, m.dir, sizeof m.dir);
  engine_fixture_signal(&F, SIGTERM);
  CHECK(swap_file_used() >= 0);                  /* kept active */
  CHECK(swap_used(&m) > 48 * MIB);               /* its pages still out of RAM */
  if (alone) CHECK(swap_file_used() > 48 * MIB); /* in ours */
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  CHECK(reported_swap(id) > 48 * MIB);
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  CHECK_INT(workload_swap_knob(&m), 0);
  check_intact(sb, sum);
  free(sum);
  asbt_kill(sb);
}

/* A sandbox paused by an engine and adopted by the next: its swap figures
 * through the C ABI still, but what it held in RAM before the pause is
 * not known to the new engine: -1, not 0. */
TEST(info_getters_after_an_engine_restart) {
  engine_fixture_signal(&F, SIGTERM);
  REQUIRE(engine_fixture_launch(&F, 0) == 0); /* stops leaving sandboxes */
  char *sum = NULL;
  asb_sandbox *sb = holding_sandbox(64, 0, &sum, NULL);
  REQUIRE(sb != NULL);
  free(sum);
  CHECK_INT(asb_sandbox_pause(sb, NULL), 1);
  asb_sandbox_info *i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  CHECK(asb_sandbox_info_swapped_bytes(i) > 48 * MIB);
  CHECK(asb_sandbox_info_resident_before_bytes(i) > 64 * MIB);
  asb_sandbox_info_free(i);
  engine_fixture_signal(&F, SIGTERM);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  i = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&i, sb, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_info_pause_mode(i), "memory");
  CHECK(asb_sandbox_info_swapped_bytes(i) > 48 * MIB);
  CHECK(asb_sandbox_info_resident_bytes(i) >= 0);
  CHECK_INT(asb_sandbox_info_resident_before_bytes(i), -1);
  asb_sandbox_info_free(i);
  asbt_kill(sb);
}

/* A file an engine left active (it was killed) is the next engine's: taken
 * over with the option, swapped off and removed without it, the pages of
 * a sandbox paused in it back in its RAM, its memory intact. */
TEST(left_active_swap_file_taken_over_or_removed) {
  REQUIRE(swap_file_used() >= 0);
  char *sum = NULL;
  asb_sandbox *sb = holding_sandbox(64, 0, &sum, NULL);
  REQUIRE(sb != NULL);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  /* Only ours active while it pauses: the sandbox's pages are all in it,
   * and the swapoff below must bring them back into RAM. Else some may be
   * in another device, which stays (see other_swap_active). */
  int only_ours = !other_swap_active();
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  only_ours = only_ours && !other_swap_active();
  memcg m;
  m.v1 = sandbox_cgroup(id, m.dir, sizeof m.dir);
  CHECK(swap_used(&m) > 48 * MIB);
  engine_fixture_signal(&F, SIGKILL);
  CHECK(swap_file_used() >= 0); /* nobody swapped it off */
  CHECK(swap_used(&m) > 48 * MIB);
  if (only_ours) CHECK(swap_file_used() > 48 * MIB);
  F.extra_args = k_swap_args;
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  CHECK(swap_file_used() >= 0); /* taken over, active */
  CHECK(swap_used(&m) > 48 * MIB);
  CHECK(reported_swap(id) > 48 * MIB);
  engine_fixture_signal(&F, SIGKILL);
  F.extra_args = NULL;
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  struct stat st;
  CHECK_INT(swap_file_used(), -1);
  CHECK(stat(swap_file, &st) != 0);
  /* another device switched on since would take the pages the swapoff
   * brought back (the paused sandbox may still swap) */
  only_ours = only_ours && !other_swap_active();
  if (only_ours) {
    CHECK(swap_used(&m) < 16 * MIB); /* back in RAM, still paused */
    CHECK(mem_used(&m) > 48 * MIB);
  } else {
    fprintf(stderr, "another swap device is active: not checking that all came back\n");
  }
  /* no longer allowed to swap as a paused one is (v1 100, v2 max) */
  CHECK(workload_swap_knob(&m) != (m.v1 ? 100 : -1));
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  check_intact(sb, sum);
  free(sum);
  asbt_kill(sb);
}

/* Without the option a memory pause only freezes: the RAM stays in use. */
TEST(without_the_option_a_memory_pause_keeps_the_ram) {
  char *sum = NULL;
  memcg m;
  asb_sandbox *sb = holding_sandbox(64, 0, &sum, &m);
  REQUIRE(sb != NULL);
  free(sum);
  const char *id = asb_sandbox_id(sb);
  long long before = mem_used(&m);
  CHECK(before > 64 * MIB);
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  CHECK(mem_used(&m) > 64 * MIB);
  CHECK(swap_used(&m) < 16 * MIB);
  char p[128], *b = NULL;
  snprintf(p, sizeof p, "/sandboxes/%s", id);
  CHECK_INT(api("GET", p, NULL, &b), 200);
  CHECK(b && strstr(b, "\"pauseMode\":\"memory\"") && !strstr(b, "\"swap\""));
  free(b);
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 60}"), 201);
  asbt_kill(sb);
}

/* --pause-swap-prefetch: the resume starts reading the memory back; it
 * returns to RAM while the process touches none of it (it only polls for
 * /tmp/go), intact. */
TEST(prefetch_reads_it_back_before_it_is_touched) {
  char *sum = NULL;
  memcg m;
  asb_sandbox *sb = holding_sandbox(128, 0, &sum, &m);
  REQUIRE(sb != NULL);
  const char *id = asb_sandbox_id(sb);
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  long long low = mem_used(&m);
  CHECK(swap_used(&m) > 100 * MIB);
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  long long now = low;
  WAIT_UNTIL((now = mem_used(&m)) > low + 100 * MIB, ASBT_DEADLINE_MS);
  CHECK(now > low + 100 * MIB);
  check_intact(sb, sum);
  free(sum);
  asbt_kill(sb);
}

/* Should a check fail with the file active and the engine gone (SIGKILL),
 * nothing of it outlives the test. */
static void swap_file_off(void) {
  if (swap_file[0] && swap_file_used() >= 0 && swapoff(swap_file) != 0)
    fprintf(stderr, "swapoff %s: %s\n", swap_file, strerror(errno));
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (engine_fixture_start_args(&F, "e2e-pswap", k_swap_args) != 0 ||
      engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine (%s --pause-swap)\n", ASB_ENGINE_BIN);
    engine_fixture_stop(&F);
    return 1;
  }
  snprintf(swap_file, sizeof swap_file, "%s/pause.swap", F.state);
  atexit(swap_file_off); /* runs before the fixture's own exit handler */
  RUN(memory_pause_swaps_out_and_resume_faults_back);
  RUN(info_getters_report_the_swap);
  RUN(paused_sandbox_and_its_swap_outlive_an_engine_stop);
  RUN(info_getters_after_an_engine_restart);
  RUN(left_active_swap_file_taken_over_or_removed);
  asb_client_free(C);
  C = NULL;
  if (F.pid > 0 && engine_fixture_client(&F, &C) == ASB_OK) {
    RUN(without_the_option_a_memory_pause_keeps_the_ram);
    RUN(info_getters_without_the_option_say_none);
  }
  engine_fixture_signal(&F, SIGTERM);
  F.extra_args = k_prefetch_args;
  if (engine_fixture_launch(&F, 1) == 0) RUN(prefetch_reads_it_back_before_it_is_touched);
  asb_client_free(C);
  engine_fixture_stop(&F);
  swap_file_off();
  curl_global_cleanup();
  TEST_MAIN_END();
}
