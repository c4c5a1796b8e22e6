/* The code interpreter server against the C client library (E2B debug mode)
 * and raw HTTP: state, contexts, rich results, errors, streaming,
 * interrupts, dead kernels, huge output, env vars, javascript, bash and java,
 * restart/remove, bad input and auth (also from a token file). SPDX-License-Identifier: Apache-2.0
 */
#include <agentsandbox.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "asb_testing.h"
#include "codei_fixture.h"

#define TOKEN "codei-test-token"
/* The traffic token is given as its SHA-256 (what the engine does). */
#define TRAFFIC_TOKEN "traffic-s3cret"
#define TRAFFIC_SHA256 "bc65b6407c2580e3e9d14a1c5c1fec49d416bb1e7d65e32e18e673226d6dc850"
/* SHA-256 of TOKEN and of "fork-token" (--token-file takes hashes) */
#define TOKEN_SHA256 "d46b074c3deaa64fe087755c1584be1e49deff277ebb8178ad6d5332336700d0"
#define FORK_SHA256 "5093071c66cfba90de5e4bf4e9d25ee7b2e2fdda0512e53311839b2971eab7c4"

static codei_fixture F;
static asb_client *C;
static asb_sandbox *SB;
static char TMPD[64];

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* ---- helpers ------------------------------------------------------------------ */

static asb_execution *run_opts(const char *code, asb_code_options *o) {
  asb_execution *e = NULL;
  int rc = asb_code_run(&e, SB, code, o);
  if (rc != ASB_OK)
    ASBT_FAIL("asb_code_run(%.60s): %s: %s", code, asb_status_name(rc), asb_error_last()->message);
  return e;
}

static asb_execution *run_in(const char *code, const char *ctx, const char *lang) {
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = ctx;
  o.language = lang;
  return run_opts(code, &o);
}

static asb_execution *run(const char *code) {
  return run_in(code, NULL, NULL);
}

/* The text of the main result of code, or "" (the static buffer is reused). */
static const char *value_of(const char *code, const char *ctx, const char *lang) {
  static char buf[4096];
  asb_execution *e = run_in(code, ctx, lang);
  const char *t = asb_execution_text(e);
  snprintf(buf, sizeof buf, "%s", t ? t : "");
  if (e && asb_execution_error_name(e))
    snprintf(buf, sizeof buf, "!%s: %s", asb_execution_error_name(e), asb_execution_error_value(e));
  asb_execution_free(e);
  return buf;
}

static const char *joined_stdout(const asb_execution *e, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < asb_execution_stdout_count(e); i++)
    at += (size_t)snprintf(buf + at, at < n ? n - at : 0, "%s", asb_execution_stdout_get(e, i));
  return buf;
}

typedef struct http_resp {
  long status;
  char body[4096];
  size_t len;
} http_resp;

static size_t http_sink(char *p, size_t s, size_t n, void *ud) {
  http_resp *r = ud;
  size_t k = s * n;
  size_t room = sizeof r->body - 1 - r->len;
  size_t c = k < room ? k : room;
  memcpy(r->body + r->len, p, c);
  r->len += c;
  r->body[r->len] = '\0';
  return k;
}

/* A raw request; token NULL = no X-Access-Token. */
static const char *g_header; /* one more request header, or NULL */

static http_resp http(const char *method, const char *path, const char *body, size_t body_len,
                      const char *token) {
  http_resp r;
  memset(&r, 0, sizeof r);
  CURL *c = curl_easy_init();
  char url[256], hdr[128];
  snprintf(url, sizeof url, "%s%s", F.url, path);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  if (token) {
    snprintf(hdr, sizeof hdr, "X-Access-Token: %s", token);
    h = curl_slist_append(h, hdr);
  }
  if (g_header) h = curl_slist_append(h, g_header);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_sink);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return r;
}

static int wait_healthy(void) {
  for (int i = 0; i < 1200; i++) {
    if (http("GET", "/health", NULL, 0, NULL).status == 200) return 0;
    usleep(100000);
  }
  return -1;
}

static long kb_field(pid_t pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long v = -1;
  size_t fl = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, field, fl) == 0 && line[fl] == ':') v = atol(line + fl + 1);
  if (f) fclose(f);
  return v;
}

static int pid_of_kernel(const char *ctx, const char *lang) {
  if (lang && strcmp(lang, "bash") == 0) {
    asb_execution *e = run_in("echo $$", ctx, lang);
    int pid = e && asb_execution_stdout_count(e) ? atoi(asb_execution_stdout_get(e, 0)) : 0;
    asb_execution_free(e);
    return pid;
  }
  return atoi(value_of("import os; os.getpid()", ctx, lang));
}

static int wait_gone(pid_t pid) {
  WAIT_UNTIL(kill(pid, 0) != 0 && errno == ESRCH, ASBT_DEADLINE_MS);
  return kill(pid, 0) != 0 && errno == ESRCH ? 0 : -1;
}

/* ---- state, contexts, results --------------------------------------------------- */

TEST(state_persists_in_default_context) {
  asb_execution *e = run("x = 40\nprint('set')");
  REQUIRE(e);
  CHECK(asb_execution_count(e) > 0);
  CHECK_INT(asb_execution_stdout_count(e), 1);
  CHECK_STR(asb_execution_stdout_get(e, 0), "set\n");
  CHECK(asb_execution_text(e) == NULL);
  int n = asb_execution_count(e);
  asb_execution_free(e);
  e = run("x + 2");
  REQUIRE(e);
  CHECK_STR(asb_execution_text(e), "42");
  CHECK_INT(asb_execution_count(e), n + 1);
  CHECK_INT(asb_execution_result_count(e), 1);
  CHECK(asb_code_result_is_main(asb_execution_result_get(e, 0)));
  asb_execution_free(e);
  /* a string's repr loses its quotes, as E2B maps text/plain */
  CHECK_STR(value_of("'hello'", NULL, NULL), "hello");
}

TEST(contexts_are_isolated) {
  asb_code_context *a = NULL, *b = NULL;
  REQUIRE_RC(asb_code_context_create(&a, SB, "python", TMPD, NULL), ASB_OK);
  REQUIRE_RC(asb_code_context_create(&b, SB, NULL, NULL, NULL), ASB_OK);
  CHECK_STR(asb_code_context_language(a), "python");
  CHECK_STR(asb_code_context_cwd(a), TMPD);
  CHECK_STR(asb_code_context_language(b), "python");
  CHECK_STR(asb_code_context_cwd(b), "/tmp"); /* the server's --cwd */
  CHECK(strcmp(asb_code_context_id(a), asb_code_context_id(b)) != 0);
  CHECK_STR(value_of("v = 'in a'; v", asb_code_context_id(a), NULL), "in a");
  CHECK_STR(value_of("v", asb_code_context_id(b), NULL), "!NameError: name 'v' is not defined");
  CHECK_STR(value_of("import os; os.getcwd()", asb_code_context_id(a), NULL), TMPD);
  CHECK_STR(value_of("v", asb_code_context_id(a), NULL), "in a");
  CHECK_RC(asb_code_context_remove(SB, asb_code_context_id(a), NULL), ASB_OK);
  CHECK_RC(asb_code_context_remove(SB, asb_code_context_id(b), NULL), ASB_OK);
  asb_code_context_free(a);
  asb_code_context_free(b);
}

