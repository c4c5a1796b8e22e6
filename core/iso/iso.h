/* asb_iso — the sandbox isolation runtime of the local engine (agent-sandboxd).
 * Internal API (prefix asbe_), not part of the public ABI.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A sandbox is one supervised init process (asb-init, PID 1 inside) made with
 * clone3() in new user (shifted), pid, mount, net (loopback only), uts
 * (hostname = sandbox id), ipc and cgroup namespaces. Its root is an overlayfs
 * of the template's read-only lower layers (idmapped to the sandbox's userns)
 * plus a writable layer on a per-sandbox ext4 image (loop device, size-capped,
 * real ENOSPC), with the host's /usr (base template) and the agent dir bound
 * read-only. Every mount of a sandbox lives only in its own mount namespace:
 * nothing is ever mounted in the host namespace, so a crash of the engine
 * leaks no mount (the writable layer is an fsmount(2) detached mount, the
 * loop device has LO_FLAGS_AUTOCLEAR).
 *
 * Errors: functions returning int give 0 on success and a negative errno on
 * failure; asbe_errmsg() then describes the failure (thread-local, never NULL).
 *
 * Threads: the engine object is thread-safe. One sandbox handle is used by one
 * thread at a time, except asbe_sandbox_exec, asbe_sandbox_connect_tcp,
 * asbe_sandbox_connect_unix and asbe_sandbox_stats, which may run
 * concurrently with each other. The process must not ignore SIGCHLD nor reap
 * children it did not create (waitpid(-1)): sandbox inits (and processes of
 * the exec fallback path) are children of the calling process.
 *
 * ---------------------------------------------------------------------------
 * Conventions for the agent (envd) inside a sandbox
 * ---------------------------------------------------------------------------
 *  /.asb                 the agent dir (read-only): /.asb/bin/<agent>,
 *                        /.asb/bin/asb-init, /.asb/lib/<every needed .so> and
 *                        the ELF interpreter /.asb/lib/ld-linux-x86-64.so.2.
 *                        Start a dynamically linked agent in ANY template as
 *                          /.asb/lib/ld-linux-x86-64.so.2 --library-path
 *                          /.asb/lib /.asb/bin/envd ARGS...
 *                        (asbe_agent_argv() builds that argv).
 *  /run/asb              the sandbox's run dir, writable by root inside. It
 *                        lives on the sandbox's writable layer (so it counts
 *                        against the disk limit). envd listens on
 *                        /run/asb/envd.sock; the engine connects from the host
 *                        with asbe_sandbox_connect_unix(sb, "envd.sock"), which
 *                        resolves the path inside the sandbox root (openat2,
 *                        no symlinks, on the writable layer) and connects to
 *                        the inode it checked, so nothing a sandbox plants
 *                        there can point the engine at a host socket. There
 *                        is no host path of it to hand to anyone else.
 *  stdout+stderr of asb-init and of the agent: the agent log, a file on the
 *                        sandbox's writable layer outside its tree (the
 *                        sandbox has only the fds: /proc/1/fd/1); read it with
 *                        asbe_sandbox_agent_log.
 *  /run/asb/.exec.sock   reserved: asb-init's exec service (serves only the
 *                        engine, see init/exec_proto.h).
 *  /run/asb/cgroup/<h>   the sandbox's WORKLOAD cgroup of hierarchy <h>
 *                        (bind mounts; here "memory" and "pids" on cgroup v1,
 *                        "unified" on a pure cgroup v2 host). Only cgroup.procs
 *                        (and "tasks" on v1) are writable, by root inside; the
 *                        limit files are not, and neither the sandbox's parent
 *                        nor its agent cgroup is reachable.
 *  environment of the agent (set by asb-init's parent):
 *    ASB_SANDBOX_ID=<id>
 *    ASB_RUN_DIR=/run/asb
 *    ASB_WORKLOAD_CGROUPS=/run/asb/cgroup/memory:/run/asb/cgroup/pids
 *                        colon-separated list of directories. To put a user
 *                        process in the workload, its forked child, while still
 *                        root inside, writes "0\n" (itself) to
 *                        <dir>/cgroup.procs for EVERY dir in the list, then
 *                        drops to the user and execs.
 *    ASB_NOFILE=1024:4096 soft:hard RLIMIT_NOFILE for the processes the agent
 *                        starts: set it in each child before exec (the agent
 *                        itself and asb-init have 16384).
 *  The agent and asb-init run in the "agent" cgroup, which has its own small
 *  memory/pids limits, so a fork bomb or OOM in the workload does not reach
 *  them. If the agent dies, asb-init restarts it with a backoff.
 *
 * Host state layout (under engine config state_dir):
 *  engine.lock              flock of the engine using this dir
 *  sandboxes/<id>/state     key=value record used by adopt and the reaper
 *  sandboxes/<id>/disk.img  the writable layer (ext4 image, sparse)
 *  pool/                    pre-formatted images (golden-<bytes>.img and ready
 *                           img-* entries that the engine holds mounted)
 */
