/* Unit tests for core/proto/connect: envelopes, end-stream and error JSON,
 * code tables. SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>

#include "proto/connect.h"
#include "testing.h"
#include "util/util.h"

/* Collects every delivered envelope as "<flags>:<payload>\n" so whole runs
 * can be compared with one string compare. */
typedef struct sink {
  asbi_buf log;
  int count;
  int stop_at; /* return stop_rc on this message (1-based), 0 = never */
  int stop_rc;
  int bad_nul;
} sink;

static int on_msg(void *ud, unsigned flags, const char *data, size_t len) {
  sink *s = ud;
  s->count++;
  if (data[len] != '\0') s->bad_nul = 1;
  asbi_buf_printf(&s->log, "%u:", flags);
  asbi_buf_append(&s->log, data, len);
  asbi_buf_putc(&s->log, '\n');
  if (s->stop_at && s->count == s->stop_at) return s->stop_rc;
  return 0;
}

static void sink_init(sink *s) {
  memset(s, 0, sizeof *s);
  asbi_buf_init(&s->log, 0);
}

/* A representative server stream: start, data with an empty message between,
 * a large-ish message, then the end-stream envelope. */
static void sample_stream(asbi_buf *out, const char **expect) {
  static char big[700];
  memset(big, 'x', sizeof big - 1);
  big[0] = '"';
  big[sizeof big - 2] = '"';
  big[sizeof big - 1] = '\0';
  const char *m1 = "{\"event\":{\"start\":{\"pid\":42}}}";
  const char *m3 = "{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}";
  asbi_connect_encode(out, 0, m1, strlen(m1));
  asbi_connect_encode(out, 0, "", 0);
  asbi_connect_encode(out, 0, m3, strlen(m3));
  asbi_connect_encode(out, 0, big, strlen(big));
  asbi_connect_encode(out, 2, "{}", 2);
  static asbi_buf exp = ASBI_BUF_INIT;
  if (!exp.data) {
    asbi_buf_puts(&exp, "0:{\"event\":{\"start\":{\"pid\":42}}}\n0:\n");
    asbi_buf_puts(&exp, "0:{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}\n0:");
    asbi_buf_puts(&exp, big);
    asbi_buf_puts(&exp, "\n2:{}\n");
  }
  *expect = exp.data;
}

TEST(encode_layout) {
  asbi_buf b = ASBI_BUF_INIT;
  CHECK_INT(asbi_connect_encode(&b, 2, "{}", 2), 0);
  CHECK_MEM(b.data, b.len, "\x02\x00\x00\x00\x02{}", 7);
  asbi_buf_clear(&b);
  CHECK_INT(asbi_connect_encode(&b, 0, NULL, 0), 0);
  CHECK_MEM(b.data, b.len, "\x00\x00\x00\x00\x00", 5);
  CHECK_INT(asbi_connect_encode(&b, 0x100, "x", 1), -1);
  CHECK_INT(b.len, 5);
  asbi_buf_free(&b);
  /* A bounded buffer too small for the envelope is left unchanged. */
  asbi_buf small;
  asbi_buf_init(&small, 6);
  CHECK_INT(asbi_connect_encode(&small, 0, "ab", 2), -1);
  CHECK_INT(small.len, 0);
  asbi_buf_free(&small);
}

TEST(length_big_endian) {
  asbi_buf b = ASBI_BUF_INIT;
  char *m = malloc(0x010203);
  memset(m, 'a', 0x010203);
  CHECK_INT(asbi_connect_encode(&b, 0, m, 0x010203), 0);
  CHECK_MEM(b.data, 5, "\x00\x00\x01\x02\x03", 5);
  sink s;
  sink_init(&s);
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, 0);
  CHECK_INT(asbi_connect_dec_feed(&d, b.data, b.len, on_msg, &s), 0);
  CHECK_INT(s.count, 1);
  CHECK_INT(s.log.len, 2 + 0x010203 + 1);
  CHECK_INT(asbi_connect_dec_finish(&d), ASBI_CONNECT_ENOEND);
  asbi_connect_dec_free(&d);
  asbi_buf_free(&s.log);
  asbi_buf_free(&b);
  free(m);
}

