/* Templates built from template.yaml (build.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_BUILD_H
#define ASB_ENGINE_BUILD_H

#include <cjson/cJSON.h>

#include "engine.h"
#include "templates.h"

struct api_req;
struct api_reply;
/* POST /templates/builds: the body is a tar of the template directory. */
void build_handle(engine *e, struct api_req *q, struct api_reply *r);
/* DELETE /templates/{id}. */
void template_delete(engine *e, const char *id, struct api_reply *r);
/* Remove build dirs that no template and no live sandbox uses. */
void templates_gc(engine *e);
/* The E2B Template object (+ our fields) of t. */
cJSON *template_json(engine *e, template_info *t);
/* Remove state dirs of build sandboxes left by a crash (start-up). */
void build_cleanup(engine *e);

#endif
