/* Fuzz the named-command request-args parsing (what the server SDK and the
 * engine do with a POST /commands/<name> body) and placeholder filling.
 * Input: byte 0 picks which of five typed arguments are required, byte 1
 * which have defaults; the rest is the request body.
 * Invariants: a bound result is an object holding only declared arguments,
 * each of its declared type, every required one present; it prints to JSON
 * that parses back and prints identically; filling a command line from it
 * never fails and every quoted value unquotes back to its text.
 * SPDX-License-Identifier: Apache-2.0 */
#include <math.h>

#include "fuzz.h"
#include "proto/cmdargs.h"
#include "proto/pjson.h"

static const char *const NAMES[5] = {"s", "i", "f", "b", "j"};
static const int TYPES[5] = {ASBI_ARG_STRING, ASBI_ARG_INTEGER, ASBI_ARG_FLOAT, ASBI_ARG_BOOLEAN,
                             ASBI_ARG_JSON};
static const char *const DEFAULTS[5] = {"dflt", "-12", "2.5", "yes", "{\"k\":[1,null]}"};

static int type_ok(int type, const cJSON *v) {
  int64_t x;
  switch (type) {
    case ASBI_ARG_STRING:
      return cJSON_IsString(v);
    case ASBI_ARG_INTEGER:
      return asbi_json_get_i64(v, &x) == 0;
    case ASBI_ARG_FLOAT:
      return cJSON_IsNumber(v) && isfinite(v->valuedouble);
    case ASBI_ARG_BOOLEAN:
      return cJSON_IsBool(v);
    default:
      return v != NULL;
  }
}

/* Undo asbi_shell_quote for one word at *p; returns the text (malloc'd). */
static char *unquote_word(const char **p) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_puts(&b, "");
  const char *s = *p;
  while (*s && *s != ' ') {
    if (*s == '\'') {
      const char *e = strchr(s + 1, '\'');
      FUZZ_CHECK(e != NULL);
      asbi_buf_append(&b, s + 1, (size_t)(e - s - 1));
      s = e + 1;
    } else if (*s == '"') {
      const char *e = strchr(s + 1, '"');
      FUZZ_CHECK(e != NULL);
      asbi_buf_append(&b, s + 1, (size_t)(e - s - 1));
      s = e + 1;
    } else {
      asbi_buf_putc(&b, *s++);
    }
  }
  *p = s;
  return asbi_buf_detach(&b, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  unsigned req = data[0], def = data[1];
  const char *body = (const char *)data + 2;
  size_t len = size - 2;
  asbi_argspec specs[5];
  cJSON *dflt[5] = {0};
  for (int i = 0; i < 5; i++) {
    const char *why;
    if (def & (1u << i)) {
      dflt[i] = asbi_arg_from_text(TYPES[i], DEFAULTS[i], &why);
      FUZZ_CHECK(dflt[i] != NULL);
    }
    specs[i].name = NAMES[i];
    specs[i].type = TYPES[i];
    specs[i].required = (req >> i) & 1;
    specs[i].dflt = dflt[i];
  }
  char err[256];
  err[0] = '\0';
  cJSON *args = asbi_args_parse(body, len, specs, 5, err, sizeof err);
  if (!args) {
    FUZZ_CHECK(err[0] != '\0');
    FUZZ_CHECK(strlen(err) < sizeof err);
  } else {
    FUZZ_CHECK(cJSON_IsObject(args));
    for (const cJSON *c = args->child; c; c = c->next) {
      int k = 0;
      while (k < 5 && strcmp(NAMES[k], c->string) != 0) k++;
      FUZZ_CHECK(k < 5);
      FUZZ_CHECK(type_ok(TYPES[k], c));
    }
    for (int i = 0; i < 5; i++)
      if (specs[i].required || specs[i].dflt)
        FUZZ_CHECK(cJSON_GetObjectItemCaseSensitive(args, NAMES[i]) != NULL);
    /* print → parse → print is stable */
    asbi_buf p1 = ASBI_BUF_INIT, p2 = ASBI_BUF_INIT;
    FUZZ_CHECK(asbi_json_print(args, &p1) == 0);
    cJSON *back = asbi_pj_parse(p1.data, p1.len, NULL);
    FUZZ_CHECK(back != NULL);
    FUZZ_CHECK(asbi_json_print(back, &p2) == 0);
    FUZZ_CHECK(p1.len == p2.len && memcmp(p1.data, p2.data, p1.len) == 0);
    cJSON_Delete(back);
    asbi_buf_free(&p1);
    asbi_buf_free(&p2);
    /* fill: each placeholder becomes one shell word equal to the text */
    asbi_buf cmd = ASBI_BUF_INIT;
    FUZZ_CHECK(asbi_args_fill("{s} {i} {f} {b} {j}", args, &cmd, err, sizeof err) == 0);
    const char *p = cmd.data;
    for (int i = 0; i < 5; i++) {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, NAMES[i]);
      char *want = asbi_arg_text(v);
      FUZZ_CHECK(want != NULL);
      /* words may contain spaces only inside quotes: unquote walks them */
      char *got = NULL;
      {
        asbi_buf w = ASBI_BUF_INIT;
        asbi_buf_puts(&w, "");
        while (*p && *p != ' ') {
          const char *q = p;
          char *part = unquote_word(&q);
          asbi_buf_puts(&w, part);
          free(part);
          p = q;
        }
        got = asbi_buf_detach(&w, NULL);
      }
      FUZZ_CHECK(strcmp(got, want) == 0);
      free(got);
      free(want);
      if (*p == ' ') p++;
    }
    FUZZ_CHECK(*p == '\0');
    asbi_buf_free(&cmd);
    cJSON_Delete(args);
  }
  for (int i = 0; i < 5; i++) cJSON_Delete(dflt[i]);
  return 0;
}
