/* See log.h. SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <stdio.h>

#include "util.h"

/* Set once by asbi_log_init before threads start, read-only afterwards. */
static char log_name[64];
static unsigned log_flags;

void asbi_log_init(const char *name, unsigned flags) {
  snprintf(log_name, sizeof log_name, "%s", name ? name : "");
  log_flags = flags;
}

void asbi_vlog(const char *fmt, va_list ap) {
  if (log_flags & ASBI_LOG_OFF) return;
  char msg[2048];
  vsnprintf(msg, sizeof msg, fmt, ap);
  char ts[40] = "";
  if (log_flags & ASBI_LOG_TIME) asbi_rfc3339_now(ts);
  /* one stdio call: stderr's lock keeps the line whole */
  fprintf(stderr, "%s%s%s%s%s\n", ts, ts[0] ? " " : "", log_name, log_name[0] ? ": " : "", msg);
}

void asbi_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  asbi_vlog(fmt, ap);
  va_end(ap);
}
