/* Unit tests for core/proto/multipart: writer, parser, round trips.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>

#include "proto/multipart.h"
#include "testing.h"
#include "util/util.h"

/* Records parts as "[name|filename|ctype]data{end}" with "(null)" for a
 * missing filename or content type. */
typedef struct rec {
  asbi_buf log;
  int parts, ends;
  int in_part;
  int stop_begin, stop_data, stop_end; /* return these when non-zero */
  int order_bad;
} rec;

static int on_begin(void *ud, const asbi_mp_part *p) {
  rec *r = ud;
  if (r->in_part) r->order_bad = 1;
  r->in_part = 1;
  r->parts++;
  asbi_buf_printf(&r->log, "[%s|%s|%s]", p->name, p->filename ? p->filename : "(null)",
                  p->content_type ? p->content_type : "(null)");
  return r->stop_begin;
}

static int on_data(void *ud, const char *d, size_t n) {
  rec *r = ud;
  if (!r->in_part || n == 0) r->order_bad = 1;
  asbi_buf_append(&r->log, d, n);
  return r->stop_data;
}

static int on_end(void *ud) {
  rec *r = ud;
  if (!r->in_part) r->order_bad = 1;
  r->in_part = 0;
  r->ends++;
  asbi_buf_puts(&r->log, "{end}");
  return r->stop_end;
}

static const asbi_mp_callbacks CB = {on_begin, on_data, on_end};

static void rec_init(rec *r) {
  memset(r, 0, sizeof *r);
  asbi_buf_init(&r->log, 0);
  asbi_buf_reserve(&r->log, 0);
}

/* Parse body in three chunks split at a and b; returns the first non-zero
 * result of feed/finish. */
static int parse3(const char *ct, const char *body, size_t n, size_t a, size_t b, rec *r,
                  unsigned max_parts) {
  asbi_mp_parser *p;
  int rc = asbi_mp_parser_new(&p, ct, &CB, r, max_parts);
  if (rc) return rc;
  rc = asbi_mp_parser_feed(p, body, a);
  if (!rc) rc = asbi_mp_parser_feed(p, body + a, b - a);
  if (!rc) rc = asbi_mp_parser_feed(p, body + b, n - b);
  if (!rc) rc = asbi_mp_parser_finish(p);
  asbi_mp_parser_free(p);
  return rc;
}

/* Every split point (one cut and, for short bodies, two cuts) plus byte by
 * byte must give the same result and the same record. */
static void check_all_splits(const char *ct, const char *body, size_t n, int want_rc,
                             const char *want_log) {
  int fails = 0;
  for (size_t a = 0; a <= n; a++) {
    /* Two cuts for short bodies (from every fifth first cut), else one. */
    size_t bstep = (n <= 400 && a % 5 == 0) ? 1 : n + 1;
    for (size_t b = a; b <= n; b += bstep) {
      rec r;
      rec_init(&r);
      int rc = parse3(ct, body, n, a, b, &r, 0);
      int bad = rc != want_rc || r.order_bad || (want_log && strcmp(r.log.data, want_log) != 0);
      if (bad && fails++ < 3)
        ASBT_FAIL("split %zu/%zu: rc %d (want %d), log \"%s\"", a, b, rc, want_rc, r.log.data);
      asbi_buf_free(&r.log);
    }
  }
  /* byte by byte */
  asbi_mp_parser *p;
  rec r;
  rec_init(&r);
  REQUIRE(asbi_mp_parser_new(&p, ct, &CB, &r, 0) == 0);
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) rc = asbi_mp_parser_feed(p, body + i, 1);
  if (!rc) rc = asbi_mp_parser_finish(p);
  CHECK_INT(rc, want_rc);
  if (want_log) CHECK_STR(r.log.data, want_log);
  asbi_mp_parser_free(p);
  asbi_buf_free(&r.log);
}

/* ---- writer ------------------------------------------------------------ */

