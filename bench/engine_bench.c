/* The local engine through the C client, with bwrap and runc starting the
 *   same root and running `true` in the same run as baselines:
 *   - create → first command result, p50/p99, from a warm pool (template
 *     bench-pool, pool: {size: POOL}, refilling in the background) and from
 *     an empty pool (base: every create boots), interleaved round by round
 *     with `bwrap --unshare-all ... true` so the three share the machine's
 *     load; kill latency
 *   - bursts of POOL concurrent creates, from a warm pool of POOL and from an
 *     empty pool: p50/p99 of each create, creates/s
 *   - host memory per idle pooled sandbox (MemAvailable delta over the fill,
 *     and what their cgroups are charged: GET /templates' pool figures)
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
#include "bench_signals.h"

static engine_fixture F;
static asb_client *C;

#define POOL 200

static int create_from(const char *tmpl, asb_sandbox **sb) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = tmpl;
  o.timeout_ms = 600000;
  int rc = asb_sandbox_create(sb, C, &o);
  if (rc) fprintf(stderr, "create: %s\n", asb_error_last()->message);
  return rc;
}

static int create(asb_sandbox **sb) {
  return create_from(NULL, sb);
}

static int run_true(asb_sandbox *sb) {
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, "exec /bin/true", NULL);
  asb_command_result_free(r);
  return rc;
}

/* A number of bench-pool's "pool" object in GET /templates, or -1. */
static double pool_num(const char *field) {
  asb_template *t = NULL;
  if (asb_templates_get(&t, C, "bench-pool", NULL) != ASB_OK) return -1;
  const char *j = asb_template_json(t), *p = strstr(j, "\"pool\":");
  char key[64];
  snprintf(key, sizeof key, "\"%s\":", field);
  const char *q = p ? strstr(p, key) : NULL;
  double v = q ? atof(q + strlen(key)) : -1;
  asb_template_free(t);
  return v;
}

/* Waits (at most 10 min) until bench-pool's pool holds want. */
static int pool_wait(int want) {
  for (double end = bench_now() + 600; bench_now() < end; usleep(50000))
    if (pool_num("ready") >= want) return 0;
  fprintf(stderr, "the pool did not fill to %d (ready %.0f)\n", want, pool_num("ready"));
  return -1;
}

typedef struct burster {
  pthread_barrier_t *go;
  const char *tmpl;
  asb_sandbox *sb;
  double took;
  int rc;
} burster;

static void *burst_one(void *arg) {
  burster *b = arg;
  pthread_barrier_wait(b->go);
  double t = bench_now();
  b->rc = create_from(b->tmpl, &b->sb);
  b->took = bench_now() - t;
  return NULL;
}

/* n concurrent creates; prints p50/p99 and creates/s; kills them. */
static int burst(const char *name, const char *tmpl, int n) {
  burster *b = calloc((size_t)n, sizeof *b);
  pthread_t *th = calloc((size_t)n, sizeof *th);
  double *v = calloc((size_t)n, sizeof *v);
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, (unsigned)n + 1);
  for (int i = 0; i < n; i++) {
    b[i].go = &go;
    b[i].tmpl = tmpl;
    pthread_create(&th[i], NULL, burst_one, &b[i]);
  }
  pthread_barrier_wait(&go);
  double t = bench_now();
  int failed = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    v[i] = b[i].took;
    failed += b[i].rc != ASB_OK;
  }
  double all = bench_now() - t;
  bench_report(name, v, n);
  printf("%-44s %9.0f creates/s (%d in %.0f ms, %d failed)\n", "", n / all, n, all * 1e3, failed);
  for (int i = 0; i < n; i++)
    if (b[i].sb) {
      asb_sandbox_kill(b[i].sb, NULL);
      asb_sandbox_free(b[i].sb);
    }
  pthread_barrier_destroy(&go);
  free(b);
  free(th);
  free(v);
  return failed ? -1 : 0;
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

/* bench-pool: base plus an empty build step, with a warm pool of POOL
 * (template.yaml's pool section). Its sandboxes boot like base's (one more,
 * empty, layer), so "warm pool" (bench-pool) and "empty pool" (base) differ
 * only in where the boot happened. */
static int build_pooled(void) {
  char dir[128], path[200];
  snprintf(dir, sizeof dir, "/tmp/asb-bench-pool-%d", (int)getpid());
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/template.yaml", dir);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "name: bench-pool\nsteps: [\"true\"]\npool:\n  size: %d\n", POOL);
  fclose(f);
  asb_template *t = NULL;
  int rc = asb_templates_build(&t, C, dir, NULL);
  if (rc) fprintf(stderr, "build bench-pool: %s\n", asb_error_last()->message);
  asb_template_free(t);
  snprintf(path, sizeof path, "rm -rf %s", dir);
  if (system(path) != 0) fprintf(stderr, "cannot remove %s\n", dir);
  return rc;
}

