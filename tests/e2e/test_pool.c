/* Warm pools against a real agent-sandboxd (docs/engine.md "Warm pools"):
 * creates claim pooled sandboxes and the pool refills; a pooled sandbox is
 * field by field what a fresh create gives (writable layer, /tmp, process
 * table, environment, hostname, envd token) and keeps nothing of the
 * claimant before it; an empty pool falls back to a fresh create; pooled
 * sandboxes are not listed, are drained when their template is deleted,
 * killed when the engine stops (without --kill-on-exit too) and reaped,
 * unrecorded, when it restarts after a crash; a host short of memory holds
 * the refill. One engine (restarted). Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dirent.h>
#include <sys/stat.h>

#include "asb_testing.h"
#include "engine_http.h"
#include "template_dir.h"

static engine_fixture F;
static asb_client *C;
static char WORK[128];
static char TMPL_ID[64];

#ifdef ASB_HAVE_CODEI
static const char *const ENGINE_ARGS[] = {"--pool-template",
                                          "base=0",
                                          "--pool-template",
                                          "code-interpreter-v1=1",
                                          "--pool-min-available",
                                          "0",
                                          NULL};
#else
static const char *const ENGINE_ARGS[] = {"--pool-template", "base=0", "--pool-min-available", "0",
                                          NULL};
#endif

static const char YAML[] =
    "name: pool-e2e\n"
    "start: \"sleep 100000\"\n"
    "pool:\n"
    "  size: 1\n";

static int count_dir(const char *path) {
  DIR *d = opendir(path);
  if (!d) return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static int sandboxes_on_disk(void) {
  char p[256];
  snprintf(p, sizeof p, "%s/sandboxes", F.state);
  return count_dir(p);
}

static int count_subdirs(const char *path) {
  DIR *d = opendir(path);
  if (!d) return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.' && de->d_type == DT_DIR) n++;
  closedir(d);
  return n;
}

/* Sandbox cgroups of the engine (dirs below its cgroup name, in every
 * hierarchy). */
static int cgroups_of_engine(void) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "find /sys/fs/cgroup -maxdepth 6 -type d -name '%s' 2>/dev/null",
           F.cgroup);
  FILE *p = popen(cmd, "r");
  int n = 0;
  char line[512];
  while (p && fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = 0;
    n += count_subdirs(line);
  }
  if (p) pclose(p);
  return n;
}

/* A field of the template's "pool" object in GET /templates/{name}, or -1. */
static long pool_field(const char *tmpl, const char *field) {
  asb_template *t = NULL;
  if (asb_templates_get(&t, C, tmpl, NULL) != ASB_OK) return -1;
  cJSON *j = cJSON_Parse(asb_template_json(t));
  asb_template_free(t);
  const cJSON *v =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "pool"), field);
  long r = cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
  cJSON_Delete(j);
  return r;
}

static int wait_ready(const char *tmpl, long want) {
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(20000))
    if (pool_field(tmpl, "ready") == want) return 1;
  return 0;
}

static asb_sandbox *make(const char *tmpl, const char *const *envs) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = tmpl;
  o.timeout_ms = 300000;
  o.envs = envs;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, C, &o) != ASB_OK) {
    fprintf(stderr, "create %s: %s\n", tmpl, asb_error_last()->message);
    return NULL;
  }
  return sb;
}

/* stdout of cmd as root, with the sandbox's own id replaced by "<ID>",
 * runs of 64 hex digits (the tokens' hashes on the code interpreter's
 * command line) by "<SHA256>" and the fresh one's own variable "FOO=bar "
 * dropped (with asb-init's "-a N", where the aux agent's words start: one
 * later for it), so two sandboxes' views compare. */
