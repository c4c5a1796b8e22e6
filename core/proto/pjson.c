/* SPDX-License-Identifier: Apache-2.0 */
/* A strict JSON reader that builds cJSON trees, plus the proto3 JSON
 * mapping helpers.
 *
 * The reader is our own rather than cJSON_Parse because proto3 JSON input
 * arrives from the network and cJSON is lenient in ways that matter here:
 * it accepts raw control characters and "\u0000" (which silently truncates a
 * C string), has no small depth limit, gives no way to reject trailing
 * garbage in a length-bounded buffer, and truncates long numbers. Numbers
 * keep their source text in valuestring (allocated with cJSON_malloc, freed
 * by cJSON_Delete) so int64 values beyond 2^53 read back exactly; the text is
 * only trusted while it still agrees with valuedouble. */
#include "pjson.h"

#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/util.h"

#define MAX_DEPTH 64
#define MAX_NUMBER_TEXT 512

typedef struct reader {
  const unsigned char *s;
  size_t n;
  size_t i;
  const char *err;
} reader;

static cJSON *read_value(reader *r, int depth);

/* A string item that owns s (allocated with cJSON_malloc): what
 * cJSON_CreateString does, minus its copy. On failure s is freed. */
static cJSON *owned_string(char *s) {
  cJSON *v = cJSON_CreateStringReference("");
  if (!v) {
    cJSON_free(s);
    return NULL;
  }
  v->type = cJSON_String; /* no longer a reference: cJSON_Delete frees s */
  v->valuestring = s;
  return v;
}

static void skip_ws(reader *r) {
  while (r->i < r->n) {
    unsigned char c = r->s[r->i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    r->i++;
  }
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int read_hex4(reader *r, size_t at, uint32_t *out) {
  if (r->n - at < 4) return -1;
  uint32_t v = 0;
  for (size_t k = 0; k < 4; k++) {
    int h = hexval(r->s[at + k]);
    if (h < 0) return -1;
    v = v << 4 | (uint32_t)h;
  }
  *out = v;
  return 0;
}

static size_t put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | cp >> 6);
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | cp >> 12);
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | cp >> 18);
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Bytes a string can hold as they are: printable ASCII other than '"' and
 * '\\'. scan_plain returns the index of the first other byte at or after j
 * (n if none): a quote, a backslash, a control character or a byte >= 0x80
 * (the start of a multi-byte UTF-8 sequence). Eight bytes per step: a byte
 * is flagged when it equals '"' or '\\' (x ^ c has a zero byte), is below
 * 0x20, or has its top bit set. The zero-byte and below tests can only
 * misfire above a byte that really is flagged, so the lowest flag is
 * exact. */
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

static inline uint64_t special_bytes(uint64_t x) {
  uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
  return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((x - ONES * 0x20) & ~x) | x) & HIGHS;
}

static inline int is_plain(unsigned char c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

static size_t scan_plain(const unsigned char *s, size_t j, size_t n) {
  while (n - j >= 32) {
    uint64_t w[4];
    memcpy(w, s + j, 32);
    uint64_t m =
        special_bytes(w[0]) | special_bytes(w[1]) | special_bytes(w[2]) | special_bytes(w[3]);
    if (m) break;
    j += 32;
  }
  while (n - j >= 8) {
    uint64_t w;
    memcpy(&w, s + j, 8);
    uint64_t m = special_bytes(w);
    if (m) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      return j + (size_t)(__builtin_ctzll(m) >> 3);
#else
      break;
#endif
    }
    j += 8;
  }
  while (j < n && is_plain(s[j])) j++;
  return j;
}

