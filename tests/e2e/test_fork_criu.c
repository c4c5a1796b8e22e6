/* e2e.fork_criu: a fork of a running sandbox on an engine with
 * --pause-criu keeps the parent's processes (docs/snapshots.md). A shell
 * in the parent counts into /tmp/count (the number in its memory); after
 * POST /sandboxes/{id}/fork the fork's shell goes on from the parent's
 * number without a gap or a restart (the same process, the same memory),
 * the parent keeps counting, forkMode is "processes", and the tokens are
 * rotated: the parent's envd token is refused by the fork's envd and the
 * fork's by the parent's; a code interpreter's kernel goes on in the fork,
 * its interpreter taking the fork's token only. count 2 gives two forks
 * that count on their own; forking a killed sandbox is 404;
 * keepProcesses:false gives a fork booted
 * fresh on the files (forkMode "files", no counter running), and so does
 * a fork whose criu fails (the fallback; the parent runs on). The same
 * through the C ABI's fork options (asb_sandbox_fork_many, _fork_ex,
 * asb_sandbox_fork_mode).
 * Skips (77) when no criu binary is found (tests/support/criu_fixture.h).
 * Runs as root; the engine fixture cleans up also when a check fails.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>

#include "criu_fixture.h"

static engine_fixture F;
static asb_client *C;

static int start_counter(asb_sandbox *sb) {
  return criu_fixture_spawn(sb, NULL,
                            "i=0; while :; do echo $i >> /tmp/count; i=$((i+1)); sleep 0.05; done");
}

/* The string value of "key":"..." after from in json into out ("" if none). */
/* A sandbox of the fixture's engine (its id into id) whose counter has
 * passed 3 in order: *c0 the count read; NULL if either failed. */
static asb_sandbox *counting_parent(char *id, long *c0) {
  asb_sandbox *p = criu_fixture_sandbox(C, id, 0, 0);
  if (!p) return NULL;
  int in_order = 0;
  *c0 = start_counter(p) == ASB_OK ? criu_fixture_count_past(p, 3, &in_order) : -1;
  if (*c0 > 3 && in_order) return p;
  asbt_kill(p);
  return NULL;
}

static const char *field(const char *json, const char *key, char *out, size_t n) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":\"", key);
  const char *p = json ? strstr(json, k) : NULL;
  out[0] = 0;
  if (p) snprintf(out, n, "%.*s", (int)strcspn(p + strlen(k), "\""), p + strlen(k));
  return out;
}

typedef struct forked {
  char id[64], token[128], mode[32];
} forked;

/* POST /sandboxes/{id}/fork with body: the status; the forks' ids, envd
 * tokens and forkModes in out (up to n). */
static long fork_req(const char *id, const char *body, forked *out, int n) {
  char p[128], *b = NULL;
  snprintf(p, sizeof p, "/sandboxes/%s/fork", id);
  long st = engine_api(&F, "POST", p, body, &b);
  const char *at = b;
  for (int i = 0; i < n; i++) {
    memset(&out[i], 0, sizeof out[i]);
    const char *s = at ? strstr(at, "\"sandbox\":{") : NULL;
    if (!s) continue;
    /* this one's fields: up to the next fork's */
    const char *end = strstr(s + 1, "\"sandbox\":{");
    char one[4096];
    snprintf(one, sizeof one, "%.*s", end ? (int)(end - s) : (int)strlen(s), s);
    field(one, "sandboxID", out[i].id, sizeof out[i].id);
    field(one, "envdAccessToken", out[i].token, sizeof out[i].token);
    field(one, "forkMode", out[i].mode, sizeof out[i].mode);
    at = s + 1;
  }
  if (st != 201) fprintf(stderr, "fork %s: %ld %s\n", id, st, b ? b : "");
  free(b);
  return st;
}

/* GET /health of id's envd through the router with token: the status. */
static long envd_health(const char *id, const char *token) {
  char h[200];
  snprintf(h, sizeof h, "X-Access-Token: %s", token);
  const char *hs[] = {h, NULL};
  engine_req r = {.sandbox = id, .port = 49983, .headers = hs, .timeout_s = 60};
  return engine_http(&F, "GET", "/envs", &r, NULL);
}

static asb_sandbox *connect_to(const char *id) {
  asb_sandbox *sb = NULL;
  if (asb_sandbox_connect(&sb, C, id, 300000, NULL) != ASB_OK) {
    fprintf(stderr, "connect %s: %s\n", id, asb_error_last()->message);
    return NULL;
  }
  return sb;
}

