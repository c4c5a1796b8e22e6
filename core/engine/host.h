/* Programs the engine runs on the host (host.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_HOST_H
#define ASB_ENGINE_HOST_H

/* Runs argv on the host (no shell, stdin and stderr /dev/null), its
 * stdout (the first 64 KiB) into *out (malloc'd). The exit status, 128
 * if it did not exit, or -errno if it could not start. */
int host_run(const char *const *argv, char **out);
/* rm -rf --one-file-system path: the exit status, or -errno. */
int host_rm_rf(const char *path);

#endif