static void decode_chunks(const char *p, size_t n, const size_t *cuts, size_t ncuts, sink *s,
                          int *feed_rc, int *fin_rc) {
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, 0);
  size_t at = 0;
  *feed_rc = 0;
  for (size_t k = 0; k <= ncuts && *feed_rc == 0; k++) {
    size_t end = k < ncuts ? cuts[k] : n;
    *feed_rc = asbi_connect_dec_feed(&d, p + at, end - at, on_msg, s);
    at = end;
  }
  *fin_rc = asbi_connect_dec_finish(&d);
  asbi_connect_dec_free(&d);
}

TEST(every_split) {
  asbi_buf b = ASBI_BUF_INIT;
  const char *expect;
  sample_stream(&b, &expect);
  int frc, rc;
  /* whole buffer */
  sink s;
  sink_init(&s);
  decode_chunks(b.data, b.len, NULL, 0, &s, &frc, &rc);
  CHECK_INT(frc, 0);
  CHECK_INT(rc, 0);
  CHECK_STR(s.log.data, expect);
  CHECK(!s.bad_nul);
  asbi_buf_free(&s.log);
  /* byte by byte */
  sink_init(&s);
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, 0);
  for (size_t i = 0; i < b.len; i++)
    CHECK_INT(asbi_connect_dec_feed(&d, b.data + i, 1, on_msg, &s), 0);
  CHECK_INT(asbi_connect_dec_finish(&d), 0);
  CHECK_STR(s.log.data, expect);
  asbi_connect_dec_free(&d);
  asbi_buf_free(&s.log);
  /* every single split point, and every pair of split points */
  int fails = 0;
  for (size_t i = 0; i <= b.len; i++) {
    for (size_t j = i; j <= b.len; j += (i < 64 ? 1 : 29)) {
      size_t cuts[2] = {i, j};
      sink_init(&s);
      decode_chunks(b.data, b.len, cuts, 2, &s, &frc, &rc);
      if (frc != 0 || rc != 0 || strcmp(s.log.data, expect) != 0 || s.bad_nul) fails++;
      asbi_buf_free(&s.log);
    }
  }
  CHECK_INT(fails, 0);
  /* zero-length feeds change nothing */
  asbi_connect_dec_init(&d, 0);
  sink_init(&s);
  CHECK_INT(asbi_connect_dec_feed(&d, NULL, 0, on_msg, &s), 0);
  CHECK_INT(asbi_connect_dec_feed(&d, b.data, b.len, on_msg, &s), 0);
  CHECK_INT(asbi_connect_dec_feed(&d, NULL, 0, on_msg, &s), 0);
  CHECK_INT(asbi_connect_dec_finish(&d), 0);
  CHECK_STR(s.log.data, expect);
  asbi_connect_dec_free(&d);
  asbi_buf_free(&s.log);
  asbi_buf_free(&b);
}

TEST(truncated) {
  asbi_buf b = ASBI_BUF_INIT;
  const char *expect;
  sample_stream(&b, &expect);
  /* Envelope boundaries of the sample: prefixes ending there are complete
   * envelopes without an end-stream (ENOEND); any other prefix is cut
   * inside an envelope (ETRUNCATED). */
  size_t bounds[8], nb = 0, at = 0;
  while (at < b.len) {
    uint32_t l = (uint32_t)(unsigned char)b.data[at + 1] << 24 |
                 (uint32_t)(unsigned char)b.data[at + 2] << 16 |
                 (uint32_t)(unsigned char)b.data[at + 3] << 8 | (unsigned char)b.data[at + 4];
    at += 5 + l;
    bounds[nb++] = at;
  }
  CHECK_INT(nb, 5);
  for (size_t n = 0; n < b.len; n++) {
    int at_bound = n == 0;
    for (size_t k = 0; k < nb; k++) at_bound |= bounds[k] == n;
    asbi_connect_dec d;
    asbi_connect_dec_init(&d, 0);
    CHECK_INT(asbi_connect_dec_feed(&d, b.data, n, NULL, NULL), 0);
    int rc = asbi_connect_dec_finish(&d);
    if (rc != (at_bound ? ASBI_CONNECT_ENOEND : ASBI_CONNECT_ETRUNCATED))
      ASBT_FAIL("prefix %zu: finish gave %d", n, rc);
    asbi_connect_dec_free(&d);
  }
  asbi_buf_free(&b);
}

