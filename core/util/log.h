/* A program's log: one line per message on stderr,
 * "[<RFC 3339 UTC time> ]<name>: <message>", formatted first and written
 * with one call so that the lines of concurrent threads never interleave.
 * Shared by the programs (the engine; envd can take it too). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_UTIL_LOG_H
#define ASB_UTIL_LOG_H

#include <stdarg.h>

#define ASBI_LOG_TIME 1u /* each line starts with the wall-clock time */
#define ASBI_LOG_OFF 2u  /* drop every line (a program's quiet mode) */

/* Once, before the program starts threads: the name lines carry (copied,
 * up to 63 bytes; NULL or "" = none) and ASBI_LOG_* flags. Without it,
 * lines have no name and no time. */
void asbi_log_init(const char *name, unsigned flags);
/* One line (a message longer than 2 KiB is cut; no newline needed). */
void asbi_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void asbi_vlog(const char *fmt, va_list ap);

#endif
