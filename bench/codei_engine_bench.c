/* The code interpreter through the local engine, from the C client:
 *   - create(code-interpreter-v1) → first asb_code_run("1+1") done, split
 *     into create and the first call (which waits for the kernel that
 *     create started), next to the python kernel's own import time in the
 *     same sandbox (what dominates); and the same from a warm pool (a
 *     second engine, --pool-template code-interpreter-v1=1), without and
 *     with envVars (the claim gives them to the running interpreter),
 *     interleaved round by round with the fresh creates; the memory of a
 *     pooled code-interpreter sandbox
 *   - warm asb_code_run("1+1") p50/p99 through the router, side by side
 *     with commands.run("true") and GET /contexts in the same sandbox
 * usage: codei_engine_bench [iterations]   (as root)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>

#include "../tests/support/engine_fixture.h"
#include "bench.h"
#include "bench_signals.h"

static engine_fixture F, FP; /* FP: the one with the warm pool */
static asb_client *C, *CP;

static int create_on(asb_client *cl, asb_sandbox **sb, const char *const *envs) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 600000;
  o.template_id = "code-interpreter-v1";
  o.envs = envs;
  int rc = asb_sandbox_create(sb, cl, &o);
  if (rc) fprintf(stderr, "create: %s\n", asb_error_last()->message);
  return rc;
}

static int create(asb_sandbox **sb) {
  return create_on(C, sb, NULL);
}

/* a number in the pool object of GET /templates/code-interpreter-v1 */
static double pool_field(const char *field) {
  asb_template *t = NULL;
  if (asb_templates_get(&t, CP, "code-interpreter-v1", NULL) != ASB_OK) return -1;
  const char *j = asb_template_json(t), *p = j ? strstr(j, "\"pool\"") : NULL;
  char key[64];
  snprintf(key, sizeof key, "\"%s\":", field);
  const char *v = p ? strstr(p, key) : NULL;
  double r = v ? atof(v + strlen(key)) : -1;
  asb_template_free(t);
  return r;
}

static int wait_pool_ready(void) {
  for (double end = bench_now() + 120; bench_now() < end; usleep(20000))
    if (pool_field("ready") >= 1) return 0;
  fprintf(stderr, "the pool did not fill\n");
  return -1;
}

