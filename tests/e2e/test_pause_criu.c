/* e2e.pause_criu: --pause-criu, a pause with memory written to the
 * sandbox's disk by CRIU. A python process in the sandbox holds 64 MiB of
 * random bytes and appends a counter to a file; paused, the sandbox has no
 * process on the host and no memory cgroup (its RAM is freed), the images
 * are root's in its state dir; resumed, the same process (same pid inside)
 * goes on counting where it was and hashes its bytes to the same sum, envd
 * runs commands and serves files, a server of the sandbox answers on its
 * port URL. A sandbox so paused survives an engine kill -9 and a "host
 * reboot" (its runtime record's boot id rewritten, as e2e.pause does),
 * and a restored one is adopted by the next engine like any running one;
 * a checkpoint that cannot be restored boots the sandbox on its files;
 * autoPause checkpoints and traffic to a port restores (autoResume);
 * streams open at the pause (a command's output, a file watch) end and
 * the checkpoint is made; a code interpreter's kernel keeps its state.
 * net.pause_criu runs it with the default network in the closed test
 * topology: the restored sandbox reaches the test internet again.
 * Skips (77, saying why) only when no criu binary is found: $ASB_CRIU,
 * else /var/cache/agent-sandbox/criu/bin/criu (scripts/build-criu.sh).
 * Runs as root; the engine fixture cleans up (--kill-on-exit, state dir)
 * also when a check fails.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <sys/stat.h>

#include "criu_fixture.h"

static engine_fixture F;
static asb_client *C;

/* A request to the engine's API (host NULL) or, with host, to the router. */
static long http(const char *method, const char *path, const char *json, const char *host,
                 char **body) {
  char hh[200];
  snprintf(hh, sizeof hh, "Host: %s", host ? host : "");
  const char *const hl[] = {hh, NULL};
  engine_req r = {.json = json, .api_key = 1, .headers = host ? hl : NULL, .timeout_s = 300};
  return engine_http(&F, method, path, &r, body);
}

static long sbx_post(const char *id, const char *action, const char *json) {
  return engine_sandbox_post(&F, id, action, json, 300);
}

/* pauseMode of GET /sandboxes/{id} ("" if none) into out. */
static const char *pause_mode(const char *id, char out[32]) {
  char p[128], *b = NULL;
  snprintf(p, sizeof p, "/sandboxes/%s", id);
  out[0] = 0;
  const char *key = "\"pauseMode\":\"";
  if (http("GET", p, NULL, NULL, &b) == 200 && b && strstr(b, key))
    sscanf(strstr(b, key) + strlen(key), "%31[^\"]", out);
  free(b);
  return out;
}

/* The last number of /tmp/count, and whether the file counts 0, 1, 2...
 * without a gap or a restart (-1: unreadable). */
static long last_count(asb_sandbox *sb, int *in_order) {
  char *d = NULL;
  size_t n = 0;
  long last = -1;
  *in_order = 1;
  if (asb_files_read(&d, &n, sb, "/tmp/count", NULL) != ASB_OK) {
    asb_free(d);
    return -1;
  }
  char *s = strndup(d, n);
  asb_free(d);
  for (char *save = NULL, *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    long v = atol(l);
    if (v != last + 1) *in_order = 0;
    last = v;
  }
  free(s);
  return last;
}

/* Waits until the counter is past `than`. */
static long count_past(asb_sandbox *sb, long than, int *in_order) {
  long v = -1;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000))
    if ((v = last_count(sb, in_order)) > than) break;
  return v;
}

/* The holder: 64 MiB of random bytes (their sha256 in /tmp/sum, its pid
 * in /tmp/pid), a counter appended to /tmp/count every 50 ms; /tmp/go
 * makes it hash them again into /tmp/sum2 (and its pid into /tmp/pid2). */
