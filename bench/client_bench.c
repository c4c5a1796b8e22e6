/* The C client against a real envd (standalone, as in E2B's debug mode),
 * side by side in one run with the floor each operation stands on:
 *   - commands.run("true") round trip vs a bare fork+exec+wait of /bin/true
 *   - stat and 4 KiB write p50; 4 KiB and 1 MiB write+read round trips
 *   - upload and download MB/s of a 1 GiB file (streamed)
 *   - process output throughput
 *   - envd idle RSS and RSS high-water mark after the 1 GiB transfers
 * usage: client_bench [iterations]   (as root; ENVD_BIN overrides the envd)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../tests/support/envd_fixture.h"
#include "bench.h"

extern char **environ;

static long long produced, consumed;

static long gen(char *buf, size_t cap, void *ud) {
  long long *left = ud;
  if (*left <= 0) return 0;
  size_t n = cap;
  if ((long long)n > *left) n = (size_t)*left;
  memset(buf, 'x', n);
  *left -= (long long)n;
  produced += (long long)n;
  return (long)n;
}

static int sink(const char *d, size_t n, void *ud) {
  (void)d;
  (void)ud;
  consumed += (long long)n;
  return 0;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 1000;
  envd_fixture E;
  if (envd_start(&E, NULL) != 0) {
    fprintf(stderr, "cannot start envd (%s)\n", ASB_ENVD_BIN);
    return 1;
  }
  asb_client *c;
  asb_sandbox *sb;
  if (envd_connect(&E, NULL, &c, &sb) != 0) return 1;
  usleep(200000);
  long idle_rss = bench_proc_kb(E.pid, "VmRSS");
  double *v = calloc((size_t)iters, sizeof *v);
  const char *dir = "/tmp/asb-client-bench";
  mkdir(dir, 0777);
  chmod(dir, 0777);

  printf("== commands (%d iterations) ==\n", iters);
  for (int i = 0; i < iters; i++) {
    double t = bench_now();
    pid_t pid;
    char *args[] = {"/bin/true", NULL};
    posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ);
    waitpid(pid, NULL, 0);
    v[i] = bench_now() - t;
  }
  double floor_us = bench_report("floor: fork+exec+wait /bin/true", v, iters);
  /* The SDKs run commands through a login shell; measure both that and a
   * direct exec (what the floor compares with). */
  asb_command_options direct = ASB_COMMAND_OPTIONS_INIT;
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < 20; i++) { /* warm the connection */
      asb_command_result *r = NULL;
      asb_commands_run(&r, sb, "true", &direct);
      asb_command_result_free(r);
    }
    for (int i = 0; i < iters; i++) {
      asb_command_result *r = NULL;
      double t = bench_now();
      int rc = asb_commands_run(&r, sb, pass ? "true" : "exec /bin/true", &direct);
      v[i] = bench_now() - t;
      asb_command_result_free(r);
      if (rc) {
        fprintf(stderr, "run failed: %s\n", asb_error_last()->message);
        return 1;
      }
    }
    double p50 = bench_report(
        pass ? "commands.run(\"true\") via bash -l -c" : "commands.run(\"exec /bin/true\")", v,
        iters);
    printf("%-44s %.2fx the floor\n", "", p50 / floor_us);
  }

  printf("== files ==\n");
  char path[256];
  snprintf(path, sizeof path, "%s/small", dir);
  char small[4096];
  memset(small, 's', sizeof small);
  asb_files_write(NULL, sb, path, small, sizeof small, NULL);
  for (int i = 0; i < iters; i++) {
    double t = bench_now();
    asb_entry *e = NULL;
    asb_files_stat(&e, sb, path, NULL);
    v[i] = bench_now() - t;
    asb_entry_free(e);
  }
  bench_report("files.stat", v, iters);
  for (int i = 0; i < iters; i++) {
    double t = bench_now();
    asb_files_write(NULL, sb, path, small, sizeof small, NULL);
    v[i] = bench_now() - t;
  }
  bench_report("files.write 4 KiB", v, iters);
  for (int i = 0; i < iters; i++) {
    double t = bench_now();
    asb_files_write(NULL, sb, path, small, sizeof small, NULL);
    char *d = NULL;
    size_t n;
    asb_files_read(&d, &n, sb, path, NULL);
    v[i] = bench_now() - t;
    asb_free(d);
  }
  bench_report("files write+read 4 KiB", v, iters);
  size_t mib = 1u << 20;
  char *big = malloc(mib);
  memset(big, 'm', mib);
  int n1 = iters / 10 > 10 ? iters / 10 : 10;
  for (int i = 0; i < n1; i++) {
    double t = bench_now();
    asb_files_write(NULL, sb, path, big, mib, NULL);
    char *d = NULL;
    size_t n;
    asb_files_read(&d, &n, sb, path, NULL);
    v[i] = bench_now() - t;
    asb_free(d);
  }
  bench_report("files write+read 1 MiB", v, n1);
  free(big);

  long long size = 1LL << 30;
  snprintf(path, sizeof path, "%s/1gib", dir);
  long long left = size;
  double t = bench_now();
  int rc = asb_files_write_stream(NULL, sb, path, gen, &left, size, NULL);
  double up = bench_now() - t;
  t = bench_now();
  int rc2 = asb_files_read_stream(sb, path, NULL, sink, NULL);
  double down = bench_now() - t;
  printf("%-44s %8.0f MB/s  (%s)\n", "upload 1 GiB (streamed)", size / up / 1e6,
         rc ? asb_error_last()->message : "ok");
  printf("%-44s %8.0f MB/s  (%s, %lld bytes)\n", "download 1 GiB (streamed)", size / down / 1e6,
         rc2 ? asb_error_last()->message : "ok", consumed);
  remove(path);

  printf("== process output ==\n");
  consumed = 0;
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.on_stdout = sink;
  o.discard_output = 1;
  asb_command_result *r = NULL;
  t = bench_now();
  rc = asb_commands_run(&r, sb, "head -c 200000000 /dev/zero", &o);
  double dt = bench_now() - t;
  asb_command_result_free(r);
  printf("%-44s %8.0f MB/s  (%s)\n", "stdout of head -c 200 MB /dev/zero", consumed / dt / 1e6,
         rc ? asb_error_last()->message : "ok");

  printf("== envd memory ==\n");
  printf("%-44s %8ld KiB\n", "envd idle RSS", idle_rss);
  printf("%-44s %8ld KiB\n", "envd RSS high-water mark after all of it",
         bench_proc_kb(E.pid, "VmHWM"));
  asb_sandbox_free(sb);
  asb_client_free(c);
  envd_stop(&E);
  rmdir(dir);
  free(v);
  (void)produced;
  return 0;
}
