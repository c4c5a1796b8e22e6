/* envd: the HTTP request context's helpers: headers, query arguments,
 * responses (E2B's JSON error body), and the access-token and signed-URL
 * checks. SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hreq.h"
#include "sign.h"
#include "state.h"
#include "util/util.h"

const char *envd_hdr(envd_hreq *r, const char *name) {
  return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *envd_arg(envd_hreq *r, const char *name) {
  return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct MHD_Response *envd_resp_buf(const char *ctype, const void *data,
                                   size_t len) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      len, (void *)data, MHD_RESPMEM_MUST_COPY);
  if (resp && ctype) MHD_add_response_header(resp, "Content-Type", ctype);
  return resp;
}

struct MHD_Response *envd_resp_empty(void) {
  return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
}

/* JSON string literal of s (ASCII-safe enough for messages). */
static void json_str(asbi_buf *b, const char *s) {
  cJSON *j = cJSON_CreateString(s ? s : "");
  char *p = j ? cJSON_PrintUnformatted(j) : NULL;
  asbi_buf_puts(b, p ? p : "\"\"");
  free(p);
  cJSON_Delete(j);
}

struct MHD_Response *envd_resp_json_error(unsigned status, const char *fmt,
                                          ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "{\"code\":%u,\"message\":", status);
  json_str(&b, msg);
  asbi_buf_puts(&b, "}\n");
  struct MHD_Response *r =
      envd_resp_buf("application/json; charset=utf-8", b.data, b.len);
  if (r) MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  asbi_buf_free(&b);
  return r;
}

int envd_check_token(envd_hreq *r) {
  char *tok = envd_token();
  if (!tok) return 1;
  const char *h = envd_hdr(r, "X-Access-Token");
  int ok = h && envd_token_eq(h, tok);
  free(tok);
  return ok;
}

int envd_check_signing(envd_hreq *r, const char *path, const char *op,
                       char *msg, size_t n) {
  char *tok = envd_token();
  int rc = envd_sign_verify(tok, envd_hdr(r, "X-Access-Token"),
                            envd_arg(r, "signature"),
                            envd_arg(r, "signature_expiration"),
                            envd_arg(r, "username"), path, op,
                            (int64_t)time(NULL), msg, n);
  free(tok);
  return rc;
}

unsigned envd_errno_status(int err) {
  switch (err) {
  case ENOENT: return 404;
  case EACCES:
  case EPERM:
  case EROFS: return 403;
  case ENOSPC:
  case EDQUOT: return 507;
  case ENOTDIR:
  case EISDIR:
  case ENAMETOOLONG:
  case ELOOP:
  case EINVAL: return 400;
  default: return 500;
  }
}

int envd_body_append(envd_hreq *r, const char *data, size_t len) {
  if (r->body_too_big) return 0;
  if (asbi_buf_append(&r->body, data, len) != 0) {
    r->body_too_big = 1;
    asbi_buf_free(&r->body);
  }
  return 0;
}