TEST(writer_boundary_and_content_type) {
  asbi_mpw w1, w2;
  CHECK_INT(asbi_mpw_init(&w1), 0);
  CHECK_INT(asbi_mpw_init(&w2), 0);
  CHECK(strcmp(w1.boundary, w2.boundary) != 0);
  size_t bl = strlen(w1.boundary);
  CHECK(bl >= 27 && bl <= 70 && bl < sizeof w1.boundary);
  for (size_t i = 0; i < bl; i++) {
    char c = w1.boundary[i];
    CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-');
  }
  char ct[96];
  asbi_mpw_content_type(&w1, ct, sizeof ct);
  CHECK(asbi_startswith(ct, "multipart/form-data; boundary="));
  CHECK_STR(ct + 30, w1.boundary);
  char tiny[10];
  asbi_mpw_content_type(&w1, tiny, sizeof tiny);
  CHECK_INT(strlen(tiny), 9);
}

TEST(writer_exact_bytes) {
  asbi_mpw w;
  asbi_mpw_init(&w);
  strcpy(w.boundary, "XyZ");
  asbi_buf b = ASBI_BUF_INIT;
  CHECK_INT(asbi_mpw_part_head(&w, &b, "file", "a\"b\\c.txt", NULL), 0);
  asbi_buf_puts(&b, "DATA");
  CHECK_INT(asbi_mpw_part_head(&w, &b, "note", NULL, "text/plain; charset=utf-8"), 0);
  asbi_buf_puts(&b, "hi");
  CHECK_INT(asbi_mpw_finish(&w, &b), 0);
  CHECK_STR(b.data,
            "--XyZ\r\n"
            "Content-Disposition: form-data; name=\"file\"; filename=\"a\\\"b\\\\c.txt\"\r\n"
            "Content-Type: application/octet-stream\r\n"
            "\r\n"
            "DATA"
            "\r\n--XyZ\r\n"
            "Content-Disposition: form-data; name=\"note\"\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            "\r\n"
            "hi"
            "\r\n--XyZ--\r\n");
  asbi_buf_free(&b);
}

TEST(writer_rejects_crlf) {
  asbi_mpw w;
  asbi_mpw_init(&w);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_puts(&b, "keep");
  const char *evil[] = {"a\rb", "a\nb", "x\r\nContent-Type: text/html", "\n"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(evil); i++) {
    CHECK_INT(asbi_mpw_part_head(&w, &b, evil[i], NULL, NULL), -1);
    CHECK_INT(asbi_mpw_part_head(&w, &b, "file", evil[i], NULL), -1);
    CHECK_INT(asbi_mpw_part_head(&w, &b, "file", "f", evil[i]), -1);
    CHECK_INT(asbi_mpw_part_head_len(&w, 0, evil[i], NULL, NULL), -1);
    CHECK_INT(asbi_mpw_part_head_len(&w, 1, "file", evil[i], NULL), -1);
    CHECK_INT(asbi_mpw_part_head_len(&w, 0, "file", "f", evil[i]), -1);
  }
  CHECK_INT(asbi_mpw_part_head(&w, &b, NULL, "f", NULL), -1);
  CHECK_INT(asbi_mpw_part_head_len(&w, -1, "file", "f", NULL), -1);
  CHECK_STR(b.data, "keep"); /* nothing written */
  CHECK_INT(w.parts, 0);
  asbi_buf_free(&b);
}

/* Hostile names survive writer -> parser unchanged; the precomputed length
 * equals the produced bytes. */