/* UTF-8 length of the code point of \uXXXX escapes. */
static size_t utf8_len(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* r->i is at the opening quote. Returns a NUL-terminated string allocated
 * with cJSON_malloc (so a cJSON item can own it). Also validates the UTF-8
 * of the string's bytes (asbi_pj_parse relies on it). */
static char *read_string(reader *r) {
  const unsigned char *s = r->s;
  size_t n = r->n;
  size_t start = ++r->i, j = start;
  size_t shrink = 0; /* how much shorter than the source the output is */
  int escaped = 0;
  /* Pass 1: find the closing quote, validate every escape and every
   * multi-byte sequence, and size the output. */
  for (;;) {
    j = scan_plain(s, j, n);
    if (j >= n) {
      r->err = "unterminated string";
      return NULL;
    }
    unsigned char c = s[j];
    if (c == '"') break;
    if (c >= 0x80) {
      size_t k = asbi_utf8_seq(s + j, n - j);
      if (!k) {
        r->err = "invalid UTF-8";
        return NULL;
      }
      j += k;
      continue;
    }
    if (c < 0x20) {
      r->err = "control character in string";
      return NULL;
    }
    /* A backslash. */
    escaped = 1;
    if (j + 1 >= n) {
      r->err = "unterminated string";
      return NULL;
    }
    unsigned char e = s[j + 1];
    if (strchr("\"\\/bfnrt", e) && e) {
      j += 2;
      shrink += 1;
      continue;
    }
    uint32_t u, lo;
    if (e != 'u' || read_hex4(r, j + 2, &u) != 0) {
      r->err = "invalid escape in string";
      return NULL;
    }
    if (u == 0) {
      r->err = "NUL character in string";
      return NULL;
    }
    if (u >= 0xDC00 && u <= 0xDFFF) {
      r->err = "unpaired surrogate in string";
      return NULL;
    }
    if (u >= 0xD800 && u <= 0xDBFF) {
      if (r->n - (j + 6) < 6 || s[j + 6] != '\\' || s[j + 7] != 'u' ||
          read_hex4(r, j + 8, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF) {
        r->err = "unpaired surrogate in string";
        return NULL;
      }
      j += 12;
      shrink += 12 - 4;
    } else {
      j += 6;
      shrink += 6 - utf8_len(u);
    }
  }
  size_t end = j, olen = end - start - shrink;
  char *out = cJSON_malloc(olen + 1);
  if (!out) {
    r->err = "out of memory";
    return NULL;
  }
  if (!escaped) {
    /* The common case: the string is its source bytes. */
    memcpy(out, s + start, olen);
    out[olen] = '\0';
    r->i = end + 1;
    return out;
  }
  /* Pass 2: copy the runs between escapes whole, decode the escapes. */
  size_t o = 0;
  for (size_t k = start; k < end;) {
    const unsigned char *bs = memchr(s + k, '\\', end - k);
    size_t run = (bs ? (size_t)(bs - s) : end) - k;
    memcpy(out + o, s + k, run);
    o += run;
    k += run;
    if (k >= end) break;
    unsigned char e = s[k + 1];
    switch (e) {
      case 'b':
        out[o++] = '\b';
        k += 2;
        continue;
      case 'f':
        out[o++] = '\f';
        k += 2;
        continue;
      case 'n':
        out[o++] = '\n';
        k += 2;
        continue;
      case 'r':
        out[o++] = '\r';
        k += 2;
        continue;
      case 't':
        out[o++] = '\t';
        k += 2;
        continue;
      case 'u':
        break;
      default:
        out[o++] = (char)e;
        k += 2;
        continue;
    }
    uint32_t u, lo;
    read_hex4(r, k + 2, &u);
    k += 6;
    if (u >= 0xD800 && u <= 0xDBFF) {
      read_hex4(r, k + 2, &lo);
      k += 6;
      u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
    }
    o += put_utf8(out + o, u);
  }
  out[o] = '\0'; /* o == olen: pass 1 sized it */
  r->i = end + 1;
  return out;
}

static cJSON *read_number(reader *r) {
  size_t start = r->i, j = start;
  int integral = 1;
  if (j < r->n && r->s[j] == '-') j++;
  if (j >= r->n || r->s[j] < '0' || r->s[j] > '9') goto bad;
  if (r->s[j] == '0') {
    j++;
  } else {
    while (j < r->n && r->s[j] >= '0' && r->s[j] <= '9') j++;
  }
  if (j < r->n && r->s[j] == '.') {
    integral = 0;
    j++;
    if (j >= r->n || r->s[j] < '0' || r->s[j] > '9') goto bad;
    while (j < r->n && r->s[j] >= '0' && r->s[j] <= '9') j++;
  }
  if (j < r->n && (r->s[j] == 'e' || r->s[j] == 'E')) {
    integral = 0;
    j++;
    if (j < r->n && (r->s[j] == '+' || r->s[j] == '-')) j++;
    if (j >= r->n || r->s[j] < '0' || r->s[j] > '9') goto bad;
    while (j < r->n && r->s[j] >= '0' && r->s[j] <= '9') j++;
  }
  size_t len = j - start;
  if (len > MAX_NUMBER_TEXT) {
    r->err = "number too long";
    return NULL;
  }
  char text[MAX_NUMBER_TEXT + 1];
  memcpy(text, r->s + start, len);
  text[len] = '\0';
  double d;
  int64_t x;
  if (integral && asbi_parse_i64(text, len, &x) == 0) {
    d = (double)x;
    if (x == 0 && text[0] == '-') d = -d; /* keep "-0" a negative zero */
  } else {
    /* strtod honours LC_NUMERIC; JSON always uses '.'. */
    char tmp[MAX_NUMBER_TEXT + 1];
    memcpy(tmp, text, len + 1);
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] && dp[0] != '.' && !dp[1]) {
      char *dot = strchr(tmp, '.');
      if (dot) *dot = dp[0];
    }
    d = strtod(tmp, NULL);
  }
  cJSON *item = cJSON_CreateNumber(d);
  char *keep = cJSON_malloc(len + 1);
  if (!item || !keep) {
    cJSON_Delete(item);
    if (keep) cJSON_free(keep);
    r->err = "out of memory";
    return NULL;
  }
  memcpy(keep, text, len + 1);
  item->valuestring = keep;
  r->i = j;
  return item;
bad:
  r->err = "invalid number";
  return NULL;
}

