/* A minimal test harness: each test file defines TEST(name) functions and a
 * main() that lists them with RUN(name). Failures print file:line and the
 * expression, and the binary exits non-zero. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_TESTING_H
#define ASB_TESTING_H

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int asbt_failures;
static int asbt_current_failed;

#define TEST(name) static void test_##name(void)

#define RUN(name)                                                    \
  do {                                                               \
    asbt_current_failed = 0;                                         \
    test_##name();                                                   \
    printf("%s %s\n", asbt_current_failed ? "FAIL" : "ok  ", #name); \
    fflush(stdout);                                                  \
  } while (0)

#define TEST_MAIN_END()                                               \
  do {                                                                \
    if (asbt_failures) printf("%d check(s) failed\n", asbt_failures); \
    return asbt_failures ? 1 : 0;                                     \
  } while (0)

#define ASBT_FAIL(...)                              \
  do {                                              \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                   \
    fputc('\n', stderr);                            \
    asbt_failures++;                                \
    asbt_current_failed = 1;                        \
  } while (0)

#define CHECK(cond)                                    \
  do {                                                 \
    if (!(cond)) ASBT_FAIL("check failed: %s", #cond); \
  } while (0)

/* Like CHECK but returns from the test function on failure. */
#define REQUIRE(cond)                             \
  do {                                            \
    if (!(cond)) {                                \
      ASBT_FAIL("requirement failed: %s", #cond); \
      return;                                     \
    }                                             \
  } while (0)

#define CHECK_INT(a, b)                                                                \
  do {                                                                                 \
    long long asbt_a = (long long)(a), asbt_b = (long long)(b);                        \
    if (asbt_a != asbt_b) ASBT_FAIL("%s == %s: %lld != %lld", #a, #b, asbt_a, asbt_b); \
  } while (0)

#define CHECK_STR(a, b)                                                           \
  do {                                                                            \
    const char *asbt_a = (a), *asbt_b = (b);                                      \
    if (!asbt_a || !asbt_b || strcmp(asbt_a, asbt_b) != 0)                        \
      ASBT_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b, asbt_a ? asbt_a : "(null)", \
                asbt_b ? asbt_b : "(null)");                                      \
  } while (0)

/* Monotonic milliseconds. */
static inline long long asbt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How long a test waits for something that must happen: enough for a
 * loaded 2-core machine running the sanitizer build. A deadline only ends
 * a test that would otherwise hang; on a working machine the wait ends as
 * soon as the condition holds, so a generous one costs nothing. */
#define ASBT_DEADLINE_MS 120000

/* Polls cond (every 10 ms) until it holds or ms have passed; check cond
 * afterwards. Waiting for a condition, never for a time, keeps a test's
 * outcome independent of the machine's speed. */
#define WAIT_UNTIL(cond, ms)                                    \
  do {                                                          \
    long long asbt_end_ = asbt_now_ms() + (ms);                 \
    while (!(cond) && asbt_now_ms() < asbt_end_) usleep(10000); \
  } while (0)

/* The number in dir/file (a cgroup's memory.current...), -1 if none. */
static inline long long asbt_read_num(const char *dir, const char *file) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  FILE *f = fopen(p, "r");
  long long v = -1;
  if (f) {
    if (fscanf(f, "%lld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

/* The first len - 1 bytes of the file at path (a /proc file...) in buf,
 * NUL-ended: how many; -1 (buf "") if it cannot be opened. */
static inline long asbt_read_text(const char *path, char *buf, size_t len) {
  buf[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = 0;
  fclose(f);
  return (long)n;
}

/* Process pid's command line, its arguments joined by spaces, in buf (""
 * if it has none): its length, -1 if it cannot be read (pid is gone). */
static inline long asbt_cmdline(int pid, char *buf, size_t len) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/cmdline", pid);
  long n = asbt_read_text(p, buf, len);
  for (long i = 0; i < n; i++)
    if (!buf[i]) buf[i] = ' ';
  return n;
}

/* The next process d (opendir("/proc")) lists: its pid; 0 at the end. */
static inline int asbt_next_pid(DIR *d) {
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (de->d_name[0] >= '1' && de->d_name[0] <= '9') return atoi(de->d_name);
  return 0;
}

/* The next process d lists whose uid is in [base, base + 65536) (a
 * sandbox's uid range on the host): its pid; 0 at the end. */
static inline int asbt_next_uid_pid(DIR *d, unsigned long base) {
  for (int pid; (pid = asbt_next_pid(d));) {
    char p[64];
    struct stat st;
    snprintf(p, sizeof p, "/proc/%d", pid);
    if (stat(p, &st) == 0 && st.st_uid >= base && st.st_uid < base + 65536) return pid;
  }
  return 0;
}

/* Processes on the host whose uid is in [base, base + 65536): a sandbox's
 * uid range. */
static inline int asbt_uid_procs(unsigned long base) {
  DIR *d = opendir("/proc");
  int n = 0;
  while (asbt_next_uid_pid(d, base)) n++;
  if (d) closedir(d);
  return n;
}

#define CHECK_MEM(a, alen, b, blen)                                            \
  do {                                                                         \
    size_t asbt_al = (alen), asbt_bl = (blen);                                 \
    if (asbt_al != asbt_bl || memcmp((a), (b), asbt_al) != 0)                  \
      ASBT_FAIL("%s (%zu bytes) != %s (%zu bytes)", #a, asbt_al, #b, asbt_bl); \
  } while (0)

#endif