TEST(matplotlib_png) {
  asb_execution *e =
      run("import matplotlib\nimport matplotlib.pyplot as plt\n"
          "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()");
  REQUIRE(e);
  CHECK(asb_execution_error_name(e) == NULL);
  const char *png = NULL;
  for (size_t i = 0; i < asb_execution_result_count(e) && !png; i++)
    png = asb_code_result_value(asb_execution_result_get(e, i), "png");
  REQUIRE(png != NULL);
  CHECK(strncmp(png, "iVBORw0KGgo", 11) == 0); /* base64 of the PNG signature */
  CHECK(strlen(png) > 1000);
  /* the figure's data next to it (E2B's e2b/chart), numbers as floats */
  const char *chart = asb_code_result_value(asb_execution_result_get(e, 0), "chart");
  REQUIRE(chart != NULL);
  CHECK(strstr(chart, "\"type\":\"line\"") != NULL);
  CHECK(strstr(chart, "\"points\":[[1.0,1.0],[2.0,4.0],[3.0,9.0]]") != NULL);
  CHECK(strstr(chart, "\"x_scale\":\"linear\"") != NULL);
  asb_execution_free(e);
}

/* E2B's start-up hooks: DataFrames give data, lists give json, PIL images
 * shown or saved to a file are displayed; nothing imported ahead. */
TEST(dataframes_json_and_images) {
  asb_code_context *fresh = NULL;
  REQUIRE_RC(asb_code_context_create(&fresh, SB, "python", NULL, NULL), ASB_OK);
  CHECK_STR(value_of("import sys; [m for m in ('pandas', 'matplotlib', 'PIL.Image') "
                     "if m in sys.modules]",
                     asb_code_context_id(fresh), NULL),
            "[]");
  asb_code_context_remove(SB, asb_code_context_id(fresh), NULL);
  asb_code_context_free(fresh);
  asb_execution *e =
      run("import pandas as pd\npd.DataFrame({'n': [1, 2], 'f': [0.5, float('nan')]})");
  REQUIRE(e && asb_execution_result_count(e) == 1);
  const asb_code_result *r = asb_execution_result_get(e, 0);
  CHECK_STR(asb_code_result_value(r, "data"), "{\"n\":[1,2],\"f\":[0.5,null]}");
  CHECK(asb_code_result_value(r, "html") != NULL && asb_code_result_value(r, "text") != NULL);
  asb_execution_free(e);
  e = run("[1, 'two', {'k': None}]");
  REQUIRE(e && asb_execution_result_count(e) == 1);
  CHECK_STR(asb_code_result_value(asb_execution_result_get(e, 0), "json"),
            "[1,\"two\",{\"k\":null}]");
  asb_execution_free(e);
  char code[512];
  snprintf(code, sizeof code,
           "from PIL import Image\nim = Image.new('RGB', (4, 4))\nim.show()\nim.save('%s/a.png')",
           TMPD);
  e = run(code);
  REQUIRE(e);
  CHECK(asb_execution_error_name(e) == NULL);
  CHECK_INT(asb_execution_result_count(e), 2);
  for (size_t i = 0; i < asb_execution_result_count(e); i++)
    CHECK(asb_code_result_value(asb_execution_result_get(e, i), "png") != NULL);
  asb_execution_free(e);
  snprintf(code, sizeof code, "%s/a.png", TMPD);
  CHECK(access(code, F_OK) == 0);
  unlink(code);
}

TEST(display_html_markdown_json) {
  asb_execution *e =
      run("from IPython.display import display, HTML, Markdown, JSON\n"
          "display(HTML('<b>bold</b>'))\ndisplay(Markdown('**md**'))\n"
          "display(JSON({'a': [1, 2]}))\n"
          "display({'application/x-custom': 'raw'}, raw=True)");
  REQUIRE(e);
  REQUIRE(asb_execution_result_count(e) == 4);
  CHECK_STR(asb_code_result_value(asb_execution_result_get(e, 0), "html"), "<b>bold</b>");
  CHECK(!asb_code_result_is_main(asb_execution_result_get(e, 0)));
  CHECK_STR(asb_code_result_value(asb_execution_result_get(e, 1), "markdown"), "**md**");
  CHECK_STR(asb_code_result_value(asb_execution_result_get(e, 2), "json"), "{\"a\":[1,2]}");
  /* other MIME types arrive under extra */
  CHECK_STR(asb_code_result_value(asb_execution_result_get(e, 3), "application/x-custom"), "raw");
  asb_execution_free(e);
}

TEST(exception_name_value_traceback) {
  asb_execution *e = run("def f():\n    raise ValueError('boom')\nf()");
  REQUIRE(e);
  CHECK_STR(asb_execution_error_name(e), "ValueError");
  CHECK_STR(asb_execution_error_value(e), "boom");
  const char *tb = asb_execution_error_traceback(e);
  CHECK(tb && strstr(tb, "ValueError") && strstr(tb, "raise ValueError"));
  CHECK(tb && !strchr(tb, '\033')); /* no colour codes */
  asb_execution_free(e);
  e = run("1 +");
  REQUIRE(e);
  CHECK_STR(asb_execution_error_name(e), "SyntaxError");
  for (size_t i = 0; i < asb_execution_stderr_count(e); i++)
    printf("# stderr: %s\n", asb_execution_stderr_get(e, i));
  for (size_t i = 0; i < asb_execution_stdout_count(e); i++)
    printf("# stdout: %s\n", asb_execution_stdout_get(e, i));
  asb_execution_free(e);
}

/* The cell prints, then waits for a file that only the stdout callback
 * creates: it finishes "second" only if the first line reached us while
 * it ran. */
static char g_flag[128];
static int g_seen_first;
static int flag_on_first(const char *d, size_t n, void *ud) {
  (void)ud;
  if (!g_seen_first && n >= 5 && memcmp(d, "first", 5) == 0) {
    g_seen_first = 1;
    FILE *f = fopen(g_flag, "w");
    if (f) fclose(f);
  }
  return 0;
}

TEST(stdout_streams_while_the_cell_runs) {
  snprintf(g_flag, sizeof g_flag, "%s/streamed", TMPD);
  unlink(g_flag);
  char code[512];
  snprintf(code, sizeof code,
           "import os, time, sys\nprint('first', flush=True)\nt = time.time()\n"
           "while not os.path.exists('%s') and time.time() - t < 120: time.sleep(0.02)\n"
           "print('second' if os.path.exists('%s') else 'not streamed')\n"
           "print('to stderr', file=sys.stderr)",
           g_flag, g_flag);
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.on_stdout = flag_on_first;
  asb_execution *e = run_opts(code, &o);
  REQUIRE(e);
  char out[256];
  CHECK_STR(joined_stdout(e, out, sizeof out), "first\nsecond\n");
  CHECK(asb_execution_stdout_count(e) >= 2);
  /* print() writes text and newline apart: one or two chunks */
  char err[64] = "";
  for (size_t i = 0; i < asb_execution_stderr_count(e); i++)
    strncat(err, asb_execution_stderr_get(e, i), sizeof err - strlen(err) - 1);
  CHECK_STR(err, "to stderr\n");
  asb_execution_free(e);
}

/* What a subprocess (or C code) writes to fds 1 and 2 is in the cell's
 * output, every time: ipykernel's own fd watcher lost it in 2-10% of cells
 * under load (it arrived after the idle status). */
