/* Unit tests for core/proto/pjson: strict parsing and proto3 JSON mapping.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>

#include "proto/pjson.h"
#include "testing.h"
#include "util/buf.h"
#include "util/util.h"

static cJSON *P(const char *s) {
  return asbi_pj_parse(s, strlen(s), NULL);
}

static int parses(const char *s) {
  const char *err = "unset";
  cJSON *v = asbi_pj_parse(s, strlen(s), &err);
  int ok = v != NULL;
  if (ok && err != NULL) ASBT_FAIL("err not cleared on success for %s", s);
  if (!ok && (err == NULL || !*err)) ASBT_FAIL("no error message for %s", s);
  cJSON_Delete(v);
  return ok;
}

TEST(valid_documents) {
  static const char *good[] = {
      "{}",
      "[]",
      "0",
      "-0",
      "1",
      "-1",
      "1.5",
      "-1.5e-3",
      "1E+2",
      "0.0",
      "123456789012345678901234567890",
      "true",
      "false",
      "null",
      "\"\"",
      "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
      "\"\\u00e9\\u20AC\\ud83d\\ude00\"",
      " \t\r\n{ \"a\" : [ 1 , 2 , { } , [ ] ] } \n",
      "{\"a\":{\"b\":{\"c\":null}}}",
      "[\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"]",
      "{\"\":1}",
      "{\"a\":1,\"a\":2}",
      "\"\x7f\"",
      "1e400",
      "[1e-400]",
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(good); i++)
    if (!parses(good[i])) ASBT_FAIL("rejected valid JSON: %s", good[i]);
}

TEST(invalid_documents) {
  static const char *bad[] = {
      "",
      " ",
      "\n\t ",
      "{",
      "}",
      "[",
      "]",
      "{]",
      "[}",
      "[1,]",
      "[,1]",
      "[1 2]",
      "{\"a\":1,}",
      "{\"a\"}",
      "{\"a\" 1}",
      "{a:1}",
      "{'a':1}",
      "{1:1}",
      "{\"a\":1 \"b\":2}",
      "\"abc",
      "\"\\x\"",
      "\"\\u12\"",
      "\"\\u12G4\"",
      "\"\\u0000\"",
      "\"a\\u0000b\"",
      "\"\\ud800\"",
      "\"\\udc00\"",
      "\"\\ud800\\u0041\"",
      "\"\\ud800x\"",
      "\"\\ud83d\\ud83d\"",
      "\"\t\"",
      "\"\n\"",
      "\"\x01\"",
      "\"\x1f\"",
      "01",
      "00",
      "-01",
      "1.",
      ".5",
      "-",
      "+1",
      "1e",
      "1e+",
      "--1",
      "1.e3",
      "NaN",
      "Infinity",
      "-Infinity",
      "0x10",
      "tru",
      "nul",
      "fals",
      "True",
      "NULL",
      "truex",
      "[true false]",
      "{} x",
      "{}{}",
      "1 2",
      "[] []",
      "\"a\" \"b\"",
      "null,",
      "1//c",
      "/*c*/1",
      "#1",
      "\xEF\xBB\xBF{}", /* a BOM is not JSON whitespace */
      "\"\xff\"",
      "\"\xC0\x80\"",
      "\"\xED\xA0\x80\"",
      "{\"\xC3\":1}",
      "\xff",
      "[\"a\"\x00]",
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(bad); i++)
    if (parses(bad[i])) ASBT_FAIL("accepted invalid JSON #%zu: %s", i, bad[i]);
  /* Length-bounded input: a NUL inside the length is an error, bytes after
   * it are not looked at. */
  const char *err;
  CHECK(asbi_pj_parse("{}\0", 3, &err) == NULL);
  cJSON *v = asbi_pj_parse("{}garbage", 2, &err);
  CHECK(v != NULL);
  cJSON_Delete(v);
  CHECK(asbi_pj_parse(NULL, 0, &err) == NULL);
  CHECK(asbi_pj_parse("1", 0, NULL) == NULL);
}

TEST(error_messages) {
  const char *err;
  CHECK(asbi_pj_parse("", 0, &err) == NULL);
  CHECK_STR(err, "empty input");
  CHECK(asbi_pj_parse("\"\xff\"", 3, &err) == NULL);
  CHECK_STR(err, "invalid UTF-8");
  CHECK(asbi_pj_parse("{} 1", 4, &err) == NULL);
  CHECK_STR(err, "trailing data after JSON value");
  CHECK(asbi_pj_parse("\"\\u0000\"", 8, &err) == NULL);
  CHECK_STR(err, "NUL character in string");
}

