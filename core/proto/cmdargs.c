/* Named-command arguments: specs, coercion, binding, placeholder filling.
 * SPDX-License-Identifier: Apache-2.0 */
#include "cmdargs.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "pjson.h"

static const char *const NAMES[] = {NULL, "string", "integer", "float", "boolean", "json"};

const char *asbi_argtype_name(int type) {
  return type >= ASBI_ARG_STRING && type <= ASBI_ARG_JSON ? NAMES[type] : NULL;
}

int asbi_argtype_parse(const char *name) {
  static const struct {
    const char *name;
    int type;
  } T[] = {{"string", ASBI_ARG_STRING},   {"str", ASBI_ARG_STRING},   {"integer", ASBI_ARG_INTEGER},
           {"int", ASBI_ARG_INTEGER},     {"float", ASBI_ARG_FLOAT},  {"number", ASBI_ARG_FLOAT},
           {"boolean", ASBI_ARG_BOOLEAN}, {"bool", ASBI_ARG_BOOLEAN}, {"json", ASBI_ARG_JSON},
           {"object", ASBI_ARG_JSON},     {"array", ASBI_ARG_JSON},   {"any", ASBI_ARG_JSON}};
  if (!name) return 0;
  for (size_t i = 0; i < ASBI_ARRAY_LEN(T); i++)
    if (strcmp(T[i].name, name) == 0) return T[i].type;
  return 0;
}

/* ---- numbers ------------------------------------------------------------- */

cJSON *asbi_json_int(int64_t v) {
  cJSON *j = cJSON_CreateNumber((double)v);
  if (!j) return NULL;
  char text[32];
  snprintf(text, sizeof text, "%" PRId64, v);
  size_t n = strlen(text) + 1;
  j->valuestring = cJSON_malloc(n);
  if (!j->valuestring) {
    cJSON_Delete(j);
    return NULL;
  }
  memcpy(j->valuestring, text, n);
  return j;
}

int asbi_json_get_i64(const cJSON *v, int64_t *out) {
  if (!cJSON_IsNumber(v)) return -1;
  double d = v->valuedouble;
  int64_t x;
  /* The kept source text is exact (see pjson.h) while it agrees with d. */
  if (v->valuestring && asbi_parse_i64(v->valuestring, strlen(v->valuestring), &x) == 0 &&
      (double)x == d) {
    *out = x;
    return 0;
  }
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return -1;
  x = (int64_t)d;
  if ((double)x != d) return -1;
  *out = x;
  return 0;
}

/* A decimal integer with an optional sign and nothing else. */
static int parse_int_text(const char *s, int64_t *out) {
  size_t n = strlen(s);
  const char *p = s;
  if (*p == '+' || *p == '-') p++;
  if (!*p || strspn(p, "0123456789") != strlen(p)) return -1;
  if (*s == '+') s++, n--;
  return asbi_parse_i64(s, n, out);
}

/* A finite number written the way JSON or Python's float() would, without
 * hex, inf or nan. */
static int parse_float_text(const char *s, double *out) {
  if (!*s || strlen(s) > 512) return -1;
  for (const char *p = s; *p; p++)
    if (!strchr("0123456789+-.eE", *p)) return -1;
  char tmp[520];
  snprintf(tmp, sizeof tmp, "%s", s);
  /* strtod honours LC_NUMERIC; the text always uses '.'. */
  const char *dp = localeconv()->decimal_point;
  if (dp && strcmp(dp, ".") != 0 && strlen(dp) == 1)
    for (char *p = tmp; *p; p++)
      if (*p == '.') *p = dp[0];
  char *end = NULL;
  errno = 0;
  double d = strtod(tmp, &end);
  if (!end || *end || end == tmp || !isfinite(d)) return -1;
  *out = d;
  return 0;
}

static int parse_bool_text(const char *s, int *out) {
  static const char *const T[] = {"true", "yes", "on", "1"};
  static const char *const F[] = {"false", "no", "off", "0"};
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(s, T[i]) == 0) return *out = 1, 0;
    if (strcasecmp(s, F[i]) == 0) return *out = 0, 0;
  }
  return -1;
}

/* Source text of a number item, or a formatted one into buf. */
static const char *number_text(const cJSON *v, char *buf, size_t len) {
  if (v->valuestring) {
    /* Trust the kept text only while it agrees with the value. */
    char *end = NULL;
    double d = strtod(v->valuestring, &end);
    if (end && !*end && (d == v->valuedouble || isnan(d))) return v->valuestring;
    int64_t x;
    if (asbi_parse_i64(v->valuestring, strlen(v->valuestring), &x) == 0 &&
        (double)x == v->valuedouble)
      return v->valuestring;
  }
  double d = v->valuedouble;
  if (fabs(d) < 1e18 && d == (double)(int64_t)d)
    snprintf(buf, len, "%" PRId64, (int64_t)d);
  else
    snprintf(buf, len, "%.17g", d);
  return buf;
}