static char *view(asb_sandbox *sb, const char *cmd) {
  asb_command_result *r = NULL;
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.user = "root";
  if (asb_commands_run(&r, sb, cmd, &o) != ASB_OK) {
    fprintf(stderr, "run '%s': %s\n", cmd, asb_error_last()->message);
    asb_command_result_free(r);
    return strdup("<error>");
  }
  const char *out = asb_command_result_stdout(r, NULL);
  const char *id = asb_sandbox_id(sb);
  size_t idl = strlen(id);
  char *s = malloc(strlen(out) * 2 + 16), *w = s;
  for (const char *p = out; *p;) {
    size_t hex = strspn(p, "0123456789abcdef");
    if (!strncmp(p, id, idl)) {
      w += sprintf(w, "<ID>");
      p += idl;
    } else if (hex == 64) {
      w += sprintf(w, "<SHA256>");
      p += hex;
    } else if (!strncmp(p, "FOO=bar ", 8)) {
      p += 8;
    } else if (!strncmp(p, " -a ", 4) && p[4] >= '0' && p[4] <= '9') {
      w += sprintf(w, " -a N");
      p += 4 + strspn(p + 4, "0123456789");
    } else if (hex) {
      memcpy(w, p, hex);
      w += hex;
      p += hex;
    } else {
      *w++ = *p++;
    }
  }
  *w = 0;
  asb_command_result_free(r);
  return s;
}

/* What is compared between two sandboxes of one template. */
static const struct {
  const char *what, *cmd;
} FIELDS[] = {
    {"writable layer (every path on the root fs)", "find / -xdev 2>/dev/null | sort"},
    {"/tmp", "ls -la --time-style=+ /tmp | sed 1d | awk '{print $1, $3, $4, $NF}'"},
    /* envd's login shells (pre-started ones, and the shell of a command that
     * ran in one) are envd's, not the sandbox's state: docs/envd.md */
    {"process table",
     "for p in /proc/[0-9]*; do [ -r $p/cmdline ] && tr '\\0' ' ' < $p/cmdline && echo; done | "
     "grep -v -e '^$' -e 'tr ' -e '/proc/\\[0-9\\]' -e sort -e __asb_boot | sort"},
    {"environment", "env | grep -v -e '^FOO=' -e '^_=' -e '^SHLVL=' | sort"},
    {"hostname", "hostname; cat /etc/hostname /etc/hosts"},
};

/* curl status of GET /files?path=/etc/hostname in sandbox id with token
 * tok. */
static long envd_status_id(const char *id, const char *tok) {
  char htok[128];
  snprintf(htok, sizeof htok, "X-Access-Token: %s", tok);
  const char *hs[] = {htok, NULL};
  engine_req r = {.sandbox = id, .headers = hs};
  return engine_http(&F, "GET", "/files?path=/etc/hostname&username=root", &r, NULL);
}

static long envd_status(asb_sandbox *sb, const char *tok) {
  return envd_status_id(asb_sandbox_id(sb), tok);
}