static char *nested(int depth, char open, char close) {
  char *s = malloc((size_t)depth * 2 + 1);
  for (int i = 0; i < depth; i++) {
    s[i] = open;
    s[depth * 2 - 1 - i] = close;
  }
  s[depth * 2] = '\0';
  return s;
}

TEST(depth_limit) {
  char *s = nested(64, '[', ']');
  CHECK(parses(s));
  free(s);
  s = nested(65, '[', ']');
  const char *err;
  CHECK(asbi_pj_parse(s, strlen(s), &err) == NULL);
  CHECK_STR(err, "nesting too deep");
  free(s);
  /* Objects count too. */
  asbi_buf b = ASBI_BUF_INIT;
  for (int i = 0; i < 64; i++) asbi_buf_puts(&b, "{\"a\":");
  asbi_buf_puts(&b, "1");
  for (int i = 0; i < 64; i++) asbi_buf_putc(&b, '}');
  CHECK(parses(b.data));
  asbi_buf_clear(&b);
  for (int i = 0; i < 33; i++) asbi_buf_puts(&b, "{\"a\":[");
  asbi_buf_puts(&b, "1");
  for (int i = 0; i < 33; i++) asbi_buf_puts(&b, "]}");
  CHECK(!parses(b.data)); /* 66 levels */
  asbi_buf_free(&b);
  /* Deep garbage that would blow a recursive parser's stack. */
  s = nested(100000, '[', ']');
  CHECK(!parses(s));
  free(s);
}

TEST(long_number) {
  char num[600];
  memset(num, '1', 512);
  num[512] = '\0';
  CHECK(parses(num));
  memset(num, '1', 513);
  num[513] = '\0';
  CHECK(!parses(num));
}

TEST(strings_decoded) {
  cJSON *v = P("{\"s\":\"a\\u00e9\\u20ac\\ud83d\\ude00\\n\\/\",\"t\":\"\xE2\x82\xAC\"}");
  REQUIRE(v != NULL);
  const char *s;
  CHECK_INT(asbi_pj_get_str(v, "s", &s), 0);
  CHECK_STR(s, "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\n/");
  CHECK_INT(asbi_pj_get_str(v, "t", &s), 0);
  CHECK_STR(s, "\xE2\x82\xAC");
  cJSON_Delete(v);
}

/* The string reader skips plain bytes eight at a time: whatever is not
 * plain (an escape, a multi-byte sequence, a quote, a control character, a
 * bad byte) must be found at every offset from the opening quote. */
TEST(string_scan_every_offset) {
  static const struct {
    const char *src, *want;
  } ok[] = {
      {"\\n", "\n"},
      {"\\\"", "\""},
      {"\\\\", "\\"},
      {"\\/", "/"},
      {"\\u00e9", "\xC3\xA9"},
      {"\\u0041", "A"},
      {"\\u20AC", "\xE2\x82\xAC"},
      {"\\ud83d\\ude00", "\xF0\x9F\x98\x80"},
      {"\xC3\xA9", "\xC3\xA9"},
      {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},
      {"\x7F", "\x7F"},
      {"\\t\\u00e9\xC3\xA9\\\\", "\t\xC3\xA9\xC3\xA9\\"},
  };
  static const struct {
    const char *src, *err;
  } bad[] = {
      {"\x01", "control character in string"},
      {"\x1F", "control character in string"},
      {"\\x", "invalid escape in string"},
      {"\\u00G0", "invalid escape in string"},
      {"\\u0000", "NUL character in string"},
      {"\\udc00", "unpaired surrogate in string"},
      {"\\ud800\\u0041", "unpaired surrogate in string"},
      {"\xFF", "invalid UTF-8"},
      {"\x80", "invalid UTF-8"},
      {"\xC3(", "invalid UTF-8"},
      {"\xED\xA0\x80", "invalid UTF-8"},
  };
  char src[160], want[160];
  for (size_t at = 0; at < 70; at++) {
    for (size_t k = 0; k < ASBI_ARRAY_LEN(ok); k++) {
      /* "xxx<escape>yyyyyyyyy" with the escape `at` bytes in. */
      memset(src, 'x', at + 1);
      src[0] = '"';
      size_t n = at + 1;
      n += (size_t)sprintf(src + n, "%s0123456789\"", ok[k].src);
      memset(want, 'x', at);
      sprintf(want + at, "%s0123456789", ok[k].want);
      const char *err = NULL;
      cJSON *v = asbi_pj_parse(src, n, &err);
      if (!v || !cJSON_IsString(v) || strcmp(v->valuestring, want) != 0)
        ASBT_FAIL("ok case %zu at %zu: %s", k, at, v ? "wrong value" : err);
      cJSON_Delete(v);
      /* As an object key too. */
      asbi_buf b = ASBI_BUF_INIT;
      asbi_buf_puts(&b, "{");
      asbi_buf_append(&b, src, n);
      asbi_buf_puts(&b, ":true}");
      v = asbi_pj_parse(b.data, b.len, &err);
      if (!v || !cJSON_GetObjectItemCaseSensitive(v, want))
        ASBT_FAIL("ok key case %zu at %zu: %s", k, at, v ? "not found" : err);
      cJSON_Delete(v);
      asbi_buf_free(&b);
      /* Without its closing quote it is unterminated. */
      CHECK(asbi_pj_parse(src, n - 1, &err) == NULL);
      if (err && strcmp(err, "unterminated string") != 0)
        ASBT_FAIL("ok case %zu at %zu cut: %s", k, at, err);
    }
    for (size_t k = 0; k < ASBI_ARRAY_LEN(bad); k++) {
      memset(src, 'x', at + 1);
      src[0] = '"';
      size_t n = at + 1;
      n += (size_t)sprintf(src + n, "%s0123456789\"", bad[k].src);
      const char *err = NULL;
      cJSON *v = asbi_pj_parse(src, n, &err);
      if (v || !err || strcmp(err, bad[k].err) != 0)
        ASBT_FAIL("bad case %zu at %zu: %s", k, at, v ? "accepted" : err);
      cJSON_Delete(v);
    }
  }
  /* A multi-byte sequence cut by the end of the input. */
  const char *err = NULL;
  CHECK(asbi_pj_parse("\"abcdefghijklmnop\xE2\x82", 19, &err) == NULL);
  CHECK_STR(err, "invalid UTF-8");
}