static int start_holder(asb_sandbox *sb) {
  const char *cmd =
      "python3 -c \"import os, hashlib, time\n"
      "n = 64 << 20; b = bytearray(n)\n"
      "for i in range(0, n, 1 << 20): b[i:i + (1 << 20)] = os.urandom(1 << 20)\n"
      "open('/tmp/pid', 'w').write(str(os.getpid()))\n"
      "open('/tmp/sum', 'w').write(hashlib.sha256(b).hexdigest())\n"
      "i = 0\n"
      "while True:\n"
      "  f = open('/tmp/count', 'a'); f.write('%d\\n' % i); f.close(); i += 1\n"
      "  if os.path.exists('/tmp/go'):\n"
      "    os.unlink('/tmp/go')\n"
      "    open('/tmp/pid2', 'w').write(str(os.getpid()))\n"
      "    open('/tmp/sum2.new', 'w').write(hashlib.sha256(b).hexdigest())\n"
      "    os.rename('/tmp/sum2.new', '/tmp/sum2')\n"
      "  time.sleep(0.05)\"";
  return criu_fixture_spawn(sb, NULL, cmd);
}

/* The holder hashes its bytes again: the sum, or NULL. */
static char *rehash(asb_sandbox *sb) {
  asb_files_remove(sb, "/tmp/sum2", NULL);
  if (asb_files_write(NULL, sb, "/tmp/go", "", 0, NULL) != ASB_OK) return NULL;
  return asbt_wait_file(sb, "/tmp/sum2", 64);
}

/* Bytes of memory the sandbox's memory cgroup uses (0 when it is gone). */
static long long sandbox_memory(const char *id) {
  char d[512];
  struct stat st;
  const char *file =
      engine_fixture_memcg(&F, id, d, sizeof d) ? "memory.usage_in_bytes" : "memory.current";
  if (stat(d, &st) != 0) return 0;
  return asbt_read_num(d, file);
}

/* Rewrites the boot id of id's runtime record, as after a host reboot. */
static int forge_boot_id(const char *id) {
  static const char *const kv[] = {"boot_id", "00000000-0000-4000-8000-000000000000", NULL};
  return engine_fixture_record_set(&F, id, kv);
}

#define MIB (1ll << 20)

/* A sandbox (autoPause, autoResume as asked) running the holder, its id
 * in id and its bytes' sum in *sum: NULL (said why) if not. */
static asb_sandbox *holder_sandbox(char id[64], int auto_pause, int auto_resume, char **sum) {
  asb_sandbox *sb = criu_fixture_sandbox(C, id, auto_pause, auto_resume);
  if (!sb) return NULL;
  if (start_holder(sb) != ASB_OK || !(*sum = asbt_wait_file(sb, "/tmp/sum", 64))) {
    fprintf(stderr, "the holder did not start: %s\n", asb_error_last()->message);
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
    return NULL;
  }
  return sb;
}

/* Starts a server in the sandbox on its port 8000, its port URL's host in
 * host (host[128]): the status of GET /sum through it once it answers. */
static long serve(asb_sandbox *sb, const char *id, char *host) {
  CHECK_RC(criu_fixture_spawn(sb, NULL, "cd /tmp && exec python3 -m http.server 8000"), ASB_OK);
  snprintf(host, 128, "8000-%s.localhost", id);
  long st = 0;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000))
    if ((st = http("GET", "/sum", NULL, host, NULL)) == 200) break;
  return st;
}

/* Its lifetime ends (a timeout of 1 s): its pauseMode in mode once it is
 * `want` (or at the deadline). */
static const char *expire(const char *id, const char *want, char mode[32]) {
  char p[128];
  snprintf(p, sizeof p, "/sandboxes/%s/timeout", id);
  CHECK_INT(http("POST", p, "{\"timeout\": 1}", NULL, NULL), 204);
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000))
    if (!strcmp(pause_mode(id, mode), want)) break;
  return mode;
}

/* Resumed (connect), the holder counts on past *count + 3 in order (the
 * new count in *count; count NULL: not looked at) and hashes its bytes to
 * sum. */
