/* The HTTP front of secrets (api_secrets.c): E2B's /secrets API over the
 * egress services' store (net/egress/secrets.h). SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_API_SECRETS_H
#define ASB_ENGINE_API_SECRETS_H

#include "apiio.h"
#include "engine.h"

/* 1 if q is a /secrets route (r is then filled), 0 if not. */
int api_secrets_handle(engine *e, api_req *q, api_reply *r);

#endif
