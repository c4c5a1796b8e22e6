/* envd: Connect RPC dispatch (see dispatch.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_DISPATCH_H
#define ASB_ENVD_DISPATCH_H

#include "hreq.h"

/* The method served at url (process.Process, filesystem.Filesystem and the
 * watchers' tables), or NULL. */
const envd_method *envd_dispatch_find(const char *url);
/* Begins the call of m for r: checks the method and content type, finds the
 * user, and either sets r's body and completion callbacks (NULL returned) or
 * returns the response with *status. */
struct MHD_Response *envd_dispatch_begin(envd_hreq *r, const envd_method *m, unsigned *status);

#endif
