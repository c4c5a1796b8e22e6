/* envd: GET and POST /files (files.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_FILES_H
#define ASB_ENVD_FILES_H

#include "hreq.h"

/* Routes, called on the first callback of a request: either set
 * on_body/on_done or return a ready response (with *status). */
struct MHD_Response *envd_files_get(envd_hreq *r, unsigned *status);
struct MHD_Response *envd_files_post(envd_hreq *r, unsigned *status);

#endif