/* The parent's envd token (GET /sandboxes/{id} has it). */
static void token_of(const char *id, char *out, size_t n) {
  char p[128], *b = NULL;
  snprintf(p, sizeof p, "/sandboxes/%s", id);
  out[0] = 0;
  if (engine_api(&F, "GET", p, NULL, &b) == 200) field(b, "envdAccessToken", out, n);
  free(b);
}

/* A fork of p (id pid_, counting past c0) with body that boots fresh on
 * the parent's files: forkMode "files", the parent's count in its file,
 * and no counter running in it while the parent counts on. */
static void check_files_fork(asb_sandbox *p, const char *pid_, const char *body, long c0) {
  forked k;
  CHECK_INT(fork_req(pid_, body, &k, 1), 201);
  CHECK_STR(k.mode, "files");
  asb_sandbox *f = k.id[0] ? connect_to(k.id) : NULL;
  CHECK(f != NULL);
  if (!f) return;
  int in_order = 0;
  long f0 = criu_fixture_last_count(f, &in_order);
  CHECK(f0 >= c0);                                                           /* the parent's file */
  CHECK(criu_fixture_count_past(p, f0 + 5, &in_order) > f0 + 5 && in_order); /* it runs on */
  CHECK_INT(criu_fixture_last_count(f, &in_order), f0); /* no counter in the fork */
  asbt_kill(f);
}

TEST(fork_keeps_the_running_processes) {
  char pid_[64], ptok[128];
  long c0;
  asb_sandbox *p = counting_parent(pid_, &c0);
  REQUIRE(p != NULL);
  int in_order = 0;
  token_of(pid_, ptok, sizeof ptok);
  CHECK(ptok[0] != 0);
  forked k;
  CHECK_INT(fork_req(pid_, "{}", &k, 1), 201);
  CHECK_STR(k.mode, "processes");
  asb_sandbox *f = k.id[0] ? connect_to(k.id) : NULL;
  CHECK(f != NULL);
  if (f) {
    /* the fork's shell goes on from the parent's number: its file counts
     * on without a restart (a fresh boot has no counter at all) */
    long f0 = criu_fixture_last_count(f, &in_order);
    CHECK(f0 >= c0 && in_order);
    long f1 = criu_fixture_count_past(f, f0 + 5, &in_order);
    CHECK(f1 > f0 + 5 && in_order);
    /* a boot id of its own, a version-4 UUID as a boot writes one (E2B's
     * tests tell sandboxes apart by it) */
    char *fb = asbt_run_out(f, "cat /proc/sys/kernel/random/boot_id");
    char *pb = asbt_run_out(p, "cat /proc/sys/kernel/random/boot_id");
    CHECK_INT((int)strlen(fb), 37);
    CHECK(fb[14] == '4' && fb[36] == '\n');
    CHECK(strcmp(fb, pb) != 0);
    free(fb);
    free(pb);
  }
  /* the parent keeps counting */
  long c1 = criu_fixture_count_past(p, c0 + 5, &in_order);
  CHECK(c1 > c0 + 5 && in_order);
  /* tokens rotated: each envd takes only its own */
  CHECK(strcmp(k.token, ptok) != 0);
  CHECK_INT(envd_health(k.id, k.token), 200);
  CHECK_INT(envd_health(k.id, ptok), 401);
  CHECK_INT(envd_health(pid_, ptok), 200);
  CHECK_INT(envd_health(pid_, k.token), 401);
  if (f) asbt_kill(f);
  asbt_kill(p);
}

TEST(two_forks_count_on_their_own) {
  char pid_[64];
  long c0;
  asb_sandbox *p = counting_parent(pid_, &c0);
  REQUIRE(p != NULL);
  int in_order = 0;
  forked k[2];
  CHECK_INT(fork_req(pid_, "{\"count\":2}", k, 2), 201);
  CHECK(k[0].id[0] && k[1].id[0] && strcmp(k[0].id, k[1].id) != 0);
  CHECK(strcmp(k[0].token, k[1].token) != 0);
  asb_sandbox *f[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    CHECK_STR(k[i].mode, "processes");
    f[i] = k[i].id[0] ? connect_to(k[i].id) : NULL;
    CHECK(f[i] != NULL);
  }
  if (f[0] && f[1]) {
    /* one fork's file written from outside: the other's is not */
    CHECK_RC(asb_files_write(NULL, f[0], "/tmp/mine", "0", 1, NULL), ASB_OK);
    long a0 = criu_fixture_last_count(f[0], &in_order),
         b0 = criu_fixture_last_count(f[1], &in_order);
    CHECK(a0 >= c0 && b0 >= c0);
    CHECK(criu_fixture_count_past(f[0], a0 + 5, &in_order) > a0 + 5 && in_order);
    CHECK(criu_fixture_count_past(f[1], b0 + 5, &in_order) > b0 + 5 && in_order);
    char *d = NULL;
    size_t n = 0;
    CHECK(asb_files_read(&d, &n, f[1], "/tmp/mine", NULL) != ASB_OK);
    asb_free(d);
    CHECK_INT(envd_health(k[0].id, k[1].token), 401);
    CHECK_INT(envd_health(k[1].id, k[0].token), 401);
  }
  for (int i = 0; i < 2; i++)
    if (f[i]) asbt_kill(f[i]);
  asbt_kill(p);
}

