/* The local engine through the C client, with bwrap and runc starting the
 * same root and running `true` in the same run as baselines:
 *   - create → first command result, p50/p99; kill latency
 *   - sequential creates per second
 *   - 100 sandboxes alive at once: time to create them all, host memory per
 *     idle sandbox (MemAvailable delta)
 *   - commands per second across 20 sandboxes
 * usage: engine_bench [iterations]   (as root)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../tests/support/engine_fixture.h"
#include "bench.h"

static engine_fixture F;
static asb_client *C;

static int create(asb_sandbox **sb) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 600000;
  int rc = asb_sandbox_create(sb, C, &o);
  if (rc) fprintf(stderr, "create: %s\n", asb_error_last()->message);
  return rc;
}

static int run_true(asb_sandbox *sb) {
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, "exec /bin/true", NULL);
  asb_command_result_free(r);
  return rc;
}

static int sh(const char *cmd) {
  return system(cmd);
}

static double time_cmd(const char *cmd) {
  double t = bench_now();
  if (sh(cmd) != 0) return -1;
  return bench_now() - t;
}

typedef struct worker {
  asb_sandbox *sb;
  double until;
  long done;
} worker;

static void *hammer(void *arg) {
  worker *w = arg;
  while (bench_now() < w->until)
    if (run_true(w->sb) == ASB_OK) w->done++;
  return NULL;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 200;
  if (engine_fixture_start(&F, "bench") != 0 || engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  double *v = calloc((size_t)iters, sizeof *v), *k = calloc((size_t)iters, sizeof *k);
  /* warm-up: templates prepared, disk-image pool filled, caches hot */
  for (int i = 0; i < 10; i++) {
    asb_sandbox *sb;
    if (create(&sb)) return 1;
    run_true(sb);
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
  }
  printf("== sandbox lifecycle (%d iterations) ==\n", iters);
  for (int i = 0; i < iters; i++) {
    asb_sandbox *sb;
    double t = bench_now();
    if (create(&sb) || run_true(sb)) return 1;
    v[i] = bench_now() - t;
    t = bench_now();
    asb_sandbox_kill(sb, NULL);
    k[i] = bench_now() - t;
    asb_sandbox_free(sb);
    usleep(2000); /* let the disk-image pool refill between runs */
  }
  bench_report("create -> first command result", v, iters);
  bench_report("kill", k, iters);

  int n = 100;
  asb_sandbox **many = calloc((size_t)n, sizeof *many);
  long mem0 = bench_mem_available_kb();
  double t = bench_now();
  for (int i = 0; i < n; i++)
    if (create(&many[i])) return 1;
  double all = bench_now() - t;
  printf("%-44s %9.1f ms  (%.0f creates/s sequential)\n", "100 sandboxes alive: create all",
         all * 1e3, n / all);
  sleep(2);
  long mem1 = bench_mem_available_kb();
  printf("%-44s %9.2f MiB per idle sandbox\n", "host memory (MemAvailable delta)",
         (double)(mem0 - mem1) / 1024.0 / n);

  printf("== throughput ==\n");
  int nw = 20;
  worker w[20];
  pthread_t th[20];
  double until = bench_now() + 5.0;
  for (int i = 0; i < nw; i++) {
    w[i].sb = many[i];
    w[i].until = until;
    w[i].done = 0;
    pthread_create(&th[i], NULL, hammer, &w[i]);
  }
  long total = 0;
  for (int i = 0; i < nw; i++) {
    pthread_join(th[i], NULL);
    total += w[i].done;
  }
  printf("%-44s %9.0f commands/s\n", "commands across 20 sandboxes (5 s)", total / 5.0);
  t = bench_now();
  for (int i = 0; i < n; i++) {
    asb_sandbox_kill(many[i], NULL);
    asb_sandbox_free(many[i]);
  }
  printf("%-44s %9.1f ms\n", "kill 100 sandboxes", (bench_now() - t) * 1e3);

  printf("== baselines: the same root running `true` ==\n");
  char rootfs[512], cmd[4096];
  snprintf(rootfs, sizeof rootfs, "%s/templates/base/rootfs", F.state);
  snprintf(cmd, sizeof cmd,
           "bwrap --unshare-all --die-with-parent --bind %s / --ro-bind /usr /usr "
           "--proc /proc --dev /dev --tmpfs /tmp /bin/true",
           rootfs);
  int nb = iters < 100 ? iters : 100;
  int ok = 1;
  for (int i = 0; i < nb && ok; i++)
    if ((v[i] = time_cmd(cmd)) < 0) ok = 0;
  if (ok)
    bench_report("bwrap --unshare-all ... true", v, nb);
  else
    printf("bwrap: not available or failed\n");
  /* runc: an OCI bundle over a copy of the same root, /usr bound in. */
  const char *bundle = "/tmp/asb-bench-runc";
  snprintf(cmd, sizeof cmd,
           "rm -rf %s && mkdir -p %s/rootfs && cp -a %s/. %s/rootfs/ && cd %s && "
           "runc spec --rootless >/dev/null 2>&1; runc spec >/dev/null 2>&1; "
           "python3 - <<'EOF'\nimport json\np='%s/config.json'\nc=json.load(open(p))\n"
           "c['process']['terminal']=False\nc['process']['args']=['/bin/true']\n"
           "c['root']={'path':'rootfs','readonly':False}\n"
           "c['mounts'].append({'destination':'/usr','type':'bind','source':'/usr',"
           "'options':['rbind','ro']})\njson.dump(c,open(p,'w'))\nEOF",
           bundle, bundle, rootfs, bundle, bundle, bundle);
  ok = sh(cmd) == 0;
  for (int i = 0; i < nb && ok; i++) {
    snprintf(cmd, sizeof cmd, "cd %s && runc run --bundle %s asb-bench-%d >/dev/null 2>&1", bundle,
             bundle, i);
    if ((v[i] = time_cmd(cmd)) < 0) ok = 0;
  }
  if (ok)
    bench_report("runc run (same root) true", v, nb);
  else
    printf("runc: not available or failed\n");
  snprintf(cmd, sizeof cmd, "rm -rf %s", bundle);
  sh(cmd);
  asb_client_free(C);
  engine_fixture_stop(&F);
  free(v);
  free(k);
  return 0;
}
