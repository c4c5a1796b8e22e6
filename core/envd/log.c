/* envd: logging to stderr when --verbose is given, and the phase timers'
 * sink (ASB_TIMING). SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

int g_envd_verbose;
int g_envd_timing;
static int g_timing_fd = -1;

void envd_log(const char *fmt, ...) {
  if (!g_envd_verbose) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "envd: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void envd_timing_init(const char *spec) {
  if (!spec || !*spec || strcmp(spec, "0") == 0) return;
  if (strcmp(spec, "1") == 0 || strcmp(spec, "stderr") == 0)
    g_timing_fd = 2;
  else
    g_timing_fd = open(spec, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (g_timing_fd < 0) {
    fprintf(stderr, "envd: ASB_TIMING=%s: cannot open it; timers stay off\n", spec);
    return;
  }
  g_envd_timing = 1;
}

void envd_timing_line(const char *fmt, ...) {
  if (!g_envd_timing) return;
  char line[512];
  int n = snprintf(line, sizeof line, "envd-timing ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) return;
  n += m;
  if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  if (write(g_timing_fd, line, (size_t)n) < 0) { /* a lost timing line: fine */
  }
}