TEST(round_trip_hostile_names) {
  static const char *names[] = {
      "file",
      "",
      "a\"b",
      "a\\b",
      "\\\"",
      "\"\\\\\"",
      "trailing\\",
      "\"",
      "\\",
      "../../etc/passwd",
      "C:\\Users\\me\\x.txt",
      "name\"; filename=\"evil.sh",
      "semi;colon",
      "eq=ual",
      "sp ace",
      "tab\there",
      "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80",
      "--",
      "--boundary",
      "%22quoted%22",
      "a'b",
      "\x01\x7f ctl",
  };
  static const char *datas[] = {
      "", "x", "\r\n", "--", "\r\n--", "\r\n--\r\n", "line1\r\nline2\r\n", "\r"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(names); i++) {
    asbi_mpw w;
    REQUIRE(asbi_mpw_init(&w) == 0);
    char ct[96];
    asbi_mpw_content_type(&w, ct, sizeof ct);
    const char *data = datas[i % ASBI_ARRAY_LEN(datas)];
    int64_t want = asbi_mpw_part_head_len(&w, 0, "field", names[i], NULL) + (int64_t)strlen(data) +
                   asbi_mpw_part_head_len(&w, 1, names[i], "f.bin", "image/png") + 3 +
                   asbi_mpw_part_head_len(&w, 2, names[i], NULL, NULL) +
                   (int64_t)asbi_mpw_finish_len(&w);
    asbi_buf b = ASBI_BUF_INIT;
    REQUIRE(asbi_mpw_part_head(&w, &b, "field", names[i], NULL) == 0);
    asbi_buf_puts(&b, data);
    REQUIRE(asbi_mpw_part_head(&w, &b, names[i], "f.bin", "image/png") == 0);
    asbi_buf_append(&b, "\0\1\2", 3);
    REQUIRE(asbi_mpw_part_head(&w, &b, names[i], NULL, NULL) == 0);
    REQUIRE(asbi_mpw_finish(&w, &b) == 0);
    CHECK_INT(b.len, want);
    rec r;
    rec_init(&r);
    CHECK_INT(parse3(ct, b.data, b.len, b.len / 3, b.len / 2, &r, 0), 0);
    asbi_buf exp = ASBI_BUF_INIT;
    asbi_buf_printf(&exp, "[field|%s|application/octet-stream]%s{end}", names[i], data);
    asbi_buf_printf(&exp, "[%s|f.bin|image/png]", names[i]);
    asbi_buf_append(&exp, "\0\1\2", 3);
    asbi_buf_printf(&exp, "{end}[%s|(null)|application/octet-stream]{end}", names[i]);
    CHECK_MEM(r.log.data, r.log.len, exp.data, exp.len);
    CHECK_INT(r.parts, 3);
    CHECK_INT(r.ends, 3);
    asbi_buf_free(&exp);
    asbi_buf_free(&r.log);
    asbi_buf_free(&b);
  }
}

TEST(round_trip_zero_parts) {
  asbi_mpw w;
  asbi_mpw_init(&w);
  char ct[96];
  asbi_mpw_content_type(&w, ct, sizeof ct);
  asbi_buf b = ASBI_BUF_INIT;
  CHECK_INT(asbi_mpw_finish(&w, &b), 0);
  CHECK_INT(b.len, asbi_mpw_finish_len(&w));
  check_all_splits(ct, b.data, b.len, 0, "");
  asbi_buf_free(&b);
}

TEST(round_trip_large_random) {
  asbi_mpw w;
  asbi_mpw_init(&w);
  char ct[96];
  asbi_mpw_content_type(&w, ct, sizeof ct);
  size_t n = 200000;
  unsigned char *data = malloc(n);
  asbi_random_bytes(data, n);
  /* Salt the data with near-delimiters. */
  char near[128];
  snprintf(near, sizeof near, "\r\n--%.*s", (int)strlen(w.boundary) - 1, w.boundary);
  for (size_t at = 1000; at + 200 < n; at += 9973) memcpy(data + at, near, strlen(near));
  asbi_buf b = ASBI_BUF_INIT;
  int64_t want = asbi_mpw_part_head_len(&w, 0, "file", "big.bin", NULL) + (int64_t)n +
                 (int64_t)asbi_mpw_finish_len(&w);
  asbi_mpw_part_head(&w, &b, "file", "big.bin", NULL);
  asbi_buf_append(&b, data, n);
  asbi_mpw_finish(&w, &b);
  CHECK_INT(b.len, want);
  /* Random chunk sizes. */
  for (int round = 0; round < 5; round++) {
    asbi_mp_parser *p;
    rec r;
    rec_init(&r);
    REQUIRE(asbi_mp_parser_new(&p, ct, &CB, &r, 0) == 0);
    size_t at = 0;
    int rc = 0;
    while (at < b.len && !rc) {
      unsigned char c;
      asbi_random_bytes(&c, 1);
      size_t k = (size_t)c * (round + 1) % 700 + 1;
      if (k > b.len - at) k = b.len - at;
      rc = asbi_mp_parser_feed(p, b.data + at, k);
      at += k;
    }
    CHECK_INT(rc, 0);
    CHECK_INT(asbi_mp_parser_finish(p), 0);
    const char *hdr = "[file|big.bin|application/octet-stream]";
    size_t hl = strlen(hdr);
    REQUIRE(r.log.len == hl + n + 5);
    CHECK(memcmp(r.log.data, hdr, hl) == 0);
    CHECK(memcmp(r.log.data + hl, data, n) == 0);
    asbi_mp_parser_free(p);
    asbi_buf_free(&r.log);
  }
  free(data);
  asbi_buf_free(&b);
}