#ifndef ASB_ENGINE_ISO_H
#define ASB_ENGINE_ISO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct asbe_engine asbe_engine;
typedef struct asbe_sandbox asbe_sandbox;
typedef struct asbe_proc asbe_proc;
typedef struct asbe_template asbe_template;

/* Message of the last failure in this thread ("" if none). */
const char *asbe_errmsg(void);

/* ---- engine ------------------------------------------------------------ */

typedef struct asbe_engine_config {
  /* Host state root (created if missing), e.g. /var/lib/agent-sandbox. */
  const char *state_dir;
  /* Agent dir made by asbe_agentdir_build(); must contain bin/asb-init.
   * Bound read-only at /.asb in every sandbox. */
  const char *agent_dir;
  /* Name of the engine's cgroup beneath the engine's own cgroup of every
   * hierarchy (default "agent-sandbox"). Two engines on one host need two
   * names. */
  const char *cgroup_name;
  /* Machine-wide runtime dir shared by every engine on the host (default
   * /run/agent-sandbox): slots/ is the registry of uid slots, so no two
   * sandboxes share host uids (slot N maps uids 0..65535 inside to
   * 100000+N*65536 on the host); stage/ is an empty dir each sandbox mounts
   * its staging tmpfs on, inside its own mount namespace. Every component of
   * its path must be searchable by others (o+x): the sandbox's root is an
   * unprivileged host uid when it gets there. */
  const char *run_dir;
  uint32_t slot_first; /* default 0 */
  uint32_t slot_count; /* default 4096 */
  /* Disk-image pool: keep pool_target pre-formatted, pre-mounted (detached)
   * images of pool_disk_bytes ready, refilled by a background thread.
   * 0 = no pool (every create formats/copies synchronously). */
  uint64_t pool_disk_bytes;
  unsigned pool_target;
  /* 1: remount the host's cgroup2 hierarchy with "favordynmods" (Linux >=
   * 6.0). Moving a process between cgroups then no longer waits for an RCU
   * grace period (milliseconds on a busy or virtualised host) at the cost
   * of slightly slower fork/exit host-wide. Helps create, the exec fallback
   * and envd putting commands into the workload. Host-wide and sticky
   * (until remounted), hence off by default. */
  int cgroup_favor_dynmods;
  /* 1: give the cgroup2 hierarchy agent/ and workload/ children even when it
   * carries no controllers (hybrid hosts like this one). That is the layout
   * of a pure cgroup v2 host, including envd's delegated moves into
   * /run/asb/cgroup/unified; the tests use it to run that path here. */
  int cgroup_v2_split;
  /* 1: running sandboxes never swap (the engine keeps a swap area for
   * paused ones, asbe_sandbox_swap_out). cgroup v2: memory.swap.max=0 (set
   * with every memory limit anyway); v1: memory.swappiness=0 on the
   * engine's dir, which every sandbox cgroup inherits. 0: v1 swappiness as
   * the host gives it. */
  int swap_block;
  /* Checkpoints (asbe_sandbox_checkpoint, a restore with spec.criu): how
   * long one criu run may take before the engine kills it (its process
   * group and session) and takes it as failed: criu_timeout_ms plus
   * criu_timeout_per_gib_ms for every GiB it writes (the sandbox's
   * anonymous, shmem and swapped memory) or reads (its images). 0 = the
   * defaults, 60 s and 30 s per GiB (criu writes ~4 s/GiB on a loaded
   * disk, docs/benchmarks.md). */
  uint64_t criu_timeout_ms;
  uint64_t criu_timeout_per_gib_ms;
  /* What a checkpoint leaves free on the filesystem of the state dir: a
   * dump is refused before it starts (-ENOSPC, the sandbox runs on) when
   * that filesystem's free space, less what the checkpoints in progress
   * may still write, is below the sandbox's memory to write plus this.
   * 0 = 256 MiB. */
  uint64_t criu_disk_reserve_bytes;
} asbe_engine_config;