TEST(huge_length_rejected_before_alloc) {
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, 0);
  CHECK_INT(d.max_msg, ASBI_CONNECT_DEFAULT_MAX);
  /* Header split so the length arrives in pieces. */
  CHECK_INT(asbi_connect_dec_feed(&d, "\x00\xff\xff", 3, NULL, NULL), 0);
  CHECK_INT(asbi_connect_dec_feed(&d, "\xff\xff", 2, NULL, NULL), ASBI_CONNECT_ETOOBIG);
  CHECK_INT(d.msg.cap, 0); /* nothing was allocated for the body */
  /* Failure is sticky. */
  CHECK_INT(asbi_connect_dec_feed(&d, "{}", 2, NULL, NULL), ASBI_CONNECT_ETOOBIG);
  CHECK_INT(asbi_connect_dec_finish(&d), ASBI_CONNECT_ETOOBIG);
  asbi_connect_dec_free(&d);

  /* A custom bound: exactly max passes, max+1 fails. */
  asbi_connect_dec_init(&d, 4);
  sink s;
  sink_init(&s);
  CHECK_INT(asbi_connect_dec_feed(&d,
                                  "\x00\x00\x00\x00\x04"
                                  "abcd",
                                  9, on_msg, &s),
            0);
  CHECK_INT(asbi_connect_dec_feed(&d, "\x02\x00\x00\x00\x05", 5, on_msg, &s), ASBI_CONNECT_ETOOBIG);
  CHECK_STR(s.log.data, "0:abcd\n");
  asbi_connect_dec_free(&d);
  asbi_buf_free(&s.log);

  /* A large declared length that is allowed does not allocate it up front:
   * only what arrived is buffered. */
  asbi_connect_dec_init(&d, 0);
  CHECK_INT(asbi_connect_dec_feed(&d,
                                  "\x00\x00\xff\xff\xff"
                                  "abc",
                                  8, NULL, NULL),
            0);
  CHECK(d.msg.cap < 4096);
  CHECK_INT(asbi_connect_dec_finish(&d), ASBI_CONNECT_ETRUNCATED);
  asbi_connect_dec_free(&d);
}

TEST(flags) {
  struct {
    const char *bytes;
    int rc;
  } cases[] = {
      {"\x01\x00\x00\x00\x02{}", ASBI_CONNECT_ECOMPRESSED},
      {"\x03\x00\x00\x00\x02{}", ASBI_CONNECT_ECOMPRESSED},
      {"\x04\x00\x00\x00\x02{}", ASBI_CONNECT_EFLAGS},
      {"\x80\x00\x00\x00\x02{}", ASBI_CONNECT_EFLAGS},
      {"\x06\x00\x00\x00\x02{}", ASBI_CONNECT_EFLAGS},
      {"\xff\x00\x00\x00\x02{}", ASBI_CONNECT_ECOMPRESSED},
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(cases); i++) {
    asbi_connect_dec d;
    asbi_connect_dec_init(&d, 0);
    sink s;
    sink_init(&s);
    CHECK_INT(asbi_connect_dec_feed(&d, cases[i].bytes, 7, on_msg, &s), cases[i].rc);
    CHECK_INT(s.count, 0);
    CHECK_INT(asbi_connect_dec_feed(&d, "", 0, on_msg, &s), cases[i].rc);
    asbi_connect_dec_free(&d);
    asbi_buf_free(&s.log);
  }
}

TEST(data_after_end) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_connect_encode(&b, 2, "{}", 2);
  asbi_connect_encode(&b, 0, "{}", 2);
  /* In one chunk ... */
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, 0);
  sink s;
  sink_init(&s);
  CHECK_INT(asbi_connect_dec_feed(&d, b.data, b.len, on_msg, &s), ASBI_CONNECT_EAFTEREND);
  CHECK_STR(s.log.data, "2:{}\n");
  CHECK_INT(asbi_connect_dec_finish(&d), ASBI_CONNECT_EAFTEREND);
  asbi_connect_dec_free(&d);
  asbi_buf_free(&s.log);
  /* ... and with the extra byte in a later chunk. */
  asbi_connect_dec_init(&d, 0);
  CHECK_INT(asbi_connect_dec_feed(&d, b.data, 7, NULL, NULL), 0);
  CHECK_INT(asbi_connect_dec_finish(&d), 0);
  CHECK_INT(asbi_connect_dec_feed(&d, b.data + 7, 1, NULL, NULL), ASBI_CONNECT_EAFTEREND);
  CHECK_INT(asbi_connect_dec_feed(&d, b.data + 8, 1, NULL, NULL), ASBI_CONNECT_EAFTEREND);
  asbi_connect_dec_free(&d);
  asbi_buf_free(&b);
}

