/* Small helpers shared by the benchmarks: timing and percentiles.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_BENCH_H
#define ASB_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v and prints p50/p99 in µs; returns p50 in µs. */
static inline double bench_report(const char *name, double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp);
  double p50 = v[n / 2] * 1e6, p99 = v[(int)((n - 1) * 0.99)] * 1e6;
  printf("%-44s p50 %9.1f us   p99 %9.1f us   (n=%d)\n", name, p50, p99, n);
  fflush(stdout);
  return p50;
}

/* A value from /proc/<pid>/status in kB ("VmRSS", "VmHWM"), -1 if absent. */
static inline long bench_proc_kb(int pid, const char *key) {
  char p[64], line[256];
  snprintf(p, sizeof p, "/proc/%d/status", pid);
  FILE *f = fopen(p, "r");
  if (!f) return -1;
  long v = -1;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, kl) == 0 && line[kl] == ':') v = atol(line + kl + 1);
  fclose(f);
  return v;
}

/* MemAvailable in kB. */
static inline long bench_mem_available_kb(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "MemAvailable:", 13) == 0) v = atol(line + 13);
  if (f) fclose(f);
  return v;
}

#endif