/* Opens the engine: discovers cgroups (v1 or v2), creates the engine's cgroup
 * and state dirs, compiles the seccomp filter, starts the pool thread. Does
 * not touch existing sandboxes (see asbe_reap). One engine per state dir
 * (a lock on <state_dir>/engine.lock; -EBUSY if taken). */
int asbe_engine_open(const asbe_engine_config *cfg, asbe_engine **out);
/* Stops the pool thread, drops pooled images. Running sandboxes keep running
 * (their handles must be released or killed first). NULL is fine. */
void asbe_engine_close(asbe_engine *e);
/* Fills the pool for `disk_bytes` up to n ready images now (synchronous). */
int asbe_engine_pool_fill(asbe_engine *e, uint64_t disk_bytes, unsigned n);
/* Human-readable description of the cgroup layout in use (owned by e). */
const char *asbe_engine_cgroup_info(const asbe_engine *e);
/* Colon-separated in-sandbox workload cgroup dirs (= ASB_WORKLOAD_CGROUPS). */
const char *asbe_engine_workload_cgroups(const asbe_engine *e);

/* ---- volumes ------------------------------------------------------------- */

/* A volume's filesystem: the ext4 image `image` (with create: made first,
 * sparse, of `bytes`, its root owned by uid 1000) on a loop device, as a
 * DETACHED read-write mount (nodev, nosuid) in *mfd. An image a loop device
 * already backs (mounted in sandboxes of an earlier engine) is mounted from
 * that device: one superblock per image, ever. Images belong under
 * <state_dir>/volumes/ (the reaper leaves their loop devices alone). */
int asbe_volume_open(const char *image, uint64_t bytes, int create, int *mfd);
/* 1 if a loop device backs image (some mount, a sandbox's or an open fd of
 * asbe_volume_open, still holds its filesystem), else 0. */
int asbe_volume_busy(const char *image);

/* ---- templates ----------------------------------------------------------- */

/* A template = read-only lower layers (bottom first) + read-only bind mounts
 * of host directories (e.g. /usr). */
asbe_template *asbe_template_new(void);
void asbe_template_free(asbe_template *t);
int asbe_template_add_layer(asbe_template *t, const char *dir);
/* Bind host dir `src` at `dst` (absolute, inside) read-only; idmapped so that
 * host root's files are root's inside. */
int asbe_template_add_bind(asbe_template *t, const char *src, const char *dst);
/* Bind a volume (a mount fd of asbe_volume_open, dup'd) at dst (absolute,
 * inside) read-write, idmapped to the sandbox's user namespace: the
 * volume's files carry the uids the sandboxes see, so what one sandbox's
 * user writes is that same user's in every other sandbox. For a copy of a
 * template made for one create (asbe_template_copy). */
int asbe_template_add_volume(asbe_template *t, int mfd, const char *dst);
/* A copy (layers and binds) to stack more layers on. NULL on OOM. */
asbe_template *asbe_template_copy(const asbe_template *t);
/* Layers (bottom first) and binds ("src" returned, *dst set). */
size_t asbe_template_layer_count(const asbe_template *t);
const char *asbe_template_layer(const asbe_template *t, size_t i);
size_t asbe_template_bind_count(const asbe_template *t);
const char *asbe_template_bind(const asbe_template *t, size_t i, const char **dst);
/* Prepare (once, idempotently) the base template in `dir`: a generated root
 * layer dir/rootfs (bin,sbin,lib,lib64 -> usr/..., minimal /etc with root and
 * user (1000), /home/user, /root, /tmp...). Use with asbe_template_base(). */
