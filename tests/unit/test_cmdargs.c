/* Unit tests for core/proto/cmdargs: coercion, binding, printing, shell
 * quoting and placeholders. SPDX-License-Identifier: Apache-2.0 */
#include "proto/cmdargs.h"
#include "proto/pjson.h"
#include "testing.h"
#include "util/util.h"

static char *print(const cJSON *v) {
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_json_print(v, &b)) {
    asbi_buf_free(&b);
    return NULL;
  }
  return asbi_buf_detach(&b, NULL);
}

/* Coerces JSON text `in` to type; returns the printed result or the reason
 * prefixed with "!". */
static char *co(int type, const char *in) {
  cJSON *v = asbi_pj_parse(in, strlen(in), NULL);
  if (!v) return asbi_strdup("!parse");
  const char *why = NULL;
  cJSON *r = asbi_arg_coerce(type, v, &why);
  cJSON_Delete(v);
  if (!r) {
    char buf[128];
    snprintf(buf, sizeof buf, "!%s", why ? why : "?");
    return asbi_strdup(buf);
  }
  char *s = print(r);
  cJSON_Delete(r);
  return s;
}

#define CO(type, in, want)     \
  do {                         \
    char *got_ = co(type, in); \
    CHECK_STR(got_, want);     \
    free(got_);                \
  } while (0)

#define CO_FAILS(type, in)                                                           \
  do {                                                                               \
    char *got_ = co(type, in);                                                       \
    if (!got_ || got_[0] != '!') ASBT_FAIL("%s accepted as %d: %s", in, type, got_); \
    free(got_);                                                                      \
  } while (0)

TEST(types) {
  CHECK_STR(asbi_argtype_name(ASBI_ARG_STRING), "string");
  CHECK_STR(asbi_argtype_name(ASBI_ARG_JSON), "json");
  CHECK(asbi_argtype_name(0) == NULL);
  CHECK(asbi_argtype_name(6) == NULL);
  CHECK_INT(asbi_argtype_parse("int"), ASBI_ARG_INTEGER);
  CHECK_INT(asbi_argtype_parse("boolean"), ASBI_ARG_BOOLEAN);
  CHECK_INT(asbi_argtype_parse("number"), ASBI_ARG_FLOAT);
  CHECK_INT(asbi_argtype_parse("object"), ASBI_ARG_JSON);
  CHECK_INT(asbi_argtype_parse("Int"), 0);
  CHECK_INT(asbi_argtype_parse(NULL), 0);
}

TEST(coerce_string) {
  CO(ASBI_ARG_STRING, "\"hi\"", "\"hi\"");
  CO(ASBI_ARG_STRING, "42", "\"42\"");
  CO(ASBI_ARG_STRING, "3.50", "\"3.50\"");
  CO(ASBI_ARG_STRING, "true", "\"true\"");
  CO_FAILS(ASBI_ARG_STRING, "[1]");
  CO_FAILS(ASBI_ARG_STRING, "{}");
}

TEST(coerce_integer) {
  CO(ASBI_ARG_INTEGER, "42", "42");
  CO(ASBI_ARG_INTEGER, "-7", "-7");
  CO(ASBI_ARG_INTEGER, "3.0", "3");
  CO(ASBI_ARG_INTEGER, "1e2", "100");
  CO(ASBI_ARG_INTEGER, "\"42\"", "42");
  CO(ASBI_ARG_INTEGER, "\"+42\"", "42");
  CO(ASBI_ARG_INTEGER, "\"-9223372036854775808\"", "-9223372036854775808");
  CO(ASBI_ARG_INTEGER, "9223372036854775807", "9223372036854775807");
  CO_FAILS(ASBI_ARG_INTEGER, "9223372036854775808");
  CO_FAILS(ASBI_ARG_INTEGER, "\"9223372036854775808\"");
  CO_FAILS(ASBI_ARG_INTEGER, "3.5");
  CO_FAILS(ASBI_ARG_INTEGER, "\"3.5\"");
  CO_FAILS(ASBI_ARG_INTEGER, "\" 4\"");
  CO_FAILS(ASBI_ARG_INTEGER, "\"0x10\"");
  CO_FAILS(ASBI_ARG_INTEGER, "\"\"");
  CO_FAILS(ASBI_ARG_INTEGER, "true");
  CO_FAILS(ASBI_ARG_INTEGER, "\"abc\"");
  CO_FAILS(ASBI_ARG_INTEGER, "[]");
}

TEST(coerce_float) {
  CO(ASBI_ARG_FLOAT, "2.5", "2.5");
  CO(ASBI_ARG_FLOAT, "2", "2");
  CO(ASBI_ARG_FLOAT, "\"2.5\"", "2.5");
  CO(ASBI_ARG_FLOAT, "\"1e3\"", "1000");
  CO(ASBI_ARG_FLOAT, "\"-0.25\"", "-0.25");
  CO_FAILS(ASBI_ARG_FLOAT, "\"nan\"");
  CO_FAILS(ASBI_ARG_FLOAT, "\"inf\"");
  CO_FAILS(ASBI_ARG_FLOAT, "\"1e999\"");
  CO_FAILS(ASBI_ARG_FLOAT, "\"0x1p3\"");
  CO_FAILS(ASBI_ARG_FLOAT, "\"2.5 \"");
  CO_FAILS(ASBI_ARG_FLOAT, "\"\"");
  CO_FAILS(ASBI_ARG_FLOAT, "false");
  CO_FAILS(ASBI_ARG_FLOAT, "null");
}