static void resume_goes_on(asb_sandbox *sb, const char *id, long *count, const char *sum) {
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  if (count) {
    int in_order = 0;
    long c = count_past(sb, *count + 3, &in_order);
    CHECK(c > *count + 3 && in_order);
    *count = c;
  }
  char *sum2 = rehash(sb);
  CHECK(sum2 && !strcmp(sum2, sum));
  free(sum2);
}

/* Paused (a checkpoint, pauseMode "checkpoint") and resumed. */
static void checkpoint_and_restore(const char *id) {
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), "checkpoint");
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
}

TEST(checkpoint_frees_the_ram_and_restore_goes_on) {
  char id[64], *sum = NULL;
  asb_sandbox *sb = holder_sandbox(id, 0, 0, &sum);
  REQUIRE(sb != NULL);
  char *pid = asbt_run_out(sb, "cat /tmp/pid");
  char *boot0 = asbt_run_out(sb, "cat /proc/sys/kernel/random/boot_id");
  /* a server of its own, reached through its port URL */
  char host[128];
  CHECK_INT(serve(sb, id, host), 200);
  int in_order = 0;
  long c0 = count_past(sb, 5, &in_order);
  CHECK(c0 > 5 && in_order);
  long long mem0 = sandbox_memory(id);
  unsigned long base = criu_fixture_host_uid(&F, id);
  REQUIRE(base > 0);
  CHECK(asbt_uid_procs(base) > 0);

  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), "checkpoint");
  long long mem1 = sandbox_memory(id);
  fprintf(stderr, "memory %lld -> %lld MiB\n", mem0 / MIB, mem1 / MIB);
  CHECK(mem0 > 64 * MIB);
  CHECK(mem1 >= 0 && mem1 < 4 * MIB); /* its cgroups are gone: no RAM held */
  CHECK_INT(asbt_uid_procs(base), 0); /* no process of it on the host */
  char ck[300];
  snprintf(ck, sizeof ck, "%s/sandboxes/%s/checkpoint", F.state, id);
  struct stat cs;
  CHECK(stat(ck, &cs) == 0 && S_ISDIR(cs.st_mode) && cs.st_uid == 0 && (cs.st_mode & 077) == 0);
  /* its ports answer that it is paused (no auto-resume asked) */
  CHECK_INT(http("GET", "/sum", NULL, host, NULL), 502);

  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  CHECK(stat(ck, &cs) != 0); /* used: removed */
  long c1 = count_past(sb, c0 + 5, &in_order);
  CHECK(c1 > c0 + 5);
  CHECK(in_order); /* counted on without a restart or a gap */
  char *sum2 = rehash(sb);
  CHECK(sum2 != NULL);
  if (sum2) CHECK_STR(sum2, sum); /* its memory, intact */
  char *pid2 = asbt_run_out(sb, "cat /tmp/pid2");
  CHECK_STR(pid2, pid); /* the same process */
  char *boot1 = asbt_run_out(sb, "cat /proc/sys/kernel/random/boot_id");
  CHECK_STR(boot1, boot0); /* the same boot goes on */
  char *echo = asbt_run_out(sb, "echo ok; id -un");
  CHECK_STR(echo, "ok\nuser\n");
  CHECK_RC(asb_files_write(NULL, sb, "/home/user/after", "x", 1, NULL), ASB_OK);
  char *x = asbt_wait_file(sb, "/home/user/after", 1);
  CHECK(x && !strcmp(x, "x"));
  CHECK_INT(http("GET", "/sum", NULL, host, NULL), 200); /* its port URL */
  CHECK(sandbox_memory(id) > 64 * MIB);                  /* its RAM is back */
  free(x);
  free(echo);
  free(boot0);
  free(boot1);
  free(pid);
  free(pid2);
  free(sum);
  free(sum2);
  asbt_kill(sb);
}

/* Paused by checkpoint, then the engine is killed; the next engine
 * restores it. Paused again, the "host reboots" (its runtime record is of
 * another boot now): the next engine restores it all the same. */
