/* Template dirs shipped with the engine (bundled.c): python-base.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_BUNDLED_H
#define ASB_ENGINE_BUNDLED_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "engine.h"

/* If <templates_dir>/<name>/template.yaml exists and was not built yet in
 * this run, build it (cached when unchanged). 0 (nothing to do, or built),
 * or -1 with a message in err. */
int bundled_ensure(engine *e, const char *name, char *err, size_t errlen);
/* The Template object of a bundled template that is not built (state
 * "waiting": the first create builds it; "error" when its template.yaml does
 * not parse), or NULL when there is no such bundled template. */
cJSON *bundled_waiting_json(engine *e, const char *name);
/* Append to the list arr such an object for every bundled template whose
 * name arr does not hold yet. */
void bundled_list_waiting(engine *e, cJSON *arr);

#endif
