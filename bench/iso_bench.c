/* iso_bench: latency and density of the engine's isolation runtime.
 *
 *   iso_bench [-n N] [-t base|busybox] [-p POOL] [-c BURST] [-f]
 *
 * Measures (p50/p99 over N runs): create -> agent answers on its unix
 * socket; create -> first command result (exec `true`, waited); exec `true`
 * in a running sandbox; kill+destroy; sequential create/s and create+kill
 * cycles/s; host memory per idle sandbox (MemAvailable delta over IDLE
 * sandboxes); time to have BURST sandboxes alive, from one thread and from
 * two; the disk layer: golden image (mkfs), pooled image (copy + loop +
 * mount) and its host memory. -f turns on the engine's
 * cgroup_favor_dynmods for the run (and restores the host after). Root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += v[i];
  printf("%-40s p50 %7.3f ms  p99 %7.3f ms  mean %7.3f ms  (n=%d)\n", what, v[n / 2],
         v[(int)(n * 0.99) < n ? (int)(n * 0.99) : n - 1], sum / n, n);
}

static long meminfo_kb(const char *field) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256], fmt[64];
  snprintf(fmt, sizeof fmt, "%s: %%ld kB", field);
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, fmt, &v) == 1) break;
  if (f) fclose(f);
  return v;
}

static long mem_available_kb(void) {
  return meminfo_kb("MemAvailable");
}

/* Kernel-side memory: less disturbed by other processes than MemAvailable. */
static long kernel_kb(void) {
  return meminfo_kb("Slab") + meminfo_kb("Percpu") + meminfo_kb("KernelStack") +
         meminfo_kb("PageTables");
}

static asbe_sandbox *create(asbt_env *env, const char *id, const asbe_template *t) {
  asbe_sandbox *sb = asbt_create(env, id, t);
  if (!sb) exit(1);
  return sb;
}

static void kill_sb(asbe_sandbox *sb) {
  if (asbe_sandbox_kill(sb, 1) < 0) fprintf(stderr, "kill: %s\n", asbe_errmsg());
  asbe_sandbox_release(sb);
}

static int run_true(asbe_sandbox *sb) {
  const char *argv[] = {"true", NULL};
  asbe_exec_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.stdin_fd = o.stdout_fd = o.stderr_fd = -1;
  asbe_proc *p;
  if (asbe_sandbox_exec(sb, &o, &p) < 0) return -1;
  int st = -1;
  asbe_proc_wait(p, -1, &st);
  asbe_proc_free(p);
  return st;
}

typedef struct burst_arg {
  asbt_env *env;
  const asbe_template *t;
  asbe_sandbox **all;
  int from, to;
} burst_arg;

static void *burst_thread(void *p) {
  burst_arg *a = p;
  char id[64];
  for (int i = a->from; i < a->to; i++) {
    snprintf(id, sizeof id, "par-%d", i);
    a->all[i] = create(a->env, id, a->t);
  }
  return NULL;
}

/* create -> connect to the agent's socket succeeds */
static void wait_agent_socket(asbe_sandbox *sb) {
  for (;;) {
    int s = asbe_sandbox_connect_unix(sb, "envd.sock");
    if (s >= 0) {
      close(s);
      return;
    }
    usleep(50);
  }
}

