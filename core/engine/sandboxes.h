/* The sandbox operations of the engine (sandboxes.c): create, look up,
 * list, kill, timeouts, pause, resume/connect, metrics, logs. They take
 * plain values and return records and eng_errs; they know nothing of HTTP
 * (api.c is their front: JSON in, JSON and status codes out), so tests and
 * other fronts call them directly.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_SANDBOXES_H
#define ASB_ENGINE_SANDBOXES_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "eng_err.h"
#include "engine.h"
#include "registry.h"

/* The lifetime of a sandbox created without one: the E2B SDKs' default
 * (5 min). e2b@2.51's Sandbox.create() sends no timeout and relies on it;
 * the older REST schema said 15 s. */
#define SANDBOXES_DEFAULT_TIMEOUT_S 300

typedef struct sandboxes_create_req {
  const char *template_id;           /* id or name (a bundled one is built first) */
  int timeout_s;                     /* lifetime; <= 0: SANDBOXES_DEFAULT_TIMEOUT_S */
  int auto_pause;                    /* pause, not kill, when the lifetime ends */
  const cJSON *metadata;             /* object of strings, or NULL (copied) */
  const cJSON *env_vars;             /* object of strings, or NULL (copied) */
  const struct asbn_policy *network; /* NULL: the default (internet on); copied */
  int auto_pause_no_memory;          /* E2B's autoPauseMemory: false (files only) */
  int auto_resume;                   /* E2B's autoResume.enabled (memory pauses only) */
  const cJSON *volume_mounts;        /* volumes_parse_mounts's [{name, path}], or NULL */
} sandboxes_create_req;

/* Creates a sandbox and registers it: the isolated sandbox with envd,
 * envd's /init, the template's start command and ready check; all or
 * nothing. 0 with *out the record (referenced: reg_put), or -1 with err:
 * ENG_ENOTFOUND (no such template) or ENG_EINTERNAL (code
 * "template_start_failed" when the template's start command or ready
 * check failed). */
int sandboxes_create(engine *e, const sandboxes_create_req *rq, sbx **out, eng_err *err);
/* A fork with its parent's processes (--pause-criu): a sandbox created as
 * create does on rq's template (the hidden snapshot of the parent's files
 * taken in the freeze of the parent's fork dump), but restored from the
 * images asbe_sandbox_checkpoint_fork took of parent_id, not booted; envd's
 * token rotated from parent_token to the fork's own (its code interpreter
 * reads its hashes from the fork's token file), forkMode "processes".
 * codei_started: the parent's interpreter was running. 0 with *out (as
 * create), or -1 with err and nothing left (the caller boots one fresh). */
int sandboxes_fork_restore(engine *e, const sandboxes_create_req *rq, const char *parent_id,
                           const char *parent_token, int codei_started, sbx **out, eng_err *err);
/* create's first half, what a warm pool does ahead of time (pool.c): a
 * running sandbox of t (ids, tokens, envd up and initialised with
 * env_vars, which may be NULL; start command, ready check, code
 * interpreter), unregistered and unrecorded, owned by the caller (undo:
 * asbe_sandbox_kill + reg_sbx_free). 0, or -1 with err (nothing left). */
int sandboxes_prepare(engine *e, template_info *t, const cJSON *env_vars, sbx **out, eng_err *err);
/* sandboxes_prepare with volumes mounted (volume_mounts NULL: none). */
int sandboxes_prepare_vols(engine *e, template_info *t, const cJSON *env_vars,
                           const cJSON *volume_mounts, sbx **out, eng_err *err);

/* The live record of id, referenced (reg_put); else -1 with ENG_ENOTFOUND
 * and, when it existed, why it ended in err->code ("timeout", "killed", a
 * kill under way counts as ended). */
int sandboxes_get(engine *e, const char *id, sbx **out, eng_err *err);

typedef struct sandboxes_filter {
  int running, paused;      /* the states to list */
  const cJSON *metadata;    /* object of strings that must all match, or NULL */
  const char *template_id;  /* id or name, or NULL */
  int64_t started_after_ms; /* 0: any */
  int ascending;            /* by start time; default newest first, ties by id */
  int64_t limit;            /* 0: all */
  /* A later page: the one after the sandbox with this start time and id
   * (the last of the page before; a cursor, so sandboxes that end between
   * pages shift nothing). cursor_id NULL or "": from the start. */
  int64_t cursor_ms;
  const char *cursor_id;
} sandboxes_filter;
typedef struct sandboxes_page {
  sbx **v; /* the matching records after the cursor, at most limit, referenced */
  size_t n;
  int64_t running; /* running ones among all that matched, on any page */
  int more;        /* more match after this page: its last is the next cursor */
} sandboxes_page;
/* 0 with *out filled (free with sandboxes_page_free), or -1 with err. */
int sandboxes_list(engine *e, const sandboxes_filter *f, sandboxes_page *out, eng_err *err);
void sandboxes_page_free(engine *e, sandboxes_page *p);

/* Kills it now (its record goes, with a tombstone "killed"). */
void sandboxes_kill(engine *e, sbx *s);
/* Its lifetime ends seconds from now, sooner or later than before. */
void sandboxes_set_timeout(engine *e, sbx *s, int seconds);
/* Its lifetime lasts at least seconds from now (never shortened). */
void sandboxes_extend(engine *e, sbx *s, int seconds);
/* Pauses it: with memory, freezes it; without, stops its processes and
 * keeps its files (a resume boots it). 0, or -1 with ENG_ECONFLICT
 * (paused already) or ENG_EINTERNAL. */
int sandboxes_pause(engine *e, sbx *s, int memory, eng_err *err);
/* Extends its lifetime to seconds from now and thaws it if it was paused
 * with memory, boots it again if it was paused without (*resumed = 1).
 * With resume_only, a running one is ENG_ECONFLICT (E2B's deprecated
 * resume). 0, or -1 with err. */
int sandboxes_connect(engine *e, sbx *s, int seconds, int resume_only, int *resumed, eng_err *err);

/* Replaces its network policy (PUT /sandboxes/{id}/network), atomically;
 * packets of connections the new one refuses are refused from now on. 0, or
 * -1 with ENG_ECONFLICT (the engine runs without network) or
 * ENG_EINTERNAL. */
int sandboxes_set_network(engine *e, sbx *s, const struct asbn_policy *p, eng_err *err);

/* Samples it now, then copies its metrics with start <= ts <= end (Unix
 * seconds; 0 = unbounded), oldest first, into out; their count. */
size_t sandboxes_metrics(engine *e, sbx *s, int64_t start, int64_t end,
                         sbx_metric out[ENGINE_METRICS_RING]);
/* Samples it now: 1 with its latest metric in *out, 0 when it has none. */
int sandboxes_metric_now(engine *e, sbx *s, sbx_metric *out);

/* At most limit lines of its agent log (asb-init's and envd's output),
 * read through the fd the runtime holds, nothing the sandbox names: lines
 * of at most 4 KiB (longer ones come in pieces), those not valid UTF-8
 * left out, at most 16 MiB read. *lines: a malloc'd array of *n strings
 * (free with sandboxes_lines_free). 0, or -1 with err. */
int sandboxes_logs(engine *e, sbx *s, int64_t limit, char ***lines, size_t *n, eng_err *err);
void sandboxes_lines_free(char **v, size_t n);

#endif