/* ---- parser ------------------------------------------------------------ */

#define CT "multipart/form-data; boundary=BB"

TEST(boundary_like_content) {
  /* Data that contains pieces of the delimiter but never the real thing
   * (followed by "--" or by optional whitespace and CRLF). */
  static const struct {
    const char *data;
  } cases[] = {
      {"--BB"}, /* no CRLF before */
      {"x--BB--"},
      {"\r\n--B"},        /* a prefix */
      {"\r\n--BBx"},      /* a longer boundary */
      {"\r\n--BB-x"},     /* one dash */
      {"\r\n--BB x"},     /* padding then not CRLF */
      {"\r\n--BB \t\rx"}, /* padding, CR, not LF */
      {"\r\n--BB\rx"},
      {"\r\n--BB\r\r\n--BBz"},
      {"\r\n\r\n--B\r\n-\r\n--"},
      {"\r\r\r\n\n\n"},
      {"\r"},
      {"ends with cr\r"},
      {"ends with crlf-dash\r\n-"},
      {"\r\n--BB                                                                     x"},
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(cases); i++) {
    asbi_buf body = ASBI_BUF_INIT, exp = ASBI_BUF_INIT;
    asbi_buf_printf(&body,
                    "--BB\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n%s"
                    "\r\n--BB\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\n%s"
                    "\r\n--BB--\r\n",
                    cases[i].data, cases[i].data);
    asbi_buf_printf(&exp, "[a|(null)|(null)]%s{end}[b|(null)|(null)]%s{end}", cases[i].data,
                    cases[i].data);
    check_all_splits(CT, body.data, body.len, 0, exp.data);
    asbi_buf_free(&body);
    asbi_buf_free(&exp);
  }
}

TEST(preamble_epilogue_padding) {
  const char *body =
      "This is the preamble.\r\n--BB is not a delimiter here\r\n"
      "--BB  \t\r\n" /* transport padding */
      "content-disposition: form-data; name=x\r\n"
      "CONTENT-TYPE:text/plain\r\n"
      "X-Other: ignored\r\n"
      "\r\n"
      "value"
      "\r\n--BB\r\n"
      "\r\n" /* a part with no headers at all */
      "bare"
      "\r\n--BB--   \r\nThis is the epilogue\r\n--BB\r\nignored too";
  check_all_splits(CT, body, strlen(body), 0,
                   "[x|(null)|text/plain]value{end}[|(null)|(null)]bare{end}");
}

