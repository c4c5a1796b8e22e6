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
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;
static const char *k_args[4];

typedef struct {
  char *p;
  size_t n;
} sinkbuf;

static size_t sink(char *d, size_t s, size_t n, void *u) {
  sinkbuf *b = u;
  size_t len = s * n;
  char *np = realloc(b->p, b->n + len + 1);
  if (!np) return 0;
  memcpy(np + b->n, d, len);
  b->n += len;
  np[b->n] = 0;
  b->p = np;
  return len;
}

/* A request to the engine's API (host NULL) or, with host, to the router. */
static long http(const char *method, const char *path, const char *json, const char *host,
                 char **body) {
  CURL *h = curl_easy_init();
  sinkbuf b = {calloc(1, 1), 0};
  char url[512], k[200], hh[200];
  snprintf(url, sizeof url, "%s%s", F.url, path);
  snprintf(k, sizeof k, "X-API-Key: %s", F.key);
  struct curl_slist *hl = curl_slist_append(NULL, k);
  hl = curl_slist_append(hl, "Content-Type: application/json");
  if (host) {
    snprintf(hh, sizeof hh, "Host: %s", host);
    hl = curl_slist_append(hl, hh);
  }
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
  if (json) curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 300L);
  long st = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
  curl_slist_free_all(hl);
  curl_easy_cleanup(h);
  if (body)
    *body = b.p;
  else
    free(b.p);
  return st;
}

static long sbx_post(const char *id, const char *action, const char *json) {
  char p[128];
  snprintf(p, sizeof p, "/sandboxes/%s/%s", id, action);
  return http("POST", p, json, NULL, NULL);
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

static char *run_out(asb_sandbox *sb, const char *cmd) {
  asb_command_result *r = NULL;
  if (asb_commands_run(&r, sb, cmd, NULL) != ASB_OK) {
    fprintf(stderr, "run '%s': %s\n", cmd, asb_error_last()->message);
    asb_command_result_free(r);
    return strdup("<error>");
  }
  char *s = strdup(asb_command_result_stdout(r, NULL));
  asb_command_result_free(r);
  return s;
}

/* The file's content once it has `len` bytes (NULL at the deadline). */
static char *wait_file(asb_sandbox *sb, const char *path, size_t len) {
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000)) {
    char *d = NULL;
    size_t n = 0;
    if (asb_files_read(&d, &n, sb, path, NULL) == ASB_OK && n == len) {
      char *s = strndup(d, n);
      asb_free(d);
      return s;
    }
    asb_free(d);
  }
  return NULL;
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
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.timeout_ms = -1;
  asb_process *p = NULL;
  int rc = asb_commands_start(&p, sb, cmd, &o);
  asb_process_free(p);
  return rc;
}

/* The holder hashes its bytes again: the sum, or NULL. */
static char *rehash(asb_sandbox *sb) {
  asb_files_remove(sb, "/tmp/sum2", NULL);
  if (asb_files_write(NULL, sb, "/tmp/go", "", 0, NULL) != ASB_OK) return NULL;
  return wait_file(sb, "/tmp/sum2", 64);
}

/* The sandbox's host uid range from its runtime record (0 if none). */
static unsigned long host_uid(const char *id) {
  char p[300], line[512];
  snprintf(p, sizeof p, "%s/sandboxes/%s/state", F.state, id);
  FILE *f = fopen(p, "r");
  unsigned long u = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "host_uid=", 9)) u = strtoul(line + 9, NULL, 10);
  if (f) fclose(f);
  return u;
}

/* Processes on the host whose uid is in the sandbox's range. */
static int host_procs(unsigned long base) {
  DIR *d = opendir("/proc");
  struct dirent *de;
  int n = 0;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    char p[300];
    struct stat st;
    snprintf(p, sizeof p, "/proc/%s", de->d_name);
    if (stat(p, &st) == 0 && st.st_uid >= base && st.st_uid < base + 65536) n++;
  }
  if (d) closedir(d);
  return n;
}

