/* envd: paths as E2B's envd computes them: Go's filepath.Clean and Join, and
 * ExpandAndResolve (the default workdir, "~", paths relative to the user's
 * home). Purely lexical: symlinks and permissions are the kernel's business,
 * under the requesting user's credentials (auth.c).
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "path.h"
#include "state.h"
#include "util/buf.h"
#include "util/util.h"

/* Go's path/filepath.Clean for Unix paths. */
char *envd_path_clean(const char *p) {
  size_t n = strlen(p);
  if (n == 0) return asbi_strdup(".");
  int rooted = p[0] == '/';
  char *out = malloc(n + 2);
  if (!out) return NULL;
  size_t w = 0, r = 0, dotdot = 0;
  if (rooted) {
    out[w++] = '/';
    r = 1;
    dotdot = 1;
  }
  while (r < n) {
    if (p[r] == '/') {
      r++;
    } else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
      r++;
    } else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
      r += 2;
      if (w > dotdot) {
        w--;
        while (w > dotdot && out[w] != '/') w--;
      } else if (!rooted) {
        if (w > 0) out[w++] = '/';
        out[w++] = '.';
        out[w++] = '.';
        dotdot = w;
      }
    } else {
      if ((rooted && w != 1) || (!rooted && w != 0)) out[w++] = '/';
      while (r < n && p[r] != '/') out[w++] = p[r++];
    }
  }
  if (w == 0) out[w++] = '.';
  out[w] = '\0';
  return out;
}

char *envd_path_join(const char *a, const char *b) {
  asbi_buf t = ASBI_BUF_INIT;
  if (!asbi_empty(a)) asbi_buf_puts(&t, a);
  if (!asbi_empty(b)) {
    if (t.len) asbi_buf_putc(&t, '/');
    asbi_buf_puts(&t, b);
  }
  if (!t.data) return asbi_strdup("");
  char *r = t.len ? envd_path_clean(t.data) : asbi_strdup("");
  asbi_buf_free(&t);
  return r;
}

char *envd_resolve_path(const char *path, const envd_user *u, const char **err) {
  char *wd = NULL;
  *err = NULL;
  if (asbi_empty(path)) {
    wd = envd_default_workdir();
    path = wd ? wd : "";
  }
  char *res = NULL;
  if (path[0] == '~') {
    if (path[1] != '\0' && path[1] != '/' && path[1] != '\\') {
      *err = "cannot expand user-specific home dir";
      free(wd);
      return NULL;
    }
    res = envd_path_join(u->home, path + 1);
  } else if (path[0] == '/') {
    res = asbi_strdup(path); /* Go returns absolute paths unchanged */
  } else {
    res = envd_path_join(u->home, path);
  }
  free(wd);
  return res;
}
