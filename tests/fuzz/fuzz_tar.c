/* Fuzz the tar reader (the engine reads untrusted build contexts with it)
 * and the writer. Invariants: entry data lies inside the input; names are
 * normalised (relative, no "." or ".." component, no empty component);
 * re-writing what was read and reading it back gives the same entries.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "proto/tar.h"

static void check_name(const char *n) {
  FUZZ_CHECK(n[0] != '/');
  size_t len = strlen(n);
  if (!len) return;
  FUZZ_CHECK(n[len - 1] != '/');
  FUZZ_CHECK(strstr(n, "//") == NULL);
  const char *p = n;
  while (*p) {
    const char *e = strchr(p, '/');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    FUZZ_CHECK(!(k == 1 && p[0] == '.'));
    FUZZ_CHECK(!(k == 2 && p[0] == '.' && p[1] == '.'));
    p += k + (e ? 1 : 0);
  }
}

typedef struct seen {
  char name[4096];
  int type;
  unsigned mode;
  uint64_t size;
  const char *data;
} seen;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  asbi_tar_reader r;
  asbi_tar_reader_init(&r, (const char *)data, size);
  static asbi_tar_entry e;
  static seen v[64];
  int n = 0, rc;
  asbi_buf out = ASBI_BUF_INIT;
  while ((rc = asbi_tar_next(&r, &e)) == 1) {
    check_name(e.name);
    if (e.size) {
      FUZZ_CHECK(e.data >= (const char *)data);
      FUZZ_CHECK(e.data + e.size <= (const char *)data + size);
    }
    FUZZ_CHECK(e.mode <= 07777);
    int t = e.type;
    if (n < 64 && e.name[0] &&
        (t == ASBI_TAR_FILE || t == ASBI_TAR_DIR ||
         (t == ASBI_TAR_SYMLINK && e.linkname[0] && strlen(e.linkname) <= 100))) {
      if (asbi_tar_add(&out, e.name, t, e.mode, e.data, (size_t)e.size, e.linkname) == 0) {
        seen *s = &v[n++];
        snprintf(s->name, sizeof s->name, "%s", e.name);
        s->type = t;
        s->mode = e.mode;
        s->size = t == ASBI_TAR_FILE ? e.size : 0;
        s->data = e.data;
      }
    }
  }
  if (rc < 0) FUZZ_CHECK(r.err != NULL);
  FUZZ_CHECK(asbi_tar_finish(&out) == 0);
  asbi_tar_reader_init(&r, out.data, out.len);
  for (int i = 0; i < n; i++) {
    FUZZ_CHECK(asbi_tar_next(&r, &e) == 1);
    FUZZ_CHECK(strcmp(e.name, v[i].name) == 0);
    FUZZ_CHECK(e.type == v[i].type);
    FUZZ_CHECK(e.mode == v[i].mode);
    FUZZ_CHECK(e.size == v[i].size);
    FUZZ_CHECK(e.size == 0 || memcmp(e.data, v[i].data, (size_t)e.size) == 0);
  }
  FUZZ_CHECK(asbi_tar_next(&r, &e) == 0);
  asbi_buf_free(&out);
  return 0;
}
