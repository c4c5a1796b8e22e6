/* Fuzz the request a sandbox process sends to envd's sudo socket
 * (core/envd/sudo_req.c) and sudo's shell quoting of its words.
 * Invariants: every string parsed lies inside the input and is one of its
 * NUL-terminated fields (after the tag byte); the counts match the arrays;
 * the quoting, unescaped, gives back the words joined by spaces, and only
 * letters, digits, '_', '-', '$' and spaces go unescaped.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "sudo_req.h"

static int inside(const char *p, const char *b, size_t n) {
  return p >= b && p <= b + n;
}

static void check_join(const char *const *w) {
  char *j = envd_sudo_shell_join(w);
  FUZZ_CHECK(j != NULL);
  size_t want = 0;
  for (size_t i = 0; w[i]; i++) want += strlen(w[i]) + (i ? 1 : 0);
  char *u = malloc(want + 1), *o = u;
  size_t word = 0;
  const char *c = j;
  for (; *c; c++) {
    if (*c == '\\') {
      c++;
      FUZZ_CHECK(*c != '\0');
      *o++ = *c;
    } else if (*c == ' ') {
      *o++ = ' ';
      word++;
    } else {
      unsigned char ch = (unsigned char)*c;
      FUZZ_CHECK((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '_' || ch == '-' || ch == '$');
      *o++ = *c;
    }
    FUZZ_CHECK((size_t)(o - u) <= want);
  }
  *o = '\0';
  size_t k = 0;
  for (size_t i = 0; w[i]; i++) {
    if (i) FUZZ_CHECK(u[k++] == ' ');
    size_t l = strlen(w[i]);
    FUZZ_CHECK(memcmp(u + k, w[i], l) == 0);
    k += l;
  }
  FUZZ_CHECK(k == want && u[k] == '\0');
  free(u);
  free(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *b = malloc(size + 1);
  memcpy(b, data, size);
  b[size] = '\0';
  envd_sudo_req r;
  if (envd_sudo_req_parse(b, size, &r) == 0) {
    FUZZ_CHECK(r.user && r.cwd && r.env && r.args);
    FUZZ_CHECK(!strcmp(r.user, "root") || (inside(r.user, b, size) && r.user[-1] == 'u'));
    FUZZ_CHECK(!strcmp(r.cwd, "/") || (inside(r.cwd, b, size) && r.cwd[-1] == 'd'));
    for (size_t i = 0; i < r.n_env; i++)
      FUZZ_CHECK(inside(r.env[i], b, size) && r.env[i][-1] == 'e');
    FUZZ_CHECK(r.env[r.n_env] == NULL && r.args[r.n_args] == NULL);
    for (size_t i = 0; i < r.n_args; i++)
      FUZZ_CHECK(inside(r.args[i], b, size) && r.args[i][-1] == 'a');
    check_join(r.args);
    envd_sudo_req_free(&r);
  }
  free(b);
  return 0;
}