TEST(callback_stops) {
  asbi_buf b = ASBI_BUF_INIT;
  const char *expect;
  sample_stream(&b, &expect);
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, 0);
  sink s;
  sink_init(&s);
  s.stop_at = 2;
  s.stop_rc = 77;
  CHECK_INT(asbi_connect_dec_feed(&d, b.data, b.len, on_msg, &s), 77);
  CHECK_INT(s.count, 2);
  CHECK_INT(asbi_connect_dec_feed(&d, b.data, 1, on_msg, &s), 77);
  CHECK_INT(s.count, 2);
  CHECK_INT(asbi_connect_dec_finish(&d), 77);
  asbi_connect_dec_free(&d);
  asbi_buf_free(&s.log);
  /* Negative values pass through unchanged too. */
  asbi_connect_dec_init(&d, 0);
  sink_init(&s);
  s.stop_at = 1;
  s.stop_rc = -5;
  CHECK_INT(asbi_connect_dec_feed(&d, b.data, b.len, on_msg, &s), -5);
  asbi_connect_dec_free(&d);
  asbi_buf_free(&s.log);
  asbi_buf_free(&b);
}

/* A message that lies whole in the fed chunk with a NUL after it (the next
 * data envelope's flags byte) is delivered in place; otherwise it is copied
 * into the decoder's buffer. data[len] == 0 either way. */
typedef struct where {
  const char *lo, *hi; /* the chunk being fed */
  int in_place[4];
  int n;
  int bad_nul;
} where;

static int on_where(void *ud, unsigned flags, const char *data, size_t len) {
  where *w = ud;
  (void)flags;
  if (data[len] != '\0') w->bad_nul = 1;
  if (w->n < 4) w->in_place[w->n] = data >= w->lo && data + len < w->hi;
  w->n++;
  return 0;
}

TEST(delivered_in_place) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_connect_encode(&b, 0, "{\"a\":1}", 7); /* next flags byte: 0 */
  asbi_connect_encode(&b, 0, "", 0);          /* ditto */
  asbi_connect_encode(&b, 0, "{\"b\":2}", 7); /* next is end-stream: 0x02 */
  asbi_connect_encode(&b, 2, "{}", 2);        /* last: nothing after it */
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, 0);
  where w;
  memset(&w, 0, sizeof w);
  w.lo = b.data;
  w.hi = b.data + b.len;
  CHECK_INT(asbi_connect_dec_feed(&d, b.data, b.len, on_where, &w), 0);
  CHECK_INT(asbi_connect_dec_finish(&d), 0);
  CHECK_INT(w.n, 4);
  CHECK(!w.bad_nul);
  CHECK(w.in_place[0] && w.in_place[1]);
  CHECK(!w.in_place[2] && !w.in_place[3]);
  asbi_connect_dec_free(&d);
  /* Header in one chunk, body in the next: the body still lies in place. */
  asbi_connect_dec_init(&d, 0);
  memset(&w, 0, sizeof w);
  w.lo = b.data + 5;
  w.hi = b.data + b.len;
  CHECK_INT(asbi_connect_dec_feed(&d, b.data, 5, on_where, &w), 0);
  CHECK_INT(asbi_connect_dec_feed(&d, b.data + 5, b.len - 5, on_where, &w), 0);
  CHECK_INT(w.n, 4);
  CHECK(w.in_place[0] && !w.bad_nul);
  asbi_connect_dec_free(&d);
  /* A body cut by the end of the chunk is buffered. */
  asbi_connect_dec_init(&d, 0);
  memset(&w, 0, sizeof w);
  w.lo = b.data;
  w.hi = b.data + 10;
  CHECK_INT(asbi_connect_dec_feed(&d, b.data, 10, on_where, &w), 0);
  w.lo = b.data + 10;
  w.hi = b.data + b.len;
  CHECK_INT(asbi_connect_dec_feed(&d, b.data + 10, b.len - 10, on_where, &w), 0);
  CHECK_INT(w.n, 4);
  CHECK(!w.in_place[0] && w.in_place[1] && !w.bad_nul);
  asbi_connect_dec_free(&d);
  asbi_buf_free(&b);
}

