/* agent-sandboxd: the local engine's shared state. Internal.
 *
 * Layers inside the engine:
 *   main.c       CLI, preflight, start-up (adopt or reap), signals
 *   server.c     libmicrohttpd glue: TCP + unix listeners, dispatch, auth
 *   api.c        E2B control plane (/sandboxes, /v2/sandboxes, templates…)
 *   router.c     sandbox traffic: <port>-<id>.<domain> or E2b-Sandbox-* →
 *                envd's unix socket (49983) or a port in the sandbox's netns
 *   registry.c   sandbox records, persistence, tombstones of gone sandboxes
 *   lifecycle.c  timeouts (kill or pause), deaths (OOM, crash), metrics
 *   templates.c  template registry (base, busybox, built ones on disk)
 *   iso/         the isolation runtime (namespaces, cgroups, overlay, …)
 *
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_ENGINE_H
#define ASB_ENGINE_ENGINE_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdint.h>

#include "iso/iso.h"
#include "util/buf.h"

#define ENGINE_ENVD_VERSION_FALLBACK "0.6.13"
#define ENGINE_ID_LEN 20
#define ENGINE_METRICS_RING 60

typedef enum sbx_state { SBX_RUNNING = 1, SBX_PAUSED = 2, SBX_DEAD = 3 } sbx_state;

typedef struct sbx_metric {
  int64_t ts;        /* unix seconds */
  double cpu_pct;    /* of the sandbox's CPUs */
  uint64_t mem_used, mem_total, mem_cache, disk_used, disk_total;
} sbx_metric;

/* One upstream connection kept alive for reuse (envd or a user port). */
typedef struct upstream {
  int fd;
  int port;
  struct upstream *next;
} upstream;

typedef struct sbx {
  char id[ENGINE_ID_LEN + 1];
  char token[65];   /* envd access token */
  char traffic_token[65]; /* E2B's trafficAccessToken: the code interpreter
                             takes it in E2B-Traffic-Access-Token (what the
                             stock SDKs send on their context calls) */
  char *template_id;
  char *alias;      /* template name */
  cJSON *metadata;  /* object of strings */
  cJSON *env_vars;  /* object of strings */
  int64_t started_ms, end_ms; /* unix ms */
  int auto_pause;
  int cpu_count, memory_mb, disk_mb;
  sbx_state state;
  asbe_sandbox *iso;
  int refs;           /* under engine->mu */
  pthread_mutex_t mu; /* state changes, upstream pool */
  upstream *idle;     /* pooled upstream connections */
  sbx_metric ring[ENGINE_METRICS_RING];
  unsigned ring_n, ring_at;
  uint64_t last_cpu_ns;
  int64_t last_cpu_ts_ms;
  uint64_t oom_kills; /* last seen, to log new ones */
  int codei_started;  /* the code interpreter was launched (under mu) */
  char end_reason[32]; /* set with SBX_DEAD, before the kill starts */
  /* From a template built from template.yaml (NULL / 0 otherwise): */
  cJSON *tmpl_layers; /* the template's layer dirs (old builds in use) */
  cJSON *commands;    /* its custom_commands (normalised spec array) */
  cJSON *tmpl_env;    /* its env */
  int commands_port;  /* where custom commands are served */
} sbx;

typedef struct tomb {
  char id[ENGINE_ID_LEN + 1];
  char reason[32];
  int64_t ended_ms;
} tomb;

typedef struct template_info template_info;

typedef struct engine {
  /* configuration */
  char *state_dir;
  char *listen_host;
  int listen_port;    /* actual port once listening */
  char *socket_path;  /* unix socket of the API */
  char *domain;       /* "localhost:<port>" */
  char *envd_path, *init_path;
  char *codei_path;   /* code interpreter binary, or NULL (feature off) */
  char *templates_dir; /* bundled template dirs (<dir>/<name>/template.yaml),
                          or NULL */
  char *envd_version;
  char api_key[64];
  int default_timeout_s;
  /* HTTP front (server.c): connections per listener, per TCP client
   * address, and seconds a request head may take */
  unsigned max_conns, max_conns_per_ip, header_timeout_s;
  /* runtime */
  asbe_engine *iso;
  pthread_mutex_t mu;
  sbx **sbx;          /* table (small engines: linear scan is fine) */
  size_t nsbx, capsbx;
  tomb *tombs;
  size_t ntombs, captombs;
  template_info *templates; /* under tmpl_mu */
  template_info *retired;   /* replaced or deleted, still referenced */
  pthread_mutex_t tmpl_mu;
  pthread_mutex_t build_mu; /* one template build at a time */
  pthread_cond_t lc_cond; /* wakes the lifecycle thread */
  pthread_t lc_thread;
  int stopping;
  void *server;       /* server.c's state */
} engine;

