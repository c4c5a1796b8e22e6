/* Named snapshots and fork (snapshots.c): a sandbox's files at one
 * instant become a template, E2B's snapshot, that later creates start from.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_SNAPSHOTS_H
#define ASB_ENGINE_SNAPSHOTS_H
#include <stddef.h>
#include "eng_err.h"
#include "engine.h"
#include "registry.h"
#include "templates.h"

/* The most forks one request makes (E2B's SandboxForkRequest.count). */
#define SNAPSHOTS_FORK_MAX 100

/* NULL if name is a valid snapshot name (1..128 of [a-z0-9._-], starting
 * with a letter or digit), else why not. */
const char *snapshots_name_invalid(const char *name);
/* Takes a snapshot of s (running: frozen while its files are copied, then
 * thawed; paused: copied as it is). name NULL/"": an unnamed one (its id
 * is its name); a name of an existing snapshot gives that snapshot a new
 * build (sandboxes started from the old one keep it). hidden: a fork's,
 * not listed. 0 with *out the template (referenced: templates_put), or -1
 * with err: ENG_EINVAL (the name), ENG_ECONFLICT (the name is a template's
 * that is not a snapshot; s is not running; its template is gone),
 * ENG_EINTERNAL. */
int snapshots_take(engine *e, sbx *s, const char *name, int hidden, template_info **out,
                   eng_err *err);
/* snapshots_take, and with dump (a fork's, on an engine with criu) the
 * running s's processes dumped in the same freeze that copies its files
 * (asbe_sandbox_checkpoint_fork; s is off its network link and the
 * engine's connections to it are ended meanwhile, as for a --pause-criu
 * pause): *dumped 1 if that worked (drop the images with
 * asbe_fork_images_drop), else 0 with why in dwhy (dwl bytes). */
int snapshots_take_ex(engine *e, sbx *s, const char *name, int hidden, int dump, int *dumped,
                      char *dwhy, size_t dwl, template_info **out, eng_err *err);
/* The snapshots (not hidden) whose source is sandbox_id (NULL: any) and
 * that name matches (NULL: any; a name or id, "name:default" and
 * "namespace/name" forms too), ordered by id, after the id `after` (NULL:
 * from the start), at most limit (0: all). *more: more after this page.
 * Each referenced: templates_put_all. */
template_info **snapshots_list(engine *e, const char *sandbox_id, const char *name,
                               const char *after, size_t limit, size_t *n, int *more);
/* Forks s: one hidden snapshot, count sandboxes from it (with s's
 * metadata, env vars and network policy, lifetime timeout_s). With
 * processes, on an engine with criu (--pause-criu) and s running: each
 * fork gets s's processes and memory too (forkMode "processes"), or boots
 * fresh on the files when that fails ("files", logged why). out[i] is
 * the i-th new sandbox (referenced: reg_put) or NULL with errs[i] why. 0,
 * or -1 with err before any fork was tried (ENG_ECONFLICT: s is paused). */
int snapshots_fork(engine *e, sbx *s, int timeout_s, int count, int processes, sbx **out,
                   eng_err *errs, eng_err *err);
/* Deletes the hidden (fork) snapshots no sandbox uses any more, and the
 * files of snapshots deleted while in use that nothing uses now. */
void snapshots_gc(engine *e);
#endif
