/* The HTTP fronts' request and reply helpers: query values, JSON replies
 * and E2B's error bodies ({"code": <status>, "message": ...}).
 * SPDX-License-Identifier: Apache-2.0 */
#include "apiio.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/url.h"

/* ---- replies ---------------------------------------------------------------------- */

void api_reply_json(api_reply *r, int status, cJSON *body) {
  r->status = status;
  r->body = body ? cJSON_PrintUnformatted(body) : NULL;
  cJSON_Delete(body);
}

cJSON *api_error_body(int status, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "code", status);
  cJSON_AddStringToObject(j, "message", msg);
  return j;
}

void api_error(api_reply *r, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cJSON *j = api_error_body(status, fmt, ap);
  va_end(ap);
  api_reply_json(r, status, j);
}

int api_status_of(const eng_err *err) {
  switch (err->status) {
    case ENG_EINVAL:
      return 400;
    case ENG_ENOTFOUND:
      return 404;
    case ENG_ECONFLICT:
      return 409;
    case ENG_EFAILED:
      return 422;
    default:
      return 500;
  }
}

void api_reply_err(api_reply *r, const eng_err *err) {
  int status = api_status_of(err);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "code", status);
  cJSON_AddStringToObject(j, "message", err->message);
  if (err->code[0]) cJSON_AddStringToObject(j, "error", err->code);
  api_reply_json(r, status, j);
}

/* ---- query strings --------------------------------------------------------------- */

const char *api_query(api_req *q, const char *name) {
  if (!q->q_parsed) {
    q->q_parsed = 1;
    size_t n = 1;
    for (const char *p = q->query; *p; p++) n += *p == '&';
    q->qk = calloc(n, sizeof *q->qk);
    q->qv = calloc(n, sizeof *q->qv);
    if (!q->qk || !q->qv) return NULL;
    const char *p = q->query;
    while (*p) {
      const char *end = strchr(p, '&');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      const char *eq = memchr(p, '=', len);
      char *k = NULL, *v = NULL;
      size_t kl = eq ? (size_t)(eq - p) : len;
      if (len && asbi_url_unescape(p, kl, 1, &k) == 0 &&
          asbi_url_unescape(eq ? eq + 1 : "", eq ? len - kl - 1 : 0, 1, &v) == 0) {
        q->qk[q->nq] = k;
        q->qv[q->nq++] = v;
      } else {
        free(k);
        free(v);
      }
      p += len + (end ? 1 : 0);
      if (!end) break;
    }
  }
  for (size_t i = 0; i < q->nq; i++)
    if (strcmp(q->qk[i], name) == 0) return q->qv[i];
  return NULL;
}

void api_req_free(api_req *q) {
  for (size_t i = 0; i < q->nq; i++) {
    free(q->qk[i]);
    free(q->qv[i]);
  }
  free(q->qk);
  free(q->qv);
}
