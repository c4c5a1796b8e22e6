/* A template's custom_commands on its commands port (cmds.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_CMDS_H
#define ASB_ENGINE_CMDS_H

#include <stddef.h>

#include "engine.h"

/* 1 if the engine answers this sandbox request itself. */
int cmds_wants(engine *e, const char *id, int port, const char *url);
/* Answer it: *status and a JSON body (malloc'd). */
char *cmds_serve(engine *e, const char *id, int port, const char *method, const char *url,
                 const char *token, const char *body, size_t len, int *status);

#endif
