/* Issue 23: where a command's time goes, side by side in one run.
 *
 *   engine   commands.run("true") and ("echo x") from the C client through
 *            the local engine, whose sandboxes' envd runs them in its
 *            pre-started login shell; the same through a second engine
 *            started with ASB_PRESTART=0 (every command a fresh bash -l -c);
 *            commands.run("true") from the stock E2B JS SDK (npm e2b of
 *            tests/npm, bench/cmd_bench_e2b.mjs, one node process for the
 *            run; left out without node or tests/npm/node_modules)
 *   envd     Start against a standalone envd on the host: /bin/true; the
 *            same with ASB_WORKLOAD_CGROUPS (two cgroup v1/v2 joins, as in
 *            a sandbox); /bin/bash -l -c true with the template's profile
 *            (pre-started, and on a second envd with ASB_PRESTART=0) and
 *            with the host's
 *   bare     posix_spawn + waitpid of /bin/true, and of /bin/bash -l -c true
 *            with the template's own /etc/profile and with the host's
 *
 * The bare and standalone variants run in a private mount namespace where
 * the template's /etc/profile (or the host's, switched per round) is bound
 * over /etc/profile and the template's /root over /root (this machine's own
 * root dotfiles cost ~100 ms and are no fair baseline). The variants run in
 * rounds, alternating, because this machine is shared and noisy: read the
 * ratios, not the absolute numbers. Then commands/s across 20 sandboxes of
 * each engine, alternating them in four 2 s phases.
 *
 * cmd_bench --phases [N]: the phase timers instead (ASB_TIMING, docs/envd.md):
 * the engine runs with ASB_TIMING set, so the client library times each
 * commands.run and envd inside the sandbox each Start; N runs of "true",
 * then the median of every phase of both logs.
 *
 * usage: cmd_bench [iterations per variant]   (as root; default 400)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../tests/support/engine_fixture.h"
#include "bench.h"
#include "bench_signals.h"
#include "envd_test.h"

#define NSBX 20
#define ROUNDS 10
/* Between two measured commands: an agent's think time (the model's
 * answer takes far longer), by which the next pre-started shell is ready.
 * The same pause before every variant; it is not measured. */
#define THINK_US 10000

static engine_fixture F, F2; /* F2: its envds without pre-started shells */
static asb_client *C, *C2;
static char g_old_profile[256], g_new_profile[512];
/* What cmd_cleanup removes: the standalone envds, the cgroup dirs their
 * children join, the phases' timing log. */
static et_envd E, EC, EF;
static char g_cgm[128], g_cgp[128], g_timing_log[128];

enum {
  V_ENG_TRUE,
  V_ENG_ECHO,
  V_ENG_TRUE_FRESH,
  V_ENG_ECHO_FRESH,
  V_E2B_TRUE,
  V_ENVD_TRUE,
  V_ENVD_TRUE_CG,
  V_ENVD_BASH,
  V_ENVD_BASH_FRESH,
  V_ENVD_BASH_OLD,
  V_BARE_TRUE,
  V_BARE_BASH,
  V_BARE_BASH_OLD,
  NV
};
static const char *const k_names[NV] = {
    "engine: commands.run(\"true\")",
    "engine: commands.run(\"echo x\")",
    "engine: run(\"true\"), no pre-started shell",
    "engine: run(\"echo x\"), no pre-started shell",
    "engine: stock e2b JS SDK, run(\"true\")",
    "envd: Start(/bin/true)",
    "envd: Start(/bin/true), 2 cgroup joins",
    "envd: Start(bash -l -c true)",
    "envd: Start(bash -l -c true), no pre-start",
    "envd: Start(bash -l -c true), host profile",
    "bare: posix_spawn /bin/true",
    "bare: posix_spawn bash -l -c true",
    "bare: bash -l -c true, host /etc/profile",
};

static int run_cmd(asb_sandbox *sb, const char *cmd, const char *want) {
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, cmd, NULL);
  if (rc == ASB_OK) {
    size_t n = 0;
    const char *out = asb_command_result_stdout(r, &n);
    if (asb_command_result_exit_code(r) != 0 || n != strlen(want) || memcmp(out, want, n)) rc = -1;
  } else {
    fprintf(stderr, "run %s: %s\n", cmd, asb_error_last()->message);
  }
  asb_command_result_free(r);
  return rc;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *b = malloc(1 << 20);
  *len = b ? fread(b, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (b) b[*len] = '\0';
  return b;
}

