/* SPDX-License-Identifier: Apache-2.0 */
#include "connect.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "pjson.h"

/* Buffers that grew past this are released after each message so one large
 * message does not pin memory for the rest of a long stream. */
#define KEEP_CAP (256u * 1024u)

void asbi_connect_dec_init(asbi_connect_dec *d, size_t max_msg) {
  memset(d, 0, sizeof *d);
  asbi_buf_init(&d->msg, 0);
  d->max_msg = max_msg ? max_msg : ASBI_CONNECT_DEFAULT_MAX;
}

void asbi_connect_dec_free(asbi_connect_dec *d) {
  asbi_buf_free(&d->msg);
}

static int fail(asbi_connect_dec *d, int rc) {
  d->failed = rc;
  return rc;
}

/* Deliver one complete envelope: data is either d->msg's contents or, when
 * the whole message lay in the caller's chunk followed by a NUL byte, that
 * chunk itself. Then get ready for the next header. */
static int deliver(asbi_connect_dec *d, const char *data, size_t len, asbi_connect_msg_fn fn,
                   void *ud) {
  unsigned flags = d->hdr[0];
  int rc = 0;
  if (flags & ASBI_CONNECT_FLAG_END_STREAM) d->ended = 1;
  if (fn) rc = fn(ud, flags, data, len);
  d->hdr_have = 0;
  d->in_body = 0;
  d->want = 0;
  if (d->msg.cap > KEEP_CAP)
    asbi_buf_free(&d->msg);
  else
    asbi_buf_clear(&d->msg);
  if (rc != 0) return fail(d, rc);
  return ASBI_CONNECT_OK;
}

int asbi_connect_dec_feed(asbi_connect_dec *d, const void *p, size_t n, asbi_connect_msg_fn fn,
                          void *ud) {
  const unsigned char *s = p;
  size_t i = 0;
  if (d->failed) return d->failed;
  while (i < n) {
    if (d->ended) return fail(d, ASBI_CONNECT_EAFTEREND);
    if (!d->in_body) {
      size_t take = ASBI_CONNECT_HEADER_LEN - d->hdr_have;
      if (take > n - i) take = n - i;
      memcpy(d->hdr + d->hdr_have, s + i, take);
      d->hdr_have += take;
      i += take;
      if (d->hdr_have < ASBI_CONNECT_HEADER_LEN) break;
      unsigned flags = d->hdr[0];
      if (flags & ASBI_CONNECT_FLAG_COMPRESSED) return fail(d, ASBI_CONNECT_ECOMPRESSED);
      if (flags & ~(ASBI_CONNECT_FLAG_COMPRESSED | ASBI_CONNECT_FLAG_END_STREAM))
        return fail(d, ASBI_CONNECT_EFLAGS);
      d->want = (uint32_t)d->hdr[1] << 24 | (uint32_t)d->hdr[2] << 16 | (uint32_t)d->hdr[3] << 8 |
                (uint32_t)d->hdr[4];
      /* Checked before anything is allocated for the body. */
      if ((uint64_t)d->want > (uint64_t)d->max_msg) return fail(d, ASBI_CONNECT_ETOOBIG);
      d->in_body = 1;
      asbi_buf_clear(&d->msg);
    }
    /* None of the body is buffered yet, all of it is in this chunk and the
     * byte after it is a NUL (typically the flags byte of the next data
     * envelope): deliver it where it lies, without copying; data[len] == 0
     * holds. */
    if (d->msg.len == 0 && n - i > d->want && s[i + d->want] == 0) {
      const char *m = (const char *)s + i;
      i += d->want;
      int rc = deliver(d, m, d->want, fn, ud);
      if (rc != 0) return rc;
      continue;
    }
    size_t need = d->want - d->msg.len;
    size_t take = need < n - i ? need : n - i;
    /* Grows geometrically with the bytes that actually arrived: a large
     * declared length alone does not make us allocate it. */
    if (take && asbi_buf_append(&d->msg, s + i, take) != 0) return fail(d, ASBI_CONNECT_ENOMEM);
    i += take;
    if (d->msg.len == d->want) {
      if (!d->msg.data && asbi_buf_reserve(&d->msg, 0) != 0) return fail(d, ASBI_CONNECT_ENOMEM);
      int rc = deliver(d, d->msg.data, d->msg.len, fn, ud);
      if (rc != 0) return rc;
    }
  }
  return ASBI_CONNECT_OK;
}

