/* e2e.pause: E2B's pause modes and auto-resume against a real
 * agent-sandboxd. Pause without memory ({"memory": false}, autoPauseMemory
 * false) stops every process, frees the sandbox's memory and keeps its
 * files; resume boots it again (new boot_id, same envd token), also after
 * an engine restart. autoResume: traffic to a sandbox paused with memory
 * resumes it and is served (E2B's "sleep" lifecycle: autoPause on timeout +
 * autoResume on traffic); without autoResume, or paused without memory,
 * it stays paused (502 sandbox_paused). Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "asb_testing.h"
#include "engine_http.h"

static engine_fixture F;
static asb_client *C;

/* One request to the engine: the API (port 0) or a sandbox's port through
 * the router. The reply's body in *body (malloc'd, "" if none). */
static long http(const char *method, const char *path, const char *json, const char *id, int port,
                 char **body) {
  engine_req r = {.json = json, .api_key = 1, .sandbox = id, .port = port, .timeout_s = 300};
  return engine_http(&F, method, path, &r, body);
}

/* A request to a sandbox's port with one extra header (or none). */
static long http_h(const char *method, const char *path, const char *id, int port,
                   const char *header, char **body) {
  const char *hs[] = {header, NULL};
  engine_req r = {.sandbox = id, .port = port, .headers = hs, .timeout_s = 300};
  return engine_http(&F, method, path, &r, body);
}

static long api(const char *method, const char *path, const char *json, char **body) {
  return engine_api(&F, method, path, json, body);
}

/* GET /sandboxes/{id}: 1 if the reply holds needle. */
static int info_has(const char *id, const char *needle) {
  char p[128], *b = NULL;
  snprintf(p, sizeof p, "/sandboxes/%s", id);
  long st = api("GET", p, NULL, &b);
  int has = st == 200 && strstr(b, needle) != NULL;
  free(b);
  return has;
}

static int wait_info(const char *id, const char *needle) {
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000))
    if (info_has(id, needle)) return 1;
  return 0;
}

static long pause_req(const char *id, const char *json) {
  return engine_sandbox_post(&F, id, "pause", json, 300);
}

static long connect_req(const char *id) {
  return engine_sandbox_post(&F, id, "connect", "{\"timeout\": 120}", 300);
}

/* The sandbox's memory cgroup on the host: <engine's>/<cgroup name>/<id>,
 * on cgroup v2 or v1's memory hierarchy; *file: its usage file. */
static void sandbox_cgroup(const char *id, char *out, size_t len, const char **file) {
  *file = engine_fixture_memcg(&F, id, out, len) ? "memory.usage_in_bytes" : "memory.current";
}

static long long memory_used(const char *cg, const char *file) {
  return asbt_read_num(cg, file);
}

/* Files, processes, memory, boot_id and the envd token across a pause
 * without memory and its resume. */
