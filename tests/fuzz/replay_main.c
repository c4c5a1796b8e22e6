/* Replays fuzz inputs without libFuzzer: runs LLVMFuzzerTestOneInput over
 * every regular file given on the command line or found (non-recursively)
 * in a directory given there. Used by the fuzz.<name> ctests in normal
 * builds. SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      return -1;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (len < cap) break;
    cap *= 2;
    buf = realloc(buf, cap);
  }
  fclose(f);
  /* An exact-size copy so reads past the input are caught by ASan. */
  uint8_t *exact = malloc(len ? len : 1);
  if (len) memcpy(exact, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, size_t *count) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      names = realloc(names, cap * sizeof *names);
    }
    size_t l = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = malloc(l);
    snprintf(names[n], l, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      if (run_file(names[i]) != 0) rc = -1;
      (*count)++;
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  size_t count = 0;
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-') continue; /* libFuzzer-style flags are ignored */
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
      rc = 1;
    } else if (S_ISDIR(st.st_mode)) {
      if (run_dir(argv[i], &count) != 0) rc = 1;
    } else {
      if (run_file(argv[i]) != 0) rc = 1;
      count++;
    }
  }
  printf("replayed %zu input(s)\n", count);
  return rc;
}
