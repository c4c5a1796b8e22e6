/* envd: logging to stderr (log.c) and the phase timers of issue 23
 * (ASB_TIMING). Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_LOG_H
#define ASB_ENVD_LOG_H

#include <stdint.h>
#include <time.h>

/* Set by --verbose; nothing is logged without it. */
extern int g_envd_verbose;
/* "envd: <message>\n" on stderr when verbose. */
void envd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Phase timers: off unless ASB_TIMING is set when envd starts ("1" or
 * "stderr": stderr; anything else: a file appended to). Off, each timer
 * point is one test of this int, no clock read. */
extern int g_envd_timing;
/* Opens the sink named by ASB_TIMING (envd_timing_init) once at startup. */
void envd_timing_init(const char *spec);
/* One line "envd-timing <message>\n", written with one write(2). */
void envd_timing_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CLOCK_MONOTONIC in ns, 0 when timing is off (the point costs a branch). */
static inline uint64_t envd_tns(void) {
  if (!g_envd_timing) return 0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
