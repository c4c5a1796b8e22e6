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

struct MHD_Response *envd_resp_buf(const char *ctype, const void *data, size_t len) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
  if (resp && ctype) MHD_add_response_header(resp, "Content-Type", ctype);
  return resp;
}

struct MHD_Response *envd_resp_empty(void) {
  return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
}

int envd_check_token(envd_hreq *r) {
  char *tok = envd_token();
  if (!tok) return 1;
  const char *h = envd_hdr(r, "X-Access-Token");
  int ok = h && asbi_httpd_token_eq(h, tok);
  free(tok);
  return ok;
}

int envd_check_signing(envd_hreq *r, const char *path, const char *op, char *msg, size_t n) {
  char *tok = envd_token();
  int rc = envd_sign_verify(tok, envd_hdr(r, "X-Access-Token"), envd_arg(r, "signature"),
                            envd_arg(r, "signature_expiration"), envd_arg(r, "username"), path, op,
                            (int64_t)time(NULL), msg, n);
  free(tok);
  return rc;
}

unsigned envd_errno_status(int err) {
  switch (err) {
    case ENOENT:
      return 404;
    case EACCES:
    case EPERM:
    case EROFS:
      return 403;
    case ENOSPC:
    case EDQUOT:
      return 507;
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP:
    case EINVAL:
      return 400;
    default:
      return 500;
  }
}

int envd_body_append(envd_hreq *r, const char *data, size_t len) {
  asbi_httpd_body_append(&r->body, data, len);
  return 0;
}