/* Invalid UTF-8 anywhere is reported as such, ahead of any other error,
 * wherever it sits (the reader checks strings as it goes and the whole
 * input only when it fails). Valid UTF-8 outside a string is a syntax
 * error. */
TEST(utf8_error_comes_first) {
  static const char *inv[] = {
      "\xff",
      "[1,]\xff",
      "\"\\x\xff\"",
      "{\"a\":1}\xff",
      "[\"\xC0\x80\"",
      "{\"a\" 1, \"\xff\"",
      "[\"a\"] \xED\xA0\x80",
      "\xff{}",
      "[1, 2, 3, \xF5]",
      "{\"a\":\"b\xC3\"}",
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(inv); i++) {
    const char *err = NULL;
    cJSON *v = asbi_pj_parse(inv[i], strlen(inv[i]), &err);
    if (v || !err || strcmp(err, "invalid UTF-8") != 0)
      ASBT_FAIL("#%zu: %s", i, v ? "accepted" : err);
    cJSON_Delete(v);
  }
  const char *err = NULL;
  CHECK(asbi_pj_parse("{\"a\":1}\xC3\xA9", 9, &err) == NULL);
  CHECK_STR(err, "trailing data after JSON value");
  CHECK(asbi_pj_parse("[\xC3\xA9]", 4, &err) == NULL);
  CHECK_STR(err, "unexpected character");
}

/* Keys and string values are handed to the tree, not copied: they must
 * still look up, print and free like cJSON's own. */
TEST(strings_owned_by_tree) {
  const char *src = "{\"a\\u00e9\":1,\"b\":\"x\\ny\",\"a\\u00e9\":3,\"\":[\"\",\"z\"]}";
  cJSON *v = P(src);
  REQUIRE(v != NULL);
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(v, "a\xC3\xA9");
  REQUIRE(a != NULL);
  CHECK_INT(a->valuedouble, 1); /* the first of two equal keys */
  CHECK_STR(cJSON_GetObjectItemCaseSensitive(v, "b")->valuestring, "x\ny");
  CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(v, "")), 2);
  char *out = asbi_pj_print(v);
  CHECK_STR(out, "{\"a\xC3\xA9\":1,\"b\":\"x\\ny\",\"a\xC3\xA9\":3,\"\":[\"\",\"z\"]}");
  free(out);
  /* Detaching and re-adding a member works as with cJSON's own items. */
  cJSON *b = cJSON_DetachItemFromObjectCaseSensitive(v, "b");
  REQUIRE(b != NULL);
  CHECK(cJSON_AddItemToObject(v, "c", b));
  CHECK_STR(cJSON_GetObjectItemCaseSensitive(v, "c")->valuestring, "x\ny");
  cJSON *dup = cJSON_Duplicate(v, 1);
  char *o1 = asbi_pj_print(v), *o2 = asbi_pj_print(dup);
  CHECK(o1 && o2 && strcmp(o1, o2) == 0);
  free(o1);
  free(o2);
  cJSON_Delete(dup);
  cJSON_Delete(v);
}

