/* See eng_err.h. SPDX-License-Identifier: Apache-2.0 */
#include "eng_err.h"

#include <stdarg.h>
#include <stdio.h>

int eng_err_set(eng_err *err, eng_status status, const char *code, const char *fmt, ...) {
  if (!err) return -1;
  err->status = status;
  snprintf(err->code, sizeof err->code, "%s", code ? code : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return -1;
}

void eng_err_clear(eng_err *err) {
  if (!err) return;
  err->status = ENG_OK;
  err->code[0] = '\0';
  err->message[0] = '\0';
}
