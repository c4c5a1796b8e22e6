/* Timeouts, deaths, pause/resume and metrics (lifecycle.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_LIFECYCLE_H
#define ASB_ENGINE_LIFECYCLE_H

#include "registry.h"

int lifecycle_start(engine *e);
void lifecycle_stop(engine *e);
/* Wake the lifecycle thread (a deadline changed). */
void lifecycle_kick(engine *e);
/* Kill a sandbox for `reason` and drop its record. */
void lifecycle_kill(engine *e, sbx *s, const char *reason);
/* Pause: with memory, freeze (its processes keep their memory); without,
 * stop every process and keep the files (asbe_sandbox_stop), for resume to
 * boot it again (sandboxes_connect). 0, -EALREADY (pause of a paused one)
 * or another negative errno. */
int lifecycle_pause(engine *e, sbx *s, int memory);
/* Resume a sandbox paused with memory (thaw); -EOPNOTSUPP for one paused
 * without (sandboxes_connect boots it). */
int lifecycle_resume(engine *e, sbx *s);
/* Sample the sandbox's metrics now into its ring. */
void lifecycle_sample(engine *e, sbx *s);

#endif
