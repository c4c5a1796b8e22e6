/* Unit tests for the header values of GET /files (core/envd/hdrval.c):
 * Range, Accept-Encoding, Content-Type by extension, Content-Disposition.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <string.h>

#include "hdrval.h"
#include "testing.h"

static void check_range(const char *h, uint64_t size, int want_rc, uint64_t want_off,
                        uint64_t want_len) {
  uint64_t off = 777, len = 777;
  int rc = envd_hdrval_range(h, size, &off, &len);
  if (rc != want_rc)
    ASBT_FAIL("range \"%s\" of %llu: rc %d, want %d", h ? h : "(null)", (unsigned long long)size,
              rc, want_rc);
  else if (rc == 1 && (off != want_off || len != want_len))
    ASBT_FAIL("range \"%s\" of %llu: %llu+%llu, want %llu+%llu", h, (unsigned long long)size,
              (unsigned long long)off, (unsigned long long)len, (unsigned long long)want_off,
              (unsigned long long)want_len);
  else if (rc != 1 && (off != 777 || len != 777))
    ASBT_FAIL("range \"%s\": outputs written on rc %d", h ? h : "(null)", rc);
}

TEST(range) {
  check_range(NULL, 10, 0, 0, 0);
  check_range("", 10, 0, 0, 0);
  check_range("bytes=0-0", 10, 1, 0, 1);
  check_range("bytes=2-4", 10, 1, 2, 3);
  check_range("bytes=0-9", 10, 1, 0, 10);
  check_range("bytes=5-", 10, 1, 5, 5);
  check_range("bytes=9-", 10, 1, 9, 1);
  check_range("bytes=5-100", 10, 1, 5, 5); /* the end is cut */
  check_range("bytes=-3", 10, 1, 7, 3);    /* the last 3 */
  check_range("bytes=-10", 10, 1, 0, 10);
  check_range("bytes=-30", 10, 1, 0, 10); /* more than there is */
  check_range("bytes=10-", 10, -1, 0, 0); /* starts past the end */
  check_range("bytes=10-20", 10, -1, 0, 0);
  check_range("bytes=5-2", 10, -1, 0, 0); /* backwards */
  check_range("bytes=0-", 0, -1, 0, 0);   /* nothing to serve */
  check_range("bytes=-5", 0, -1, 0, 0);
  /* whole file: not one parsable byte range */
  check_range("bytes=0-1,3-4", 10, 0, 0, 0);
  check_range("bytes=-0", 10, 0, 0, 0);
  check_range("bytes=-", 10, 0, 0, 0);
  check_range("bytes=abc", 10, 0, 0, 0);
  check_range("bytes=1-2x", 10, 0, 0, 0);
  check_range("bytes=-2x", 10, 0, 0, 0);
  check_range("bytes=3", 10, 0, 0, 0);
  check_range("lines=1-2", 10, 0, 0, 0);
  check_range("Bytes=1-2", 10, 0, 0, 0);
  /* large files */
  const uint64_t big = (uint64_t)1 << 40;
  check_range("bytes=1099511627775-", big, 1, big - 1, 1);
  check_range("bytes=-1", big, 1, big - 1, 1);
  check_range("bytes=0-18446744073709551615", big, 1, 0, big);
  check_range("bytes=99999999999999999999999-", big, -1, 0, 0); /* saturates */
}

TEST(accept_encoding) {
  static const struct {
    const char *h;
    int want; /* 0 identity, 1 gzip, -1 406 */
  } t[] = {
      {NULL, 0},
      {"", 0},
      {"gzip", 1},
      {"GZIP", 1},
      {"identity", 0},
      {"br", 0},
      {"br, gzip", 1},
      {"gzip;q=0.5, identity", 0},
      {"gzip;q=0.9, identity;q=0.5", 1},
      {"identity;q=0.1, gzip;q=0.2", 1},
      {"gzip;q=0, identity", 0},
      {"gzip;q=0", 0},
      {"*", 0},
      {"*;q=0", -1},
      {"*;q=0, gzip", 1},
      {"*;q=0, identity", 0},
      {"identity;q=0", -1},
      {"br, identity;q=0", -1},
      {"identity;q=0, *", 1},
      {"identity;q=0, gzip", 1},
      {" gzip ; q=1 ,deflate", 1},
      {",,, ,", 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    int got = envd_hdrval_encoding(t[i].h);
    if (got != t[i].want)
      ASBT_FAIL("Accept-Encoding \"%s\": %d, want %d", t[i].h ? t[i].h : "(null)", got, t[i].want);
  }
  /* more entries than it keeps, and overlong ones, are cut, not overrun */
  char many[4096] = "";
  for (int i = 0; i < 40; i++) strcat(many, "x-unknown-encoding-name-that-is-long, ");
  strcat(many, "gzip");
  CHECK_INT(envd_hdrval_encoding(many), 0); /* gzip was beyond the 16 kept */
}

TEST(mime) {
  CHECK_STR(envd_hdrval_mime("/a/b.txt"), "text/plain; charset=utf-8");
  CHECK_STR(envd_hdrval_mime("/a/b.TXT"), "text/plain; charset=utf-8");
  CHECK_STR(envd_hdrval_mime("x.json"), "application/json");
  CHECK_STR(envd_hdrval_mime("/a/b.tar.gz"), "application/gzip");
  CHECK_STR(envd_hdrval_mime("/a/b.png"), "image/png");
  CHECK_STR(envd_hdrval_mime("/a/b"), "application/octet-stream");
  CHECK_STR(envd_hdrval_mime("/a.d/b"), "application/octet-stream"); /* dot in a dir */
  CHECK_STR(envd_hdrval_mime("/a/b."), "application/octet-stream");
  CHECK_STR(envd_hdrval_mime("/a/.txt"), "text/plain; charset=utf-8");
  CHECK_STR(envd_hdrval_mime("/a/b.unknownext"), "application/octet-stream");
}

static void check_disposition(const char *path, const char *want) {
  asbi_buf b = ASBI_BUF_INIT;
  envd_hdrval_disposition(path, &b);
  if (!b.data || strcmp(b.data, want) != 0)
    ASBT_FAIL("disposition(\"%s\") = \"%s\", want \"%s\"", path, b.data ? b.data : "(null)", want);
  asbi_buf_free(&b);
}

TEST(disposition) {
  check_disposition("/home/user/report.pdf", "inline; filename=report.pdf");
  check_disposition("plain", "inline; filename=plain");
  check_disposition("/a/b c.txt", "inline; filename*=utf-8''b%20c.txt");
  check_disposition("/a/q\"uote", "inline; filename*=utf-8''q%22uote");
  check_disposition("/a/semi;colon", "inline; filename*=utf-8''semi%3Bcolon");
  check_disposition("/a/back\\slash", "inline; filename*=utf-8''back%5Cslash");
  check_disposition("/a/\xc3\xbc.txt", "inline; filename*=utf-8''%C3%BC.txt");
  check_disposition("/a/new\r\nline", "inline; filename*=utf-8''new%0D%0Aline");
  check_disposition("/a/t~il-d_e.x", "inline; filename=t~il-d_e.x");
}

int main(void) {
  RUN(range);
  RUN(accept_encoding);
  RUN(mime);
  RUN(disposition);
  TEST_MAIN_END();
}