int main(int argc, char **argv) {
  bench_exit_on_signals(); /* the engines stopped, their state removed */
  int iters = argc > 1 ? atoi(argv[1]) : 200;
  static const char *const args[] = {"--pool-min-available", "0", NULL};
  if (engine_fixture_start_args(&F, "bench", args) != 0 ||
      engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  double *v = calloc((size_t)iters, sizeof *v), *k = calloc((size_t)iters, sizeof *k);
  double *wp = calloc((size_t)iters, sizeof *wp), *cr = calloc((size_t)iters, sizeof *cr);
  double *fc = calloc((size_t)iters, sizeof *fc), *bw = calloc((size_t)iters, sizeof *bw);
  /* warm-up: templates prepared, disk-image pool filled, caches hot */
  for (int i = 0; i < 10; i++) {
    asb_sandbox *sb;
    if (create(&sb)) return 1;
    run_true(sb);
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
  }
  char rootfs[512], bwrap[2048];
  snprintf(rootfs, sizeof rootfs, "%s/templates/base/rootfs", F.state);
  snprintf(bwrap, sizeof bwrap,
           "bwrap --unshare-all --die-with-parent --bind %s / --ro-bind /usr /usr "
           "--proc /proc --dev /dev --tmpfs /tmp /bin/true",
           rootfs);
  int have_bwrap = time_cmd(bwrap) >= 0;
  long pm0 = bench_mem_available_kb();
  double t = bench_now();
  if (build_pooled() || pool_wait(POOL)) return 1;
  double fill = bench_now() - t;
  sleep(2); /* settle before reading MemAvailable */
  long pm1 = bench_mem_available_kb();
  printf("== warm pool: template bench-pool, pool: {size: %d} ==\n", POOL);
  printf("%-44s %9.1f s  (build + %d prepared in the background)\n", "built and pool filled", fill,
         POOL);
  printf("%-44s %9.2f MiB per pooled sandbox\n", "host memory (MemAvailable delta)",
         (double)(pm0 - pm1) / 1024.0 / POOL);
  printf("%-44s %9.2f MiB per pooled sandbox\n", "charged to their cgroups (GET /templates)",
         pool_num("memoryBytesPerSandbox") / 1048576.0);
  printf("== create -> first command, interleaved (%d rounds: warm, empty, bwrap) ==\n", iters);
  for (int i = 0; i < iters; i++) {
    asb_sandbox *sb;
    double t0 = bench_now();
    if (create_from("bench-pool", &sb)) return 1;
    double t1 = bench_now();
    if (run_true(sb)) return 1;
    wp[i] = bench_now() - t0;
    cr[i] = t1 - t0;
    fc[i] = wp[i] - cr[i];
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
    t0 = bench_now();
    if (create(&sb) || run_true(sb)) return 1;
    v[i] = bench_now() - t0;
    t0 = bench_now();
    asb_sandbox_kill(sb, NULL);
    k[i] = bench_now() - t0;
    asb_sandbox_free(sb);
    if (have_bwrap) bw[i] = time_cmd(bwrap);
    usleep(2000); /* let the disk-image pool refill between runs */
  }
  printf("(bench-pool: claims %.0f, misses %.0f)\n", pool_num("claims"), pool_num("misses"));
  double warm_p50 = bench_report("create -> first command (warm pool)", wp, iters);
  bench_report("  of which create (the claim)", cr, iters);
  bench_report("  of which the first command", fc, iters);
  double empty_p50 = bench_report("create -> first command (empty pool)", v, iters);
  bench_report("kill", k, iters);
  if (have_bwrap) {
    double b50 = bench_report("bwrap --unshare-all ... true", bw, iters);
    printf("%-44s %9.2f (warm pool) / %.2f (empty pool)\n", "ratio of p50s to bwrap's",
           warm_p50 / b50, empty_p50 / b50);
  } else {
    printf("bwrap: not available or failed\n");
  }
  printf("== bursts of %d concurrent creates ==\n", POOL);
  if (pool_wait(POOL)) return 1;
  double c0 = pool_num("claims");
  burst("warm pool of 200", "bench-pool", POOL);
  printf("(%.0f of the burst claimed from the pool)\n", pool_num("claims") - c0);
  burst("empty pool", NULL, POOL);
  if (asb_templates_delete(C, "bench-pool", NULL) != ASB_OK) /* drains the pool */
    fprintf(stderr, "delete bench-pool: %s\n", asb_error_last()->message);
  free(wp);
  free(cr);
  free(fc);
  free(bw);

  int n = 100;
  asb_sandbox **many = calloc((size_t)n, sizeof *many);
  long mem0 = bench_mem_available_kb();
  t = bench_now();
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

  printf("== baseline: runc on the same root ==\n");
  char cmd[4096];
  int nb = iters < 100 ? iters : 100;
  int ok = 1;
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