TEST(empty_stream) {
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, 0);
  CHECK_INT(asbi_connect_dec_finish(&d), ASBI_CONNECT_ENOEND);
  asbi_connect_dec_free(&d);
  asbi_connect_dec_free(&d); /* idempotent */
  /* An end-stream with an empty payload is still an envelope. */
  asbi_connect_dec_init(&d, 0);
  sink s;
  sink_init(&s);
  CHECK_INT(asbi_connect_dec_feed(&d, "\x02\x00\x00\x00\x00", 5, on_msg, &s), 0);
  CHECK_INT(asbi_connect_dec_finish(&d), 0);
  CHECK_STR(s.log.data, "2:\n");
  asbi_connect_dec_free(&d);
  asbi_buf_free(&s.log);
}

TEST(strerror_all) {
  int codes[] = {ASBI_CONNECT_OK,     ASBI_CONNECT_ETOOBIG,   ASBI_CONNECT_ECOMPRESSED,
                 ASBI_CONNECT_EFLAGS, ASBI_CONNECT_EAFTEREND, ASBI_CONNECT_ETRUNCATED,
                 ASBI_CONNECT_ENOEND, ASBI_CONNECT_ENOMEM,    12345};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(codes); i++) {
    const char *m = asbi_connect_strerror(codes[i]);
    CHECK(m != NULL && *m);
  }
  CHECK(strcmp(asbi_connect_strerror(ASBI_CONNECT_ETOOBIG),
               asbi_connect_strerror(ASBI_CONNECT_ENOEND)) != 0);
}

/* ---- error payloads ---------------------------------------------------- */

static int pend(const char *j, char **c, char **m) {
  return asbi_connect_parse_end(j, strlen(j), c, m);
}

TEST(parse_end) {
  char *c = (char *)1, *m = (char *)1;
  CHECK_INT(pend("{}", &c, &m), 0);
  CHECK(c == NULL && m == NULL);
  CHECK_INT(pend(" { \"metadata\" : {\"x\":[\"1\"]} } ", &c, &m), 0);
  CHECK(c == NULL);
  CHECK_INT(pend("{\"error\":{\"code\":\"not_found\",\"message\":\"no such process\"}}", &c, &m),
            1);
  CHECK_STR(c, "not_found");
  CHECK_STR(m, "no such process");
  free(c);
  free(m);
  CHECK_INT(pend("{\"error\":{\"code\":\"unavailable\"},\"metadata\":{}}", &c, &m), 1);
  CHECK_STR(c, "unavailable");
  CHECK_STR(m, "");
  free(c);
  free(m);
  CHECK_INT(pend("{\"error\":{\"code\":\"internal\",\"message\":\"a\\nb \\u00e9\","
                 "\"details\":[{\"type\":\"x\",\"value\":\"AA\"}]}}",
                 &c, &m),
            1);
  CHECK_STR(m, "a\nb \xC3\xA9");
  free(c);
  free(m);
  static const char *bad[] = {
      "",
      " ",
      "null",
      "[]",
      "\"x\"",
      "{",
      "{} x",
      "{}{}",
      "{\"error\":null}",
      "{\"error\":{}}",
      "{\"error\":{\"code\":null}}",
      "{\"error\":{\"code\":\"\"}}",
      "{\"error\":{\"code\":\"NOT_FOUND\"}}",
      "{\"error\":{\"code\":\"teapot\"}}",
      "{\"error\":{\"code\":5}}",
      "{\"error\":{\"code\":\"internal\",\"message\":5}}",
      "{\"error\":\"internal\"}",
      "{\"metadata\":[]}",
      "{\"error\":{\"code\":\"internal\",\"message\":\"\xff\"}}",
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(bad); i++) {
    c = m = (char *)1;
    if (pend(bad[i], &c, &m) != -1) ASBT_FAIL("accepted end-stream \"%s\"", bad[i]);
    CHECK(c == NULL && m == NULL);
  }
}

