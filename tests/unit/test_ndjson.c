/* Unit tests for core/proto/ndjson. SPDX-License-Identifier: Apache-2.0 */
#include "proto/ndjson.h"
#include "proto/pjson.h"
#include "testing.h"
#include "util/util.h"

typedef struct sink {
  asbi_buf log; /* each line followed by '|' */
  int count;
  int stop_at;
  int stop_rc;
  int bad;
} sink;

static int on_line(void *ud, const char *line, size_t len) {
  sink *s = ud;
  s->count++;
  if (len == 0 || line[len] != '\0') s->bad = 1;
  asbi_buf_append(&s->log, line, len);
  asbi_buf_putc(&s->log, '|');
  return (s->stop_at && s->count == s->stop_at) ? s->stop_rc : 0;
}

static void sink_init(sink *s) {
  memset(s, 0, sizeof *s);
  asbi_buf_init(&s->log, 0);
  asbi_buf_reserve(&s->log, 0);
}

/* A code-interpreter style stream with LF, CRLF, empty lines (both kinds)
 * and a last line without a newline. */
static const char SAMPLE[] =
    "{\"type\":\"number_of_executions\",\"execution_count\":1}\n"
    "\n"
    "{\"type\":\"stdout\",\"text\":\"hi\\n\",\"timestamp\":1}\r\n"
    "\r\n"
    "\r\n"
    "{\"type\":\"result\",\"text\":\"2\",\"is_main_result\":true}\n"
    "\n\n"
    "{\"type\":\"end_of_execution\"}";
static const char EXPECT[] =
    "{\"type\":\"number_of_executions\",\"execution_count\":1}|"
    "{\"type\":\"stdout\",\"text\":\"hi\\n\",\"timestamp\":1}|"
    "{\"type\":\"result\",\"text\":\"2\",\"is_main_result\":true}|"
    "{\"type\":\"end_of_execution\"}|";

static int run_split(const char *p, size_t n, size_t a, size_t b, size_t max, sink *s) {
  asbi_ndjson nd;
  asbi_ndjson_init(&nd, max);
  int rc = asbi_ndjson_feed(&nd, p, a, on_line, s);
  if (!rc) rc = asbi_ndjson_feed(&nd, p + a, b - a, on_line, s);
  if (!rc) rc = asbi_ndjson_feed(&nd, p + b, n - b, on_line, s);
  if (!rc) rc = asbi_ndjson_finish(&nd, on_line, s);
  asbi_ndjson_free(&nd);
  return rc;
}

TEST(every_split) {
  size_t n = strlen(SAMPLE);
  int fails = 0;
  for (size_t a = 0; a <= n; a++) {
    for (size_t b = a; b <= n; b++) {
      sink s;
      sink_init(&s);
      int rc = run_split(SAMPLE, n, a, b, 0, &s);
      if (rc != 0 || strcmp(s.log.data, EXPECT) != 0 || s.bad) fails++;
      asbi_buf_free(&s.log);
    }
  }
  CHECK_INT(fails, 0);
  /* byte by byte */
  sink s;
  sink_init(&s);
  asbi_ndjson nd;
  asbi_ndjson_init(&nd, 0);
  for (size_t i = 0; i < n; i++) CHECK_INT(asbi_ndjson_feed(&nd, SAMPLE + i, 1, on_line, &s), 0);
  CHECK_INT(s.count, 3); /* the last line waits for finish */
  CHECK_INT(asbi_ndjson_finish(&nd, on_line, &s), 0);
  CHECK_STR(s.log.data, EXPECT);
  asbi_ndjson_free(&nd);
  asbi_buf_free(&s.log);
}

TEST(finish_edge_cases) {
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"", ""},          {"\n", ""},          {"\r\n", ""},
      {"\r", ""},        {"a", "a|"},         {"a\r", "a|"},
      {"a\n", "a|"},     {"a\r\n", "a|"},     {"a\r\rb\n", "a\r\rb|"},
      {"\ra\n", "\ra|"}, {"a\rb", "a\rb|"},   {"\n\n\na\n\n", "a|"},
      {" \n", " |"},     {"a\r\r\n", "a\r|"},
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(cases); i++) {
    sink s;
    sink_init(&s);
    asbi_ndjson nd;
    asbi_ndjson_init(&nd, 0);
    CHECK_INT(asbi_ndjson_feed(&nd, cases[i].in, strlen(cases[i].in), on_line, &s), 0);
    CHECK_INT(asbi_ndjson_finish(&nd, on_line, &s), 0);
    if (strcmp(s.log.data, cases[i].out) != 0) ASBT_FAIL("case %zu: got \"%s\"", i, s.log.data);
    /* finish again is harmless */
    CHECK_INT(asbi_ndjson_finish(&nd, on_line, &s), 0);
    CHECK_STR(s.log.data, cases[i].out);
    asbi_ndjson_free(&nd);
    asbi_buf_free(&s.log);
  }
}

TEST(embedded_nul) {
  sink s;
  sink_init(&s);
  asbi_ndjson nd;
  asbi_ndjson_init(&nd, 0);
  CHECK_INT(asbi_ndjson_feed(&nd, "a\0b\n", 4, on_line, &s), 0);
  CHECK_MEM(s.log.data, s.log.len, "a\0b|", 4);
  asbi_ndjson_free(&nd);
  asbi_buf_free(&s.log);
}