int asbe_template_prepare_base(const char *dir);
/* Template for a prepared base dir: layer dir/rootfs + host /usr bound
 * read-only at /usr. Caller frees. */
int asbe_template_base(const char *dir, asbe_template **out);
/* Prepare a busybox-static rootfs in dir/rootfs (from /bin/busybox). */
int asbe_template_prepare_busybox(const char *dir);
int asbe_template_busybox(const char *dir, asbe_template **out);

/* ---- agent dir ----------------------------------------------------------- */

/* Assemble an agent dir at `dir`: bin/asb-init (copied from init_path),
 * bin/<basename> for each of bins, and in lib/ every shared library they need
 * (resolved with ldd) plus the ELF interpreter. Idempotent; files are
 * replaced atomically so running sandboxes are not disturbed. */
int asbe_agentdir_build(const char *dir, const char *init_path, const char *const *bins,
                        size_t n_bins);
/* argv (NULL-terminated, malloc'd as one block: free() it) that starts the
 * agent binary `name` of the agent dir through /.asb's ELF interpreter, with
 * args appended. */
char **asbe_agent_argv(const char *name, const char *const *args);

/* ---- sandboxes ----------------------------------------------------------- */

typedef struct asbe_sandbox_spec {
  const char *id;              /* [A-Za-z0-9_-], 1..63 chars; = hostname */
  const asbe_template *tmpl;   /* required */
  uint64_t memory_bytes;       /* workload memory limit; 0 = none */
  uint64_t pids_max;           /* workload pids limit; 0 = none */
  uint32_t cpu_millicores;     /* whole sandbox; 0 = unlimited */
  uint64_t disk_bytes;         /* writable layer size; 0 = 1 GiB */
  int disk_tmpfs;              /* 1: tmpfs writable layer (charged to
                                  memory, never the default) */
  uint64_t agent_memory_bytes; /* agent cgroup limit; 0 = 256 MiB */
  uint64_t agent_pids_max;     /* agent cgroup limit; 0 = 256 */
  uint64_t shm_bytes;          /* /dev/shm size; 0 = 64 MiB */
  /* Agent command run by asb-init (NULL = asb-init only reaps). */
  const char *const *agent_argv;
  /* Extra environment for the agent ("K=V"), NULL-terminated, may be NULL.
   * PATH, HOME and the ASB_* variables are always set. */
  const char *const *agent_env;
  /* A second agent supervised by asb-init the same way (the code
   * interpreter), in the agent cgroup, as root inside: its leading "K=V"
   * words are added to the agent environment, the rest is its argv. NULL =
   * none. aux_on_demand: started by asbe_sandbox_start_aux(), not at
   * create. */
  const char *const *aux_argv;
  int aux_on_demand;
  /* /etc/resolv.conf written into the sandbox's tree like /etc/hosts (a
   * new file renamed over whatever is there), < 256 bytes; NULL = the
   * template's own. The engine's datapath (core/net) names its resolver. */
  const char *resolv_conf;
  /* 1: boot the sandbox of this id that asbe_sandbox_stop paused, on its
   * kept writable layer and uid slot (disk_bytes is its image's; a
   * failure leaves it paused). */
  int resume;
  /* CA certificates (PEM, < 8 KiB in all) the sandbox's programs must
   * trust: the engine's egress CA, which signs what its egress proxy shows
   * for the domains with header rules, and the engine's own CA (its https
   * port, which sandboxes reach through their portals). Each is appended
   * to the sandbox's /etc/ssl/certs/ca-certificates.crt on its writable
   * layer unless that file already holds it (a sandbox made from a
   * snapshot of one that has it); a bundle that is missing, a symlink or
   * no regular file is left alone. NULL = none. */
  const char *extra_ca_pem;
  /* With resume: the criu binary that restores the checkpoint
   * asbe_sandbox_checkpoint wrote (its processes and memory), instead of
   * a boot. NULL = boot. A failure leaves it paused, the checkpoint kept.
   * With fork_of: the criu that restores the fork's images. */
  const char *criu;
  /* With criu, not resume: a new sandbox whose processes and memory are
   * those asbe_sandbox_checkpoint_fork took of the sandbox of this id (the
   * same length of id), moved to the new sandbox's id (cgroups, hostname)
   * and uid slot, with a boot id of its own; restored instead of booted.
   * Its template must hold that sandbox's files of the same instant (a
   * layer of the copy taken in that freeze). Its network, envd's token and
   * whatever else names the parent are the caller's to change. A failure
   * leaves nothing, as any failed create. */
  const char *fork_of;
  /* Files put into /run/asb (run/ of the writable layer) before anything
   * starts or is restored: name, content pairs, NULL-ended (a name is one
   * path component). Each replaces what is at its name; the sandbox's
   * root's (its host uid), 0600. NULL = none. */
  const char *const *run_files;
} asbe_sandbox_spec;

