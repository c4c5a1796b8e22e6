/* An engine restart (kill -9, then a new engine on the same state dir)
 * with N sandboxes left running vs left paused with memory, side by side,
 * round by round, and the resume of a paused sandbox by the engine that
 * paused it vs by the next one:
 *   - restart, running: kill -9 → the new engine listening (it adopted N
 *     running sandboxes) → a command in one of them
 *   - restart, paused: every sandbox paused, kill -9 → listening (N frozen
 *     ones adopted) → POST /connect + a command in one of them
 *   - restart, none: the same for an engine with no sandbox (the cost of
 *     starting an engine at all: templates, warm disk pool, listeners)
 *   - same engine: POST /pause, POST /connect + a command, no restart
 * usage: restart_bench [rounds] [sandboxes]   (as root)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>

#include "../tests/support/engine_http.h"
#include "bench.h"
#include "bench_signals.h"

static engine_fixture F, F0;
static asb_client *C;

static long post(const char *id, const char *action, const char *json) {
  return engine_sandbox_post(&F, id, action, json, 0);
}

static int run_true(asb_sandbox *sb) {
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, "exec /bin/true", NULL);
  asb_command_result_free(r);
  return rc;
}

/* kill -9 of the engine, then a new one: seconds until it listens. */
static double restart(engine_fixture *f, int *failed) {
  engine_fixture_signal(f, SIGKILL);
  double t0 = bench_now();
  if (engine_fixture_launch(f, 1) != 0) *failed = 1;
  return bench_now() - t0;
}

int main(int argc, char **argv) {
  bench_exit_on_signals(); /* the engines stopped, their state removed */
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  int n = argc > 2 ? atoi(argv[2]) : 8;
  if (rounds < 1) rounds = 1;
  if (n < 1) n = 1;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (engine_fixture_start(&F, "bench-restart") != 0 || engine_fixture_client(&F, &C) != ASB_OK ||
      engine_fixture_start(&F0, "bench-restart0") != 0) {
    fprintf(stderr, "cannot start the engines\n");
    engine_fixture_stop(&F);
    engine_fixture_stop(&F0);
    return 1;
  }
  asb_sandbox **sb = calloc((size_t)n, sizeof *sb);
  double *v[6];
  for (int k = 0; k < 6; k++) v[k] = calloc((size_t)rounds, sizeof(double));
  int failed = !sb;
  for (int i = 0; i < n && !failed; i++) {
    asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
    o.timeout_ms = 1800000;
    if (asb_sandbox_create(&sb[i], C, &o) != ASB_OK || run_true(sb[i]) != ASB_OK) {
      fprintf(stderr, "create: %s\n", asb_error_last()->message);
      failed = 1;
    }
  }
  for (int r = 0; r < rounds && !failed; r++) {
    const char *id = asb_sandbox_id(sb[r % n]);
    v[5][r] = restart(&F0, &failed);
    /* left running */
    v[0][r] = restart(&F, &failed);
    double t0 = bench_now();
    failed |= run_true(sb[r % n]) != ASB_OK;
    v[1][r] = bench_now() - t0;
    /* left paused with memory */
    for (int i = 0; i < n && !failed; i++)
      failed |= post(asb_sandbox_id(sb[i]), "pause", "{}") != 204;
    v[2][r] = failed ? 0 : restart(&F, &failed);
    t0 = bench_now();
    failed |= post(id, "connect", "{\"timeout\": 1800}") != 201 || run_true(sb[r % n]) != ASB_OK;
    v[3][r] = bench_now() - t0;
    for (int i = 0; i < n && !failed; i++)
      if (sb[i] != sb[r % n])
        failed |= post(asb_sandbox_id(sb[i]), "connect", "{\"timeout\": 1800}") != 201;
    /* the same engine pauses and resumes */
    failed |= post(id, "pause", "{}") != 204;
    t0 = bench_now();
    failed |= post(id, "connect", "{\"timeout\": 1800}") != 201 || run_true(sb[r % n]) != ASB_OK;
    v[4][r] = bench_now() - t0;
  }
  if (failed) {
    fprintf(stderr, "round failed: %s\n", asb_error_last()->message);
  } else {
    printf("== %d sandboxes, %d rounds ==\n", n, rounds);
    double z = bench_report("restart, no sandbox -> listening", v[5], rounds);
    double a = bench_report("restart, left running -> listening", v[0], rounds);
    bench_report("  then a command (adopted, running)", v[1], rounds);
    double b = bench_report("restart, left paused -> listening", v[2], rounds);
    double c = bench_report("  then connect + command (adopted, paused)", v[3], rounds);
    double d = bench_report("same engine: connect + command after pause", v[4], rounds);
    printf("%-44s %9.2fx\n", "restart running / none (p50)", a / z);
    printf("%-44s %9.2fx\n", "restart paused / running (p50)", b / a);
    printf("%-44s %9.2fx\n", "resume adopted / same engine (p50)", c / d);
  }
  for (int i = 0; sb && i < n; i++)
    if (sb[i]) {
      asb_sandbox_kill(sb[i], NULL);
      asb_sandbox_free(sb[i]);
    }
  free(sb);
  for (int k = 0; k < 6; k++) free(v[k]);
  asb_client_free(C);
  engine_fixture_stop(&F);
  engine_fixture_stop(&F0);
  curl_global_cleanup();
  return failed;
}
