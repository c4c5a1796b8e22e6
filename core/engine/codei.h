/* The code interpreter inside sandboxes (codei.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_CODEI_H
#define ASB_ENGINE_CODEI_H

#include "registry.h"

/* Launch the sandbox's code interpreter (once; later calls are no-ops).
 * Does not wait for it. 0 or a negative errno. */
int codei_start(engine *e, sbx *s);
/* Launch it if needed and wait until its port accepts connections, up to
 * timeout_ms. Returns a connected socket or a negative errno. */
int codei_connect(engine *e, sbx *s, int timeout_ms);

#endif
