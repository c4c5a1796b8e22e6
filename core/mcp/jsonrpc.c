/* JSON-RPC 2.0 framing, reading and building for the MCP server; see
 * jsonrpc.h. The framer is our own rather than asbi_ndjson because an
 * over-long MCP message must not end the session: it is reported, skipped
 * to its newline, and reading goes on.
 * SPDX-License-Identifier: Apache-2.0 */
#include "jsonrpc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pjson.h"
#include "util/util.h"

/* ---- the framer ------------------------------------------------------------ */

void mcp_framer_init(mcp_framer *f, size_t max) {
  asbi_buf_init(&f->line, 0);
  f->max = max ? max : (4u << 20);
  if (f->max > ((size_t)-1) / 4) f->max = ((size_t)-1) / 4;
  f->skipping = 0;
}

void mcp_framer_free(mcp_framer *f) {
  asbi_buf_free(&f->line);
}

static int blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
  return 1;
}

/* Deliver the buffered line (a CR before its LF removed). */
static int emit(mcp_framer *f, mcp_frame_fn fn, void *ud) {
  asbi_buf *b = &f->line;
  if (b->len && b->data[b->len - 1] == '\r') b->data[--b->len] = '\0';
  int rc = 0;
  if (b->len > f->max)
    rc = fn(ud, NULL, b->len);
  else if (b->len && !blank(b->data, b->len))
    rc = fn(ud, b->data, b->len);
  /* Keep a small allocation for the next line; give big ones back. */
  if (b->cap > (256u << 10))
    asbi_buf_free(b);
  else
    asbi_buf_clear(b);
  return rc;
}

int mcp_framer_feed(mcp_framer *f, const void *p, size_t n, mcp_frame_fn fn, void *ud,
                    size_t *used) {
  const char *c = p, *start = p;
  int rc = 0;
  while (n) {
    const char *nl = memchr(c, '\n', n);
    size_t seg = nl ? (size_t)(nl - c) : n;
    if (f->skipping) {
      if (!nl) {
        c += n;
        break;
      }
      f->skipping = 0;
    } else if (seg > f->max + 1 - f->line.len) {
      /* Over the bound (one byte of slack for a CR before the LF): report
       * it now, not when (if ever) its newline comes. */
      size_t seen = f->line.len + seg;
      asbi_buf_clear(&f->line);
      rc = fn(ud, NULL, seen);
      if (!nl) {
        f->skipping = 1;
        c += n;
        break;
      }
      if (rc) {
        c += seg + 1;
        break;
      }
    } else {
      if (seg && asbi_buf_append(&f->line, c, seg)) {
        rc = -1;
        break;
      }
      if (!nl) {
        c += n;
        break;
      }
      rc = emit(f, fn, ud);
      if (rc) {
        c += seg + 1;
        break;
      }
    }
    c += seg + 1;
    n -= seg + 1;
  }
  if (used) *used = (size_t)(c - start);
  return rc;
}

int mcp_framer_finish(mcp_framer *f, mcp_frame_fn fn, void *ud) {
  if (f->skipping) {
    f->skipping = 0;
    return 0;
  }
  return emit(f, fn, ud);
}

/* ---- UTF-8 ----------------------------------------------------------------- */

char *mcp_utf8_clean(const char *p, size_t n) {
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_buf_reserve(&b, n) != 0) return NULL;
  const unsigned char *s = (const unsigned char *)p;
  size_t i = 0;
  while (i < n) {
    size_t run = i;
    while (run < n && s[run] < 0x80 && s[run] != 0) run++;
    if (run > i && asbi_buf_append(&b, s + i, run - i)) goto oom;
    i = run;
    if (i >= n) break;
    size_t k = s[i] ? asbi_utf8_seq(s + i, n - i) : 0;
    if (k) {
      if (asbi_buf_append(&b, s + i, k)) goto oom;
      i += k;
    } else {
      if (asbi_buf_append(&b, "\xEF\xBF\xBD", 3)) goto oom;
      i++;
    }
  }
  return asbi_buf_detach(&b, NULL);