static int read_literal(reader *r, const char *word) {
  size_t l = strlen(word);
  if (r->n - r->i < l || memcmp(r->s + r->i, word, l) != 0) {
    r->err = "invalid literal";
    return -1;
  }
  r->i += l;
  return 0;
}

static cJSON *read_array(reader *r, int depth) {
  cJSON *arr = cJSON_CreateArray();
  if (!arr) {
    r->err = "out of memory";
    return NULL;
  }
  r->i++; /* '[' */
  skip_ws(r);
  if (r->i < r->n && r->s[r->i] == ']') {
    r->i++;
    return arr;
  }
  for (;;) {
    cJSON *v = read_value(r, depth);
    if (!v) goto fail;
    cJSON_AddItemToArray(arr, v);
    skip_ws(r);
    if (r->i >= r->n) {
      r->err = "unterminated array";
      goto fail;
    }
    unsigned char c = r->s[r->i++];
    if (c == ']') return arr;
    if (c != ',') {
      r->err = "expected ',' or ']'";
      goto fail;
    }
  }
fail:
  cJSON_Delete(arr);
  return NULL;
}

static cJSON *read_object(reader *r, int depth) {
  cJSON *obj = cJSON_CreateObject();
  if (!obj) {
    r->err = "out of memory";
    return NULL;
  }
  r->i++; /* '{' */
  skip_ws(r);
  if (r->i < r->n && r->s[r->i] == '}') {
    r->i++;
    return obj;
  }
  for (;;) {
    skip_ws(r);
    if (r->i >= r->n || r->s[r->i] != '"') {
      r->err = "expected a string key";
      goto fail;
    }
    char *key = read_string(r);
    if (!key) goto fail;
    skip_ws(r);
    if (r->i >= r->n || r->s[r->i] != ':') {
      cJSON_free(key);
      r->err = "expected ':'";
      goto fail;
    }
    r->i++;
    cJSON *v = read_value(r, depth);
    if (!v) {
      cJSON_free(key);
      goto fail;
    }
    /* What cJSON_AddItemToObject does, minus copying the key: the item owns
     * it (key came from cJSON_malloc) and cJSON_Delete frees it. */
    v->string = key;
    if (!cJSON_AddItemToArray(obj, v)) {
      cJSON_Delete(v);
      r->err = "out of memory";
      goto fail;
    }
    skip_ws(r);
    if (r->i >= r->n) {
      r->err = "unterminated object";
      goto fail;
    }
    unsigned char c = r->s[r->i++];
    if (c == '}') return obj;
    if (c != ',') {
      r->err = "expected ',' or '}'";
      goto fail;
    }
  }
fail:
  cJSON_Delete(obj);
  return NULL;
}

