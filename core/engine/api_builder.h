/* E2B's Template builder API (api_builder.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_API_BUILDER_H
#define ASB_ENGINE_API_BUILDER_H

#include "apiio.h"
#include "engine.h"

/* Answers the builder's routes (POST /v3/templates, the files, builds and
 * their status, aliases, tags): 1 if q was one of them, else 0. */
int api_builder_handle(engine *e, api_req *q, api_reply *r);
/* 1 if method url (raw_uri: with its query) is a PUT of template files
 * carrying the upload URL's token (the SDK uploads without the API key). */
int api_builder_upload_ok(engine *e, const char *method, const char *url, const char *raw_uri);
/* Our build id (template_info.build_id) that tag of the template name
 * (or id) names, into out: 0, or -1 for an unknown name or tag. */
int api_builder_tag_build(engine *e, const char *name, const char *tag, char *out, size_t len);
/* 1 with its build id in build_id if a build of the template id (E2B's
 * builder API) was started and has not ended, else 0. */
int api_builder_building(engine *e, const char *id, char *build_id, size_t len);
/* Reads the records of builder builds earlier engines kept
 * (<state>/builder, builder_rec.h): their status and logs answer again,
 * their tags name builds again. Bad records are logged and skipped. */
void api_builder_open(engine *e);
/* Waits for the builds under way and frees the builder's state. */
void api_builder_close(engine *e);

#endif