oom:
  asbi_buf_free(&b);
  return NULL;
}

cJSON *mcp_json_str(const char *p, size_t n) {
  char *s = mcp_utf8_clean(p ? p : "", p ? n : 0);
  if (!s) return NULL;
  cJSON *v = cJSON_CreateString(s);
  free(s);
  return v;
}

/* ---- reading --------------------------------------------------------------- */

/* The id as JSON text if it is a string or an integer (MCP's RequestId),
 * else NULL (*bad = 1 when present but unusable). */
static char *id_text(const cJSON *id, int *bad) {
  *bad = 0;
  if (!id) return NULL;
  if (cJSON_IsString(id)) {
    char *t = cJSON_PrintUnformatted(id);
    return t;
  }
  if (cJSON_IsNumber(id)) {
    double v = id->valuedouble;
    if (isfinite(v) && v == floor(v) && fabs(v) <= 9007199254740992.0) {
      /* asbi_pj_parse keeps the number's source text: echo it exactly. */
      if (id->valuestring) return asbi_strdup(id->valuestring);
      char buf[40];
      snprintf(buf, sizeof buf, "%.0f", v);
      return asbi_strdup(buf);
    }
  }
  *bad = 1;
  return NULL;
}

static void invalid(mcp_msg *m, int code, const char *msg) {
  m->kind = MCP_MSG_INVALID;
  m->err_code = code;
  m->err_msg = msg;
}

static int classify(mcp_msg *m, cJSON *node) {
  memset(m, 0, sizeof *m);
  m->json = node;
  if (!cJSON_IsObject(node)) {
    invalid(m, MCP_INVALID_REQUEST, "Invalid Request: a message must be a JSON object");
    return 0;
  }
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(node, "id");
  int bad_id = 0;
  m->id = id_text(id, &bad_id);
  if (id && !m->id && !cJSON_IsNull(id) && !bad_id) return -1; /* out of memory */
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(node, "jsonrpc");
  if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0) {
    invalid(m, MCP_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    return 0;
  }
  cJSON *method = cJSON_GetObjectItemCaseSensitive(node, "method");
  if (method) {
    if (!cJSON_IsString(method) || !method->valuestring[0]) {
      invalid(m, MCP_INVALID_REQUEST, "Invalid Request: \"method\" must be a non-empty string");
      return 0;
    }
    m->method = method->valuestring;
    cJSON *params = cJSON_GetObjectItemCaseSensitive(node, "params");
    int bad_params = 0;
    if (params && cJSON_IsObject(params))
      m->params = params;
    else if (params && !cJSON_IsNull(params))
      bad_params = 1;
    if (!id) {
      /* A notification is never answered, even when it is wrong. */
      m->kind = MCP_MSG_NOTIFICATION;
      if (bad_params) m->params = NULL;
      return 0;
    }
    if (!m->id) {
      invalid(m, MCP_INVALID_REQUEST, "Invalid Request: \"id\" must be a string or an integer");
      return 0;
    }
    if (bad_params) {
      invalid(m, MCP_INVALID_PARAMS, "Invalid params: \"params\" must be an object");
      return 0;
    }
    m->kind = MCP_MSG_REQUEST;
    return 0;
  }
  int has_result = cJSON_GetObjectItemCaseSensitive(node, "result") != NULL;
  int has_error = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(node, "error"));
  if (id && (has_result != has_error)) {
    m->kind = MCP_MSG_RESPONSE;
    return 0;
  }
  invalid(m, MCP_INVALID_REQUEST,
          "Invalid Request: neither a request (\"method\") nor a response (\"result\"/\"error\")");
  return 0;
}