/* Creates and starts a sandbox. Transactional: on failure nothing is left
 * (cgroups, loop device, mounts, files, processes, slot). */
int asbe_sandbox_create(asbe_engine *e, const asbe_sandbox_spec *spec, asbe_sandbox **out);
/* Re-attaches to a running sandbox recorded under the state dir (after an
 * engine restart, even a kill -9). -ESRCH if its init is gone. */
int asbe_sandbox_adopt(asbe_engine *e, const char *id, asbe_sandbox **out);
/* Frees the handle; the sandbox keeps running (adopt it again later). */
void asbe_sandbox_release(asbe_sandbox *sb);
/* SIGKILLs the whole sandbox, waits for it, destroys its cgroups, frees its
 * slot; with remove_state also deletes its state dir. The handle stays valid
 * (asbe_sandbox_alive() = 0) until released. Idempotent. */
int asbe_sandbox_kill(asbe_sandbox *sb, int remove_state);
/* Pause without memory: SIGKILLs every process like kill, but keeps the
 * state dir and the writable layer (the sandbox's files) and its uid slot,
 * recorded "paused" (the reaper keeps it, also after an engine restart).
 * Boot it again with asbe_sandbox_create and spec.resume; remove it with
 * asbe_paused_remove. -EOPNOTSUPP for a tmpfs writable layer. */
int asbe_sandbox_stop(asbe_sandbox *sb);
/* Pause with memory to disk: criu (the binary at `criu`, run as root)
 * dumps every process of the running sandbox into <dir>/checkpoint (root
 * only, 0700), which ends them; then as asbe_sandbox_stop (paused, its
 * files and slot kept). On failure it runs as before (criu resumed it).
 * Its network link must be gone first (loopback only in its netns), and
 * nothing of the engine's connected to it. Restore it with
 * asbe_sandbox_create, spec.resume and spec.criu. */
int asbe_sandbox_checkpoint(asbe_sandbox *sb, const char *criu);
/* A fork with its processes: criu dumps every process of the RUNNING
 * sandbox, which the caller froze (asbe_sandbox_freeze) and took off its
 * network link as for asbe_sandbox_checkpoint, into <dir>/fork-checkpoint
 * (root only, 0700), and leaves them running, still frozen (the caller
 * thaws): a copy of its files the caller takes in the same freeze
 * (asbe_sandbox_export_live) is of the instant of the images. New
 * sandboxes are made from them with asbe_sandbox_create, spec.criu and
 * spec.fork_of; asbe_fork_images_drop removes them. On failure it runs
 * as before (frozen), no images kept. */