TEST(fresh_fork_on_request_and_killed_is_404) {
  char pid_[64];
  long c0;
  asb_sandbox *p = counting_parent(pid_, &c0);
  REQUIRE(p != NULL);
  /* keepProcesses false: booted fresh on the files, no counter runs */
  check_files_fork(p, pid_, "{\"keepProcesses\":false}", c0);
  asbt_kill(p);
  forked none;
  CHECK_INT(fork_req(pid_, "{}", &none, 1), 404);
}

/* GET /contexts of id's code interpreter (port 49999) through the router
 * with token: the status. */
static long codei_contexts(const char *id, const char *token) {
  char h[200];
  snprintf(h, sizeof h, "X-Access-Token: %s", token);
  const char *hs[] = {h, NULL};
  engine_req r = {.sandbox = id, .port = 49999, .headers = hs, .timeout_s = 60};
  return engine_http(&F, "GET", "/contexts", &r, NULL);
}

/* A code interpreter's kernel in the fork: its variables kept (the same
 * kernel process), and the interpreter takes the fork's token only (its
 * hashes from the fork's /run/asb/codei-tokens), the parent's only the
 * parent's. */
TEST(fork_keeps_the_code_interpreter_with_its_own_token) {
  char pid_[64], ptok[128];
  asb_sandbox *p = criu_fixture_sandbox(C, pid_, 0, 0);
  REQUIRE(p != NULL);
  char *a = asbt_code_value(p, "import os\nx = 41\n(x + 1, os.getpid())", NULL);
  CHECK(a[0] == '(');
  token_of(pid_, ptok, sizeof ptok);
  forked k;
  CHECK_INT(fork_req(pid_, "{}", &k, 1), 201);
  CHECK_STR(k.mode, "processes");
  asb_sandbox *f = k.id[0] ? connect_to(k.id) : NULL;
  CHECK(f != NULL);
  if (f) {
    char *b = asbt_code_value(f, "(x + 1, os.getpid())", NULL);
    CHECK_STR(b, a); /* the parent's kernel, its variables kept */
    free(b);
    CHECK_INT(codei_contexts(k.id, k.token), 200);
    CHECK_INT(codei_contexts(k.id, ptok), 401);
    CHECK_INT(codei_contexts(pid_, k.token), 401);
    asbt_kill(f);
  }
  char *c = asbt_code_value(p, "(x + 1, os.getpid())", NULL);
  CHECK_STR(c, a); /* the parent's goes on */
  CHECK_INT(codei_contexts(pid_, ptok), 200);
  free(c);
  free(a);
  asbt_kill(p);
}

/* The fork options through the C ABI (issue 20): asb_sandbox_fork_many
 * with the default keep_processes and count 2 gives two sandboxes that
 * kept the parent's processes (asb_sandbox_fork_mode "processes", their
 * counters going on, a file of one not in the other); asb_sandbox_fork_ex
 * with keep_processes 0 one booted fresh ("files", no counter), which
 * asb_sandbox_connect and asb_sandbox_get_info report too. */