TEST(boundary_from_content_type) {
  struct {
    const char *ct;
    int rc;
  } cases[] = {
      {"multipart/form-data; boundary=BB", 0},
      {"multipart/form-data;boundary=BB", 0},
      {"Multipart/Form-Data; BOUNDARY=BB", 0},
      {"multipart/form-data; boundary=\"BB\"", 0},
      {"multipart/form-data; charset=utf-8; boundary=BB; x=\"y;z\"", 0},
      {"multipart/form-data; boundary = BB ;", 0},
      {"multipart/mixed; boundary=BB", 0},
      {"multipart/form-data; boundary=\"B\\B\"", 0}, /* \B is not an escape */
      {"multipart/form-data", ASBI_MP_EBOUNDARY},
      {"multipart/form-data; boundary=", ASBI_MP_EBOUNDARY},
      {"multipart/form-data; boundary=\"\"", ASBI_MP_EBOUNDARY},
      {"multipart/form-data; boundary=\"BB", ASBI_MP_EBOUNDARY},
      {"multipart/form-data; boundary=BB; boundary=CC", ASBI_MP_EBOUNDARY},
      {"multipart/form-data; boundary=\"BB \"", ASBI_MP_EBOUNDARY},
      {"multipart/form-data; boundary=\"B\rB\"", ASBI_MP_EBOUNDARY},
      {"multipart/form-data; boundary=\"B\xc3\xa9\"", ASBI_MP_EBOUNDARY},
      {"multipart/form-data; boundary=a b", ASBI_MP_EBOUNDARY},
      {"multipart/; boundary=BB", ASBI_MP_EBOUNDARY},
      {"application/json; boundary=BB", ASBI_MP_EBOUNDARY},
      {"text/plain", ASBI_MP_EBOUNDARY},
      {"", ASBI_MP_EBOUNDARY},
      {"; boundary=BB", ASBI_MP_EBOUNDARY},
      {NULL, ASBI_MP_EBOUNDARY},
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(cases); i++) {
    asbi_mp_parser *p = NULL;
    int rc = asbi_mp_parser_new(&p, cases[i].ct, &CB, NULL, 0);
    if (rc != cases[i].rc) ASBT_FAIL("case %zu (%s): %d", i, cases[i].ct, rc);
    if (rc == 0) {
      asbi_mp_parser_free(p);
    } else {
      CHECK(p == NULL);
    }
  }
  /* 70 characters is the maximum. */
  char b70[71], ct[128];
  memset(b70, 'b', 70);
  b70[70] = '\0';
  snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", b70);
  asbi_mp_parser *p;
  CHECK_INT(asbi_mp_parser_new(&p, ct, &CB, NULL, 0), 0);
  asbi_mp_parser_free(p);
  snprintf(ct, sizeof ct, "multipart/form-data; boundary=%sb", b70);
  CHECK_INT(asbi_mp_parser_new(&p, ct, &CB, NULL, 0), ASBI_MP_EBOUNDARY);
  /* A quoted boundary with tspecials works end to end. */
  const char *qct = "multipart/form-data; boundary=\"a:b=c?d (e)\"";
  const char *body = "--a:b=c?d (e)\r\n\r\nX\r\n--a:b=c?d (e)--";
  check_all_splits(qct, body, strlen(body), 0, "[|(null)|(null)]X{end}");
  asbi_mp_parser_free(NULL);
}