TEST(subprocess_output_is_in_its_cell) {
  int lost = 0;
  char code[200], want[32], out[256];
  for (int i = 0; i < 60; i++) {
    snprintf(code, sizeof code,
             i % 2 ? "import os; os.system('echo sub%d >&2'); None"
                   : "import subprocess; subprocess.run(['echo', 'sub%d']); None",
             i);
    snprintf(want, sizeof want, "sub%d\n", i);
    asb_execution *e = run(code);
    const char *got = NULL;
    if (e && i % 2 && asb_execution_stderr_count(e)) got = asb_execution_stderr_get(e, 0);
    if (e && !(i % 2)) got = joined_stdout(e, out, sizeof out);
    if (!got || strcmp(got, want)) lost++;
    asb_execution_free(e);
  }
  CHECK_INT(lost, 0);
  /* a multi-byte character split across two writes */
  asb_execution *e =
      run("import os; b = 'é'.encode(); os.write(1, b[:1]); os.write(1, b[1:]); None");
  CHECK_STR(e ? joined_stdout(e, out, sizeof out) : NULL, "é");
  asb_execution_free(e);
}

TEST(timeout_interrupts_and_context_survives) {
  asb_code_context *c = NULL;
  REQUIRE_RC(asb_code_context_create(&c, SB, "python", NULL, NULL), ASB_OK);
  const char *id = asb_code_context_id(c);
  CHECK_STR(value_of("kept = 'still here'; kept", id, NULL), "still here");
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = id;
  o.timeout_ms = 1500;
  asb_execution *e = NULL;
  CHECK_RC(asb_code_run(&e, SB, "while True:\n    pass", &o), ASB_ETIMEOUT);
  CHECK(e == NULL);
  /* a sleeping cell (a blocking call) too */
  CHECK_RC(asb_code_run(&e, SB, "import time\ntime.sleep(600)", &o), ASB_ETIMEOUT);
  CHECK_STR(value_of("kept", id, NULL), "still here");
  CHECK_STR(value_of("21 * 2", id, NULL), "42");
  asb_code_context_remove(SB, id, NULL);
  asb_code_context_free(c);
}

static int kill_on_pid(const char *d, size_t n, void *ud) {
  char buf[32];
  if (n >= sizeof buf) return 0;
  memcpy(buf, d, n);
  buf[n] = '\0';
  int pid = atoi(buf);
  if (pid > 1) {
    *(int *)ud = pid;
    kill(pid, SIGKILL);
  }
  return 0;
}

static int abort_on_output(const char *d, size_t n, void *ud) {
  (void)d, (void)n, (void)ud;
  return 1; /* the client gives up: the call ends and its connection closes */
}

/* A client that aborts a cell (hangs up on its first output) and sends the
 * next one at once: the interpreter's interrupt is for the aborted cell
 * only. It used to be lost (bash's child between fork and exec, node's cell
 * between its synchronous part and its await: the kernel was killed 10 s
 * later and the state lost) or, sent as the cell ended on its own, could
 * stop the next one. Each language: cells that run on after the hang-up and
 * cells that end about when it is seen. */
TEST(an_abort_interrupts_only_its_own_cell) {
  static const struct {
    const char *lang, *set, *a, *b, *want;
    int from_stdout;
  } L[] = {
      {"python", "abort_kept = 'state'", "import time\nprint('x', flush=True)\ntime.sleep(%s)",
       "f'{abort_kept}-%d'", "state-%d", 0},
      {"javascript", "var abortKept = 'state'",
       "console.log('x'); await new Promise((r) => setTimeout(r, 1000 * %s))", "`${abortKept}-%d`",
       "state-%d", 0},
      {"bash", "abort_kept=state", "echo x; sleep %s", "echo \"$abort_kept-%d\"", "state-%d\n", 1},
  };
  for (size_t l = 0; l < sizeof L / sizeof L[0]; l++) {
    asb_execution *e = run_in(L[l].set, NULL, L[l].lang);
    REQUIRE(e && !asb_execution_error_name(e));
    asb_execution_free(e);
    int bad = 0;
    for (int i = 0; i < 8; i++) {
      char a[160], b[96], want[32], got[256];
      snprintf(a, sizeof a, L[l].a, i % 2 ? "0.005" : "30");
      snprintf(b, sizeof b, L[l].b, i);
      snprintf(want, sizeof want, L[l].want, i);
      asb_code_options o = ASB_CODE_OPTIONS_INIT;
      o.language = L[l].lang;
      o.on_stdout = abort_on_output;
      e = NULL;
      int rc = asb_code_run(&e, SB, a, &o);
      if (i % 2 == 0 && rc == ASB_OK) ASBT_FAIL("%s #%d: the aborted cell ended", L[l].lang, i);
      asb_execution_free(e);
      e = run_in(b, NULL, L[l].lang);
      REQUIRE(e);
      if (L[l].from_stdout)
        joined_stdout(e, got, sizeof got);
      else
        snprintf(got, sizeof got, "%s", asb_execution_text(e) ? asb_execution_text(e) : "");
      const char *en = asb_execution_error_name(e);
      if (en || strcmp(got, want) != 0) {
        bad++;
        fprintf(stderr, "  %s #%d: %s%s%s%s\n", L[l].lang, i, got, en ? " error " : "",
                en ? en : "", en ? asb_execution_error_value(e) : "");
      }
      asb_execution_free(e);
    }
    CHECK_INT(bad, 0);
  }
}

TEST(killed_kernel_is_reported_and_recovers) {
  asb_code_context *c = NULL;
  REQUIRE_RC(asb_code_context_create(&c, SB, "python", NULL, NULL), ASB_OK);
  const char *id = asb_code_context_id(c);
  /* killed while running: the running call reports it */
  CHECK_STR(value_of("state = 1; state", id, NULL), "1");
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = id;
  int killed = 0;
  o.on_stdout = kill_on_pid;
  o.userdata = &killed;
  asb_execution *e =
      run_opts("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(300)", &o);
  REQUIRE(e);
  CHECK(killed > 1);
  CHECK_STR(asb_execution_error_name(e), "ContextRestarting");
  CHECK(strstr(asb_execution_error_value(e), "killed by signal 9") != NULL);
  asb_execution_free(e);
  CHECK_STR(value_of("1 + 1", id, NULL), "2");
  CHECK_STR(value_of("state", id, NULL), "!NameError: name 'state' is not defined");
  /* killed while idle: the next call says so (and does not run the code) */
  int pid = pid_of_kernel(id, NULL);
  REQUIRE(pid > 1);
  kill(pid, SIGKILL);
  CHECK(wait_gone(pid) == 0);
  e = run_in("ran = True", id, NULL);
  REQUIRE(e);
  CHECK_STR(asb_execution_error_name(e), "ContextRestarting");
  CHECK(strstr(asb_execution_error_value(e), "not run") != NULL);
  asb_execution_free(e);
  CHECK_STR(value_of("'ran' in dir()", id, NULL), "False");
  CHECK(pid_of_kernel(id, NULL) != pid);
  asb_code_context_remove(SB, id, NULL);
  asb_code_context_free(c);
}

static int count_bytes(const char *d, size_t n, void *ud) {
  (void)d;
  *(long long *)ud += (long long)n;
  return 0;
}

/* Forget the server's peak RSS so far (Linux: clear_refs 5). */
static void reset_peak(void) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)F.pid);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs("5", f);
    fclose(f);
  }
}

