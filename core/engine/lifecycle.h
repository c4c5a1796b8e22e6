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
/* Under s->mu: what a criu dump of the running s needs gone (--pause-criu's
 * checkpoint, a fork with processes): its network link (criu restores no
 * veth), the engine's pooled connections to envd and those of requests in
 * flight (shut: their callers see them end; criu cannot dump a socket
 * whose peer is the engine's). How many in flight were shut: their other
 * ends close once the sandbox runs and sees them shut. idle non-NULL: the
 * pooled ones are shut and waited for until the sandbox closed its ends
 * (a fork's dump, made at once in a freeze), their number in *idle; NULL:
 * just closed (a pause's dump, whose criu takes a while to look). */
int lifecycle_unlink_for_dump(engine *e, sbx *s, int *idle);
/* Under s->mu (dropped and taken again meanwhile): its link back with its
 * policy, after a dump it survived. */
void lifecycle_relink(engine *e, sbx *s);
/* Sample the sandbox's metrics now into its ring. */
void lifecycle_sample(engine *e, sbx *s);

#endif