/* Bytes of memory the sandbox's memory cgroup uses (0 when it is gone). */
static long long sandbox_memory(const char *id) {
  char p[300], line[4200], d[4200] = "";
  snprintf(p, sizeof p, "%s/sandboxes/%s/state", F.state, id);
  FILE *f = fopen(p, "r");
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!strncmp(line, "cgroup.memory=", 14)) snprintf(d, sizeof d, "%s", line + 14);
  }
  if (f) fclose(f);
  if (!d[0]) return -1;
  snprintf(line, sizeof line, "%s/memory.usage_in_bytes", d);
  if (!(f = fopen(line, "r"))) {
    snprintf(line, sizeof line, "%s/memory.current", d);
    f = fopen(line, "r");
  }
  long long v = 0;
  if (f) {
    if (fscanf(f, "%lld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

/* Rewrites the boot id of id's runtime record, as after a host reboot. */
static int forge_boot_id(const char *id) {
  char p[300], buf[8192], out[8300];
  snprintf(p, sizeof p, "%s/sandboxes/%s/state", F.state, id);
  FILE *f = fopen(p, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  size_t o = 0;
  int forged = 0;
  for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if (!strncmp(l, "boot_id=", 8))
      o += (size_t)snprintf(out + o, sizeof out - o,
                            "boot_id=00000000-0000-4000-8000-000000000000\n"),
          forged = 1;
    else
      o += (size_t)snprintf(out + o, sizeof out - o, "%s\n", l);
  }
  if (!forged || !(f = fopen(p, "w"))) return -1;
  int rc = fputs(out, f) < 0;
  return fclose(f) || rc ? -1 : 0;
}

#define MIB (1ll << 20)

TEST(checkpoint_frees_the_ram_and_restore_goes_on) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  CHECK_RC(start_holder(sb), ASB_OK);
  char *sum = wait_file(sb, "/tmp/sum", 64);
  REQUIRE(sum != NULL);
  char *pid = run_out(sb, "cat /tmp/pid");
  char *boot0 = run_out(sb, "cat /proc/sys/kernel/random/boot_id");
  /* a server of its own, reached through its port URL */
  asb_command_options so = ASB_COMMAND_OPTIONS_INIT;
  so.timeout_ms = -1;
  asb_process *srv = NULL;
  CHECK_RC(asb_commands_start(&srv, sb, "cd /tmp && exec python3 -m http.server 8000", &so),
           ASB_OK);
  asb_process_free(srv);
  char host[128];
  snprintf(host, sizeof host, "8000-%s.localhost", id);
  long st = 0;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000))
    if ((st = http("GET", "/sum", NULL, host, NULL)) == 200) break;
  CHECK_INT(st, 200);
  int in_order = 0;
  long c0 = count_past(sb, 5, &in_order);
  CHECK(c0 > 5 && in_order);
  long long mem0 = sandbox_memory(id);
  unsigned long base = host_uid(id);
  REQUIRE(base > 0);
  CHECK(host_procs(base) > 0);

  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), "checkpoint");
  long long mem1 = sandbox_memory(id);
  fprintf(stderr, "memory %lld -> %lld MiB\n", mem0 / MIB, mem1 / MIB);
  CHECK(mem0 > 64 * MIB);
  CHECK(mem1 >= 0 && mem1 < 4 * MIB); /* its cgroups are gone: no RAM held */
  CHECK_INT(host_procs(base), 0);     /* no process of it on the host */
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
  char *pid2 = run_out(sb, "cat /tmp/pid2");
  CHECK_STR(pid2, pid); /* the same process */
  char *boot1 = run_out(sb, "cat /proc/sys/kernel/random/boot_id");
  CHECK_STR(boot1, boot0); /* the same boot goes on */
  char *echo = run_out(sb, "echo ok; id -un");
  CHECK_STR(echo, "ok\nuser\n");
  CHECK_RC(asb_files_write(NULL, sb, "/home/user/after", "x", 1, NULL), ASB_OK);
  char *x = wait_file(sb, "/home/user/after", 1);
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
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

/* Paused by checkpoint, then the engine is killed; the next engine
 * restores it. Paused again, the "host reboots" (its runtime record is of
 * another boot now): the next engine restores it all the same. */