TEST(checkpoint_survives_engine_kill_and_host_reboot) {
  char id[64], *sum = NULL;
  asb_sandbox *sb = holder_sandbox(id, 0, 0, &sum);
  REQUIRE(sb != NULL);
  char *pid = asbt_run_out(sb, "cat /tmp/pid");
  int in_order = 0;
  long c = count_past(sb, 3, &in_order);
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);

  engine_fixture_signal(&F, SIGKILL);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), "checkpoint");
  resume_goes_on(sb, id, &c, sum);
  /* the restored init is adopted as any running one (its recorded pid and
   * start time) by an engine started after a crash */
  engine_fixture_signal(&F, SIGKILL);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  long ca = count_past(sb, c + 3, &in_order);
  CHECK(ca > c + 3 && in_order);
  c = ca;

  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  engine_fixture_signal(&F, SIGKILL);
  CHECK(forge_boot_id(id) == 0);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  CHECK_STR(pause_mode(id, mode), "checkpoint");
  resume_goes_on(sb, id, &c, sum);
  char *pid2 = asbt_run_out(sb, "cat /tmp/pid2");
  CHECK_STR(pid2, pid);
  free(pid);
  free(pid2);
  free(sum);
  asbt_kill(sb);
}

/* A checkpoint that cannot be restored: the resume boots the sandbox on
 * its files (as a pause without memory would), never half a sandbox. */
TEST(unrestorable_checkpoint_boots_on_its_files) {
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  CHECK_RC(asb_files_write(NULL, sb, "/home/user/kept", "files", 5, NULL), ASB_OK);
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  char p[400];
  snprintf(p, sizeof p, "%s/sandboxes/%s/checkpoint/pstree.img", F.state, id);
  CHECK(truncate(p, 3) == 0);
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  char *kept = asbt_wait_file(sb, "/home/user/kept", 5);
  CHECK(kept && !strcmp(kept, "files"));
  char *echo = asbt_run_out(sb, "echo ok");
  CHECK_STR(echo, "ok\n");
  free(kept);
  free(echo);
  asbt_kill(sb);
}

/* autoPause at the end of its lifetime checkpoints it; with autoResume a
 * request to one of its ports restores it and is answered. */
TEST(auto_pause_checkpoints_and_traffic_restores) {
  char id[64], *sum = NULL;
  asb_sandbox *sb = holder_sandbox(id, 1, 1, &sum);
  REQUIRE(sb != NULL);
  char host[128];
  CHECK_INT(serve(sb, id, host), 200);
  char mode[32] = "";
  CHECK_STR(expire(id, "checkpoint", mode), "checkpoint");
  char *body = NULL;
  CHECK_INT(http("GET", "/sum", NULL, host, &body), 200); /* woke it, then answered */
  CHECK(body && !strcmp(body, sum));
  free(body);
  char *sum2 = rehash(sb);
  CHECK(sum2 && !strcmp(sum2, sum));
  free(sum);
  free(sum2);
  asbt_kill(sb);
}

/* A dump that fails (a criu that only fails: /bin/false) leaves the
 * sandbox running as it was: the pause answers 500, its processes go on;
 * an autoPause then freezes it instead (a memory pause in RAM). */
TEST(failed_dump_leaves_it_running) {
  static const char *const k_false[] = {"--pause-criu", "--criu", "/bin/false", NULL};
  const char *const *before = F.extra_args;
  engine_fixture_signal(&F, SIGTERM);
  F.extra_args = k_false;
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  char id[64], *sum = NULL;
  asb_sandbox *sb = holder_sandbox(id, 1, 0, &sum);
  REQUIRE(sb != NULL);
  int in_order = 0;
  long c0 = count_past(sb, 3, &in_order);
  CHECK_INT(sbx_post(id, "pause", "{}"), 500);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), ""); /* running */
  long c1 = count_past(sb, c0 + 3, &in_order);
  CHECK(c1 > c0 + 3 && in_order); /* the same process goes on */
  char *echo = asbt_run_out(sb, "echo ok");
  CHECK_STR(echo, "ok\n");
  CHECK_STR(expire(id, "memory", mode), "memory"); /* frozen instead, once */
  resume_goes_on(sb, id, NULL, sum);
  free(echo);
  free(sum);
  asbt_kill(sb);
  engine_fixture_signal(&F, SIGTERM);
  F.extra_args = before;
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
}