TEST(parse_error) {
  char *c, *m;
  const char *j = "{\"code\":\"permission_denied\",\"message\":\"nope\"}";
  CHECK_INT(asbi_connect_parse_error(j, strlen(j), &c, &m), 0);
  CHECK_STR(c, "permission_denied");
  CHECK_STR(m, "nope");
  free(c);
  free(m);
  j = "{\"code\":\"canceled\",\"message\":null}";
  CHECK_INT(asbi_connect_parse_error(j, strlen(j), &c, &m), 0);
  CHECK_STR(m, "");
  free(c);
  free(m);
  static const char *bad[] = {
      "",
      "{}",
      "{\"code\":null}",
      "{\"message\":\"x\"}",
      "<html>502</html>",
      "{\"code\":\"bogus\",\"message\":\"x\"}",
      "[\"internal\"]",
      "{\"code\":\"internal\",\"message\":{}}",
      "{\"code\":\"internal\"",
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(bad); i++) {
    c = m = (char *)1;
    if (asbi_connect_parse_error(bad[i], strlen(bad[i]), &c, &m) != -1)
      ASBT_FAIL("accepted error body \"%s\"", bad[i]);
    CHECK(c == NULL && m == NULL);
  }
  /* Length-bounded: bytes past len are not part of the body. */
  j = "{\"code\":\"internal\"}garbage";
  CHECK_INT(asbi_connect_parse_error(j, 19, &c, &m), 0);
  free(c);
  free(m);
}

TEST(build_json) {
  asbi_buf b = ASBI_BUF_INIT;
  CHECK_INT(asbi_connect_end_json(&b, NULL, "ignored"), 0);
  CHECK_STR(b.data, "{}");
  asbi_buf_clear(&b);
  CHECK_INT(asbi_connect_end_json(&b, "not_found", "process 7 not found"), 0);
  CHECK_STR(b.data, "{\"error\":{\"code\":\"not_found\",\"message\":\"process 7 not found\"}}");
  asbi_buf_clear(&b);
  CHECK_INT(asbi_connect_end_json(&b, "aborted", NULL), 0);
  CHECK_STR(b.data, "{\"error\":{\"code\":\"aborted\"}}");
  asbi_buf_clear(&b);
  CHECK_INT(asbi_connect_error_json(&b, "invalid_argument", "bad \"path\"\n\t\x01\\"), 0);
  CHECK_STR(b.data,
            "{\"code\":\"invalid_argument\",\"message\":\"bad \\\"path\\\"\\n\\t\\u0001\\\\\"}");
  asbi_buf_clear(&b);
  /* Never an invalid code or invalid JSON on the wire. */
  CHECK_INT(asbi_connect_error_json(&b, "teapot", ""), 0);
  CHECK_STR(b.data, "{\"code\":\"unknown\"}");
  asbi_buf_clear(&b);
  CHECK_INT(asbi_connect_error_json(&b, NULL, NULL), 0);
  CHECK_STR(b.data, "{\"code\":\"unknown\"}");
  asbi_buf_clear(&b);
  CHECK_INT(asbi_connect_error_json(&b, "internal", "bad \xff utf8 \xC3"), 0);
  CHECK_STR(b.data, "{\"code\":\"internal\",\"message\":\"bad \xEF\xBF\xBD utf8 \xEF\xBF\xBD\"}");
  asbi_buf_clear(&b);
  /* Appends to what is already there. */
  asbi_buf_puts(&b, "X");
  CHECK_INT(asbi_connect_end_json(&b, NULL, NULL), 0);
  CHECK_STR(b.data, "X{}");
  asbi_buf_free(&b);
  /* A bounded buffer that is too small is left unchanged. */
  asbi_buf small;
  asbi_buf_init(&small, 20);
  asbi_buf_puts(&small, "ab");
  CHECK_INT(asbi_connect_end_json(&small, "internal", "a long message"), -1);
  CHECK_STR(small.data, "ab");
  asbi_buf_free(&small);
}

