/* Pause and resume latency of the local engine vs the sandbox's resident
 * memory (64 MiB, 256 MiB, 1 GiB of random bytes a process wrote), the
 * pause modes side by side in one run, round by round:
 *   - memory, freeze (an engine without --pause-swap): POST /pause, then
 *     POST /connect -> first command, then the process writing to every
 *     page it holds again
 *   - memory, swap-out (a second engine with --pause-swap): the same three;
 *     the pause returns once the memory is out, the touch faults it back
 *   - filesystem ({"memory": false}, first engine): POST /pause, then POST
 *     /connect (a boot) -> first command; the holder starts again after it
 *   - memory, checkpoint (a third engine with --pause-criu, when a criu is
 *     found: $ASB_CRIU, else /var/cache/agent-sandbox/criu/bin/criu): the
 *     pause returns once the dump is on the disk (the processes gone), the
 *     connect once they are restored; the touch then writes every page
 * The engines run at once, each with its own template of 1536 MiB. Also
 * printed: the swap-out pause per GiB and the resumes against E2B's
 * published ~4 s per GiB pause and ~1 s resume.
 * usage: [ASB_CRIU=PATH] pause_bench [iterations] [--prefetch]   (as root; default 5;
 *        --prefetch: the swap engine runs with --pause-swap-prefetch)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>
#include <sys/stat.h>

#include "../tests/support/engine_http.h"
#include "bench.h"
#include "bench_signals.h"

static engine_fixture FA, FB, FC; /* A: no swap; B: --pause-swap; C: --pause-criu */
static asb_client *CA, *CB, *CC;
static const char *k_criu_args[] = {"--pause-criu", "--criu", NULL, NULL};
static const char *k_swap_args[] = {"--pause-swap", "1600M", NULL, NULL};

/* POST /sandboxes/{id}/{action}: the status (a swap-out of 1 GiB may take
 * minutes). */
static long post(const engine_fixture *f, const char *id, const char *action, const char *json) {
  return engine_sandbox_post(f, id, action, json, 600);
}

static int run_true(asb_sandbox *sb) {
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, "exec /bin/true", NULL);
  asb_command_result_free(r);
  return rc;
}

/* Waits until the sandbox's file exists. */
static int wait_file(asb_sandbox *sb, const char *path) {
  for (double end = bench_now() + 300; bench_now() < end; usleep(5000)) {
    char *d = NULL;
    size_t n = 0;
    int rc = asb_files_read(&d, &n, sb, path, NULL);
    asb_free(d);
    if (rc == ASB_OK) return 0;
  }
  return -1;
}

/* A process holding mib MiB of random bytes; returns once they are
 * written (a marker of its own: the files of an earlier holder outlive a
 * filesystem pause, and one found before the rm would end the wait early).
 * Each /tmp/go<k> makes it write one byte of every page it holds (new
 * random ones: a page read back from swap and left clean would keep its
 * copy there, and the next swap-out would cost nothing) and then write
 * /tmp/done<k>. */
static int hold(asb_sandbox *sb, int mib) {
  static int n;
  char cmd[700], held[32];
  snprintf(held, sizeof held, "/tmp/held%d", ++n);
  snprintf(cmd, sizeof cmd,
           "rm -f /tmp/held* /tmp/go* /tmp/done*; python3 -c \"import os, time\n"
           "n = %d << 20; b = bytearray(n)\n"
           "for i in range(0, n, 1 << 20): b[i:i + (1 << 20)] = os.urandom(1 << 20)\n"
           "open('%s', 'w').write('1')\n"
           "k = 0\n"
           "while True:\n"
           "  k += 1\n"
           "  while not os.path.exists('/tmp/go%%d' %% k): time.sleep(0.002)\n"
           "  b[::4096] = os.urandom(n >> 12)\n"
           "  open('/tmp/done%%d' %% k, 'w').write('1')\n\"",
           mib, held);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.timeout_ms = -1;
  asb_process *p = NULL;
  if (asb_commands_start(&p, sb, cmd, &o) != ASB_OK) return -1;
  asb_process_free(p);
  return wait_file(sb, held);
}

/* Seconds until the holder has written to all its pages once more. */
static double touch_all(asb_sandbox *sb, int k) {
  char go[32], done[32];
  snprintf(go, sizeof go, "/tmp/go%d", k);
  snprintf(done, sizeof done, "/tmp/done%d", k);
  double t0 = bench_now();
  if (asb_files_write(NULL, sb, go, "", 0, NULL) != ASB_OK || wait_file(sb, done)) return -1;
  return bench_now() - t0;
}