TEST(build_template_with_pool_section) {
  const char *dir = asbt_template_dir(WORK, "t", YAML, NULL);
  REQUIRE(dir);
  asb_template *t = NULL;
  REQUIRE_RC(asb_templates_build(&t, C, dir, NULL), ASB_OK);
  snprintf(TMPL_ID, sizeof TMPL_ID, "%s", asb_template_id(t));
  asb_template_free(t);
  CHECK_INT(pool_field("pool-e2e", "target"), 1);
  REQUIRE(wait_ready("pool-e2e", 1));
#ifdef ASB_HAVE_CODEI
  REQUIRE(wait_ready("code-interpreter-v1", 1)); /* every dir on disk a ready one */
#endif
  /* a pooled sandbox is nobody's: not listed, and nothing reaches it (the
   * router does not know its id; its envd has a token nobody was given) */
  char id[64] = "", sdir[256];
  snprintf(sdir, sizeof sdir, "%s/sandboxes", F.state);
  DIR *d = opendir(sdir);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.') snprintf(id, sizeof id, "%s", de->d_name);
  if (d) closedir(d);
  REQUIRE(id[0]);
  CHECK_INT(envd_status_id(id, ""), 502);
  CHECK_INT(envd_status_id(id, F.key), 502);
  asb_sandbox_page *p = NULL;
  REQUIRE_RC(asb_sandbox_list(&p, C, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_page_count(p), 0);
  asb_sandbox_page_free(p);
}

TEST(claim_refill_and_a_pooled_sandbox_is_a_fresh_one) {
  /* A: from the pool; it runs user code and leaves traces */
  REQUIRE(wait_ready("pool-e2e", 1));
  asb_sandbox *a = make("pool-e2e", NULL);
  REQUIRE(a);
  CHECK_INT(pool_field("pool-e2e", "claims"), 1);
  char *out = view(a,
                   "echo hi > /tmp/left-by-a; "
                   "SECRET_A=alpha setsid sleep 7777 </dev/null >/dev/null 2>&1 & "
                   "hostname; echo $SECRET_A");
  CHECK_STR(out, "<ID>\n\n");
  free(out);
  /* refill: the pool makes the next one in the background */
  REQUIRE(wait_ready("pool-e2e", 1));
  asb_sandbox *b = make("pool-e2e", NULL);
  REQUIRE(b);
  CHECK_INT(pool_field("pool-e2e", "claims"), 2);
  /* env vars and a start command: the start command (and the code
   * interpreter's argv) got their environment in prepare, so this one is
   * made fresh (a miss), the pool left alone */
  const char *envs_f[] = {"FOO=bar", NULL};
  long misses = pool_field("pool-e2e", "misses");
  asb_sandbox *fr = make("pool-e2e", envs_f);
  REQUIRE(fr);
  CHECK_INT(pool_field("pool-e2e", "misses"), misses + 1);
  CHECK_INT(pool_field("pool-e2e", "claims"), 2);
  out = view(fr, "echo $FOO");
  CHECK_STR(out, "bar\n");
  free(out);
  /* B (pooled after A) against the fresh one, field by field */
  for (size_t i = 0; i < sizeof FIELDS / sizeof *FIELDS; i++) {
    char *vb = view(b, FIELDS[i].cmd), *vf = view(fr, FIELDS[i].cmd);
    if (strcmp(vb, vf))
      ASBT_FAIL("%s differs:\n--- pooled\n%s--- fresh\n%s", FIELDS[i].what, vb, vf);
    CHECK(strcmp(vb, "<error>"));
    free(vb);
    free(vf);
  }
  /* the comparison sees traces: A's (user code ran) differ from the fresh one */
  for (size_t i = 1; i < 3; i++) {
    char *va = view(a, FIELDS[i].cmd), *vf = view(fr, FIELDS[i].cmd);
    if (!strcmp(va, vf)) ASBT_FAIL("%s: A's traces are not seen", FIELDS[i].what);
    free(va);
    free(vf);
  }
  /* nothing of A in B */
  out = view(b,
             "ls /tmp/left-by-a 2>&1 >/dev/null | wc -l; pgrep -c -f 'sleep 777[7]'; "
             "echo ${SECRET_A:-none}; hostname");
  CHECK_STR(out, "1\n0\nnone\n<ID>\n");
  free(out);
  CHECK(strcmp(asb_sandbox_id(a), asb_sandbox_id(b)));
  /* envd tokens: each its own, and only its own works */
  const char *ta = asb_sandbox_envd_access_token(a), *tb = asb_sandbox_envd_access_token(b);
  CHECK(ta && tb && strcmp(ta, tb));
  CHECK_INT(envd_status(b, tb), 200);
  CHECK_INT(envd_status(b, ta), 401);
  CHECK_INT(envd_status(a, tb), 401);
  CHECK_INT(envd_status(fr, tb), 401);
  /* listed: exactly the three handed out */
  asb_sandbox_page *p = NULL;
  REQUIRE_RC(asb_sandbox_list(&p, C, NULL), ASB_OK);
  CHECK_INT(asb_sandbox_page_count(p), 3);
  asb_sandbox_page_free(p);
  asb_sandbox *all[] = {a, b, fr};
  for (int i = 0; i < 3; i++) {
    CHECK_RC(asb_sandbox_kill(all[i], NULL), ASB_OK);
    asb_sandbox_free(all[i]);
  }
}

TEST(empty_pool_falls_back_to_a_fresh_create) {
  /* base=0: its pool stays empty; a create is a fresh one, counted */
  CHECK_INT(pool_field("base", "target"), 0);
  asb_sandbox *sb = make("base", NULL);
  REQUIRE(sb);
  CHECK_INT(pool_field("base", "misses"), 1);
  CHECK_INT(pool_field("base", "claims"), 0);
  CHECK_INT(pool_field("base", "ready"), 0);
  char *out = view(sb, "hostname");
  CHECK_STR(out, "<ID>\n");
  free(out);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

/* A pooled template whose start command ends (`echo hi`) before its ready
 * check passes (the check fails once after the end): the pool fills, as a
 * create does (the refill used to fail it over and over). */
TEST(pool_of_a_start_command_that_exits) {
  const char *dir =
      asbt_template_dir(WORK, "exits",
                        "name: pool-exits\n"
                        "start: 'echo $$ > /tmp/start.pid; echo hi'\n"
                        "ready: {cmd: 'p=$(cat /tmp/start.pid 2>/dev/null) && { grep -qs "
                        "\"^State:[[:space:]]*[ZX]\" /proc/$p/status || ! [ -e /proc/$p ]; } && "
                        "{ [ -e /tmp/seen ] || { touch /tmp/seen; false; }; }', interval: 20}\n"
                        "pool:\n"
                        "  size: 1\n",
                        NULL);
  REQUIRE(dir);
  asb_template *t = NULL;
  REQUIRE_RC(asb_templates_build(&t, C, dir, NULL), ASB_OK);
  asb_template_free(t);
  asb_sandbox *sb = NULL;
  if (!wait_ready("pool-exits", 1))
    ASBT_FAIL("the pool of pool-exits did not fill (see the engine's log)");
  else if ((sb = make("pool-exits", NULL))) {
    CHECK_INT(pool_field("pool-exits", "claims"), 1);
    char *out = view(sb, "cat /var/log/asb/start.log");
    CHECK_STR(out, "hi\n");
    free(out);
    CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
    asb_sandbox_free(sb);
  } else {
    ASBT_FAIL("create pool-exits: %s", asb_error_last()->message);
  }
  /* also when it failed: its pool drained for the tests after this one
   * (409 while the refill is making one) */
  int rc = ASB_EEXISTS;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; rc == ASB_EEXISTS && asbt_now_ms() < end;)
    if ((rc = asb_templates_delete(C, "pool-exits", NULL)) == ASB_EEXISTS) usleep(20000);
  CHECK_RC(rc, ASB_OK);
}

#ifdef ASB_HAVE_CODEI
/* code-interpreter-v1=1: the pooled sandbox has its interpreter and kernel
 * up; the claim's first run_code answers from it, with the claimant's
 * tokens (the interpreter got their hashes in prepare). */
TEST(code_interpreter_pool_has_a_warm_kernel) {
  REQUIRE(wait_ready("code-interpreter-v1", 1));
  CHECK(pool_field("code-interpreter-v1", "memoryBytesPerSandbox") > 0);
  asb_sandbox *sb = make("code-interpreter-v1", NULL);
  REQUIRE(sb);
  CHECK_INT(pool_field("code-interpreter-v1", "claims"), 1);
  asb_execution *x = NULL;
  REQUIRE_RC(asb_code_run(&x, sb, "import socket; print(socket.gethostname()); 6 * 7", NULL),
             ASB_OK);
  CHECK_STR(asb_execution_text(x), "42");
  const char *out = asb_execution_stdout_get(x, 0);
  CHECK(out && !strncmp(out, asb_sandbox_id(sb), strlen(asb_sandbox_id(sb))));
  asb_execution_free(x);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

static char *code_value(asb_sandbox *sb, const char *code, const char *lang) {
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.language = lang;
  asb_execution *x = NULL;
  char *v = NULL;
  if (asb_code_run(&x, sb, code, &o) != ASB_OK)
    v = strdup(asb_error_last()->message);
  else if (asb_execution_error_name(x))
    v = strdup(asb_execution_error_name(x));
  else if (asb_execution_text(x))
    v = strdup(asb_execution_text(x));
  else
    v = strdup(asb_execution_stdout_count(x) ? asb_execution_stdout_get(x, 0) : "<none>");
  asb_execution_free(x);
  return v;
}

/* A create with env vars is served by the pool too: the interpreter and
 * its kernels, started in prepare, take the claimant's envVars at the
 * claim (its python and javascript contexts, a context made later, the
 * value per-call env_vars go back to, and after the server restarts). */
TEST(code_interpreter_pool_serves_creates_with_envs) {
  REQUIRE(wait_ready("code-interpreter-v1", 1));
  long claims = pool_field("code-interpreter-v1", "claims");
  long misses = pool_field("code-interpreter-v1", "misses");
  const char *envs[] = {"POOL_FOO=bar baz", "POOL_N=7", NULL};
  asb_sandbox *sb = make("code-interpreter-v1", envs);
  REQUIRE(sb);
  CHECK_INT(pool_field("code-interpreter-v1", "claims"), claims + 1);
  CHECK_INT(pool_field("code-interpreter-v1", "misses"), misses);
  char *v = code_value(sb, "import os; os.environ.get('POOL_FOO'), os.environ.get('POOL_N')", NULL);
  CHECK_STR(v, "('bar baz', '7')");
  free(v);
  v = code_value(sb, "process.env.POOL_FOO", "javascript");
  CHECK_STR(v, "bar baz");
  free(v);
  v = code_value(sb, "echo \"$POOL_FOO\"", "bash"); /* a context made after the claim */
  CHECK_STR(v, "bar baz\n");
  free(v);
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  const char *per_call[] = {"POOL_FOO=other", NULL};
  o.envs = per_call;
  asb_execution *x = NULL;
  CHECK_RC(asb_code_run(&x, sb, "import os; os.environ['POOL_FOO']", &o), ASB_OK);
  CHECK_STR(asb_execution_text(x), "other");
  asb_execution_free(x);
  v = code_value(sb, "import os; os.environ['POOL_FOO']", NULL);
  CHECK_STR(v, "bar baz");
  free(v);
  /* killed, the server comes back with them (its state file) */
  char *out = view(sb,
                   "p=$(pgrep -f '[c]ode-interpreter --port' | grep -vx 1); kill -9 $p; "
                   "while kill -0 $p 2>/dev/null; do sleep 0.05; done; echo gone");
  CHECK_STR(out, "gone\n");
  free(out);
  v = code_value(sb, "1", NULL);
  CHECK_STR(v, "ContextRestarting");
  free(v);
  v = code_value(sb, "import os; os.environ.get('POOL_FOO')", NULL);
  CHECK_STR(v, "bar baz");
  free(v);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}
#endif

/* A pooled sandbox whose init dies while it waits (an OOM kill, a crash)
 * is swept out, its remains removed, and the pool refilled. */
TEST(a_pooled_sandbox_that_dies_is_swept_and_replaced) {
  /* both pools full: no dir on disk is a sandbox still being prepared */
  REQUIRE(wait_ready("pool-e2e", 1));
#ifdef ASB_HAVE_CODEI
  REQUIRE(wait_ready("code-interpreter-v1", 1));
#endif
  char sdir[256], id[64] = "", path[512], line[128];
  snprintf(sdir, sizeof sdir, "%s/sandboxes", F.state);
  DIR *d = opendir(sdir);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.') snprintf(id, sizeof id, "%s", de->d_name);
  if (d) closedir(d);
  REQUIRE(id[0]);
  snprintf(path, sizeof path, "%s/%s/state", sdir, id);
  FILE *f = fopen(path, "r");
  REQUIRE(f);
  pid_t pid = 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "pid=", 4)) pid = (pid_t)atoi(line + 4);
  fclose(f);
  REQUIRE(pid > 1);
  REQUIRE(kill(pid, SIGKILL) == 0);
  snprintf(path, sizeof path, "%s/%s", sdir, id);
  int gone = 0;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; !gone && asbt_now_ms() < end;
       usleep(20000))
    gone = access(path, F_OK) != 0;
  CHECK(gone);
  CHECK(wait_ready("pool-e2e", 1));