int asbe_sandbox_checkpoint_fork(asbe_sandbox *sb, const char *criu);
/* Removes the images asbe_sandbox_checkpoint_fork took of sandbox id. */
int asbe_fork_images_drop(asbe_engine *e, const char *id);
/* 1 if the paused sandbox `id` has a complete checkpoint. */
int asbe_paused_checkpointed(asbe_engine *e, const char *id);
/* Removes its checkpoint (after a restore, or to boot it instead). */
int asbe_paused_checkpoint_drop(asbe_engine *e, const char *id);
/* Claims a paused sandbox's uid slot again for this engine (start-up: a
 * host reboot empties the slot registry, and its files belong to that
 * slot's uids). 0, -EBUSY if another sandbox holds it now. */
int asbe_paused_hold(asbe_engine *e, const char *id);
/* A sandbox recorded running in another boot of the host (its processes
 * ended with that boot) becomes one paused as asbe_sandbox_stop leaves it:
 * its dir, writable layer (disk.img) and uid slot kept, booted again with
 * spec.resume; the reaper then keeps them. Call before asbe_reap. 0, or
 * -ESRCH if its record is not of a sandbox running in another boot,
 * -EOPNOTSUPP if it has no disk image (a tmpfs writable layer). */
int asbe_paused_from_reboot(asbe_engine *e, const char *id);
/* Removes what a paused sandbox kept (state dir, slot claim). 0 if there
 * was none; -EBUSY if the id's sandbox is not paused. */
int asbe_paused_remove(asbe_engine *e, const char *id);
/* The same copy (asbe_sandbox_export_upper) of a sandbox paused with
 * asbe_sandbox_stop, by id: no handle is needed, so it also works for one
 * an earlier engine paused. -ENOENT if the id's sandbox is not paused. */
int asbe_paused_export(asbe_engine *e, const char *id, const char *dest);
/* Copies the writable layer of a sandbox killed with remove_state = 0 (its
 * disk image still in its state dir) into the new directory `dest`, as a
 * template layer: regular files, dirs, symlinks, fifos, overlay whiteouts
 * (0/0 char devices) and user.* xattrs (overlay's "opaque" marker kept,
 * its upper-only markers dropped), modes and times; ownership shifted back
 * to in-sandbox ids (ids outside the sandbox's range become 65534); hard
 * links become copies; sockets, devices and file capabilities are not
 * kept, and neither are the set-user-ID and set-group-ID bits of files (a
 * layer is a host directory: a set-id file owned by host root there would
 * be a host set-id binary; inside sandboxes no_new_privs and nosuid mounts
 * make them meaningless anyway). The image is mounted read-only and
 * detached, never in the host's namespace. On failure dest is removed. */
int asbe_sandbox_export_upper(asbe_sandbox *sb, const char *dest);
/* The same copy from a RUNNING sandbox that the caller froze
 * (asbe_sandbox_freeze): its files at that instant, read through a second
 * read-only detached mount of its own writable layer (same superblock, so
 * what its processes wrote is there even if not on disk yet), every lookup
 * fd-relative with O_NOFOLLOW. -EBUSY if not frozen, -ENOTSUP for a tmpfs
 * writable layer. The sandbox is left frozen. */
int asbe_sandbox_export_live(asbe_sandbox *sb, const char *dest);
/* Pause / resume every process of the sandbox (agent and workload). */
int asbe_sandbox_freeze(asbe_sandbox *sb);
int asbe_sandbox_thaw(asbe_sandbox *sb);
/* Pushes a FROZEN sandbox's memory out to swap (the host's active swap
 * areas; the engine's --pause-swap file): lets its cgroups swap (v2
 * memory.swap.max=max, v1 memory.swappiness=100) and reclaims them (v2
 * memory.reclaim, v1 memory.force_empty) until their anonymous and shmem
 * (tmpfs, /dev/shm) pages are out or the kernel can do no more; clean page
 * cache goes too. -EBUSY if not frozen. *moved: bytes its swap usage grew
 * (NULL is fine). Takes about as long as writing that much to the disk. */
int asbe_sandbox_swap_out(asbe_sandbox *sb, uint64_t *moved);
/* Forbids the sandbox to swap again (v2 memory.swap.max=0, v1
 * memory.swappiness=0; v1 without swap_block: the swappiness the engine's
 * dir has, as at create), before a thaw: pages already out stay there and
 * fault back in when touched. */