TEST(field_lookup) {
  cJSON *v =
      P("{\"exitCode\":1,\"exit_code\":2,\"watcher_id\":\"w\",\"pid\":3,"
        "\"nothing\":null,\"symlinkTarget\":null,\"symlink_target\":\"x\"}");
  REQUIRE(v != NULL);
  const cJSON *f = asbi_pj_field(v, "exitCode");
  REQUIRE(f != NULL);
  CHECK_INT(f->valuedouble, 1); /* camelCase preferred */
  f = asbi_pj_field(v, "watcherId");
  REQUIRE(f != NULL);
  CHECK_STR(f->valuestring, "w");
  CHECK(asbi_pj_field(v, "pid") != NULL);
  CHECK(asbi_pj_field(v, "nothing") == NULL);
  CHECK(asbi_pj_field(v, "missing") == NULL);
  /* A null camel field is absent even if the snake twin is set: protojson
   * treats null as "not set", and we never prefer one spelling's value over
   * the other's explicit null. */
  CHECK(asbi_pj_field(v, "symlinkTarget") == NULL);
  CHECK(asbi_pj_field(NULL, "pid") == NULL);
  cJSON *arr = P("[1]");
  CHECK(asbi_pj_field(arr, "pid") == NULL);
  cJSON_Delete(arr);
  /* Case-sensitive. */
  CHECK(asbi_pj_field(v, "PID") == NULL);
  CHECK(asbi_pj_field(v, "ExitCode") == NULL); /* its twin "_exit_code" is absent */
  cJSON_Delete(v);
}

TEST(get_i64) {
  cJSON *v =
      P("{\"a\":\"9223372036854775807\",\"b\":\"-9223372036854775808\","
        "\"c\":42,\"d\":-7,\"e\":9007199254740993,\"f\":1e3,\"g\":1.5,"
        "\"h\":\"9223372036854775808\",\"i\":9223372036854775808,"
        "\"j\":true,\"k\":\"12abc\",\"l\":\"\",\"m\":[1],"
        "\"n\":-9223372036854775808,\"o\":\"1.0\",\"p\":1.0,"
        "\"q\":-9223372036854775809,\"r\":{}}");
  REQUIRE(v != NULL);
  int64_t x = 99;
  CHECK_INT(asbi_pj_get_i64(v, "a", &x), 0);
  CHECK(x == INT64_MAX);
  CHECK_INT(asbi_pj_get_i64(v, "b", &x), 0);
  CHECK(x == INT64_MIN);
  CHECK_INT(asbi_pj_get_i64(v, "c", &x), 0);
  CHECK_INT(x, 42);
  CHECK_INT(asbi_pj_get_i64(v, "d", &x), 0);
  CHECK_INT(x, -7);
  CHECK_INT(asbi_pj_get_i64(v, "e", &x), 0);
  CHECK(x == 9007199254740993LL); /* exact beyond 2^53 */
  CHECK_INT(asbi_pj_get_i64(v, "f", &x), 0);
  CHECK_INT(x, 1000);
  CHECK_INT(asbi_pj_get_i64(v, "n", &x), 0);
  CHECK(x == INT64_MIN);
  CHECK_INT(asbi_pj_get_i64(v, "p", &x), 0);
  CHECK_INT(x, 1);
  static const char *bad[] = {"g", "h", "i", "j", "k", "l", "m", "o", "q", "r"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(bad); i++)
    if (asbi_pj_get_i64(v, bad[i], &x) != -1) ASBT_FAIL("field %s accepted", bad[i]);
  x = 5;
  CHECK_INT(asbi_pj_get_i64(v, "absent", &x), 0);
  CHECK_INT(x, 0);
  cJSON_Delete(v);
  /* A number the caller changed after parsing: the stale source text is not
   * trusted. */
  v = P("{\"a\":9007199254740993}");
  cJSON_SetNumberValue(cJSON_GetObjectItem(v, "a"), 12.0);
  CHECK_INT(asbi_pj_get_i64(v, "a", &x), 0);
  CHECK_INT(x, 12);
  cJSON_Delete(v);
  /* Trees built with cJSON directly work too. */
  v = cJSON_CreateObject();
  cJSON_AddNumberToObject(v, "a", 123);
  cJSON_AddNumberToObject(v, "b", 1e300);
  CHECK_INT(asbi_pj_get_i64(v, "a", &x), 0);
  CHECK_INT(x, 123);
  CHECK_INT(asbi_pj_get_i64(v, "b", &x), -1);
  cJSON_Delete(v);
}

