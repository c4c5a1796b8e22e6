/* Fuzz the strict JSON reader and the proto3 getters/setters.
 * Invariants: accepted input prints to JSON that is accepted again and
 * prints identically; accepted input is valid UTF-8; every getter on every
 * member either succeeds or fails cleanly; setter output parses back.
 * SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>

#include "fuzz.h"
#include "proto/pjson.h"
#include "util/util.h"

static const asbi_pj_enum TABLE[] = {{0, "ZERO"}, {1, "ONE"}, {-2, "MINUS_TWO"}, {0, NULL}};

/* A snake_case key k ("exit_code") is found through its camelCase name
 * ("exitCode") unless that exact name is also present, which wins. */
static void check_snake_lookup(const cJSON *obj, const char *k) {
  char camel[128];
  size_t o = 0, n = strlen(k);
  if (n == 0 || n >= sizeof camel || k[0] < 'a' || k[0] > 'z') return;
  for (size_t i = 0; i < n; i++) {
    char c = k[i];
    if (c == '_') {
      if (i + 1 >= n || k[i + 1] < 'a' || k[i + 1] > 'z') return;
      camel[o++] = (char)(k[++i] - 32);
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      camel[o++] = c;
    } else {
      return;
    }
  }
  camel[o] = '\0';
  const cJSON *exact = cJSON_GetObjectItemCaseSensitive(obj, camel);
  const cJSON *want = exact ? exact : cJSON_GetObjectItemCaseSensitive(obj, k);
  if (cJSON_IsNull(want)) want = NULL;
  FUZZ_CHECK(asbi_pj_field(obj, camel) == want);
  const cJSON *direct = cJSON_GetObjectItemCaseSensitive(obj, k);
  if (strcmp(camel, k) == 0 || !direct || cJSON_IsNull(direct)) return;
  FUZZ_CHECK(exact || asbi_pj_field(obj, camel) == direct);
}

static void exercise_getters(const cJSON *obj) {
  const cJSON *it;
  int budget = 64;
  cJSON_ArrayForEach(it, obj) {
    if (!it->string || budget-- == 0) break;
    const char *k = it->string;
    int64_t i64;
    uint32_t u32;
    int32_t i32;
    int b, e;
    const char *s;
    unsigned char *bytes;
    size_t bl;
    int rc = asbi_pj_get_i64(obj, k, &i64);
    FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc == 0 && cJSON_IsString(it)) {
      /* An int64 string that parsed re-prints to an equivalent string. */
      cJSON *o = cJSON_CreateObject();
      FUZZ_CHECK(asbi_pj_add_i64(o, "v", i64) == 0);
      int64_t back = 0;
      FUZZ_CHECK(asbi_pj_get_i64(o, "v", &back) == 0 && back == i64);
      cJSON_Delete(o);
    }
    rc = asbi_pj_get_u32(obj, k, &u32);
    FUZZ_CHECK(rc == 0 || rc == -1);
    rc = asbi_pj_get_i32(obj, k, &i32);
    FUZZ_CHECK(rc == 0 || rc == -1);
    rc = asbi_pj_get_bool(obj, k, &b);
    FUZZ_CHECK(rc == 0 || rc == -1);
    rc = asbi_pj_get_str(obj, k, &s);
    FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc == 0 && s) FUZZ_CHECK(asbi_utf8_valid(s, strlen(s)));
    rc = asbi_pj_get_bytes(obj, k, &bytes, &bl);
    FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc == 0 && bytes) {
      /* Bytes that decoded re-encode and decode to the same bytes. */
      cJSON *o = cJSON_CreateObject();
      FUZZ_CHECK(asbi_pj_add_bytes(o, "b", bytes, bl) == 0);
      unsigned char *b2;
      size_t l2;
      FUZZ_CHECK(asbi_pj_get_bytes(o, "b", &b2, &l2) == 0);
      FUZZ_CHECK(l2 == bl && (bl == 0 || memcmp(b2, bytes, bl) == 0));
      free(b2);
      cJSON_Delete(o);
    }
    free(bytes);
    rc = asbi_pj_get_enum(obj, k, TABLE, &e);
    FUZZ_CHECK(rc == 0 || rc == -1);
    check_snake_lookup(obj, k);
  }
}