TEST(checkpoint_survives_engine_kill_and_host_reboot) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  CHECK_RC(start_holder(sb), ASB_OK);
  char *sum = wait_file(sb, "/tmp/sum", 64);
  REQUIRE(sum != NULL);
  char *pid = run_out(sb, "cat /tmp/pid");
  int in_order = 0;
  long c0 = count_past(sb, 3, &in_order);
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);

  engine_fixture_signal(&F, SIGKILL);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), "checkpoint");
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  long c1 = count_past(sb, c0 + 3, &in_order);
  CHECK(c1 > c0 + 3 && in_order);
  char *sum2 = rehash(sb);
  CHECK(sum2 && !strcmp(sum2, sum));
  free(sum2);
  /* the restored init is adopted as any running one (its recorded pid and
   * start time) by an engine started after a crash */
  engine_fixture_signal(&F, SIGKILL);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  long ca = count_past(sb, c1 + 3, &in_order);
  CHECK(ca > c1 + 3 && in_order);
  c1 = ca;

  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  engine_fixture_signal(&F, SIGKILL);
  CHECK(forge_boot_id(id) == 0);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  CHECK_STR(pause_mode(id, mode), "checkpoint");
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  long c2 = count_past(sb, c1 + 3, &in_order);
  CHECK(c2 > c1 + 3 && in_order);
  sum2 = rehash(sb);
  CHECK(sum2 && !strcmp(sum2, sum));
  char *pid2 = run_out(sb, "cat /tmp/pid2");
  CHECK_STR(pid2, pid);
  free(pid);
  free(pid2);
  free(sum);
  free(sum2);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

/* A checkpoint that cannot be restored: the resume boots the sandbox on
 * its files (as a pause without memory would), never half a sandbox. */
TEST(unrestorable_checkpoint_boots_on_its_files) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  CHECK_RC(asb_files_write(NULL, sb, "/home/user/kept", "files", 5, NULL), ASB_OK);
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  char p[400];
  snprintf(p, sizeof p, "%s/sandboxes/%s/checkpoint/pstree.img", F.state, id);
  CHECK(truncate(p, 3) == 0);
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  char *kept = wait_file(sb, "/home/user/kept", 5);
  CHECK(kept && !strcmp(kept, "files"));
  char *echo = run_out(sb, "echo ok");
  CHECK_STR(echo, "ok\n");
  free(kept);
  free(echo);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

/* autoPause at the end of its lifetime checkpoints it; with autoResume a
 * request to one of its ports restores it and is answered. */
TEST(auto_pause_checkpoints_and_traffic_restores) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  o.auto_pause = 1;
  o.auto_resume = 1;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  CHECK_RC(start_holder(sb), ASB_OK);
  char *sum = wait_file(sb, "/tmp/sum", 64);
  REQUIRE(sum != NULL);
  asb_command_options so = ASB_COMMAND_OPTIONS_INIT;
  so.timeout_ms = -1;
  asb_process *srv = NULL;
  CHECK_RC(asb_commands_start(&srv, sb, "cd /tmp && exec python3 -m http.server 8000", &so),
           ASB_OK);
  asb_process_free(srv);
  char host[128];
  snprintf(host, sizeof host, "8000-%s.localhost", id);
  long st = 0;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000))
    if ((st = http("GET", "/sum", NULL, host, NULL)) == 200) break;
  CHECK_INT(st, 200);
  char p[128], mode[32] = "";
  snprintf(p, sizeof p, "/sandboxes/%s/timeout", id);
  CHECK_INT(http("POST", p, "{\"timeout\": 1}", NULL, NULL), 204);
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000))
    if (!strcmp(pause_mode(id, mode), "checkpoint")) break;
  CHECK_STR(mode, "checkpoint");
  char *body = NULL;
  CHECK_INT(http("GET", "/sum", NULL, host, &body), 200); /* woke it, then answered */
  CHECK(body && !strcmp(body, sum));
  free(body);
  char *sum2 = rehash(sb);
  CHECK(sum2 && !strcmp(sum2, sum));
  free(sum);
  free(sum2);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
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
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  o.auto_pause = 1;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  CHECK_RC(start_holder(sb), ASB_OK);
  char *sum = wait_file(sb, "/tmp/sum", 64);
  REQUIRE(sum != NULL);
  int in_order = 0;
  long c0 = count_past(sb, 3, &in_order);
  CHECK_INT(sbx_post(id, "pause", "{}"), 500);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), ""); /* running */
  long c1 = count_past(sb, c0 + 3, &in_order);
  CHECK(c1 > c0 + 3 && in_order); /* the same process goes on */
  char *echo = run_out(sb, "echo ok");
  CHECK_STR(echo, "ok\n");
  char p[128];
  snprintf(p, sizeof p, "/sandboxes/%s/timeout", id);
  CHECK_INT(http("POST", p, "{\"timeout\": 1}", NULL, NULL), 204);
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000))
    if (!strcmp(pause_mode(id, mode), "memory")) break;
  CHECK_STR(mode, "memory"); /* frozen instead, once */
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  char *sum2 = rehash(sb);
  CHECK(sum2 && !strcmp(sum2, sum));
  free(echo);
  free(sum);
  free(sum2);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
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
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  asb_command_options co = ASB_COMMAND_OPTIONS_INIT;
  co.timeout_ms = -1;
  asb_process *p = NULL;
  CHECK_RC(asb_commands_start(&p, sb,
                              "i=0; while :; do echo $i; echo $i >> /tmp/count; i=$((i+1)); "
                              "sleep 0.05; done",
                              &co),
           ASB_OK);
  asb_watch_options wo = ASB_WATCH_OPTIONS_INIT;
  wo.on_event = on_fs_event;
  asb_watch *w = NULL;
  CHECK_RC(asb_files_watch_dir(&w, sb, "/tmp", &wo), ASB_OK);
  int in_order = 0;
  long c0 = count_past(sb, 3, &in_order);
  CHECK(c0 > 3 && in_order);
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), "checkpoint");
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  long c1 = count_past(sb, c0 + 3, &in_order);
  CHECK(c1 > c0 + 3 && in_order); /* the same shell goes on */
  asb_watch_free(w);
  asb_process_free(p);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