TEST(get_32) {
  cJSON *v =
      P("{\"a\":4294967295,\"b\":4294967296,\"c\":-1,\"d\":\"17\","
        "\"e\":2147483647,\"f\":2147483648,\"g\":-2147483648,"
        "\"h\":-2147483649,\"i\":0.5,\"j\":\"x\"}");
  REQUIRE(v != NULL);
  uint32_t u = 9;
  int32_t s = 9;
  CHECK_INT(asbi_pj_get_u32(v, "a", &u), 0);
  CHECK(u == UINT32_MAX);
  CHECK_INT(asbi_pj_get_u32(v, "b", &u), -1);
  CHECK_INT(asbi_pj_get_u32(v, "c", &u), -1);
  CHECK_INT(asbi_pj_get_u32(v, "d", &u), 0);
  CHECK_INT(u, 17);
  CHECK_INT(asbi_pj_get_u32(v, "i", &u), -1);
  CHECK_INT(asbi_pj_get_u32(v, "j", &u), -1);
  CHECK_INT(asbi_pj_get_u32(v, "zz", &u), 0);
  CHECK_INT(u, 0);
  CHECK_INT(asbi_pj_get_i32(v, "e", &s), 0);
  CHECK_INT(s, INT32_MAX);
  CHECK_INT(asbi_pj_get_i32(v, "f", &s), -1);
  CHECK_INT(asbi_pj_get_i32(v, "g", &s), 0);
  CHECK_INT(s, INT32_MIN);
  CHECK_INT(asbi_pj_get_i32(v, "h", &s), -1);
  CHECK_INT(asbi_pj_get_i32(v, "c", &s), 0);
  CHECK_INT(s, -1);
  CHECK_INT(asbi_pj_get_i32(v, "d", &s), 0);
  CHECK_INT(s, 17);
  cJSON_Delete(v);
}

TEST(get_bool_str) {
  cJSON *v = P("{\"t\":true,\"f\":false,\"s\":\"true\",\"n\":1,\"str\":\"x\",\"num\":5}");
  REQUIRE(v != NULL);
  int b = 7;
  CHECK_INT(asbi_pj_get_bool(v, "t", &b), 0);
  CHECK_INT(b, 1);
  CHECK_INT(asbi_pj_get_bool(v, "f", &b), 0);
  CHECK_INT(b, 0);
  CHECK_INT(asbi_pj_get_bool(v, "s", &b), -1);
  CHECK_INT(asbi_pj_get_bool(v, "n", &b), -1);
  b = 7;
  CHECK_INT(asbi_pj_get_bool(v, "absent", &b), 0);
  CHECK_INT(b, 0);
  const char *s = "x";
  CHECK_INT(asbi_pj_get_str(v, "str", &s), 0);
  CHECK_STR(s, "x");
  CHECK_INT(asbi_pj_get_str(v, "num", &s), -1);
  CHECK_INT(asbi_pj_get_str(v, "t", &s), -1);
  CHECK_INT(asbi_pj_get_str(v, "absent", &s), 0);
  CHECK(s == NULL);
  cJSON_Delete(v);
}

TEST(get_bytes) {
  cJSON *v =
      P("{\"a\":\"aGVsbG8=\",\"b\":\"aGVsbG8\",\"c\":\"-_-_\",\"d\":\"+/+/\","
        "\"e\":\"\",\"f\":\"aGVsbG8*\",\"g\":5,\"h\":\"aGVsbG9=\","
        "\"i\":\"AAEC\"}");
  REQUIRE(v != NULL);
  unsigned char *p;
  size_t n;
  CHECK_INT(asbi_pj_get_bytes(v, "a", &p, &n), 0);
  CHECK_MEM(p, n, "hello", 5);
  CHECK_INT(p[n], 0);
  free(p);
  CHECK_INT(asbi_pj_get_bytes(v, "b", &p, &n), 0);
  CHECK_MEM(p, n, "hello", 5);
  free(p);
  CHECK_INT(asbi_pj_get_bytes(v, "c", &p, &n), 0);
  CHECK_MEM(p, n, "\xfb\xff\xbf", 3);
  free(p);
  CHECK_INT(asbi_pj_get_bytes(v, "d", &p, &n), 0);
  CHECK_MEM(p, n, "\xfb\xff\xbf", 3);
  free(p);
  CHECK_INT(asbi_pj_get_bytes(v, "e", &p, &n), 0);
  CHECK_INT(n, 0);
  free(p);
  CHECK_INT(asbi_pj_get_bytes(v, "i", &p, &n), 0);
  CHECK_MEM(p, n, "\x00\x01\x02", 3);
  free(p);
  p = (unsigned char *)1;
  n = 1;
  CHECK_INT(asbi_pj_get_bytes(v, "f", &p, &n), -1);
  CHECK(p == NULL && n == 0);
  CHECK_INT(asbi_pj_get_bytes(v, "g", &p, &n), -1);
  CHECK_INT(asbi_pj_get_bytes(v, "h", &p, &n), -1); /* non-canonical */
  CHECK_INT(asbi_pj_get_bytes(v, "absent", &p, &n), 0);
  CHECK(p == NULL && n == 0);
  cJSON_Delete(v);
}