TEST(coerce_boolean) {
  CO(ASBI_ARG_BOOLEAN, "true", "true");
  CO(ASBI_ARG_BOOLEAN, "false", "false");
  CO(ASBI_ARG_BOOLEAN, "1", "true");
  CO(ASBI_ARG_BOOLEAN, "0", "false");
  const char *t[] = {"\"true\"", "\"YES\"", "\"on\"", "\"1\"", "\"True\""};
  const char *f[] = {"\"false\"", "\"no\"", "\"Off\"", "\"0\"", "\"FALSE\""};
  for (size_t i = 0; i < 5; i++) {
    CO(ASBI_ARG_BOOLEAN, t[i], "true");
    CO(ASBI_ARG_BOOLEAN, f[i], "false");
  }
  CO_FAILS(ASBI_ARG_BOOLEAN, "2");
  CO_FAILS(ASBI_ARG_BOOLEAN, "\"maybe\"");
  CO_FAILS(ASBI_ARG_BOOLEAN, "\"\"");
  CO_FAILS(ASBI_ARG_BOOLEAN, "[]");
}

TEST(coerce_json) {
  CO(ASBI_ARG_JSON, "{\"a\":[1,2,{\"b\":null}]}", "{\"a\":[1,2,{\"b\":null}]}");
  CO(ASBI_ARG_JSON, "12345678901234567890", "12345678901234567890");
  CO(ASBI_ARG_JSON, "\"x\"", "\"x\"");
}

TEST(from_text) {
  const char *why;
  cJSON *v = asbi_arg_from_text(ASBI_ARG_INTEGER, "42", &why);
  int64_t x = 0;
  REQUIRE(v);
  CHECK_INT(asbi_json_get_i64(v, &x), 0);
  CHECK_INT(x, 42);
  cJSON_Delete(v);
  CHECK(asbi_arg_from_text(ASBI_ARG_INTEGER, "forty", &why) == NULL);
  CHECK(why != NULL);
  v = asbi_arg_from_text(ASBI_ARG_STRING, "  spaced {x} ", &why);
  REQUIRE(v);
  CHECK_STR(v->valuestring, "  spaced {x} ");
  cJSON_Delete(v);
  v = asbi_arg_from_text(ASBI_ARG_BOOLEAN, "yes", &why);
  REQUIRE(v);
  CHECK(cJSON_IsTrue(v));
  cJSON_Delete(v);
  v = asbi_arg_from_text(ASBI_ARG_JSON, "[1, 2]", &why);
  REQUIRE(v);
  CHECK(cJSON_IsArray(v));
  cJSON_Delete(v);
  CHECK(asbi_arg_from_text(ASBI_ARG_JSON, "[1,", &why) == NULL);
  CHECK(asbi_arg_from_text(ASBI_ARG_FLOAT, NULL, &why) == NULL);
}

/* Binds body against specs: the printed result or "!<error>". */
static char *bind(const char *body, const asbi_argspec *specs, size_t n) {
  char err[256] = "";
  cJSON *r = asbi_args_parse(body, strlen(body), specs, n, err, sizeof err);
  if (!r) {
    char buf[300];
    snprintf(buf, sizeof buf, "!%s", err);
    return asbi_strdup(buf);
  }
  char *s = print(r);
  cJSON_Delete(r);
  return s;
}

#define BIND(body, want)                                   \
  do {                                                     \
    char *got_ = bind(body, specs, ASBI_ARRAY_LEN(specs)); \
    CHECK_STR(got_, want);                                 \
    free(got_);                                            \
  } while (0)

TEST(bind) {
  const char *why;
  cJSON *d_count = asbi_arg_from_text(ASBI_ARG_INTEGER, "3", &why);
  cJSON *d_loud = asbi_arg_from_text(ASBI_ARG_BOOLEAN, "no", &why);
  asbi_argspec specs[] = {{"name", ASBI_ARG_STRING, 1, NULL},
                          {"count", ASBI_ARG_INTEGER, 0, d_count},
                          {"loud", ASBI_ARG_BOOLEAN, 0, d_loud},
                          {"extra", ASBI_ARG_JSON, 0, NULL}};
  BIND("{\"name\":\"ada\"}", "{\"name\":\"ada\",\"count\":3,\"loud\":false}");
  BIND("{\"count\":\"5\",\"name\":\"x\",\"loud\":\"yes\",\"extra\":[1]}",
       "{\"name\":\"x\",\"count\":5,\"loud\":true,\"extra\":[1]}");
  BIND("{\"name\":\"x\",\"count\":null}", "{\"name\":\"x\",\"count\":3,\"loud\":false}");
  BIND("{}", "!missing required argument 'name'");
  BIND("", "!missing required argument 'name'");
  BIND("  \n", "!missing required argument 'name'");
  BIND("{\"name\":null}", "!missing required argument 'name'");
  BIND("{\"name\":\"x\",\"count\":\"many\"}", "!argument 'count': expected an integer");
  BIND("{\"name\":\"x\",\"nope\":1}", "!unexpected argument 'nope'");
  BIND("{\"name\":\"x\",\"name\":\"y\"}", "!argument 'name' given twice");
  BIND("[1]", "!the body must be a JSON object of arguments");
  BIND("{\"name\":", "!the body is not valid JSON: unexpected end of input");
  char *got = bind("{\"name\":\"\x01\"}", specs, 4);
  CHECK(got && got[0] == '!');
  free(got);
  /* No specs: only {} binds. */
  got = bind("{}", specs, 0);
  CHECK_STR(got, "{}");
  free(got);
  cJSON_Delete(d_count);
  cJSON_Delete(d_loud);
}