static cJSON *read_value(reader *r, int depth) {
  skip_ws(r);
  if (r->i >= r->n) {
    r->err = "unexpected end of input";
    return NULL;
  }
  unsigned char c = r->s[r->i];
  switch (c) {
    case '{':
    case '[':
      if (depth >= MAX_DEPTH) {
        r->err = "nesting too deep";
        return NULL;
      }
      return c == '{' ? read_object(r, depth + 1) : read_array(r, depth + 1);
    case '"': {
      char *s = read_string(r);
      if (!s) return NULL;
      cJSON *v = owned_string(s);
      if (!v) r->err = "out of memory";
      return v;
    }
    case 't':
      return read_literal(r, "true") == 0 ? cJSON_CreateTrue() : NULL;
    case 'f':
      return read_literal(r, "false") == 0 ? cJSON_CreateFalse() : NULL;
    case 'n':
      return read_literal(r, "null") == 0 ? cJSON_CreateNull() : NULL;
    default:
      if (c == '-' || (c >= '0' && c <= '9')) return read_number(r);
      r->err = "unexpected character";
      return NULL;
  }
}

/* UTF-8 is validated as the reader goes rather than in a pass of its own:
 * read_string checks every multi-byte sequence inside strings, and outside
 * strings the grammar admits ASCII only, so accepted input is valid UTF-8.
 * Invalid input is reported as such before any other error, as if checked
 * first: on failure the whole input is checked once. */
cJSON *asbi_pj_parse(const char *json, size_t len, const char **err) {
  reader r = {(const unsigned char *)json, len, 0, NULL};
  cJSON *v = NULL;
  if (!json || len == 0) {
    r.err = "empty input";
  } else {
    skip_ws(&r);
    if (r.i == r.n) {
      r.err = "empty input";
    } else {
      v = read_value(&r, 0);
      if (v) {
        skip_ws(&r);
        if (r.i != r.n) {
          r.err = "trailing data after JSON value";
          cJSON_Delete(v);
          v = NULL;
        }
      } else if (!r.err) {
        r.err = "out of memory";
      }
    }
    if (!v && !asbi_utf8_valid(json, len)) r.err = "invalid UTF-8";
  }
  if (err) *err = v ? NULL : r.err;
  return v;
}

/* ---- field access ------------------------------------------------------ */

const cJSON *asbi_pj_field(const cJSON *obj, const char *camel) {
  if (!cJSON_IsObject(obj) || !camel) return NULL;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, camel);
  if (!v) {
    /* snake_case twin: "exitCode" -> "exit_code". */
    char snake[256];
    size_t o = 0;
    int differs = 0;
    for (const char *p = camel; *p; p++) {
      if (o + 3 > sizeof snake) return NULL;
      if (*p >= 'A' && *p <= 'Z') {
        snake[o++] = '_';
        snake[o++] = (char)(*p + 32);
        differs = 1;
      } else {
        snake[o++] = *p;
      }
    }
    snake[o] = '\0';
    if (differs) v = cJSON_GetObjectItemCaseSensitive(obj, snake);
  }
  if (!v || cJSON_IsNull(v)) return NULL;
  return v;
}