static const asbi_pj_enum SIGNALS[] = {
    {0, "SIGNAL_UNSPECIFIED"}, {9, "SIGNAL_SIGKILL"}, {15, "SIGNAL_SIGTERM"}, {0, NULL}};

TEST(append_bytes) {
  cJSON *v =
      P("{\"a\":\"aGVsbG8=\",\"b\":\"IHdvcmxk\",\"e\":\"\",\"f\":\"aGVsbG8*\","
        "\"g\":5,\"h\":\"aGVsbG9=\",\"n\":null,\"big\":\"AAAAAAAAAAAA\"}");
  REQUIRE(v != NULL);
  asbi_buf b = ASBI_BUF_INIT;
  size_t n = 99;
  CHECK_INT(asbi_pj_append_bytes(v, "a", &b, &n), 0);
  CHECK_INT(n, 5);
  CHECK_INT(asbi_pj_append_bytes(v, "b", &b, &n), 0);
  CHECK_INT(n, 6);
  CHECK_STR(b.data, "hello world");
  CHECK_INT(b.len, 11);
  /* Absent, null and empty add nothing. */
  n = 99;
  CHECK_INT(asbi_pj_append_bytes(v, "missing", &b, &n), 0);
  CHECK_INT(n, 0);
  CHECK_INT(asbi_pj_append_bytes(v, "n", &b, &n), 0);
  CHECK_INT(asbi_pj_append_bytes(v, "e", &b, &n), 0);
  CHECK_INT(n, 0);
  /* Invalid base64 (a bad character, non-canonical bits) or a non-string
   * fails and leaves the buffer as it was, terminator included. */
  CHECK_INT(asbi_pj_append_bytes(v, "f", &b, &n), -1);
  CHECK_INT(asbi_pj_append_bytes(v, "h", &b, &n), -1);
  CHECK_INT(asbi_pj_append_bytes(v, "g", &b, &n), -1);
  CHECK_INT(n, 0);
  CHECK_INT(b.len, 11);
  CHECK_INT(b.data[11], 0);
  CHECK_STR(b.data, "hello world");
  /* A bounded buffer without room for the decoded size: -2, unchanged. */
  asbi_buf small;
  asbi_buf_init(&small, 8);
  CHECK_INT(asbi_pj_append_bytes(v, "big", &small, &n), -2);
  CHECK_INT(small.len, 0);
  CHECK_INT(asbi_pj_append_bytes(v, "a", &small, &n), 0);
  CHECK_MEM(small.data, small.len, "hello", 5);
  asbi_buf_free(&small);
  asbi_buf_free(&b);
  cJSON_Delete(v);
}

TEST(enums) {
  cJSON *v =
      P("{\"a\":\"SIGNAL_SIGKILL\",\"b\":15,\"c\":\"SIGNAL_BOGUS\","
        "\"d\":true,\"e\":1.5,\"f\":99,\"g\":\"signal_sigkill\","
        "\"h\":4294967296,\"i\":\"15\"}");
  REQUIRE(v != NULL);
  int e = 3;
  CHECK_INT(asbi_pj_get_enum(v, "a", SIGNALS, &e), 0);
  CHECK_INT(e, 9);
  CHECK_INT(asbi_pj_get_enum(v, "b", SIGNALS, &e), 0);
  CHECK_INT(e, 15);
  CHECK_INT(asbi_pj_get_enum(v, "f", SIGNALS, &e), 0); /* open enum */
  CHECK_INT(e, 99);
  CHECK_INT(asbi_pj_get_enum(v, "c", SIGNALS, &e), -1);
  CHECK_INT(asbi_pj_get_enum(v, "d", SIGNALS, &e), -1);
  CHECK_INT(asbi_pj_get_enum(v, "e", SIGNALS, &e), -1);
  CHECK_INT(asbi_pj_get_enum(v, "g", SIGNALS, &e), -1);
  CHECK_INT(asbi_pj_get_enum(v, "h", SIGNALS, &e), -1);
  CHECK_INT(asbi_pj_get_enum(v, "i", SIGNALS, &e), -1);
  e = 3;
  CHECK_INT(asbi_pj_get_enum(v, "absent", SIGNALS, &e), 0);
  CHECK_INT(e, 0);
  CHECK_STR(asbi_pj_enum_name(SIGNALS, 15), "SIGNAL_SIGTERM");
  CHECK(asbi_pj_enum_name(SIGNALS, 3) == NULL);
  CHECK(asbi_pj_enum_name(NULL, 3) == NULL);
  cJSON_Delete(v);
}

