/* The code interpreter through a real agent-sandboxd: the
 * code-interpreter-v1 template's create returns with its kernel up, any other
 * template gets the interpreter on the first request for port 49999, the
 * router carries /execute's NDJSON stream, kernels run as root inside (as
 * E2B's) in the workload and survive pause/resume, a kernel killed from
 * inside the sandbox is reported and restarted, the interpreter itself is
 * out of a user's reach (signals, an OOM in the workload) and comes back
 * when root kills it, charts, data
 * and the default contexts are E2B's, and the token guards code execution.
 * The server's own semantics are in tests/codei (codei.server). Runs as
 * root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>

#include "asb_testing.h"
#include "engine_http.h"

static engine_fixture F;
static asb_client *C;

static int make(asb_sandbox **sb, const char *tmpl) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  o.template_id = tmpl;
  return asb_sandbox_create(sb, C, &o);
}

#define CHECK_VALUE(sb, code, ctx, want)             \
  do {                                               \
    char *v_ = asbt_code_value((sb), (code), (ctx)); \
    CHECK_STR(v_, (want));                           \
    free(v_);                                        \
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
  /* kernels run as root inside the sandbox (E2B's do), in the user's home */
  char want[128];
  snprintf(want, sizeof want, "(0, '/home/user', '%s')", asb_sandbox_id(sb));
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
  char *pid = asbt_code_value(sb, "import os; os.getpid()", NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "kill -9 %s", pid);
  free(pid);
  asb_command_result *r = NULL;
  asb_command_options root = ASB_COMMAND_OPTIONS_INIT;
  root.user = "root"; /* the kernel is root's */
  CHECK_RC(asb_commands_run(&r, sb, cmd, &root), ASB_OK);
  asb_command_result_free(r);
  char *v = asbt_code_value(sb, "ran = 1", NULL);
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

/* The interpreter's pid, in a shell ([c]: not the shell itself; not PID 1,
 * asb-init, whose command line holds the aux agent's). */
#define PGREP_CODEI "$(pgrep -f '[c]ode-interpreter --port' | grep -vx 1)"

static int run_cmd(asb_sandbox *sb, const char *cmd, const char *user, char *out, size_t n) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.user = user;
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, cmd, &o);
  if (out)
    snprintf(out, n, "%s",
             r && asb_command_result_stdout(r, NULL) ? asb_command_result_stdout(r, NULL) : "");
  asb_command_result_free(r);
  return rc;
}

/* The interpreter is asb-init's aux agent: root's, in the agent cgroup, so
 * the sandbox's user cannot kill it, and when root does it comes back on
 * port 49999 with its contexts, which say once that they restarted. */
TEST(the_interpreter_is_supervised_apart_from_the_user) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, "code-interpreter-v1"), ASB_OK);
  CHECK_VALUE(sb, "alive = 1; alive", NULL, "1");
  char out[4096];
  /* the user cannot signal it ([c]: the pattern does not match the shell) */
  CHECK_RC(run_cmd(sb, "kill -9 " PGREP_CODEI " 2>&1; echo rc=$?", NULL, out, sizeof out), ASB_OK);
  CHECK(strstr(out, "Operation not permitted") != NULL && strstr(out, "rc=1") != NULL);
  CHECK_VALUE(sb, "alive + 1", NULL, "2");
  /* an OOM in the workload (the user's 1 GiB into the sandbox's 512 MiB)
   * kills the hog, not the interpreter: the same process serves on */
  char before[64], after[64];
  CHECK_RC(run_cmd(sb, "echo " PGREP_CODEI, "root", before, sizeof before), ASB_OK);
  CHECK_RC(run_cmd(sb, "python3 -c 'b = bytearray(1024 << 20)'; echo rc=$?", NULL, out, sizeof out),
           ASB_OK);
  CHECK_STR(out, "rc=137\n");
  CHECK_RC(run_cmd(sb, "echo " PGREP_CODEI, "root", after, sizeof after), ASB_OK);
  CHECK(before[0] >= '1' && before[0] <= '9');
  CHECK_STR(after, before);
  char *ov =
      asbt_code_value(sb, "6 * 7", NULL); /* its kernel, in the workload, may be the victim */
  if (strncmp(ov, "!ContextRestarting", 18) == 0)
    CHECK_VALUE(sb, "6 * 7", NULL, "42");
  else
    CHECK_STR(ov, "42");
  free(ov);
  asb_code_context *c = NULL;
  REQUIRE_RC(asb_code_context_create(&c, sb, "python", "/root", NULL), ASB_OK);
  CHECK_STR(asb_code_context_cwd(c), "/root"); /* E2B's kernels are root's */
  CHECK_VALUE(sb, "import os; mine = 1; os.getcwd()", asb_code_context_id(c), "/root");
  /* not in the workload cgroup, where the user's processes (and kernels) are */
  CHECK_RC(run_cmd(sb, "cat /proc/" PGREP_CODEI "/cgroup; echo ==; cat /proc/self/cgroup", "root",
                   out, sizeof out),
           ASB_OK);
  char *sep = strstr(out, "==\n");
  REQUIRE(sep != NULL);
  *sep = '\0';
  CHECK(strcmp(out, sep + 3) != 0);
  char *kpid = asbt_code_value(sb, "import os; os.getpid()", NULL), cmd[256];
  snprintf(cmd, sizeof cmd, "cat /proc/%s/cgroup", kpid);
  free(kpid);
  char kcg[4096];
  CHECK_RC(run_cmd(sb, cmd, "root", kcg, sizeof kcg), ASB_OK);
  CHECK_STR(kcg, sep + 3);
  /* root kills it: it comes back, and the context says it restarted */
  CHECK_RC(run_cmd(sb,
                   "p=" PGREP_CODEI "; kill -9 $p; "
                   "while kill -0 $p 2>/dev/null; do sleep 0.05; done", /* gone, reaped */
                   "root", NULL, 0),
           ASB_OK);
  char *v = asbt_code_value(sb, "mine", asb_code_context_id(c));
  CHECK(strncmp(v, "!ContextRestarting", 18) == 0);
  free(v);
  CHECK_VALUE(sb, "mine", asb_code_context_id(c), "!NameError: name 'mine' is not defined");
  CHECK_VALUE(sb, "6 * 7", NULL,
              "!ContextRestarting: Context was restarted: the code interpreter "
              "was restarted (its server process ended), and its kernels with it. Its state "
              "(variables, imports, definitions) is lost; the code was not run.");
  CHECK_VALUE(sb, "6 * 7", NULL, "42");
  asb_code_context_free(c);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

