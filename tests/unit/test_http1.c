/* HTTP/1.1 response framing: heads, body delimitation, smuggling defences,
 * chunked decoding across every split. SPDX-License-Identifier: Apache-2.0 */
#include "proto/http1.h"
#include "testing.h"

static long parse(const char *s, asbi_h1_resp *r) {
  return asbi_h1_parse_response(s, strlen(s), 0, r);
}

TEST(complete_heads) {
  asbi_h1_resp r;
  const char *s = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A:  b c \r\n\r\nhello";
  CHECK_INT(parse(s, &r), (long)(strlen(s) - 5));
  CHECK_INT(r.status, 200);
  CHECK_INT(r.body, ASBI_H1_BODY_LENGTH);
  CHECK_INT(r.content_length, 5);
  CHECK_INT(r.keep_alive, 1);
  const asbi_h1_header *h = asbi_h1_find(&r, "x-a");
  REQUIRE(h != NULL);
  CHECK_MEM(h->value, h->value_len, "b c", 3);
  CHECK_MEM(r.reason, r.reason_len, "OK", 2);

  CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", &r) > 0);
  CHECK_INT(r.body, ASBI_H1_BODY_CHUNKED);
  CHECK(parse("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", &r) > 0);
  CHECK_INT(r.body, ASBI_H1_BODY_NONE);
  CHECK(parse("HTTP/1.0 200 OK\r\n\r\n", &r) > 0);
  CHECK_INT(r.body, ASBI_H1_BODY_CLOSE);
  CHECK_INT(r.keep_alive, 0);
  CHECK(parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", &r) > 0);
  CHECK_INT(r.keep_alive, 0);
  CHECK(parse("HTTP/1.1 101 Switching\n\n", &r) > 0); /* bare LF tolerated */
  CHECK_INT(r.body, ASBI_H1_BODY_NONE);
  CHECK(asbi_h1_parse_response("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n", 38, 1, &r) > 0);
  CHECK_INT(r.body, ASBI_H1_BODY_NONE); /* response to HEAD */
}

TEST(incomplete_and_malformed) {
  asbi_h1_resp r;
  CHECK_INT(parse("HTTP/1.1 200 OK\r\nContent-Len", &r), ASBI_H1_EINCOMPLETE);
  CHECK_INT(parse("", &r), ASBI_H1_EINCOMPLETE);
  CHECK_INT(parse("HTTP/2 200 OK\r\n\r\n", &r), ASBI_H1_ESYNTAX);
  CHECK_INT(parse("HTTP/1.1 2x0 OK\r\n\r\n", &r), ASBI_H1_ESYNTAX);
  CHECK_INT(parse("HTTP/1.1 099 Low\r\n\r\n", &r), ASBI_H1_ESYNTAX);
  CHECK_INT(parse("HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", &r), ASBI_H1_ESYNTAX);
  CHECK_INT(parse("HTTP/1.1 200 OK\r\n folded\r\n\r\n", &r), ASBI_H1_ESYNTAX);
  CHECK_INT(parse("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", &r), ASBI_H1_ESYNTAX);
  CHECK_INT(parse("HTTP/1.1 200 OK\r\nX: a\001b\r\n\r\n", &r), ASBI_H1_ESYNTAX);
  /* Request smuggling defences. */
  CHECK_INT(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", &r),
            ASBI_H1_ELENGTH);
  CHECK_INT(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", &r),
            ASBI_H1_ELENGTH);
  CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", &r) > 0);
  CHECK_INT(parse("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", &r), ASBI_H1_ELENGTH);
  CHECK_INT(parse("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", &r),
            ASBI_H1_ELENGTH);
  CHECK_INT(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", &r), ASBI_H1_ESYNTAX);
  /* Too big. */
  size_t big = ASBI_H1_MAX_HEAD + 10;
  char *s = malloc(big + 1);
  memset(s, 'a', big);
  memcpy(s, "HTTP/1.1 200 OK\r\nX: ", 20);
  s[big] = 0;
  CHECK_INT(asbi_h1_parse_response(s, big, 0, &r), ASBI_H1_ETOOBIG);
  free(s);
  char many[8192] = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < ASBI_H1_MAX_HEADERS + 1; i++) strcat(many, "A: b\r\n");
  strcat(many, "\r\n");
  CHECK_INT(parse(many, &r), ASBI_H1_ETOOBIG);
}

static int decode_split(const char *in, size_t n, size_t split, char *out, size_t *outn,
                        size_t *consumed) {
  asbi_h1_chunked c;
  asbi_h1_chunked_init(&c);
  char buf[512];
  size_t at = 0;
  *outn = 0;
  while (at < n && !c.done) {
    size_t k = split && n - at > split ? split : n - at;
    memcpy(buf, in + at, k);
    size_t len = k, ol = 0;
    if (asbi_h1_chunked_decode(&c, buf, &len, &ol) != 0) return -1;
    memcpy(out + *outn, buf, ol);
    *outn += ol;
    at += len;
  }
  *consumed = at;
  return c.done ? 1 : 0;
}

TEST(chunked_every_split) {
  const char *body = "5\r\nhello\r\n6;name=v\r\n world\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
  size_t n = strlen(body);
  for (size_t split = 0; split < n; split++) {
    char out[64];
    size_t on, used;
    REQUIRE(decode_split(body, n, split, out, &on, &used) == 1);
    CHECK_MEM(out, on, "hello world", 11);
    CHECK_INT(used, n - 4); /* NEXT belongs to the next message */
  }
}

TEST(chunked_errors) {
  char out[64];
  size_t on, used;
  const char *bad[] = {"x\r\n", "5\r\nhelloX",           "5\r\nhello\r\r",
                       "\r\n",  "11111111111111111\r\n", "5\r\nhello\r\n0\r\n\rX"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK_INT(decode_split(bad[i], strlen(bad[i]), 0, out, &on, &used), -1);
  /* Truncated: not done, no error. */
  CHECK_INT(decode_split("5\r\nhel", 6, 0, out, &on, &used), 0);
  CHECK_MEM(out, on, "hel", 3);
}

int main(void) {
  RUN(complete_heads);
  RUN(incomplete_and_malformed);
  RUN(chunked_every_split);
  RUN(chunked_errors);
  TEST_MAIN_END();
}