TEST(max_line) {
  /* Exactly max passes, with LF, CRLF or at EOF. */
  const char *ok[] = {"12345\n", "12345\r\n", "12345", "12345\r", "1\n12345\n"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(ok); i++) {
    size_t n = strlen(ok[i]);
    for (size_t a = 0; a <= n; a++) {
      sink s;
      sink_init(&s);
      if (run_split(ok[i], n, a, a, 5, &s) != 0) ASBT_FAIL("ok[%zu] split %zu failed", i, a);
      asbi_buf_free(&s.log);
    }
  }
  /* max + 1 fails at every split, and nothing of the long line is
   * delivered. */
  const char *bad[] = {"123456\n",   "123456\r\n",  "123456",
                       "12345\r6\n", "12345\r\r\n", "1\n123456\n2\n"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(bad); i++) {
    size_t n = strlen(bad[i]);
    for (size_t a = 0; a <= n; a++) {
      sink s;
      sink_init(&s);
      int rc = run_split(bad[i], n, a, a, 5, &s);
      if (rc != ASBI_NDJSON_ETOOLONG) ASBT_FAIL("bad[%zu] split %zu: %d", i, a, rc);
      if (strstr(s.log.data, "12345")) ASBT_FAIL("bad[%zu] delivered the long line", i);
      asbi_buf_free(&s.log);
    }
  }
  /* The buffer never grows far past the bound. */
  asbi_ndjson nd;
  asbi_ndjson_init(&nd, 100);
  char *big = malloc(1 << 20);
  memset(big, 'x', 1 << 20);
  CHECK_INT(asbi_ndjson_feed(&nd, big, 1 << 20, NULL, NULL), ASBI_NDJSON_ETOOLONG);
  CHECK(nd.line.cap <= 256);
  /* sticky */
  CHECK_INT(asbi_ndjson_feed(&nd, "\n", 1, NULL, NULL), ASBI_NDJSON_ETOOLONG);
  CHECK_INT(asbi_ndjson_finish(&nd, NULL, NULL), ASBI_NDJSON_ETOOLONG);
  asbi_ndjson_free(&nd);
  free(big);
  /* Default bound. */
  asbi_ndjson_init(&nd, 0);
  CHECK_INT(nd.max_line, ASBI_NDJSON_DEFAULT_MAX);
  asbi_ndjson_free(&nd);
}

TEST(callback_stop) {
  sink s;
  sink_init(&s);
  s.stop_at = 2;
  s.stop_rc = 9;
  asbi_ndjson nd;
  asbi_ndjson_init(&nd, 0);
  CHECK_INT(asbi_ndjson_feed(&nd, SAMPLE, strlen(SAMPLE), on_line, &s), 9);
  CHECK_INT(s.count, 2);
  CHECK_INT(asbi_ndjson_feed(&nd, "x\n", 2, on_line, &s), 9);
  CHECK_INT(asbi_ndjson_finish(&nd, on_line, &s), 9);
  CHECK_INT(s.count, 2);
  asbi_ndjson_free(&nd);
  asbi_buf_free(&s.log);
  /* A stop from the last line delivered by finish. */
  sink_init(&s);
  s.stop_at = 1;
  s.stop_rc = -3;
  asbi_ndjson_init(&nd, 0);
  CHECK_INT(asbi_ndjson_feed(&nd, "tail", 4, on_line, &s), 0);
  CHECK_INT(asbi_ndjson_finish(&nd, on_line, &s), -3);
  asbi_ndjson_free(&nd);
  asbi_buf_free(&s.log);
}

/* Splitter + strict JSON: malformed lines are caught one by one. */
typedef struct judge {
  int good, bad;
} judge;

static int on_json(void *ud, const char *line, size_t len) {
  judge *j = ud;
  cJSON *v = asbi_pj_parse(line, len, NULL);
  if (v && cJSON_IsObject(v))
    j->good++;
  else
    j->bad++;
  cJSON_Delete(v);
  return 0;
}

TEST(malformed_lines) {
  static const char stream[] =
      "{\"type\":\"stdout\",\"text\":\"ok\"}\n"
      "{\"type\":\"stdout\",\"text\":\"unterminated}\n"
      "{\"type\":\"stdout\"}{\"type\":\"stderr\"}\n" /* two values on a line */
      "[1,2\n"
      "3]\n"
      "\xff\xfe\n"
      "{\"a\":\"\x00\"}\n"
      "{\"type\":\"end_of_execution\"}\r\n"
      "{\"type\":\"x\"} \t\n";
  judge j = {0, 0};
  asbi_ndjson nd;
  asbi_ndjson_init(&nd, 0);
  CHECK_INT(asbi_ndjson_feed(&nd, stream, sizeof stream - 1, on_json, &j), 0);
  CHECK_INT(asbi_ndjson_finish(&nd, on_json, &j), 0);
  CHECK_INT(j.good, 3);
  CHECK_INT(j.bad, 6);
  asbi_ndjson_free(&nd);
}

TEST(large_lines_release_memory) {
  asbi_ndjson nd;
  asbi_ndjson_init(&nd, 0);
  size_t n = 1u << 20;
  char *big = malloc(n + 1);
  memset(big, 'y', n);
  big[n] = '\n';
  sink s;
  sink_init(&s);
  CHECK_INT(asbi_ndjson_feed(&nd, big, n + 1, on_line, &s), 0);
  CHECK_INT(s.count, 1);
  CHECK_INT(s.log.len, n + 1);
  CHECK(nd.line.cap < 1024 * 1024); /* the big buffer was released */
  CHECK_INT(asbi_ndjson_feed(&nd, "z\n", 2, on_line, &s), 0);
  CHECK_INT(s.count, 2);
  asbi_ndjson_free(&nd);
  asbi_buf_free(&s.log);
  free(big);
}

int main(void) {
  RUN(every_split);
  RUN(finish_edge_cases);
  RUN(embedded_nul);
  RUN(max_line);
  RUN(callback_stop);
  RUN(malformed_lines);
  RUN(large_lines_release_memory);
  TEST_MAIN_END();
}
