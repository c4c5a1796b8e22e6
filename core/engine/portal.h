/* Portals (see portal.c): each sandbox's way to the engine's router, a
 * listener on 127.0.0.1:<engine port> inside its own network namespace,
 * so https://<port>-<id>.localhost:<engine port> opens in a sandbox as it
 * does on the host. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_PORTAL_H
#define ASB_ENGINE_PORTAL_H

#include <microhttpd.h>
#include <stddef.h>

#include "engine.h"
#include "front.h"
#include "registry.h"

typedef struct portal portal;

portal *portal_new(struct front *f);
/* After front_stop (the front closes the listeners). Accepts NULL. */
void portal_free(portal *p);
/* Opens s's portal in the network namespace its init has now (nothing if
 * it has one there already; one of an earlier namespace is closed). 0 or
 * -errno (-EADDRINUSE: the sandbox listens on that port itself). */
int portal_open(portal *p, engine *e, sbx *s);
/* Closes the sandbox's portal (its processes are going). */
void portal_close(portal *p, const char *id);
/* 1 if the request c came in through a sandbox's portal: fills its id
 * ("" if its tag is malformed: no sandbox's). Only connections of the TCP
 * port's daemon (e->tcp_daemon), which the front hands over, can be; the
 * unix socket's daemon has AF_UNIX clients of its own, never a portal's. */
int portal_source(engine *e, struct MHD_Connection *c, char *id, size_t idlen);

#endif