/* ---- coercion ------------------------------------------------------------ */

cJSON *asbi_arg_coerce(int type, const cJSON *v, const char **why) {
  static const char *oom = "out of memory";
  *why = NULL;
  char nb[64];
  switch (type) {
    case ASBI_ARG_STRING:
      if (cJSON_IsString(v)) return cJSON_CreateString(v->valuestring);
      if (cJSON_IsNumber(v)) return cJSON_CreateString(number_text(v, nb, sizeof nb));
      if (cJSON_IsBool(v)) return cJSON_CreateString(cJSON_IsTrue(v) ? "true" : "false");
      *why = "expected a string";
      return NULL;
    case ASBI_ARG_INTEGER: {
      int64_t x;
      if (cJSON_IsNumber(v)) {
        if (asbi_json_get_i64(v, &x) == 0) {
          cJSON *r = asbi_json_int(x);
          if (!r) *why = oom;
          return r;
        }
        *why = "expected an integer (a whole number within 64 bits)";
        return NULL;
      }
      if (cJSON_IsString(v) && parse_int_text(v->valuestring, &x) == 0) {
        cJSON *r = asbi_json_int(x);
        if (!r) *why = oom;
        return r;
      }
      *why = "expected an integer";
      return NULL;
    }
    case ASBI_ARG_FLOAT: {
      double d;
      if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
        cJSON *r = cJSON_CreateNumber(v->valuedouble);
        if (!r) *why = oom;
        return r;
      }
      if (cJSON_IsString(v) && parse_float_text(v->valuestring, &d) == 0) {
        cJSON *r = cJSON_CreateNumber(d);
        if (!r) *why = oom;
        return r;
      }
      *why = "expected a number";
      return NULL;
    }
    case ASBI_ARG_BOOLEAN: {
      int b;
      if (cJSON_IsBool(v)) return cJSON_CreateBool(cJSON_IsTrue(v));
      if (cJSON_IsNumber(v) && (v->valuedouble == 0 || v->valuedouble == 1))
        return cJSON_CreateBool(v->valuedouble == 1);
      if (cJSON_IsString(v) && parse_bool_text(v->valuestring, &b) == 0) return cJSON_CreateBool(b);
      *why = "expected a boolean (true/false, yes/no, 1/0)";
      return NULL;
    }
    case ASBI_ARG_JSON: {
      cJSON *r = cJSON_Duplicate(v, 1); /* numbers keep their text */
      if (!r) *why = oom;
      return r;
    }
    default:
      *why = "unknown argument type";
      return NULL;
  }
}

cJSON *asbi_arg_from_text(int type, const char *text, const char **why) {
  *why = NULL;
  if (!text) {
    *why = "no value";
    return NULL;
  }
  if (type == ASBI_ARG_STRING) {
    cJSON *r = cJSON_CreateString(text);
    if (!r) *why = "out of memory";
    return r;
  }
  if (type == ASBI_ARG_JSON) {
    cJSON *r = asbi_pj_parse(text, strlen(text), why);
    if (!r && !*why) *why = "not valid JSON";
    return r;
  }
  cJSON *s = cJSON_CreateString(text);
  if (!s) {
    *why = "out of memory";
    return NULL;
  }
  cJSON *r = asbi_arg_coerce(type, s, why);
  cJSON_Delete(s);
  return r;
}

/* ---- binding ------------------------------------------------------------- */

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* A name safe to echo in a message: printable ASCII, at most 64 bytes. */
static void safe_name(const char *s, char *out, size_t len) {
  size_t o = 0;
  for (; s && *s && o + 4 < len; s++) {
    unsigned char c = (unsigned char)*s;
    out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    if (o >= 64) {
      out[o++] = '.';
      out[o++] = '.';
      out[o++] = '.';
      break;
    }
  }
  out[o] = '\0';
}