static int to_i64(const cJSON *v, int64_t *out) {
  int64_t x;
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if (v->valuestring) {
      const char *t = v->valuestring;
      size_t tl = strlen(t);
      if (asbi_parse_i64(t, tl, &x) == 0) {
        if ((double)x == d) {
          *out = x;
          return 0;
        }
      } else if (tl && tl == strspn(t, "-0123456789") && d <= -9223372036854775808.0) {
        /* An integer below INT64_MIN that rounds to -2^63 as a double. */
        return -1;
      }
    }
    /* NaN fails both comparisons. */
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return -1;
    x = (int64_t)d;
    if ((double)x != d) return -1;
    *out = x;
    return 0;
  }
  if (cJSON_IsString(v) && asbi_parse_i64(v->valuestring, strlen(v->valuestring), &x) == 0) {
    *out = x;
    return 0;
  }
  return -1;
}

int asbi_pj_get_i64(const cJSON *obj, const char *camel, int64_t *out) {
  const cJSON *v = asbi_pj_field(obj, camel);
  *out = 0;
  if (!v) return 0;
  return to_i64(v, out);
}

int asbi_pj_get_u32(const cJSON *obj, const char *camel, uint32_t *out) {
  const cJSON *v = asbi_pj_field(obj, camel);
  int64_t x;
  *out = 0;
  if (!v) return 0;
  if (to_i64(v, &x) != 0 || x < 0 || x > (int64_t)UINT32_MAX) return -1;
  *out = (uint32_t)x;
  return 0;
}

int asbi_pj_get_i32(const cJSON *obj, const char *camel, int32_t *out) {
  const cJSON *v = asbi_pj_field(obj, camel);
  int64_t x;
  *out = 0;
  if (!v) return 0;
  if (to_i64(v, &x) != 0 || x < INT32_MIN || x > INT32_MAX) return -1;
  *out = (int32_t)x;
  return 0;
}

int asbi_pj_get_bool(const cJSON *obj, const char *camel, int *out) {
  const cJSON *v = asbi_pj_field(obj, camel);
  *out = 0;
  if (!v) return 0;
  if (!cJSON_IsBool(v)) return -1;
  *out = cJSON_IsTrue(v) ? 1 : 0;
  return 0;
}

int asbi_pj_get_str(const cJSON *obj, const char *camel, const char **out) {
  const cJSON *v = asbi_pj_field(obj, camel);
  *out = NULL;
  if (!v) return 0;
  if (!cJSON_IsString(v) || !v->valuestring) return -1;
  *out = v->valuestring;
  return 0;
}

int asbi_pj_get_bytes(const cJSON *obj, const char *camel, unsigned char **out, size_t *len) {
  const cJSON *v = asbi_pj_field(obj, camel);
  *out = NULL;
  *len = 0;
  if (!v) return 0;
  if (!cJSON_IsString(v) || !v->valuestring) return -1;
  size_t n = strlen(v->valuestring);
  unsigned char *buf = malloc(asbi_b64_decoded_max(n) + 1);
  size_t got = 0;
  if (!buf) return -1;
  if (asbi_b64_decode(v->valuestring, n, buf, &got) != 0) {
    free(buf);
    return -1;
  }
  buf[got] = '\0';
  *out = buf;
  *len = got;
  return 0;
}