TEST(pause_without_memory_reboots_keeping_files) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  const char *id = asb_sandbox_id(sb);
  REQUIRE_RC(asb_files_write(NULL, sb, "/home/user/kept", "home kept", 9, NULL), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, sb, "/tmp/kept", "tmp kept", 8, NULL), ASB_OK);
  char *boot0 = asbt_run_out(sb, "cat /proc/sys/kernel/random/boot_id");
  /* a process that outlives its command, holding 64 MiB */
  asb_process *p = NULL;
  REQUIRE_RC(asbt_start(&p, sb, NULL,
                        "python3 -c \"import time; b=bytearray(64<<20); "
                        "open('/tmp/holder','w').write('up'); time.sleep(1000)\""),
             ASB_OK);
  char *up = asbt_wait_file(sb, "/tmp/holder", 2);
  CHECK(up != NULL);
  free(up);
  char cg[600];
  const char *mf = NULL;
  sandbox_cgroup(id, cg, sizeof cg, &mf);
  long long before = memory_used(cg, mf);
  if (before <= (64ll << 20)) fprintf(stderr, "%s/%s: %lld\n", cg, mf, before);
  CHECK(before > (64ll << 20)); /* the holder's memory is the sandbox's */

  CHECK_INT(pause_req(id, "{\"memory\": \"no\"}"), 400);
  CHECK_RC(asb_sandbox_pause_memory(sb, 0, NULL), 1); /* {"memory": false} */
  CHECK_INT(pause_req(id, "{\"memory\": false}"), 409);
  CHECK_RC(asb_sandbox_pause_memory(sb, 0, NULL), 0);
  CHECK(info_has(id, "\"state\":\"paused\""));
  asb_sandbox_info *info = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&info, sb, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_info_state(info), "paused");
  CHECK_STR(asb_sandbox_info_pause_mode(info), "filesystem");
  CHECK_INT(asb_sandbox_info_auto_resume(info), 0);
  asb_sandbox_info_free(info);
  /* every process gone and its memory freed: no cgroup left to hold any */
  struct stat st;
  CHECK(stat(cg, &st) != 0);
  CHECK_INT(memory_used(cg, mf), -1);
  /* its ports (envd's too) are not served, and traffic does not boot it */
  char *b = NULL;
  CHECK_INT(http("GET", "/health", NULL, id, 49983, &b), 502);
  CHECK(strstr(b, "sandbox_paused") && strstr(b, "without memory"));
  free(b);
  CHECK_INT(asb_sandbox_is_running(sb, NULL), 0);

  CHECK_RC(asb_sandbox_resume(sb, 120000, NULL), ASB_OK); /* connect: 201 */
  CHECK(info_has(id, "\"state\":\"running\""));
  CHECK(!info_has(id, "pauseMode"));
  /* the old handle's envd token still works; the files are there */
  char *out = asbt_run_out(sb, "cat /home/user/kept; echo; cat /tmp/kept");
  CHECK_STR(out, "home kept\ntmp kept");
  free(out);
  out = asbt_run_out(sb, "pgrep -f [b]ytearray || echo none");
  CHECK_STR(out, "none\n");
  free(out);
  char *boot1 = asbt_run_out(sb, "cat /proc/sys/kernel/random/boot_id");
  CHECK(strlen(boot1) == 37 && strcmp(boot0, boot1) != 0);
  free(boot0);
  free(boot1);
  CHECK(stat(cg, &st) == 0);
  /* and it pauses the other way again */
  CHECK_INT(pause_req(id, NULL), 204);
  CHECK(info_has(id, "\"pauseMode\":\"memory\""));
  CHECK_INT(connect_req(id), 201);
  asb_process_free(p);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

/* A sandbox paused without memory outlives the engine: a new engine on the
 * same state lists it paused and boots it on connect; a kill while paused
 * removes what it kept. */
TEST(paused_without_memory_survives_engine_restart) {
  asb_sandbox *sb = NULL, *sb2 = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  REQUIRE_RC(asb_sandbox_create(&sb2, C, &o), ASB_OK);
  char id[64], id2[64], dir2[300];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  snprintf(id2, sizeof id2, "%s", asb_sandbox_id(sb2));
  snprintf(dir2, sizeof dir2, "%s/sandboxes/%s", F.state, id2);
  REQUIRE_RC(asb_files_write(NULL, sb, "/home/user/survivor", "still here", 10, NULL), ASB_OK);
  CHECK_INT(pause_req(id, "{\"memory\": false}"), 204);
  CHECK_INT(pause_req(id2, "{\"memory\": false}"), 204);
  engine_fixture_signal(&F, SIGKILL);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  CHECK(info_has(id, "\"pauseMode\":\"filesystem\""));
  char *b = NULL;
  CHECK_INT(api("GET", "/v2/sandboxes?state=paused", NULL, &b), 200);
  CHECK(strstr(b, id) != NULL);
  free(b);
  CHECK_INT(connect_req(id), 201);
  char *d = NULL;
  size_t n = 0;
  CHECK_RC(asb_files_read(&d, &n, sb, "/home/user/survivor", NULL), ASB_OK);
  CHECK_MEM(d, n, "still here", 10);
  asb_free(d);
  /* killed while paused (and never booted by this engine) */
  struct stat st;
  CHECK(stat(dir2, &st) == 0);
  CHECK_RC(asb_sandbox_kill(sb2, NULL), ASB_OK);
  CHECK(stat(dir2, &st) != 0);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_sandbox_free(sb2);
}

