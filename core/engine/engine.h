/* The local engine's state, shared by its modules, and the engine as a
 * library: engine_init/engine_open/engine_close/engine_free (engine.c).
 * Each module has its own .c and .h; the map (operations below, HTTP
 * fronts above, main.c on top) is in core/README.md. The engine runs on
 * the isolation runtime, core/iso. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_ENGINE_H
#define ASB_ENGINE_ENGINE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "eng_err.h"
#include "iso/iso.h"
#include "util/buf.h"

#define ENGINE_ENVD_VERSION_FALLBACK "0.6.13"

struct sbx;
struct tomb;
typedef struct template_info template_info;

#define ENGINE_MAX_IMAGE_DIRS 8

typedef struct engine {
  /* configuration */
  char *state_dir;
  int listen_port; /* actual port once listening */
  char *domain;    /* "localhost:<port>" */
  char *envd_path, *init_path;
  char *codei_path;    /* code interpreter binary, or NULL (feature off) */
  char *templates_dir; /* bundled template dirs (<dir>/<name>/template.yaml),
                          or NULL */
  /* where local images (oci:, docker-archive:) may be read from: real
   * paths, <state>/images first, then --image-dir's; NULL-ended */
  char *image_dirs[ENGINE_MAX_IMAGE_DIRS + 2];
  char *envd_version;
  char api_key[64];
  /* HTTP front (server.c): connections per listener, per TCP client
   * address, and seconds a request head may take */
  unsigned max_conns, max_conns_per_ip, header_timeout_s;
  /* runtime */
  asbe_engine *iso;
  struct asbn_secrets *secrets;   /* net/egress/secrets.h: /secrets, header rules */
  struct engine_volumes *volumes; /* volumes.c: /volumes, volumeMounts */
  pthread_mutex_t mu;
  struct sbx **sbx; /* table (small engines: linear scan is fine) */
  size_t nsbx, capsbx;
  struct tomb *tombs;
  size_t ntombs, captombs;
  template_info *templates; /* under tmpl_mu */
  template_info *retired;   /* replaced or deleted, still referenced */
  pthread_mutex_t tmpl_mu;
  pthread_mutex_t build_mu; /* one template build at a time */
  /* set (atomically) when the engine stops (build_stop_all): the build
   * under way kills its step and fails, those waiting never start */
  int builds_stop;
  int build_requests;  /* POST /templates/builds not answered yet (atomic; server.c) */
  int image_imports;   /* builds between importing a local image and registering (under mu) */
  char rebuilding[32]; /* id of the template the build under way rebuilds, "" (under mu) */
  /* bundled.c: one bundled build at a time (recursive: a bundled template
   * built on another builds that one first, on the same thread); the
   * names built (or found cached) in this run, "\0"-separated; those being
   * built on the thread that holds the lock (a template built on itself,
   * directly or not, must not recurse forever) */
  pthread_mutex_t bundled_mu;
  asbi_buf bundled_done;
  const char *bundled_busy[16];
  int bundled_nbusy;
  /* lifecycle.c */
  pthread_t lc_thread;
  int lc_kick_fd; /* eventfd that wakes the thread; -1 when not running */
  int stopping;   /* under mu */
  void *server;   /* server.c's state */
  /* server.c's loopback URLs (loopurl.c), set while it serves: api.c
   * opens one, reg_remove closes a sandbox's (callbacks, so neither
   * depends on server.c) */
  int (*loopback_open)(struct engine *e, const char *id, int port, int *lport);
  void (*sandbox_gone)(struct engine *e, const char *id);
  /* server.c's portals (portal.c): a sandbox's network namespace is new
   * (up = 1: sbxnet_attach, a claim) or going (0: sbxnet_detach) */
  void (*sandbox_netns)(struct engine *e, struct sbx *s, int up);
  /* server.c: the TCP port's daemon (struct MHD_Daemon), from its start
   * until after it stopped: portals' requests come on it only */
  void *tcp_daemon;
  struct asbn_dp *dp;         /* sbxnet.c: the sandboxes' datapath; NULL: loopback only */
  struct asbn_egress *egress; /* sbxnet.c: their resolver and proxy (with dp) */
  char *egress_ca_pem;        /* sbxnet.c: the egress CA (PEM) for sandboxes' trust stores */
  void *builder;              /* api_builder.c's state (E2B's Template builder) */
  /* api_builder_tag_build once the builder is in use (set atomically;
   * templates_find calls it for "name:tag") */
  int (*tag_build)(struct engine *e, const char *name, const char *tag, char *out, size_t len);
  /* pool.c: warm pools. The targets of --pool-template NAME=N (a name or
   * id each; a template.yaml's pool: section adds its own); the refill
   * thread; pool_cv (with tmpl_mu) wakes it when a claim took a sandbox,
   * and tells a drain that the template it waits for is no longer being
   * prepared (pool_busy: that template, identity only); creates: the
   * foreground creates under way and when the last one returned: the
   * refill waits for a quiet moment (pool.c). */
  char **pool_names;
  int *pool_sizes;
  size_t npool;
  uint64_t pool_min_avail; /* bytes of MemAvailable a refill leaves */
  int pool_low_mem;        /* the refill is held by it now (atomic) */
  pthread_t pool_thread;
  int pool_running, pool_stop; /* pool_stop under tmpl_mu */
  pthread_cond_t pool_cv;
  const template_info *pool_busy;
  int creates;            /* atomics */
  int64_t last_create_ms; /* when the last create returned */
  /* swap.c: --pause-swap's active swap file, or NULL (a memory pause then
   * only freezes, keeping the RAM) */
  char *swap_path;
  int swap_prefetch; /* --pause-swap-prefetch: resume reads it back at once */
  /* --pause-criu: the criu binary a memory pause dumps the sandbox with
   * (its processes and RAM to its disk), or NULL (a memory pause freezes) */
  char *criu_path;
} engine;