int asbi_pj_append_bytes(const cJSON *obj, const char *camel, asbi_buf *out, size_t *len) {
  const cJSON *v = asbi_pj_field(obj, camel);
  *len = 0;
  if (!v) return 0;
  if (!cJSON_IsString(v) || !v->valuestring) return -1;
  size_t n = strlen(v->valuestring);
  if (n == 0) return 0;
  if (asbi_buf_reserve(out, asbi_b64_decoded_max(n)) != 0) return -2;
  size_t got = 0;
  if (asbi_b64_decode(v->valuestring, n, out->data + out->len, &got) != 0) {
    out->data[out->len] = '\0'; /* the decoder may have written past it */
    return -1;
  }
  out->len += got;
  out->data[out->len] = '\0';
  *len = got;
  return 0;
}

int asbi_pj_get_enum(const cJSON *obj, const char *camel, const asbi_pj_enum *table, int *out) {
  const cJSON *v = asbi_pj_field(obj, camel);
  *out = 0;
  if (!v) return 0;
  if (cJSON_IsString(v)) {
    for (const asbi_pj_enum *e = table; e && e->name; e++) {
      if (strcmp(e->name, v->valuestring) == 0) {
        *out = e->value;
        return 0;
      }
    }
    return -1;
  }
  int64_t x;
  /* proto3 enums are open: any int32 number is accepted. */
  if (cJSON_IsNumber(v) && to_i64(v, &x) == 0 && x >= INT32_MIN && x <= INT32_MAX) {
    *out = (int)x;
    return 0;
  }
  return -1;
}

const char *asbi_pj_enum_name(const asbi_pj_enum *table, int value) {
  for (const asbi_pj_enum *e = table; e && e->name; e++)
    if (e->value == value) return e->name;
  return NULL;
}

/* ---- output ------------------------------------------------------------ */

static int add(cJSON *obj, const char *camel, cJSON *item) {
  if (!item) return -1;
  if (!obj || !camel || !cJSON_AddItemToObject(obj, camel, item)) {
    cJSON_Delete(item);
    return -1;
  }
  return 0;
}

int asbi_pj_add_i64(cJSON *obj, const char *camel, int64_t v) {
  char num[24];
  if (v == 0) return 0;
  snprintf(num, sizeof num, "%" PRId64, v);
  return add(obj, camel, cJSON_CreateString(num));
}

int asbi_pj_add_u32(cJSON *obj, const char *camel, uint32_t v) {
  if (v == 0) return 0;
  return add(obj, camel, cJSON_CreateNumber((double)v));
}

int asbi_pj_add_i32(cJSON *obj, const char *camel, int32_t v) {
  if (v == 0) return 0;
  return add(obj, camel, cJSON_CreateNumber((double)v));
}

int asbi_pj_add_bool(cJSON *obj, const char *camel, int v) {
  if (!v) return 0;
  return add(obj, camel, cJSON_CreateTrue());
}

/* Copy of s with each byte that is not part of valid UTF-8 replaced by
 * U+FFFD, so that printing never produces invalid JSON. */
static char *utf8_sanitize(const char *s) {
  size_t n = strlen(s);
  if (n > ((size_t)-1 - 1) / 3) return NULL;
  char *out = malloc(n * 3 + 1);
  if (!out) return NULL;
  size_t i = 0, o = 0;
  while (i < n) {
    unsigned c = (unsigned char)s[i];
    size_t k = c < 0x80             ? 1
               : (c & 0xE0) == 0xC0 ? 2
               : (c & 0xF0) == 0xE0 ? 3
               : (c & 0xF8) == 0xF0 ? 4
                                    : 0;
    if (k && k <= n - i && asbi_utf8_valid(s + i, k)) {
      memcpy(out + o, s + i, k);
      o += k;
      i += k;
    } else {
      memcpy(out + o, "\xEF\xBF\xBD", 3);
      o += 3;
      i++;
    }
  }
  out[o] = '\0';
  return out;
}

int asbi_pj_add_str(cJSON *obj, const char *camel, const char *v) {
  if (asbi_empty(v)) return 0;
  if (asbi_utf8_valid(v, strlen(v))) return add(obj, camel, cJSON_CreateString(v));
  char *clean = utf8_sanitize(v);
  if (!clean) return -1;
  int rc = add(obj, camel, cJSON_CreateString(clean));
  free(clean);
  return rc;
}

