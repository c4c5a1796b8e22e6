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
 * the checkpoint is made; a code interpreter's kernel keeps its state; a
 * pty's shell is restored with its variables and answers when reattached;
 * a runCode in flight ends for its caller and its cell is interrupted, the
 * kernel keeps its state; a criu that hangs (a wrapper, dump or restore) is
 * killed with its session at --criu-timeout and the pause or resume falls
 * back as when criu fails; a checkpoint dir without room for the memory
 * (a small tmpfs on it) is never written and the pause fails, the sandbox
 * running on.
 * net.pause_criu runs it with the default network in the closed test
 * topology: the restored sandbox reaches the test internet again.
 * Skips (77, saying why) only when no criu binary is found: $ASB_CRIU,
 * else /var/cache/agent-sandbox/criu/bin/criu (scripts/build-criu.sh).
 * Runs as root; the engine fixture cleans up (--kill-on-exit, state dir)
 * also when a check fails.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <errno.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/mount.h>
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
    long c = criu_fixture_count_past(sb, *count + 3, &in_order);
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
  long c0 = criu_fixture_count_past(sb, 5, &in_order);
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
  long c1 = criu_fixture_count_past(sb, c0 + 5, &in_order);
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
  long c = criu_fixture_count_past(sb, 3, &in_order);
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
  long ca = criu_fixture_count_past(sb, c + 3, &in_order);
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
  long c0 = criu_fixture_count_past(sb, 3, &in_order);
  CHECK_INT(sbx_post(id, "pause", "{}"), 500);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), ""); /* running */
  long c1 = criu_fixture_count_past(sb, c0 + 3, &in_order);
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
  long c0 = criu_fixture_count_past(sb, 3, &in_order);
  CHECK(c0 > 3 && in_order);
  checkpoint_and_restore(id);
  long c1 = criu_fixture_count_past(sb, c0 + 3, &in_order);
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

/* ---- criu's time limit ---------------------------------------------------- */

/* A criu that hangs: a wrapper of the real one in dir (root's, 0700) that,
 * for the command named in dir/hang (dump or restore), starts a child in a
 * process group of its own (in criu's session, not in its group) that
 * writes its pid to dir/<cmd>.child, then, once that is there, writes its
 * own to dir/<cmd>.pid (so that file says both were up when criu was
 * killed) and waits for the child forever; any other command is the real
 * criu's. perl, not python3: it starts in milliseconds (python3 may be a
 * pyenv shim). */
static int hang_wrapper(const char *dir, const char *real) {
  char p[300], body[1400];
  snprintf(p, sizeof p, "%s/criu", dir);
  snprintf(body, sizeof body,
           "#!/bin/sh\n"
           "d=%s\n"
           "if [ \"$1\" = \"$(cat $d/hang 2>/dev/null)\" ]; then\n"
           "  perl -e 'setpgrp(0, 0); open(my $f, \">\", \"$ARGV[0].new\") or die;\n"
           "print $f $$; close($f); rename(\"$ARGV[0].new\", $ARGV[0]);\n"
           "exec(\"sleep\", \"100000\")' $d/$1.child &\n"
           "  while [ ! -e $d/$1.child ]; do sleep 0.01; done\n"
           "  echo $$ > $d/$1.pid.new; mv $d/$1.pid.new $d/$1.pid\n"
           "  wait\n"
           "fi\n"
           "exec %s \"$@\"\n",
           dir, real);
  FILE *f = fopen(p, "w");
  if (!f) return -1;
  int bad = fputs(body, f) < 0;
  if (fclose(f) || bad || chmod(p, 0700)) return -1;
  return 0;
}

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int bad = fputs(text, f) < 0;
  return fclose(f) || bad ? -1 : 0;
}

/* Whether the process whose pid is in `file` runs (not gone, no zombie):
 * -1 if the file is unreadable. */