/* ---- a sandbox paused with memory outlives its engine ---------------------- */

/* Starts a counter in sb: a python3 that appends 1, 2, 3... to /tmp/count
 * through one file it keeps open, and waits until it has counted to 3. */
static asb_process *start_counter(asb_sandbox *sb) {
  asb_process *p = NULL;
  if (asbt_start(&p, sb, NULL,
                 "python3 -c \"import time; f=open('/tmp/count','w',1); i=0\n"
                 "while True: i+=1; f.write('%d\\n' % i); time.sleep(0.02)\"") != ASB_OK)
    return NULL;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(50000)) {
    char *d = NULL;
    size_t n = 0;
    int got = asb_files_read(&d, &n, sb, "/tmp/count", NULL) == ASB_OK && n >= 6;
    asb_free(d);
    if (got) return p;
  }
  asb_process_free(p);
  return NULL;
}

/* The counter's last value if /tmp/count is exactly 1..N, one a line (the
 * same process, its memory and its open file carried on), else -1. */
static long counted(asb_sandbox *sb) {
  char *d = NULL;
  size_t n = 0;
  if (asb_files_read(&d, &n, sb, "/tmp/count", NULL) != ASB_OK) return -1;
  long want = 1, last = 0;
  char *save = NULL;
  /* a line being written may be cut short: only whole lines count */
  char *end = memrchr(d, '\n', n);
  if (end) end[1] = 0;
  for (char *t = end ? strtok_r(d, "\n", &save) : NULL; t; t = strtok_r(NULL, "\n", &save)) {
    if (strtol(t, NULL, 10) != want) {
      last = -1;
      break;
    }
    last = want++;
  }
  asb_free(d);
  return end ? last : -1;
}

/* Waits until the counter counts past from, checking it never restarted. */
static long counts_past(asb_sandbox *sb, long from) {
  long c = -1;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(50000))
    if ((c = counted(sb)) < 0 || c > from + 5) break;
  return c;
}

/* The init pid the isolation runtime recorded for id (its state file). */
static int recorded_init(const char *id) {
  char v[32];
  return atoi(engine_fixture_record(&F, id, "pid", v, sizeof v));
}

/* Rewrites id's runtime record: to name pid (> 0) with pid's real start
 * time, what a pid reused after a host reboot looks like (same number,
 * same ticks since boot); or (boot) as written in another boot. */
static int forge_record(const char *id, pid_t pid, const char *boot) {
  char p[300], st[1024] = "";
  unsigned long long start = 0;
  snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
  FILE *f = pid > 0 ? fopen(p, "r") : NULL;
  if (f && fgets(st, sizeof st, f)) {
    char *c = strrchr(st, ')');
    for (int field = 2; c && *c; c++) /* field 22 of stat is starttime */
      if (*c == ' ' && ++field == 22) {
        start = strtoull(c + 1, NULL, 10);
        break;
      }
  }
  if (f) fclose(f);
  if (pid > 0 ? !start : !boot) return -1;
  char ps[16], ss[32];
  snprintf(ps, sizeof ps, "%d", (int)pid);
  snprintf(ss, sizeof ss, "%llu", start);
  const char *const by_pid[] = {"pid", ps, "starttime", ss, NULL};
  const char *const by_boot[] = {"boot_id", boot, NULL};
  return engine_fixture_record_set(&F, id, pid > 0 ? by_pid : by_boot);
}