int mcp_rpc_parse(mcp_parsed *out, const char *text, size_t len) {
  memset(out, 0, sizeof *out);
  const char *err = NULL;
  out->root = asbi_pj_parse(text, len, &err);
  if (!out->root) {
    out->err_code = MCP_PARSE_ERROR;
    snprintf(out->err_msg, sizeof out->err_msg, "Parse error: %s", err ? err : "invalid JSON");
    return out->err_code;
  }
  if (cJSON_IsArray(out->root)) {
    out->batch = 1;
    int n = cJSON_GetArraySize(out->root);
    if (n == 0) {
      out->err_code = MCP_INVALID_REQUEST;
      snprintf(out->err_msg, sizeof out->err_msg, "Invalid Request: empty batch");
      return out->err_code;
    }
    out->msgs = calloc((size_t)n, sizeof *out->msgs);
    if (!out->msgs) return -1;
    cJSON *it;
    cJSON_ArrayForEach(it, out->root) {
      if (classify(&out->msgs[out->count], it)) return -1;
      out->count++;
    }
    return 0;
  }
  out->msgs = calloc(1, sizeof *out->msgs);
  if (!out->msgs) return -1;
  if (classify(&out->msgs[0], out->root)) return -1;
  out->count = 1;
  return 0;
}

void mcp_parsed_free(mcp_parsed *p) {
  if (!p) return;
  for (size_t i = 0; i < p->count; i++) free(p->msgs[i].id);
  free(p->msgs);
  cJSON_Delete(p->root);
  memset(p, 0, sizeof *p);
}

size_t mcp_parsed_replies(const mcp_parsed *p) {
  size_t n = 0;
  for (size_t i = 0; i < p->count; i++)
    if (p->msgs[i].kind == MCP_MSG_REQUEST || p->msgs[i].kind == MCP_MSG_INVALID) n++;
  return n;
}

/* ---- building ---------------------------------------------------------------- */

char *mcp_rpc_result(const char *id, const char *result_json) {
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", id,
                      result_json ? result_json : "{}")) {
    asbi_buf_free(&b);
    return NULL;
  }
  return asbi_buf_detach(&b, NULL);
}

char *mcp_rpc_error(const char *id, int id_null, int code, const char *message, const cJSON *data) {
  cJSON *e = cJSON_CreateObject();
  cJSON *msg = message ? mcp_json_str(message, strlen(message)) : cJSON_CreateString("");
  if (!e || !msg || !cJSON_AddNumberToObject(e, "code", code)) {
    cJSON_Delete(e);
    cJSON_Delete(msg);
    return NULL;
  }
  cJSON_AddItemToObject(e, "message", msg);
  if (data) {
    cJSON *d = cJSON_Duplicate(data, 1);
    if (!d) {
      cJSON_Delete(e);
      return NULL;
    }
    cJSON_AddItemToObject(e, "data", d);
  }
  char *et = cJSON_PrintUnformatted(e);
  cJSON_Delete(e);
  if (!et) return NULL;
  asbi_buf b = ASBI_BUF_INIT;
  int rc;
  if (id)
    rc = asbi_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":%s}", id, et);
  else if (id_null)
    rc = asbi_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":%s}", et);
  else
    rc = asbi_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"error\":%s}", et);
  free(et);
  if (rc) {
    asbi_buf_free(&b);
    return NULL;
  }
  return asbi_buf_detach(&b, NULL);
}

char *mcp_rpc_notification(const char *method, cJSON *params) {
  cJSON *n = cJSON_CreateObject();
  if (!n || !cJSON_AddStringToObject(n, "jsonrpc", "2.0") ||
      !cJSON_AddStringToObject(n, "method", method)) {
    cJSON_Delete(n);
    cJSON_Delete(params);
    return NULL;
  }
  if (params) cJSON_AddItemToObject(n, "params", params);
  char *t = cJSON_PrintUnformatted(n);
  cJSON_Delete(n);
  return t;
}
