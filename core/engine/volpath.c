/* Paths of volumes: see volpath.h.
 * SPDX-License-Identifier: Apache-2.0 */
#include "volpath.h"

#include <stdio.h>
#include <string.h>

#define MOUNT_PATH_MAX 512

int volpath_norm(const char *in, char *out, size_t len) {
  if (!in || len < 2) return -1;
  size_t at = 0;
  const char *s = in;
  while (*s) {
    while (*s == '/') s++;
    if (!*s) break;
    size_t n = strcspn(s, "/");
    if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return -1;
    if (at + 1 + n + 1 > len) return -1;
    out[at++] = '/';
    memcpy(out + at, s, n);
    at += n;
    s += n;
  }
  if (!at) out[at++] = '/';
  out[at] = '\0';
  return 0;
}

int volpath_overlap(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), l = la < lb ? la : lb;
  if (strncmp(a, b, l)) return 0;
  if (la == lb) return 1;
  if (!strcmp(la < lb ? a : b, "/")) return 1;
  return (la < lb ? b : a)[l] == '/';
}

/* Where the sandbox's system lives: no volume over, at or under these. */
static const char *const reserved[] = {"/proc", "/sys", "/dev",  "/run", "/.asb", "/usr",
                                       "/etc",  "/bin", "/sbin", "/lib", "/lib64"};

int volpath_mount(const char *in, char *out, size_t len, char *why, size_t whylen) {
  if (!in || in[0] != '/' || strlen(in) > MOUNT_PATH_MAX || volpath_norm(in, out, len) ||
      !strcmp(out, "/")) {
    snprintf(why, whylen,
             "volume mount path \"%.600s\": an absolute path below / (at most %d bytes, no . or "
             "..)",
             in ? in : "", MOUNT_PATH_MAX);
    return -1;
  }
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
    if (volpath_overlap(out, reserved[i])) {
      snprintf(why, whylen, "volume mount path %.600s: %s is the sandbox's own (not a mount point)",
               out, reserved[i]);
      return -1;
    }
  return 0;
}