int asbi_connect_dec_finish(const asbi_connect_dec *d) {
  if (d->failed) return d->failed;
  if (d->in_body || d->hdr_have) return ASBI_CONNECT_ETRUNCATED;
  if (!d->ended) return ASBI_CONNECT_ENOEND;
  return ASBI_CONNECT_OK;
}

const char *asbi_connect_strerror(int code) {
  switch (code) {
    case ASBI_CONNECT_OK:
      return "ok";
    case ASBI_CONNECT_ETOOBIG:
      return "connect envelope exceeds the message size limit";
    case ASBI_CONNECT_ECOMPRESSED:
      return "compressed connect envelope (compression was not negotiated)";
    case ASBI_CONNECT_EFLAGS:
      return "connect envelope has unknown flag bits";
    case ASBI_CONNECT_EAFTEREND:
      return "data after the connect end-stream envelope";
    case ASBI_CONNECT_ETRUNCATED:
      return "connect stream ended inside an envelope";
    case ASBI_CONNECT_ENOEND:
      return "connect stream ended without an end-stream envelope";
    case ASBI_CONNECT_ENOMEM:
      return "out of memory";
    default:
      return "connect stream aborted";
  }
}

int asbi_connect_encode(asbi_buf *out, unsigned flags, const char *msg, size_t len) {
  if (flags > 0xFFu || (uint64_t)len > 0xFFFFFFFFu) return -1;
  if (asbi_buf_reserve(out, ASBI_CONNECT_HEADER_LEN + len) != 0) return -1;
  unsigned char h[ASBI_CONNECT_HEADER_LEN] = {(unsigned char)flags, (unsigned char)(len >> 24),
                                              (unsigned char)(len >> 16), (unsigned char)(len >> 8),
                                              (unsigned char)len};
  asbi_buf_append(out, h, sizeof h); /* cannot fail after the reserve */
  asbi_buf_append(out, msg, len);
  return 0;
}

/* ---- error payloads ---------------------------------------------------- */

static const struct {
  const char *name;
  int http;
} CODES[] = {
    {"canceled", 499},
    {"unknown", 500},
    {"invalid_argument", 400},
    {"deadline_exceeded", 504},
    {"not_found", 404},
    {"already_exists", 409},
    {"permission_denied", 403},
    {"resource_exhausted", 429},
    {"failed_precondition", 400},
    {"aborted", 409},
    {"out_of_range", 400},
    {"unimplemented", 501},
    {"internal", 500},
    {"unavailable", 503},
    {"data_loss", 500},
    {"unauthenticated", 401},
};

int asbi_connect_code_valid(const char *code) {
  if (!code) return 0;
  for (size_t i = 0; i < ASBI_ARRAY_LEN(CODES); i++)
    if (strcmp(code, CODES[i].name) == 0) return 1;
  return 0;
}

int asbi_connect_code_to_http(const char *code) {
  if (!code) return 500;
  for (size_t i = 0; i < ASBI_ARRAY_LEN(CODES); i++)
    if (strcmp(code, CODES[i].name) == 0) return CODES[i].http;
  return 500;
}

/* The Connect specification's "HTTP to Error Code" table (the same as
 * gRPC's): what a client infers from a non-200 status without an error
 * body. Deliberately not the inverse of asbi_connect_code_to_http. */
const char *asbi_connect_code_from_http(int status) {
  switch (status) {
    case 400:
      return "internal";
    case 401:
      return "unauthenticated";
    case 403:
      return "permission_denied";
    case 404:
      return "unimplemented";
    case 429:
    case 502:
    case 503:
    case 504:
      return "unavailable";
    default:
      return "unknown";
  }
}