/* A template of 1536 MiB (the base's 512 do not hold 1 GiB). */
static int big_template(asb_client *c) {
  char dir[] = "/tmp/asb-pause-bench-XXXXXX", path[64];
  if (!mkdtemp(dir)) return -1;
  snprintf(path, sizeof path, "%s/template.yaml", dir);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(
      "name: pause-bench\nbase: base\nresources: {cpu: 2, memory: 1536Mi, disk: 1024Mi}\n"
      "steps:\n  - run: \"true\"\n",
      f);
  fclose(f);
  asb_template *t = NULL;
  int rc = asb_templates_build(&t, c, dir, NULL);
  asb_template_free(t);
  unlink(path);
  rmdir(dir);
  if (rc != ASB_OK) fprintf(stderr, "template: %s\n", asb_error_last()->message);
  return rc == ASB_OK ? 0 : -1;
}

static asb_sandbox *make(asb_client *c) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = "pause-bench";
  o.timeout_ms = 3600000;
  if (asb_sandbox_create(&sb, c, &o) != ASB_OK) {
    fprintf(stderr, "create: %s\n", asb_error_last()->message);
    return NULL;
  }
  return sb;
}

/* Bytes of swap the sandbox's cgroup holds (cgroup v1 memory.stat
 * total_swap or v2 memory.swap.current; -1 if unreadable): the engine
 * without --pause-swap does not stop its sandboxes from swapping into the
 * other engine's file when they reach their memory limit. */
