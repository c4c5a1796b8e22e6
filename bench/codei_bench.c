/* The code interpreter from the C client (E2B debug mode, standalone
 * server), with the floors each figure stands on:
 *   - server start → port printed → /health 200 (python kernel ready) →
 *     first asb_code_run("1+1") completed
 *   - warm asb_code_run("1+1") p50/p99 in the default python context,
 *     next to GET /contexts through the same client (HTTP + client, no
 *     kernel) and the same cell on the bash and javascript drivers
 *   - chart extraction: the e2b/chart formatter's time per figure in the
 *     kernel next to the png's, and a plotting cell end to end with it on
 *     and off (alternating runs)
 * usage: codei_bench [iterations]
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>
#include <stdint.h>

#include "bench.h"

#ifndef CODEI_BIN
#define CODEI_BIN "code-interpreter"
#endif
#include "../tests/codei/codei_fixture.h"

static size_t discard(char *p, size_t s, size_t n, void *ud) {
  (void)p;
  (void)ud;
  return s * n;
}

static long health(CURL *c, const char *url) {
  char u[128];
  snprintf(u, sizeof u, "%s/health", url);
  curl_easy_setopt(c, CURLOPT_URL, u);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  long st = 0;
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
  return st;
}

static double run_ok(asb_sandbox *sb, const char *code, const char *lang, const char *want) {
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.language = lang;
  asb_execution *e = NULL;
  double t0 = bench_now();
  int rc = asb_code_run(&e, sb, code, &o);
  double dt = bench_now() - t0;
  const char *got = NULL;
  if (rc == ASB_OK && want) {
    got = asb_execution_text(e);
    if (!got && asb_execution_stdout_count(e)) got = asb_execution_stdout_get(e, 0);
  }
  if (rc != ASB_OK || (want && (!got || strncmp(got, want, strlen(want)) != 0))) {
    fprintf(stderr, "codei_bench: %s: %s (%s)\n", code, asb_status_name(rc),
            rc    ? asb_error_last()->message
            : got ? got
                  : "no output");
    exit(1);
  }
  asb_execution_free(e);
  return dt;
}

/* A java context (the JShell driver, a JVM) next to a python one: its start
 * (POST /contexts until ready), warm "1+1", and its kernel's RSS. */
