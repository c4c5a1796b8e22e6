/* envd: E2B's EntryInfo and EnsureDirs (entry.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_ENTRY_H
#define ASB_ENVD_ENTRY_H

#include <cjson/cJSON.h>
#include <sys/stat.h>

#include "auth.h"
#include "rpc.h"

/* EntryInfo JSON for path (lstat). NULL and e on failure. */
cJSON *envd_entry_info(const char *path, envd_err *e);
/* EntryInfo of path from its lstat result ls. */
cJSON *envd_entry_from_stat(const char *path, const struct stat *ls);
/* EnsureDirs: mkdir -p with 0755 (as the calling thread's fs creds). 0 or
 * -1 with errno. */
int envd_mkdirs(const char *path);
/* E2B's EnsureDirs as root: mkdir -p (0755) of the absolute path, each
 * directory it creates chowned to u. The calling thread must run with
 * envd's own credentials. Symlinks are followed, /proc's magic links never.
 * 0 or -1 with errno (EPERM: a non-root envd asked to act for another
 * user). */
int envd_mkdirs_owned(const char *path, const envd_user *u);
/* E2B's upload open as root: O_WRONLY|O_CREAT (0666, no truncation), then
 * the file, new or existing, chowned to u. An fd or -1 with errno. */
int envd_open_owned(const char *path, const envd_user *u);

#endif