/* ---- registry.c ----------------------------------------------------------- */
/* Look up a live record and take a reference (NULL if none). */
sbx *reg_get(engine *e, const char *id);
void reg_put(engine *e, sbx *s);
/* Insert a fully created record (takes the creator's reference). */
int reg_add(engine *e, sbx *s);
/* Remove from the table (no-op if absent), leaving a tombstone. */
void reg_remove(engine *e, sbx *s, const char *reason);
/* Record that a sandbox ended for reason (not in the table). */
void reg_tomb_add(engine *e, const char *id, const char *reason);
/* Reason a sandbox id ended, or NULL if unknown. Copies into buf. */
const char *reg_tomb(engine *e, const char *id, char *buf, size_t len);
/* Snapshot of live records, each referenced; free with reg_put_all. */
sbx **reg_list(engine *e, size_t *n);
void reg_put_all(engine *e, sbx **v, size_t n);
/* Persist the record (engine.json in its state dir). */
int reg_save(engine *e, sbx *s);
/* Load a record saved by reg_save (for adoption). NULL if missing. */
sbx *reg_load(engine *e, const char *id);
void reg_load_tombs(engine *e);
sbx *sbx_new(void);
void sbx_free(sbx *s);

/* ---- templates.c ------------------------------------------------------------ */
struct template_info {
  char *id;     /* template id ("base", or a built template's id) */
  int start_codei; /* start the code interpreter at create (code-interpreter-v1) */
  int builtin;  /* base, busybox, code-interpreter-v1 */
  int refs;     /* under tmpl_mu; the registry holds one */
  char *build_id, *hash; /* built templates: this build, its inputs' hash */
  char *base;   /* built templates: the template it was built on */
  cJSON *spec;  /* built templates: the normalised template.yaml */
  int64_t build_ms; /* how long the build took */
  char *alias;  /* name */
  char *dir;    /* prepared template dir */
  asbe_template *tmpl;
  int cpu_count, memory_mb, disk_mb;
  char *envd_version;
  int64_t created_ms;
  uint64_t spawn_count;
  int64_t last_spawned_ms;
  template_info *next;
};
int templates_init(engine *e);
void templates_free(engine *e);
/* By id or alias, referenced (release with templates_put); NULL if unknown. */
template_info *templates_find(engine *e, const char *name);
void templates_put(engine *e, template_info *t);
/* Every template, each referenced; release with templates_put_all. With
 * retired, also those replaced or deleted that are still in use. */
template_info **templates_snapshot(engine *e, size_t *n);
template_info **templates_snapshot_all(engine *e, size_t *n);
void templates_put_all(engine *e, template_info **v, size_t n);
/* Load the built template recorded in <state>/templates/<id>/template.json
 * (not registered). 0 or a negative errno. */
int templates_load(engine *e, const char *id, template_info **out);
/* Register t (taking the caller's reference), replacing a template of the
 * same id. */
void templates_install(engine *e, template_info *t);
/* Unregister t unless someone besides the caller and the registry holds
 * it (a create in progress): 0 or -EBUSY. Its files stay. */
int templates_uninstall(engine *e, template_info *t);
/* The layer dirs of t as a JSON array (for sandbox records). */
cJSON *templates_layers_json(const template_info *t);

/* ---- build.c: templates from template.yaml -------------------------------- */
struct api_req;
struct api_reply;
/* POST /templates/builds: the body is a tar of the template directory. */
void build_handle(engine *e, struct api_req *q, struct api_reply *r);
/* DELETE /templates/{id}. */
void template_delete(engine *e, const char *id, struct api_reply *r);
/* Remove build dirs that no template and no live sandbox uses. */
void templates_gc(engine *e);
/* The E2B Template object (+ our fields) of t. */
cJSON *template_json(engine *e, template_info *t);
/* Remove state dirs of build sandboxes left by a crash (start-up). */
void build_cleanup(engine *e);

/* ---- bundled.c: template dirs shipped with the engine (python-base) ---- */
/* If <templates_dir>/<name>/template.yaml exists and was not built yet in
 * this run, build it (cached when unchanged). 0 (nothing to do, or built),
 * or -1 with a message in err. */
int bundled_ensure(engine *e, const char *name, char *err, size_t errlen);
/* The Template object of a bundled template that is not built (state
 * "waiting": the first create builds it; "error" when its template.yaml does
 * not parse), or NULL when there is no such bundled template. */
cJSON *bundled_waiting_json(engine *e, const char *name);
/* Append to the list arr such an object for every bundled template whose
 * name arr does not hold yet. */
void bundled_list_waiting(engine *e, cJSON *arr);