/* E2B's template additions, through the C client: a chart next to the png
 * (format "chart", JSON text), a DataFrame's "data", the javascript default
 * context, TypeScript and ESM cells. */
TEST(charts_data_and_languages_as_in_e2b) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, "code-interpreter-v1"), ASB_OK);
  asb_execution *e = NULL;
  REQUIRE_RC(asb_code_run(&e, sb,
                          "import matplotlib.pyplot as plt\n"
                          "plt.bar(['a', 'b'], [3, 4], label='n')\nplt.title('T')\nplt.show()",
                          NULL),
             ASB_OK);
  const asb_code_result *r = asb_execution_result_count(e) ? asb_execution_result_get(e, 0) : NULL;
  REQUIRE(r != NULL);
  CHECK(asb_code_result_value(r, "png") != NULL);
  CHECK_STR(asb_code_result_value(r, "chart"),
            "{\"type\":\"bar\",\"title\":\"T\",\"elements\":[{\"label\":\"a\",\"group\":\"n\","
            "\"value\":3.0},{\"label\":\"b\",\"group\":\"n\",\"value\":4.0}],\"x_label\":null,"
            "\"y_label\":null,\"x_unit\":null,\"y_unit\":null}");
  asb_execution_free(e);
  e = NULL;
  REQUIRE_RC(
      asb_code_run(&e, sb, "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', None]})",
                   NULL),
      ASB_OK);
  r = asb_execution_result_count(e) ? asb_execution_result_get(e, 0) : NULL;
  REQUIRE(r != NULL);
  CHECK_STR(asb_code_result_value(r, "data"), "{\"a\":[1,2],\"b\":[\"x\",null]}");
  CHECK(asb_code_result_value(r, "html") != NULL);
  asb_execution_free(e);
  asb_code_context_list *l = NULL;
  REQUIRE_RC(asb_code_contexts_list(&l, sb, NULL), ASB_OK);
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
  o.language = "typescript";
  e = NULL;
  REQUIRE_RC(asb_code_run(&e, sb, "interface P { n: number }\nconst p: P = { n: 41 }\np.n + 1", &o),
             ASB_OK);
  CHECK_STR(asb_execution_text(e), "42");
  asb_execution_free(e);
  o.language = "javascript";
  e = NULL;
  REQUIRE_RC(asb_code_run(&e, sb, "import { join } from 'path'\njoin('a', 'b')", &o), ASB_OK);
  CHECK_STR(asb_execution_text(e), "a/b");
  asb_execution_free(e);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

/* METHOD path of the sandbox's code interpreter (port 49999) through the
 * router, with its token (or none). */
static long raw(asb_sandbox *sb, const char *method, const char *path, const char *body,
                const char *token) {
  char h2[128];
  snprintf(h2, sizeof h2, "X-Access-Token: %s", token ? token : "");
  const char *hs[] = {"Content-Type: application/json", token ? h2 : NULL, NULL};
  engine_req r = {
      .json = body, .sandbox = asb_sandbox_id(sb), .port = 49999, .headers = hs, .timeout_s = 60};
  return engine_http(&F, method, path, &r, NULL);
}

/* Every route but /health needs the sandbox's envd token (or its traffic
 * token, which E2B's stock SDKs send on the context calls: security.http
 * and npm.codei_engine); the sandbox id alone gets nothing. */
TEST(the_token_guards_code_execution) {
  asb_sandbox *sb = NULL;
  REQUIRE_RC(make(&sb, "code-interpreter-v1"), ASB_OK);
  /* create returned with the interpreter up, as E2B's does: /health is 200
   * at once (it is 503 while the default python kernel starts) */
  CHECK_INT(raw(sb, "GET", "/health", NULL, NULL), 200);
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
  RUN(the_interpreter_is_supervised_apart_from_the_user);
  RUN(charts_data_and_languages_as_in_e2b);
  asb_client_free(C);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
