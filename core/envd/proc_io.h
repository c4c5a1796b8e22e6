/* envd: the process service's I/O thread (see proc_io.c): reads every
 * process's output into the queues of its streams, with back-pressure,
 * reaps children, enforces lifetimes and retires ended processes into the
 * table's retained list. Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_PROC_IO_H
#define ASB_ENVD_PROC_IO_H

#include "proc_tab.h"

/* Starts the thread (attached to the process table). 0 or -1 with errno. */
int envd_pio_start(void);
/* Gives the thread up to a second to reap what is dying, then stops and
 * joins it and detaches it from the table. */
void envd_pio_stop(void);
/* Wakes the thread (a deadline or a kill to look at). */
void envd_pio_wake(void);
/* Whether a process with this new lifetime deadline (ms, asbi_now_ms) needs
 * the I/O thread woken to see it: it sleeps until its earliest timer, so
 * only a deadline before that one does. Table lock held. */
int envd_pio_deadline_wakes(uint64_t deadline_ms);
/* Registers p's output descriptors (pty, or stdout and stderr) with the
 * thread. Table lock held. */
void envd_pio_watch(envd_proc *p);
/* Resumes reading p's output once every stream watching it is at most half
 * full (a reader drained or left). p->lock held. */
void envd_pio_maybe_resume(envd_proc *p);

#endif
