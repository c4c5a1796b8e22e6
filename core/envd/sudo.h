/* envd: sudo inside a sandbox (sudo.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_SUDO_H
#define ASB_ENVD_SUDO_H

/* The sudo socket a client connects to when ASB_SUDO_SOCKET is unset. */
#define ENVD_SUDO_SOCKET "/run/asb/sudo.sock"

/* Serves sudo on a unix socket at path (mode 0666: every user of the
 * sandbox may ask; the policy is checked per request from the peer's
 * credentials). Only when envd runs as root. 0, or -1 with errno. */
int envd_sudo_serve_start(const char *path);
void envd_sudo_serve_stop(void);

/* The client: envd run under the name "sudo". Returns the exit status. */
int envd_sudo_client_main(int argc, char **argv);

#endif