TEST(build_parse_round_trip) {
  static const char *msgs[] = {"",
                               "plain",
                               "quote \" backslash \\ slash /",
                               "ctl \x01\x1f\x7f",
                               "\xE2\x82\xAC \xF0\x9F\x98\x80",
                               "line1\r\nline2"};
  static const char *codes[] = {"canceled",
                                "unknown",
                                "invalid_argument",
                                "deadline_exceeded",
                                "not_found",
                                "already_exists",
                                "permission_denied",
                                "resource_exhausted",
                                "failed_precondition",
                                "aborted",
                                "out_of_range",
                                "unimplemented",
                                "internal",
                                "unavailable",
                                "data_loss",
                                "unauthenticated"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(codes); i++) {
    for (size_t k = 0; k < ASBI_ARRAY_LEN(msgs); k++) {
      asbi_buf b = ASBI_BUF_INIT;
      char *c, *m;
      REQUIRE(asbi_connect_end_json(&b, codes[i], msgs[k]) == 0);
      CHECK_INT(asbi_connect_parse_end(b.data, b.len, &c, &m), 1);
      CHECK_STR(c, codes[i]);
      CHECK_STR(m, msgs[k]);
      free(c);
      free(m);
      asbi_buf_clear(&b);
      REQUIRE(asbi_connect_error_json(&b, codes[i], msgs[k]) == 0);
      CHECK_INT(asbi_connect_parse_error(b.data, b.len, &c, &m), 0);
      CHECK_STR(c, codes[i]);
      CHECK_STR(m, msgs[k]);
      free(c);
      free(m);
      asbi_buf_free(&b);
    }
  }
}

TEST(code_tables) {
  struct {
    const char *code;
    int http;
  } t[] = {{"canceled", 499},
           {"unknown", 500},
           {"invalid_argument", 400},
           {"deadline_exceeded", 504},
           {"not_found", 404},
           {"already_exists", 409},
           {"permission_denied", 403},
           {"resource_exhausted", 429},
           {"failed_precondition", 400},
           {"aborted", 409},
           {"out_of_range", 400},
           {"unimplemented", 501},
           {"internal", 500},
           {"unavailable", 503},
           {"data_loss", 500},
           {"unauthenticated", 401}};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(t); i++) {
    CHECK_INT(asbi_connect_code_to_http(t[i].code), t[i].http);
    CHECK(asbi_connect_code_valid(t[i].code));
  }
  CHECK_INT(asbi_connect_code_to_http("teapot"), 500);
  CHECK_INT(asbi_connect_code_to_http(""), 500);
  CHECK_INT(asbi_connect_code_to_http(NULL), 500);
  CHECK(!asbi_connect_code_valid("NOT_FOUND"));
  CHECK(!asbi_connect_code_valid("cancelled")); /* gRPC spelling, not Connect's */
  CHECK(!asbi_connect_code_valid("ok"));
  CHECK(!asbi_connect_code_valid(""));
  CHECK(!asbi_connect_code_valid(NULL));
  /* Connect spec, "HTTP to Error Code". */
  CHECK_STR(asbi_connect_code_from_http(400), "internal");
  CHECK_STR(asbi_connect_code_from_http(401), "unauthenticated");
  CHECK_STR(asbi_connect_code_from_http(403), "permission_denied");
  CHECK_STR(asbi_connect_code_from_http(404), "unimplemented");
  CHECK_STR(asbi_connect_code_from_http(429), "unavailable");
  CHECK_STR(asbi_connect_code_from_http(502), "unavailable");
  CHECK_STR(asbi_connect_code_from_http(503), "unavailable");
  CHECK_STR(asbi_connect_code_from_http(504), "unavailable");
  int others[] = {0, 200, 302, 408, 409, 412, 415, 499, 500, 501, 507, -1, 99999};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(others); i++)
    CHECK_STR(asbi_connect_code_from_http(others[i]), "unknown");
  for (int st = 100; st < 600; st++)
    CHECK(asbi_connect_code_valid(asbi_connect_code_from_http(st)));
}

int main(void) {
  RUN(encode_layout);
  RUN(length_big_endian);
  RUN(every_split);
  RUN(truncated);
  RUN(huge_length_rejected_before_alloc);
  RUN(flags);
  RUN(data_after_end);
  RUN(callback_stops);
  RUN(delivered_in_place);
  RUN(empty_stream);
  RUN(strerror_all);
  RUN(parse_end);
  RUN(parse_error);
  RUN(build_json);
  RUN(build_parse_round_trip);
  RUN(code_tables);
  TEST_MAIN_END();
}