/* Freezes (1) id's cgroups by hand, as a pause does, or says (-1) whether
 * they are frozen: through the freezer its runtime record names (cgroup2's
 * cgroup.freeze, else v1's freezer.state). -1 asked: 1 frozen, 0 not. */
static int cg_freeze(const char *id, int how) {
  char p[300], line[4200], d[4200] = "";
  snprintf(p, sizeof p, "%s/sandboxes/%s/state", F.state, id);
  FILE *f = fopen(p, "r");
  int v2 = 0;
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *eq = strchr(line, '=');
    if (strncmp(line, "cgroup.", 7) || !eq) continue;
    char t[4300];
    snprintf(t, sizeof t, "%s/cgroup.freeze", eq + 1);
    if (access(t, F_OK) == 0) {
      snprintf(d, sizeof d, "%s", eq + 1), v2 = 1;
      break;
    }
    snprintf(t, sizeof t, "%s/freezer.state", eq + 1);
    if (access(t, F_OK) == 0) snprintf(d, sizeof d, "%s", eq + 1);
  }
  if (f) fclose(f);
  if (!d[0]) return -1;
  char file[4300], buf[512] = "";
  if (how == 1) {
    snprintf(file, sizeof file, "%s/%s", d, v2 ? "cgroup.freeze" : "freezer.state");
    if (!(f = fopen(file, "w"))) return -1;
    fputs(v2 ? "1" : "FROZEN", f);
    if (fclose(f)) return -1;
  }
  snprintf(file, sizeof file, "%s/%s", d, v2 ? "cgroup.events" : "freezer.state");
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(10000)) {
    if (!(f = fopen(file, "r"))) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    int frozen = v2 ? strstr(buf, "frozen 1") != NULL : !strncmp(buf, "FROZEN", 6);
    if (how != 1) return frozen;
    if (frozen) return 1;
  }
  return -1;
}

/* GET /health of id's envd through the loopback URL http://127.0.0.1:lport
 * (with its access token): the status, 0 if nothing answered. */
static void envd_token(const char *id, char *tok, size_t len) {
  char p[128], *b = NULL;
  snprintf(p, sizeof p, "/sandboxes/%s", id);
  tok[0] = 0;
  if (api("GET", p, NULL, &b) == 200 && b && strstr(b, "\"envdAccessToken\":\"")) {
    const char *t = strstr(b, "\"envdAccessToken\":\"") + 19;
    snprintf(tok, len, "%.*s", (int)strcspn(t, "\""), t);
  }
  free(b);
}

/* A connection to the loopback port that the engine accepted and answered
 * one request on, left open (keep-alive): its socket, or -1. */
static int loopback_hold(const char *id, int lport) {
  char tok[128], req[400], buf[64];
  envd_token(id, tok, sizeof tok);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)lport)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int n = snprintf(req, sizeof req, "GET /health HTTP/1.1\r\nHost: x\r\nX-Access-Token: %s\r\n\r\n",
                   tok);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      write(fd, req, (size_t)n) != n || read(fd, buf, 9) != 9 || memcmp(buf, "HTTP/1.1 ", 9) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

static long loopback_health(const char *id, int lport) {
  char tok[128];
  envd_token(id, tok, sizeof tok);
  CURL *h = curl_easy_init();
  char url[64], hdr[200];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/health", lport);
  snprintf(hdr, sizeof hdr, "X-Access-Token: %s", tok);
  struct curl_slist *hl = curl_slist_append(NULL, hdr);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
  engine_http_buf body = {calloc(1, 1), 0};
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, engine_http_sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
  long st = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
  if (st / 100 != 2) fprintf(stderr, "%s: %ld %s\n", url, st, body.p ? body.p : "");
  free(body.p);
  curl_slist_free_all(hl);
  curl_easy_cleanup(h);
  return st;
}