static long long huge_run(const char *code, const char *lang) {
  long long got = 0;
  asb_code_context *c = NULL;
  if (asb_code_context_create(&c, SB, lang, NULL, NULL) != ASB_OK) return -1;
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = asb_code_context_id(c);
  o.on_stdout = count_bytes;
  o.userdata = &got;
  o.timeout_ms = 600000;
  asb_execution *e = run_opts(code, &o);
  if (!e || asb_execution_error_name(e)) got = -1;
  asb_execution_free(e);
  asb_code_context_remove(SB, asb_code_context_id(c), NULL);
  asb_code_context_free(c);
  return got;
}

TEST(huge_output_streams_with_bounded_memory) {
  /* 200 MiB (50 MiB under the sanitizers), every byte delivered. */
  long long mib = SANITIZED ? 50 : 200;
  char code[256];
  /* bash: the driver's pipe is read only while the execution's queue has
   * room, so the server's memory stays small whatever the output */
  snprintf(code, sizeof code, "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c %lldM", mib);
  reset_peak();
  CHECK_INT(huge_run(code, "bash"), mib << 20);
  long hwm = kb_field(F.pid, "VmHWM");
  printf("# server peak RSS while bash printed %lld MiB: %ld KiB\n", mib, hwm);
  CHECK(hwm > 0);
  /* (the sanitizers' allocator keeps freed memory in quarantine) */
  if (!SANITIZED) CHECK(hwm < 64 * 1024);
  /* python: ipykernel publishes what was printed since its last flush as
   * one message, which the server receives whole and copies out line by
   * line, spooling what the client has not read: the peak is about the
   * largest message (a flush every 4 MiB, unless the machine is so busy
   * that ipykernel's flush times out), never the whole output. */
  snprintf(code, sizeof code,
           "import sys\nline = 'x' * 1023 + '\\n'\nfor i in range(%lld * 1024):\n"
           "    sys.stdout.write(line)\n    if i %% 4096 == 4095: sys.stdout.flush()\n",
           mib);
  reset_peak();
  CHECK_INT(huge_run(code, "python"), mib << 20);
  hwm = kb_field(F.pid, "VmHWM");
  printf("# server peak RSS while python printed %lld MiB: %ld KiB\n", mib, hwm);
  CHECK(hwm > 0);
  if (!SANITIZED) CHECK(hwm < (mib << 10));
}

TEST(env_vars_per_call_and_global) {
  const char *envs[] = {"ASBT_CALL=per call", "ASBT_GLOBAL=overridden", NULL};
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.envs = envs;
  asb_execution *e =
      run_opts("import os; os.environ.get('ASBT_CALL') + '|' + os.environ['ASBT_GLOBAL']", &o);
  REQUIRE(e);
  CHECK_STR(asb_execution_text(e), "per call|overridden");
  CHECK_INT(asb_execution_stdout_count(e), 0);
  asb_execution_free(e);
  /* restored after the call: unset, and the server's own value */
  CHECK_STR(value_of("import os; repr(os.environ.get('ASBT_CALL'))", NULL, NULL), "None");
  CHECK_STR(value_of("os.environ['ASBT_GLOBAL']", NULL, NULL), "from the server");
  /* bash and javascript too */
  const char *one[] = {"ASBT_CALL=b'q", NULL};
  o.envs = one;
  o.language = "bash";
  e = run_opts("echo \"[$ASBT_CALL|$ASBT_GLOBAL]\"", &o);
  char out[128];
  CHECK_STR(joined_stdout(e, out, sizeof out), "[b'q|from the server]\n");
  asb_execution_free(e);
  o.language = "javascript";
  e = run_opts("process.env.ASBT_CALL", &o);
  CHECK_STR(asb_execution_text(e), "b'q");
  asb_execution_free(e);
  CHECK_STR(value_of("String(process.env.ASBT_CALL)", NULL, "javascript"), "undefined");
  const char *bad[] = {"1BAD=x", NULL};
  o.envs = bad;
  o.language = NULL;
  CHECK_RC(asb_code_run(&e, SB, "1", &o), ASB_EINVAL);
}

/* POST /envs (what the engine sends when it hands out a pooled sandbox):
 * the running kernels, later contexts and the per-call restore see them. */
TEST(envs_set_on_the_running_server) {
  static const char set[] = "{\"ASBT_SET\":\"later 'q'\",\"ASBT_GLOBAL\":\"replaced\"}";
  CHECK_INT(http("POST", "/envs", set, strlen(set), NULL).status, 401);
  CHECK_INT(http("POST", "/envs", "{\"1A\":\"x\"}", 10, TOKEN).status, 400);
  CHECK_INT(http("POST", "/envs", "{\"A\":1}", 7, TOKEN).status, 400);
  CHECK_INT(http("POST", "/envs", "[1]", 3, TOKEN).status, 400);
  CHECK_INT(http("GET", "/envs", NULL, 0, TOKEN).status, 405);
  CHECK_STR(value_of("import os; repr(os.environ.get('ASBT_SET'))", NULL, NULL), "None");
  CHECK_INT(http("POST", "/envs", set, strlen(set), TOKEN).status, 200);
  CHECK_STR(value_of("os.environ['ASBT_SET'] + '|' + os.environ['ASBT_GLOBAL']", NULL, NULL),
            "later 'q'|replaced");
  CHECK_STR(value_of("process.env.ASBT_SET", NULL, "javascript"), "later 'q'");
  /* per-call env_vars go back to the new value */
  const char *one[] = {"ASBT_SET=per call", NULL};
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.envs = one;
  asb_execution *e = run_opts("os.environ['ASBT_SET']", &o);
  CHECK_STR(e ? asb_execution_text(e) : NULL, "per call");
  asb_execution_free(e);
  CHECK_STR(value_of("os.environ['ASBT_SET']", NULL, NULL), "later 'q'");
  /* a context made afterwards inherits them */
  asb_code_context *c = NULL;
  REQUIRE_RC(asb_code_context_create(&c, SB, "python", NULL, NULL), ASB_OK);
  CHECK_STR(value_of("import os; os.environ['ASBT_SET']", asb_code_context_id(c), NULL),
            "later 'q'");
  CHECK_RC(asb_code_context_remove(SB, asb_code_context_id(c), NULL), ASB_OK);
  asb_code_context_free(c);
  static const char back[] = "{\"ASBT_GLOBAL\":\"from the server\"}";
  CHECK_INT(http("POST", "/envs", back, strlen(back), TOKEN).status, 200);
}

