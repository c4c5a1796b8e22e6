/* Fuzz the .dockerignore reader (core/proto/ignore.c): the input up to its
 * first NUL byte is a .dockerignore file, the rest paths (one per line)
 * matched against it. Invariants: the text is accepted or refused with a
 * message naming the line; a set without '!' patterns that leaves a
 * directory out leaves out what is under it too; matching never fails.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proto/ignore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16) return 0;
  const char *text = (const char *)data;
  size_t tl = 0;
  while (tl < size && data[tl]) tl++;
  asbi_ignore *ig = asbi_ignore_new();
  if (!ig) return 0;
  char err[512] = "";
  if (asbi_ignore_add_text(ig, text, tl, err, sizeof err)) {
    FUZZ_CHECK(!strncmp(err, "line ", 5));
    asbi_ignore_free(ig);
    return 0;
  }
  for (size_t i = tl + 1; i < size;) {
    size_t j = i;
    while (j < size && data[j] != '\n' && data[j]) j++;
    char *p = malloc(j - i + 3);
    if (!p) break;
    memcpy(p, data + i, j - i);
    p[j - i] = '\0';
    int m = asbi_ignore_match(ig, p);
    FUZZ_CHECK(m == 0 || m == 1);
    if (m && !asbi_ignore_has_exceptions(ig) && j > i && p[j - i - 1] != '/') {
      memcpy(p + (j - i), "/x", 3);
      FUZZ_CHECK(asbi_ignore_match(ig, p) == 1);
    }
    free(p);
    i = j + 1;
  }
  asbi_ignore_free(ig);
  return 0;
}
