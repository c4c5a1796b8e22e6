/* execve with a PATH search that takes PATH from envp (execvpe takes it
 * from the caller's environment). No allocation: safe in a forked child of
 * a multi-threaded process. Shared by the engine and asb-init.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_EXEC_PATH_H
#define ASB_EXEC_PATH_H

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

/* Returns only on failure, with errno set (ENOENT if found nowhere, EACCES
 * if found but not executable). */
static inline void asb_exec_path(const char *file, char *const argv[], char *const envp[]) {
  if (strchr(file, '/')) {
    execve(file, argv, envp);
    return;
  }
  const char *path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  for (size_t i = 0; envp[i]; i++)
    if (!strncmp(envp[i], "PATH=", 5)) path = envp[i] + 5;
  size_t fl = strlen(file);
  int saw_eacces = 0;
  for (const char *p = path;;) {
    const char *c = strchr(p, ':');
    size_t dl = c ? (size_t)(c - p) : strlen(p);
    char buf[PATH_MAX];
    if (dl + fl + 3 <= sizeof buf) { /* dir (or "."), "/", file, NUL */
      memcpy(buf, p, dl);
      if (dl == 0) buf[dl++] = '.';
      buf[dl] = '/';
      memcpy(buf + dl + 1, file, fl + 1);
      execve(buf, argv, envp);
      if (errno == EACCES)
        saw_eacces = 1;
      else if (errno != ENOENT && errno != ENOTDIR)
        return;
    }
    if (!c) break;
    p = c + 1;
  }
  errno = saw_eacces ? EACCES : ENOENT;
}

#endif