TEST(content_disposition) {
  struct {
    const char *cd;
    const char *want; /* the record, or NULL for EHEADER */
  } cases[] = {
      {"form-data; name=\"file\"; filename=\"a.txt\"", "[file|a.txt|(null)]"},
      {"form-data; name=file; filename=a.txt", "[file|a.txt|(null)]"},
      {"FORM-DATA; NAME=\"f\"; FILENAME=\"A\"", "[f|A|(null)]"},
      {"form-data;name=\"f\";filename=\"\"", "[f||(null)]"},
      {"form-data; name=\"f\"", "[f|(null)|(null)]"},
      {"form-data", "[|(null)|(null)]"},
      {"form-data; name=\"a\\\"b\"", "[a\"b|(null)|(null)]"},
      {"form-data; name=\"a\\\\b\"", "[a\\b|(null)|(null)]"},
      /* Backslash before a non-tspecial is literal (Go's mime does this):
       * Windows paths sent unescaped by old browsers survive. */
      {"form-data; name=f; filename=\"C:\\dir\\f.txt\"", "[f|C:\\dir\\f.txt|(null)]"},
      {"form-data; name=f; filename=\"a;b=c\"", "[f|a;b=c|(null)]"},
      {"form-data; name=f; filename=\"\xC3\xA9\xE2\x82\xAC.txt\"",
       "[f|\xC3\xA9\xE2\x82\xAC.txt|(null)]"},
      /* RFC 5987 / RFC 6266 */
      {"form-data; name=f; filename*=UTF-8''%e2%82%ac%20rates.txt",
       "[f|\xE2\x82\xAC rates.txt|(null)]"},
      {"form-data; name=f; filename=\"fallback\"; filename*=utf-8'en'%C3%A9.txt",
       "[f|\xC3\xA9.txt|(null)]"},
      {"form-data; name=f; filename*=UTF-8''x; filename=\"fallback\"", "[f|x|(null)]"},
      {"form-data; name=f; filename*=iso-8859-1''%E9t%E9", "[f|\xC3\xA9t\xC3\xA9|(null)]"},
      {"form-data; name=f; filename*=us-ascii''plain", "[f|plain|(null)]"},
      {"form-data; name=f; filename=\"fb\"; filename*=koi8-r''%C1", "[f|fb|(null)]"},
      {"form-data; name=f; filename*=\"UTF-8''quoted%20ok\"", "[f|quoted ok|(null)]"},
      {"form-data; name=f; averyveryveryveryveryverylongparametername=1", "[f|(null)|(null)]"},
      {"form-data; name=f;", "[f|(null)|(null)]"},
      /* malformed */
      {"form-data; name=f; filename*=UTF-8''%zz", NULL},
      {"form-data; name=f; filename*=UTF-8''%e2%82", NULL}, /* invalid UTF-8 */
      {"form-data; name=f; filename*=UTF-8''a%00b", NULL},
      {"form-data; name=f; filename*=UTF-8''a%0d%0aX-Evil:%201", NULL},
      {"form-data; name=f; filename*=UTF-8''a%0Ab", NULL},
      {"form-data; name=f; filename*=us-ascii''%e9", NULL},
      {"form-data; name=f; filename*=noquotes", NULL},
      {"form-data; name=f; filename*=UTF-8'%41", NULL},
      {"form-data; name=\"unterminated", NULL},
      {"form-data; name=a b", NULL},
      {"form-data; name", NULL},
      {"form-data; =x", NULL},
      {"form-data; name=f; name=g", NULL},
      {"form-data; name=f; NAME=g", NULL},
      {"form-data name=f", NULL},
      {"", NULL},
      {"; name=f", NULL},
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(cases); i++) {
    asbi_buf body = ASBI_BUF_INIT, exp = ASBI_BUF_INIT;
    asbi_buf_printf(&body, "--BB\r\nContent-Disposition: %s\r\n\r\nD\r\n--BB--\r\n", cases[i].cd);
    rec r;
    rec_init(&r);
    int rc = parse3(CT, body.data, body.len, body.len, body.len, &r, 0);
    if (cases[i].want) {
      asbi_buf_printf(&exp, "%sD{end}", cases[i].want);
      if (rc != 0 || strcmp(r.log.data, exp.data) != 0)
        ASBT_FAIL("case %zu: rc %d log \"%s\"", i, rc, r.log.data);
    } else if (rc != ASBI_MP_EHEADER || r.parts != 0) {
      ASBT_FAIL("case %zu accepted: rc %d log \"%s\"", i, rc, r.log.data);
    }
    asbi_buf_free(&r.log);
    asbi_buf_free(&body);
    asbi_buf_free(&exp);
  }
}

TEST(bad_headers) {
  static const char *heads[] = {
      "Content-Disposition: form-data; name=a\n", /* bare LF */
      "Content-Disposition: form-data; name=a\r\n X: folded\r\n",
      "No colon here\r\n",
      ": empty name\r\n",
      "Bad Name: x\r\n",
      "Content-Disposition: form-data; name=a\r\nContent-Disposition: form-data; name=b\r\n",
      "Content-Type: a\r\nContent-Type: b\r\n",
      "X: a\rb\r\n",
      "X: nul \0 byte\r\n",
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(heads); i++) {
    asbi_buf body = ASBI_BUF_INIT;
    asbi_buf_puts(&body, "--BB\r\n");
    if (i == ASBI_ARRAY_LEN(heads) - 1)
      asbi_buf_append(&body, heads[i], 15);
    else
      asbi_buf_puts(&body, heads[i]);
    asbi_buf_puts(&body, "\r\nD\r\n--BB--\r\n");
    check_all_splits(CT, body.data, body.len, ASBI_MP_EHEADER, "");
    asbi_buf_free(&body);
  }
}