TEST(javascript_context) {
  CHECK_STR(value_of("let q = 2; q * 21", NULL, "javascript"), "42");
  CHECK_STR(value_of("q + 1", NULL, "js"), "3");
  CHECK_STR(value_of("({a: 1})", NULL, "javascript"), "{ a: 1 }");
  CHECK_STR(value_of("const w = await Promise.resolve(5);\nawait Promise.resolve(w * 2)", NULL,
                     "javascript"),
            "10");
  asb_execution *e =
      run_in("console.log('out'); console.error('err'); undefined", NULL, "javascript");
  REQUIRE(e);
  char out[64];
  CHECK_STR(joined_stdout(e, out, sizeof out), "out\n");
  CHECK_INT(asb_execution_stderr_count(e), 1);
  CHECK_INT(asb_execution_result_count(e), 0);
  asb_execution_free(e);
  e = run_in("null.x", NULL, "javascript");
  REQUIRE(e);
  CHECK_STR(asb_execution_error_name(e), "TypeError");
  CHECK(strstr(asb_execution_error_traceback(e), "TypeError") != NULL);
  asb_execution_free(e);
  /* ESM imports become requires whose bindings persist; twice is fine */
  CHECK_STR(value_of("import { basename } from 'path'\nimport os from 'os'\n"
                     "basename('/a/b') + typeof os.cpus",
                     NULL, "javascript"),
            "bfunction");
  CHECK_STR(value_of("import { basename } from 'path'\nbasename('/c/d')", NULL, "javascript"), "d");
  /* typescript runs on the javascript driver, in a context of its own,
   * its types stripped (esbuild) */
  asb_code_context *c = NULL;
  REQUIRE_RC(asb_code_context_create(&c, SB, "typescript", NULL, NULL), ASB_OK);
  CHECK_STR(asb_code_context_language(c), "typescript");
  CHECK_STR(value_of("typeof q", asb_code_context_id(c), NULL), "undefined");
  CHECK_STR(
      value_of("interface P { x: number }\nconst p: P = { x: 20 }\n"
               "function twice<T extends number>(v: T): number { return v * 2 }\ntwice(p.x) + 2",
               asb_code_context_id(c), NULL),
      "42");
  CHECK_STR(value_of("p.x", asb_code_context_id(c), NULL), "20");
  CHECK(strncmp(value_of("let z: = 1", asb_code_context_id(c), NULL), "!SyntaxError", 12) == 0);
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = asb_code_context_id(c);
  o.timeout_ms = 1500;
  CHECK_RC(asb_code_run(&e, SB, "globalThis.kept = 1; for (;;) {}", &o), ASB_ETIMEOUT);
  CHECK_STR(value_of("kept + 1", asb_code_context_id(c), NULL), "2");
  asb_code_context_remove(SB, asb_code_context_id(c), NULL);
  asb_code_context_free(c);
}

TEST(bash_context) {
  asb_execution *e = run_in("export B=1; f() { echo \"f:$1\"; }; cd /tmp; echo $B", NULL, "bash");
  REQUIRE(e);
  char out[256];
  CHECK_STR(joined_stdout(e, out, sizeof out), "1\n");
  CHECK(asb_execution_error_name(e) == NULL);
  CHECK(asb_execution_count(e) > 0);
  asb_execution_free(e);
  e = run_in("declare -A m=([k]=v); f x; pwd; echo ${m[k]}; ls /nonexistent-dir", NULL, "bash");
  REQUIRE(e);
  CHECK_STR(joined_stdout(e, out, sizeof out), "f:x\n/tmp\nv\n");
  CHECK(asb_execution_stderr_count(e) >= 1);
  CHECK_STR(asb_execution_error_name(e), "Error");
  CHECK_STR(asb_execution_error_value(e), "2");
  asb_execution_free(e);
  e = run_in("echo ${m[k]}; cat", NULL, "bash"); /* stdin is empty, not the driver's */
  CHECK_STR(joined_stdout(e, out, sizeof out), "v\n");
  asb_execution_free(e);
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.language = "bash";
  o.timeout_ms = 1500;
  CHECK_RC(asb_code_run(&e, SB, "sleep 600", &o), ASB_ETIMEOUT);
  CHECK_RC(asb_code_run(&e, SB, "while :; do :; done", &o), ASB_ETIMEOUT);
  CHECK_STR(value_of("echo $B", NULL, "bash"), "");
  e = run_in("echo $B", NULL, "bash");
  CHECK_STR(joined_stdout(e, out, sizeof out), "1\n");
  asb_execution_free(e);
}