/* POST /sandboxes/{id}/ports/{port}/loopback: its loopback port, or 0. */
static int loopback_open(const char *id, int port) {
  char p[128], *b = NULL;
  snprintf(p, sizeof p, "/sandboxes/%s/ports/%d/loopback", id, port);
  int lport = 0;
  if (api("POST", p, NULL, &b) == 200 && b && strstr(b, "\"loopbackPort\":"))
    lport = atoi(strstr(b, "\"loopbackPort\":") + 15);
  free(b);
  return lport;
}

static int gone_for(const char *id, const char *reason) {
  char p[128], *b = NULL;
  snprintf(p, sizeof p, "/sandboxes/%s", id);
  long st = api("GET", p, NULL, &b);
  int ok = st == 404 && b && strstr(b, reason);
  if (!ok) fprintf(stderr, "GET %s: %ld %s\n", p, st, b ? b : "");
  free(b);
  return ok;
}

/* kill -9 of the engine: a sandbox paused with memory is adopted paused and
 * thaws where it was (its process counting on, envd with the same token,
 * its loopback URL on the same port);
 * one whose init died meanwhile is gone (engine_restart); a record naming
 * a live process that is not the sandbox's init (pid and start time
 * reused, as after a reboot) adopts nothing and leaves that process be;
 * one paused with memory in another boot of the host is paused without
 * memory now (files kept, booted on connect); one frozen by a pause the
 * crash cut short (not recorded, never answered) is running, thawed. */
TEST(paused_with_memory_survives_engine_crash) {
  asb_sandbox *sb = NULL, *dead = NULL, *forged = NULL, *reboot = NULL, *mid = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  REQUIRE_RC(asb_sandbox_create(&dead, C, &o), ASB_OK);
  REQUIRE_RC(asb_sandbox_create(&forged, C, &o), ASB_OK);
  REQUIRE_RC(asb_sandbox_create(&reboot, C, &o), ASB_OK);
  REQUIRE_RC(asb_sandbox_create(&mid, C, &o), ASB_OK);
  char id[64], dead_id[64], forged_id[64], reboot_id[64];
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  snprintf(dead_id, sizeof dead_id, "%s", asb_sandbox_id(dead));
  snprintf(forged_id, sizeof forged_id, "%s", asb_sandbox_id(forged));
  snprintf(reboot_id, sizeof reboot_id, "%s", asb_sandbox_id(reboot));
  asb_process *p = start_counter(sb);
  REQUIRE(p != NULL);
  unsigned pid = asb_process_pid(p);
  int lport = loopback_open(id, 49983); /* envd's port at a loopback URL */
  CHECK(lport > 0);
  CHECK_INT(loopback_health(id, lport) / 100, 2);
  /* a client connected at the crash: the engine's end of it, orphaned,
   * holds the port (FIN_WAIT2, then TIME_WAIT) when the next one wants it */
  int held = loopback_hold(id, lport);
  CHECK(held >= 0);
  CHECK_INT(pause_req(id, NULL), 204);
  CHECK_INT(pause_req(dead_id, NULL), 204);
  CHECK_INT(pause_req(forged_id, NULL), 204);
  REQUIRE_RC(asb_files_write(NULL, reboot, "/home/user/kept", "kept", 4, NULL), ASB_OK);
  REQUIRE_RC(asbt_start(NULL, reboot, NULL, "sleep 1000"), ASB_OK);
  CHECK_INT(pause_req(reboot_id, NULL), 204);
  pid_t foreign = fork(); /* an unrelated live process of the host */
  if (foreign == 0) {
    for (;;) pause();
  }
  REQUIRE(foreign > 0);
  int dead_init = recorded_init(dead_id);
  engine_fixture_signal(&F, SIGKILL);
  CHECK(dead_init > 0 && kill(dead_init, SIGKILL) == 0);
  CHECK(forge_record(forged_id, foreign, NULL) == 0);
  CHECK(forge_record(reboot_id, 0, "00000000-0000-4000-8000-000000000000") == 0);
  /* the engine died between freezing one and recording its pause */
  CHECK_INT(cg_freeze(asb_sandbox_id(mid), 1), 1);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  /* not paused as far as anyone was told: running, thawed */
  CHECK_INT(cg_freeze(asb_sandbox_id(mid), -1), 0);
  CHECK(info_has(asb_sandbox_id(mid), "\"state\":\"running\""));
  char *alive = asbt_run_out(mid, "echo alive");
  CHECK_STR(alive, "alive\n");
  free(alive);

  CHECK(info_has(id, "\"state\":\"paused\""));
  CHECK(info_has(id, "\"pauseMode\":\"memory\""));
  char *b = NULL;
  CHECK_INT(api("GET", "/v2/sandboxes?state=paused", NULL, &b), 200);
  CHECK(b && strstr(b, id) && !strstr(b, dead_id) && !strstr(b, forged_id) && strstr(b, reboot_id));
  free(b);
  CHECK(gone_for(dead_id, "engine_restart"));
  CHECK(gone_for(forged_id, "engine_restart"));
  /* paused with memory in another boot: its processes are not adopted (a
   * reboot ended them), its files are kept: paused without memory now */
  CHECK(info_has(reboot_id, "\"pauseMode\":\"filesystem\""));
  CHECK_INT(connect_req(reboot_id), 201);
  char *kept = asbt_run_out(reboot, "cat /home/user/kept; pgrep -x sleep || echo none");
  CHECK_STR(kept, "keptnone\n");
  free(kept);
  CHECK(kill(foreign, 0) == 0); /* not killed as the sandbox's init */
  kill(foreign, SIGKILL);
  waitpid(foreign, NULL, 0);

  CHECK_INT(connect_req(id), 201);
  CHECK(info_has(id, "\"state\":\"running\""));
  long at = counted(sb); /* the old handle's token: envd is the same */
  CHECK(at >= 3);
  CHECK(counts_past(sb, at) > at + 5);
  char cmd[64];
  CHECK_INT(loopback_health(id, lport) / 100, 2); /* the same loopback URL */
  CHECK_INT(loopback_open(id, 49983), lport);
  if (held >= 0) close(held);
  snprintf(cmd, sizeof cmd, "kill -0 %u && echo same", pid);
  char *out = asbt_run_out(sb, cmd);
  CHECK_STR(out, "same\n");
  free(out);
  asb_process_free(p);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_kill(dead, NULL);
  asb_sandbox_kill(forged, NULL);
  asb_sandbox_kill(reboot, NULL);
  asb_sandbox_kill(mid, NULL);
  asb_sandbox_free(mid);
  asb_sandbox_free(sb);
  asb_sandbox_free(dead);
  asb_sandbox_free(forged);
  asb_sandbox_free(reboot);
}

