/* The control plane's requests (L2, a sibling of envd.c): one request to
 * E2B's REST API with the client's key (local mode: the engine started if
 * nobody answers), statuses mapped to asb_status; and asking it whether a
 * sandbox a call could not reach still exists.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pjson.h"
#include "util/util.h"
#include "envd.h"

/* A control-plane request with a raw body (see internal.h). */
int asbi_cp_request_raw(asb_client *c, const char *method, const char *path, const void *body,
                        size_t body_len, const char *content_type, long timeout_ms,
                        asb_cancel *cancel, asb_cancel *stop, int flags, const char *what,
                        const int *ok_statuses, int *status, cJSON **out,
                        asbi_http_resp *keep_resp) {
  if (out) *out = NULL;
  int rc = asbi_client_local_prepare(c, flags & ASBI_CP_NO_START ? -1 : 0);
  if (rc) return rc;
  for (int attempt = 0;; attempt++) {
    asbi_buf url = ASBI_BUF_INIT, key = ASBI_BUF_INIT, ua = ASBI_BUF_INIT, ct = ASBI_BUF_INIT;
    asbi_buf_printf(&url, "%s%s", c->api_url, path);
    pthread_mutex_lock(&c->mu);
    if (c->api_key) asbi_buf_printf(&key, "X-API-Key: %s", c->api_key);
    pthread_mutex_unlock(&c->mu);
    asbi_buf_printf(&ua, "User-Agent: %s", c->user_agent);
    if (content_type) asbi_buf_printf(&ct, "Content-Type: %s", content_type);
    const char *hs[5];
    size_t n = 0;
    if (key.data) hs[n++] = key.data;
    hs[n++] = ua.data;
    if (ct.data) hs[n++] = ct.data;
    hs[n] = NULL;
    asbi_http_req r = {.method = method,
                       .url = url.data,
                       .headers = hs,
                       .headers2 = (const char *const *)c->headers,
                       .body = body,
                       .body_len = body ? body_len : 0,
                       .timeout_ms = timeout_ms,
                       .cancel = cancel,
                       .stop = stop,
                       .idempotent = (flags & ASBI_CP_IDEMPOTENT) != 0,
                       .max_retries = c->max_retries,
                       .max_body = 32u << 20};
    asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
    rc = url.data && ua.data && (!content_type || ct.data) ? asbi_http_do(c->http, &r, &resp)
                                                           : asbi_oom();
    asbi_buf_free(&url);
    asbi_buf_free(&key);
    asbi_buf_free(&ua);
    asbi_buf_free(&ct);
    /* Local mode: nobody listening means the engine is not running yet. */
    if (rc == ASB_ECONNECTION && c->local && attempt == 0 && !(flags & ASBI_CP_NO_START)) {
      asbi_http_resp_free(&resp);
      if ((rc = asbi_client_local_prepare(c, 1))) break;
      continue;
    }
    if (rc) {
      asbi_prefix_error(rc, what);
      asbi_http_resp_free(&resp);
      break;
    }
    if (status) *status = (int)resp.status;
    int accepted = resp.status >= 200 && resp.status < 300;
    for (const int *s = ok_statuses; s && *s; s++)
      if (*s == resp.status) accepted = 1;
    if (!accepted) {
      rc = asbi_map_http_error(&resp, what);
      if (resp.status == 404 && rc == ASB_ENOTFOUND && strstr(path, "/sandboxes/"))
        ((asb_error *)asb_error_last())->code = rc = ASB_ESANDBOXNOTFOUND;
    } else if (out && resp.status >= 200 && resp.status < 300 && resp.status != 204) {
      const char *err = NULL;
      *out = asbi_pj_parse(resp.body.data ? resp.body.data : "", resp.body.len, &err);
      if (!*out)
        rc = asbi_err(ASB_EPROTOCOL, "%s: malformed reply: %s", what, err ? err : "invalid JSON");
    }
    if (keep_resp)
      *keep_resp = resp;
    else
      asbi_http_resp_free(&resp);
    break;
  }
  return rc;
}

int asbi_sandbox_explain(asb_sandbox *sb, int rc) {
  const asb_error *e = asb_error_last();
  int unreachable = rc == ASB_ECONNECTION || (rc == ASB_ETIMEOUT && e->http_status == 502);
  if (!unreachable || !sb || sb->client->debug) return rc;
  asbi_err_saved saved;
  asbi_err_save(&saved);
  char path[256];
  snprintf(path, sizeof path, "/sandboxes/%s", sb->id);
  int prc =
      asbi_cp_request_raw(sb->client, "GET", path, NULL, 0, NULL, 3000, NULL, NULL,
                          ASBI_CP_IDEMPOTENT | ASBI_CP_NO_START, "sandbox", NULL, NULL, NULL, NULL);
  if (prc == ASB_ESANDBOXGONE || prc == ASB_ESANDBOXNOTFOUND) return prc;
  asbi_err_restore(&saved);
  return rc;
}