TEST(setters_and_print) {
  cJSON *o = cJSON_CreateObject();
  CHECK_INT(asbi_pj_add_i64(o, "zero", 0), 0);
  CHECK_INT(asbi_pj_add_u32(o, "zeroU", 0), 0);
  CHECK_INT(asbi_pj_add_i32(o, "zeroI", 0), 0);
  CHECK_INT(asbi_pj_add_bool(o, "no", 0), 0);
  CHECK_INT(asbi_pj_add_str(o, "empty", ""), 0);
  CHECK_INT(asbi_pj_add_str(o, "null", NULL), 0);
  CHECK_INT(asbi_pj_add_bytes(o, "nob", "", 0), 0);
  CHECK_INT(asbi_pj_add_enum(o, "unspec", SIGNALS, 0), 0);
  char *s = asbi_pj_print(o);
  CHECK_STR(s, "{}"); /* proto3: zero values are omitted */
  free(s);
  CHECK_INT(asbi_pj_add_i64(o, "size", 9223372036854775807LL), 0);
  CHECK_INT(asbi_pj_add_i64(o, "neg", INT64_MIN), 0);
  CHECK_INT(asbi_pj_add_u32(o, "mode", 4294967295u), 0);
  CHECK_INT(asbi_pj_add_i32(o, "exitCode", -1), 0);
  CHECK_INT(asbi_pj_add_bool(o, "exited", 5), 0);
  CHECK_INT(asbi_pj_add_str(o, "name", "a\"b\n\xC3\xA9"), 0);
  CHECK_INT(asbi_pj_add_bytes(o, "stdout", "hi\n", 3), 0);
  CHECK_INT(asbi_pj_add_enum(o, "signal", SIGNALS, 9), 0);
  CHECK_INT(asbi_pj_add_enum(o, "other", SIGNALS, 42), 0);
  s = asbi_pj_print(o);
  CHECK_STR(s,
            "{\"size\":\"9223372036854775807\",\"neg\":\"-9223372036854775808\","
            "\"mode\":4294967295,\"exitCode\":-1,\"exited\":true,"
            "\"name\":\"a\\\"b\\n\xC3\xA9\",\"stdout\":\"aGkK\","
            "\"signal\":\"SIGNAL_SIGKILL\",\"other\":42}");
  /* And everything reads back. */
  cJSON *r = asbi_pj_parse(s, strlen(s), NULL);
  REQUIRE(r != NULL);
  int64_t i64;
  uint32_t u32;
  int32_t i32;
  int b, e;
  const char *str;
  unsigned char *bytes;
  size_t bl;
  CHECK_INT(asbi_pj_get_i64(r, "size", &i64), 0);
  CHECK(i64 == INT64_MAX);
  CHECK_INT(asbi_pj_get_i64(r, "neg", &i64), 0);
  CHECK(i64 == INT64_MIN);
  CHECK_INT(asbi_pj_get_u32(r, "mode", &u32), 0);
  CHECK(u32 == UINT32_MAX);
  CHECK_INT(asbi_pj_get_i32(r, "exitCode", &i32), 0);
  CHECK_INT(i32, -1);
  CHECK_INT(asbi_pj_get_bool(r, "exited", &b), 0);
  CHECK_INT(b, 1);
  CHECK_INT(asbi_pj_get_str(r, "name", &str), 0);
  CHECK_STR(str, "a\"b\n\xC3\xA9");
  CHECK_INT(asbi_pj_get_bytes(r, "stdout", &bytes, &bl), 0);
  CHECK_MEM(bytes, bl, "hi\n", 3);
  free(bytes);
  CHECK_INT(asbi_pj_get_enum(r, "signal", SIGNALS, &e), 0);
  CHECK_INT(e, 9);
  CHECK_INT(asbi_pj_get_enum(r, "other", SIGNALS, &e), 0);
  CHECK_INT(e, 42);
  cJSON_Delete(r);
  free(s);
  cJSON_Delete(o);
  CHECK(asbi_pj_print(NULL) == NULL);
  CHECK_INT(asbi_pj_add_i64(NULL, "x", 1), -1);
  CHECK_INT(asbi_pj_add_str(NULL, "x", "y"), -1);
}

