/* abi.versions: every symbol a library exports carries its version node
 * as objdump -T shows it (asb_x@@ASB_1.0: the default version, not a
 * hidden one), the exports are exactly the recorded symbol list, and
 * dlvsym(h, name, node) finds each of them — the way FFI callers that ask
 * for a versioned symbol load them (docs/ffi.md) — at the address plain
 * dlsym gives, while an unknown node finds nothing. No header and no link
 * to the library: it is loaded as a dlopen user loads it.
 *
 * usage: abi_versions LIB.so SYMBOLS-FILE NODE [LIB SYMBOLS NODE ...]
 * SPDX-License-Identifier: Apache-2.0 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing.h"

#define MAX_SYMS 1024

typedef struct names {
  char *v[MAX_SYMS];
  int n;
} names;

static int has(const names *s, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->v[i], name) == 0) return 1;
  return 0;
}

static void add(names *s, const char *name) {
  if (s->n < MAX_SYMS) s->v[s->n++] = strdup(name);
}

static void clear(names *s) {
  for (int i = 0; i < s->n; i++) free(s->v[i]);
  s->n = 0;
}

/* One library: objdump -T, the list, dlvsym. */
static void check_library(const char *lib, const char *list, const char *node) {
  int failures_before = asbt_failures;
  names listed = {.n = 0}, exported = {.n = 0};
  FILE *f = fopen(list, "r");
  if (!f) {
    ASBT_FAIL("cannot read %s", list);
    return;
  }
  char line[512];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (*line) add(&listed, line);
  }
  fclose(f);

  char cmd[1200];
  snprintf(cmd, sizeof cmd, "objdump -T '%s'", lib);
  FILE *p = popen(cmd, "r");
  if (!p) {
    ASBT_FAIL("cannot run %s", cmd);
    clear(&listed);
    return;
  }
  int node_defined = 0;
  while (fgets(line, sizeof line, p)) {
    /* 0000000000008d40 g    DF .text  0000000000000020  ASB_1.0     asb_x
     * (version in parentheses: a hidden, non-default version) */
    char addr[32], section[64], size[32], version[64], name[256];
    const char *rest = line;
    if (sscanf(rest, "%31s", addr) != 1 || strspn(addr, "0123456789abcdef") != strlen(addr) ||
        strlen(addr) < 8)
      continue;
    /* the flag characters sit in fixed columns up to the section name */
    const char *sec = strstr(line, " .");
    if (!sec) sec = strstr(line, " *");
    if (!sec || sscanf(sec, "%63s %31s %63s %255s", section, size, version, name) != 4) continue;
    if (strcmp(section, "*UND*") == 0) continue;
    if (strcmp(section, "*ABS*") == 0) {
      if (strcmp(version, node) == 0 && strcmp(name, node) == 0) node_defined = 1;
      continue;
    }
    if (strncmp(name, "asb_", 4) != 0) {
      ASBT_FAIL("%s exports %s (%s), which is not ours", lib, name, version);
      continue;
    }
    if (strcmp(version, node) != 0)
      ASBT_FAIL("%s: %s has version '%s', not %s", lib, name, version, node);
    add(&exported, name);
  }
  pclose(p);
  CHECK(node_defined);
  for (int i = 0; i < listed.n; i++)
    if (!has(&exported, listed.v[i]))
      ASBT_FAIL("%s: %s is listed but not exported", lib, listed.v[i]);
  for (int i = 0; i < exported.n; i++)
    if (!has(&listed, exported.v[i]))
      ASBT_FAIL("%s: %s is exported but not in %s", lib, exported.v[i], list);
  CHECK(exported.n > 0);

  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    ASBT_FAIL("dlopen %s: %s", lib, dlerror());
  } else {
    for (int i = 0; i < listed.n; i++) {
      void *v = dlvsym(h, listed.v[i], node);
      void *d = dlsym(h, listed.v[i]);
      if (!v) ASBT_FAIL("dlvsym(%s, %s) failed: %s", listed.v[i], node, dlerror());
      if (v != d) ASBT_FAIL("%s: dlvsym and dlsym disagree (%p, %p)", listed.v[i], v, d);
      if (dlvsym(h, listed.v[i], "ASB_0.9") != NULL)
        ASBT_FAIL("%s found under a node that does not exist", listed.v[i]);
    }
    dlclose(h);
  }
  if (asbt_failures == failures_before)
    printf("%s: %d symbols, each %s, each found by dlvsym\n", lib, exported.n, node);
  clear(&listed);
  clear(&exported);
}

int main(int argc, char **argv) {
  if (argc < 4 || (argc - 1) % 3 != 0) {
    fprintf(stderr, "usage: %s LIB SYMBOLS NODE [LIB SYMBOLS NODE ...]\n", argv[0]);
    return 2;
  }
  for (int i = 1; i + 2 < argc; i += 3) check_library(argv[i], argv[i + 1], argv[i + 2]);
  TEST_MAIN_END();
}
