/* Named commands and templates through the C client against a real engine,
 * in one run:
 *   - run_command("echo") round trip to the c-hello server (port 9000, via
 *     the engine's router) next to commands.run("true") (envd) and a
 *     template custom command (served by the engine), p50/p99
 *   - the c-hello template build: cold (forced; its C server compiled in the
 *     build sandbox) and cached
 *   - create latency of a c-hello sandbox (start command + ready check on
 *     port 9000) next to a plain base sandbox
 * usage: server_bench [iterations] [template-dir]   (as root)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>

#include "../tests/support/engine_fixture.h"
#include "bench.h"
#include "bench_signals.h"

#ifndef ASB_TEMPLATE_DIR
#define ASB_TEMPLATE_DIR "build/examples/templates/c-hello"
#endif

static engine_fixture F;
static asb_client *C;

static asb_sandbox *create(const char *tmpl) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = tmpl;
  o.timeout_ms = 600000;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, C, &o) != ASB_OK) {
    fprintf(stderr, "create %s: %s\n", tmpl, asb_error_last()->message);
    return NULL;
  }
  return sb;
}

static int build(const char *dir, int force, int *cached) {
  asb_template_build_options o = ASB_TEMPLATE_BUILD_OPTIONS_INIT;
  o.force = force;
  asb_template *t = NULL;
  int rc = asb_templates_build(&t, C, dir, &o);
  if (rc) fprintf(stderr, "build: %s\n", asb_error_last()->message);
  if (cached) *cached = asb_template_cached(t);
  asb_template_free(t);
  return rc;
}

int main(int argc, char **argv) {
  bench_exit_on_signals(); /* the engines stopped, their state removed */
  int iters = argc > 1 ? atoi(argv[1]) : 200;
  const char *dir = argc > 2 ? argv[2] : ASB_TEMPLATE_DIR;
  if (iters < 10) iters = 10;
  if (engine_fixture_start(&F, "sbench") != 0 || engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  int builds = iters / 20 < 3 ? 3 : iters / 20, creates = iters / 10 < 10 ? 10 : iters / 10;
  double *v = calloc((size_t)iters, sizeof *v);
  int rc = 1, cached = 0;

  printf("== template build: %s ==\n", dir);
  if (build(dir, 0, NULL)) goto out; /* warm: base prepared, pool filled */
  for (int i = 0; i < builds; i++) {
    double t = bench_now();
    if (build(dir, 1, &cached) || cached) goto out;
    v[i] = bench_now() - t;
  }
  bench_report("build c-hello, cold (forced, gcc inside)", v, builds);
  for (int i = 0; i < iters; i++) {
    double t = bench_now();
    if (build(dir, 0, &cached) || !cached) goto out;
    v[i] = bench_now() - t;
  }
  bench_report("build c-hello, cached (same inputs)", v, iters);

  printf("== create ==\n");
  for (int i = 0; i < 3; i++) { /* warm-up */
    asb_sandbox *sb = create("c-hello");
    if (!sb) goto out;
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
  }
  for (int pass = 0; pass < 2; pass++) {
    const char *tmpl = pass ? "c-hello" : "base";
    for (int i = 0; i < creates; i++) {
      double t = bench_now();
      asb_sandbox *sb = create(tmpl);
      if (!sb) goto out;
      v[i] = bench_now() - t;
      asb_sandbox_kill(sb, NULL);
      asb_sandbox_free(sb);
    }
    bench_report(
        pass ? "create c-hello (start cmd + ready port 9000)" : "create base (no start command)", v,
        creates);
  }

  printf("== calls into one c-hello sandbox (%d each) ==\n", iters);
  asb_sandbox *sb = create("c-hello");
  if (!sb) goto out;
  for (int pass = 0; pass < 3; pass++) {
    for (int i = -10; i < iters; i++) { /* 10 warm-up calls */
      double t = bench_now();
      int r;
      if (pass == 0) {
        char *out = NULL;
        r = asb_sandbox_run_command(&out, sb, "echo", "{\"value\":\"x\"}", NULL);
        asb_free(out);
      } else if (pass == 1) {
        asb_command_result *res = NULL;
        r = asb_commands_run(&res, sb, "true", NULL);
        asb_command_result_free(res);
      } else {
        char *out = NULL;
        r = asb_sandbox_run_command(&out, sb, "whoami", NULL, NULL);
        asb_free(out);
      }
      if (r != ASB_OK) {
        fprintf(stderr, "call: %s\n", asb_error_last()->message);
        goto out;
      }
      if (i >= 0) v[i] = bench_now() - t;
    }
    bench_report(pass == 0   ? "run_command(\"echo\")  (server SDK, port 9000)"
                 : pass == 1 ? "commands.run(\"true\") (envd, bash -l)"
                             : "run_command(\"whoami\") (custom command)",
                 v, iters);
  }
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_templates_delete(C, "c-hello", NULL);
  rc = 0;
out:
  free(v);
  asb_client_free(C);
  engine_fixture_stop(&F);
  return rc;
}
