/* The code interpreter through a real agent-sandboxd: the
 * code-interpreter-v1 template warms its kernel at create, any other
 * template gets the interpreter on the first request for port 49999, the
 * router carries /execute's NDJSON stream, kernels run as the sandbox's
 * user and survive pause/resume, a kernel killed from inside the sandbox is
 * reported and restarted, and the token guards code execution. The server's
 * own semantics are in tests/codei (codei.server). Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;

static int make(asb_sandbox **sb, const char *tmpl) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  o.template_id = tmpl;
  return asb_sandbox_create(sb, C, &o);
}

/* The main result's text, "!Name: value" for an error, "<rc>" when the
 * call failed. Caller frees. */
static char *value_of(asb_sandbox *sb, const char *code, const char *ctx) {
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = ctx;
  o.timeout_ms = 60000;
  asb_execution *e = NULL;
  int rc = asb_code_run(&e, sb, code, &o);
  char buf[512];
  if (rc != ASB_OK)
    snprintf(buf, sizeof buf, "<%s: %s>", asb_strerror(rc), asb_error_last()->message);
  else if (asb_execution_error_name(e))
    snprintf(buf, sizeof buf, "!%s: %s", asb_execution_error_name(e),
             asb_execution_error_value(e));
  else
    snprintf(buf, sizeof buf, "%s", asb_execution_text(e) ? asb_execution_text(e) : "<none>");
  asb_execution_free(e);
  return strdup(buf);
}

#define CHECK_VALUE(sb, code, ctx, want)      \
  do {                                        \
    char *v_ = value_of((sb), (code), (ctx)); \
    CHECK_STR(v_, (want));                    \
    free(v_);                                 \
  } while (0)

TEST(code_interpreter_template_runs_python) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, "code-interpreter-v1"), ASB_OK);
  asb_execution *e = NULL;
  REQUIRE_RC(asb_code_run(&e, sb, "x = 2 ** 10\nprint('hi')\nx", NULL), ASB_OK);
  CHECK_STR(asb_execution_text(e), "1024");
  CHECK_INT((int)asb_execution_stdout_count(e), 1);
  if (asb_execution_stdout_count(e) == 1) CHECK_STR(asb_execution_stdout_get(e, 0), "hi\n");
  CHECK(asb_execution_error_name(e) == NULL);
  asb_execution_free(e);
  /* state persists in the default context */
  CHECK_VALUE(sb, "x + 1", NULL, "1025");
  /* kernels run as the sandbox's user, in its home, inside the sandbox */
  char want[128];
  snprintf(want, sizeof want, "(1000, '/home/user', '%s')", asb_sandbox_id(sb));
  CHECK_VALUE(sb, "import os, socket; (os.getuid(), os.getcwd(), socket.gethostname())", NULL,
              want);
  /* errors carry name and value */
  CHECK_VALUE(sb, "1/0", NULL, "!ZeroDivisionError: division by zero");
  /* matplotlib draws a png (Debian's python3-matplotlib, its rc from /etc) */
  e = NULL;
  REQUIRE_RC(asb_code_run(&e, sb,
                          "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()", NULL),
             ASB_OK);
  CHECK(asb_execution_error_name(e) == NULL);
  int png = 0;
  for (size_t i = 0; i < asb_execution_result_count(e); i++) {
    const char *p = asb_code_result_value(asb_execution_result_get(e, i), "png");
    if (p && strlen(p) > 100) png = 1;
  }
  CHECK(png);
  asb_execution_free(e);
  /* other languages */
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.language = "javascript";
  e = NULL;
  REQUIRE_RC(asb_code_run(&e, sb, "console.log(6 * 7)", &o), ASB_OK);
  CHECK(asb_execution_stdout_count(e) == 1 && strcmp(asb_execution_stdout_get(e, 0), "42\n") == 0);
  asb_execution_free(e);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

TEST(any_template_starts_the_interpreter_on_demand) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, NULL), ASB_OK); /* base */
  CHECK_VALUE(sb, "sum(range(10))", NULL, "45");
  asb_code_context *c = NULL;
  REQUIRE_RC(asb_code_context_create(&c, sb, "python", NULL, NULL), ASB_OK);
  CHECK_VALUE(sb, "y = 'ctx'; y", asb_code_context_id(c), "ctx");
  /* contexts are isolated from each other */
  CHECK_VALUE(sb, "y", NULL, "!NameError: name 'y' is not defined");
  asb_code_context_free(c);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

