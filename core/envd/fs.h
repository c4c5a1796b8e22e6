/* envd: the filesystem service (fs.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_FS_H
#define ASB_ENVD_FS_H

#include "rpc.h"

/* Stat, ListDir, MakeDir, Move and Remove of filesystem.Filesystem. */
extern const envd_method envd_fs_methods[];

#endif
