/* The thread-local last error of libagentsandbox-server.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local struct {
  asb_error e;
  char message[1024];
  int init;
} tls;

static void ensure(void) {
  if (!tls.init) {
    tls.init = 1;
    tls.e.message = tls.message;
    tls.e.remote_code = "";
    tls.e.reason = "";
    tls.e.retry_after = -1;
  }
}

const asb_error *asb_server_error_last(void) {
  ensure();
  return &tls.e;
}

int asbs_err(int code, const char *fmt, ...) {
  ensure();
  tls.e.code = code;
  tls.e.http_status = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tls.message, sizeof tls.message, fmt, ap);
  va_end(ap);
  return code;
}