TEST(restart_and_remove) {
  asb_code_context *c = NULL;
  REQUIRE_RC(asb_code_context_create(&c, SB, "python", NULL, NULL), ASB_OK);
  const char *id = asb_code_context_id(c);
  CHECK_STR(value_of("r = 1; r", id, NULL), "1");
  REQUIRE_RC(asb_code_context_restart(SB, id, NULL), ASB_OK);
  CHECK_STR(value_of("'r' in dir()", id, NULL), "False");
  asb_code_context_list *l = NULL;
  REQUIRE_RC(asb_code_contexts_list(&l, SB, NULL), ASB_OK);
  int found = 0;
  for (size_t i = 0; i < asb_code_context_list_count(l); i++)
    found += strcmp(asb_code_context_id(asb_code_context_list_get(l, i)), id) == 0;
  CHECK_INT(found, 1);
  asb_code_context_list_free(l);
  int pid = pid_of_kernel(id, NULL);
  REQUIRE_RC(asb_code_context_remove(SB, id, NULL), ASB_OK);
  CHECK(wait_gone(pid) == 0);
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = id;
  asb_execution *e = NULL;
  CHECK_RC(asb_code_run(&e, SB, "1", &o), ASB_ENOTFOUND);
  CHECK_RC(asb_code_context_restart(SB, id, NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_code_context_remove(SB, id, NULL), ASB_ENOTFOUND);
  REQUIRE_RC(asb_code_contexts_list(&l, SB, NULL), ASB_OK);
  for (size_t i = 0; i < asb_code_context_list_count(l); i++)
    CHECK(strcmp(asb_code_context_id(asb_code_context_list_get(l, i)), id) != 0);
  asb_code_context_list_free(l);
  asb_code_context_free(c);
}

TEST(bad_input) {
  http_resp r = http("POST", "/execute", "{\"code\": ", 9, TOKEN);
  CHECK_INT(r.status, 400);
  CHECK(strstr(r.body, "JSON") != NULL);
  r = http("POST", "/execute", "[1]", 3, TOKEN);
  CHECK_INT(r.status, 400);
  r = http("POST", "/execute", "{\"code\": 5}", 11, TOKEN);
  CHECK_INT(r.status, 400);
  const char *both = "{\"code\":\"1\",\"context_id\":\"x\",\"language\":\"python\"}";
  r = http("POST", "/execute", both, strlen(both), TOKEN);
  CHECK_INT(r.status, 400);
  CHECK(strstr(r.body, "Only one of context_id or language") != NULL);
  const char *unknown = "{\"code\":\"1\",\"context_id\":\"no-such-context\"}";
  r = http("POST", "/execute", unknown, strlen(unknown), TOKEN);
  CHECK_INT(r.status, 404);
  CHECK_STR(r.body, "Context no-such-context not found");
  const char *lang = "{\"code\":\"1\",\"language\":\"cobol\"}";
  r = http("POST", "/execute", lang, strlen(lang), TOKEN);
  CHECK_INT(r.status, 400);
  CHECK(strstr(r.body, "cobol") != NULL);
  r = http("POST", "/contexts", "{\"language\":\"cobol\"}", 20, TOKEN);
  CHECK_INT(r.status, 400);
  r = http("POST", "/contexts", "{\"cwd\":\"/no/such/dir\"}", 22, TOKEN);
  CHECK_INT(r.status, 400);
  const char *badenv = "{\"code\":\"1\",\"env_vars\":{\"A\":1}}";
  r = http("POST", "/execute", badenv, strlen(badenv), TOKEN);
  CHECK_INT(r.status, 400);
  /* oversized body */
  size_t big = (16u << 20) + 100;
  char *body = malloc(big);
  REQUIRE(body);
  memset(body, ' ', big);
  memcpy(body, "{\"code\":\"", 9);
  memcpy(body + big - 2, "\"}", 2);
  r = http("POST", "/execute", body, big, TOKEN);
  free(body);
  CHECK_INT(r.status, 400);
  CHECK(strstr(r.body, "larger than") != NULL);
  r = http("GET", "/nope", NULL, 0, TOKEN);
  CHECK_INT(r.status, 404);
  r = http("GET", "/execute", NULL, 0, TOKEN);
  CHECK_INT(r.status, 405);
  r = http("POST", "/contexts/abc/nonsense", "", 0, TOKEN);
  CHECK_INT(r.status, 404);
  /* the server is still fine */
  CHECK_STR(value_of("6 * 7", NULL, NULL), "42");
}

TEST(access_token) {
  CHECK_INT(http("GET", "/health", NULL, 0, NULL).status, 200);
  CHECK_INT(http("GET", "/contexts", NULL, 0, NULL).status, 401);
  CHECK_INT(http("GET", "/contexts", NULL, 0, "wrong").status, 401);
  CHECK_INT(http("POST", "/execute", "{\"code\":\"1\"}", 12, "wrong").status, 401);
  CHECK_INT(http("DELETE", "/contexts/x", NULL, 0, NULL).status, 401);
  CHECK_INT(http("GET", "/contexts", NULL, 0, TOKEN).status, 200);
  /* or the traffic token, which the stock SDKs send on context calls */
  g_header = "E2B-Traffic-Access-Token: " TRAFFIC_TOKEN;
  CHECK_INT(http("GET", "/contexts", NULL, 0, NULL).status, 200);
  CHECK_INT(http("DELETE", "/contexts/x", NULL, 0, NULL).status, 404);
  CHECK_INT(http("GET", "/contexts", NULL, 0, "wrong").status, 200); /* one matches */
  g_header = "E2B-Traffic-Access-Token: " TRAFFIC_SHA256;            /* the hash is no token */
  CHECK_INT(http("GET", "/contexts", NULL, 0, NULL).status, 401);
  g_header = "E2B-Traffic-Access-Token: wrong";
  CHECK_INT(http("GET", "/contexts", NULL, 0, NULL).status, 401);
  CHECK_INT(http("POST", "/contexts", "{}", 2, NULL).status, 401);
  g_header = NULL;
  asb_client *c2 = NULL;
  asb_sandbox *sb2 = NULL;
  REQUIRE(codei_connect(&F, "not-the-token", &c2, &sb2) == 0);
  asb_execution *e = NULL;
  CHECK_RC(asb_code_run(&e, sb2, "1", NULL), ASB_EAUTH);
  asb_sandbox_free(sb2);
  asb_client_free(c2);
}

/* Replaces the file at path with data (a new file renamed over it, as the
 * engine writes it). */
static void put_tokens(const char *path, const char *data) {
  char tmp[700];
  snprintf(tmp, sizeof tmp, "%s.new", path);
  FILE *f = fopen(tmp, "w");
  REQUIRE(f && fputs(data, f) >= 0 && fclose(f) == 0);
  REQUIRE(rename(tmp, path) == 0);
}

/* --token-file (what the engine passes): the hashes come from the file and
 * are read again for every request, so an interpreter restored in a
 * fork from its parent's memory takes the fork's tokens from the fork's
 * file and refuses the parent's. No file, or one it cannot parse: every
 * route but /health refused. */
TEST(token_file_is_read_again) {
  char tf[600];
  snprintf(tf, sizeof tf, "%s/codei-tokens", TMPD);
  unlink(tf);
  const char *args[] = {"--token-file", tf, "--no-default-context", "--cwd", TMPD, NULL};
  codei_fixture g, saved = F;
  REQUIRE(codei_start(&g, args, NULL) == 0);
  F = g; /* http() talks to F */
  CHECK_INT(http("GET", "/health", NULL, 0, NULL).status, 200);
  CHECK_INT(http("GET", "/contexts", NULL, 0, TOKEN).status, 401);
  CHECK_INT(http("GET", "/contexts", NULL, 0, NULL).status, 401);
  put_tokens(tf, "access " TOKEN_SHA256 "\ntraffic " TRAFFIC_SHA256 "\n");
  CHECK_INT(http("GET", "/contexts", NULL, 0, TOKEN).status, 200);
  CHECK_INT(http("GET", "/contexts", NULL, 0, "fork-token").status, 401);
  g_header = "E2B-Traffic-Access-Token: " TRAFFIC_TOKEN;
  CHECK_INT(http("GET", "/contexts", NULL, 0, NULL).status, 200);
  g_header = NULL;
  /* the fork's file: the parent's tokens refused from the next request on */
  put_tokens(tf, "access " FORK_SHA256 "\n");
  CHECK_INT(http("GET", "/contexts", NULL, 0, TOKEN).status, 401);
  CHECK_INT(http("GET", "/contexts", NULL, 0, "fork-token").status, 200);
  g_header = "E2B-Traffic-Access-Token: " TRAFFIC_TOKEN;
  CHECK_INT(http("GET", "/contexts", NULL, 0, NULL).status, 401);
  g_header = NULL;
  /* unparsable, then gone: nothing is accepted */
  put_tokens(tf, "access not-a-hash\n");
  CHECK_INT(http("GET", "/contexts", NULL, 0, "fork-token").status, 401);
  put_tokens(tf, "access " FORK_SHA256 "\n");
  CHECK_INT(http("GET", "/contexts", NULL, 0, "fork-token").status, 200);
  unlink(tf);
  CHECK_INT(http("GET", "/contexts", NULL, 0, "fork-token").status, 401);
  CHECK_INT(http("GET", "/health", NULL, 0, NULL).status, 200);
  F = saved;
  CHECK_INT(codei_stop(&g), 0);
}

/* Executions on one context queue; on different contexts they overlap. */
typedef struct par {
  const char *ctx;
  char out[64];
} par;
static void *par_run(void *arg) {
  par *p = arg;
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = p->ctx;
  asb_execution *e = NULL;
  if (asb_code_run(&e, SB, "import time; time.sleep(0.3); n = globals().get('n', 0) + 1; n", &o) ==
      ASB_OK)
    snprintf(p->out, sizeof p->out, "%s", asb_execution_text(e) ? asb_execution_text(e) : "");
  asb_execution_free(e);
  return NULL;
}

TEST(concurrent_calls_queue_per_context) {
  asb_code_context *c = NULL;
  REQUIRE_RC(asb_code_context_create(&c, SB, "python", NULL, NULL), ASB_OK);
  par p[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    p[i].ctx = asb_code_context_id(c);
    p[i].out[0] = '\0';
    pthread_create(&t[i], NULL, par_run, &p[i]);
  }
  int seen = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    int v = atoi(p[i].out);
    CHECK(v >= 1 && v <= 4);
    if (v >= 1 && v <= 4) seen |= 1 << (v - 1);
  }
  CHECK_INT(seen, 15); /* each run saw the one before it */
  asb_code_context_remove(SB, asb_code_context_id(c), NULL);
  asb_code_context_free(c);
}

/* --state: a server killed and started again takes its contexts back
 * under the same ids; each says once that it restarted, then works. */
