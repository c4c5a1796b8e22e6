/* Remote errors to asb_status: Connect error codes, E2B API bodies
 * ({"code": 404, "message": ...}), the engine's sandbox_not_found and
 * template_start_failed, plain text; and transport failures prefixed.
 * Used by envd.c and cp.c.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "proto/pjson.h"
#include "util/util.h"
#include "envd.h"

static const struct {
  const char *code;
  int status;
} CONNECT_MAP[] = {
    {"invalid_argument", ASB_EINVAL},    {"failed_precondition", ASB_EINVAL},
    {"out_of_range", ASB_EINVAL},        {"unauthenticated", ASB_EAUTH},
    {"permission_denied", ASB_EPERM},    {"not_found", ASB_ENOTFOUND},
    {"already_exists", ASB_EEXISTS},     {"resource_exhausted", ASB_ENOSPACE},
    {"unavailable", ASB_ETIMEOUT},       {"canceled", ASB_ETIMEOUT},
    {"deadline_exceeded", ASB_ETIMEOUT}, {"unimplemented", ASB_EUNSUPPORTED},
};

static int status_of_connect(const char *code) {
  for (size_t i = 0; i < ASBI_ARRAY_LEN(CONNECT_MAP); i++)
    if (strcmp(code, CONNECT_MAP[i].code) == 0) return CONNECT_MAP[i].status;
  return ASB_ERROR;
}

static int status_of_http(long st) {
  switch (st) {
    case 400:
      return ASB_EINVAL;
    case 401:
      return ASB_EAUTH;
    case 403:
      return ASB_EPERM;
    case 404:
      return ASB_ENOTFOUND;
    case 409:
      return ASB_EEXISTS;
    case 429:
      return ASB_ERATELIMIT;
    case 502:
      return ASB_ETIMEOUT; /* sandbox unreachable (E2B: timeout) */
    case 504:
      return ASB_ETIMEOUT;
    case 507:
      return ASB_ENOSPACE;
    default:
      return st == 501 ? ASB_EUNSUPPORTED : ASB_ERROR;
  }
}

int asbi_map_connect_error(const char *code, const char *message, const char *what) {
  int rc = status_of_connect(code ? code : "");
  return asbi_err_remote(rc, 0, code, "%s: %s", what,
                         message && *message ? message : (code ? code : "error"));
}

int asbi_prefix_error(int rc, const char *what) {
  if (rc) asbi_err_prefix("%s", what);
  return rc;
}

int asbi_map_http_error(const asbi_http_resp *resp, const char *what) {
  long st = resp->status;
  const char *body = resp->body.data ? resp->body.data : "";
  cJSON *j = asbi_pj_parse(body, resp->body.len, NULL);
  const cJSON *code = j ? cJSON_GetObjectItemCaseSensitive(j, "code") : NULL;
  const cJSON *msg = j ? cJSON_GetObjectItemCaseSensitive(j, "message") : NULL;
  const char *m = cJSON_IsString(msg) ? msg->valuestring : NULL;
  char text[512];
  if (!m) {
    /* Plain-text body: keep its first line. */
    size_t n = resp->body.len < sizeof text - 1 ? resp->body.len : sizeof text - 1;
    memcpy(text, body, n);
    text[n] = '\0';
    char *nl = strpbrk(text, "\r\n");
    if (nl) *nl = '\0';
    m = *text ? text : "";
  }
  int rc;
  const char *remote = "";
  char num[16];
  if (cJSON_IsString(code)) { /* Connect: {"code":"not_found"} */
    remote = code->valuestring;
    rc = status_of_connect(remote);
    if (rc == ASB_ERROR) rc = status_of_http(st);
  } else {
    if (cJSON_IsNumber(code)) { /* E2B API: {"code":404,"message":...} */
      snprintf(num, sizeof num, "%d", code->valueint);
      remote = num;
    }
    rc = status_of_http(st);
  }
  if (!*m) m = asb_strerror(rc);
  asbi_err_remote(rc, (int)st, remote, "%s: %s (HTTP %ld)", what, m, st);
  if (rc == ASB_ERATELIMIT)
    asbi_err_set_retry_after(
        asbi_http_parse_retry_after(asbi_http_resp_header(resp, "retry-after")));
  /* The control plane (404) and the engine's router (502, error
   * "sandbox_not_found") name a sandbox they do not know, or one that
   * ended and why (reason). */
  const cJSON *sid = j ? cJSON_GetObjectItemCaseSensitive(j, "sandboxID") : NULL;
  const cJSON *why = j ? cJSON_GetObjectItemCaseSensitive(j, "reason") : NULL;
  const cJSON *kind = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
  int router_gone =
      st == 502 && cJSON_IsString(kind) && strcmp(kind->valuestring, "sandbox_not_found") == 0;
  /* The local engine: a template's start command or ready check failed. */
  if (cJSON_IsString(kind) && strcmp(kind->valuestring, "template_start_failed") == 0) {
    asb_error *e = (asb_error *)asb_error_last();
    e->code = rc = ASB_ETEMPLATE;
    asbi_err_set_reason("template_start_failed");
  }
  if ((st == 404 || router_gone) && cJSON_IsString(sid)) {
    asb_error *e = (asb_error *)asb_error_last();
    e->code = rc = cJSON_IsString(why) ? ASB_ESANDBOXGONE : ASB_ESANDBOXNOTFOUND;
    if (cJSON_IsString(why)) asbi_err_set_reason(why->valuestring);
  }
  cJSON_Delete(j);
  return rc;
}
