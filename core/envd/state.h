/* envd: the process-wide state (state.c): what the command line fixes at
 * startup and what /init changes later. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_STATE_H
#define ASB_ENVD_STATE_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* The E2B envd version whose behaviour this envd implements (docs/envd.md). */
#define ENVD_E2B_VERSION "0.6.4"

typedef struct envd_env_var {
  char *key;
  char *value;
  int internal; /* set by envd itself; /init cannot replace it */
} envd_env_var;

typedef struct envd_state {
  /* /init calls are applied one at a time: the token check and the update
   * are one step (envd_state_init). Taken before lock. */
  pthread_mutex_t init_lock;
  pthread_mutex_t lock; /* guards every field below */
  char *access_token;   /* NULL = no token: nothing is checked */
  char *default_user;
  char *default_workdir; /* NULL = the user's home */
  envd_env_var *envs;
  size_t n_envs;
  uint64_t env_gen;     /* bumped by every change of envs (prestart.c compares it) */
  int64_t last_init_ts; /* nanoseconds of the newest /init timestamp */
  /* fixed after startup */
  char *path_env; /* envd's own PATH, handed to processes */
  char **cgroups; /* ASB_WORKLOAD_CGROUPS directories */
  size_t n_cgroups;
  /* "<dir>/cgroup.procs" of each, NULL-terminated (NULL when none): made
   * once here, not for every Start */
  char **cgroup_procs;
  char *oom_counter; /* ASB_OOM_COUNTER file */
  /* ASB_NOFILE=<soft>:<hard>: the open-file limit of the processes envd
   * starts (envd itself may have more); nofile_max 0 = leave them envd's */
  unsigned long nofile_cur, nofile_max;
  size_t max_body;   /* bound on an RPC / JSON request body */
  size_t sub_buffer; /* a subscriber queueing more holds the process up */
  unsigned stall_ms; /* a subscriber holding it up this long is cut off */
  uint64_t started_us;
} envd_state;

/* The one instance. The fields "fixed after startup" are read without the
 * lock; the others only through the functions below. */
extern envd_state g_envd;

/* Snapshot helpers (malloc'd copies; caller frees). */
char *envd_default_user(void);
char *envd_default_workdir(void);
char *envd_token(void);
/* NULL-terminated "K=V" array of /init + internal env vars; free with
 * envd_strv_free. */
char **envd_env_snapshot(size_t *n);
void envd_strv_free(char **v);
/* Replace the user env vars (/init). */
void envd_env_replace(const cJSON *obj);
void envd_env_set_internal(const char *key, const char *value);
/* Changes with every change of the variables above (0 before the first). */
uint64_t envd_env_gen(void);
cJSON *envd_env_json(void);
/* What a POST /init asks for (strings NULL or "" = not given). */
typedef struct envd_init {
  const char *access_token; /* the new token; none = no token */
  /* the request's X-Access-Token: the current token there lets the body
   * set another (a rotation); NULL or "" = none */
  const char *auth_token;
  const char *default_user;    /* none = unchanged */
  const char *default_workdir; /* none = unchanged */
  const cJSON *env_vars;       /* replaces the /init variables; NULL = kept */
  int has_timestamp;
  int64_t timestamp_ns; /* an /init older than the newest applied is stale */
} envd_init;

enum {
  ENVD_INIT_APPLIED = 0,
  ENVD_INIT_STALE = 1,         /* older than the newest applied: ignored */
  ENVD_INIT_BAD_TOKEN = -1,    /* a token is set and this one differs */
  ENVD_INIT_RESET_DENIED = -2, /* a token is set and this /init has none */
};
/* Applies an /init as E2B's envd does: once a token is set, only an /init
 * carrying the same token may change anything. Ours on top: one that
 * authenticates with the current token in X-Access-Token (auth_token) may
 * set a new, non-empty one in its body (the engine's rotation after a
 * fork restores a sandbox's envd with its parent's token); without the
 * header, or with another token there, E2B's guard holds as it is. One of
 * the ENVD_INIT_ values. */
int envd_state_init(const envd_init *in);
/* Frees what the state holds and empties it (at exit). */
void envd_state_free(void);

#endif