TEST(contexts_survive_a_server_restart) {
  char state[600];
  snprintf(state, sizeof state, "%s/state.json", TMPD);
  const char *args[] = {"--state", state, "--cwd", TMPD, NULL};
  /* its run dir in ours: a server killed with SIGKILL cannot remove it */
  static char tmpdir[100];
  snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", TMPD);
  const char *env[] = {tmpdir, NULL};
  codei_fixture g;
  REQUIRE(codei_start(&g, args, env) == 0);
  asb_client *gc = NULL;
  asb_sandbox *gs = NULL;
  REQUIRE(codei_connect(&g, NULL, &gc, &gs) == 0);
  asb_code_context *c = NULL;
  REQUIRE_RC(asb_code_context_create(&c, gs, "python", NULL, NULL), ASB_OK);
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = asb_code_context_id(c);
  o.timeout_ms = 120000;
  asb_execution *e = NULL;
  REQUIRE_RC(asb_code_run(&e, gs, "x = 1", &o), ASB_OK);
  asb_execution_free(e);
  kill(g.pid, SIGKILL); /* a crash: no clean stop */
  waitpid(g.pid, NULL, 0);
  asb_sandbox_free(gs);
  asb_client_free(gc);
  REQUIRE(codei_start(&g, args, env) == 0);
  REQUIRE(codei_connect(&g, NULL, &gc, &gs) == 0);
  e = NULL;
  REQUIRE_RC(asb_code_run(&e, gs, "x", &o), ASB_OK);
  CHECK_STR(asb_execution_error_name(e), "ContextRestarting");
  CHECK(strstr(asb_execution_error_value(e), "the code interpreter was restarted") != NULL);
  asb_execution_free(e);
  e = NULL;
  REQUIRE_RC(asb_code_run(&e, gs, "x = 2; x", &o), ASB_OK);
  CHECK_STR(asb_execution_text(e), "2");
  asb_execution_free(e);
  /* the default contexts came back too (python, javascript) */
  asb_code_context_list *l = NULL;
  REQUIRE_RC(asb_code_contexts_list(&l, gs, NULL), ASB_OK);
  CHECK_INT((int)asb_code_context_list_count(l), 3);
  asb_code_context_list_free(l);
  asb_code_context_free(c);
  asb_sandbox_free(gs);
  asb_client_free(gc);
  codei_stop(&g);
  unlink(state);
}

/* Right after the port line (before /health is 200): GET /contexts already
 * lists both default contexts (E2B's 'list contexts' test lists right after
 * create), and the first /execute waits for the python kernel instead of
 * failing. */
TEST(defaults_listed_and_waited_for_before_ready) {
  codei_fixture g;
  const char *args[] = {"--cwd", TMPD, NULL};
  REQUIRE(codei_start(&g, args, NULL) == 0);
  asb_client *gc = NULL;
  asb_sandbox *gs = NULL;
  REQUIRE(codei_connect(&g, NULL, &gc, &gs) == 0);
  asb_code_context_list *l = NULL;
  REQUIRE_RC(asb_code_contexts_list(&l, gs, NULL), ASB_OK);
  int py = 0, js = 0;
  for (size_t i = 0; i < asb_code_context_list_count(l); i++) {
    const char *lang = asb_code_context_language(asb_code_context_list_get(l, i));
    py += strcmp(lang, "python") == 0;
    js += strcmp(lang, "javascript") == 0;
  }
  CHECK_INT(py, 1);
  CHECK_INT(js, 1);
  asb_code_context_list_free(l);
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.timeout_ms = 120000;
  asb_execution *e = NULL;
  REQUIRE_RC(asb_code_run(&e, gs, "1 + 1", &o), ASB_OK);
  CHECK(asb_execution_error_name(e) == NULL);
  CHECK_STR(asb_execution_text(e), "2");
  asb_execution_free(e);
  asb_sandbox_free(gs);
  asb_client_free(gc);
  codei_stop(&g);
}

/* ---- java (the JShell driver; `test_codei java`, ctest codei.java) ------------ */