/* A clean stop (SIGTERM, without --kill-on-exit) leaves it paused too, and
 * the next engine's router auto-resumes it (autoResume) on traffic. */
TEST(paused_with_memory_survives_engine_stop) {
  /* an engine that leaves its sandboxes when it stops (the default) */
  engine_fixture_signal(&F, SIGTERM);
  REQUIRE(engine_fixture_launch(&F, 0) == 0);
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  o.auto_pause = 1;
  o.auto_resume = 1;
  asb_process *p = NULL;
  if (asb_sandbox_create(&sb, C, &o) == ASB_OK) p = start_counter(sb);
  int paused = p && pause_req(asb_sandbox_id(sb), NULL) == 204;
  engine_fixture_signal(&F, SIGTERM);
  /* back to one that kills what is left if the test dies */
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  REQUIRE(sb && p && paused);
  const char *id = asb_sandbox_id(sb);
  CHECK(info_has(id, "\"pauseMode\":\"memory\""));
  CHECK(info_has(id, "\"autoResume\":true"));
  long at = counted(sb); /* a request to envd: it wakes the sandbox */
  CHECK(at >= 3);
  CHECK(info_has(id, "\"state\":\"running\""));
  CHECK(counts_past(sb, at) > at + 5);
  asb_process_free(p);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

static long kill_raw(const char *id) {
  char p[128];
  snprintf(p, sizeof p, "/sandboxes/%s", id);
  return api("DELETE", p, NULL, NULL);
}

/* E2B's "sleep" lifecycle: autoPause on timeout, autoResume on traffic.
 * A server started before the pause answers the request that woke it. */
TEST(auto_pause_then_auto_resume_by_port_request) {
  char id[64] = "", *b = NULL;
  CHECK_INT(api("POST", "/sandboxes",
                "{\"templateID\":\"base\",\"autoPause\":true,\"autoPauseMemory\":false,"
                "\"autoResume\":{\"enabled\":true}}",
                &b),
            400);
  CHECK(b && strstr(b, "autoPauseMemory"));
  free(b);
  CHECK_INT(api("POST", "/sandboxes", "{\"templateID\":\"base\",\"autoResume\":true}", NULL), 400);
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 30000;
  o.auto_pause = 1;
  o.auto_resume = 1;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  CHECK(info_has(id, "\"lifecycle\":{\"autoResume\":true,\"onTimeout\":\"pause\"}"));
  o.auto_pause_files_only = 1; /* with auto_resume: refused, as E2B refuses it */
  asb_sandbox *bad = NULL;
  CHECK_RC(asb_sandbox_create(&bad, C, &o), ASB_EINVAL);
  REQUIRE_RC(asb_files_write(NULL, sb, "/home/user/www/index.txt", "awake", 5, NULL), ASB_OK);
  asb_command_options co = ASB_COMMAND_OPTIONS_INIT;
  co.cwd = "/home/user/www";
  co.timeout_ms = -1;
  asb_process *p = NULL;
  REQUIRE_RC(asb_commands_start(&p, sb, "python3 -m http.server 8000 --bind 127.0.0.1", &co),
             ASB_OK);
  long st = 0;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; st != 200 && asbt_now_ms() < end;) {
    st = http("GET", "/index.txt", NULL, id, 8000, NULL);
    if (st != 200) usleep(100000);
  }
  CHECK_INT(st, 200);
  /* its lifetime ends soon: it pauses (with memory) instead of dying */
  char p2[128];
  snprintf(p2, sizeof p2, "/sandboxes/%s/timeout", id);
  CHECK_INT(api("POST", p2, "{\"timeout\": 1}", NULL), 204);
  CHECK(wait_info(id, "\"pauseMode\":\"memory\""));
  /* a request to its port resumes it and is served */
  b = NULL;
  CHECK_INT(http("GET", "/index.txt", NULL, id, 8000, &b), 200);
  CHECK_STR(b, "awake");
  free(b);
  CHECK(info_has(id, "\"state\":\"running\""));
  /* envd's port too */
  CHECK_INT(pause_req(id, NULL), 204);
  CHECK_INT(http("GET", "/health", NULL, id, 49983, NULL) / 100, 2);
  CHECK(info_has(id, "\"state\":\"running\""));
  /* paused without memory: traffic does not boot it (E2B refuses too) */
  CHECK_INT(pause_req(id, "{\"memory\": false}"), 204);
  CHECK_INT(http("GET", "/index.txt", NULL, id, 8000, NULL), 502);
  CHECK(info_has(id, "\"pauseMode\":\"filesystem\""));
  asb_process_free(p);
  asb_sandbox_free(sb);
  CHECK_INT(kill_raw(id), 204);
}

