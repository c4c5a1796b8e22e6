/* The HTTP front of templates (api_templates.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_API_TEMPLATES_H
#define ASB_ENGINE_API_TEMPLATES_H

#include "apiio.h"
#include "engine.h"

/* POST /templates/builds: the body is a tar of the template directory. */
void api_templates_build(engine *e, api_req *q, api_reply *r);
/* GET /templates/{name} (an id or a name). */
void api_templates_get(engine *e, const char *name, api_reply *r);
/* GET /templates. */
void api_templates_list(engine *e, api_reply *r);
/* DELETE /templates/{id}. */
void api_templates_delete(engine *e, const char *id, api_reply *r);

#endif