/* create (on cl) → first run_code done: the create and the call */
static int create_and_run(asb_client *cl, const char *const *envs, double *cr, double *fr,
                          asb_sandbox **out) {
  asb_sandbox *sb = NULL;
  double t0 = bench_now();
  if (create_on(cl, &sb, envs)) return -1;
  double t1 = bench_now();
  asb_execution *e = NULL;
  int rc = asb_code_run(&e, sb, envs ? "import os; os.environ['BENCH_ENV']" : "1+1", NULL);
  const char *want = envs ? "on" : "2";
  if (rc == ASB_OK && (!asb_execution_text(e) || strcmp(asb_execution_text(e), want) != 0)) rc = -1;
  if (rc) fprintf(stderr, "run_code: %s\n", rc > 0 ? asb_error_last()->message : "wrong value");
  asb_execution_free(e);
  *cr = t1 - t0;
  *fr = bench_now() - t1;
  *out = sb;
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
  bench_exit_on_signals(); /* the engines stopped, their state removed */
  int iters = argc > 1 ? atoi(argv[1]) : 200;
  int cold = iters / 20 < 5 ? 5 : iters / 20;
  static const char *const pool_args[] = {"--pool-template", "code-interpreter-v1=1",
                                          "--pool-min-available", "0", NULL};
  if (engine_fixture_start(&F, "cibench") != 0 || engine_fixture_client(&F, &C) != ASB_OK ||
      engine_fixture_start_args(&FP, "cibenchp", pool_args) != 0 ||
      engine_fixture_client(&FP, &CP) != ASB_OK) {
    fprintf(stderr, "cannot start the engines\n");
    return 1;
  }
  double *cr = calloc((size_t)cold, sizeof *cr), *fr = calloc((size_t)cold, sizeof *fr),
         *tot = calloc((size_t)cold, sizeof *tot), *imp = calloc((size_t)cold, sizeof *imp);
  double *pcr = calloc((size_t)cold, sizeof *pcr), *pfr = calloc((size_t)cold, sizeof *pfr),
         *ptot = calloc((size_t)cold, sizeof *ptot);
  double *ecr = calloc((size_t)cold, sizeof *ecr), *efr = calloc((size_t)cold, sizeof *efr),
         *etot = calloc((size_t)cold, sizeof *etot);
  /* warm-up: template prepared, disk pool filled, page cache hot */
  asb_sandbox *sb = NULL;
  if (create(&sb) || one_plus_one(sb)) return 1;
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  if (wait_pool_ready()) return 1;
  double mem = pool_field("memoryBytesPerSandbox");
  double claims0 = pool_field("claims"), misses0 = pool_field("misses");
  static const char *const envs[] = {"BENCH_ENV=on", NULL};
  printf("== create -> first run_code (%d rounds: fresh, warm pool, warm pool + envVars) ==\n",
         cold);
  for (int i = 0; i < cold; i++) {
    /* fresh (an engine without a pool), while the other's pool is full and idle */
    if (create_and_run(C, NULL, &cr[i], &fr[i], &sb)) return 1;
    tot[i] = cr[i] + fr[i];
    imp[i] = shell_seconds(sb,
                           "s=$(date +%s%N); /usr/bin/python3 -c \"import sys; "
                           "sys.modules['debugpy']=None; import ipykernel.kernelapp\"; "
                           "e=$(date +%s%N); echo $(( (e - s) / 1000 ))") /
             1e6;
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
    /* from the pool; then its refill is waited for before the next one.
     * The refill (a kernel starting: CPU) runs right after each claim, so
     * which of the two goes first alternates round by round. */
    for (int j = 0; j < 2; j++) {
      int k = (i + j) % 2;
      if (create_and_run(CP, k ? envs : NULL, k ? &ecr[i] : &pcr[i], k ? &efr[i] : &pfr[i], &sb))
        return 1;
      if (k)
        etot[i] = ecr[i] + efr[i];
      else
        ptot[i] = pcr[i] + pfr[i];
      asb_sandbox_kill(sb, NULL);
      asb_sandbox_free(sb);
      if (wait_pool_ready()) return 1;
    }
  }
  bench_report("create (code-interpreter-v1), fresh", cr, cold);
  bench_report("first run_code(\"1+1\") after create", fr, cold);
  double p50_total = bench_report("create -> first run_code done, fresh", tot, cold);
  double p50_imp = bench_report("  python: import ipykernel alone", imp, cold);
  printf("  the kernel's python imports are %.0f%% of create -> first result\n",
         p50_total > 0 ? 100.0 * p50_imp / p50_total : 0);
  bench_report("create from the warm pool (the claim)", pcr, cold);
  bench_report("first run_code(\"1+1\") after it", pfr, cold);
  double p50_pool = bench_report("create -> first run_code done, warm pool", ptot, cold);
  bench_report("create + envVars from the warm pool", ecr, cold);
  bench_report("first run_code (reads the env var)", efr, cold);
  double p50_env = bench_report("create -> first run_code, pool + envVars", etot, cold);
  printf("  ratios of p50s: warm pool / fresh = %.3f, pool + envVars / fresh = %.3f\n",
         p50_total > 0 ? p50_pool / p50_total : 0, p50_total > 0 ? p50_env / p50_total : 0);
  printf("  pool claims %.0f, misses %.0f (every pooled create claimed)\n",
         pool_field("claims") - claims0, pool_field("misses") - misses0);
  printf("  memory per pooled code-interpreter sandbox: %.1f MiB (charged to its cgroups)\n",
         mem / 1048576.0);
  asb_client_free(CP);
  engine_fixture_stop(&FP);

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
  free(pcr);
  free(pfr);
  free(ptot);
  free(ecr);
  free(efr);
  free(etot);
  free(code);
  free(cmd);
  free(ctx);
  asb_client_free(C);
  engine_fixture_stop(&F);
  return 0;
}
