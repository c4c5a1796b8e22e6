/* Pause and resume latency of the local engine vs the sandbox's resident
 * memory, both pause modes side by side in one run, round by round:
 *   - memory (freeze): POST /pause, then POST /connect → first command
 *   - filesystem ({"memory": false}: processes killed, files kept): POST
 *     /pause, then POST /connect (a boot) → first command
 * The memory is a process holding N MiB it has written (python3
 * bytearray), started again before each filesystem-mode round (its pause
 * ends it). usage: pause_bench [iterations]   (as root)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>

#include "../tests/support/engine_fixture.h"
#include "bench.h"

static engine_fixture F;
static asb_client *C;

static long post(const char *id, const char *action, const char *json) {
  CURL *h = curl_easy_init();
  char url[256], k[200];
  snprintf(url, sizeof url, "%s/sandboxes/%s/%s", F.url, id, action);
  snprintf(k, sizeof k, "X-API-Key: %s", F.key);
  struct curl_slist *hl = curl_slist_append(NULL, k);
  hl = curl_slist_append(hl, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
  FILE *null = fopen("/dev/null", "w");
  curl_easy_setopt(h, CURLOPT_WRITEDATA, null);
  long st = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
  fclose(null);
  curl_slist_free_all(hl);
  curl_easy_cleanup(h);
  return st;
}

static int run_true(asb_sandbox *sb) {
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, "exec /bin/true", NULL);
  asb_command_result_free(r);
  return rc;
}

/* A process holding mib MiB, written; returns once it is. */
static int hold(asb_sandbox *sb, int mib) {
  if (!mib) return 0;
  char cmd[256];
  snprintf(cmd, sizeof cmd,
           "rm -f /tmp/held; python3 -c \"import time; b=bytearray(%d<<20); "
           "open('/tmp/held','w').write('1'); time.sleep(100000)\"",
           mib);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.timeout_ms = -1;
  asb_process *p = NULL;
  if (asb_commands_start(&p, sb, cmd, &o) != ASB_OK) return -1;
  asb_process_free(p);
  for (double end = bench_now() + 120; bench_now() < end; usleep(20000)) {
    char *d = NULL;
    size_t n = 0;
    int rc = asb_files_read(&d, &n, sb, "/tmp/held", NULL);
    asb_free(d);
    if (rc == ASB_OK && n == 1) return 0;
  }
  return -1;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 10;
  if (iters < 1) iters = 1;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (engine_fixture_start(&F, "bench-pause") != 0 || engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    engine_fixture_stop(&F);
    return 1;
  }
  const int sizes[] = {0, 64, 256};
  double *v[4];
  for (int k = 0; k < 4; k++) v[k] = calloc((size_t)iters, sizeof(double));
  int failed = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes && !failed; si++) {
    int mib = sizes[si];
    asb_sandbox *sb = NULL;
    asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
    o.timeout_ms = 1800000;
    if (asb_sandbox_create(&sb, C, &o) != ASB_OK) {
      fprintf(stderr, "create: %s\n", asb_error_last()->message);
      failed = 1;
      break;
    }
    const char *id = asb_sandbox_id(sb);
    if (hold(sb, mib)) failed = 1;
    for (int i = 0; i < iters && !failed; i++) {
      double t0 = bench_now();
      failed |= post(id, "pause", "{}") != 204;
      double t1 = bench_now();
      failed |= post(id, "connect", "{\"timeout\": 1800}") != 201 || run_true(sb) != ASB_OK;
      double t2 = bench_now();
      v[0][i] = t1 - t0;
      v[1][i] = t2 - t1;
      t0 = bench_now();
      failed |= post(id, "pause", "{\"memory\": false}") != 204;
      t1 = bench_now();
      failed |= post(id, "connect", "{\"timeout\": 1800}") != 201 || run_true(sb) != ASB_OK;
      t2 = bench_now();
      v[2][i] = t1 - t0;
      v[3][i] = t2 - t1;
      if (!failed) failed |= hold(sb, mib) != 0;
    }
    if (failed) {
      fprintf(stderr, "round failed: %s\n", asb_error_last()->message);
      asb_sandbox_kill(sb, NULL);
      asb_sandbox_free(sb);
      break;
    }
    printf("== %d MiB resident ==\n", mib);
    char name[64];
    snprintf(name, sizeof name, "pause, memory (freeze)");
    double pm = bench_report(name, v[0], iters);
    double rm = bench_report("resume, memory -> first command", v[1], iters);
    double pf = bench_report("pause, filesystem (stop)", v[2], iters);
    double rf = bench_report("resume, filesystem (boot) -> first command", v[3], iters);
    printf("%-44s %9.1fx pause   %9.1fx resume\n", "filesystem / memory (p50)", pf / pm, rf / rm);
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
  }
  for (int k = 0; k < 4; k++) free(v[k]);
  asb_client_free(C);
  engine_fixture_stop(&F);
  curl_global_cleanup();
  return failed;
}
