/* The engine's router (see router.c). SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_ROUTER_H
#define ASB_ENGINE_ROUTER_H

#include <microhttpd.h>

#include "engine.h"

typedef struct route_ctx route_ctx;

/* 1 if the request is sandbox traffic; fills the sandbox id and port (port
 * -1 if the E2b-Sandbox-Port header is malformed). */
int router_match(struct MHD_Connection *c, char *id, size_t idlen, int *port);
/* 1 if the request is a signed envd /files request (a URL from
 * download_url/upload_url) with no sandbox named, as E2B's SDKs send it
 * with E2B_SANDBOX_URL set: fills the id of the sandbox whose envd access
 * token verifies the signature (port: envd's). 0 when none does. */
int router_match_signed(engine *e, struct MHD_Connection *c, const char *url, const char *method,
                        char *id, size_t idlen, int *port);
/* Connect upstream and send the request head. NULL on failure, with an
 * error response and status to queue. version: the request's HTTP
 * version, as libmicrohttpd gives it. */
route_ctx *router_begin(engine *e, struct MHD_Connection *c, const char *raw_uri,
                        const char *method, const char *version, const char *id, int port,
                        struct MHD_Response **err, unsigned *err_status);
/* Forward a piece of the request body. -1 once the upstream failed. */
int router_body(route_ctx *r, const char *data, size_t len);
/* End the request, read the upstream's response head and return a response
 * streaming its body (the route is owned by the response from now on; on
 * error an error response, and the route is freed). */
struct MHD_Response *router_finish(route_ctx *r, unsigned *status);
/* Drop a route that never reached router_finish. */
void router_abort(route_ctx *r);

#endif
