/* envd: POST /init, GET /envs, GET /metrics (api.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_API_H
#define ASB_ENVD_API_H

#include "hreq.h"

/* Routes, called on the first callback of a request: either set
 * on_body/on_done or return a ready response (with *status). */
struct MHD_Response *envd_api_init(envd_hreq *r, unsigned *status);
struct MHD_Response *envd_api_envs(envd_hreq *r, unsigned *status);
struct MHD_Response *envd_api_metrics(envd_hreq *r, unsigned *status);

#endif
