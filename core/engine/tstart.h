/* A template's start command and ready check at create (tstart.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_TSTART_H
#define ASB_ENGINE_TSTART_H

#include <stddef.h>

#include "registry.h"
#include "templates.h"

/* 0, or -1 with a message in err (the sandbox should then be undone). */
int tstart_run(engine *e, sbx *s, template_info *t, char *err, size_t errlen);

#endif