TEST(header_size_limit) {
  /* 16 KiB of headers per part, counted from after the delimiter line. */
  asbi_buf body = ASBI_BUF_INIT;
  asbi_buf_puts(&body, "--BB\r\n");
  size_t used = 0;
  while (used + 100 < 16 * 1024 - 2 - 100) {
    asbi_buf_printf(&body, "X-Filler: %088d\r\n", 0); /* 100 bytes */
    used += 100;
  }
  /* Top it up to exactly 16384 bytes including the final empty line. */
  size_t rest = 16 * 1024 - used - 2;
  asbi_buf_puts(&body, "X-Last: ");
  for (size_t i = 0; i < rest - 10; i++) asbi_buf_putc(&body, 'y');
  asbi_buf_puts(&body, "\r\n\r\nD\r\n--BB--\r\n");
  rec r;
  rec_init(&r);
  CHECK_INT(parse3(CT, body.data, body.len, 7, 9000, &r, 0), 0);
  CHECK_STR(r.log.data, "[|(null)|(null)]D{end}");
  asbi_buf_free(&r.log);
  /* One more byte fails, however it is split. */
  asbi_buf big = ASBI_BUF_INIT;
  asbi_buf_append(&big, body.data, 6);
  asbi_buf_putc(&big, 'X');
  asbi_buf_append(&big, body.data + 6, body.len - 6);
  for (size_t a = 0; a < big.len; a += 1023) {
    rec_init(&r);
    CHECK_INT(parse3(CT, big.data, big.len, a, a, &r, 0), ASBI_MP_EHEADER);
    asbi_buf_free(&r.log);
  }
  /* An endless header line is cut off at the bound too. */
  asbi_mp_parser *p;
  REQUIRE(asbi_mp_parser_new(&p, CT, &CB, NULL, 0) == 0);
  CHECK_INT(asbi_mp_parser_feed(p, "--BB\r\nX: ", 9), 0);
  char chunk[4096];
  memset(chunk, 'z', sizeof chunk);
  int rc = 0;
  for (int i = 0; i < 10 && !rc; i++) rc = asbi_mp_parser_feed(p, chunk, sizeof chunk);
  CHECK_INT(rc, ASBI_MP_EHEADER);
  CHECK_INT(asbi_mp_parser_feed(p, "\r\n", 2), ASBI_MP_EHEADER);
  CHECK_INT(asbi_mp_parser_finish(p), ASBI_MP_EHEADER);
  asbi_mp_parser_free(p);
  asbi_buf_free(&big);
  asbi_buf_free(&body);
}

TEST(truncated) {
  const char *body =
      "--BB\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nhello"
      "\r\n--BB\r\n\r\nworld\r\n--BB--";
  size_t n = strlen(body);
  for (size_t k = 0; k < n; k++) {
    rec r;
    rec_init(&r);
    int rc = parse3(CT, body, k, k / 2, k, &r, 0);
    if (rc != ASBI_MP_ETRUNCATED) ASBT_FAIL("prefix %zu: rc %d", k, rc);
    asbi_buf_free(&r.log);
  }
  check_all_splits(CT, body, n, 0, "[a|(null)|(null)]hello{end}[|(null)|(null)]world{end}");
  /* Nothing at all / preamble only. */
  check_all_splits(CT, "", 0, ASBI_MP_ETRUNCATED, "");
  check_all_splits(CT, "just text\r\n", 11, ASBI_MP_ETRUNCATED, "");
}

TEST(max_parts) {
  asbi_buf body = ASBI_BUF_INIT;
  for (int i = 0; i < 5; i++) asbi_buf_printf(&body, "--BB\r\n\r\n%d\r\n", i);
  asbi_buf_puts(&body, "--BB--\r\n");
  rec r;
  rec_init(&r);
  CHECK_INT(parse3(CT, body.data, body.len, 3, 20, &r, 5), 0);
  CHECK_INT(r.parts, 5);
  asbi_buf_free(&r.log);
  rec_init(&r);
  CHECK_INT(parse3(CT, body.data, body.len, 3, 20, &r, 4), ASBI_MP_ETOOMANY);
  CHECK_INT(r.parts, 4);
  asbi_buf_free(&r.log);
  asbi_buf_clear(&body);
  /* Default: 1000. */
  for (int i = 0; i < 1001; i++) asbi_buf_puts(&body, "--BB\r\n\r\n\r\n");
  asbi_buf_puts(&body, "--BB--");
  rec_init(&r);
  CHECK_INT(parse3(CT, body.data, body.len, 0, 0, &r, 0), ASBI_MP_ETOOMANY);
  CHECK_INT(r.parts, 1000);
  asbi_buf_free(&r.log);
  asbi_buf_free(&body);
}

