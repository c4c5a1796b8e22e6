/* E2B's /execute NDJSON lines. SPDX-License-Identifier: Apache-2.0 */
#include "ndout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

int ci_out_json_str(asbi_buf *b, const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  static const char hex[] = "0123456789abcdef";
  /* Plain runs are copied whole; the worst case (all control bytes) grows
   * six-fold, so reserve per run rather than up front. */
  if (asbi_buf_putc(b, '"')) return -1;
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && s[j] >= 0x20 && s[j] < 0x80 && s[j] != '"' && s[j] != '\\') j++;
    if (j > i && asbi_buf_append(b, s + i, j - i)) return -1;
    i = j;
    if (i >= n) break;
    unsigned c = s[i];
    char esc[8];
    if (c >= 0x80) {
      size_t k = asbi_utf8_seq(s + i, n - i);
      if (k) {
        if (asbi_buf_append(b, s + i, k)) return -1;
        i += k;
      } else {
        if (asbi_buf_puts(b, "\\ufffd")) return -1;
        i++;
      }
      continue;
    }
    switch (c) {
      case '"':
        memcpy(esc, "\\\"", 3);
        break;
      case '\\':
        memcpy(esc, "\\\\", 3);
        break;
      case '\n':
        memcpy(esc, "\\n", 3);
        break;
      case '\r':
        memcpy(esc, "\\r", 3);
        break;
      case '\t':
        memcpy(esc, "\\t", 3);
        break;
      case '\b':
        memcpy(esc, "\\b", 3);
        break;
      case '\f':
        memcpy(esc, "\\f", 3);
        break;
      default:
        memcpy(esc, "\\u00", 4);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        esc[6] = '\0';
    }
    if (asbi_buf_puts(b, esc)) return -1;
    i++;
  }
  return asbi_buf_putc(b, '"');
}

/* Where to cut text at most max bytes long without splitting a UTF-8
 * sequence (invalid bytes may be cut anywhere). */
static size_t cut_at(const char *s, size_t n, size_t max) {
  if (n <= max) return n;
  size_t c = max;
  /* step back over at most 3 continuation bytes to a sequence start */
  for (size_t k = 0; k < 3 && c > 0 && ((unsigned char)s[c] & 0xC0) == 0x80; k++) c--;
  if (c == 0 || asbi_utf8_seq((const unsigned char *)s + c, n - c) == 0) c = max;
  return c;
}

static int hex4(const char *s, unsigned *v) {
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                        : 16u;
    if (d > 15) return -1;
    *v = *v << 4 | d;
  }
  return 0;
}

/* Length of the unit (a character, an escape, or a surrogate pair of
 * escapes) at s[0] of a JSON string body, or 0 if it is not valid. */
static size_t body_unit(const char *s, size_t n) {
  unsigned char c = (unsigned char)s[0];
  if (c < 0x20 || c == '"') return 0;
  if (c >= 0x80) return asbi_utf8_seq((const unsigned char *)s, n);
  if (c != '\\') return 1;
  if (n < 2) return 0;
  if (s[1] && strchr("\"\\/bfnrt", s[1])) return 2;
  unsigned v, w;
  if (s[1] != 'u' || n < 6 || hex4(s + 2, &v)) return 0;
  if (v >= 0xDC00 && v <= 0xDFFF) return 0;
  if (v < 0xD800 || v > 0xDBFF) return 6;
  if (n < 12 || s[6] != '\\' || s[7] != 'u' || hex4(s + 8, &w) || w < 0xDC00 || w > 0xDFFF)
    return 0;
  return 12;
}

int ci_json_body_valid(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    /* plain ASCII runs first: the common case */
    while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x80 && s[i] != '"' &&
           s[i] != '\\')
      i++;
    if (i >= n) break;
    size_t k = body_unit(s + i, n - i);
    if (!k) return 0;
    i += k;
  }
  return 1;
}

size_t ci_out_stream_line(asbi_buf *b, int is_stderr, const char *text, size_t n, const char *ts,
                          int escaped) {
  char now[40];
  if (!ts) {
    asbi_rfc3339_now(now);
    ts = now;
  }
  size_t k;
  if (!escaped) {
    k = cut_at(text, n, CI_OUT_MAX_TEXT);
  } else if (n <= CI_OUT_MAX_TEXT) {
    k = n;
  } else {
    k = 0;
    while (k < n) {
      size_t u = body_unit(text + k, n - k);
      if (!u) u = 1; /* not reached for a checked body */
      if (k + u > CI_OUT_MAX_TEXT && k) break;
      k += u;
    }
  }
  if (asbi_buf_puts(
          b, is_stderr ? "{\"type\":\"stderr\",\"text\":" : "{\"type\":\"stdout\",\"text\":"))
    return 0;
  int rc = escaped ? asbi_buf_putc(b, '"') || asbi_buf_append(b, text, k) || asbi_buf_putc(b, '"')
                   : ci_out_json_str(b, text, k);
  if (rc || asbi_buf_puts(b, ",\"timestamp\":") || ci_out_json_str(b, ts, strlen(ts)) ||
      asbi_buf_puts(b, "}\n"))
    return 0;
  return k ? k : (n ? 0 : 1);
}

int ci_out_stream(asbi_buf *b, int is_stderr, const char *text, size_t n, const char *ts) {
  size_t off = 0;
  do {
    size_t k = ci_out_stream_line(b, is_stderr, text + off, n - off, ts, 0);
    if (!k) return -1;
    off += k;
  } while (off < n);
  return 0;
}