int asbe_sandbox_swap_block(asbe_sandbox *sb);
/* Starts reading a frozen sandbox's swapped-out memory back (MADV_WILLNEED
 * on its processes' private writable mappings; the reads complete after
 * it returns): call before the thaw for the pages to be there sooner than
 * faults would bring them. -EBUSY if not frozen. */
int asbe_sandbox_swap_prefetch(asbe_sandbox *sb);
/* 1 if the init is alive. */
int asbe_sandbox_alive(asbe_sandbox *sb);
/* Asks asb-init to start its on-demand aux agent (no effect if it runs, or
 * if the sandbox has none). A frozen sandbox gets it when thawed. */
int asbe_sandbox_start_aux(asbe_sandbox *sb);

const char *asbe_sandbox_id(const asbe_sandbox *sb);
pid_t asbe_sandbox_pid(const asbe_sandbox *sb); /* init, host pid */
int asbe_sandbox_pidfd(const asbe_sandbox *sb); /* readable when it dies */
uint32_t asbe_sandbox_slot(const asbe_sandbox *sb);
uid_t asbe_sandbox_host_uid(const asbe_sandbox *sb);  /* host uid of root inside */
const char *asbe_sandbox_dir(const asbe_sandbox *sb); /* host state dir */

typedef struct asbe_stats {
  uint64_t memory_bytes;       /* current usage, whole sandbox */
  uint64_t memory_limit_bytes; /* workload limit (0 = none) */
  uint64_t cpu_usage_ns;       /* whole sandbox */
  uint64_t pids_current;       /* whole sandbox */
  uint64_t oom_kills;          /* OOM kills in the workload */
  uint64_t agent_oom_kills;    /* OOM kills in the agent cgroup */
  uint64_t disk_used_bytes;    /* writable layer */
  uint64_t disk_total_bytes;
  uint64_t swap_bytes; /* swapped out, whole sandbox */
  uint64_t anon_bytes; /* anonymous + shmem resident, whole sandbox */
  int frozen;
} asbe_stats;
int asbe_sandbox_stats(asbe_sandbox *sb, asbe_stats *out);

/* ---- exec and sockets ---------------------------------------------------- */

#define ASBE_PIPE_STDIN 1
#define ASBE_PIPE_STDOUT 2
#define ASBE_PIPE_STDERR 4

typedef struct asbe_exec_opts {
  const char *const *argv; /* argv[0] is resolved in PATH inside if no '/' */
  const char *const *envp; /* NULL = PATH, HOME, USER, TERM defaults */
  uid_t uid;               /* inside; gid = uid unless gid_set */
  gid_t gid;
  int gid_set;
  const char *cwd; /* NULL = "/" */
  int pipes;       /* ASBE_PIPE_* bits: make pipes for those */
  /* For streams without a pipe: host fds to dup2 (-1 = /dev/null inside).
   * Zero-initialised opts mean fd 0 for all three, so set them. */
  int stdin_fd, stdout_fd, stderr_fd;
} asbe_exec_opts;

/* Runs argv inside a running sandbox without the agent, as uid/gid inside,
 * in the workload cgroups, confined like the init (capability bounding set,
 * no_new_privs, seccomp). Fast path: the sandbox's exec service (a process
 * of asb-init already in the workload cgroups, see init/exec_proto.h) forks
 * it and hands back a pidfd. Fallback (service not up yet, e.g. right after
 * create, or gone): join the workload cgroups and every namespace of the init
 * (pidfd + setns), fork, harden, exec; then it is a child of the calling
 * process. Either way, wait for it only with asbe_proc_wait. */
int asbe_sandbox_exec(asbe_sandbox *sb, const asbe_exec_opts *opts, asbe_proc **out);
/* Host pid (0 if the process had already ended when it was started). */
pid_t asbe_proc_pid(const asbe_proc *p);
int asbe_proc_pidfd(const asbe_proc *p);
/* Pipe ends (parent side) or -1: write to stdin, read stdout/stderr. */
int asbe_proc_stdin(const asbe_proc *p);
int asbe_proc_stdout(const asbe_proc *p);
int asbe_proc_stderr(const asbe_proc *p);
void asbe_proc_close_stdin(asbe_proc *p);
/* Waits up to timeout_ms (-1 = forever) and reaps; *status is a wait(2)
 * status. -ETIMEDOUT if still running. */
