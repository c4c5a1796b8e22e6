/* envd: directory watchers (watch.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_WATCH_H
#define ASB_ENVD_WATCH_H

#include "rpc.h"

/* WatchDir and the polling watchers (CreateWatcher, GetWatcherEvents,
 * RemoveWatcher) of filesystem.Filesystem. */
extern const envd_method envd_watch_methods[];
/* Stops every polling watcher (at exit). */
void envd_watch_shutdown(void);

#endif