int asbi_pj_add_bytes(cJSON *obj, const char *camel, const void *p, size_t n) {
  if (n == 0) return 0;
  if (n > ((size_t)-1 / 4) * 3 - 3) return -1;
  /* Encoded once, into memory the item then owns (no second copy). */
  char *enc = cJSON_malloc(asbi_b64_encoded_len(n) + 1);
  if (!enc) return -1;
  asbi_b64_encode(p, n, enc, 0, 1);
  return add(obj, camel, owned_string(enc));
}

int asbi_pj_add_time(cJSON *obj, const char *key, int64_t ms) {
  char t[40];
  asbi_rfc3339_ms(ms, t);
  return cJSON_AddStringToObject(obj, key, t) ? 0 : -1;
}

int asbi_pj_add_enum(cJSON *obj, const char *camel, const asbi_pj_enum *table, int value) {
  if (value == 0) return 0;
  const char *name = asbi_pj_enum_name(table, value);
  /* Values missing from the table are written as numbers, like protojson. */
  return add(obj, camel, name ? cJSON_CreateString(name) : cJSON_CreateNumber(value));
}

char *asbi_pj_print(const cJSON *v) {
  if (!v) return NULL;
  return cJSON_PrintUnformatted(v);
}

/* cJSON prints numbers from valuedouble (100.0 as "100", long decimals
 * rounded); asbi_pj_print_exact writes the source text asbi_pj_parse kept,
 * while it still agrees with valuedouble. */
static int print_str(asbi_buf *b, const char *s) {
  if (asbi_buf_putc(b, '"')) return -1;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    int rc;
    if (*p == '"' || *p == '\\')
      rc = asbi_buf_putc(b, '\\') || asbi_buf_putc(b, (char)*p);
    else if (*p < 0x20)
      rc = asbi_buf_printf(b, "\\u%04x", *p);
    else
      rc = asbi_buf_putc(b, (char)*p);
    if (rc) return -1;
  }
  return asbi_buf_putc(b, '"');
}

static int print_exact(asbi_buf *b, const cJSON *v, int depth) {
  if (depth > MAX_DEPTH) return -1;
  if (cJSON_IsNumber(v)) {
    if (v->valuestring && strtod(v->valuestring, NULL) == v->valuedouble)
      return asbi_buf_puts(b, v->valuestring);
    char *p = cJSON_PrintUnformatted(v);
    int rc = p ? asbi_buf_puts(b, p) : -1;
    cJSON_free(p);
    return rc;
  }
  if (cJSON_IsString(v)) return print_str(b, v->valuestring ? v->valuestring : "");
  if (cJSON_IsTrue(v)) return asbi_buf_puts(b, "true");
  if (cJSON_IsFalse(v)) return asbi_buf_puts(b, "false");
  if (cJSON_IsNull(v)) return asbi_buf_puts(b, "null");
  int obj = cJSON_IsObject(v);
  if (!obj && !cJSON_IsArray(v)) return -1;
  if (asbi_buf_putc(b, obj ? '{' : '[')) return -1;
  int first = 1;
  for (const cJSON *it = v->child; it; it = it->next) {
    if (!first && asbi_buf_putc(b, ',')) return -1;
    first = 0;
    if (obj && (print_str(b, it->string ? it->string : "") || asbi_buf_putc(b, ':'))) return -1;
    if (print_exact(b, it, depth + 1)) return -1;
  }
  return asbi_buf_putc(b, obj ? '}' : ']');
}

char *asbi_pj_print_exact(const cJSON *v) {
  if (!v) return NULL;
  asbi_buf b = ASBI_BUF_INIT;
  if (print_exact(&b, v, 0) || !b.data) {
    asbi_buf_free(&b);
    return NULL;
  }
  return asbi_buf_detach(&b, NULL);
}