static long long sandbox_swap(const engine_fixture *f, const char *id) {
  char dir[1200], path[1400], line[512];
  int isv1 = engine_fixture_memcg(f, id, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/%s", dir, isv1 ? "memory.stat" : "memory.swap.current");
  FILE *m = fopen(path, "r");
  long long v = -1;
  while (m && fgets(line, sizeof line, m)) {
    if (!isv1)
      v = atoll(line);
    else if (!strncmp(line, "total_swap ", 11))
      v = atoll(line + 11);
  }
  if (m) fclose(m);
  return v;
}

enum { P_FRZ, R_FRZ, T_FRZ, P_SWP, R_SWP, T_SWP, P_FS, R_FS, P_CR, R_CR, T_CR, NV };

int main(int argc, char **argv) {
  bench_exit_on_signals(); /* the engines stopped, their state removed */
  int iters = argc > 1 ? atoi(argv[1]) : 5;
  if (iters < 1) iters = 1;
  if (argc > 2 && !strcmp(argv[2], "--prefetch")) k_swap_args[2] = "--pause-swap-prefetch";
  const char *criu = getenv("ASB_CRIU");
  if (!criu || !*criu) criu = "/var/cache/agent-sandbox/criu/bin/criu";
  int with_criu = access(criu, X_OK) == 0;
  if (!with_criu) printf("(no criu at %s: no checkpoint column; set ASB_CRIU)\n", criu);
  k_criu_args[2] = criu;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (with_criu && (engine_fixture_start_args(&FC, "bench-pcriu", k_criu_args) != 0 ||
                    engine_fixture_client(&FC, &CC) != ASB_OK || big_template(CC))) {
    fprintf(stderr, "cannot start the --pause-criu engine\n");
    engine_fixture_stop(&FC);
    return 1;
  }
  if (engine_fixture_start(&FA, "bench-pause") != 0 || engine_fixture_client(&FA, &CA) != ASB_OK ||
      engine_fixture_start_args(&FB, "bench-pswap", k_swap_args) != 0 ||
      engine_fixture_client(&FB, &CB) != ASB_OK || big_template(CA) || big_template(CB)) {
    fprintf(stderr, "cannot start the engines\n");
    engine_fixture_stop(&FA);
    engine_fixture_stop(&FB);
    engine_fixture_stop(&FC);
    return 1;
  }
  const int sizes[] = {64, 256, 1024};
  double *v[NV];
  for (int k = 0; k < NV; k++) v[k] = calloc((size_t)iters, sizeof(double));
  int failed = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes && !failed; si++) {
    int mib = sizes[si];
    asb_sandbox *a = make(CA), *b = a ? make(CB) : NULL, *c = with_criu && b ? make(CC) : NULL;
    if (!a || !b || (with_criu && !c) || hold(a, mib) || hold(b, mib) || (c && hold(c, mib))) {
      fprintf(stderr, "setup: %s\n", asb_error_last()->message);
      failed = 1;
    }
    const char *ida = a ? asb_sandbox_id(a) : "", *idb = b ? asb_sandbox_id(b) : "";
    const char *idc = c ? asb_sandbox_id(c) : "";
    int ka = 0, kb = 0, kc = 0;
    for (int i = 0; i < iters && !failed; i++) {
      double t0 = bench_now();
      failed |= post(&FA, ida, "pause", "{}") != 204;
      double t1 = bench_now();
      failed |= post(&FA, ida, "connect", "{\"timeout\": 3600}") != 201 || run_true(a) != ASB_OK;
      v[P_FRZ][i] = t1 - t0;
      v[R_FRZ][i] = bench_now() - t1;
      v[T_FRZ][i] = touch_all(a, ++ka);
      t0 = bench_now();
      failed |= post(&FB, idb, "pause", "{}") != 204;
      t1 = bench_now();
      failed |= post(&FB, idb, "connect", "{\"timeout\": 3600}") != 201 || run_true(b) != ASB_OK;
      v[P_SWP][i] = t1 - t0;
      v[R_SWP][i] = bench_now() - t1;
      v[T_SWP][i] = touch_all(b, ++kb);
      t0 = bench_now();
      failed |= post(&FA, ida, "pause", "{\"memory\": false}") != 204;
      t1 = bench_now();
      failed |= post(&FA, ida, "connect", "{\"timeout\": 3600}") != 201 || run_true(a) != ASB_OK;
      v[P_FS][i] = t1 - t0;
      v[R_FS][i] = bench_now() - t1;
      ka = 0;
      if (!failed) failed |= hold(a, mib) != 0;
      if (c && !failed) {
        t0 = bench_now();
        failed |= post(&FC, idc, "pause", "{}") != 204;
        t1 = bench_now();
        failed |= post(&FC, idc, "connect", "{\"timeout\": 3600}") != 201 || run_true(c) != ASB_OK;
        v[P_CR][i] = t1 - t0;
        v[R_CR][i] = bench_now() - t1;
        v[T_CR][i] = touch_all(c, ++kc);
      }
      for (int k = 0; k < NV; k++) failed |= v[k][i] < 0;
    }
    if (!failed) {
      printf("== %d MiB resident ==\n", mib);
      printf("(the freeze engine's sandbox holds %lld MiB of swap)\n",
             sandbox_swap(&FA, ida) >> 20);
      double pf = bench_report("pause, memory (freeze)", v[P_FRZ], iters);
      double rf = bench_report("resume, memory (freeze) -> first command", v[R_FRZ], iters);
      double tf = bench_report("then write every page, freeze", v[T_FRZ], iters);
      double ps = bench_report("pause, memory (swap-out)", v[P_SWP], iters);
      double rs = bench_report("resume, memory (swap) -> first command", v[R_SWP], iters);
      double ts = bench_report("then write every page, swap (faults in)", v[T_SWP], iters);
      double pfs = bench_report("pause, filesystem (stop)", v[P_FS], iters);
      double rfs = bench_report("resume, filesystem (boot) -> first command", v[R_FS], iters);
      printf("%-44s %9.1fx pause   %9.1fx resume   %9.1fx write\n", "swap-out / freeze (p50)",
             ps / pf, rs / rf, ts / tf);
      printf("%-44s %9.2f s/GiB (E2B ~4 s/GiB: %.2fx)\n", "swap-out pause per GiB (p50)",
             ps / 1e6 * 1024.0 / mib, ps / 1e6 * 1024.0 / mib / 4.0);
      printf("%-44s %9.3f s (E2B ~1 s: %.3fx); with the writes %.3f s\n",
             "swap resume -> first command (p50)", rs / 1e6, rs / 1e6, (rs + ts) / 1e6);
      printf("%-44s %9.1fx pause   %9.1fx resume\n", "filesystem / freeze (p50)", pfs / pf,
             rfs / rf);
      if (c) {
        double pc = bench_report("pause, memory (checkpoint, CRIU)", v[P_CR], iters);
        double rc = bench_report("resume, memory (restore) -> first command", v[R_CR], iters);
        double tc = bench_report("then write every page, restored", v[T_CR], iters);
        printf("%-44s %9.1fx pause   %9.1fx resume   %9.1fx write\n", "checkpoint / freeze (p50)",
               pc / pf, rc / rf, tc / tf);
        printf("%-44s %9.1fx pause   %9.1fx resume\n", "checkpoint / swap-out (p50)", pc / ps,
               rc / rs);
        printf("%-44s %9.2f s/GiB (E2B ~4 s/GiB: %.2fx)\n", "checkpoint pause per GiB (p50)",
               pc / 1e6 * 1024.0 / mib, pc / 1e6 * 1024.0 / mib / 4.0);
        printf("%-44s %9.3f s (E2B ~1 s: %.3fx)\n", "restore -> first command (p50)", rc / 1e6,
               rc / 1e6);
      }
    } else {
      fprintf(stderr, "round failed: %s\n", asb_error_last()->message);
    }
    if (a) asb_sandbox_kill(a, NULL);
    if (b) asb_sandbox_kill(b, NULL);
    if (c) asb_sandbox_kill(c, NULL);
    asb_sandbox_free(a);
    asb_sandbox_free(b);
    asb_sandbox_free(c);
  }
  for (int k = 0; k < NV; k++) free(v[k]);
  asb_client_free(CA);
  asb_client_free(CB);
  asb_client_free(CC);
  engine_fixture_stop(&FA);
  engine_fixture_stop(&FB);
  engine_fixture_stop(&FC);
  curl_global_cleanup();
  return failed;
}