int main(int argc, char **argv) {
  int n = 200, pool = 8, burst = 100;
  const char *tname = "busybox";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-n"))
      n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-t"))
      tname = argv[i + 1];
    else if (!strcmp(argv[i], "-p"))
      pool = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-c"))
      burst = atoi(argv[i + 1]);
  }
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-f")) asbt_favor_dynmods = 1;
  char cg2[1024], cg2opts[1024];
  int have_cg2 = asbt_cgroup2(cg2, sizeof cg2, cg2opts, sizeof cg2opts) == 0;
  /* calibration: how fast is this machine right now? */
  double *v = calloc((size_t)(n > burst ? n : burst) + 1, sizeof *v);
  for (int i = 0; i < n; i++) {
    double t0 = now_ms();
    pid_t p = fork();
    if (p == 0) {
      execl("/bin/true", "true", (char *)NULL);
      _exit(127);
    }
    waitpid(p, NULL, 0);
    v[i] = now_ms() - t0;
  }
  report("host baseline: fork+exec+wait /bin/true", v, n);
  char psi[256] = "";
  FILE *pf = fopen("/proc/pressure/cpu", "r");
  if (pf) {
    if (!fgets(psi, sizeof psi, pf)) psi[0] = '\0';
    fclose(pf);
  }
  printf("host cpu pressure: %s", psi[0] ? psi : "n/a\n");
  asbt_env env;
  if (asbt_setup(&env, (unsigned)pool) < 0) return 1;
  const asbe_template *t = strcmp(tname, "base") ? env.busybox : env.base;
  printf("template %s, pool %d, %d runs, favordynmods %s; cgroups: %s\n", tname, pool, n,
         asbt_favor_dynmods ? "on" : "as the host has it", asbe_engine_cgroup_info(env.e));
  asbe_engine_pool_fill(env.e, 256ull << 20, (unsigned)pool);
  char id[64];
  for (int i = 0; i < 5; i++) { /* warm-up */
    snprintf(id, sizeof id, "warm-%d", i);
    asbe_sandbox *sb = create(&env, id, t);
    run_true(sb);
    kill_sb(sb);
  }

  /* create -> agent up; create -> first command */
  double *cmd = calloc((size_t)n, sizeof *cmd), *kil = calloc((size_t)n, sizeof *kil);
  double *crt = calloc((size_t)n, sizeof *crt);
  for (int i = 0; i < n; i++) {
    snprintf(id, sizeof id, "b-%d", i);
    double t0 = now_ms();
    asbe_sandbox *sb = create(&env, id, t);
    double t1 = now_ms();
    if (i % 2) {
      if (run_true(sb) != 0) fprintf(stderr, "true failed\n");
      cmd[i / 2] = now_ms() - t0;
    } else {
      wait_agent_socket(sb);
      v[i / 2] = now_ms() - t0;
    }
    crt[i] = t1 - t0;
    double t2 = now_ms();
    kill_sb(sb);
    kil[i] = now_ms() - t2;
    usleep(2000); /* let the pool refill like it would between requests */
  }
  report("create (returns, init exec'd)", crt, n);
  report("create -> agent socket connects", v, n / 2);
  report("create -> first command result", cmd, n / 2);
  report("kill + destroy (remove state)", kil, n);

  /* exec true in a running sandbox */
  asbe_sandbox *sb = create(&env, "exec", t);
  for (int i = 0; i < n; i++) {
    double t0 = now_ms();
    run_true(sb);
    v[i] = now_ms() - t0;
  }
  report("exec `true` in a running sandbox", v, n);
  double t0 = now_ms();
  for (int i = 0; i < n; i++) {
    int s = asbe_sandbox_connect_tcp(sb, 8080);
    if (s >= 0) close(s);
  }
  printf("%-40s %7.3f ms each\n", "connect_tcp into the netns", (now_ms() - t0) / n);
  /* the agent's unix socket: the engine's checked connect (openat2 in the
   * sandbox's root, fstat, connect through /proc/self/fd) side by side with
   * the plain /proc/<init>/root path it replaced (unsafe: it follows a
   * sandbox's symlinks on the host; here only as the baseline) */
  double *plain = calloc((size_t)n, sizeof *plain);
  struct sockaddr_un ua;
  memset(&ua, 0, sizeof ua);
  ua.sun_family = AF_UNIX;
  snprintf(ua.sun_path, sizeof ua.sun_path, "/proc/%d/root/run/asb/envd.sock",
           (int)asbe_sandbox_pid(sb));
  for (int i = 0; i < n; i++) {
    double a = now_ms();
    int s = asbe_sandbox_connect_unix(sb, "envd.sock");
    double b = now_ms();
    if (s >= 0) close(s);
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    double c = now_ms();
    if (connect(s, (struct sockaddr *)&ua, sizeof ua) < 0) perror("plain connect");
    double d = now_ms();
    close(s);
    v[i] = b - a;
    plain[i] = d - c;
  }
  report("connect_unix (checked, in the sandbox)", v, n);
  double checked50 = v[n / 2];
  report("  baseline: connect to /proc path", plain, n);
  printf("%-40s %7.2f x\n", "  ratio of p50s", plain[n / 2] > 0 ? checked50 / plain[n / 2] : 0);
  free(plain);
  kill_sb(sb);

  /* sequential throughput */
  int cycles = n;
  t0 = now_ms();
  for (int i = 0; i < cycles; i++) {
    snprintf(id, sizeof id, "c-%d", i);
    kill_sb(create(&env, id, t));
  }
  double dt = now_ms() - t0;
  printf("%-40s %7.1f /s\n", "create+kill cycles", cycles * 1000.0 / dt);

  /* burst: N alive, sequential creates; then memory per idle sandbox */
  asbe_sandbox **all = calloc((size_t)burst, sizeof *all);
  sync();
  asbt_sleep_ms(500);
  long before = mem_available_kb(), kbefore = kernel_kb();
  t0 = now_ms();
  for (int i = 0; i < burst; i++) {
    snprintf(id, sizeof id, "burst-%d", i);
    all[i] = create(&env, id, t);
  }
  dt = now_ms() - t0;
  printf("%-40s %7.1f ms (%.1f creates/s)\n", "alive: burst of sequential creates", dt,
         burst * 1000.0 / dt);
  for (int i = 0; i < burst; i++) wait_agent_socket(all[i]);
  printf("%-40s %7.1f ms (%d sandboxes, agents up)\n", "burst incl. every agent answering",
         now_ms() - t0, burst);
  asbt_sleep_ms(1500);
  long after = mem_available_kb(), kafter = kernel_kb();
  printf("%-40s %7.0f KiB (MemAvailable delta / %d idle sandboxes with agent)\n",
         "host memory per idle sandbox", (double)(before - after) / burst, burst);
  printf("%-40s %7.0f KiB (Slab+Percpu+KernelStack+PageTables delta)\n", "  of which kernel",
         (double)(kafter - kbefore) / burst);
  uint64_t charged = 0;
  for (int i = 0; i < burst; i++) {
    asbe_stats st;
    if (asbe_sandbox_stats(all[i], &st) == 0) charged += st.memory_bytes;
  }
  printf("%-40s %7.0f KiB (its memory cgroup's usage: processes + charged kernel objects)\n",
         "  charged to the sandbox", (double)charged / 1024.0 / burst);
  t0 = now_ms();
  for (int i = 0; i < burst; i++) kill_sb(all[i]);
  printf("%-40s %7.1f ms\n", "kill all", now_ms() - t0);

  /* the same burst from two threads */
  asbt_sleep_ms(500);
  pthread_t th[2];
  burst_arg ba[2] = {{&env, t, all, 0, burst / 2}, {&env, t, all, burst / 2, burst}};
  t0 = now_ms();
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, burst_thread, &ba[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  dt = now_ms() - t0;
  printf("%-40s %7.1f ms (%.1f creates/s)\n", "alive: burst from 2 threads", dt,
         burst * 1000.0 / dt);
  for (int i = 0; i < burst; i++) kill_sb(all[i]);
  free(all);

  /* the disk layer */
  uint64_t odd = (300ull << 20) + 4096 * (uint64_t)(getpid() % 97);
  t0 = now_ms();
  asbe_engine_pool_fill(env.e, odd, 1); /* golden image (mkfs.ext4) + one image */
  double first = now_ms() - t0;
  sync();
  asbt_sleep_ms(500);
  before = mem_available_kb();
  kbefore = kernel_kb();
  int np = 30;
  t0 = now_ms();
  asbe_engine_pool_fill(env.e, odd, (unsigned)np + 1);
  dt = now_ms() - t0;
  asbt_sleep_ms(1000);
  after = mem_available_kb();
  kafter = kernel_kb();
  printf("%-40s %7.1f ms (mkfs.ext4 of a golden image + 1 image)\n", "disk: new size, first image",
         first);
  printf("%-40s %7.3f ms (sparse copy + LOOP_CONFIGURE + fsmount)\n", "disk: pooled image",
         dt / np);
  printf("%-40s %7.0f KiB (MemAvailable delta / %d mounted images)\n",
         "disk: host memory per pooled image", (double)(before - after) / np, np);
  printf("%-40s %7.0f KiB (Slab+Percpu+KernelStack+PageTables delta)\n", "  of which kernel",
         (double)(kafter - kbefore) / np);
  free(v);
  free(cmd);
  free(kil);
  free(crt);
  asbt_teardown(&env);
  if (asbt_favor_dynmods && have_cg2 && !strstr(cg2opts, "favordynmods"))
    asbt_cgroup2_restore(cg2, cg2opts);
  return 0;
}
