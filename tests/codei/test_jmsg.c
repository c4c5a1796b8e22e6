/* The Jupyter wire codec (signing, building, parsing), the NDJSON line
 * builders and the output queue. SPDX-License-Identifier: Apache-2.0 */
#include <cjson/cJSON.h>
#include <unistd.h>

#include "jmsg.h"
#include "ndout.h"
#include "proto/pjson.h"
#include "queue.h"
#include "testing.h"

static ci_frame fr(const char *s) {
  return (ci_frame){s, strlen(s)};
}

TEST(hmac_rfc4231_case2) {
  ci_hmac *h = NULL;
  REQUIRE(ci_hmac_new(&h, "Jefe", 4) == 0);
  /* the data split over the four parts, as the protocol signs them */
  ci_frame parts[4] = {fr("what do ya"), fr(" want "), fr(""), fr("for nothing?")};
  char sig[65];
  REQUIRE(ci_hmac_sign(h, parts, sig) == 0);
  CHECK_STR(sig, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  ci_hmac_free(h);
  REQUIRE(ci_hmac_new(&h, "", 0) == 0);
  REQUIRE(ci_hmac_sign(h, parts, sig) == 0);
  CHECK_STR(sig, "");
  ci_hmac_free(h);
}

/* Frames of a built message, copied to writable buffers (parsing edits). */
typedef struct msg {
  char *bufs[8];
  ci_frame f[8];
  size_t n;
} msg;

static void msg_add(msg *m, const void *p, size_t n) {
  m->bufs[m->n] = malloc(n + 1);
  memcpy(m->bufs[m->n], p, n);
  m->f[m->n] = (ci_frame){m->bufs[m->n], n};
  m->n++;
}

static void msg_free(msg *m) {
  for (size_t i = 0; i < m->n; i++) free(m->bufs[i]);
  m->n = 0;
}

static void build(msg *m, ci_hmac *h, const char *type, const char *content, int with_id) {
  memset(m, 0, sizeof *m);
  if (with_id) msg_add(m, "routing-id", 10);
  ci_jout o;
  if (ci_jmsg_build(h, "0123456789abcdef0123456789abcdef", type, content, &o) != 0) return;
  for (int i = 0; i < 6; i++) msg_add(m, o.frames[i].data, o.frames[i].len);
  ci_jout_free(&o);
}

TEST(build_parse_round_trip) {
  ci_hmac *h = NULL;
  REQUIRE(ci_hmac_new(&h, "secret", 6) == 0);
  msg m;
  build(&m, h, "execute_request", "{\"code\":\"1+1\",\"silent\":false}", 1);
  REQUIRE(m.n == 7);
  ci_jmsg j;
  REQUIRE(ci_jmsg_parse(h, m.f, m.n, &j) == CI_JMSG_OK);
  CHECK_STR(j.msg_type, "execute_request");
  CHECK_INT(strlen(j.msg_id), 32);
  CHECK(j.parent_id == NULL);
  CHECK(j.date != NULL);
  CHECK_INT(j.nids, 1);
  CHECK_INT(j.nbuffers, 0);
  CHECK_STR(cJSON_GetObjectItem(j.content, "code")->valuestring, "1+1");
  CHECK_STR(cJSON_GetObjectItem(j.header, "version")->valuestring, "5.3");
  ci_jmsg_free(&j);
  /* a wrong key, a changed byte, a missing signature */
  ci_hmac *other = NULL;
  REQUIRE(ci_hmac_new(&other, "Secret", 6) == 0);
  CHECK_INT(ci_jmsg_parse(other, m.f, m.n, &j), CI_JMSG_ESIG);
  ci_hmac_free(other);
  m.bufs[6][2] ^= 1;
  CHECK_INT(ci_jmsg_parse(h, m.f, m.n, &j), CI_JMSG_ESIG);
  m.bufs[6][2] ^= 1;
  m.f[2].len = 0;
  CHECK_INT(ci_jmsg_parse(h, m.f, m.n, &j), CI_JMSG_ESIG);
  msg_free(&m);
  /* without the delimiter; too few frames */
  build(&m, h, "status", "{}", 0);
  CHECK_INT(ci_jmsg_parse(h, m.f + 1, m.n - 1, &j), CI_JMSG_ENODELIM);
  CHECK_INT(ci_jmsg_parse(h, m.f, 5, &j), CI_JMSG_ESHORT);
  msg_free(&m);
  ci_hmac_free(h);
}

TEST(parse_rejects_bad_parts_and_defuses_nul) {
  ci_hmac *h = NULL;
  REQUIRE(ci_hmac_new(&h, "", 0) == 0); /* unsigned: any signature */
  msg m;
  memset(&m, 0, sizeof m);
  const char *hdr = "{\"msg_id\":\"a\",\"msg_type\":\"stream\",\"date\":\"d\"}";
  const char *parent = "{\"msg_id\":\"p\"}";
  const char *content = "{\"name\":\"stdout\",\"text\":\"a\\u0000b\\\\u0000\"}";
  msg_add(&m, "<IDS|MSG>", 9);
  msg_add(&m, "", 0);
  msg_add(&m, hdr, strlen(hdr));
  msg_add(&m, parent, strlen(parent));
  msg_add(&m, "{}", 2);
  msg_add(&m, content, strlen(content));
  msg_add(&m, "binary", 6);
  ci_jmsg j;
  REQUIRE(ci_jmsg_parse(h, m.f, m.n, &j) == CI_JMSG_OK);
  CHECK_STR(j.parent_id, "p");
  CHECK_INT(j.nbuffers, 1);
  /* U+FFFD for the NUL; the escaped backslash kept as it was */
  CHECK_STR(cJSON_GetObjectItem(j.content, "text")->valuestring,
            "a\xEF\xBF\xBD"
            "b\\u0000");
  ci_jmsg_free(&j);
  msg_free(&m);
  const char *bad[][4] = {
      {"[]", "{}", "{}", "{}"},
      {"{\"msg_id\":\"a\"}", "{}", "{}", "{}"},
      {"{\"msg_id\":\"a\",\"msg_type\":\"x\"}", "{}", "{}", "not json"},
      {"{\"msg_id\":\"a\",\"msg_type\":\"x\"}", "{}", "{}", "{\"a\":\"\xff\"}"},
  };
  int want[] = {CI_JMSG_EJSON, CI_JMSG_EFIELD, CI_JMSG_EJSON, CI_JMSG_EJSON};
  for (size_t i = 0; i < 4; i++) {
    memset(&m, 0, sizeof m);
    msg_add(&m, "<IDS|MSG>", 9);
    msg_add(&m, "", 0);
    for (int k = 0; k < 4; k++) msg_add(&m, bad[i][k], strlen(bad[i][k]));
    CHECK_INT(ci_jmsg_parse(h, m.f, m.n, &j), want[i]);
    msg_free(&m);
  }
  ci_hmac_free(h);
}

TEST(lazy_content_and_member_body) {
  ci_hmac *h = NULL;
  REQUIRE(ci_hmac_new(&h, "k", 1) == 0);
  msg m;
  build(&m, h, "stream",
        "{ \"name\" : \"stderr\", \"x\": {\"a\": [1, \"}\"]}, \"text\": \"hi \\\"there\\\"\\n\" }",
        0);
  ci_jmsg j;
  REQUIRE(ci_jmsg_parse_lazy(h, m.f, m.n, 10, &j) == CI_JMSG_OK);
  CHECK(j.content == NULL);
  REQUIRE(j.raw_content.data != NULL);
  const char *body;
  size_t len;
  REQUIRE(ci_json_member_body(j.raw_content.data, j.raw_content.len, "text", &body, &len) == 0);
  CHECK_MEM(body, len, "hi \\\"there\\\"\\n", 14);
  REQUIRE(ci_json_member_body(j.raw_content.data, j.raw_content.len, "name", &body, &len) == 0);
  CHECK_MEM(body, len, "stderr", 6);
  CHECK(ci_json_member_body(j.raw_content.data, j.raw_content.len, "x", &body, &len) == -1);
  CHECK(ci_json_member_body(j.raw_content.data, j.raw_content.len, "nope", &body, &len) == -1);
  REQUIRE(ci_jmsg_content(&j) == CI_JMSG_OK);
  CHECK_STR(cJSON_GetObjectItem(j.content, "text")->valuestring, "hi \"there\"\n");
  ci_jmsg_free(&j);
  msg_free(&m);
  ci_hmac_free(h);
  CHECK(ci_json_member_body("[]", 2, "a", &body, &len) == -1);
  CHECK(ci_json_member_body("{\"a\":", 5, "a", &body, &len) == -1);
  CHECK(ci_json_member_body("{\"a\":\"x", 7, "a", &body, &len) == -1);
}

/* ---- NDJSON lines ------------------------------------------------------------ */

static cJSON *line_json(const asbi_buf *b) {
  if (!b->len || b->data[b->len - 1] != '\n') return NULL;
  return asbi_pj_parse(b->data, b->len - 1, NULL);
}

TEST(result_mapping_as_e2b) {
  cJSON *bundle = cJSON_Parse(
      "{\"text/plain\":\"'quoted'\",\"text/html\":\"<b>\",\"image/png\":\"iVBOR\","
      "\"application/json\":{\"a\":1},\"e2b/chart\":{\"type\":\"line\"},"
      "\"application/x-thing\":\"t\",\"text/latex\":null}");
  asbi_buf b = ASBI_BUF_INIT;
  REQUIRE(ci_out_result(&b, bundle, 1) == 0);
  CHECK_STR(b.data,
            "{\"type\":\"result\",\"text\":\"quoted\",\"html\":\"<b>\",\"png\":\"iVBOR\","
            "\"json\":{\"a\":1},\"chart\":{\"type\":\"line\"},"
            "\"extra\":{\"application/x-thing\":\"t\"},\"is_main_result\":true}\n");
  cJSON_Delete(bundle);
  asbi_buf_clear(&b);
  bundle = cJSON_Parse("{\"text/plain\":\"'\"}");
  REQUIRE(ci_out_result(&b, bundle, 0) == 0);
  CHECK_STR(b.data, "{\"type\":\"result\",\"text\":\"\",\"extra\":{},\"is_main_result\":false}\n");
  cJSON_Delete(bundle);
  asbi_buf_clear(&b);
  REQUIRE(ci_out_error(&b, "E", "v\n", NULL) == 0);
  CHECK_STR(b.data, "{\"type\":\"error\",\"name\":\"E\",\"value\":\"v\\n\",\"traceback\":\"\"}\n");
  asbi_buf_clear(&b);
  REQUIRE(ci_out_count(&b, 7) == 0 && ci_out_type(&b, "end_of_execution") == 0);
  CHECK_STR(b.data,
            "{\"type\":\"number_of_executions\",\"execution_count\":7}\n"
            "{\"type\":\"end_of_execution\"}\n");
  asbi_buf_free(&b);
}

TEST(json_strings_are_always_valid) {
  asbi_buf b = ASBI_BUF_INIT;
  const char raw[] = "a\"\\\n\x01\x7f\xc3\xa9\xff\xe2\x82";
  REQUIRE(ci_out_json_str(&b, raw, sizeof raw - 1) == 0);
  CHECK_STR(b.data, "\"a\\\"\\\\\\n\\u0001\x7f\xc3\xa9\\ufffd\\ufffd\\ufffd\"");
  cJSON *j = asbi_pj_parse(b.data, b.len, NULL);
  CHECK(cJSON_IsString(j));
  cJSON_Delete(j);
  asbi_buf_free(&b);
  CHECK(ci_json_body_valid("plain \\n \\u00e9 \\ud83d\\ude00 \xc3\xa9", 31));
  CHECK(!ci_json_body_valid("\\ud83d", 6));
  CHECK(!ci_json_body_valid("\\ude00", 6));
  CHECK(!ci_json_body_valid("\\x", 2));
  CHECK(!ci_json_body_valid("\\u12", 4));
  CHECK(!ci_json_body_valid("a\"b", 3));
  CHECK(!ci_json_body_valid("\x01", 1));
  CHECK(!ci_json_body_valid("\xff", 1));
  CHECK(!ci_json_body_valid("\\", 1));
}

/* Split text into lines and check each line is valid JSON and the pieces
 * put back together give the text. */
static void split_check(const char *text, size_t n, int escaped, const char *want_joined,
                        size_t want_len, size_t *lines) {
  asbi_buf joined = ASBI_BUF_INIT;
  size_t off = 0;
  *lines = 0;
  do {
    asbi_buf b = ASBI_BUF_INIT;
    size_t k = ci_out_stream_line(&b, 1, text + off, n - off, "ts", escaped);
    REQUIRE(k > 0);
    cJSON *j = line_json(&b);
    REQUIRE(j != NULL);
    CHECK_STR(cJSON_GetObjectItem(j, "type")->valuestring, "stderr");
    CHECK_STR(cJSON_GetObjectItem(j, "timestamp")->valuestring, "ts");
    const char *t = cJSON_GetObjectItem(j, "text")->valuestring;
    asbi_buf_puts(&joined, t);
    cJSON_Delete(j);
    asbi_buf_free(&b);
    off += k;
    (*lines)++;
  } while (off < n);
  CHECK_MEM(joined.data, joined.len, want_joined, want_len);
  asbi_buf_free(&joined);
}

TEST(stream_lines_split_at_character_boundaries) {
  /* plain text: 1 MiB + a bit, with a 3-byte character across the cut */
  size_t n = CI_OUT_MAX_TEXT + 10;
  char *t = malloc(n + 1);
  memset(t, 'a', n);
  memcpy(t + CI_OUT_MAX_TEXT - 1, "\xe2\x82\xac", 3);
  size_t lines = 0;
  split_check(t, n, 0, t, n, &lines);
  CHECK_INT(lines, 2);
  /* escaped text: a surrogate pair across the cut stays whole */
  size_t en = CI_OUT_MAX_TEXT + 20;
  char *e = malloc(en + 1);
  memset(e, 'b', en);
  memcpy(e + CI_OUT_MAX_TEXT - 4, "\\ud83d\\ude00", 12);
  REQUIRE(ci_json_body_valid(e, en));
  char *want = malloc(en);
  memset(want, 'b', en);
  memcpy(want + CI_OUT_MAX_TEXT - 4, "\xf0\x9f\x98\x80", 4);
  split_check(e, en, 1, want, en - 8, &lines);
  CHECK_INT(lines, 2);
  free(t);
  free(e);
  free(want);
  asbi_buf b = ASBI_BUF_INIT;
  REQUIRE(ci_out_stream(&b, 0, "", 0, "ts") == 0);
  CHECK_STR(b.data, "{\"type\":\"stdout\",\"text\":\"\",\"timestamp\":\"ts\"}\n");
  asbi_buf_free(&b);
}

/* ---- the output queue ----------------------------------------------------------- */

static size_t drain(ci_queue *q, asbi_buf *out, int *closed) {
  char buf[1000];
  long n;
  size_t got = 0;
  while ((n = ci_queue_pop(q, buf, sizeof buf, closed)) > 0) {
    asbi_buf_append(out, buf, (size_t)n);
    got += (size_t)n;
  }
  return got;
}

TEST(queue_spools_beyond_memory_in_order) {
  ci_queue q;
  REQUIRE(ci_queue_init(&q, 100) == 0);
  asbi_buf want = ASBI_BUF_INIT, got = ASBI_BUF_INIT;
  char line[64];
  int closed = 0;
  for (int i = 0; i < 50; i++) {
    int n = snprintf(line, sizeof line, "line %d\n", i);
    REQUIRE(ci_queue_push(&q, line, (size_t)n) == 0);
    asbi_buf_append(&want, line, (size_t)n);
    if (i == 20) {
      CHECK(ci_queue_busy(&q));
      /* part of it read in between */
      char buf[30];
      int cl;
      long k = ci_queue_pop(&q, buf, sizeof buf, &cl);
      REQUIRE(k == 30);
      asbi_buf_append(&got, buf, 30);
    }
  }
  CHECK(q.spilled > 0);
  CHECK(q.mem.len - q.mem_off <= 100);
  drain(&q, &got, &closed);
  CHECK(!closed);
  CHECK_MEM(got.data, got.len, want.data, want.len);
  /* drained: memory again, then the end */
  CHECK(!ci_queue_busy(&q));
  REQUIRE(ci_queue_push(&q, "tail\n", 5) == 0);
  ci_queue_close(&q);
  asbi_buf_clear(&got);
  drain(&q, &got, &closed);
  CHECK_STR(got.data, "tail\n");
  CHECK(closed);
  CHECK_INT(q.lost, 0);
  ci_queue_destroy(&q);
  asbi_buf_free(&want);
  asbi_buf_free(&got);
}

TEST(queue_abandoned_discards_and_wakes_producer) {
  ci_queue q;
  REQUIRE(ci_queue_init(&q, 10) == 0);
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0);
  q.producer_fd = pipefd[1];
  REQUIRE(ci_queue_push(&q, "0123456789", 10) == 0);
  CHECK(ci_queue_busy(&q));
  char buf[16];
  int closed;
  CHECK_INT(ci_queue_pop(&q, buf, sizeof buf, &closed), 10);
  uint64_t v = 0;
  CHECK_INT(read(pipefd[0], &v, sizeof v), 8); /* woken: room again */
  ci_queue_abandon(&q);
  REQUIRE(ci_queue_push(&q, "more", 4) == 0);
  CHECK_INT(ci_queue_pop(&q, buf, sizeof buf, &closed), 0);
  close(pipefd[0]);
  close(pipefd[1]);
  ci_queue_destroy(&q);
}

int main(void) {
  RUN(hmac_rfc4231_case2);
  RUN(build_parse_round_trip);
  RUN(parse_rejects_bad_parts_and_defuses_nul);
  RUN(lazy_content_and_member_body);
  RUN(result_mapping_as_e2b);
  RUN(json_strings_are_always_valid);
  RUN(stream_lines_split_at_character_boundaries);
  RUN(queue_spools_beyond_memory_in_order);
  RUN(queue_abandoned_discards_and_wakes_producer);
  TEST_MAIN_END();
}
