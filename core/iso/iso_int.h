/* asb_iso internals shared between the files of core/iso.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_ISO_INT_H
#define ASB_ENGINE_ISO_INT_H

#include <limits.h>
#include <linux/filter.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

#include "iso.h"

/* ---- errors (err.c) ------------------------------------------------------ */

/* Sets the thread's message to "fmt: strerror(-neg_errno)" and returns
 * neg_errno (a negative errno; -EIO if it was >= 0). */
int asbe__fail(int neg_errno, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Like asbe__fail with -errno. */
int asbe__failerr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void asbe__clear_error(void);
/* Keep the first failure's message across cleanup steps that may fail too. */
void asbe__save_error(char *buf, size_t len);
void asbe__restore_error(const char *buf);

/* ---- small file helpers (fsutil.c) --------------------------------------- */

int asbe__mkdir_p(const char *path, mode_t mode);
/* Recursively removes path (no error if missing); never crosses mounts. */
int asbe__rm_rf(const char *path);
/* Writes data to path atomically (tmp + rename), mode. */
int asbe__write_file_atomic(const char *path, const char *data, size_t len, mode_t mode);
/* Writes a short string to an existing file (cgroupfs, /proc). -errno. */
int asbe__write_str(const char *path, const char *s);
/* Reads up to cap-1 bytes of a (small) file, NUL-terminates. Length or -errno. */
ssize_t asbe__read_small(const char *path, char *buf, size_t cap);
/* Copies a regular file (mode kept unless mode != 0) via tmp + rename. */
int asbe__copy_file(const char *src, const char *dst, mode_t mode);
/* Copies a tree: dirs, regular files, symlinks (others skipped). Owner root. */
int asbe__copy_tree(const char *src, const char *dst);
/* Parent pid and starttime (field 22) of a live process: 0, or -ESRCH if
 * it is gone (or a zombie). Either out pointer may be NULL. */
int asbe__proc_stat(pid_t pid, pid_t *ppid, uint64_t *start);
/* /proc/<pid>/stat starttime or 0 if the process is gone. */
uint64_t asbe__proc_starttime(pid_t pid);
/* 1 once fd is readable (a pidfd: its process ended), waiting up to
 * timeout_ms (0: just look); 0 otherwise. */
int asbe__wait_readable(int fd, int timeout_ms);
/* Runs argv (execvp), stdout captured into *out (malloc'd, may be NULL).
 * Returns exit status (0..255), or -errno. */
int asbe__run_capture(const char *const *argv, char **out);
char *asbe__strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- fd passing (child.c; async-signal-safe) ----------------------------- */

#define ASBE_MAX_FDS 64
/* Sends one message (SOCK_SEQPACKET) with nfds fds (SCM_RIGHTS). 0 or -errno. */
int asbe__send_fds(int sock, const void *data, size_t len, const int *fds, int nfds);
/* Receives one message; fds (CLOEXEC, up to max, the rest closed) land in
 * fds. Returns its length, 0 at EOF, or -errno. */
int asbe__recv_fds(int sock, void *data, size_t len, int *fds, int max, int *nfds);

/* ---- cgroups (cgroup.c) -------------------------------------------------- */

enum {
  ASBE_CG_MEMORY = 1,
  ASBE_CG_PIDS = 2,
  ASBE_CG_CPU = 4,
  ASBE_CG_CPUACCT = 8,
  ASBE_CG_FREEZER = 16,
  ASBE_CG_CORE = 32 /* cgroup v2 core files: cgroup.kill/freeze/events */
};

#define ASBE_CG_MAX 8

typedef struct asbe_cg_hier {
  int v2;
  unsigned ctrl; /* ASBE_CG_* handled by this hierarchy */
  int split;     /* sandbox has agent/ + workload/ children here */
  char name[32]; /* "memory", "pids", "cpu", "cpuacct", "freezer", "unified" */
  char *base;    /* <mount>/<engine's own cgroup>/<cgroup_name> */
} asbe_cg_hier;

typedef struct asbe_cg {
  int n;
  asbe_cg_hier h[ASBE_CG_MAX];
  /* The state dir of the engine (not owned): every sandbox cgroup it makes
   * carries it as ASBE_CG_OWNER_XATTR, so an engine reaps only its own. */
  const char *owner;
  char *v2_mount, *v2_opts; /* the cgroup2 mount and its super options */
  unsigned have;            /* union of ctrl */
  int swap_block;           /* asbe_engine_config.swap_block */
  char *info;
  char *workload_env; /* in-sandbox dirs, colon-separated */
} asbe_cg;

typedef struct asbe_cg_limits {
  uint64_t memory_bytes, pids_max;
  uint64_t agent_memory_bytes, agent_pids_max;
  uint32_t cpu_millicores;
} asbe_cg_limits;

enum { ASBE_CGW_SB = 0, ASBE_CGW_AGENT = 1, ASBE_CGW_WORKLOAD = 2 };

/* Discovers the hierarchies of this process and creates the engine dirs
 * named `name`; v2_split: see asbe_engine_config.cgroup_v2_split. */
int asbe__cg_open(asbe_cg *cg, const char *name, int v2_split);
void asbe__cg_close(asbe_cg *cg);
/* A copy of the hierarchies (own base strings) for one sandbox, whose
 * cgroups may live under another base (an engine restarted elsewhere). */
int asbe__cg_copy(const asbe_cg *src, asbe_cg *dst);
/* Frees what asbe__cg_copy made. */
void asbe__cg_free(asbe_cg *cg);
/* Points hierarchy `name` at the base of the recorded <base>/<id> path. */
void asbe__cg_rebase(asbe_cg *cg, const char *name, const char *sb_path, const char *id);
/* Remounts cgroup2 with favordynmods (see asbe_engine_config). 0, or
 * -ENOTSUP without a cgroup2 mount. */
int asbe__cg_favor_dynmods(asbe_cg *cg);
#define ASBE_CG_OWNER_XATTR "trusted.agent-sandbox.owner"
/* Creates <base>/<id>{,/agent,/workload}, marks <base>/<id> with cg->owner
 * (where cgroupfs has xattrs), sets limits, gives the sandbox root
 * (host_uid) write access to the workload's cgroup.procs. */
int asbe__cg_create(const asbe_cg *cg, const char *id, const asbe_cg_limits *lim, uid_t host_uid);
/* After the init moved into agent (v2 needs processes out of <sb> first). */
int asbe__cg_finish(const asbe_cg *cg, const char *id, const asbe_cg_limits *lim);
/* Path of <base>/<id>[/agent|/workload] of hierarchy i into buf. */
int asbe__cg_path(const asbe_cg *cg, int i, const char *id, int which, char *buf, size_t len);
/* Moves pid into every hierarchy's `which` dir (for non-split hierarchies,
 * into <sb>). which = ASBE_CGW_SB moves every hierarchy into <sb>. */
int asbe__cg_enter(const asbe_cg *cg, const char *id, pid_t pid, int which);
int asbe__cg_freeze(const asbe_cg *cg, const char *id, int freeze);
/* Swap of a frozen sandbox: allow it and reclaim (out=1; *moved = swap
 * growth), or forbid it again (out=0). */
int asbe__cg_swap(const asbe_cg *cg, const char *id, int out, uint64_t *moved);
/* v1: the engine's dirs' memory.swappiness for cg->swap_block (0), or as
 * their parent's when off (undoing an earlier run's 0). Best effort. */
void asbe__cg_swap_base(const asbe_cg *cg);
/* MADV_WILLNEED on every process's private writable memory: the kernel
 * starts reading what is in swap back (asynchronously). */
int asbe__cg_prefetch(const asbe_cg *cg, const char *id);
/* Kills every process in the sandbox's cgroups (cgroup.kill or loop). */
void asbe__cg_kill(const asbe_cg *cg, const char *id);
/* Removes the cgroups (kills leftovers, retries up to timeout_ms). 0 if gone. */
int asbe__cg_destroy(const asbe_cg *cg, const char *id, int timeout_ms);
int asbe__cg_stats(const asbe_cg *cg, const char *id, asbe_stats *st);
/* 1 if any of the sandbox's cgroup dirs exists. */
int asbe__cg_exists(const asbe_cg *cg, const char *id);
/* Whose is <base>/<id> of hierarchy i: 1 marked cg->owner's, 0 not marked
 * (or no xattrs here), -1 another engine's (its state dir into other). */
int asbe__cg_owned(const asbe_cg *cg, int i, const char *id, char *other, size_t olen);

/* ---- disks (disk.c) ------------------------------------------------------ */

typedef struct asbe_pool asbe_pool;

/* Returns a detached mount fd of a fresh, empty ext4 of `bytes` whose image
 * is now at `dst_path` (moved out of the pool, or made now). */
int asbe__disk_take(asbe_engine *e, uint64_t bytes, const char *dst_path, int *mfd);
/* A detached, read-only mount of an existing image (loop device read-only,
 * autoclear). */
int asbe__disk_mount_ro(const char *path, int *mfd);
/* A second, detached, read-only mount of a running sandbox's own writable
 * layer: the same superblock (so the same page cache, what its processes
 * wrote a moment ago included), found by its recorded st_dev (sb->run_dev)
 * and checked to be the loop device of <sb->dir>/disk.img. */
int asbe__disk_mount_live(asbe_sandbox *sb, int *mfd);
/* The same, writable: the layer of a sandbox booted again (resume). */
int asbe__disk_mount_rw(const char *path, int *mfd);
/* Detached tmpfs mount of `bytes`. */
int asbe__disk_tmpfs(uint64_t bytes, int *mfd);
int asbe__pool_start(asbe_engine *e);
void asbe__pool_stop(asbe_engine *e);
int asbe__pool_fill(asbe_engine *e, uint64_t bytes, unsigned n);
/* 1 if path is an image held by the pool right now. */
int asbe__pool_holds(asbe_engine *e, const char *path);
/* 1 if path is a volume's image (under <state>/volumes/): the engine's. */
int asbe__volume_image(asbe_engine *e, const char *path);
/* Detaches every loop device whose backing file is under `dir` (returns the
 * count; lazily for busy ones). skip(path, ctx) = 1 keeps one. */
int asbe__loop_detach_under(const char *dir, int (*skip)(const char *path, void *ctx), void *ctx);
int asbe__loop_count_under(const char *dir);

/* ---- the agent dir (agentdir.c) ------------------------------------------ */

/* A detached tmpfs mount holding a copy of the agent dir `dir` (its root is
 * "/", so no host path shows in a sandbox's mountinfo). */
int asbe__agentdir_mount(const char *dir, int *mfd);

/* ---- uid slots (slot.c) -------------------------------------------------- */

int asbe__slot_claim(asbe_engine *e, const char *owner_dir, uint32_t *slot);
void asbe__slot_release(asbe_engine *e, uint32_t slot, const char *owner_dir);
/* Takes slot back for owner_dir (a paused sandbox booted again): 0 if the
 * claim was owner_dir's or stale, -EBUSY if someone else holds it. */
int asbe__slot_retake(asbe_engine *e, uint32_t slot, const char *owner_dir);
/* Releases stale claims whose owner dir is under e's state dir. */
unsigned asbe__slot_reap(asbe_engine *e);

/* ---- security (secure.c) ------------------------------------------------- */

typedef struct asbe_secure {
  struct sock_fprog prog; /* hand-written prefix + libseccomp deny-list */
  uint64_t keep_caps;     /* bounding/permitted/effective set */
  int last_cap;
} asbe_secure;

int asbe__secure_init(asbe_secure *s);
void asbe__secure_free(asbe_secure *s);
/* In a child, async-signal-safe, while still privileged in the sandbox's
 * userns: drops the capability bounding set to keep_caps and clears ambient
 * caps. 0 or -errno. */
int asbe__secure_bounding(const asbe_secure *s);
/* Then, after the final setresuid: limits root's caps to keep_caps (if uid 0),
 * sets no_new_privs and loads the seccomp filters. 0 or -errno; *what names
 * the failing step. */
int asbe__secure_finish(const asbe_secure *s, const char **what);

/* Resource limits of sandbox processes. The init and the agent may hold
 * ASBE_NOFILE_AGENT files (envd keeps pipes of every process it runs, its
 * watches and its connections); every other process, started by the exec
 * service, the setns fallback or the agent, gets soft ASBE_NOFILE_SOFT (what
 * select() can handle) and hard ASBE_NOFILE_HARD: the hard one bounds a
 * sandbox's open files to pids.max x ASBE_NOFILE_HARD. The agent and asb-init
 * learn the user limits from ASB_NOFILE=<soft>:<hard> in their environment.
 * No core dumps (a pipe core_pattern would run a host helper as root), no
 * real-time priority, no negative nice, 8 MiB locked memory, the default
 * 800 KiB of message queues: whatever the engine itself was given. */
#define ASBE_NOFILE_AGENT 16384u
/* ptys of one sandbox (its devpts instance's max=): the kernel's pool,
 * kernel.pty.max less kernel.pty.reserve for the host's own devpts, is
 * shared by every sandbox (3072 by default). A string: a mount option. */
#define ASBE_PTY_MAX "256"
/* the sandbox's boot id, in log/ of its writable layer (child.c) */
#define ASBE_BOOT_ID_FILE "boot_id"
/* 16 random bytes as a version-4 UUID, the kernel's boot_id text (36
 * characters and a newline, in id); its length (child.c). */
int asbe__boot_id_text(unsigned char b[16], char id[40]);
#define ASBE_NOFILE_SOFT 1024u
#define ASBE_NOFILE_HARD 4096u
/* Sets those limits (the agent's, else the user's) on the calling process,
 * async-signal-safe. Lowering only: nothing in a sandbox's user namespace can
 * raise a hard limit (that takes CAP_SYS_RESOURCE in the initial one, which
 * even the engine may lack), so a limit above the engine's own stays the
 * engine's. 0 or -errno. */
int asbe__rlimits_set(int agent);

/* ---- templates ----------------------------------------------------------- */

struct asbe_template {
  char **layers; /* bottom first */
  size_t n_layers;
  char **bind_src, **bind_dst;
  int *bind_fd; /* per bind: -1 (bind_src, read-only) or a volume's mount fd (read-write) */
  size_t n_binds;
};

/* ---- engine and sandbox -------------------------------------------------- */

typedef struct asbe_proc_list {
  asbe_proc *head;
} asbe_proc_list;

struct asbe_engine {
  char *state_dir, *sandboxes_dir, *pool_dir, *agent_dir;
  char *run_dir, *slot_dir, *stage_dir, *cgroup_name;
  uint32_t slot_first, slot_count, slot_next;
  asbe_cg cg;
  asbe_secure sec;
  pthread_mutex_t lock; /* slot_next, pool, creating */
  /* ids of the creates in progress in this process: their dirs have no
   * record yet, and asbe_reap must leave exactly those alone */
  char **creating;
  size_t n_creating;
  asbe_pool *pool;
  uint64_t pool_bytes;
  unsigned pool_target;
  int self_netns; /* fd of the engine's netns (connect_tcp) */
  int agent_mfd;  /* detached tmpfs copy of agent_dir (asbe__agentdir_mount) */
  int lock_fd;    /* flock on <state>/engine.lock: one engine per state dir */
  int name_fd;    /* flock on <run>/cgroups/<cgroup_name>.lock: one per name */
  /* checkpoints (criu.c): criu's time limit, the space a dump leaves free,
   * and what the dumps in progress may still write (under lock) */
  uint64_t criu_timeout_ms, criu_timeout_per_gib_ms, criu_disk_reserve;
  uint64_t ckpt_reserved;
};

struct asbe_proc {
  asbe_sandbox *sb;
  pid_t pid;
  int pidfd;
  int ctl; /* connection to the sandbox's exec service, or -1 (our child) */
  int fd_in, fd_out, fd_err;
  int reaped, status, detached;
  asbe_proc *next;
};

struct asbe_sandbox {
  asbe_engine *e;
  char *id, *dir;
  uint32_t slot;
  uid_t host_uid;
  pid_t pid;
  uint64_t starttime;
  int pidfd;
  int is_child; /* init is our child: reap it */
  int dead;
  int frozen;           /* by asbe_sandbox_freeze (exec refuses: it would hang) */
  int disk_tmpfs;       /* its writable layer is a tmpfs (no stop) */
  int status;           /* init's wait status when reaped by us */
  pthread_mutex_t lock; /* procs */
  asbe_proc *procs;
  dev_t run_dev; /* st_dev of its writable layer (/run/asb); 0 = unknown */
  int log_fd;    /* the agent log (see asbe_sandbox_agent_log), or -1 */
  dev_t log_dev; /* and its identity, recorded for adopt */
  ino_t log_ino;
  asbe_cg cg;         /* where its cgroups are (recorded ones after adopt) */
  char **cg_workload; /* per hierarchy: cgroup.procs to join on exec */
  int n_cg_workload;
};

/* ---- paths inside a sandbox (exec.c) ------------------------------------ */

/* How long a connect to a listener of a sandbox (a unix socket of /run/asb,
 * a TCP port) may wait: a sandbox can make any listener accept nothing. */
#define ASBE_CONNECT_TIMEOUT_MS 10000

/* An O_PATH fd of /run/asb inside sb (name NULL), or of /run/asb/<name>,
 * which must be of `type` (S_IFSOCK, S_IFREG). Resolved inside the sandbox's
 * root with openat2 (RESOLVE_IN_ROOT, no symlinks, no magic links), and on
 * the sandbox's writable layer (sb->run_dev): never a host path, whatever
 * the sandbox made of its tree. Use the fd (fstatfs, connect to
 * /proc/self/fd/<fd>, reopen), never a path. -errno, message set. */
int asbe__run_open(asbe_sandbox *sb, const char *name, mode_t type);

/* ---- checkpoints (criu.c) ------------------------------------------------ */

/* Dumps sb's processes into its checkpoint dir (criu ends them); the
 * sandbox then as criu left it (asbe_sandbox_checkpoint stops it). On a
 * failure it runs as before, or, if criu stopped it, is dead. */
int asbe__criu_dump(asbe_sandbox *sb, const char *criu);
/* The images asbe_sandbox_checkpoint_fork took of the sandbox `parent`,
 * made the new sandbox sb's checkpoint (its own id in the cgroup and uts
 * images, its uid slot in the userns image; the rest linked), and a boot
 * id of its own on its writable layer wfd. 0 or -errno, message set. */
int asbe__criu_fork_images(asbe_sandbox *sb, const char *parent, int wfd);
/* A user namespace mapping 0 to host_uid (ASBE_UID_RANGE ids): an fd, or -errno. */
int asbe__criu_userns(uid_t host_uid);
/* Restores sb's checkpoint: wfd its writable layer, the detached mounts
 * of its layers, binds (with their targets) and agent dir. Sets sb->pid. */
int asbe__criu_restore(asbe_sandbox *sb, const char *criu, int wfd, const char *ovl_opts,
                       int n_layers, const int *layer_fds, const char *const *bind_dst, int n_binds,
                       const int *bind_fds, int agent_fd);

/* ---- the on-disk record (record.c) --------------------------------------- */

/* <dir>/state of a sandbox, as asbe__rec_read parses it. */
typedef struct asbe__rec {
  char id[64];
  char status[16];
  uint32_t slot;
  pid_t pid;
  uint64_t start;
  uint64_t run_dev, log_dev, log_ino; /* 0 = not recorded (older engines) */
  char boot_id[40];                   /* the host's at write; "" = older engines */
  int ncg;
  char cg_name[ASBE_CG_MAX][32];
  char cg_path[ASBE_CG_MAX][PATH_MAX];
} asbe__rec;
/* Writes sb's record with status ("running", "stopped"). 0 or -errno. */
int asbe__rec_write(const asbe_sandbox *sb, const char *status);
/* Reads the record in a sandbox dir. 0 or -errno. */
int asbe__rec_read(const char *dir, asbe__rec *r);
/* 1 if the record in a sandbox dir names an init that is alive. */
int asbe__rec_alive(const char *dir);
/* 1 if the live process pid is the init rc records: this boot's (the
 * host's boot_id, where recorded), the recorded start time, and inside the
 * sandbox's own cgroup (a dir named after its id at a recorded path). A
 * pid and start time alone can name another process after a host reboot
 * (the same ticks since boot). Callers holding a pidfd check it is still
 * alive afterwards (then pid was that process while this looked). */
int asbe__rec_is_init(const asbe__rec *rc, pid_t pid);
/* 1 if rc was written in another boot of the host (a recorded boot_id
 * that is not this boot's). */
int asbe__rec_other_boot(const asbe__rec *rc);
/* 1 if the record in dir is of a paused sandbox (asbe_sandbox_stop): no
 * process, but its uid slot and state stay its own. */
int asbe__rec_paused(const char *dir);

/* Reaps exited exec'd processes of sb (non-blocking). */
void asbe__procs_reap(asbe_sandbox *sb);

#define ASBE_UID_BASE 100000u
#define ASBE_UID_RANGE 65536u

#endif
