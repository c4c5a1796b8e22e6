/* envd: the sudo client's request and sudo's shell quoting (sudo_req.c).
 * Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_SUDO_REQ_H
#define ASB_ENVD_SUDO_REQ_H

#include <stddef.h>

/* A request's body: NUL-terminated fields, each a tag byte and a value:
 * 'u' target user, 'f' flags ("E", "i", "s"), 'd' cwd, 'e' KEY=VALUE of
 * the caller's environment, 'a' an argument of the command. Unknown tags
 * and empty fields are skipped. */
typedef struct envd_sudo_req {
  const char *user; /* "root" when absent */
  const char *cwd;  /* "/" when absent */
  int fl_env, fl_login, fl_shell;
  const char **env; /* n_env entries, then NULL */
  size_t n_env;
  const char **args; /* n_args entries, then NULL */
  size_t n_args;
} envd_sudo_req;

/* Parses buf[0..len) (buf[len] must be '\0'); the strings point into buf.
 * 0, or -1 (out of memory). */
int envd_sudo_req_parse(const char *buf, size_t len, envd_sudo_req *out);
void envd_sudo_req_free(envd_sudo_req *r);
/* sudo's quoting of a command for a shell's -c: every character but
 * letters, digits, '_', '-' and '$' backslash-escaped, the words joined by
 * single spaces. Malloc'd, NULL when out of memory. */
char *envd_sudo_shell_join(const char *const *argv);

#endif
