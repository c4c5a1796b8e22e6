/* The E2B control plane (api.c): the routes of /sandboxes, /v2/sandboxes
 * and /templates.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_API_H
#define ASB_ENGINE_API_H

#include "apiio.h"
#include "engine.h"

/* Answers one control-plane request (the caller checked the API key). */
void api_handle(engine *e, api_req *q, api_reply *r);

#endif
