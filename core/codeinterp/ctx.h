/* Contexts: a kernel each, with a thread that owns it and runs the
 * context's executions one at a time; the registry of contexts and the
 * default context of each language. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CODEINTERP_CTX_H
#define ASB_CODEINTERP_CTX_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "queue.h"

typedef struct ci_config {
  const char *rundir;      /* private directory: connection files, cells, spool */
  const char *default_cwd; /* cwd of contexts created without one */
  size_t queue_mem;        /* per-execution memory bound */
  int interrupt_grace_ms;  /* an interrupted cell that runs on this long gets
                              its kernel restarted */
  int default_context;     /* python and javascript contexts are started
                              ahead of the first call (ci_ctx_start_default);
                              /health waits for python */
  const char *state_path;  /* NULL, or a file listing the contexts: a server
                              started again (after a crash) takes them back
                              with the same ids, each reporting
                              ContextRestarting on its next call */
} ci_config;

int ci_ctx_init(const ci_config *cfg);
/* Start the default python and javascript contexts without waiting for
 * them, or take back the contexts of the state file. */
int ci_ctx_start_default(void);
/* Stop every context (kills the kernels). */
void ci_ctx_shutdown(void);

typedef struct ci_ctx ci_ctx;
typedef struct ci_exec ci_exec;

/* "js" → "javascript", "ts" → "typescript", lowercase, trimmed; NULL or
 * empty → "python". Writes at most n bytes. */
void ci_normalize_language(const char *in, char *out, size_t n);

/* Status codes for the HTTP layer. */
enum { CI_OK = 0, CI_EBADREQ = -400, CI_ENOTFOUND = -404, CI_EFAIL = -500 };

/* Create a context and wait until its kernel is ready. The reference
 * returned is the caller's. */
int ci_ctx_create(const char *language, const char *cwd, ci_ctx **out, char *err, size_t errlen);
/* The context with this id, referenced, or NULL. */
ci_ctx *ci_ctx_get(const char *id);
/* The default context of a language (created, and waited for, on first
 * use). */
int ci_ctx_default(const char *language, ci_ctx **out, char *err, size_t errlen);
void ci_ctx_unref(ci_ctx *c);
/* [{id, language, cwd}, …] (caller frees). */
char *ci_ctx_list_json(void);
/* {id, language, cwd} (caller frees). */
char *ci_ctx_json(const ci_ctx *c);
int ci_ctx_restart(const char *id, char *err, size_t errlen);
int ci_ctx_remove(const char *id);
/* 1 once the default python context is ready (or failed, or not wanted). */
int ci_ctx_startup_done(void);

/* POST /envs: set these variables (an object of strings, names checked
 * here) in the server's environment, which kernels started later inherit
 * and per-call env_vars are restored to, and in every context's kernel by
 * a silent cell queued behind what it has (so every later call sees them);
 * kept in the state file. What the engine does when it hands out a pooled
 * sandbox whose interpreter started before the claimant's envVars were
 * known. CI_OK, CI_EBADREQ, CI_EFAIL (err says why). */
int ci_set_envs(const cJSON *env, char *err, size_t errlen);

/* Queue code on a context. env: NULL, or a JSON object of strings (checked
 * by the caller). The execution's output is read from ci_exec_queue. */
int ci_exec_submit(ci_ctx *c, const char *code, const cJSON *env, ci_exec **out, char *err,
                   size_t errlen);
ci_queue *ci_exec_queue(ci_exec *e);
/* The client went away: drop its output, interrupt it if it runs. */
void ci_exec_cancel(ci_exec *e);
void ci_exec_unref(ci_exec *e);

#endif
