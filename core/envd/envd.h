/* envd: the in-sandbox agent (E2B envd-compatible). Shared declarations of
 * the server, auth/users, process, filesystem, files and watcher modules.
 * Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_H
#define ASB_ENVD_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/buf.h"

/* The E2B envd version whose behaviour this envd implements (docs/envd.md). */
#define ENVD_E2B_VERSION "0.6.4"

/* ---- configuration and shared state (main.c) -------------------------- */
typedef struct envd_env_var {
  char *key;
  char *value;
  int internal; /* set by envd itself; /init cannot replace it */
} envd_env_var;

typedef struct envd_state {
  pthread_mutex_t lock; /* guards every field below */
  char *access_token;   /* NULL = no token: nothing is checked */
  char *default_user;
  char *default_workdir; /* NULL = the user's home */
  envd_env_var *envs;
  size_t n_envs;
  int64_t last_init_ts; /* nanoseconds of the newest /init timestamp */
  /* fixed after startup */
  char *path_env; /* envd's own PATH, handed to processes */
  char **cgroups; /* ASB_WORKLOAD_CGROUPS directories */
  size_t n_cgroups;
  char *oom_counter; /* ASB_OOM_COUNTER file */
  /* ASB_NOFILE=<soft>:<hard>: the open-file limit of the processes envd
   * starts (envd itself may have more); nofile_max 0 = leave them envd's */
  unsigned long nofile_cur, nofile_max;
  size_t max_body;   /* bound on an RPC / JSON request body */
  size_t sub_buffer; /* a subscriber queueing more holds the process up */
  unsigned stall_ms; /* a subscriber holding it up this long is cut off */
  uint64_t started_us;
} envd_state;

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
cJSON *envd_env_json(void);

/* ---- users and credentials (auth.c) ----------------------------------- */
typedef struct envd_user {
  char name[64];
  uid_t uid;
  gid_t gid;
  char home[512];
  gid_t groups[64];
  int ngroups;
} envd_user;

/* Look up a Unix user by name. 0, or -1 (unknown user). */
int envd_user_lookup(const char *name, envd_user *out);
/* Names of uid/gid (decimal when unknown) into out. */
void envd_uid_name(uid_t uid, char *out, size_t n);
void envd_gid_name(gid_t gid, char *out, size_t n);
/* Switch the calling thread's filesystem credentials (fsuid, fsgid and
 * supplementary groups) to the user's; envd_creds_leave restores root's.
 * 0, or -1 with errno. */
int envd_creds_enter(const envd_user *u);
void envd_creds_leave(void);
/* E2B's ExpandAndResolve: "" → default workdir → home; "~" and "~/x"
 * expanded; relative paths are joined under home. Returns a malloc'd path,
 * or NULL and *err (static text) for "~other". */
char *envd_resolve_path(const char *path, const envd_user *u,
                        const char **err);
/* Go's filepath.Clean / Join. malloc'd. */
char *envd_path_clean(const char *p);
char *envd_path_join(const char *a, const char *b);
/* Constant-time string equality. */
int envd_token_eq(const char *a, const char *b);
/* "v1_" + base64-nopad(sha256("path:op:user:token[:exp]")) into out (64+). */
void envd_sign(const char *path, const char *op, const char *user,
               const char *token, const char *exp, char *out, size_t n);