int asbe_proc_wait(asbe_proc *p, int timeout_ms, int *status);
int asbe_proc_signal(asbe_proc *p, int sig);
/* Frees the handle. A process not reaped yet is reaped later by its sandbox
 * (at kill at the latest). */
void asbe_proc_free(asbe_proc *p);

/* Convenience: run argv as uid, collect stdout (and stderr, each up to
 * max_out bytes, NUL-terminated, malloc'd; pass NULL to discard), wait up to
 * timeout_ms. Returns the wait status (>= 0) or a negative errno. */
int asbe_sandbox_run(asbe_sandbox *sb, const char *const *argv, uid_t uid, const char *stdin_data,
                     char **out, char **err, size_t max_out, int timeout_ms);

/* A host-side socket (SOCK_STREAM, CLOEXEC, blocking) connected to
 * 127.0.0.1:port inside the sandbox's network namespace. The connect gives
 * up after 10 s (-ETIMEDOUT; a listener with a full accept queue drops the
 * SYNs). */
int asbe_sandbox_connect_tcp(asbe_sandbox *sb, uint16_t port);
/* A host-side socket (SOCK_STREAM, CLOEXEC, blocking) connected to the
 * unix socket /run/asb/<name> inside (name without '/'). Resolved inside the
 * sandbox's root and on its writable layer, never through a symlink; the
 * connect waits at most 10 s for a listener that does not accept
 * (-ETIMEDOUT). */
int asbe_sandbox_connect_unix(asbe_sandbox *sb, const char *name);

/* A new fd (O_RDONLY, CLOEXEC, at offset 0) of the agent log: what asb-init
 * and the agent wrote to their stdout and stderr. The file lives on the
 * sandbox's writable layer, bounded by its disk limit, but outside the
 * sandbox's tree: no path inside names it, so a sandbox can neither replace
 * it nor point it elsewhere. Available while the engine holds the sandbox
 * (adopted ones too, when their init still has the log). -errno. */
int asbe_sandbox_agent_log(asbe_sandbox *sb);

/* ---- recovery ------------------------------------------------------------ */

typedef struct asbe_reap_report {
  unsigned live;      /* sandboxes with a live init (left alone) */
  unsigned sandboxes; /* dead sandboxes cleaned */
  unsigned cgroups;   /* orphan cgroup dirs removed */
  unsigned loops;     /* loop devices detached */
  unsigned files;     /* stale pool / temp files removed */
  unsigned slots;     /* stale slot claims released */
} asbe_reap_report;
/* Cleans everything orphaned under the engine's state dir and cgroups: dead
 * sandboxes' cgroups, loop devices backed by files in the state dir, state
 * dirs whose init is gone (except stopped ones kept with remove_state = 0),
 * stale pool images, slot claims of dead sandboxes. For every live sandbox,
 * calls live_cb (may be NULL) with its id, e.g. to adopt it. Meant for
 * engine start-up (before creates): run while the pool refills, it may make
 * one refill fail (the pool retries). */
int asbe_reap(asbe_engine *e, void (*live_cb)(const char *id, void *ctx), void *ctx,
              asbe_reap_report *report);
/* Removes the state dir of a stopped (killed, remove_state = 0) sandbox. */
int asbe_state_remove(asbe_engine *e, const char *id);

/* ---- preflight ----------------------------------------------------------- */

/* Checks user namespaces, overlayfs in a userns, idmapped mounts, cgroup
 * controllers (v1 or v2), seccomp, loop devices and ext4. Returns 0 if all
 * is well, else -1; *report (malloc'd, may be NULL) lists each check as
 * "ok   <what>" or "FAIL <what>: <why>. Fix: <how>". */
int asbe_preflight(char **report);

#ifdef __cplusplus
}
#endif
#endif