/* Streams open at the pause (a command's output, a file watch), as E2B's
 * SDK tests leave them: their connections to envd go from the engine, so
 * the checkpoint is made (a socket whose peer is the engine's criu cannot
 * dump: without that, the pause failed with 500), the streams end, and the
 * command goes on after the restore. */
static int on_fs_event(asb_fs_event_type type, const char *name, const asb_entry *entry, void *u) {
  (void)type;
  (void)name;
  (void)entry;
  (void)u;
  return 0;
}

TEST(open_streams_end_and_the_checkpoint_is_made) {
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  asb_process *p = NULL;
  CHECK_RC(asbt_start(&p, sb, NULL,
                      "i=0; while :; do echo $i; echo $i >> /tmp/count; i=$((i+1)); "
                      "sleep 0.05; done"),
           ASB_OK);
  asb_watch_options wo = ASB_WATCH_OPTIONS_INIT;
  wo.on_event = on_fs_event;
  asb_watch *w = NULL;
  CHECK_RC(asb_files_watch_dir(&w, sb, "/tmp", &wo), ASB_OK);
  int in_order = 0;
  long c0 = count_past(sb, 3, &in_order);
  CHECK(c0 > 3 && in_order);
  checkpoint_and_restore(id);
  long c1 = count_past(sb, c0 + 3, &in_order);
  CHECK(c1 > c0 + 3 && in_order); /* the same shell goes on */
  asb_watch_free(w);
  asb_process_free(p);
  asbt_kill(sb);
}

/* A code interpreter's kernel (ipykernel: zmq over loopback TCP, between
 * the code interpreter and the kernel, and many threads) through a
 * checkpoint: its state (a variable) and its process (same pid) go on.
 * Without --tcp-established the dump failed: "Connected TCP socket". */
TEST(code_interpreter_kernel_survives_the_checkpoint) {
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  char *a = asbt_code_value(sb, "import os\nx = 41\n(x + 1, os.getpid())", NULL);
  CHECK(a[0] == '(');
  checkpoint_and_restore(id);
  char *b = asbt_code_value(sb, "(x + 1, os.getpid())", NULL);
  CHECK_STR(b, a); /* the same kernel, its variables kept */
  free(a);
  free(b);
  asbt_kill(sb);
}

/* With the default network (net.pause_criu, in the closed topology of
 * tests/net): the sandbox reaches the test internet before the pause and
 * again after the restore (a new link, its policy applied again). */
TEST(network_after_restore) {
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  const char *get =
      "python3 -c \"import urllib.request as u; "
      "print(u.urlopen('http://198.18.0.1/hello', timeout=10).status)\"";
  char *a = asbt_run_out(sb, get);
  CHECK_STR(a, "200\n");
  checkpoint_and_restore(id);
  char *b = asbt_run_out(sb, get);
  CHECK_STR(b, "200\n");
  free(a);
  free(b);
  asbt_kill(sb);
}

int main(void) {
  int rc = criu_fixture_start(&F, &C, "e2e.pause_criu", "e2e-pcriu");
  if (rc) return rc;
  const char *nn = getenv("ASB_NO_NETWORK");
  int network = !nn || !*nn || !strcmp(nn, "0");
  RUN(checkpoint_frees_the_ram_and_restore_goes_on);
  if (network) {
    RUN(network_after_restore); /* net.pause_criu: the rest is e2e.pause_criu's */
  } else {
    RUN(checkpoint_survives_engine_kill_and_host_reboot);
    RUN(unrestorable_checkpoint_boots_on_its_files);
    RUN(auto_pause_checkpoints_and_traffic_restores);
    RUN(failed_dump_leaves_it_running);
    RUN(open_streams_end_and_the_checkpoint_is_made);
    RUN(code_interpreter_kernel_survives_the_checkpoint);
  }
  criu_fixture_stop(&F, C);
  TEST_MAIN_END();
}