/* {"code": "<valid code>", "message"?: string, ...}. 0 or -1. */
static int read_error_obj(const cJSON *e, char **code, char **message) {
  if (!cJSON_IsObject(e)) return -1;
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
  if (!cJSON_IsString(c) || !asbi_connect_code_valid(c->valuestring)) return -1;
  if (m && !cJSON_IsNull(m) && !cJSON_IsString(m)) return -1;
  const char *msg = cJSON_IsString(m) ? m->valuestring : "";
  char *cc = asbi_strdup(c->valuestring);
  char *mm = asbi_strdup(msg);
  if (!cc || !mm) {
    free(cc);
    free(mm);
    return -1;
  }
  *code = cc;
  *message = mm;
  return 0;
}

int asbi_connect_parse_end(const char *json, size_t len, char **code, char **message) {
  *code = NULL;
  *message = NULL;
  cJSON *root = asbi_pj_parse(json, len, NULL);
  if (!root) return -1;
  int rc = -1;
  if (cJSON_IsObject(root)) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    if (md && !cJSON_IsObject(md) && !cJSON_IsNull(md)) {
      rc = -1;
    } else if (!e) {
      rc = 0;
    } else if (read_error_obj(e, code, message) == 0) {
      rc = 1;
    }
    /* {"error": null}, {"error": {}} and {"error": {"code": null}} are all
     * invalid per the protocol and end up here as -1. */
  }
  cJSON_Delete(root);
  return rc;
}

int asbi_connect_parse_error(const char *json, size_t len, char **code, char **message) {
  *code = NULL;
  *message = NULL;
  cJSON *root = asbi_pj_parse(json, len, NULL);
  if (!root) return -1;
  int rc = read_error_obj(root, code, message);
  cJSON_Delete(root);
  return rc;
}

/* Append s as a JSON string literal; invalid UTF-8 becomes U+FFFD, as Go's
 * encoding/json does, so the output is always valid JSON. */
static int put_json_string(asbi_buf *out, const char *s) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s);
  if (asbi_buf_putc(out, '"') != 0) return -1;
  size_t i = 0;
  while (i < n) {
    unsigned c = p[i];
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      if (asbi_buf_append(out, esc, 2) != 0) return -1;
      i++;
    } else if (c < 0x20) {
      const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
      if (named) {
        if (asbi_buf_puts(out, named) != 0) return -1;
      } else {
        memcpy(esc, "\\u00", 4);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        if (asbi_buf_append(out, esc, 6) != 0) return -1;
      }
      i++;
    } else if (c < 0x80) {
      if (asbi_buf_putc(out, (char)c) != 0) return -1;
      i++;
    } else {
      size_t k = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
      if (k && k <= n - i && asbi_utf8_valid(s + i, k)) {
        if (asbi_buf_append(out, s + i, k) != 0) return -1;
        i += k;
      } else {
        if (asbi_buf_puts(out, "\xEF\xBF\xBD") != 0) return -1;
        i++;
      }
    }
  }
  return asbi_buf_putc(out, '"');
}

static int put_error_obj(asbi_buf *out, const char *code, const char *message) {
  if (!asbi_connect_code_valid(code)) code = "unknown";
  if (asbi_buf_puts(out, "{\"code\":") != 0 || put_json_string(out, code) != 0) return -1;
  if (!asbi_empty(message) &&
      (asbi_buf_puts(out, ",\"message\":") != 0 || put_json_string(out, message) != 0))
    return -1;
  return asbi_buf_putc(out, '}');
}

int asbi_connect_end_json(asbi_buf *out, const char *code, const char *message) {
  size_t mark = out->len;
  int rc;
  if (!code)
    rc = asbi_buf_puts(out, "{}");
  else
    rc = (asbi_buf_puts(out, "{\"error\":") == 0 && put_error_obj(out, code, message) == 0 &&
          asbi_buf_putc(out, '}') == 0)
             ? 0
             : -1;
  if (rc != 0 && out->data) {
    out->len = mark;
    out->data[mark] = '\0';
  }
  return rc;
}

int asbi_connect_error_json(asbi_buf *out, const char *code, const char *message) {
  size_t mark = out->len;
  if (put_error_obj(out, code, message) != 0) {
    if (out->data) {
      out->len = mark;
      out->data[mark] = '\0';
    }
    return -1;
  }
  return 0;
}