#ifdef ASB_HAVE_CODEI
  CHECK(wait_ready("code-interpreter-v1", 1));
#endif
}

TEST(template_delete_drains_its_pool) {
  /* on disk: pool-e2e's pooled one (unrecorded), and code-interpreter-v1's,
   * both full (so neither is being refilled while we count) */
  REQUIRE(wait_ready("pool-e2e", 1));
#ifdef ASB_HAVE_CODEI
  REQUIRE(wait_ready("code-interpreter-v1", 1));
#endif
  int before = sandboxes_on_disk(), cg = cgroups_of_engine();
  CHECK(before >= 1);
  CHECK_RC(asb_templates_delete(C, "pool-e2e", NULL), ASB_OK);
  CHECK_INT(sandboxes_on_disk(), before - 1);
  CHECK_INT(cgroups_of_engine(), cg - cg / before);
  asb_template *t = NULL;
  CHECK_RC(asb_templates_get(&t, C, "pool-e2e", NULL), ASB_ENOTFOUND);
}

/* The ids of the sandboxes on disk, newline-separated. */
static void ids_on_disk(char *out, size_t len) {
  char p[256];
  snprintf(p, sizeof p, "%s/sandboxes", F.state);
  out[0] = 0;
  DIR *d = opendir(p);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.') snprintf(out + strlen(out), len - strlen(out), "%s\n", de->d_name);
  if (d) closedir(d);
}

