/* envd: the HTTP request context shared by the server plumbing, the RPC
 * dispatch and the plain-HTTP endpoints (/files, /init, /envs, /metrics),
 * and its helpers (hreq.c). Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_HREQ_H
#define ASB_ENVD_HREQ_H

#include <microhttpd.h>

#include "auth.h"
#include "httpd/httpd.h"
#include "rpc.h"
#include "util/buf.h"

typedef struct envd_hreq envd_hreq;
struct envd_hreq {
  struct MHD_Connection *conn;
  const char *method;
  const char *url;
  int sock;
  int hold_fd; /* sock if a streamed answer is chunked (httpd/endhold.h), else -1 */
  /* body handling, set by the route */
  int (*on_body)(envd_hreq *r, const char *data, size_t len);
  /* Builds the response at the end of the body; returns it with *status. */
  struct MHD_Response *(*on_done)(envd_hreq *r, unsigned *status);
  void (*on_free)(envd_hreq *r);
  void *state;
  asbi_httpd_body body; /* bounded body for JSON requests */
  int failed;           /* discard the rest of the body */
  const envd_method *rpc;
  envd_user user;
  int have_user;
  int fs_creds;               /* enter the user's credentials around callbacks */
  struct MHD_Response *early; /* answer decided on the first call */
  unsigned early_status;
  uint64_t t_head; /* ASB_TIMING: ns at the first call (head complete), 0 off */
};

/* Header value (case-insensitive name) or NULL. */
const char *envd_hdr(envd_hreq *r, const char *name);
/* Query argument or NULL. */
const char *envd_arg(envd_hreq *r, const char *name);
/* Responses. JSON errors (E2B's {"code": status, "message"}) are
 * asbi_httpd_json_error's (httpd/httpd.h). */
struct MHD_Response *envd_resp_buf(const char *ctype, const void *data, size_t len);
struct MHD_Response *envd_resp_empty(void);
/* The access token check of every route but /health, /init and /files: 1
 * when no token is set or X-Access-Token matches it. */
int envd_check_token(envd_hreq *r);
/* The connection's access token check for /files: header or signature. 0
 * ok, else fills msg. */
int envd_check_signing(envd_hreq *r, const char *path, const char *op, char *msg, size_t n);

/* The HTTP status of a file operation's errno (ENOENT 404, EACCES/EPERM/
 * EROFS 403, ENOSPC/EDQUOT 507, path errors 400, else 500). */
unsigned envd_errno_status(int err);
/* An on_body that collects the body into r->body (asbi_httpd_body_append:
 * bounded by the limit it was initialised with; past it, body.too_big is
 * set and the rest dropped). */
int envd_body_append(envd_hreq *r, const char *data, size_t len);

#endif
