/* envd: the process service (process.Process) — Start and Connect, and the
 * service's start and stop. Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_PROC_H
#define ASB_ENVD_PROC_H

#include "rpc.h"

/* Starts the process service (its I/O thread). 0 or -1 with errno. */
int envd_proc_init(void);
/* Kills every process, stops the I/O thread, drops the table. */
void envd_proc_shutdown(void);

/* process.Process/Start: spawns the process and streams its output. */
envd_stream *envd_proc_start(const envd_call *c, const cJSON *req, envd_err *e);
/* process.Process/Connect: streams a running (or recently ended) process. */
envd_stream *envd_proc_connect(const envd_call *c, const cJSON *req, envd_err *e);

#endif
