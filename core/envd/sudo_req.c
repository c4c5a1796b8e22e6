/* envd: the sudo client's request (what a sandbox process sends to envd's
 * sudo socket: untrusted, fuzzed by tests/fuzz/fuzz_sudo_req.c) and sudo's
 * shell quoting. SPDX-License-Identifier: Apache-2.0 */
#include "sudo_req.h"

#include <stdlib.h>
#include <string.h>

static int push(const char ***v, size_t *n, size_t *cap, const char *s) {
  if (*n + 2 > *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    const char **nv = realloc(*v, c * sizeof *nv);
    if (!nv) return -1;
    *v = nv;
    *cap = c;
  }
  (*v)[(*n)++] = s;
  (*v)[*n] = NULL;
  return 0;
}

int envd_sudo_req_parse(const char *buf, size_t len, envd_sudo_req *out) {
  memset(out, 0, sizeof *out);
  out->user = "root";
  out->cwd = "/";
  size_t ce = 0, ca = 0;
  static const char *const none[1] = {NULL};
  for (size_t i = 0; i < len;) {
    const char *f = buf + i;
    size_t l = strnlen(f, len - i);
    i += l + 1;
    if (!l) continue;
    const char *v = f + 1;
    int rc = 0;
    switch (f[0]) {
      case 'u':
        out->user = v;
        break;
      case 'd':
        out->cwd = v;
        break;
      case 'f':
        out->fl_env |= strchr(v, 'E') != NULL;
        out->fl_login |= strchr(v, 'i') != NULL;
        out->fl_shell |= strchr(v, 's') != NULL;
        break;
      case 'e':
        rc = push(&out->env, &out->n_env, &ce, v);
        break;
      case 'a':
        rc = push(&out->args, &out->n_args, &ca, v);
        break;
      default:
        break;
    }
    if (rc) {
      envd_sudo_req_free(out);
      return -1;
    }
  }
  if (!out->env) out->env = (const char **)none;
  if (!out->args) out->args = (const char **)none;
  return 0;
}

void envd_sudo_req_free(envd_sudo_req *r) {
  if (r->n_env) free(r->env);
  if (r->n_args) free(r->args);
  memset(r, 0, sizeof *r);
}

char *envd_sudo_shell_join(const char *const *argv) {
  size_t n = 1;
  for (size_t i = 0; argv[i]; i++) n += 2 * strlen(argv[i]) + 1;
  char *s = malloc(n), *w = s;
  if (!s) return NULL;
  for (size_t i = 0; argv[i]; i++) {
    if (i) *w++ = ' ';
    for (const char *c = argv[i]; *c; c++) {
      unsigned char ch = (unsigned char)*c;
      if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '_' || ch == '-' || ch == '$'))
        *w++ = '\\';
      *w++ = *c;
    }
  }
  *w = '\0';
  return s;
}
