/* Sandbox records (registry.c): the live table, their persistence, and
 * tombstones of sandboxes that ended.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_REGISTRY_H
#define ASB_ENGINE_REGISTRY_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdint.h>

#include "engine.h"

#define ENGINE_ID_LEN 20
#define ENGINE_METRICS_RING 60

typedef enum sbx_state { SBX_RUNNING = 1, SBX_PAUSED = 2, SBX_DEAD = 3 } sbx_state;

typedef struct sbx_metric {
  int64_t ts;     /* unix seconds */
  double cpu_pct; /* of the sandbox's CPUs */
  uint64_t mem_used, mem_total, mem_cache, disk_used, disk_total;
  uint64_t net_bytes_out, net_bytes_in; /* forwarded, since create (our own) */
} sbx_metric;

/* One upstream connection kept alive for reuse (envd or a user port). */
typedef struct upstream {
  int fd;
  int port;
  struct upstream *next;
} upstream;

/* A connection into a sandbox in flight (a router request holds one in
 * s->busy while it runs; *fd is its upstream socket, -1 once closed). */
typedef struct sbx_busy {
  const int *fd;
  struct sbx_busy *next;
} sbx_busy;

typedef struct sbx {
  char id[ENGINE_ID_LEN + 1];
  char token[65];         /* envd access token */
  char traffic_token[65]; /* E2B's trafficAccessToken: the code interpreter
                             takes it in E2B-Traffic-Access-Token (what the
                             stock SDKs send on their context calls) */
  char *template_id;
  char *alias;                /* template name */
  cJSON *metadata;            /* object of strings */
  cJSON *env_vars;            /* object of strings */
  int64_t started_ms, end_ms; /* unix ms */
  int auto_pause;
  /* E2B's autoPauseMemory (default 1): what an autoPause keeps; its
   * autoResume.enabled: traffic to a paused one resumes it (router.c);
   * the lifetime given at create, which an auto-resume grants again */
  int auto_pause_memory, auto_resume, timeout_s;
  /* paused without memory (lifecycle_pause): no process, its files kept;
   * resume boots it (sandboxes_connect). iso is then a dead handle, or
   * NULL after an engine restart. */
  int paused_nomem;
  /* --pause-criu: paused with memory to its disk (a CRIU checkpoint in
   * its state dir). No process either, so paused_nomem is 1 too: resume
   * restores it (sandboxes_connect), or boots it if that fails. */
  int paused_ckpt;
  /* --pause-swap: what the last memory pause moved out to swap, and what
   * the sandbox used just before (bytes; under mu) */
  uint64_t swap_moved, swap_mem_before;
  pthread_mutex_t boot_mu; /* a resume's boot, and kills against it */
  int cpu_count, memory_mb, disk_mb;
  sbx_state state;
  asbe_sandbox *iso;
  int refs;           /* under engine->mu */
  pthread_mutex_t mu; /* state changes, upstream pool */
  upstream *idle;     /* pooled upstream connections */
  /* the connections into it in flight (the router's requests; under
   * mu): a checkpoint ends them (reg_shut_busy) */
  struct sbx_busy *busy;
  sbx_metric ring[ENGINE_METRICS_RING];
  unsigned ring_n, ring_at;
  uint64_t last_cpu_ns;
  int64_t last_cpu_ts_ms;
  uint64_t oom_kills;  /* last seen, to log new ones */
  int codei_started;   /* the code interpreter was launched (under mu) */
  char end_reason[32]; /* set with SBX_DEAD, before the kill starts */
  /* From a template built from template.yaml (NULL / 0 otherwise): */
  cJSON *tmpl_layers; /* the template's layer dirs (old builds in use) */
  cJSON *commands;    /* its custom_commands (normalised spec array) */
  cJSON *tmpl_env;    /* its env */
  int commands_port;  /* where custom commands are served */
  /* A warm-pool sandbox (templates.c keeps them, pool.c makes them): the
   * next one of its template's pool, and when it was made. Not in the
   * table, no engine.json until a create claims it. */
  struct sbx *pool_next;
  int64_t pooled_ms;
  /* sbxnet.c: the network policy (E2B's allowInternetAccess + network;
   * NULL: the default, internet on) and the sandbox's datapath link */
  struct asbn_policy *net_policy;
  struct asbn_dp_link *net_link;
  /* volumes.c: E2B's volumeMounts [{name, path}] (NULL: none) */
  cJSON *volume_mounts;
  /* a fork's kind (ours, GET /sandboxes/{id} forkMode): "processes" (its
   * parent's processes and memory restored, --pause-criu), "files" (its
   * parent's files, booted fresh); "" for a sandbox that is no fork */
  char fork_mode[12];
} sbx;

typedef struct tomb {
  char id[ENGINE_ID_LEN + 1];
  char reason[32];
  int64_t ended_ms;
} tomb;

/* s->busy (under s->mu): list b in, take it out. */
void reg_busy_add(sbx *s, sbx_busy *b);
void reg_busy_del(sbx *s, sbx_busy *b);
/* Shut down (both ways) every connection into s in flight, under s->mu
 * (held by the caller): a --pause-criu checkpoint cannot dump a socket
 * whose peer is the engine's, and an open stream (a command's output, a
 * pty, a file watch) would hold one for as long as it runs. Their callers
 * see the response end; the sandbox sees the connection close. Returns
 * how many were shut. */
int reg_shut_busy(sbx *s);

/* Look up a live record and take a reference (NULL if none). */
sbx *reg_get(engine *e, const char *id);
void reg_put(engine *e, sbx *s);
/* Insert a fully created record (takes the creator's reference). The
 * caller wakes the lifecycle thread if it runs (lifecycle_kick). */
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
sbx *reg_sbx_new(void);
void reg_sbx_free(sbx *s);

#endif
