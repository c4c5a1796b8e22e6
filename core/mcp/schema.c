/* Checks a tool's arguments against its inputSchema, so the schema in
 * tools.json is the one description of what a tool accepts and a model
 * gets a message naming the argument it got wrong. Only the keywords
 * tools.json uses are implemented (type, properties, required,
 * additionalProperties, enum, minimum/maximum, minLength/maxLength, items,
 * minItems/maxItems): Debian has no JSON Schema validator library for C,
 * and the whole schema language is far more than this needs. A ctest
 * (mcp.stdio) validates every schema with ajv, so a keyword this file does
 * not know would show up as a disagreement there.
 * SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "util/util.h"

static char *msgf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *msgf(const char *fmt, ...) {
  asbi_buf b = ASBI_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  int rc = asbi_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  if (rc) {
    asbi_buf_free(&b);
    return asbi_strdup("invalid arguments");
  }
  return asbi_buf_detach(&b, NULL);
}

static const char *type_of(const cJSON *v) {
  if (cJSON_IsString(v)) return "string";
  if (cJSON_IsBool(v)) return "boolean";
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsArray(v)) return "array";
  if (cJSON_IsObject(v)) return "object";
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    return isfinite(d) && d == floor(d) ? "integer" : "number";
  }
  return "unknown";
}

static int type_ok(const char *want, const cJSON *v) {
  const char *got = type_of(v);
  if (!strcmp(want, got)) return 1;
  return !strcmp(want, "number") && !strcmp(got, "integer");
}

static size_t utf8_len(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xC0) != 0x80) n++;
  return n;
}

static char *check(const cJSON *schema, const cJSON *v, const char *where);

static char *check_type(const cJSON *schema, const cJSON *v, const char *where) {
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(schema, "type");
  if (!t) return NULL;
  if (cJSON_IsString(t)) {
    if (type_ok(t->valuestring, v)) return NULL;
    const char *w = t->valuestring;
    int vowel = strchr("aeiou", w[0]) != NULL;
    return msgf("%s must be a%s %s, not %s", where, vowel ? "n" : "", w, type_of(v));
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, t) {
    if (cJSON_IsString(it) && type_ok(it->valuestring, v)) return NULL;
  }
  return msgf("%s has the wrong type (%s)", where, type_of(v));
}

static char *check_enum(const cJSON *schema, const cJSON *v, const char *where) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(schema, "enum");
  if (!cJSON_IsArray(e)) return NULL;
  const cJSON *it;
  cJSON_ArrayForEach(it, e) {
    if (cJSON_Compare(it, v, 1)) return NULL;
  }
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "%s must be one of:", where);
  int first = 1;
  cJSON_ArrayForEach(it, e) {
    char *t = cJSON_PrintUnformatted(it);
    asbi_buf_printf(&b, "%s %s", first ? "" : ",", t ? t : "?");
    free(t);
    first = 0;
  }
  return asbi_buf_detach(&b, NULL);
}

static char *check_number(const cJSON *schema, const cJSON *v, const char *where) {
  if (!cJSON_IsNumber(v)) return NULL;
  const cJSON *mn = cJSON_GetObjectItemCaseSensitive(schema, "minimum");
  const cJSON *mx = cJSON_GetObjectItemCaseSensitive(schema, "maximum");
  if (cJSON_IsNumber(mn) && v->valuedouble < mn->valuedouble)
    return msgf("%s must be at least %g", where, mn->valuedouble);
  if (cJSON_IsNumber(mx) && v->valuedouble > mx->valuedouble)
    return msgf("%s must be at most %g", where, mx->valuedouble);
  return NULL;
}

static char *check_string(const cJSON *schema, const cJSON *v, const char *where) {
  if (!cJSON_IsString(v)) return NULL;
  const cJSON *mn = cJSON_GetObjectItemCaseSensitive(schema, "minLength");
  const cJSON *mx = cJSON_GetObjectItemCaseSensitive(schema, "maxLength");
  size_t n = utf8_len(v->valuestring);
  if (cJSON_IsNumber(mn) && (double)n < mn->valuedouble)
    return mn->valuedouble <= 1 ? msgf("%s must not be empty", where)
                                : msgf("%s must be at least %g characters", where, mn->valuedouble);
  if (cJSON_IsNumber(mx) && (double)n > mx->valuedouble)
    return msgf("%s must be at most %g characters", where, mx->valuedouble);
  return NULL;
}

static char *check_array(const cJSON *schema, const cJSON *v, const char *where) {
  if (!cJSON_IsArray(v)) return NULL;
  int n = cJSON_GetArraySize(v);
  const cJSON *mn = cJSON_GetObjectItemCaseSensitive(schema, "minItems");
  const cJSON *mx = cJSON_GetObjectItemCaseSensitive(schema, "maxItems");
  if (cJSON_IsNumber(mn) && n < mn->valuedouble)
    return msgf("%s needs at least %g items", where, mn->valuedouble);
  if (cJSON_IsNumber(mx) && n > mx->valuedouble)
    return msgf("%s takes at most %g items", where, mx->valuedouble);
  const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
  if (!cJSON_IsObject(items)) return NULL;
  int i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, v) {
    char sub[256];
    snprintf(sub, sizeof sub, "%s[%d]", where, i++);
    char *e = check(items, it, sub);
    if (e) return e;
  }
  return NULL;
}

static char *check_object(const cJSON *schema, const cJSON *v, const char *where) {
  if (!cJSON_IsObject(v)) return NULL;
  const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
  const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
  const cJSON *extra = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");
  const cJSON *it;
  cJSON_ArrayForEach(it, req) {
    if (cJSON_IsString(it) && !cJSON_GetObjectItemCaseSensitive(v, it->valuestring))
      return msgf("%s: \"%s\" is required", where, it->valuestring);
  }
  cJSON_ArrayForEach(it, v) {
    char sub[256];
    snprintf(sub, sizeof sub, "%s.%s", where, it->string);
    const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, it->string) : NULL;
    if (ps) {
      char *e = check(ps, it, sub);
      if (e) return e;
    } else if (cJSON_IsFalse(extra)) {
      asbi_buf b = ASBI_BUF_INIT;
      char *name = mcp_utf8_clean(it->string, strlen(it->string));
      asbi_buf_printf(&b, "%s: unknown argument \"%.64s\"", where, name ? name : "?");
      free(name);
      const cJSON *p;
      int first = 1;
      cJSON_ArrayForEach(p, props) {
        asbi_buf_printf(&b, "%s%s", first ? " (known: " : ", ", p->string);
        first = 0;
      }
      if (!first) asbi_buf_puts(&b, ")");
      return asbi_buf_detach(&b, NULL);
    } else if (cJSON_IsObject(extra)) {
      char *e = check(extra, it, sub);
      if (e) return e;
    }
  }
  return NULL;
}

static char *check(const cJSON *schema, const cJSON *v, const char *where) {
  if (!cJSON_IsObject(schema)) return NULL;
  char *e;
  if ((e = check_type(schema, v, where))) return e;
  if ((e = check_enum(schema, v, where))) return e;
  if ((e = check_number(schema, v, where))) return e;
  if ((e = check_string(schema, v, where))) return e;
  if ((e = check_array(schema, v, where))) return e;
  return check_object(schema, v, where);
}

char *mcp_schema_check(const cJSON *schema, const cJSON *value, const char *where) {
  return check(schema, value, where ? where : "arguments");
}