TEST(add_str_invalid_utf8) {
  cJSON *o = cJSON_CreateObject();
  CHECK_INT(asbi_pj_add_str(o, "name", "ok\xff\xC3(\xF0\x9F\x98"), 0);
  char *s = asbi_pj_print(o);
  CHECK_STR(s, "{\"name\":\"ok\xEF\xBF\xBD\xEF\xBF\xBD(\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"}");
  /* The output is always valid input. */
  cJSON *r = asbi_pj_parse(s, strlen(s), NULL);
  CHECK(r != NULL);
  cJSON_Delete(r);
  free(s);
  cJSON_Delete(o);
}

TEST(bytes_round_trip) {
  unsigned char raw[257];
  for (size_t i = 0; i < sizeof raw; i++) raw[i] = (unsigned char)(255 - i);
  for (size_t n = 1; n <= sizeof raw; n += 7) {
    cJSON *o = cJSON_CreateObject();
    REQUIRE(asbi_pj_add_bytes(o, "data", raw, n) == 0);
    char *s = asbi_pj_print(o);
    cJSON *r = asbi_pj_parse(s, strlen(s), NULL);
    unsigned char *p;
    size_t pl;
    CHECK_INT(asbi_pj_get_bytes(r, "data", &p, &pl), 0);
    CHECK_MEM(p, pl, raw, n);
    free(p);
    cJSON_Delete(r);
    free(s);
    cJSON_Delete(o);
  }
}

TEST(every_prefix_of_a_document_fails) {
  const char *doc =
      "{\"event\":{\"end\":{\"exitCode\":1,\"exited\":true,"
      "\"status\":\"exit status 1\",\"error\":\"\\u00e9\"}},"
      "\"list\":[1,-2.5e3,null,false,\"\\ud83d\\ude00\"]}";
  size_t n = strlen(doc);
  for (size_t k = 0; k < n; k++) {
    cJSON *v = asbi_pj_parse(doc, k, NULL);
    if (v) ASBT_FAIL("prefix of length %zu accepted", k);
    cJSON_Delete(v);
  }
  cJSON *v = asbi_pj_parse(doc, n, NULL);
  CHECK(v != NULL);
  int32_t code;
  const cJSON *end = asbi_pj_field(asbi_pj_field(v, "event"), "end");
  CHECK_INT(asbi_pj_get_i32(end, "exitCode", &code), 0);
  CHECK_INT(code, 1);
  cJSON_Delete(v);
}

/* print_exact writes numbers as they were sent (1.0 stays 1.0, long digits
 * stay), strings escaped, structure compact. */
TEST(print_exact_keeps_numbers) {
  cJSON *v =
      P("{\"a\": [1.0, 2, -0.5e3, 12345678901234567890, 0.1],\n \"s\": \"q\\\"\\\\\\n\\u0001\","
        " \"t\": true, \"n\": null, \"o\": {}}");
  REQUIRE(v != NULL);
  char *out = asbi_pj_print_exact(v);
  CHECK_STR(out,
            "{\"a\":[1.0,2,-0.5e3,12345678901234567890,0.1],\"s\":\"q\\\"\\\\\\u000a\\u0001\","
            "\"t\":true,\"n\":null,\"o\":{}}");
  cJSON *back = out ? P(out) : NULL; /* valid JSON again */
  CHECK(back != NULL);
  cJSON_Delete(back);
  free(out);
  /* a number changed after parsing is printed from its value */
  cJSON_SetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(v, "a"), 0), 7);
  out = asbi_pj_print_exact(cJSON_GetObjectItem(v, "a"));
  CHECK(out && strncmp(out, "[7,", 3) == 0);
  free(out);
  cJSON_Delete(v);
}

int main(void) {
  RUN(valid_documents);
  RUN(invalid_documents);
  RUN(error_messages);
  RUN(depth_limit);
  RUN(long_number);
  RUN(strings_decoded);
  RUN(string_scan_every_offset);
  RUN(utf8_error_comes_first);
  RUN(strings_owned_by_tree);
  RUN(field_lookup);
  RUN(get_i64);
  RUN(get_32);
  RUN(get_bool_str);
  RUN(get_bytes);
  RUN(append_bytes);
  RUN(enums);
  RUN(setters_and_print);
  RUN(add_str_invalid_utf8);
  RUN(bytes_round_trip);
  RUN(every_prefix_of_a_document_fails);
  RUN(print_exact_keeps_numbers);
  TEST_MAIN_END();
}