/* A request without the credentials its port needs does not wake a
 * sandbox whose ports are private (allowPublicTraffic false): neither a
 * port without the traffic token (403) nor envd's without its access token
 * (502, still paused); with them it does. */
TEST(auto_resume_needs_the_ports_credentials) {
  char *b = NULL;
  REQUIRE(api("POST", "/sandboxes",
              "{\"templateID\":\"base\",\"timeout\":60,\"autoPause\":true,"
              "\"autoResume\":{\"enabled\":true},\"network\":{\"allowPublicTraffic\":false}}",
              &b) == 201);
  char id[64] = "", tt[128] = "", at[128] = "";
  const char *k = strstr(b, "\"sandboxID\":\"");
  const char *t = strstr(b, "\"trafficAccessToken\":\"");
  const char *a = strstr(b, "\"envdAccessToken\":\"");
  REQUIRE(k && t && a);
  snprintf(id, sizeof id, "%.*s", (int)strcspn(k + 13, "\""), k + 13);
  snprintf(tt, sizeof tt, "%.*s", (int)strcspn(t + 22, "\""), t + 22);
  snprintf(at, sizeof at, "%.*s", (int)strcspn(a + 19, "\""), a + 19);
  free(b);
  CHECK_INT(pause_req(id, NULL), 204);
  CHECK_INT(http_h("GET", "/", id, 8000, NULL, NULL), 403);
  CHECK_INT(http_h("GET", "/", id, 8000, "E2B-Traffic-Access-Token: wrong", NULL), 403);
  CHECK_INT(http_h("GET", "/health", id, 49983, NULL, NULL), 502);
  CHECK_INT(http_h("GET", "/health", id, 49983, "X-Access-Token: wrong", NULL), 502);
  CHECK(info_has(id, "\"state\":\"paused\""));
  char h[200];
  snprintf(h, sizeof h, "X-Access-Token: %s", at);
  CHECK_INT(http_h("GET", "/health", id, 49983, h, NULL) / 100, 2);
  CHECK(info_has(id, "\"state\":\"running\""));
  CHECK_INT(pause_req(id, NULL), 204);
  snprintf(h, sizeof h, "E2B-Traffic-Access-Token: %s", tt);
  CHECK_INT(http_h("GET", "/", id, 8000, h, NULL), 502); /* woken; nothing listens there */
  CHECK(info_has(id, "\"state\":\"running\""));
  CHECK_INT(kill_raw(id), 204);
}

