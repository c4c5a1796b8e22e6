/* The code interpreter inside sandboxes (codei.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_CODEI_H
#define ASB_ENGINE_CODEI_H

#include "registry.h"

/* Where the code interpreter reads its token hashes (in /run/asb), and
 * what the file holds for s (the SHA-256 of its access and traffic
 * tokens; caller frees). The engine writes it at every start and restore
 * (spec.run_files), a fork's with the fork's tokens. */
#define CODEI_TOKEN_FILE "codei-tokens"
char *codei_token_file(const sbx *s);
/* The aux agent words of asb-init for the sandbox's code interpreter
 * (NAME=VALUE environment words, then its argv), or NULL when the feature
 * is off or out of memory. Free with codei_argv_free. */
char **codei_aux_argv(engine *e, const sbx *s);
void codei_argv_free(char **v);
/* Ask asb-init to start the sandbox's on-demand code interpreter (once per
 * engine run; asb-init ignores repeats). Does not wait for it. 0 or a
 * negative errno. */
int codei_start(engine *e, sbx *s);
/* Launch it if needed and wait until its port accepts connections, up to
 * timeout_ms. Returns a connected socket or a negative errno. */
int codei_connect(engine *e, sbx *s, int timeout_ms);
/* Wait until the sandbox's code interpreter answers GET /health with 200
 * (its default python kernel is up), up to timeout_ms. 0, or a negative
 * errno (-ETIMEDOUT, -ESRCH when the sandbox died). */
int codei_wait_ready(engine *e, sbx *s, int timeout_ms);
/* POST /envs: the interpreter (started before s was claimed, in a warm
 * pool) takes env as its own environment, and its kernels with it. 0 or a
 * negative errno. */
int codei_set_envs(engine *e, sbx *s, const cJSON *env);
/* Preflight lines (caller frees): which of the code interpreter's packages
 * (templates/code-interpreter/packages.txt) the host lacks. Never fatal. */
char *codei_preflight(void);
/* The same lines for dpkg's status file text (len bytes at status,
 * NUL-terminated; NULL: none checked). */
char *codei_preflight_status(const char *status, size_t len);

#endif
