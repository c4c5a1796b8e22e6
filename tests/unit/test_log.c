/* Unit tests for the shared log (core/util/log.c) and the wall-clock
 * helpers the programs share (asbi_unix_ms, asbi_rfc3339_ms,
 * asbi_pj_add_time).
 * SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "proto/pjson.h"
#include "testing.h"
#include "util/log.h"
#include "util/util.h"

/* Runs fn with stderr going to a temporary file; returns what it wrote
 * (malloc'd). */
static char *capture_stderr(void (*fn)(void *), void *arg) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  if (!tmp) return NULL;
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  long n = ftell(tmp) >= 0 ? (fseek(tmp, 0, SEEK_END), ftell(tmp)) : -1;
  char *out = n >= 0 ? calloc(1, (size_t)n + 1) : NULL;
  if (out) {
    rewind(tmp);
    if (fread(out, 1, (size_t)n, tmp) != (size_t)n) out[0] = '\0';
  }
  fclose(tmp);
  return out;
}

static void log_plain(void *arg) {
  (void)arg;
  asbi_log_init("prog", 0);
  asbi_log("hello %d", 42);
}

TEST(log_name_and_message) {
  char *out = capture_stderr(log_plain, NULL);
  CHECK_STR(out, "prog: hello 42\n");
  free(out);
}

static void log_timed(void *arg) {
  (void)arg;
  asbi_log_init("agent-sandboxd", ASBI_LOG_TIME);
  asbi_log("sandbox %s: ended (%s)", "abc", "killed");
}

TEST(log_time_prefix) {
  char *out = capture_stderr(log_timed, NULL);
  REQUIRE(out);
  /* "2026-01-02T03:04:05.123456789Z agent-sandboxd: ..." */
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *rest = strptime(out, "%Y-%m-%dT%H:%M:%S", &tm);
  CHECK(rest != NULL);
  const char *sp = strchr(out, ' ');
  REQUIRE(sp);
  CHECK(sp[-1] == 'Z');
  CHECK_STR(sp + 1, "agent-sandboxd: sandbox abc: ended (killed)\n");
  free(out);
}

static void log_off(void *arg) {
  (void)arg;
  asbi_log_init("quiet", ASBI_LOG_OFF);
  asbi_log("nothing");
}

TEST(log_off_drops_lines) {
  char *out = capture_stderr(log_off, NULL);
  CHECK_STR(out, "");
  free(out);
}

static void log_unnamed(void *arg) {
  (void)arg;
  asbi_log_init(NULL, 0);
  asbi_log("bare");
  char big[5000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  asbi_log("%s", big); /* cut at 2 KiB, still one line */
}

TEST(log_unnamed_and_cut) {
  char *out = capture_stderr(log_unnamed, NULL);
  REQUIRE(out);
  CHECK(strncmp(out, "bare\n", 5) == 0);
  const char *second = out + 5;
  CHECK_INT(strlen(second), 2047 + 1);
  CHECK(second[2047] == '\n');
  free(out);
}

#define THREADS 8
#define LINES 200

static void *writer(void *arg) {
  long id = (long)arg;
  for (int i = 0; i < LINES; i++)
    asbi_log("thread %ld line %d %s", id, i, "abcdefghijklmnopqrstuvwxyz0123456789");
  return NULL;
}

static void log_threads(void *arg) {
  (void)arg;
  asbi_log_init("t", 0);
  pthread_t th[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, writer, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
}

TEST(log_lines_of_threads_stay_whole) {
  char *out = capture_stderr(log_threads, NULL);
  REQUIRE(out);
  int seen[THREADS][LINES];
  memset(seen, 0, sizeof seen);
  int lines = 0, bad = 0;
  for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    long id = -1;
    int n = -1, used = 0;
    if (sscanf(l, "t: thread %ld line %d abcdefghijklmnopqrstuvwxyz0123456789%n", &id, &n, &used) !=
            2 ||
        l[used] != '\0' || id < 0 || id >= THREADS || n < 0 || n >= LINES)
      bad++;
    else
      seen[id][n]++;
    lines++;
  }
  CHECK_INT(bad, 0);
  CHECK_INT(lines, THREADS * LINES);
  int missing = 0;
  for (int i = 0; i < THREADS; i++)
    for (int k = 0; k < LINES; k++) missing += seen[i][k] != 1;
  CHECK_INT(missing, 0);
  free(out);
}

TEST(unix_ms_is_the_wall_clock) {
  struct timespec before, after;
  clock_gettime(CLOCK_REALTIME, &before);
  int64_t ms = asbi_unix_ms();
  clock_gettime(CLOCK_REALTIME, &after);
  CHECK(ms >= (int64_t)before.tv_sec * 1000 + before.tv_nsec / 1000000);
  CHECK(ms <= (int64_t)after.tv_sec * 1000 + after.tv_nsec / 1000000);
}

TEST(rfc3339_ms) {
  char t[40];
  asbi_rfc3339_ms(0, t);
  CHECK_STR(t, "1970-01-01T00:00:00Z");
  asbi_rfc3339_ms(1767323045123LL, t); /* 2026-01-02T03:04:05.123 */
  CHECK_STR(t, "2026-01-02T03:04:05.123000000Z");
  asbi_rfc3339_ms(1767323045000LL, t);
  CHECK_STR(t, "2026-01-02T03:04:05Z");
}

TEST(pj_add_time) {
  cJSON *j = cJSON_CreateObject();
  CHECK_INT(asbi_pj_add_time(j, "startedAt", 1767323045123LL), 0);
  CHECK_INT(asbi_pj_add_time(j, "endAt", 0), 0); /* a zero time is still a field */
  char *s = cJSON_PrintUnformatted(j);
  CHECK_STR(
      s, "{\"startedAt\":\"2026-01-02T03:04:05.123000000Z\",\"endAt\":\"1970-01-01T00:00:00Z\"}");
  free(s);
  cJSON_Delete(j);
}

int main(void) {
  RUN(log_name_and_message);
  RUN(log_time_prefix);
  RUN(log_off_drops_lines);
  RUN(log_unnamed_and_cut);
  RUN(log_lines_of_threads_stay_whole);
  RUN(unix_ms_is_the_wall_clock);
  RUN(rfc3339_ms);
  RUN(pj_add_time);
  TEST_MAIN_END();
}
