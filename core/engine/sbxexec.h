/* Programs and HTTP requests in a sandbox (sbxexec.c; prefix sbx_).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_SBXEXEC_H
#define ASB_ENGINE_SBXEXEC_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "iso/iso.h"
#include "util/buf.h"

/* The environment of a program run for the engine: PATH, HOME, USER,
 * LOGNAME, LANG, TERM, E2B_SANDBOX, then the template's env, the
 * sandbox's envVars, the call's, and extra "K=V" strings (later wins). */
char **sbx_env(int uid, const cJSON *tmpl_env, const cJSON *sandbox_env, const cJSON *call_env,
               const char *const *extra);
void sbx_env_free(char **env);
typedef struct sbx_run_opts {
  const char *const *argv;
  const char *const *envp;
  int uid; /* 0 root, 1000 user (gid = uid) */
  const char *cwd;
  const void *in; /* stdin data, or NULL (/dev/null) */
  size_t in_len;
  int timeout_ms;    /* <= 0: none */
  size_t max_output; /* per stream; 0 = 1 MiB */
  int merge;         /* stderr into out */
  int keep_tail;     /* keep the end of long output, not the start */
} sbx_run_opts;
typedef struct sbx_run_result {
  int status;    /* wait status, -1 if timed out */
  int exit_code; /* exit code, 128+signal, -1 if timed out */
  int timed_out;
  int stopped; /* sbx_run_until's *stop was set: killed (status, exit_code -1) */
  int64_t ms;
  asbi_buf out, err;
} sbx_run_result;
/* Runs to the end (or the timeout: then killed). 0 with *res filled (free
 * with sbx_run_result_free), or a negative errno if it could not start
 * (asbe_errmsg() says why). */
int sbx_run(asbe_sandbox *iso, const sbx_run_opts *o, sbx_run_result *res);
/* sbx_run, and killed as soon as *stop (read atomically, at least once a
 * second) is set: an engine stopping does not wait for a build step. */
int sbx_run_until(asbe_sandbox *iso, const sbx_run_opts *o, const int *stop, sbx_run_result *res);
void sbx_run_result_free(sbx_run_result *r);
/* One HTTP/1.1 request to a port in the sandbox; whole reply into *reply
 * (malloc'd). The status, or a negative errno. */
int sbx_http(asbe_sandbox *iso, int port, const char *method, const char *path,
             const char *const *headers, const char *body, size_t len, char **reply,
             int timeout_ms);
/* The same over a connected socket (closed here), with the reply capped at
 * max bytes (-E2BIG beyond); reply may be NULL. Shared by sbx_http and
 * sbx_envd_request. */
int sbx_http_fd(int fd, const char *method, const char *path, const char *const *headers,
                const char *body, size_t len, char **reply, int timeout_ms, size_t max);

/* One request to the sandbox's envd over its unix socket (envd.sock),
 * with X-Access-Token: token unless token is "" (before /init set one);
 * whole reply into *reply (malloc'd; may be NULL), at most 4 MiB. The HTTP
 * status, or a negative errno. */
int sbx_envd_request(asbe_sandbox *iso, const char *token, const char *method, const char *path,
                     const char *body, char **reply, int timeout_ms);

#endif
