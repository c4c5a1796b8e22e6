/* envd: the HTTP server (server.c). Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_SERVER_H
#define ASB_ENVD_SERVER_H

typedef struct envd_listen {
  const char *unix_path; /* or NULL */
  const char *addr;      /* TCP address (default 127.0.0.1) */
  int port;              /* 0 = any */
} envd_listen;
/* Start the daemon; on success *bound_port is the TCP port. 0 or -1. */
int envd_server_start(const envd_listen *l, int *bound_port);
void envd_server_stop(void);

#endif
