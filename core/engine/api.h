/* The E2B control plane (api.c): the routes of /sandboxes, /v2/sandboxes
 * and /templates.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_API_H
#define ASB_ENGINE_API_H

#include "apiio.h"
#include "engine.h"
#include "registry.h"

/* Answers one control-plane request (the caller checked the API key). */
void api_handle(engine *e, api_req *q, api_reply *r);
/* Talk to the envd of a sandbox over its unix socket: one request, whole
 * reply. Returns the HTTP status, or a negative errno. */
int envd_request(sbx *s, const char *method, const char *path,
                 const char *body, char **reply, int timeout_ms);

#endif