cJSON *asbi_args_bind(const cJSON *kwargs, const asbi_argspec *specs, size_t n, char *err,
                      size_t errlen) {
  if (!cJSON_IsObject(kwargs)) {
    seterr(err, errlen, "the arguments must be a JSON object");
    return NULL;
  }
  char nm[80];
  const cJSON *it;
  cJSON_ArrayForEach(it, kwargs) {
    size_t i = 0;
    while (i < n && strcmp(specs[i].name, it->string) != 0) i++;
    if (i == n) {
      safe_name(it->string, nm, sizeof nm);
      seterr(err, errlen, "unexpected argument '%s'", nm);
      return NULL;
    }
    /* Duplicate keys: the strict parser keeps both; refuse. */
    for (const cJSON *o = kwargs->child; o != it; o = o->next)
      if (strcmp(o->string, it->string) == 0) {
        safe_name(it->string, nm, sizeof nm);
        seterr(err, errlen, "argument '%s' given twice", nm);
        return NULL;
      }
  }
  cJSON *out = cJSON_CreateObject();
  if (!out) {
    seterr(err, errlen, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    const asbi_argspec *a = &specs[i];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(kwargs, a->name);
    if (v && cJSON_IsNull(v)) v = NULL;
    cJSON *bound = NULL;
    if (v) {
      const char *why = NULL;
      bound = asbi_arg_coerce(a->type, v, &why);
      if (!bound) {
        safe_name(a->name, nm, sizeof nm);
        seterr(err, errlen, "argument '%s': %s", nm, why ? why : "invalid value");
        cJSON_Delete(out);
        return NULL;
      }
    } else if (a->dflt) {
      bound = cJSON_Duplicate(a->dflt, 1);
      if (!bound) {
        seterr(err, errlen, "out of memory");
        cJSON_Delete(out);
        return NULL;
      }
    } else if (a->required) {
      safe_name(a->name, nm, sizeof nm);
      seterr(err, errlen, "missing required argument '%s'", nm);
      cJSON_Delete(out);
      return NULL;
    } else {
      continue;
    }
    cJSON_AddItemToObject(out, a->name, bound);
  }
  return out;
}

cJSON *asbi_args_parse(const char *body, size_t len, const asbi_argspec *specs, size_t n, char *err,
                       size_t errlen) {
  size_t i = 0;
  while (i < len && strchr(" \t\r\n", body[i])) i++;
  if (i == len) {
    cJSON *empty = cJSON_CreateObject();
    if (!empty) {
      seterr(err, errlen, "out of memory");
      return NULL;
    }
    cJSON *r = asbi_args_bind(empty, specs, n, err, errlen);
    cJSON_Delete(empty);
    return r;
  }
  const char *why = NULL;
  cJSON *kw = asbi_pj_parse(body, len, &why);
  if (!kw) {
    seterr(err, errlen, "the body is not valid JSON: %s", why ? why : "invalid");
    return NULL;
  }
  if (!cJSON_IsObject(kw)) {
    cJSON_Delete(kw);
    seterr(err, errlen, "the body must be a JSON object of arguments");
    return NULL;
  }
  cJSON *r = asbi_args_bind(kw, specs, n, err, errlen);
  cJSON_Delete(kw);
  return r;
}

/* ---- printing ------------------------------------------------------------ */

static int print_string(const char *s, asbi_buf *out) {
  if (asbi_buf_putc(out, '"')) return -1;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    unsigned char c = *p;
    int rc;
    switch (c) {
      case '"':
        rc = asbi_buf_puts(out, "\\\"");
        break;
      case '\\':
        rc = asbi_buf_puts(out, "\\\\");
        break;
      case '\n':
        rc = asbi_buf_puts(out, "\\n");
        break;
      case '\r':
        rc = asbi_buf_puts(out, "\\r");
        break;
      case '\t':
        rc = asbi_buf_puts(out, "\\t");
        break;
      case '\b':
        rc = asbi_buf_puts(out, "\\b");
        break;
      case '\f':
        rc = asbi_buf_puts(out, "\\f");
        break;
      default:
        rc = c < 0x20 ? asbi_buf_printf(out, "\\u%04x", c) : asbi_buf_putc(out, (char)c);
    }
    if (rc) return -1;
  }
  return asbi_buf_putc(out, '"');
}

static int print_value(const cJSON *v, asbi_buf *out, int depth) {
  if (depth > 128) return -1;
  char nb[64];
  if (cJSON_IsNull(v)) return asbi_buf_puts(out, "null");
  if (cJSON_IsTrue(v)) return asbi_buf_puts(out, "true");
  if (cJSON_IsFalse(v)) return asbi_buf_puts(out, "false");
  if (cJSON_IsNumber(v)) {
    if (!isfinite(v->valuedouble)) return asbi_buf_puts(out, "null");
    return asbi_buf_puts(out, number_text(v, nb, sizeof nb));
  }
  if (cJSON_IsString(v)) return print_string(v->valuestring ? v->valuestring : "", out);
  if (cJSON_IsRaw(v)) return asbi_buf_puts(out, v->valuestring ? v->valuestring : "null");
  int obj = cJSON_IsObject(v);
  if (!obj && !cJSON_IsArray(v)) return asbi_buf_puts(out, "null");
  if (asbi_buf_putc(out, obj ? '{' : '[')) return -1;
  for (const cJSON *c = v->child; c; c = c->next) {
    if (c != v->child && asbi_buf_putc(out, ',')) return -1;
    if (obj && (print_string(c->string ? c->string : "", out) || asbi_buf_putc(out, ':')))
      return -1;
    if (print_value(c, out, depth + 1)) return -1;
  }
  return asbi_buf_putc(out, obj ? '}' : ']');
}

