/* envd: logging to stderr when --verbose is given.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

int g_envd_verbose;

void envd_log(const char *fmt, ...) {
  if (!g_envd_verbose) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "envd: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
