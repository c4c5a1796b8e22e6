/* Programs the engine runs on the host itself (not in a sandbox): package
 * queries for template builds, and rm -rf of its own state dirs.
 * SPDX-License-Identifier: Apache-2.0 */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/buf.h"

int host_run(const char *const *argv, char **out) {
  int p[2];
  if (pipe2(p, O_CLOEXEC)) return -errno;
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return -errno;
  }
  if (pid == 0) {
    dup2(p[1], 1);
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
      dup2(nul, 0);
      dup2(nul, 2);
    }
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(p[1]);
  asbi_buf b = ASBI_BUF_INIT;
  char chunk[4096];
  ssize_t n;
  while ((n = read(p[0], chunk, sizeof chunk)) > 0)
    if (b.len < 65536) asbi_buf_append(&b, chunk, (size_t)n);
  close(p[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!b.data) asbi_buf_puts(&b, "");
  *out = asbi_buf_detach(&b, NULL);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int host_rm_rf(const char *path) {
  char *out = NULL;
  const char *argv[] = {"/bin/rm", "-rf", "--one-file-system", path, NULL};
  int rc = host_run(argv, &out);
  free(out);
  return rc;
}
