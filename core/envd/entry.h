/* envd: E2B's EntryInfo and EnsureDirs (entry.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_ENTRY_H
#define ASB_ENVD_ENTRY_H

#include <cjson/cJSON.h>
#include <sys/stat.h>

#include "rpc.h"

/* EntryInfo JSON for path (lstat). NULL and e on failure. */
cJSON *envd_entry_info(const char *path, envd_err *e);
/* EntryInfo of path from its lstat result ls. */
cJSON *envd_entry_from_stat(const char *path, const struct stat *ls);
/* EnsureDirs: mkdir -p with 0755 (as the calling thread's fs creds). 0 or
 * -1 with errno. */
int envd_mkdirs(const char *path);

#endif