TEST(timeout_interrupts_and_kernel_killed_in_the_sandbox_recovers) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, "code-interpreter-v1"), ASB_OK);
  CHECK_VALUE(sb, "kept = 7; kept", NULL, "7");
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.timeout_ms = 1500;
  asb_execution *e = NULL;
  CHECK_RC(asb_code_run(&e, sb, "while True:\n    pass", &o), ASB_ETIMEOUT);
  asb_execution_free(e);
  CHECK_VALUE(sb, "kept * 6", NULL, "42");
  /* a command in the sandbox kills the kernel (pid from the kernel) */
  char *pid = value_of(sb, "import os; os.getpid()", NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "kill -9 %s", pid);
  free(pid);
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, sb, cmd, NULL), ASB_OK);
  asb_command_result_free(r);
  char *v = value_of(sb, "ran = 1", NULL);
  CHECK(strncmp(v, "!ContextRestarting", 18) == 0);
  free(v);
  CHECK_VALUE(sb, "21 * 2", NULL, "42");
  CHECK_VALUE(sb, "kept", NULL, "!NameError: name 'kept' is not defined");
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

TEST(kernel_state_survives_pause_resume) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, "code-interpreter-v1"), ASB_OK);
  CHECK_VALUE(sb, "z = [1, 2, 3]; len(z)", NULL, "3");
  REQUIRE_RC(asb_sandbox_pause(sb, NULL), 1); /* 1: paused now */
  asb_sandbox *again = NULL;
  REQUIRE_RC(asb_sandbox_connect(&again, C, asb_sandbox_id(sb), 0, NULL), ASB_OK);
  CHECK_VALUE(again, "sum(z)", NULL, "6");
  CHECK_RC(asb_sandbox_kill(again, NULL), ASB_OK);
  asb_sandbox_free(again);
  asb_sandbox_free(sb);
}

static size_t sink(char *p, size_t s, size_t n, void *ud) {
  (void)p;
  (void)ud;
  return s * n;
}

static long raw(asb_sandbox *sb, const char *method, const char *path, const char *body,
                const char *token) {
  CURL *c = curl_easy_init();
  char url[256], h1[128], h2[128];
  snprintf(url, sizeof url, "%s%s", F.url, path);
  snprintf(h1, sizeof h1, "E2b-Sandbox-Id: %s", asb_sandbox_id(sb));
  snprintf(h2, sizeof h2, "X-Access-Token: %s", token ? token : "");
  struct curl_slist *h = curl_slist_append(NULL, h1);
  h = curl_slist_append(h, "E2b-Sandbox-Port: 49999");
  h = curl_slist_append(h, "Content-Type: application/json");
  if (token) h = curl_slist_append(h, h2);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  long st = 0;
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return st;
}

/* Every route but /health needs the sandbox's envd token (or its traffic
 * token, which E2B's stock SDKs send on the context calls: security.http
 * and npm.codei_engine); the sandbox id alone gets nothing. */
TEST(the_token_guards_code_execution) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, "code-interpreter-v1"), ASB_OK);
  const char *tok = asb_sandbox_envd_access_token(sb);
  REQUIRE(tok && *tok);
  CHECK_INT(raw(sb, "POST", "/execute", "{\"code\":\"1\"}", NULL), 401);
  CHECK_INT(raw(sb, "POST", "/execute", "{\"code\":\"1\"}", "wrong"), 401);
  CHECK_INT(raw(sb, "POST", "/execute", "{\"code\":\"1\"}", tok), 200);
  CHECK_INT(raw(sb, "GET", "/contexts", NULL, NULL), 401);
  CHECK_INT(raw(sb, "GET", "/contexts", NULL, tok), 200);
  CHECK_INT(raw(sb, "GET", "/contexts", NULL, "wrong"), 401);
  CHECK_INT(raw(sb, "DELETE", "/contexts/nope", NULL, NULL), 401);
  CHECK_INT(raw(sb, "DELETE", "/contexts/nope", NULL, "wrong"), 401);
  CHECK_INT(raw(sb, "GET", "/health", NULL, NULL), 200);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  /* a gone sandbox: the router says so */
  CHECK_INT(raw(sb, "POST", "/execute", "{\"code\":\"1\"}", tok), 502);
  asb_sandbox_free(sb);
}

int main(void) {
  if (engine_fixture_start(&F, "codei") != 0 || engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine (%s)\n", ASB_ENGINE_BIN);
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(code_interpreter_template_runs_python);
  RUN(any_template_starts_the_interpreter_on_demand);
  RUN(timeout_interrupts_and_kernel_killed_in_the_sandbox_recovers);
  RUN(kernel_state_survives_pause_resume);
  RUN(the_token_guards_code_execution);
  asb_client_free(C);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
