/* The HTTP front (server.c): TCP and unix listeners, dispatch, auth.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_SERVER_H
#define ASB_ENGINE_SERVER_H

#include "engine.h"

int server_start(engine *e, const char *listen, const char *socket_path);
void server_stop(engine *e);

#endif