TEST(callback_errors) {
  const char *body = "--BB\r\n\r\nabc\r\n--BB\r\n\r\ndef\r\n--BB--";
  size_t n = strlen(body);
  rec r;
  rec_init(&r);
  r.stop_begin = 11;
  CHECK_INT(parse3(CT, body, n, n, n, &r, 0), 11);
  CHECK_INT(r.parts, 1);
  asbi_buf_free(&r.log);
  rec_init(&r);
  r.stop_data = -12;
  CHECK_INT(parse3(CT, body, n, n, n, &r, 0), -12);
  asbi_buf_free(&r.log);
  rec_init(&r);
  r.stop_end = 13;
  CHECK_INT(parse3(CT, body, n, n, n, &r, 0), 13);
  CHECK_INT(r.ends, 1);
  asbi_buf_free(&r.log);
  /* Sticky; further input is refused with the same value. */
  asbi_mp_parser *p;
  rec_init(&r);
  r.stop_data = 5;
  REQUIRE(asbi_mp_parser_new(&p, CT, &CB, &r, 0) == 0);
  CHECK_INT(asbi_mp_parser_feed(p, body, n), 5);
  CHECK_INT(asbi_mp_parser_feed(p, body, n), 5);
  CHECK_INT(asbi_mp_parser_finish(p), 5);
  asbi_mp_parser_free(p);
  asbi_buf_free(&r.log);
  /* NULL callbacks are allowed. */
  asbi_mp_callbacks none = {NULL, NULL, NULL};
  REQUIRE(asbi_mp_parser_new(&p, CT, &none, NULL, 0) == 0);
  CHECK_INT(asbi_mp_parser_feed(p, body, n), 0);
  CHECK_INT(asbi_mp_parser_finish(p), 0);
  asbi_mp_parser_free(p);
  REQUIRE(asbi_mp_parser_new(&p, CT, NULL, NULL, 0) == 0);
  CHECK_INT(asbi_mp_parser_feed(p, body, n), 0);
  CHECK_INT(asbi_mp_parser_finish(p), 0);
  asbi_mp_parser_free(p);
}

static int count_data(void *ud, const char *d, size_t n) {
  size_t *c = ud;
  c[0]++;
  c[1] += n;
  (void)d;
  return 0;
}

TEST(few_callbacks_for_cr_heavy_data) {
  /* Data full of CRs and near-delimiters is gathered, not delivered one
   * piece per CR. */
  asbi_buf body = ASBI_BUF_INIT;
  asbi_buf_puts(&body, "--BB\r\n\r\n");
  for (int i = 0; i < 20000; i++) asbi_buf_puts(&body, i % 2 ? "\r\n-" : "x\r");
  asbi_buf_puts(&body, "\r\n--BB--");
  size_t counts[2] = {0, 0};
  asbi_mp_callbacks cb = {NULL, count_data, NULL};
  asbi_mp_parser *p;
  REQUIRE(asbi_mp_parser_new(&p, CT, &cb, counts, 0) == 0);
  CHECK_INT(asbi_mp_parser_feed(p, body.data, body.len), 0);
  CHECK_INT(asbi_mp_parser_finish(p), 0);
  CHECK_INT(counts[1], 10000 * 5);
  CHECK(counts[0] <= 10);
  asbi_mp_parser_free(p);
  asbi_buf_free(&body);
}

TEST(strerror_all) {
  int codes[] = {ASBI_MP_OK,         ASBI_MP_EBOUNDARY, ASBI_MP_EHEADER, ASBI_MP_ESYNTAX,
                 ASBI_MP_ETRUNCATED, ASBI_MP_ETOOMANY,  ASBI_MP_ENOMEM,  42};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(codes); i++) {
    const char *m = asbi_mp_strerror(codes[i]);
    CHECK(m && *m);
  }
}

int main(void) {
  RUN(writer_boundary_and_content_type);
  RUN(writer_exact_bytes);
  RUN(writer_rejects_crlf);
  RUN(round_trip_hostile_names);
  RUN(round_trip_zero_parts);
  RUN(round_trip_large_random);
  RUN(boundary_like_content);
  RUN(preamble_epilogue_padding);
  RUN(boundary_from_content_type);
  RUN(content_disposition);
  RUN(bad_headers);
  RUN(header_size_limit);
  RUN(truncated);
  RUN(max_parts);
  RUN(callback_errors);
  RUN(few_callbacks_for_cr_heavy_data);
  RUN(strerror_all);
  TEST_MAIN_END();
}
