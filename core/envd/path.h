/* envd: paths as E2B's envd computes them (path.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_PATH_H
#define ASB_ENVD_PATH_H

#include "auth.h"

/* E2B's ExpandAndResolve: "" → default workdir → home; "~" and "~/x"
 * expanded; relative paths are joined under home. Returns a malloc'd path,
 * or NULL and *err (static text) for "~other". */
char *envd_resolve_path(const char *path, const envd_user *u, const char **err);
/* Go's filepath.Clean / Join. malloc'd. */
char *envd_path_clean(const char *p);
char *envd_path_join(const char *a, const char *b);

#endif