/* ---- RPC plumbing (server.c) ------------------------------------------ */
/* A Connect error: code is one of the Connect code names. */
typedef struct envd_err {
  const char *code;
  char msg[512];
} envd_err;
void envd_err_set(envd_err *e, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Map errno to a Connect code (ENOENT not_found, EACCES/EPERM
 * permission_denied, ENOSPC/EDQUOT resource_exhausted, ...). */
const char *envd_errno_code(int err);

/* Per-request context handed to RPC handlers. */
typedef struct envd_call {
  const envd_user *user;
  int64_t timeout_ms;   /* Connect-Timeout-Ms, 0 = none */
  int keepalive_s;      /* Keepalive-Ping-Interval (default 90) */
  int sock;             /* client socket (for hang-up detection), -1 */
} envd_call;

/* Unary handler: fills *resp (a JSON object) or e. 0 or -1. */
typedef int (*envd_unary_fn)(const envd_call *c, const cJSON *req,
                             cJSON **resp, envd_err *e);

/* Server-streaming: the handler returns a stream, or NULL and e. The stream
 * produces envelopes through next(): it appends bytes to out (whole
 * envelopes, the end-stream one last) and returns 1 while more may follow, 0
 * when done, -1 to abort the connection. next() may block. */
typedef struct envd_stream envd_stream;
struct envd_stream {
  int (*next)(envd_stream *s, asbi_buf *out);
  void (*destroy)(envd_stream *s);
};
typedef envd_stream *(*envd_stream_fn)(const envd_call *c, const cJSON *req,
                                       envd_err *e);

/* Envelope helpers for streams. */
int envd_env_msg(asbi_buf *out, const char *json, size_t len);
int envd_env_end(asbi_buf *out, const char *code, const char *msg);

/* Client-streaming: begin/message/finish. */
typedef struct envd_cstream envd_cstream;
struct envd_cstream {
  int (*message)(envd_cstream *s, const cJSON *msg, envd_err *e);
  int (*finish)(envd_cstream *s, cJSON **resp, envd_err *e);
  void (*destroy)(envd_cstream *s);
};
typedef envd_cstream *(*envd_cstream_fn)(const envd_call *c, envd_err *e);

typedef struct envd_method {
  const char *path; /* "/process.Process/Start" */
  int kind;         /* 0 unary, 1 server stream, 2 client stream */
  envd_unary_fn unary;
  envd_stream_fn stream;
  envd_cstream_fn cstream;
  int fs_creds; /* run with the user's filesystem credentials */
} envd_method;

/* Wait helper for streams: poll wake_fd and the client socket until
 * timeout_ms (-1 = forever). 1 woken, 0 timeout, -1 client gone. */
int envd_wait(int wake_fd, int sock, int timeout_ms);

/* ---- services ---------------------------------------------------------- */
extern const envd_method envd_process_methods[];
extern const envd_method envd_fs_methods[];

int envd_proc_init(void);     /* starts the process I/O thread */
void envd_proc_shutdown(void); /* kills every process, joins the thread */
size_t envd_proc_count(void);

/* EntryInfo JSON for path (lstat). NULL and e on failure. */
cJSON *envd_entry_info(const char *path, envd_err *e);
/* EnsureDirs: mkdir -p with 0755 (as the calling thread's fs creds). 0 or
 * -1 with errno. */
int envd_mkdirs(const char *path);

/* Watchers (watch.c). */
envd_stream *envd_watch_stream(const envd_call *c, const cJSON *req,
                               envd_err *e);
int envd_watcher_create(const envd_call *c, const cJSON *req, cJSON **resp,
                        envd_err *e);
int envd_watcher_events(const envd_call *c, const cJSON *req, cJSON **resp,
                        envd_err *e);
int envd_watcher_remove(const envd_call *c, const cJSON *req, cJSON **resp,
                        envd_err *e);
void envd_watch_shutdown(void);

/* Process service internals shared with the HTTP layer. */
int envd_proc_spawn_test(void);

/* ---- HTTP server (server.c) ------------------------------------------- */
typedef struct envd_listen {
  const char *unix_path; /* or NULL */
  const char *addr;      /* TCP address (default 127.0.0.1) */
  int port;              /* 0 = any */
} envd_listen;
/* Start the daemon; on success *bound_port is the TCP port. 0 or -1. */
int envd_server_start(const envd_listen *l, int *bound_port);
void envd_server_stop(void);

/* ---- misc -------------------------------------------------------------- */
void envd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int g_envd_verbose;

#endif