static void java_costs(asb_sandbox *sb, double *v, int n) {
  const char *langs[] = {"python", "java"};
  double start[2] = {0, 0};
  long rss[2] = {0, 0};
  for (int l = 0; l < 2; l++) {
    int k = 5;
    for (int i = 0; i < k; i++) {
      asb_code_context *c = NULL;
      double s = bench_now();
      if (asb_code_context_create(&c, sb, langs[l], NULL, NULL) != ASB_OK) {
        printf("%s context: %s\n", langs[l], asb_error_last()->message);
        return;
      }
      v[i] = bench_now() - s;
      if (i == k - 1) { /* its kernel's memory after a few cells */
        asb_code_options o = ASB_CODE_OPTIONS_INIT;
        o.context_id = asb_code_context_id(c);
        asb_execution *e = NULL;
        const char *pid = l ? "ProcessHandle.current().pid()" : "import os; os.getpid()";
        for (int j = 0; j < 20; j++) {
          if (asb_code_run(&e, sb, "1+1", &o) == ASB_OK) asb_execution_free(e);
          e = NULL;
        }
        if (asb_code_run(&e, sb, pid, &o) == ASB_OK && asb_execution_text(e))
          rss[l] = bench_proc_kb(atoi(asb_execution_text(e)), "VmRSS");
        asb_execution_free(e);
      }
      asb_code_context_remove(sb, asb_code_context_id(c), NULL);
      asb_code_context_free(c);
    }
    char what[96];
    snprintf(what, sizeof what, "%s context start (POST /contexts until ready)", langs[l]);
    start[l] = bench_report(what, v, k);
  }
  run_ok(sb, "1+1", "java", "2");
  for (int i = 0; i < n / 3; i++) v[i] = run_ok(sb, "1+1", "java", "2");
  bench_report("run_code(\"1+1\") java driver (JShell), warm", v, n / 3);
  printf("java context: start %.2fx python's; kernel RSS %ld KiB (python %ld KiB, %.2fx)\n",
         start[1] / start[0], rss[1], rss[0], rss[0] ? (double)rss[1] / rss[0] : 0.0);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 300;
  if (n < 10) n = 10;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURL *c = curl_easy_init();

  /* ---- start-up ---- */
  codei_fixture f;
  double t0 = bench_now();
  if (codei_start(&f, NULL, NULL) != 0) {
    fprintf(stderr, "codei_bench: cannot start %s\n", CODEI_BIN);
    return 1;
  }
  double t_port = bench_now() - t0;
  asb_client *cl = NULL;
  asb_sandbox *sb = NULL;
  if (codei_connect(&f, NULL, &cl, &sb) != 0) return 1;
  /* the first run is sent at once: it waits in the server for the kernel */
  run_ok(sb, "1+1", NULL, "2");
  double t_first = bench_now() - t0;
  printf("start → port printed                          %9.1f ms\n", t_port * 1e3);
  printf("start → first run_code(\"1+1\") completed       %9.1f ms\n", t_first * 1e3);
  codei_stop(&f);
  asb_sandbox_free(sb);
  asb_client_free(cl);

  /* and again, noting when /health turns 200 (the kernel answered) */
  t0 = bench_now();
  if (codei_start(&f, NULL, NULL) != 0) return 1;
  while (health(c, f.url) != 200) usleep(2000);
  double t_health = bench_now() - t0;
  printf("start → /health 200 (python kernel ready)      %9.1f ms\n", t_health * 1e3);
  if (codei_connect(&f, NULL, &cl, &sb) != 0) return 1;

  /* ---- warm ---- */
  double *v = calloc((size_t)n, sizeof *v);
  for (int i = 0; i < 20; i++) run_ok(sb, "1+1", NULL, "2");
  for (int i = 0; i < n; i++) v[i] = run_ok(sb, "1+1", NULL, "2");
  double p50 = bench_report("run_code(\"1+1\") python, warm", v, n);
  for (int i = 0; i < n; i++) {
    asb_code_context_list *l = NULL;
    double s = bench_now();
    if (asb_code_contexts_list(&l, sb, NULL) != ASB_OK) return 1;
    v[i] = bench_now() - s;
    asb_code_context_list_free(l);
  }
  double floor = bench_report("GET /contexts (HTTP + client, no kernel)", v, n);
  run_ok(sb, "echo 2", "bash", "2");
  for (int i = 0; i < n; i++) v[i] = run_ok(sb, "echo $((1+1))", "bash", "2");
  bench_report("run_code(\"echo $((1+1))\") bash driver", v, n);
  run_ok(sb, "1+1", "javascript", "2");
  for (int i = 0; i < n; i++) v[i] = run_ok(sb, "1+1", "javascript", "2");
  bench_report("run_code(\"1+1\") javascript driver", v, n);
  java_costs(sb, v, n);
  printf(
      "python: %.0f us of the %.0f us p50 is the kernel (ipykernel's execute and its "
      "iopub/shell messages); the HTTP + client floor is %.0f us\n",
      p50 - floor, p50, floor);
  printf("server RSS %ld KiB\n", bench_proc_kb(f.pid, "VmRSS"));

  /* ---- chart extraction: what it adds per figure ---- */
  /* in the kernel: the e2b/chart formatter on one figure, next to its png */
  const char *micro =
      "import time, statistics, numpy as np, matplotlib.pyplot as plt\n"
      "_f = get_ipython().display_formatter.formatters\n"
      "def _p50(fn, k):\n"
      "    t = []\n"
      "    for _ in range(k):\n"
      "        s = time.perf_counter(); fn(); t.append(time.perf_counter() - s)\n"
      "    return statistics.median(t) * 1e6\n"
      "_out = []\n"
      "for _name, _draw in (('line, 2 x 100 points', lambda: (plt.plot(np.arange(100), "
      "np.sin(np.arange(100))),"
      " plt.plot(np.arange(100), np.cos(np.arange(100))))), ('bar, 10 bars', lambda: "
      "plt.bar([str(i) for i in range(10)], range(10)))):\n"
      "    _fig = plt.figure(); _draw()\n"
      "    _out.append('%s: chart %.0f us, png %.0f us' % (_name, _p50(lambda: "
      "_f['e2b/chart'](_fig), 200),"
      " _p50(lambda: _f['image/png'](_fig), 20)))\n"
      "    plt.close(_fig)\n"
      "print('; '.join(_out))";
  asb_execution *me = NULL;
  if (asb_code_run(&me, sb, micro, NULL) == ASB_OK && asb_execution_stdout_count(me))
    printf("chart extraction in the kernel, p50 per figure: %s", asb_execution_stdout_get(me, 0));
  asb_execution_free(me);
  /* end to end: the same plotting cell with the formatter on and off, alternating */
  const char *plot = "plt.plot(np.arange(100), np.sin(np.arange(100)))\nplt.title('t')\nplt.show()";
  const char *on = "_f['e2b/chart'].enabled = True", *off = "_f['e2b/chart'].enabled = False";
  int m = n / 5 < 20 ? 20 : n / 5;
  double *von = calloc((size_t)m, sizeof *von), *voff = calloc((size_t)m, sizeof *voff);
  run_ok(sb, plot, NULL, NULL);
  for (int i = 0; i < m; i++) {
    run_ok(sb, on, NULL, NULL);
    von[i] = run_ok(sb, plot, NULL, NULL);
    run_ok(sb, off, NULL, NULL);
    voff[i] = run_ok(sb, plot, NULL, NULL);
  }
  run_ok(sb, on, NULL, NULL);
  double pon = bench_report("run_code(plot + show) with the chart", von, m);
  double poff = bench_report("run_code(plot + show) png only", voff, m);
  printf("chart extraction adds %.2f ms per figure end to end (%.1f%% of %.1f ms)\n",
         (pon - poff) / 1e3, (pon - poff) / poff * 100, poff / 1e3);
  free(von);
  free(voff);
  free(v);
  asb_sandbox_free(sb);
  asb_client_free(cl);
  codei_stop(&f);
  curl_easy_cleanup(c);
  curl_global_cleanup();
  return 0;
}