/* ---- tstart.c: a template's start command and ready check at create ------- */
/* 0, or -1 with a message in err (the sandbox should then be undone). */
int template_start(engine *e, sbx *s, template_info *t, char *err, size_t errlen);

/* ---- cmds.c: a template's custom_commands on its commands port ------------ */
/* 1 if the engine answers this sandbox request itself. */
int cmds_wants(engine *e, const char *id, int port, const char *url);
/* Answer it: *status and a JSON body (malloc'd). */
char *cmds_serve(engine *e, const char *id, int port, const char *method, const char *url,
                 const char *token, const char *body, size_t len, int *status);

/* ---- sbxexec.c: programs in a sandbox ------------------------------------- */
/* The environment of a program run for the engine: PATH, HOME, USER,
 * LOGNAME, LANG, TERM, E2B_SANDBOX, then the template's env, the
 * sandbox's envVars, the call's, and extra "K=V" strings (later wins). */
char **sbx_env(int uid, const cJSON *tmpl_env, const cJSON *sandbox_env,
               const cJSON *call_env, const char *const *extra);
void sbx_env_free(char **env);
typedef struct sbx_run_opts {
  const char *const *argv;
  const char *const *envp;
  int uid;            /* 0 root, 1000 user (gid = uid) */
  const char *cwd;
  const void *in;     /* stdin data, or NULL (/dev/null) */
  size_t in_len;
  int timeout_ms;     /* <= 0: none */
  size_t max_output;  /* per stream; 0 = 1 MiB */
  int merge;          /* stderr into out */
  int keep_tail;      /* keep the end of long output, not the start */
} sbx_run_opts;
typedef struct sbx_run_result {
  int status;         /* wait status, -1 if timed out */
  int exit_code;      /* exit code, 128+signal, -1 if timed out */
  int timed_out;
  int64_t ms;
  asbi_buf out, err;
} sbx_run_result;
/* Runs to the end (or the timeout: then killed). 0 with *res filled (free
 * with sbx_run_result_free), or a negative errno if it could not start
 * (asbe_errmsg() says why). */
int sbx_run(asbe_sandbox *iso, const sbx_run_opts *o, sbx_run_result *res);
void sbx_run_result_free(sbx_run_result *r);
/* One HTTP/1.1 request to a port in the sandbox; whole reply into *reply
 * (malloc'd). The status, or a negative errno. */
int sbx_http(asbe_sandbox *iso, int port, const char *method, const char *path,
             const char *const *headers, const char *body, size_t len, char **reply,
             int timeout_ms);
/* The same over a connected socket (closed here), with the reply capped at
 * max bytes (-E2BIG beyond); reply may be NULL. Shared by sbx_http and
 * envd_request. */
int sbx_http_fd(int fd, const char *method, const char *path, const char *const *headers,
                const char *body, size_t len, char **reply, int timeout_ms, size_t max);

/* ---- lifecycle.c ---------------------------------------------------------- */
int lifecycle_start(engine *e);
void lifecycle_stop(engine *e);
/* Wake the lifecycle thread (a deadline changed). */
void lifecycle_kick(engine *e);
/* Kill a sandbox for `reason` and drop its record. */
void lifecycle_kill(engine *e, sbx *s, const char *reason);
/* Pause / resume (freeze / thaw). 0, -EALREADY (pause of a paused one) or
 * another negative errno. */
int lifecycle_pause(engine *e, sbx *s);
int lifecycle_resume(engine *e, sbx *s);
/* Sample the sandbox's metrics now into its ring. */
void lifecycle_sample(engine *e, sbx *s);

/* ---- sandbox creation (api.c) --------------------------------------------- */
/* Talk to the envd of a sandbox over its unix socket: one request, whole
 * reply. Returns the HTTP status, or a negative errno. */
int envd_request(sbx *s, const char *method, const char *path,
                 const char *body, char **reply, int timeout_ms);

/* ---- codei.c: the code interpreter inside sandboxes ---------------------- */
#define CODEI_PORT 49999
/* Launch the sandbox's code interpreter (once; later calls are no-ops).
 * Does not wait for it. 0 or a negative errno. */
int codei_start(engine *e, sbx *s);
/* Launch it if needed and wait until its port accepts connections, up to
 * timeout_ms. Returns a connected socket or a negative errno. */
int codei_connect(engine *e, sbx *s, int timeout_ms);

/* ---- server.c ------------------------------------------------------------------ */
int server_start(engine *e, const char *listen, const char *socket_path);
void server_stop(engine *e);

/* ---- small helpers (main.c) ------------------------------------------------------ */
int64_t now_unix_ms(void);
void rfc3339_ms(int64_t ms, char out[40]);
/* obj[key] = that time as an RFC 3339 string (E2B's createdAt, startedAt…). */
void json_add_time(cJSON *obj, const char *key, int64_t ms);
void engine_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
