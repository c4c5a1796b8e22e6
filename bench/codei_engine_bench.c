/* The code interpreter through the local engine, from the C client:
 *   - create(code-interpreter-v1) → first asb_code_run("1+1") done, split
 *     into create and the first call (which waits for the kernel that
 *     create started), next to the python kernel's own import time in the
 *     same sandbox (what dominates)
 *   - warm asb_code_run("1+1") p50/p99 through the router, side by side
 *     with commands.run("true") and GET /contexts in the same sandbox
 * usage: codei_engine_bench [iterations]   (as root)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>

#include "../tests/support/engine_fixture.h"
#include "bench.h"

static engine_fixture F;
static asb_client *C;

static int create(asb_sandbox **sb) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 600000;
  o.template_id = "code-interpreter-v1";
  int rc = asb_sandbox_create(sb, C, &o);
  if (rc) fprintf(stderr, "create: %s\n", asb_error_last()->message);
  return rc;
}

static int one_plus_one(asb_sandbox *sb) {
  asb_execution *e = NULL;
  int rc = asb_code_run(&e, sb, "1+1", NULL);
  if (rc == ASB_OK && (!asb_execution_text(e) || strcmp(asb_execution_text(e), "2") != 0)) rc = -1;
  if (rc) fprintf(stderr, "run_code: %s\n", asb_error_last()->message);
  asb_execution_free(e);
  return rc;
}

static double shell_seconds(asb_sandbox *sb, const char *cmd) {
  asb_command_result *r = NULL;
  double v = -1;
  if (asb_commands_run(&r, sb, cmd, NULL) == ASB_OK) v = atof(asb_command_result_stdout(r, NULL));
  asb_command_result_free(r);
  return v;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 200;
  int cold = iters / 20 < 5 ? 5 : iters / 20;
  if (engine_fixture_start(&F, "cibench") != 0 || engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  double *cr = calloc((size_t)cold, sizeof *cr), *fr = calloc((size_t)cold, sizeof *fr),
         *tot = calloc((size_t)cold, sizeof *tot), *imp = calloc((size_t)cold, sizeof *imp);
  /* warm-up: template prepared, disk pool filled, page cache hot */
  asb_sandbox *sb = NULL;
  if (create(&sb) || one_plus_one(sb)) return 1;
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  printf("== create -> first run_code (%d sandboxes) ==\n", cold);
  for (int i = 0; i < cold; i++) {
    double t0 = bench_now();
    if (create(&sb)) return 1;
    double t1 = bench_now();
    if (one_plus_one(sb)) return 1;
    double t2 = bench_now();
    cr[i] = t1 - t0;
    fr[i] = t2 - t1;
    tot[i] = t2 - t0;
    imp[i] = shell_seconds(sb,
                           "s=$(date +%s%N); /usr/bin/python3 -c \"import sys; "
                           "sys.modules['debugpy']=None; import ipykernel.kernelapp\"; "
                           "e=$(date +%s%N); echo $(( (e - s) / 1000 ))") /
             1e6;
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
  }
  bench_report("create (code-interpreter-v1)", cr, cold);
  bench_report("first run_code(\"1+1\") after create", fr, cold);
  double p50_total = bench_report("create -> first run_code done", tot, cold);
  double p50_imp = bench_report("  python: import ipykernel alone", imp, cold);
  printf("  the kernel's python imports are %.0f%% of create -> first result\n",
         p50_total > 0 ? 100.0 * p50_imp / p50_total : 0);

  printf("== warm, one sandbox (%d iterations each, interleaved) ==\n", iters);
  if (create(&sb) || one_plus_one(sb)) return 1;
  double *code = calloc((size_t)iters, sizeof *code), *cmd = calloc((size_t)iters, sizeof *cmd),
         *ctx = calloc((size_t)iters, sizeof *ctx);
  for (int i = 0; i < iters; i++) {
    double t = bench_now();
    if (one_plus_one(sb)) return 1;
    code[i] = bench_now() - t;
    t = bench_now();
    asb_command_result *r = NULL;
    if (asb_commands_run(&r, sb, "exec /bin/true", NULL) != ASB_OK) return 1;
    asb_command_result_free(r);
    cmd[i] = bench_now() - t;
    t = bench_now();
    asb_code_context_list *l = NULL;
    if (asb_code_contexts_list(&l, sb, NULL) != ASB_OK) return 1;
    asb_code_context_list_free(l);
    ctx[i] = bench_now() - t;
  }
  double a = bench_report("run_code(\"1+1\") python, warm", code, iters);
  double b = bench_report("commands.run(\"true\") same sandbox", cmd, iters);
  double c = bench_report("GET /contexts (HTTP floor, no kernel)", ctx, iters);
  printf("  ratios: run_code / commands.run = %.2f, run_code / HTTP floor = %.2f\n", a / b, a / c);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  free(cr);
  free(fr);
  free(tot);
  free(imp);
  free(code);
  free(cmd);
  free(ctx);
  asb_client_free(C);
  engine_fixture_stop(&F);
  return 0;
}