TEST(fork_options_through_the_abi) {
  char pid_[64];
  asb_sandbox *p = criu_fixture_sandbox(C, pid_, 0, 0);
  REQUIRE(p != NULL);
  REQUIRE(start_counter(p) == ASB_OK);
  int in_order = 0;
  long c0 = criu_fixture_count_past(p, 3, &in_order);
  CHECK(c0 > 3);
  CHECK(asb_sandbox_fork_mode(p) == NULL); /* not a fork */
  asb_fork_options o;
  CHECK_RC(asb_fork_options_init(&o, ASB_FORK_OPTIONS_VERSION), ASB_OK);
  CHECK_INT(o.keep_processes, -1);
  o.count = 2;
  o.timeout_ms = 300000;
  asb_sandbox *f[2] = {NULL, NULL}, *one = NULL;
  CHECK_RC(asb_sandbox_fork_ex(&one, p, &o, NULL), ASB_EINVAL); /* one only */
  asb_fork_list *l = NULL;
  CHECK_RC(asb_sandbox_fork_many(&l, p, &o, NULL), ASB_OK);
  CHECK_INT((int)asb_fork_list_count(l), 2);
  for (size_t i = 0; i < 2; i++) {
    CHECK_RC(asb_fork_list_take(&f[i], l, i), ASB_OK);
    CHECK_STR(asb_sandbox_fork_mode(f[i]), "processes");
  }
  CHECK_RC(asb_fork_list_take(&one, l, 0), ASB_EINVAL); /* taken */
  CHECK_RC(asb_fork_list_take(&one, l, 2), ASB_EINVAL); /* past the end */
  asb_fork_list_free(l);
  if (f[0] && f[1]) {
    CHECK(strcmp(asb_sandbox_id(f[0]), asb_sandbox_id(f[1])) != 0);
    CHECK_RC(asb_files_write(NULL, f[0], "/tmp/mine", "0", 1, NULL), ASB_OK);
    for (int i = 0; i < 2; i++) {
      long a = criu_fixture_last_count(f[i], &in_order);
      CHECK(a >= c0);
      CHECK(criu_fixture_count_past(f[i], a + 5, &in_order) > a + 5 && in_order);
    }
    char *d = NULL;
    size_t n = 0;
    CHECK(asb_files_read(&d, &n, f[1], "/tmp/mine", NULL) != ASB_OK);
    asb_free(d);
  }
  for (int i = 0; i < 2; i++)
    if (f[i]) asbt_kill(f[i]);
  /* keep_processes 0: booted fresh on the files */
  o.count = 1;
  o.keep_processes = 0;
  CHECK_RC(asb_sandbox_fork_ex(&one, p, &o, NULL), ASB_OK);
  CHECK_STR(asb_sandbox_fork_mode(one), "files");
  asb_sandbox *again = one ? connect_to(asb_sandbox_id(one)) : NULL;
  CHECK(again != NULL);
  if (again) {
    CHECK_STR(asb_sandbox_fork_mode(again), "files");
    asb_sandbox_info *info = NULL;
    CHECK_RC(asb_sandbox_get_info(&info, again, NULL), ASB_OK);
    CHECK_STR(asb_sandbox_info_fork_mode(info), "files");
    asb_sandbox_info_free(info);
    long f0 = criu_fixture_last_count(again, &in_order);
    CHECK(f0 >= c0); /* the parent's file */
    CHECK(criu_fixture_count_past(p, f0 + 5, &in_order) > f0 + 5);
    CHECK_INT(criu_fixture_last_count(again, &in_order), f0); /* no counter */
    asb_sandbox_free(again);
  }
  if (one) asbt_kill(one);
  asbt_kill(p);
}

/* criu fails (an engine whose --criu is /bin/false): the fork is booted
 * fresh on the parent's files (forkMode "files"), the parent runs on. */
TEST(criu_failure_falls_back_to_a_fresh_fork) {
  static const char *const k_false[] = {"--pause-criu", "--criu", "/bin/false", NULL};
  const char *const *before = F.extra_args;
  engine_fixture_signal(&F, SIGTERM);
  F.extra_args = k_false;
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  char pid_[64];
  long c0;
  asb_sandbox *p = counting_parent(pid_, &c0);
  CHECK(p != NULL);
  if (p) {
    check_files_fork(p, pid_, "{}", c0);
    asbt_kill(p);
  }
  engine_fixture_signal(&F, SIGTERM);
  F.extra_args = before;
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
}

int main(void) {
  int rc = criu_fixture_start(&F, &C, "e2e.fork_criu", "e2e-fcriu");
  if (rc) return rc;
  RUN(fork_keeps_the_running_processes);
  RUN(two_forks_count_on_their_own);
  RUN(fork_keeps_the_code_interpreter_with_its_own_token);
  RUN(fresh_fork_on_request_and_killed_is_404);
  RUN(fork_options_through_the_abi);
  RUN(criu_failure_falls_back_to_a_fresh_fork);
  criu_fixture_stop(&F, C);
  TEST_MAIN_END();
}