TEST(crash_restart_reaps_stop_kills_and_memory_bounds) {
  /* a pool of 2 of base; the engine dies with them (kill -9) */
  static const char *const args[] = {"--pool-template", "base=2", "--pool-min-available", "0",
                                     NULL};
  engine_fixture_signal(&F, SIGTERM);
  CHECK_INT(sandboxes_on_disk(), 0);
  F.extra_args = args;
  REQUIRE(engine_fixture_launch(&F, 0) == 0); /* without --kill-on-exit */
  REQUIRE(wait_ready("base", 2));
  char before[256];
  ids_on_disk(before, sizeof before);
  engine_fixture_signal(&F, SIGKILL);
  REQUIRE(engine_fixture_launch(&F, 0) == 0);
  /* the new engine kills the old pool's (unrecorded) sandboxes at start and
   * keeps no tombstone for them: nobody ever had their ids */
  for (char *id = before, *nl; (nl = strchr(id, '\n')); id = nl + 1) {
    *nl = 0;
    char path[512];
    snprintf(path, sizeof path, "%s/sandboxes/%s", F.state, id);
    CHECK(access(path, F_OK) != 0);
    asb_sandbox *sb = NULL;
    CHECK_RC(asb_sandbox_connect(&sb, C, id, 0, NULL), ASB_ESANDBOXNOTFOUND);
    CHECK(asb_error_last()->reason == NULL || !*asb_error_last()->reason);
  }
  REQUIRE(wait_ready("base", 2));
  /* a clean stop without --kill-on-exit kills the pool (nobody's) */
  engine_fixture_signal(&F, SIGTERM);
  CHECK_INT(sandboxes_on_disk(), 0);
  CHECK_INT(cgroups_of_engine(), 0);
  /* bounded by memory: with more MemAvailable wanted than any host has,
   * the pool is not filled, and says why */
  static const char *const starved[] = {"--pool-template", "base=2", "--pool-min-available",
                                        "1000000000", NULL};
  F.extra_args = starved;
  REQUIRE(engine_fixture_launch(&F, 0) == 0);
  int held = 0;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; !held && asbt_now_ms() < end;
       usleep(20000)) {
    asb_template *t = NULL;
    if (asb_templates_get(&t, C, "base", NULL) != ASB_OK) continue;
    held = strstr(asb_template_json(t), "\"heldByMemory\":true") != NULL;
    asb_template_free(t);
  }
  CHECK(held);
  CHECK_INT(pool_field("base", "ready"), 0);
  CHECK_INT(sandboxes_on_disk(), 0);
  /* and a create still works: an empty pool is a fresh create */
  asb_sandbox *sb = make("base", NULL);
  CHECK(sb != NULL);
  if (sb) {
    CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
    asb_sandbox_free(sb);
  }
  engine_fixture_signal(&F, SIGTERM);
  CHECK_INT(sandboxes_on_disk(), 0);
  CHECK_INT(cgroups_of_engine(), 0);
}

int main(void) {
  snprintf(WORK, sizeof WORK, "/tmp/asb-pool-work-%d", (int)getpid());
  mkdir(WORK, 0755);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (engine_fixture_start_args(&F, "pool", ENGINE_ARGS) != 0 ||
      engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine (%s)\n", ASB_ENGINE_BIN);
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(build_template_with_pool_section);
  RUN(claim_refill_and_a_pooled_sandbox_is_a_fresh_one);
  RUN(empty_pool_falls_back_to_a_fresh_create);
  RUN(pool_of_a_start_command_that_exits);
#ifdef ASB_HAVE_CODEI
  RUN(code_interpreter_pool_has_a_warm_kernel);
  RUN(code_interpreter_pool_serves_creates_with_envs);
#endif
  RUN(a_pooled_sandbox_that_dies_is_swept_and_replaced);
  RUN(template_delete_drains_its_pool);
  RUN(crash_restart_reaps_stop_kills_and_memory_bounds);
  asb_client_free(C);
  engine_fixture_stop(&F);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", WORK);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", WORK);
  curl_global_cleanup();
  TEST_MAIN_END();
}
