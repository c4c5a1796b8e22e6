/* envd: logging to stderr (log.c). Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_LOG_H
#define ASB_ENVD_LOG_H

/* Set by --verbose; nothing is logged without it. */
extern int g_envd_verbose;
/* "envd: <message>\n" on stderr when verbose. */
void envd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