TEST(java_context) {
  /* a context of its own, in a cwd of its own */
  asb_code_context *c = NULL;
  long long t0 = asbt_now_ms();
  REQUIRE_RC(asb_code_context_create(&c, SB, "java", TMPD, NULL), ASB_OK);
  printf("# java context ready in %lld ms\n", asbt_now_ms() - t0);
  const char *id = asb_code_context_id(c);
  CHECK_STR(asb_code_context_language(c), "java");
  CHECK_STR(value_of("System.getProperty(\"user.dir\")", id, NULL), TMPD);
  /* state: variables, methods, classes and imports across cells; the last
   * expression's toString is the result (strings unquoted) */
  CHECK_STR(value_of("int x = 41;", id, NULL), "");
  CHECK_STR(value_of("x + 1", id, NULL), "42");
  CHECK_STR(value_of("int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
                     "record P(int a, String b) {}\nimport java.time.*;",
                     id, NULL),
            "");
  CHECK_STR(value_of("new P(fib(10), \"q\") + \" \" + LocalDate.of(2020, 1, 2)", id, NULL),
            "P[a=55, b=q] 2020-01-02");
  CHECK_STR(value_of("\"two\\nlines\"", id, NULL), "two\nlines");
  CHECK_STR(value_of("new int[] {1, 2}", id, NULL), "[1, 2]");
  /* output: stdout and stderr apart, in order; display() */
  asb_execution *e = run_in(
      "System.out.println(\"a\"); System.err.println(\"b\");\n"
      "System.out.print(\"c\"); display(List.of(1, 2)); \"r\"",
      id, NULL);
  REQUIRE(e);
  char out[256];
  CHECK_STR(joined_stdout(e, out, sizeof out), "a\nc");
  /* println is print and then newLine, each a message (IJava's split) */
  CHECK(asb_execution_stderr_count(e) == 2 && strcmp(asb_execution_stderr_get(e, 0), "b") == 0 &&
        strcmp(asb_execution_stderr_get(e, 1), "\n") == 0);
  CHECK_INT(asb_execution_result_count(e), 2);
  if (asb_execution_result_count(e) == 2) {
    CHECK_STR(asb_code_result_value(asb_execution_result_get(e, 0), "text"), "[1, 2]");
    CHECK_INT(asb_code_result_is_main(asb_execution_result_get(e, 0)), 0);
  }
  CHECK_STR(asb_execution_text(e), "r");
  CHECK(asb_execution_count(e) > 0);
  asb_execution_free(e);
  /* E2B's test_java_kernel: stdout[0] == "Hello, World!"; multi-byte text
   * whole; a write of raw bytes that cuts a character waits for its end */
  e = run_in(
      "System.out.println(\"Hello, World!\"); System.out.print(\"h\u00e9\");\n"
      "System.out.write(0xc3); System.out.write(0xa9); System.out.flush();",
      id, NULL);
  REQUIRE(e);
  CHECK_INT(asb_execution_stdout_count(e), 4);
  if (asb_execution_stdout_count(e) == 4) {
    CHECK_STR(asb_execution_stdout_get(e, 0), "Hello, World!");
    CHECK_STR(asb_execution_stdout_get(e, 1), "\n");
    CHECK_STR(asb_execution_stdout_get(e, 2), "h\xc3\xa9");
    CHECK_STR(asb_execution_stdout_get(e, 3), "\xc3\xa9");
  }
  asb_execution_free(e);
  /* streaming: the cell goes on only once its first line reached us */
  snprintf(g_flag, sizeof g_flag, "%s/streamed-java", TMPD);
  unlink(g_flag);
  char code[640];
  snprintf(code, sizeof code,
           "System.out.println(\"first\");\nvar flag = new File(\"%s\");\n"
           "long t0 = System.currentTimeMillis();\n"
           "while (!flag.exists() && System.currentTimeMillis() - t0 < 120000) Thread.sleep(20);\n"
           "System.out.println(flag.exists() ? \"second\" : \"not streamed\");",
           g_flag);
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = id;
  o.on_stdout = flag_on_first;
  g_seen_first = 0;
  e = run_opts(code, &o);
  CHECK_STR(joined_stdout(e, out, sizeof out), "first\nsecond\n");
  asb_execution_free(e);
  unlink(g_flag); /* or `test_codei java` leaves TMPD behind (its rmdir fails) */
  o.on_stdout = NULL;
  /* errors: exceptions (name, message, the cell's frames), compile errors;
   * a cell stops at its first failing snippet */
  e = run_in("void boom() { throw new IllegalStateException(\"no\"); }\nboom();", id, NULL);
  REQUIRE(e);
  CHECK_STR(asb_execution_error_name(e), "java.lang.IllegalStateException");
  CHECK_STR(asb_execution_error_value(e), "no");
  const char *tb = asb_execution_error_traceback(e);
  CHECK(tb && strstr(tb, "java.lang.IllegalStateException: no") && strstr(tb, "at boom"));
  asb_execution_free(e);
  CHECK_STR(value_of("int y1 = 1; int y2 = y1 / 0; int y3 = 3;", id, NULL),
            "!java.lang.ArithmeticException: / by zero");
  CHECK_STR(value_of("y1", id, NULL), "1");
  e = run_in("int z = \"s\";", id, NULL);
  REQUIRE(e);
  CHECK_STR(asb_execution_error_name(e), "CompilationException");
  CHECK(strstr(asb_execution_error_value(e), "incompatible types") != NULL);
  CHECK(strstr(asb_execution_error_traceback(e), "int z = \"s\";\n        ^") != NULL);
  asb_execution_free(e);
  CHECK(strncmp(value_of("y3", id, NULL), "!CompilationException: cannot find symbol", 41) == 0);
  /* env vars: the environment as system properties (E2B's java kernel's
   * way), per call set and restored; a value javac must not misread */
  const char *envs[] = {"ASBT_CALL=q\"uo\\te\nd \\u000a", "ASBT_GLOBAL=overridden", NULL};
  o.envs = envs;
  e = run_opts("System.getProperty(\"ASBT_CALL\") + \"|\" + System.getProperty(\"ASBT_GLOBAL\")",
               &o);
  CHECK_STR(asb_execution_text(e), "q\"uo\\te\nd \\u000a|overridden");
  asb_execution_free(e);
  o.envs = NULL;
  CHECK_STR(value_of("System.getProperty(\"ASBT_CALL\", \"default\")", id, NULL), "default");
  CHECK_STR(value_of("System.getProperty(\"ASBT_GLOBAL\")", id, NULL), "from the server");
  /* a timeout interrupts a busy loop and a sleep; the state stays */
  o.timeout_ms = 1500;
  CHECK_RC(asb_code_run(&e, SB, "while (true) { x = x + 0; }", &o), ASB_ETIMEOUT);
  CHECK_RC(asb_code_run(&e, SB, "Thread.sleep(600000);", &o), ASB_ETIMEOUT);
  CHECK_STR(value_of("x + 1", id, NULL), "42");
  /* restart: a new JVM, the state gone */
  int pid = atoi(value_of("ProcessHandle.current().pid()", id, NULL));
  REQUIRE_RC(asb_code_context_restart(SB, id, NULL), ASB_OK);
  CHECK(pid > 1 && wait_gone(pid) == 0);
  CHECK(strncmp(value_of("x", id, NULL), "!CompilationException", 21) == 0);
  CHECK_STR(value_of("1 + 1", id, NULL), "2");
  /* the language alone finds (and starts) the default java context */
  CHECK_STR(value_of("String.join(\"-\", \"a\", \"b\")", NULL, "java"), "a-b");
  asb_code_context_remove(SB, id, NULL);
  asb_code_context_free(c);
}

/* The end of a by-hand mode that ran one test: the handles, the server
 * (codei_stop's result), the temporary dir, curl. */
static int stop_alone(void) {
  asb_sandbox_free(SB);
  asb_client_free(C);
  int rc = codei_stop(&F);
  rmdir(TMPD);
  curl_global_cleanup();
  return rc;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  snprintf(TMPD, sizeof TMPD, "/tmp/asbt-codei-XXXXXX");
  if (!mkdtemp(TMPD)) return 1;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const char *args[] = {"--access-token", TOKEN, "--traffic-token-sha256", TRAFFIC_SHA256, "--cwd",
                        "/tmp",           NULL};
  const char *env[] = {"ASBT_GLOBAL=from the server", NULL};
  if (codei_start(&F, args, env) != 0) {
    fprintf(stderr, "cannot start %s\n", CODEI_BIN);
    return 1;
  }
  if (wait_healthy() != 0 || codei_connect(&F, TOKEN, &C, &SB) != 0) {
    fprintf(stderr, "the server did not become healthy\n");
    codei_stop(&F);
    return 1;
  }
  if (argc > 1 && strcmp(argv[1], "abort") == 0) { /* by hand: the abort race alone */
    RUN(an_abort_interrupts_only_its_own_cell);
    CHECK_INT(stop_alone(), 0);
    TEST_MAIN_END();
  }
  if (argc > 1 && strcmp(argv[1], "java") == 0) { /* codei.java */
    RUN(java_context);
    CHECK_INT(stop_alone(), 0);
    TEST_MAIN_END();
  }
  RUN(state_persists_in_default_context);
  RUN(contexts_are_isolated);
  RUN(matplotlib_png);
  RUN(dataframes_json_and_images);
  RUN(display_html_markdown_json);
  RUN(exception_name_value_traceback);
  RUN(stdout_streams_while_the_cell_runs);
  RUN(subprocess_output_is_in_its_cell);
  RUN(timeout_interrupts_and_context_survives);
  RUN(an_abort_interrupts_only_its_own_cell);
  RUN(killed_kernel_is_reported_and_recovers);
  RUN(huge_output_streams_with_bounded_memory);
  RUN(env_vars_per_call_and_global);
  RUN(envs_set_on_the_running_server);
  RUN(javascript_context);
  RUN(bash_context);
  RUN(restart_and_remove);
  RUN(bad_input);
  RUN(access_token);
  RUN(token_file_is_read_again);
  RUN(concurrent_calls_queue_per_context);
  RUN(contexts_survive_a_server_restart);
  RUN(defaults_listed_and_waited_for_before_ready);
  /* every kernel goes with the server */
  int py = pid_of_kernel(NULL, NULL), sh = pid_of_kernel(NULL, "bash");
  asb_sandbox_free(SB);
  asb_client_free(C);
  CHECK_INT(codei_stop(&F), 0);
  CHECK(py > 1 && wait_gone(py) == 0);
  CHECK(sh > 1 && wait_gone(sh) == 0);
  unlink(g_flag);
  /* the state file and the killed server's run dir are in it */
  char rm[120];
  snprintf(rm, sizeof rm, "rm -rf '%s'", TMPD);
  if (system(rm) != 0) fprintf(stderr, "cannot remove %s\n", TMPD);
  curl_global_cleanup();
  TEST_MAIN_END();
}