static int pid_file_alive(const char *file) {
  FILE *f = fopen(file, "r");
  int pid = 0;
  if (!f) return -1;
  int ok = fscanf(f, "%d", &pid) == 1;
  fclose(f);
  if (!ok || pid <= 0) return -1;
  char p[64], st[512];
  snprintf(p, sizeof p, "/proc/%d/stat", pid);
  f = fopen(p, "r");
  if (!f) return 0;
  size_t n = fread(st, 1, sizeof st - 1, f);
  fclose(f);
  st[n] = 0;
  const char *rp = strrchr(st, ')');
  return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* After the hung wrapper's `cmd` was killed: each of its processes that
 * had written its pid is gone (criu itself, and the child in its session's
 * other group), and the files are removed for the next run. 1 if both had
 * been up (the kill is then proved), 0 if the limit hit the wrapper
 * before it was (nothing proved: the caller tries a longer limit). */
static int hang_gone(const char *dir, const char *cmd) {
  char p[300], c[300];
  snprintf(p, sizeof p, "%s/%s.pid", dir, cmd);
  snprintf(c, sizeof c, "%s/%s.child", dir, cmd);
  int up = access(p, F_OK) == 0;
  if (up) CHECK_INT(pid_file_alive(p), 0);
  if (access(c, F_OK) == 0) CHECK_INT(pid_file_alive(c), 0);
  CHECK(!up || access(c, F_OK) == 0);
  unlink(p);
  unlink(c);
  return up;
}

/* The engine again with args (NULL: the fixture's). */
static int relaunch(const char *const *args, int sig) {
  engine_fixture_signal(&F, sig);
  F.extra_args = args ? args : criu_fixture_args;
  return engine_fixture_launch(&F, 1);
}

/* The engine again with the hanging criu `wrapper` and a time limit of
 * `secs` (+ 1 s per GiB). */
static int relaunch_hung(const char *wrapper, unsigned secs, int sig) {
  static char w[300], t[16];
  static const char *args[] = {"--pause-criu",           "--criu", w,   "--criu-timeout", t,
                               "--criu-timeout-per-gib", "1",      NULL};
  snprintf(w, sizeof w, "%s", wrapper);
  snprintf(t, sizeof t, "%u", secs);
  return relaunch(args, sig);
}

/* A criu dump that hangs is killed at the engine's time limit (with its
 * whole session) and the pause fails as a failed dump does: 500, the
 * sandbox runs on as it was; an autoPause then freezes it. A restore that
 * hangs is killed the same way and the resume boots the sandbox on its
 * files, as a failed restore does. The limit starts at 1 s and grows (x4)
 * only while it hits the wrapper before the wrapper is up (a busy host):
 * what is asserted does not depend on how fast it starts. */
TEST(hung_criu_is_killed_at_its_time_limit) {
  char dir[] = "/tmp/asb-criu-hang-XXXXXX", p[300];
  REQUIRE(mkdtemp(dir) != NULL);
  REQUIRE(hang_wrapper(dir, criu_fixture_args[2]) == 0);
  snprintf(p, sizeof p, "%s/criu", dir);
  char hf[300];
  snprintf(hf, sizeof hf, "%s/hang", dir);
  REQUIRE(write_text(hf, "dump\n") == 0);
  char id[64], *sum = NULL, mode[32];
  asb_sandbox *sb = NULL;
  int up = 0, in_order = 0;
  for (unsigned secs = 1; secs <= 64 && !up; secs *= 4) {
    /* SIGKILL once the sandbox is there: a stopped engine kills it */
    if (relaunch_hung(p, secs, sb ? SIGKILL : SIGTERM) != 0) {
      ASBT_FAIL("the engine with a %u s criu limit did not start", secs);
      break;
    }
    if (!sb && !(sb = holder_sandbox(id, 1, 0, &sum))) break;
    long c0 = criu_fixture_count_past(sb, 3, &in_order);
    CHECK_INT(sbx_post(id, "pause", "{}"), 500); /* after the limit, not never */
    up = hang_gone(dir, "dump");
    CHECK_STR(pause_mode(id, mode), ""); /* running */
    long c1 = criu_fixture_count_past(sb, c0 + 3, &in_order);
    CHECK(c1 > c0 + 3 && in_order); /* the same process goes on */
  }
  CHECK(up);
  if (sb) {
    CHECK_STR(expire(id, "memory", mode), "memory"); /* frozen instead */
    resume_goes_on(sb, id, NULL, sum);
    free(sum);
    asbt_kill(sb);
    sb = NULL;
  }

  /* the restore: checkpointed by the real criu, restored by the hung one */
  CHECK(write_text(hf, "restore\n") == 0);
  up = 0;
  for (unsigned secs = 1; secs <= 64 && !up; secs *= 4) {
    if (relaunch(NULL, sb ? SIGKILL : SIGTERM) != 0) {
      ASBT_FAIL("the engine did not start again");
      break;
    }
    if (!sb) {
      if (!(sb = criu_fixture_sandbox(C, id, 0, 0))) break;
      CHECK_RC(asb_files_write(NULL, sb, "/home/user/kept", "files", 5, NULL), ASB_OK);
    }
    CHECK_INT(sbx_post(id, "pause", "{}"), 204);
    CHECK_STR(pause_mode(id, mode), "checkpoint");
    /* SIGKILL: the paused sandbox stays */
    if (relaunch_hung(p, secs, SIGKILL) != 0) {
      ASBT_FAIL("the engine with a %u s criu limit did not start", secs);
      break;
    }
    CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
    up = hang_gone(dir, "restore");
    char *kept = asbt_wait_file(sb, "/home/user/kept", 5); /* booted on its files */
    CHECK(kept && !strcmp(kept, "files"));
    char *echo = asbt_run_out(sb, "echo ok");
    CHECK_STR(echo, "ok\n");
    free(kept);
    free(echo);
  }
  CHECK(up);
  if (sb) asbt_kill(sb);
  CHECK(relaunch(NULL, SIGTERM) == 0);
  static const char *const files[] = {
      "criu",          "hang",         "dump.pid",       "dump.child",      "restore.pid",
      "restore.child", "dump.pid.new", "dump.child.new", "restore.pid.new", "restore.child.new"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* ---- the space a checkpoint takes ----------------------------------------- */

/* Mounts a tmpfs of `size` on id's checkpoint dir (root's, 0700): the
 * filesystem its images go to. 0 or -1. */
static int small_ckpt_fs(const char *id, const char *size, char *ck, size_t len) {
  snprintf(ck, len, "%s/sandboxes/%s/checkpoint", F.state, id);
  if (mkdir(ck, 0700) < 0 && errno != EEXIST) return -1;
  char opts[64];
  snprintf(opts, sizeof opts, "size=%s,mode=0700", size);
  return mount("asb-test-ckpt", ck, "tmpfs", MS_NOSUID | MS_NODEV, opts);
}

/* The images need about the sandbox's memory on the state filesystem: a
 * checkpoint dir with less room (a 16 MiB tmpfs, the holder has 64 MiB)
 * makes the pause fail before criu runs (500, the sandbox runs on, nothing
 * written there; an autoPause freezes it instead); with room (1 GiB) the
 * same sandbox is checkpointed there and restored. */
TEST(checkpoint_without_room_is_refused) {
  char id[64], *sum = NULL, ck[400];
  asb_sandbox *sb = holder_sandbox(id, 1, 0, &sum);
  REQUIRE(sb != NULL);
  int in_order = 0;
  long c0 = criu_fixture_count_past(sb, 3, &in_order);
  if (small_ckpt_fs(id, "16m", ck, sizeof ck) == 0) {
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    CHECK(in >= 0 && inotify_add_watch(in, ck, IN_CREATE | IN_MODIFY) >= 0);
    CHECK_INT(sbx_post(id, "pause", "{}"), 500);
    char mode[32];
    CHECK_STR(pause_mode(id, mode), ""); /* running */
    char ev[4096];
    /* nothing written there: criu never ran (without the check it filled
     * the tmpfs, failed, and the sandbox ran on all the same) */
    CHECK(in >= 0 && read(in, ev, sizeof ev) < 0 && errno == EAGAIN);
    if (in >= 0) close(in);
    long c1 = criu_fixture_count_past(sb, c0 + 3, &in_order);
    CHECK(c1 > c0 + 3 && in_order);
    CHECK_STR(expire(id, "memory", mode), "memory"); /* frozen instead */
    resume_goes_on(sb, id, NULL, sum);
    CHECK_INT(umount2(ck, MNT_DETACH), 0);
  } else {
    ASBT_FAIL("mount a tmpfs on %s: %s", ck, strerror(errno));
  }
  if (small_ckpt_fs(id, "1g", ck, sizeof ck) == 0) {
    long c = criu_fixture_count_past(sb, 0, &in_order);
    CHECK_INT(sbx_post(id, "pause", "{}"), 204);
    char mode[32];
    CHECK_STR(pause_mode(id, mode), "checkpoint");
    resume_goes_on(sb, id, &c, sum);
    CHECK_INT(umount2(ck, MNT_DETACH), 0);
  } else {
    ASBT_FAIL("mount a tmpfs on %s: %s", ck, strerror(errno));
  }
  free(sum);
  asbt_kill(sb);
}

/* ---- what runs at the pause ------------------------------------------------ */

/* Reads p's output (a pty's) until it holds `want`: 1, -1 at the
 * stream's end, 0 at the deadline. */
static int read_until(asb_process *p, const char *want) {
  char buf[16384] = "";
  size_t n = 0;
  asb_call_options call = ASB_CALL_OPTIONS_INIT;
  call.timeout_ms = 1000;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end;) {
    int kind = 0;
    const char *d = NULL;
    size_t len = 0;
    int rc = asb_process_read(&kind, &d, &len, p, &call);
    if (rc == ASB_ETIMEOUT) continue;
    if (rc != 1) return -1;
    if (len > sizeof buf - 1 - n) { /* keep the tail */
      size_t keep = sizeof buf / 2;
      memmove(buf, buf + n - keep, keep);
      n = keep;
    }
    if (len > sizeof buf - 1 - n) len = sizeof buf - 1 - n;
    memcpy(buf + n, d, len);
    n += len;
    buf[n] = 0;
    if (strstr(buf, want)) return 1;
  }
  return 0;
}

/* A pty's shell through a checkpoint: its stream ends at the pause, the
 * shell is restored with its pty and its variables, reattached by pid it
 * takes input and answers (X=41 before, $((X+1)) 42 after). */
TEST(pty_shell_survives_the_checkpoint) {
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  asb_pty_options po = ASB_PTY_OPTIONS_INIT;
  po.timeout_ms = -1;
  asb_process *p = NULL;
  CHECK_RC(asb_pty_create(&p, sb, &po), ASB_OK);
  unsigned pid = p ? asb_process_pid(p) : 0;
  const char *in1 = "X=41; echo mark$((X-40))\n";
  CHECK_RC(asb_pty_send_input(sb, pid, in1, strlen(in1), NULL), ASB_OK);
  CHECK(p && read_until(p, "mark1") == 1);
  checkpoint_and_restore(id);
  CHECK(p && read_until(p, "never") == -1); /* the old stream ended */
  asb_process_free(p);
  asb_command_options co = ASB_COMMAND_OPTIONS_INIT;
  co.timeout_ms = -1;
  asb_process *q = NULL;
  CHECK_RC(asb_commands_connect(&q, sb, pid, &co), ASB_OK); /* the same shell */
  const char *in2 = "echo got$((X+1))\n";
  CHECK_RC(asb_pty_send_input(sb, pid, in2, strlen(in2), NULL), ASB_OK);
  CHECK(q && read_until(q, "got42") == 1);
  CHECK_RC(asb_pty_kill(sb, pid, NULL), ASB_OK);
  asb_process_free(q);
  asbt_kill(sb);
}

typedef struct inflight {
  asb_sandbox *sb;
  int rc;
} inflight;

static void *run_cell(void *arg) {
  inflight *f = arg;
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.timeout_ms = 300000;
  asb_execution *x = NULL;
  f->rc = asb_code_run(&x, f->sb,
                       "import os, time\n"
                       "try:\n"
                       "  open('/tmp/cell', 'w').write('running')\n"
                       "  while True: time.sleep(0.05)\n"
                       "except KeyboardInterrupt:\n"
                       "  open('/tmp/cell', 'w').write('interrupted')\n"
                       "  raise\n",
                       &o);
  asb_execution_free(x);
  return NULL;
}

/* A runCode in flight at the pause: its stream ends (the call returns, no
 * result), the cell is interrupted as when its caller hangs up, and the
 * restored kernel keeps its state and runs the next cell (x = 41 before,
 * x + 1 == 42 after, the same kernel process). */
TEST(run_code_in_flight_at_the_checkpoint) {
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  char *a = asbt_code_value(sb, "import os\nx = 41\nos.getpid()", NULL);
  inflight f = {sb, ASB_OK};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, run_cell, &f) == 0);
  char *running = asbt_wait_file(sb, "/tmp/cell", 7);
  CHECK(running && !strcmp(running, "running"));
  checkpoint_and_restore(id);
  pthread_join(t, NULL);
  CHECK(f.rc != ASB_OK); /* its caller saw the stream end */
  /* the interrupt first: the interpreter sends it when it sees the hang-up,
   * and one that came late would hit the next cell instead */
  char *cell = asbt_wait_file(sb, "/tmp/cell", 11);
  CHECK(cell && !strcmp(cell, "interrupted"));
  char *b = asbt_code_value(sb, "x + 1, os.getpid()", NULL);
  char want[300];
  snprintf(want, sizeof want, "(42, %s)", a);
  CHECK_STR(b, want); /* the same kernel, its state kept */
  free(a);
  free(b);
  free(running);
  free(cell);
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
    RUN(pty_shell_survives_the_checkpoint);
    RUN(run_code_in_flight_at_the_checkpoint);
    RUN(hung_criu_is_killed_at_its_time_limit);
    RUN(checkpoint_without_room_is_refused);
  }
  criu_fixture_stop(&F, C);
  TEST_MAIN_END();
}
