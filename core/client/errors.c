/* Thread-local last error and status-code strings.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define MSG_MAX 4096

static _Thread_local struct {
  asb_error e;
  char message[MSG_MAX];
  char remote_code[128];
  char reason[128];
  int init;
} tls;

static void ensure(void) {
  if (!tls.init) {
    tls.init = 1;
    tls.e.message = tls.message;
    tls.e.remote_code = tls.remote_code;
    tls.e.reason = tls.reason;
    tls.e.retry_after = -1;
  }
}

const asb_error *asb_error_last(void) {
  ensure();
  return &tls.e;
}

/* NULL reads the calling thread's last error. */
static const asb_error *err_or_last(const asb_error *e) {
  return e ? e : asb_error_last();
}

int asb_error_code(const asb_error *e) {
  return err_or_last(e)->code;
}
int asb_error_http_status(const asb_error *e) {
  return err_or_last(e)->http_status;
}
int asb_error_retry_after(const asb_error *e) {
  return err_or_last(e)->retry_after;
}
const char *asb_error_message(const asb_error *e) {
  const char *s = err_or_last(e)->message;
  return s ? s : "";
}
const char *asb_error_remote_code(const asb_error *e) {
  const char *s = err_or_last(e)->remote_code;
  return s ? s : "";
}
const char *asb_error_reason(const asb_error *e) {
  const char *s = err_or_last(e)->reason;
  return s ? s : "";
}

void asb_error_clear(void) {
  ensure();
  tls.e.code = ASB_OK;
  tls.e.http_status = 0;
  tls.e.retry_after = -1;
  tls.message[0] = tls.remote_code[0] = tls.reason[0] = '\0';
}

int asbi_verr(int code, const char *fmt, va_list ap) {
  asb_error_clear();
  tls.e.code = code;
  vsnprintf(tls.message, sizeof tls.message, fmt, ap);
  return code;
}

int asbi_err(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  asbi_verr(code, fmt, ap);
  va_end(ap);
  return code;
}

int asbi_err_remote(int code, int http_status, const char *remote_code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  asbi_verr(code, fmt, ap);
  va_end(ap);
  tls.e.http_status = http_status;
  snprintf(tls.remote_code, sizeof tls.remote_code, "%s", remote_code ? remote_code : "");
  return code;
}

void asbi_err_set_retry_after(int seconds) {
  ensure();
  tls.e.retry_after = seconds;
}

void asbi_err_set_reason(const char *reason) {
  ensure();
  snprintf(tls.reason, sizeof tls.reason, "%s", reason ? reason : "");
}

void asbi_err_prefix(const char *fmt, ...) {
  ensure();
  char pre[512], old[MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  memcpy(old, tls.message, sizeof old);
  snprintf(tls.message, sizeof tls.message, "%s: %s", pre, old);
}

static const struct {
  int code;
  const char *name;
  const char *text;
} TABLE[] = {
    {ASB_OK, "ASB_OK", "success"},
    {ASB_ERROR, "ASB_ERROR", "sandbox error"},
    {ASB_EINVAL, "ASB_EINVAL", "invalid argument"},
    {ASB_ENOTFOUND, "ASB_ENOTFOUND", "not found"},
    {ASB_ETIMEOUT, "ASB_ETIMEOUT", "timed out"},
    {ASB_EAUTH, "ASB_EAUTH", "authentication failed"},
    {ASB_ERATELIMIT, "ASB_ERATELIMIT", "rate limit exceeded"},
    {ASB_ENOSPACE, "ASB_ENOSPACE", "not enough space"},
    {ASB_ECOMMANDEXIT, "ASB_ECOMMANDEXIT", "command exited with a non-zero code"},
    {ASB_ETEMPLATE, "ASB_ETEMPLATE", "template error"},
    {ASB_ESANDBOXNOTFOUND, "ASB_ESANDBOXNOTFOUND", "sandbox not found"},
    {ASB_ESANDBOXGONE, "ASB_ESANDBOXGONE", "sandbox is gone"},
    {ASB_EEXISTS, "ASB_EEXISTS", "already exists"},
    {ASB_ECANCELED, "ASB_ECANCELED", "cancelled"},
    {ASB_EUSER, "ASB_EUSER", "aborted by a callback"},
    {ASB_ENOMEM, "ASB_ENOMEM", "out of memory"},
    {ASB_ECONNECTION, "ASB_ECONNECTION", "connection failed"},
    {ASB_EPROTOCOL, "ASB_EPROTOCOL", "malformed reply from the server"},
    {ASB_EVERSION, "ASB_EVERSION", "unsupported options version"},
    {ASB_EUNSUPPORTED, "ASB_EUNSUPPORTED", "not supported by the server"},
    {ASB_EBUILD, "ASB_EBUILD", "template build failed"},
    {ASB_ECOMMANDNOTFOUND, "ASB_ECOMMANDNOTFOUND", "unknown command"},
    {ASB_ECOMMANDFAILED, "ASB_ECOMMANDFAILED", "command failed"},
    {ASB_EPERM, "ASB_EPERM", "permission denied"},
    {ASB_EGITAUTH, "ASB_EGITAUTH", "git authentication failed"},
    {ASB_EGITUPSTREAM, "ASB_EGITUPSTREAM", "no upstream branch"},
};

const char *asb_strerror(int code) {
  for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++)
    if (TABLE[i].code == code) return TABLE[i].text;
  return "unknown error";
}

const char *asb_status_name(int code) {
  for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++)
    if (TABLE[i].code == code) return TABLE[i].name;
  return "ASB_UNKNOWN";
}

void asbi_err_save(asbi_err_saved *s) {
  ensure();
  s->e = tls.e;
  snprintf(s->message, sizeof s->message, "%s", tls.message);
  snprintf(s->remote_code, sizeof s->remote_code, "%s", tls.remote_code);
  snprintf(s->reason, sizeof s->reason, "%s", tls.reason);
}

void asbi_err_restore(const asbi_err_saved *s) {
  ensure();
  asbi_err_remote(s->e.code, s->e.http_status, s->remote_code, "%s", s->message);
  tls.e.retry_after = s->e.retry_after;
  snprintf(tls.reason, sizeof tls.reason, "%s", s->reason);
}
