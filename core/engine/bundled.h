/* Template dirs shipped with the engine (bundled.c): python-base.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_BUNDLED_H
#define ASB_ENGINE_BUNDLED_H

#include <stddef.h>

#include "eng_err.h"
#include "engine.h"
#include "templates.h"

/* If <templates_dir>/<name>/template.yaml exists and was not built yet in
 * this run, build it (cached when unchanged; a bundled base first). 0
 * (nothing to do, or built), or -1 with err (ENG_EINTERNAL). Fits
 * build_run's base_fn. */
int bundled_ensure(engine *e, const char *name, eng_err *err);
/* A bundled template that is not built (the first create builds it): 0
 * with *out a record of it, not registered, from its template.yaml (built
 * in, no build; created = the file's time; release with templates_put),
 * and why it cannot be built in why ("" when it can); -1 when there is no
 * such bundled template. */
int bundled_waiting(engine *e, const char *name, template_info **out, char *why, size_t whylen);
/* The names of the bundled template dirs (valid template names, in
 * directory order): a malloc'd array of *n strings, or NULL when none.
 * Free with bundled_names_free. */
char **bundled_names(engine *e, size_t *n);
void bundled_names_free(char **v, size_t n);

#endif
