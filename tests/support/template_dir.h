/* A template dir for a test that builds from template.yaml: made under a
 * work dir of the test's, with the template.yaml and any files it names.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_TEMPLATE_DIR_H
#define ASB_TEMPLATE_DIR_H

#include <stdio.h>
#include <sys/stat.h>

/* dir/name = content; 0 if it was written. */
static inline int asbt_write_file_in(const char *dir, const char *name, const char *content) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(content, f);
  return fclose(f) == 0 ? 0 : -1;
}

/* parent/name (made, 0755, if it is not there) with template.yaml = yaml
 * and files ("name", "content" pairs, NULL-ended, or NULL) written in it.
 * Returns the dir, in a buffer the next call overwrites; NULL if a file
 * could not be written (asb_templates_build then fails with ASB_EINVAL). */
static inline const char *asbt_template_dir(const char *parent, const char *name, const char *yaml,
                                            const char *const *files) {
  static char dir[256];
  snprintf(dir, sizeof dir, "%s/%s", parent, name);
  mkdir(dir, 0755);
  if (asbt_write_file_in(dir, "template.yaml", yaml) != 0) return NULL;
  for (const char *const *p = files; p && p[0]; p += 2)
    if (asbt_write_file_in(dir, p[0], p[1]) != 0) return NULL;
  return dir;
}

#endif