int asbi_json_print(const cJSON *v, asbi_buf *out) {
  if (!v) return asbi_buf_puts(out, "null");
  return print_value(v, out, 0);
}

char *asbi_arg_text(const cJSON *v) {
  char nb[64];
  if (!v || cJSON_IsNull(v)) return asbi_strdup("");
  if (cJSON_IsString(v)) return asbi_strdup(v->valuestring ? v->valuestring : "");
  if (cJSON_IsNumber(v)) return asbi_strdup(number_text(v, nb, sizeof nb));
  if (cJSON_IsBool(v)) return asbi_strdup(cJSON_IsTrue(v) ? "true" : "false");
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_json_print(v, &b)) {
    asbi_buf_free(&b);
    return NULL;
  }
  return asbi_buf_detach(&b, NULL);
}

/* ---- shell quoting and placeholders ------------------------------------- */

int asbi_shell_quote(asbi_buf *out, const char *s) {
  static const char safe[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-";
  if (*s && strspn(s, safe) == strlen(s)) return asbi_buf_puts(out, s);
  if (asbi_buf_putc(out, '\'')) return -1;
  for (const char *p = s; *p; p++) {
    int rc = *p == '\'' ? asbi_buf_puts(out, "'\"'\"'") : asbi_buf_putc(out, *p);
    if (rc) return -1;
  }
  return asbi_buf_putc(out, '\'');
}

static int ident_start(char c) {
  return c == '_' || isalpha((unsigned char)c);
}
static int ident_char(char c) {
  return c == '_' || isalnum((unsigned char)c);
}

/* Length of a placeholder "{name}" at p (p[0] == '{'), 0 if none. */
static size_t placeholder_at(const char *p, const char **name, size_t *nlen) {
  if (!ident_start(p[1])) return 0;
  size_t i = 2;
  while (ident_char(p[i])) i++;
  if (p[i] != '}') return 0;
  *name = p + 1;
  *nlen = i - 1;
  return i + 1;
}

/* Walks tmpl: literal runs go to lit(), placeholders to ph(). */
static int walk(const char *tmpl, int (*lit)(void *, const char *, size_t),
                int (*ph)(void *, const char *, size_t), void *ud) {
  const char *p = tmpl, *run = tmpl;
  int rc;
  while (*p) {
    if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
      if (lit && ((rc = lit(ud, run, (size_t)(p - run))) || (rc = lit(ud, p, 1)))) return rc;
      p += 2;
      run = p;
      continue;
    }
    if (p[0] == '$' && p[1] == '{') { /* shell expansion: copy through its '}' */
      const char *end = strchr(p + 2, '}');
      p = end ? end + 1 : p + 2;
      continue;
    }
    const char *name;
    size_t nlen, k;
    if (p[0] == '{' && (k = placeholder_at(p, &name, &nlen))) {
      if (lit && (rc = lit(ud, run, (size_t)(p - run)))) return rc;
      if ((rc = ph(ud, name, nlen))) return rc;
      p += k;
      run = p;
      continue;
    }
    p++;
  }
  return lit ? lit(ud, run, (size_t)(p - run)) : 0;
}

int asbi_args_placeholders(const char *tmpl, int (*fn)(void *ud, const char *name, size_t len),
                           void *ud) {
  return walk(tmpl, NULL, fn, ud);
}

typedef struct fill_ctx {
  const cJSON *args;
  asbi_buf *out;
} fill_ctx;

static int fill_lit(void *ud, const char *s, size_t n) {
  fill_ctx *f = ud;
  return n ? asbi_buf_append(f->out, s, n) : 0;
}

static int fill_ph(void *ud, const char *name, size_t n) {
  fill_ctx *f = ud;
  const cJSON *v = NULL;
  for (const cJSON *c = f->args ? f->args->child : NULL; c; c = c->next)
    if (strlen(c->string) == n && memcmp(c->string, name, n) == 0) v = c;
  char *text = asbi_arg_text(v);
  if (!text) return -1;
  int rc = asbi_shell_quote(f->out, text);
  free(text);
  return rc;
}

int asbi_args_fill(const char *tmpl, const cJSON *args, asbi_buf *out, char *err, size_t errlen) {
  fill_ctx f = {args, out};
  if (walk(tmpl, fill_lit, fill_ph, &f)) {
    seterr(err, errlen, "out of memory");
    return -1;
  }
  if (!out->data && asbi_buf_puts(out, "")) {
    seterr(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}
