/* The host's mount points before and after a test's work: which are new.
 * ctest runs tests in parallel, and some (envd.hostile, tmpfs scratch
 * dirs) mount under /tmp while others run, so a plain count of
 * /proc/self/mountinfo lines flakes. New mount points under /tmp/ are
 * left out unless they are under `own` (the engine's state dir), and so
 * are named network namespaces (/run/netns/: the net.* tests' topologies;
 * the engine names none); anywhere else, any new mount point counts.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASBT_MOUNTS_H
#define ASBT_MOUNTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct asbt_mounts {
  char **v;
  size_t n;
} asbt_mounts;

/* Field 5 of each mountinfo line (the mount point). 0, or -1. */
static inline int asbt_mounts_take(asbt_mounts *m) {
  m->v = NULL;
  m->n = 0;
  FILE *f = fopen("/proc/self/mountinfo", "r");
  if (!f) return -1;
  char line[8192];
  while (fgets(line, sizeof line, f)) {
    char *sp = line;
    for (int i = 0; i < 4 && sp; i++) sp = strchr(sp + (i ? 1 : 0), ' ');
    if (!sp) continue;
    char *mp = sp + 1, *end = strchr(mp, ' ');
    if (end) *end = '\0';
    char **nv = realloc(m->v, (m->n + 1) * sizeof *nv);
    if (!nv) break;
    m->v = nv;
    m->v[m->n++] = strdup(mp);
  }
  fclose(f);
  return 0;
}

static inline void asbt_mounts_free(asbt_mounts *m) {
  for (size_t i = 0; i < m->n; i++) free(m->v[i]);
  free(m->v);
  m->v = NULL;
  m->n = 0;
}

/* How many mount points are there now that `before` did not have (each
 * printed), leaving out other tests' scratch mounts under /tmp/. */
static inline int asbt_mounts_new(const asbt_mounts *before, const char *own) {
  asbt_mounts now;
  if (asbt_mounts_take(&now)) return -1;
  int n = 0;
  for (size_t i = 0; i < now.n; i++) {
    const char *mp = now.v[i];
    size_t seen = 0, had = 0;
    for (size_t j = 0; j < now.n; j++)
      if (!strcmp(now.v[j], mp)) seen++;
    for (size_t j = 0; j < before->n; j++)
      if (!strcmp(before->v[j], mp)) had++;
    if (seen <= had) continue; /* stacked mounts count once each */
    int dup = 0;
    for (size_t j = 0; j < i; j++)
      if (!strcmp(now.v[j], mp)) dup = 1;
    if (dup) continue;
    if (!strncmp(mp, "/tmp/", 5) && !(own && *own && !strncmp(mp, own, strlen(own)))) continue;
    if (!strncmp(mp, "/run/netns/", 11)) continue;
    fprintf(stderr, "  new mount point: %s (%zu now, %zu before)\n", mp, seen, had);
    n += (int)(seen - had);
  }
  asbt_mounts_free(&now);
  return n;
}

#endif
