/* envd benchmark: Start(/bin/true) round trip over a keep-alive connection
 * next to a bare fork+exec+wait, 4 KiB write+read round trips, Stat, 1 GiB
 * upload/download throughput and envd idle RSS.
 * usage: envd_bench [iterations]   (ENVD_BIN overrides the envd path)
 * SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>

#include "envd_test.h"

extern char **environ;

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  printf("%-28s p50 %8.1f us   p99 %8.1f us   (n=%d)\n", name, v[n / 2] * 1e6,
         v[(int)(n * 0.99)] * 1e6, n);
}

static void fill(char *b, size_t n) {
  for (size_t i = 0; i < n; i++) b[i] = (char)(i * 31);
}

/* envd's CPU time (user+system) in microseconds. */
static double envd_cpu_us(pid_t pid) {
  char p[64], buf[1024];
  snprintf(p, sizeof p, "/proc/%d/stat", pid);
  FILE *f = fopen(p, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *cp = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  if (cp) sscanf(cp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
  return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

static void discard(void *ud, const char *d, size_t n) {
  (void)ud;
  (void)d;
  (void)n;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  et_envd E;
  if (et_start(&E, NULL) != 0) {
    fprintf(stderr, "cannot start envd (set ENVD_BIN)\n");
    return 1;
  }
  usleep(200000);
  long idle = et_proc_status(E.pid, "VmRSS");
  et_conn c;
  et_connect(&c, E.port);
  double *v = calloc((size_t)iters, sizeof *v);
  et_resp r;

  /* warm-up */
  for (int i = 0; i < 50; i++) {
    et_stream(&c, "process.Process/Start", "{\"process\":{\"cmd\":\"/bin/true\"},\"stdin\":false}",
              NULL, &r);
    et_resp_free(&r);
  }
  double cpu0 = envd_cpu_us(E.pid);
  for (int i = 0; i < iters; i++) {
    double t = et_now();
    et_stream(&c, "process.Process/Start", "{\"process\":{\"cmd\":\"/bin/true\"},\"stdin\":false}",
              NULL, &r);
    v[i] = et_now() - t;
    if (r.status != 200 || !et_contains(&r, "exit status 0")) {
      fprintf(stderr, "bad Start response\n");
      return 1;
    }
    et_resp_free(&r);
  }
  report("Start(/bin/true) via envd", v, iters);
  printf("%-28s %8.1f us CPU in envd per Start\n", "", (envd_cpu_us(E.pid) - cpu0) / iters);

  char *const av[] = {"/bin/true", NULL};
  for (int i = 0; i < iters; i++) {
    double t = et_now();
    pid_t pid;
    posix_spawn(&pid, "/bin/true", NULL, NULL, av, environ);
    int st;
    waitpid(pid, &st, 0);
    v[i] = et_now() - t;
  }
  report("bare spawn+wait /bin/true", v, iters);

  char path[] = "/tmp/asb-bench-XXXXXX";
  close(mkstemp(path));
  char q[256], body[4096];
  fill(body, sizeof body);
  for (int i = 0; i < iters; i++) {
    double t = et_now();
    snprintf(q, sizeof q, "/files?path=%s", path);
    et_request(&c, "POST", q, "Content-Type: application/octet-stream\r\n", body, sizeof body, &r);
    int ok = r.status == 200;
    et_resp_free(&r);
    et_request(&c, "GET", q, NULL, NULL, 0, &r);
    v[i] = et_now() - t;
    if (!ok || r.status != 200 || r.len != sizeof body) {
      fprintf(stderr, "bad files response\n");
      return 1;
    }
    et_resp_free(&r);
  }
  report("4 KiB write+read", v, iters);
  cpu0 = envd_cpu_us(E.pid);
  for (int i = 0; i < iters; i++) {
    double t = et_now();
    snprintf(q, sizeof q, "/files?path=%s", path);
    et_request(&c, "POST", q, "Content-Type: application/octet-stream\r\n", body, sizeof body, &r);
    v[i] = et_now() - t;
    et_resp_free(&r);
  }
  report("4 KiB write", v, iters);
  printf("%-28s %8.1f us CPU in envd per write\n", "", (envd_cpu_us(E.pid) - cpu0) / iters);
  char sj[256];
  snprintf(sj, sizeof sj, "{\"path\":\"%s\"}", path);
  cpu0 = envd_cpu_us(E.pid);
  for (int i = 0; i < iters; i++) {
    double t = et_now();
    et_unary(&c, "filesystem.Filesystem/Stat", sj, NULL, &r);
    v[i] = et_now() - t;
    et_resp_free(&r);
  }
  report("Stat", v, iters);
  printf("%-28s %8.1f us CPU in envd per Stat\n", "", (envd_cpu_us(E.pid) - cpu0) / iters);

  /* 1 GiB upload / download */
  unsigned long long gib = 1ull << 30;
  char head[512];
  int hn = snprintf(head, sizeof head,
                    "POST /files?path=%s HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    "application/octet-stream\r\nContent-Length: %llu\r\n\r\n",
                    path, gib);
  static char buf[1 << 20];
  fill(buf, sizeof buf);
  cpu0 = envd_cpu_us(E.pid);
  double t = et_now();
  et_send(&c, head, (size_t)hn);
  for (unsigned long long off = 0; off < gib; off += sizeof buf) et_send(&c, buf, sizeof buf);
  et_read_resp(&c, &r, NULL, NULL);
  double up = et_now() - t;
  double upcpu = envd_cpu_us(E.pid) - cpu0;
  et_resp_free(&r);
  snprintf(head, sizeof head, "GET /files?path=%s HTTP/1.1\r\nHost: x\r\n\r\n", path);
  t = et_now();
  et_send(&c, head, strlen(head));
  et_read_resp(&c, &r, discard, NULL);
  double down = et_now() - t;
  et_resp_free(&r);
  printf("%-28s %8.0f MB/s   (envd CPU %.2f s)\n", "upload 1 GiB", gib / up / 1e6, upcpu / 1e6);
  printf("%-28s %8.0f MB/s\n", "download 1 GiB", gib / down / 1e6);
  printf("%-28s %8ld kB\n", "envd idle RSS", idle);
  printf("%-28s %8ld kB\n", "envd VmHWM after", et_proc_status(E.pid, "VmHWM"));
  unlink(path);
  et_close(&c);
  et_stop(&E);
  free(v);
  return 0;
}
