/* Thread-local error messages of asb_iso.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "iso_int.h"

static _Thread_local char g_msg[512];

const char *asbe_errmsg(void) {
  return g_msg;
}

void asbe__clear_error(void) {
  g_msg[0] = '\0';
}

static int vfail(int neg, const char *fmt, va_list ap) {
  if (neg >= 0) neg = -EIO;
  char what[400];
  vsnprintf(what, sizeof what, fmt, ap);
  snprintf(g_msg, sizeof g_msg, "%s: %s", what, strerror(-neg));
  return neg;
}

int asbe__fail(int neg_errno, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vfail(neg_errno, fmt, ap);
  va_end(ap);
  return r;
}

int asbe__failerr(const char *fmt, ...) {
  int neg = -errno;
  va_list ap;
  va_start(ap, fmt);
  int r = vfail(neg, fmt, ap);
  va_end(ap);
  return r;
}

void asbe__save_error(char *buf, size_t len) {
  snprintf(buf, len, "%s", g_msg);
}

void asbe__restore_error(const char *buf) {
  snprintf(g_msg, sizeof g_msg, "%s", buf);
}