/* A code interpreter's kernel (ipykernel: zmq over loopback TCP, between
 * the code interpreter and the kernel, and many threads) through a
 * checkpoint: its state (a variable) and its process (same pid) go on.
 * Without --tcp-established the dump failed: "Connected TCP socket". */
static char *code_value(asb_sandbox *sb, const char *code) {
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.timeout_ms = 60000;
  asb_execution *x = NULL;
  int rc = asb_code_run(&x, sb, code, &o);
  char buf[256];
  if (rc != ASB_OK)
    snprintf(buf, sizeof buf, "<%s: %s>", asb_strerror(rc), asb_error_last()->message);
  else
    snprintf(buf, sizeof buf, "%s", asb_execution_text(x) ? asb_execution_text(x) : "<none>");
  asb_execution_free(x);
  return strdup(buf);
}

TEST(code_interpreter_kernel_survives_the_checkpoint) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  char *a = code_value(sb, "import os\nx = 41\n(x + 1, os.getpid())");
  CHECK(a[0] == '(');
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), "checkpoint");
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  char *b = code_value(sb, "(x + 1, os.getpid())");
  CHECK_STR(b, a); /* the same kernel, its variables kept */
  free(a);
  free(b);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

/* With the default network (net.pause_criu, in the closed topology of
 * tests/net): the sandbox reaches the test internet before the pause and
 * again after the restore (a new link, its policy applied again). */
TEST(network_after_restore) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  const char *get =
      "python3 -c \"import urllib.request as u; "
      "print(u.urlopen('http://198.18.0.1/hello', timeout=10).status)\"";
  char *a = run_out(sb, get);
  CHECK_STR(a, "200\n");
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  char mode[32];
  CHECK_STR(pause_mode(id, mode), "checkpoint");
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  char *b = run_out(sb, get);
  CHECK_STR(b, "200\n");
  free(a);
  free(b);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

int main(void) {
  const char *criu = getenv("ASB_CRIU");
  if (!criu || !*criu) criu = "/var/cache/agent-sandbox/criu/bin/criu";
  if (access(criu, X_OK) != 0) {
    printf(
        "SKIP e2e.pause_criu: no criu binary at %s (build it with scripts/build-criu.sh, or "
        "set ASB_CRIU)\n",
        criu);
    return 77;
  }
  const char *nn = getenv("ASB_NO_NETWORK");
  int network = !nn || !*nn || !strcmp(nn, "0");
  k_args[0] = "--pause-criu";
  k_args[1] = "--criu";
  k_args[2] = criu;
  k_args[3] = NULL;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (engine_fixture_start_args(&F, "e2e-pcriu", k_args) != 0 ||
      engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine (%s --pause-criu)\n", ASB_ENGINE_BIN);
    engine_fixture_stop(&F);
    return 1;
  }
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
  asb_client_free(C);
  engine_fixture_stop(&F);
  curl_global_cleanup();
  TEST_MAIN_END();
}