static void exercise_setters(const uint8_t *d, size_t n) {
  cJSON *o = cJSON_CreateObject();
  char *str = malloc(n + 1);
  memcpy(str, d, n);
  str[n] = '\0';
  uint64_t uv = 0;
  for (size_t i = 0; i < n && i < 8; i++) uv = uv << 8 | d[i];
  int64_t v = (int64_t)uv;
  FUZZ_CHECK(asbi_pj_add_str(o, "s", str) == 0);
  FUZZ_CHECK(asbi_pj_add_bytes(o, "b", d, n) == 0);
  FUZZ_CHECK(asbi_pj_add_i64(o, "i", v) == 0);
  FUZZ_CHECK(asbi_pj_add_i32(o, "j", (int32_t)v) == 0);
  FUZZ_CHECK(asbi_pj_add_u32(o, "u", (uint32_t)v) == 0);
  FUZZ_CHECK(asbi_pj_add_bool(o, "t", (int)(v & 1)) == 0);
  FUZZ_CHECK(asbi_pj_add_enum(o, "e", TABLE, (int)(v % 5) - 2) == 0);
  char *out = asbi_pj_print(o);
  FUZZ_CHECK(out != NULL);
  const char *err;
  cJSON *r = asbi_pj_parse(out, strlen(out), &err);
  FUZZ_CHECK(r != NULL);
  int64_t i64;
  int32_t i32;
  uint32_t u32;
  int e;
  unsigned char *bytes;
  size_t bl;
  FUZZ_CHECK(asbi_pj_get_i64(r, "i", &i64) == 0 && i64 == v);
  FUZZ_CHECK(asbi_pj_get_i32(r, "j", &i32) == 0 && i32 == (int32_t)v);
  FUZZ_CHECK(asbi_pj_get_u32(r, "u", &u32) == 0 && u32 == (uint32_t)v);
  FUZZ_CHECK(asbi_pj_get_enum(r, "e", TABLE, &e) == 0 && e == (int)(v % 5) - 2);
  FUZZ_CHECK(asbi_pj_get_bytes(r, "b", &bytes, &bl) == 0);
  FUZZ_CHECK(bl == n && (n == 0 || memcmp(bytes, d, n) == 0));
  free(bytes);
  const char *s;
  FUZZ_CHECK(asbi_pj_get_str(r, "s", &s) == 0);
  /* Valid UTF-8 text comes back unchanged (invalid bytes become U+FFFD). */
  if (asbi_utf8_valid(str, strlen(str))) FUZZ_CHECK(strcmp(s ? s : "", str) == 0);
  cJSON_Delete(r);
  free(out);
  free(str);
  cJSON_Delete(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *err = NULL;
  cJSON *v = asbi_pj_parse((const char *)data, size, &err);
  if (!v) {
    FUZZ_CHECK(err != NULL && *err);
  } else {
    FUZZ_CHECK(err == NULL);
    FUZZ_CHECK(asbi_utf8_valid((const char *)data, size));
    char *out = asbi_pj_print(v);
    FUZZ_CHECK(out != NULL);
    cJSON *again = asbi_pj_parse(out, strlen(out), &err);
    FUZZ_CHECK(again != NULL);
    char *out2 = asbi_pj_print(again);
    FUZZ_CHECK(out2 != NULL && strcmp(out, out2) == 0);
    free(out2);
    free(out);
    cJSON_Delete(again);
    /* Differential: cJSON accepts whatever we accept (but numbers longer
     * than its 63-character buffer) and builds the same tree. */
    char *copy = malloc(size + 1);
    memcpy(copy, data, size);
    copy[size] = '\0';
    cJSON *ref = cJSON_Parse(copy);
    if (ref) {
      char *o1 = asbi_pj_print(v), *o2 = asbi_pj_print(ref);
      FUZZ_CHECK(o1 && o2 && strcmp(o1, o2) == 0);
      free(o1);
      free(o2);
      cJSON_Delete(ref);
    } else {
      size_t run = 0, longest = 0;
      for (size_t i = 0; i < size; i++) {
        run = strchr("0123456789.eE+-", data[i]) && data[i] ? run + 1 : 0;
        if (run > longest) longest = run;
      }
      FUZZ_CHECK(longest > 63);
    }
    free(copy);
    if (cJSON_IsObject(v)) exercise_getters(v);
    const cJSON *child;
    cJSON_ArrayForEach(child, v) if (cJSON_IsObject(child)) exercise_getters(child);
    cJSON_Delete(v);
  }
  if (size <= 4096) exercise_setters(data, size);
  return 0;
}