/* A zeroed engine with its locks made and nothing running (engine.c). */
void engine_init(engine *e);
/* Releases what engine_init and engine_open made (after engine_close). */
void engine_free(engine *e);

/* Where --pause-criu finds criu unless --criu says (scripts/build-criu.sh) */
#define ENGINE_DEFAULT_CRIU "/var/cache/agent-sandbox/criu/bin/criu"

typedef struct engine_config {
  const char *state_dir;     /* an existing dir (0700: keys and tokens) */
  const char *envd, *init;   /* binaries run in every sandbox */
  const char *codei;         /* the code interpreter, or NULL ("" or not
                                executable: port 49999 is not served) */
  const char *templates_dir; /* bundled templates, or NULL/"" */
  const char *cgroup_name;   /* NULL: "agent-sandbox" */
  int pool;                  /* disk images kept formatted (0: none) */
  /* warm pools: "NAME=N" each (a template's name or id, N sandboxes kept
   * ready), npool_templates of them; checked by pool_parse (pool.h) */
  const char *const *pool_templates;
  size_t npool_templates;
  uint64_t pool_min_avail_mb; /* refill only while MemAvailable is above (0: any) */
  int no_network;             /* sandboxes get loopback only (no datapath) */
  const char *net_cidr;       /* the sandboxes' link range, NULL: 10.88.0.0/16 */
  /* their IPv6 range (a ULA /48../112), "off", NULL: a /64 when the host
   * routes IPv6 */
  const char *net_cidr6;
  /* the resolver's upstream servers ("ADDR[:PORT]"); none: /etc/resolv.conf's */
  const char *dns_upstream[4];
  size_t ndns_upstream;
  /* more directories local images may be read from (--image-dir), beside
   * <state>/images */
  const char *image_dirs[ENGINE_MAX_IMAGE_DIRS];
  size_t nimage_dirs;
  /* CA bundle the egress proxy verifies servers against when it intercepts
   * TLS (header rules); NULL: the system's */
  const char *egress_upstream_ca;
  /* --pause-swap: bytes of <state>/pause.swap, where a memory pause puts
   * the sandbox's RAM (swap.c); 0: none, a memory pause keeps the RAM */
  uint64_t pause_swap_bytes;
  /* --pause-swap-prefetch: a resume starts reading the sandbox's swapped
   * memory back before the thaw (not only as it is touched) */
  int pause_swap_prefetch;
  /* --pause-criu: a memory pause is a CRIU checkpoint made with this
   * binary (docs/lifecycle.md); NULL: a freeze */
  const char *pause_criu;
  /* --criu-timeout, --criu-timeout-per-gib: how long one criu dump or
   * restore may take (seconds, and seconds per GiB of the sandbox's memory
   * or images) before it is killed and taken as failed; 0: 60 and 30 */
  unsigned criu_timeout_s, criu_timeout_per_gib_s;
  /* --criu-disk-reserve: bytes a checkpoint leaves free on the state dir's
   * filesystem (a dump without that room is refused); 0: 256 MiB */
  uint64_t criu_disk_reserve;
} engine_config;

/* Opens the engine on cfg without any front: the agent dir, the isolation
 * runtime, the templates; adopts the sandboxes a previous run left running
 * and reaps the dead ones; removes what interrupted builds left; starts
 * the lifecycle thread. Threads it starts inherit the caller's signal
 * mask. 0, or -1 with err (nothing left open). */
int engine_open(engine *e, const engine_config *cfg, eng_err *err);
/* Stops the lifecycle thread, kills every sandbox if kill_sandboxes
 * ("engine_stopped"), drops the records (sandboxes not killed keep
 * running; the next engine adopts them) and closes the runtime. */
void engine_close(engine *e, int kill_sandboxes);

#endif
