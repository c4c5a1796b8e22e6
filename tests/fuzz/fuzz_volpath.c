/* Fuzz the path checks of volumes (core/engine/volpath.c): the content
 * API's paths inside a volume and the mount paths of volumeMounts.
 * Invariants: a normalised path starts with '/', has no empty, "." or ".."
 * component and no trailing '/' (but "/"), normalising it again changes
 * nothing, and it names the same components as the input; an accepted mount
 * path is normalised, not "/", and overlaps none of the sandbox's own dirs.
 * SPDX-License-Identifier: Apache-2.0 */
#include "engine/volpath.h"
#include "fuzz.h"

static const char *const sys_dirs[] = {"/proc", "/sys", "/dev",  "/run", "/.asb", "/usr",
                                       "/etc",  "/bin", "/sbin", "/lib", "/lib64"};

static void check_norm(const char *in, const char *out) {
  FUZZ_CHECK(out[0] == '/');
  size_t l = strlen(out);
  FUZZ_CHECK(l == 1 || out[l - 1] != '/');
  FUZZ_CHECK(!strstr(out, "//"));
  FUZZ_CHECK(!strstr(out, "/./") && !strstr(out, "/../"));
  FUZZ_CHECK(!(l >= 2 && !strcmp(out + l - 2, "/.")) && !(l >= 3 && !strcmp(out + l - 3, "/..")));
  char again[1100];
  FUZZ_CHECK(volpath_norm(out, again, sizeof again) == 0 && !strcmp(again, out));
  /* the same components, in order: the input without its extra slashes */
  const char *a = in, *b = out;
  for (;;) {
    while (*a == '/') a++;
    while (*b == '/') b++;
    size_t na = strcspn(a, "/"), nb = strcspn(b, "/");
    FUZZ_CHECK(na == nb && !memcmp(a, b, na));
    if (!na) break;
    a += na;
    b += nb;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1024) return 0;
  char in[1025];
  memcpy(in, data, size);
  in[size] = '\0'; /* a NUL inside ends the path, as a C string does */
  char out[1100], why[1400];
  if (volpath_norm(in, out, sizeof out) == 0) check_norm(in, out);
  /* a buffer too small never overflows */
  char small[8];
  if (volpath_norm(in, small, sizeof small) == 0) FUZZ_CHECK(strlen(small) < sizeof small);
  if (volpath_mount(in, out, sizeof out, why, sizeof why) == 0) {
    FUZZ_CHECK(in[0] == '/' && strcmp(out, "/"));
    check_norm(in, out);
    for (size_t i = 0; i < sizeof sys_dirs / sizeof sys_dirs[0]; i++) {
      FUZZ_CHECK(volpath_overlap(out, sys_dirs[i]) == 0);
      size_t l = strlen(sys_dirs[i]);
      FUZZ_CHECK(strncmp(out, sys_dirs[i], l) || (out[l] != '\0' && out[l] != '/'));
    }
  } else {
    FUZZ_CHECK(why[0] != '\0');
  }
  return 0;
}