static int put_value(asbi_buf *b, const cJSON *v) {
  if (cJSON_IsString(v)) return ci_out_json_str(b, v->valuestring, strlen(v->valuestring));
  char *p = cJSON_PrintUnformatted(v);
  if (!p) return -1;
  int rc = asbi_buf_puts(b, p);
  free(p);
  return rc;
}

/* A number as a JSON float: shortest round-trip digits, ".0" added to an
 * integral value, so 100.0 stays 100.0 (cJSON would print 100). */
static int put_float(asbi_buf *b, double d) {
  if (d != d || d - d != 0) return asbi_buf_puts(b, "null"); /* NaN, inf */
  char t[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(t, sizeof t, "%.*g", prec, d);
    if (strtod(t, NULL) == d) break;
  }
  if (asbi_buf_puts(b, t)) return -1;
  return strpbrk(t, ".eE") ? 0 : asbi_buf_puts(b, ".0");
}

/* A value printed with every number as a float: a chart's numbers are all
 * floats in E2B's Chart types, and clients in typed languages (Python's
 * isinstance(x, float)) tell 1 from 1.0. */
static int put_floats(asbi_buf *b, const cJSON *v, int depth) {
  if (depth > 64) return -1;
  if (cJSON_IsNumber(v)) return put_float(b, v->valuedouble);
  if (!cJSON_IsArray(v) && !cJSON_IsObject(v)) return put_value(b, v);
  int obj = cJSON_IsObject(v);
  if (asbi_buf_putc(b, obj ? '{' : '[')) return -1;
  const cJSON *it;
  int first = 1;
  cJSON_ArrayForEach(it, v) {
    if (!first && asbi_buf_putc(b, ',')) return -1;
    first = 0;
    if (obj && (ci_out_json_str(b, it->string, strlen(it->string)) || asbi_buf_putc(b, ':')))
      return -1;
    if (put_floats(b, it, depth + 1)) return -1;
  }
  return asbi_buf_putc(b, obj ? '}' : ']');
}

static const struct {
  const char *mime, *key;
} mime_map[] = {
    {"text/plain", "text"},        {"text/html", "html"},
    {"text/markdown", "markdown"}, {"image/svg+xml", "svg"},
    {"image/png", "png"},          {"image/jpeg", "jpeg"},
    {"application/pdf", "pdf"},    {"text/latex", "latex"},
    {"application/json", "json"},  {"application/javascript", "javascript"},
    {"e2b/data", "data"},          {"e2b/chart", "chart"},
};

int ci_out_result(asbi_buf *b, const cJSON *bundle, int is_main) {
  if (asbi_buf_puts(b, "{\"type\":\"result\"")) return -1;
  for (size_t i = 0; i < ASBI_ARRAY_LEN(mime_map); i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(bundle, mime_map[i].mime);
    if (!v || cJSON_IsNull(v)) continue;
    if (asbi_buf_printf(b, ",\"%s\":", mime_map[i].key)) return -1;
    if (i == 0 && cJSON_IsString(v)) {
      const char *t = v->valuestring;
      size_t n = strlen(t);
      if (n && ((t[0] == '\'' && t[n - 1] == '\'') || (t[0] == '"' && t[n - 1] == '"'))) {
        if (ci_out_json_str(b, n > 1 ? t + 1 : t, n > 1 ? n - 2 : 0)) return -1;
        continue;
      }
    }
    if (strcmp(mime_map[i].key, "chart") == 0 ? put_floats(b, v, 0) : put_value(b, v)) return -1;
  }
  if (asbi_buf_puts(b, ",\"extra\":{")) return -1;
  int first = 1;
  const cJSON *it;
  cJSON_ArrayForEach(it, bundle) {
    int known = 0;
    for (size_t i = 0; i < ASBI_ARRAY_LEN(mime_map) && !known; i++)
      known = strcmp(it->string, mime_map[i].mime) == 0;
    if (known || cJSON_IsNull(it)) continue;
    if ((!first && asbi_buf_putc(b, ',')) || ci_out_json_str(b, it->string, strlen(it->string)) ||
        asbi_buf_putc(b, ':') || put_value(b, it))
      return -1;
    first = 0;
  }
  return asbi_buf_printf(b, "},\"is_main_result\":%s}\n", is_main ? "true" : "false");
}

int ci_out_error(asbi_buf *b, const char *name, const char *value, const char *traceback) {
  name = name ? name : "";
  value = value ? value : "";
  traceback = traceback ? traceback : "";
  return asbi_buf_puts(b, "{\"type\":\"error\",\"name\":") ||
                 ci_out_json_str(b, name, strlen(name)) || asbi_buf_puts(b, ",\"value\":") ||
                 ci_out_json_str(b, value, strlen(value)) || asbi_buf_puts(b, ",\"traceback\":") ||
                 ci_out_json_str(b, traceback, strlen(traceback)) || asbi_buf_puts(b, "}\n")
             ? -1
             : 0;
}

int ci_out_count(asbi_buf *b, int n) {
  return asbi_buf_printf(b, "{\"type\":\"number_of_executions\",\"execution_count\":%d}\n", n);
}

int ci_out_type(asbi_buf *b, const char *type) {
  return asbi_buf_printf(b, "{\"type\":\"%s\"}\n", type);
}