/* /etc/profile in this mount namespace: the template's or the host's. */
static int use_profile(int old) {
  umount2("/etc/profile", MNT_DETACH);
  if (mount(old ? g_old_profile : g_new_profile, "/etc/profile", NULL, MS_BIND, NULL) != 0) {
    perror("bind /etc/profile");
    return -1;
  }
  return 0;
}

extern char **environ;
static char *g_env[8];

static double bare(char *const *av) {
  double t = bench_now();
  pid_t pid;
  if (posix_spawn(&pid, av[0], NULL, NULL, av, g_env) != 0) return -1;
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? bench_now() - t : -1;
}

static double envd_start(et_conn *c, const char *json) {
  et_resp r;
  double t = bench_now();
  et_stream(c, "process.Process/Start", json, NULL, &r);
  double d = bench_now() - t;
  int ok = r.status == 200 && et_contains(&r, "exit status 0");
  et_resp_free(&r);
  return ok ? d : -1;
}

/* The stock E2B JS SDK's commands.run, in a node process of its own
 * (bench/cmd_bench_e2b.mjs) driven over a pipe. */
static pid_t g_e2b = -1;
static FILE *g_e2b_in, *g_e2b_out;

static int e2b_start(const engine_fixture *f, const char *sandbox_id) {
  char sdk[512], script[512];
  snprintf(sdk, sizeof sdk, "%s/tests/npm/node_modules/e2b/dist/index.mjs", ASB_SOURCE_DIR);
  snprintf(script, sizeof script, "%s/bench/cmd_bench_e2b.mjs", ASB_SOURCE_DIR);
  if (access(sdk, R_OK) != 0) return -1;
  int in[2], out[2];
  /* close-on-exec: the envds and engines started later must not keep the
   * helper's stdin open (it ends at EOF) */
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return -1;
  g_e2b = fork();
  if (g_e2b == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    setenv("E2B_API_URL", f->url, 1);
    setenv("E2B_SANDBOX_URL", f->url, 1);
    setenv("E2B_API_KEY", f->key, 1);
    execlp("node", "node", script, sandbox_id, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  g_e2b_in = fdopen(in[1], "w");
  g_e2b_out = fdopen(out[0], "r");
  char line[256];
  if (g_e2b < 0 || !g_e2b_in || !g_e2b_out || !fgets(line, sizeof line, g_e2b_out) ||
      strncmp(line, "ready", 5) != 0) {
    fprintf(stderr, "stock e2b SDK helper: %s", g_e2b > 0 ? line : "cannot start\n");
    return -1;
  }
  return 0;
}

/* n commands, each after think_us; their latencies (s) into v. */
static int e2b_round(int n, int think_us, double *v) {
  fprintf(g_e2b_in, "%d %d\n", n, think_us);
  fflush(g_e2b_in);
  size_t cap = 0;
  char *line = NULL;
  int got = 0;
  if (getline(&line, &cap, g_e2b_out) > 0) {
    char *p = line, *e;
    for (; got < n; got++, p = e) {
      double us = strtod(p, &e);
      if (e == p) break;
      v[got] = us / 1e6;
    }
  }
  if (got != n) fprintf(stderr, "stock e2b SDK helper: %s", line ? line : "gone\n");
  free(line);
  return got == n ? 0 : -1;
}

static void e2b_stop(void) {
  if (g_e2b_in) {
    fputs("0 0\n", g_e2b_in); /* the helper's end */
    fclose(g_e2b_in);
  }
  if (g_e2b_out) fclose(g_e2b_out);
  if (g_e2b > 0) waitpid(g_e2b, NULL, 0);
  g_e2b = -1;
  g_e2b_in = g_e2b_out = NULL;
}

/* Everything the bench made on the host, once (atexit: also after an
 * early return or a signal, bench_signals.h; the engines' own handler,
 * registered before, runs after it). The streams of the stock SDK's
 * helper may be in use by main when a signal ends the run: the helper is
 * signalled, not told. */
static void cmd_cleanup(void) {
  if (g_e2b > 0) {
    kill(g_e2b, SIGTERM);
    waitpid(g_e2b, NULL, 0);
    g_e2b = -1;
  }
  et_envd *envds[] = {&E, &EF, &EC};
  for (size_t i = 0; i < sizeof envds / sizeof envds[0]; i++)
    if (envds[i]->pid > 0) {
      et_stop(envds[i]);
      envds[i]->pid = 0;
    }
  if (g_cgm[0]) {
    for (int i = 0; i < 50 && (rmdir(g_cgm) != 0 && errno == EBUSY); i++) usleep(100000);
    if (strcmp(g_cgp, g_cgm)) rmdir(g_cgp);
    g_cgm[0] = g_cgp[0] = 0;
  }
  if (g_old_profile[0]) {
    umount2("/etc/profile", MNT_DETACH);
    unlink(g_old_profile);
    g_old_profile[0] = 0;
  }
  if (g_timing_log[0]) {
    unlink(g_timing_log);
    g_timing_log[0] = 0;
  }
}

typedef struct worker {
  asb_sandbox *sb;
  double until;
  long done;
} worker;

static void *hammer(void *arg) {
  worker *w = arg;
  while (bench_now() < w->until)
    if (run_cmd(w->sb, "true", "") == ASB_OK) w->done++;
  return NULL;
}

static double throughput(asb_sandbox **sb, double secs) {
  worker w[NSBX];
  pthread_t th[NSBX];
  double until = bench_now() + secs;
  for (int i = 0; i < NSBX; i++) {
    w[i] = (worker){sb[i], until, 0};
    pthread_create(&th[i], NULL, hammer, &w[i]);
  }
  long total = 0;
  for (int i = 0; i < NSBX; i++) {
    pthread_join(th[i], NULL);
    total += w[i].done;
  }
  return total / secs;
}

/* Medians of every "<key>_us=<v>" field of the lines starting with tag. */
static void phase_medians(const char *text, const char *tag) {
  enum { MAXK = 16, MAXV = 8192 };
  char keys[MAXK][32];
  static double vals[MAXK][MAXV];
  int nk = 0, nv[MAXK] = {0};
  size_t tl = strlen(tag);
  for (const char *l = text; l && *l;) {
    const char *e = strchr(l, '\n');
    size_t ll = e ? (size_t)(e - l) : strlen(l);
    if (ll > tl && strncmp(l, tag, tl) == 0) {
      char line[512];
      snprintf(line, sizeof line, "%.*s", (int)ll, l);
      char *save = NULL;
      for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(t, '=');
        if (!eq || eq - t < 4 || strncmp(eq - 3, "_us", 3) != 0) continue;
        *eq = '\0';
        int k = 0;
        while (k < nk && strcmp(keys[k], t)) k++;
        if (k == nk) {
          if (nk == MAXK) continue;
          snprintf(keys[nk++], sizeof keys[0], "%s", t);
        }
        if (nv[k] < MAXV) vals[k][nv[k]++] = atof(eq + 1) / 1e6;
      }
    }
    l = e ? e + 1 : NULL;
  }
  for (int k = 0; k < nk; k++) {
    char name[64];
    snprintf(name, sizeof name, "%s %s", tag, keys[k]);
    bench_report(name, vals[k], nv[k]);
  }
}

static int phases(int n) {
  char *log = g_timing_log;
  snprintf(g_timing_log, sizeof g_timing_log, "/tmp/asb-cmdbench-%d.timing", (int)getpid());
  setenv("ASB_TIMING", log, 1);
  if (engine_fixture_start(&F, "cmdbench") != 0 || engine_fixture_client(&F, &C) != ASB_OK)
    return 1;
  atexit(cmd_cleanup); /* after the engines' handler: it runs before it */
  asb_sandbox *sb;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  if (asb_sandbox_create(&sb, C, &o) != ASB_OK) return 1;
  for (int i = 0; i < 20; i++) run_cmd(sb, "true", "");
  asb_files_options fo = ASB_FILES_OPTIONS_INIT;
  fo.user = "root";
  asb_files_write(NULL, sb, "/run/asb/envd-timing.log", "", 0, &fo);
  if (truncate(log, 0) != 0) { /* absent: fine */
  }
  double *v = calloc((size_t)n, sizeof *v);
  for (int i = 0; i < n; i++) {
    usleep(THINK_US);
    double t = bench_now();
    if (run_cmd(sb, "true", "") != ASB_OK) return 1;
    v[i] = bench_now() - t;
  }
  printf("== phases of commands.run(\"true\"), %d runs (medians of each) ==\n", n);
  bench_report("commands.run(\"true\") (timers on)", v, n);
  size_t len = 0;
  char *client = slurp(log, &len), *envd = NULL;
  if (asb_files_read(&envd, &len, sb, "/run/asb/envd-timing.log", &fo) != ASB_OK) envd = NULL;
  phase_medians(client, "asb-timing");
  phase_medians(envd, "envd-timing");
  free(client);
  asb_free(envd);
  free(v);
  cmd_cleanup();
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(C);
  engine_fixture_stop(&F);
  return 0;
}

int main(int argc, char **argv) {
  bench_exit_on_signals();
  if (argc > 1 && strcmp(argv[1], "--phases") == 0) return phases(argc > 2 ? atoi(argv[2]) : 300);
  int iters = argc > 1 ? atoi(argv[1]) : 400;
  int per = iters / ROUNDS > 0 ? iters / ROUNDS : 1;
  iters = per * ROUNDS;
  if (engine_fixture_start(&F, "cmdbench") != 0 || engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  atexit(cmd_cleanup);            /* after the engines' handler: it runs before it */
  setenv("ASB_PRESTART", "0", 1); /* handed to its sandboxes' envd */
  int f2 = engine_fixture_start(&F2, "cmdbench-fresh");
  unsetenv("ASB_PRESTART");
  if (f2 != 0 || engine_fixture_client(&F2, &C2) != ASB_OK) {
    fprintf(stderr, "cannot start the second engine\n");
    return 1;
  }
  asb_sandbox *sb[NSBX], *sb2[NSBX];
  for (int i = 0; i < 2 * NSBX; i++) {
    asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
    o.timeout_ms = 900000;
    if (asb_sandbox_create(i < NSBX ? &sb[i] : &sb2[i - NSBX], i < NSBX ? C : C2, &o) != ASB_OK) {
      fprintf(stderr, "create: %s\n", asb_error_last()->message);
      return 1;
    }
  }
  /* The stock E2B SDK's helper, in a sandbox of its own (it sends its own
   * user and options: the C client's commands and its own must not take
   * each other's pre-started shell), started before this process's mount
   * namespace. */
  int have_e2b = e2b_start(&F, asb_sandbox_id(sb[1])) == 0;
  if (!have_e2b) e2b_stop();
  /* The profiles: the template's as prepared by this engine, the host's. */
  char root[300];
  snprintf(root, sizeof root, "%s/templates/base/rootfs", F.state);
  snprintf(g_new_profile, sizeof g_new_profile, "%s/etc/profile", root);
  size_t new_len = 0, old_len = 0;
  char *new_prof = slurp(g_new_profile, &new_len), *old_prof = slurp("/etc/profile", &old_len);
  if (!new_prof || !old_prof) {
    fprintf(stderr, "cannot read the profiles\n");
    return 1;
  }
  snprintf(g_old_profile, sizeof g_old_profile, "/tmp/asb-cmdbench-%d.profile", (int)getpid());
  FILE *f = fopen(g_old_profile, "wb");
  if (!f || fwrite(old_prof, 1, old_len, f) != old_len) return 1;
  fclose(f);

  /* The template's environment for the host-side variants. */
  char rhome[400];
  snprintf(rhome, sizeof rhome, "%s/root", root);
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount(rhome, "/root", NULL, MS_BIND, NULL) != 0 ||
      mount(g_new_profile, "/etc/profile", NULL, MS_BIND, NULL) != 0) {
    perror("mount namespace");
    return 1;
  }
  int ei = 0;
  g_env[ei++] = "HOME=/root";
  g_env[ei++] = "USER=root";
  g_env[ei++] = "LOGNAME=root";
  g_env[ei++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  g_env[ei] = NULL;
  setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
  setenv("ASB_PRESTART", "0", 1);
  int ef = et_start(&EF, NULL);
  unsetenv("ASB_PRESTART");
  if (et_start(&E, NULL) != 0 || ef != 0) {
    fprintf(stderr, "cannot start envd\n");
    return 1;
  }
  /* A second envd whose children join two cgroups, as in a sandbox. */
  char *cgm = g_cgm, *cgp = g_cgp, cgenv[300];
  snprintf(g_cgm, sizeof g_cgm, "/sys/fs/cgroup/memory/asb-cmdbench-%d", (int)getpid());
  snprintf(g_cgp, sizeof g_cgp, "/sys/fs/cgroup/pids/asb-cmdbench-%d", (int)getpid());
  if (access("/sys/fs/cgroup/memory/cgroup.procs", F_OK) != 0) { /* cgroup v2 */
    snprintf(g_cgm, sizeof g_cgm, "/sys/fs/cgroup/asb-cmdbench-%d", (int)getpid());
    snprintf(g_cgp, sizeof g_cgp, "%s", g_cgm);
  }
  mkdir(cgm, 0755);
  mkdir(cgp, 0755);
  snprintf(cgenv, sizeof cgenv, "%s:%s", cgm, cgp);
  setenv("ASB_WORKLOAD_CGROUPS", cgenv, 1);
  int have_cg = et_start(&EC, NULL) == 0;
  unsetenv("ASB_WORKLOAD_CGROUPS");
  et_conn ce, cc, cf;
  et_connect(&ce, E.port);
  et_connect(&cf, EF.port);
  if (have_cg) et_connect(&cc, EC.port);

  static const char j_true[] = "{\"process\":{\"cmd\":\"/bin/true\"},\"stdin\":false}";
  static const char j_bash[] =
      "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"true\"]},\"stdin\":false}";
  char *const av_true[] = {"/bin/true", NULL};
  char *const av_bash[] = {"/bin/bash", "-l", "-c", "true", NULL};

  double *v[NV];
  for (int k = 0; k < NV; k++) v[k] = calloc((size_t)iters, sizeof *v[k]);
  /* warm-up: every path once or a few times */
  for (int i = 0; i < 20; i++) {
    run_cmd(sb[0], "true", "");
    run_cmd(sb2[0], "true", "");
    envd_start(&ce, j_true);
    bare(av_true);
  }
  printf("== one command, %d rounds x %d per variant, alternating ==\n", ROUNDS, per);
  fflush(stdout);
  for (int r = 0; r < ROUNDS; r++) {
    for (int k = 0; k < NV; k++) {
      if ((k == V_ENVD_TRUE_CG && !have_cg) || (k == V_E2B_TRUE && !have_e2b)) continue;
      if (k == V_E2B_TRUE) { /* the helper's think time and timing are its own */
        if (e2b_round(per, THINK_US, v[k] + r * per) != 0) return 1;
        continue;
      }
      int old = k == V_ENVD_BASH_OLD || k == V_BARE_BASH_OLD;
      if ((k == V_ENVD_BASH || k == V_ENVD_BASH_FRESH || k == V_BARE_BASH || old) &&
          use_profile(old) != 0)
        return 1;
      for (int i = 0; i < per; i++) {
        usleep(THINK_US);
        double t = bench_now(), d = 0;
        switch (k) {
          case V_ENG_TRUE:
            d = run_cmd(sb[0], "true", "") == ASB_OK ? bench_now() - t : -1;
            break;
          case V_ENG_ECHO:
            d = run_cmd(sb[0], "echo x", "x\n") == ASB_OK ? bench_now() - t : -1;
            break;
          case V_ENG_TRUE_FRESH:
            d = run_cmd(sb2[0], "true", "") == ASB_OK ? bench_now() - t : -1;
            break;
          case V_ENG_ECHO_FRESH:
            d = run_cmd(sb2[0], "echo x", "x\n") == ASB_OK ? bench_now() - t : -1;
            break;
          case V_ENVD_TRUE:
            d = envd_start(&ce, j_true);
            break;
          case V_ENVD_TRUE_CG:
            d = envd_start(&cc, j_true);
            break;
          case V_ENVD_BASH:
            d = envd_start(&ce, j_bash);
            break;
          case V_ENVD_BASH_FRESH:
          case V_ENVD_BASH_OLD: /* fresh: a bind mount over /etc/profile is no inotify event */
            d = envd_start(&cf, j_bash);
            break;
          case V_BARE_TRUE:
            d = bare(av_true);
            break;
          default:
            d = bare(av_bash);
            break;
        }
        if (d < 0) {
          fprintf(stderr, "%s failed\n", k_names[k]);
          return 1;
        }
        v[k][r * per + i] = d;
      }
    }
  }
  double p50[NV] = {0};
  double p99[NV] = {0};
  for (int k = 0; k < NV; k++) {
    if ((k == V_ENVD_TRUE_CG && !have_cg) || (k == V_E2B_TRUE && !have_e2b)) continue;
    p50[k] = bench_report(k_names[k], v[k], iters); /* sorts v[k] */
    p99[k] = v[k][(int)((iters - 1) * 0.99)] * 1e6;
  }
  double b = p50[V_BARE_TRUE];
  printf("== ratios of p50 ==\n");
  printf("%-44s %6.2fx  (target <= 2)\n", "engine run(\"true\") / bare /bin/true",
         p50[V_ENG_TRUE] / b);
  printf("%-44s %6.2fx  (target <= 2)\n", "engine run(\"true\"): p99 / p50",
         p99[V_ENG_TRUE] / p50[V_ENG_TRUE]);
  printf("%-44s %6.2fx  (this machine's own noise)\n", "  bare /bin/true: p99 / p50",
         p99[V_BARE_TRUE] / b);
  printf("%-44s %6.2fx\n", "  bare bash -l -c true: p99 / p50",
         p99[V_BARE_BASH] / p50[V_BARE_BASH]);
  if (have_e2b)
    printf("%-44s %6.2fx\n", "stock e2b JS SDK run(\"true\") / C client",
           p50[V_E2B_TRUE] / p50[V_ENG_TRUE]);
  printf("%-44s %6.2fx\n", "  without the pre-started shell / bare", p50[V_ENG_TRUE_FRESH] / b);
  printf("%-44s %6.2fx\n", "engine run(true): pre-started / fresh",
         p50[V_ENG_TRUE] / p50[V_ENG_TRUE_FRESH]);
  printf("%-44s %6.2fx\n", "engine run(echo x): pre-started / fresh",
         p50[V_ENG_ECHO] / p50[V_ENG_ECHO_FRESH]);
  printf("%-44s %6.2fx\n", "envd bash -l -c true: pre-started / fresh",
         p50[V_ENVD_BASH] / p50[V_ENVD_BASH_FRESH]);
  printf("%-44s %6.2fx\n", "envd Start(/bin/true) / bare /bin/true", p50[V_ENVD_TRUE] / b);
  printf("%-44s %6.2fx\n", "bare bash -l: host profile / template's",
         p50[V_BARE_BASH_OLD] / p50[V_BARE_BASH]);
  printf("== where engine run(\"true\") goes (p50 differences, us) ==\n");
  printf("%-44s %9.1f\n", "process start (bare /bin/true)", b);
  printf("%-44s %9.1f\n", "bash -l -c true over /bin/true (bare)", p50[V_BARE_BASH] - b);
  printf("%-44s %9.1f\n", "envd: HTTP, JSON, pipes, hand-offs", p50[V_ENVD_TRUE] - b);
  if (have_cg) printf("%-44s %9.1f\n", "cgroup joins (2)", p50[V_ENVD_TRUE_CG] - p50[V_ENVD_TRUE]);
  printf("%-44s %9.1f\n", "client lib + router + sandbox (pre-started)",
         p50[V_ENG_TRUE] - p50[V_ENVD_BASH]);
  fflush(stdout);

  printf("== commands/s across %d sandboxes (run(\"true\"), 4 phases of 2 s) ==\n", NSBX);
  double tp_new = 0, tp_old = 0;
  for (int phase = 0; phase < 4; phase++) {
    int old = phase & 1;
    double tp = throughput(old ? sb2 : sb, 2.0);
    printf("%-44s %9.0f commands/s\n", old ? "  no pre-started shell" : "  pre-started shell", tp);
    fflush(stdout);
    if (old)
      tp_old += tp / 2;
    else
      tp_new += tp / 2;
  }
  printf("%-44s %9.0f / %.0f commands/s = %.2fx\n", "pre-started / fresh (mean)", tp_new, tp_old,
         tp_new / tp_old);

  e2b_stop();
  et_close(&ce);
  et_close(&cf);
  if (have_cg) et_close(&cc);
  cmd_cleanup(); /* the envds, their cgroups, the profile */
  for (int i = 0; i < NSBX; i++) {
    asb_sandbox_kill(sb[i], NULL);
    asb_sandbox_free(sb[i]);
    asb_sandbox_kill(sb2[i], NULL);
    asb_sandbox_free(sb2[i]);
  }
  asb_client_free(C);
  asb_client_free(C2);
  engine_fixture_stop(&F);
  engine_fixture_stop(&F2);
  for (int k = 0; k < NV; k++) free(v[k]);
  free(new_prof);
  free(old_prof);
  return 0;
}