TEST(print_exact) {
  const char *in =
      "{\"big\":12345678901234567891,\"neg\":-0,\"s\":\"a\\\"b\\u0001\\n\","
      "\"f\":1.5e300,\"a\":[true,false,null,{}]}";
  cJSON *v = asbi_pj_parse(in, strlen(in), NULL);
  REQUIRE(v);
  char *s = print(v);
  CHECK_STR(s,
            "{\"big\":12345678901234567891,\"neg\":-0,\"s\":\"a\\\"b\\u0001\\n\","
            "\"f\":1.5e300,\"a\":[true,false,null,{}]}");
  free(s);
  cJSON_Delete(v);
  cJSON *n = asbi_json_int(-9007199254740993LL);
  s = print(n);
  CHECK_STR(s, "-9007199254740993");
  free(s);
  cJSON_Delete(n);
  n = cJSON_CreateNumber(0.1);
  s = print(n);
  CHECK_STR(s, "0.10000000000000001");
  free(s);
  cJSON_Delete(n);
}

static char *quote(const char *s) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_shell_quote(&b, s);
  return asbi_buf_detach(&b, NULL);
}

TEST(shell_quote) {
  char *q = quote("plain-word_1.txt");
  CHECK_STR(q, "plain-word_1.txt");
  free(q);
  q = quote("");
  CHECK_STR(q, "''");
  free(q);
  q = quote("two words");
  CHECK_STR(q, "'two words'");
  free(q);
  q = quote("it's; rm -rf / $(x) `y`");
  CHECK_STR(q, "'it'\"'\"'s; rm -rf / $(x) `y`'");
  free(q);
}

static char *fill(const char *tmpl, const char *args) {
  cJSON *a = args ? asbi_pj_parse(args, strlen(args), NULL) : NULL;
  asbi_buf b = ASBI_BUF_INIT;
  char err[64];
  int rc = asbi_args_fill(tmpl, a, &b, err, sizeof err);
  cJSON_Delete(a);
  if (rc) {
    asbi_buf_free(&b);
    return NULL;
  }
  return asbi_buf_detach(&b, NULL);
}

typedef struct names {
  char v[8][32];
  int n;
} names;

static int collect(void *ud, const char *name, size_t len) {
  names *ns = ud;
  if (ns->n >= 8 || len >= 32) return 1;
  memcpy(ns->v[ns->n], name, len);
  ns->v[ns->n++][len] = 0;
  return 0;
}

TEST(placeholders) {
  char *s = fill("echo {greeting}, {name}!", "{\"greeting\":\"hi there\",\"name\":\"ada\"}");
  CHECK_STR(s, "echo 'hi there', ada!");
  free(s);
  s = fill("n={n} b={b} j={j} missing={m}", "{\"n\":42,\"b\":true,\"j\":{\"k\":[1]}}");
  CHECK_STR(s, "n=42 b=true j='{\"k\":[1]}' missing=''");
  free(s);
  /* Literal braces, shell expansions, non-identifiers; single pass. */
  s = fill("{{x}} ${HOME} ${x} {1} { x} {x-y} {x", "{\"x\":\"{x}\"}");
  CHECK_STR(s, "{x} ${HOME} ${x} {1} { x} {x-y} {x");
  free(s);
  s = fill("a {x} b", "{\"x\":\"{x}\"}");
  CHECK_STR(s, "a '{x}' b");
  free(s);
  s = fill("", NULL);
  CHECK_STR(s, "");
  free(s);
  names ns;
  memset(&ns, 0, sizeof ns);
  CHECK_INT(asbi_args_placeholders("cp {src} {dest} ${HOME}/{{lit}} {_a1}", collect, &ns), 0);
  CHECK_INT(ns.n, 3);
  CHECK_STR(ns.v[0], "src");
  CHECK_STR(ns.v[1], "dest");
  CHECK_STR(ns.v[2], "_a1");
}

int main(void) {
  RUN(types);
  RUN(coerce_string);
  RUN(coerce_integer);
  RUN(coerce_float);
  RUN(coerce_boolean);
  RUN(coerce_json);
  RUN(from_text);
  RUN(bind);
  RUN(print_exact);
  RUN(shell_quote);
  RUN(placeholders);
  TEST_MAIN_END();
}