/* Without autoResume a paused sandbox's port stays 502 sandbox_paused;
 * autoPauseMemory: false pauses on timeout without memory. */
TEST(no_auto_resume_and_auto_pause_without_memory) {
  char id[64] = "";
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 30000;
  o.auto_pause = 1;
  o.auto_pause_files_only = 1;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  snprintf(id, sizeof id, "%s", asb_sandbox_id(sb));
  CHECK(info_has(id, "\"autoResume\":false"));
  char p[128];
  snprintf(p, sizeof p, "/sandboxes/%s/timeout", id);
  CHECK_INT(api("POST", p, "{\"timeout\": 1}", NULL), 204);
  CHECK(wait_info(id, "\"pauseMode\":\"filesystem\""));
  char *b = NULL;
  CHECK_INT(http("GET", "/health", NULL, id, 49983, &b), 502);
  CHECK(b && strstr(b, "sandbox_paused"));
  free(b);
  CHECK_INT(connect_req(id), 201);
  CHECK(info_has(id, "\"state\":\"running\""));
  CHECK_INT(pause_req(id, "{}"), 204); /* memory kept: no autoResume, still 502 */
  CHECK_INT(http("GET", "/health", NULL, id, 49983, NULL), 502);
  CHECK(info_has(id, "\"pauseMode\":\"memory\""));
  CHECK_INT(kill_raw(id), 204);
  asb_sandbox_free(sb);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (engine_fixture_start(&F, "e2e-pause") != 0 || engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine (%s)\n", ASB_ENGINE_BIN);
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(pause_without_memory_reboots_keeping_files);
  RUN(paused_without_memory_survives_engine_restart);
  RUN(paused_with_memory_survives_engine_crash);
  RUN(paused_with_memory_survives_engine_stop);
  RUN(auto_pause_then_auto_resume_by_port_request);
  RUN(auto_resume_needs_the_ports_credentials);
  RUN(no_auto_resume_and_auto_pause_without_memory);
  asb_client_free(C);
  engine_fixture_stop(&F);
  curl_global_cleanup();
  TEST_MAIN_END();
}
