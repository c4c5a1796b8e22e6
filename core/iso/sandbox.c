/* Engine and sandbox lifecycle: open, create (transactional), kill, freeze,
 * stats, adopt, and the reaper (the on-disk record they write and read is
 * record.c's).
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "init/exec_proto.h"
#include "iso_int.h"
#include "util/buf.h"
#include "util/util.h"

#define DEFAULT_AGENT_MEMORY (256ull << 20)
#define DEFAULT_AGENT_PIDS 256
#define DEFAULT_SHM (64ull << 20)

/* ---- engine -------------------------------------------------------------- */

static char *abs_path(const char *p) {
  if (p[0] == '/') return strdup(p);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return NULL;
  return asbe__strfmt("%s/%s", cwd, p);
}

/* A cgroup name is one path component: it names dirs and a lock file. */
static int valid_cgroup_name(const char *n) {
  size_t len = strlen(n);
  if (len == 0 || len > 128 || n[0] == '.') return 0;
  for (size_t i = 0; i < len; i++)
    if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') ||
          (n[i] >= '0' && n[i] <= '9') || n[i] == '-' || n[i] == '_' || n[i] == '.'))
      return 0;
  return 1;
}

/* One engine per cgroup name on the machine: the engine's cgroup dirs
 * (<own cgroup>/<name>/ of every hierarchy) hold its sandboxes, and its
 * reaper removes what it finds there. The lock is an flock held for the
 * engine's life on <run>/cgroups/<name>.lock, which says whose it is; a
 * crashed engine's lock is free again (its sandboxes live on, and only an
 * engine with their state dir touches them: see asbe_reap). The engine
 * removes the file when it closes, still holding the lock, so whoever
 * locks checks that the file it locked is still the one at the path. */
static void name_lock_path(const asbe_engine *e, char *p, size_t len) {
  snprintf(p, len, "%s/cgroups/%s.lock", e->run_dir, e->cgroup_name);
}

static int lock_cgroup_name(asbe_engine *e) {
  char dir[PATH_MAX], p[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/cgroups", e->run_dir);
  int r = asbe__mkdir_p(dir, 0700);
  if (r < 0) return asbe__fail(r, "mkdir %s", dir);
  name_lock_path(e, p, sizeof p);
  for (;;) {
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return asbe__failerr("open %s", p);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
      int err = errno;
      char who[PATH_MAX + 64] = "";
      ssize_t n = err == EWOULDBLOCK ? pread(fd, who, sizeof who - 1, 0) : 0;
      close(fd);
      if (err != EWOULDBLOCK) return asbe__fail(-err, "lock %s", p);
      who[n > 0 ? n : 0] = '\0';
      who[strcspn(who, "\n")] = '\0';
      int pid = 0, off = 0;
      const char *state = "?";
      if (sscanf(who, "%d %n", &pid, &off) >= 1 && off > 0) state = who + off;
      return asbe__fail(-EBUSY,
                        "cgroup name \"%s\" is in use by another engine (pid %d, state dir %s); "
                        "give each engine its own cgroup name",
                        e->cgroup_name, pid, state);
    }
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(p, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
      e->name_fd = fd;
      break;
    }
    close(fd); /* removed by the engine that had it: again */
  }
  char line[PATH_MAX + 64];
  int n = snprintf(line, sizeof line, "%d %s\n", (int)getpid(), e->state_dir);
  if (ftruncate(e->name_fd, 0) < 0 || pwrite(e->name_fd, line, (size_t)n, 0) != n)
    return asbe__failerr("write %s", p);
  return 0;
}

int asbe_engine_open(const asbe_engine_config *cfg, asbe_engine **out) {
  asbe__clear_error();
  *out = NULL;
  if (!cfg || asbi_empty(cfg->state_dir) || asbi_empty(cfg->agent_dir))
    return asbe__fail(-EINVAL, "engine config: state_dir and agent_dir are required");
  asbe_engine *e = calloc(1, sizeof *e);
  if (!e) return asbe__fail(-ENOMEM, "engine");
  pthread_mutex_init(&e->lock, NULL);
  e->self_netns = e->lock_fd = e->name_fd = e->agent_mfd = -1;
  int r = 0;
  e->state_dir = abs_path(cfg->state_dir);
  e->agent_dir = abs_path(cfg->agent_dir);
  e->run_dir = strdup(asbi_empty(cfg->run_dir) ? "/run/agent-sandbox" : cfg->run_dir);
  e->cgroup_name = strdup(asbi_empty(cfg->cgroup_name) ? "agent-sandbox" : cfg->cgroup_name);
  if (!e->state_dir || !e->agent_dir || !e->run_dir || !e->cgroup_name) {
    r = asbe__fail(-ENOMEM, "engine");
    goto fail;
  }
  if (!valid_cgroup_name(e->cgroup_name)) {
    r = asbe__fail(-EINVAL, "cgroup name \"%s\": use 1..128 of [A-Za-z0-9._-], not starting with .",
                   e->cgroup_name);
    goto fail;
  }
  e->sandboxes_dir = asbe__strfmt("%s/sandboxes", e->state_dir);
  e->pool_dir = asbe__strfmt("%s/pool", e->state_dir);
  e->slot_dir = asbe__strfmt("%s/slots", e->run_dir);
  e->stage_dir = asbe__strfmt("%s/stage", e->run_dir);
  if (!e->sandboxes_dir || !e->pool_dir || !e->slot_dir || !e->stage_dir) {
    r = asbe__fail(-ENOMEM, "engine");
    goto fail;
  }
  e->slot_first = cfg->slot_first;
  e->slot_count = cfg->slot_count ? cfg->slot_count : 4096;
  if ((uint64_t)e->slot_first + e->slot_count > 65534) {
    r = asbe__fail(-EINVAL, "slot range %u+%u exceeds 65534", e->slot_first, e->slot_count);
    goto fail;
  }
  {
    uint32_t rnd = 0;
    asbi_random_bytes(&rnd, sizeof rnd);
    e->slot_next = rnd % e->slot_count; /* spread engines over the range */
  }
  e->pool_bytes = cfg->pool_disk_bytes;
  e->pool_target = cfg->pool_target;
  e->criu_timeout_ms = cfg->criu_timeout_ms ? cfg->criu_timeout_ms : 60000;
  e->criu_timeout_per_gib_ms = cfg->criu_timeout_per_gib_ms ? cfg->criu_timeout_per_gib_ms : 30000;
  e->criu_disk_reserve = cfg->criu_disk_reserve_bytes ? cfg->criu_disk_reserve_bytes : 256ull << 20;
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/bin/asb-init", e->agent_dir);
  if (access(p, X_OK) < 0) {
    r = asbe__failerr("agent dir: %s (build it with asbe_agentdir_build)", p);
    goto fail;
  }
  if ((r = asbe__mkdir_p(e->state_dir, 0700)) < 0 ||
      (r = asbe__mkdir_p(e->sandboxes_dir, 0700)) < 0 ||
      (r = asbe__mkdir_p(e->pool_dir, 0700)) < 0) {
    r = asbe__fail(r, "state dir %s", e->state_dir);
    goto fail;
  }
  snprintf(p, sizeof p, "%s/engine.lock", e->state_dir);
  e->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (e->lock_fd < 0 || flock(e->lock_fd, LOCK_EX | LOCK_NB) < 0) {
    r = errno == EWOULDBLOCK ? asbe__fail(-EBUSY, "another engine uses %s", e->state_dir)
                             : asbe__failerr("lock %s", p);
    goto fail;
  }
  if ((r = asbe__mkdir_p(e->run_dir, 0755)) < 0 || (r = asbe__mkdir_p(e->slot_dir, 0700)) < 0 ||
      (r = asbe__mkdir_p(e->stage_dir, 0755)) < 0) {
    r = asbe__fail(r, "run dir %s", e->run_dir);
    goto fail;
  }
  chmod(e->stage_dir, 0755); /* the sandbox's root must be able to reach it */
  if ((r = lock_cgroup_name(e)) < 0) goto fail;
  if ((r = asbe__cg_open(&e->cg, e->cgroup_name, cfg->cgroup_v2_split)) < 0) goto fail;
  e->cg.owner = e->state_dir;
  e->cg.swap_block = cfg->swap_block;
  asbe__cg_swap_base(&e->cg);
  if (cfg->cgroup_favor_dynmods && (r = asbe__cg_favor_dynmods(&e->cg)) < 0) {
    r = asbe__fail(r, "remount %s with favordynmods", e->cg.v2_mount ? e->cg.v2_mount : "cgroup2");
    goto fail;
  }
  if ((r = asbe__secure_init(&e->sec)) < 0) goto fail;
  if ((r = asbe__agentdir_mount(e->agent_dir, &e->agent_mfd)) < 0) goto fail;
  e->self_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (e->self_netns < 0) {
    r = asbe__failerr("open /proc/self/ns/net");
    goto fail;
  }
  if ((r = asbe__pool_start(e)) < 0) goto fail;
  *out = e;
  return 0;
fail:
  asbe_engine_close(e);
  return r;
}

void asbe_engine_close(asbe_engine *e) {
  if (!e) return;
  asbe__pool_stop(e);
  if (e->cg.n) asbe__cg_close(&e->cg);
  asbe__secure_free(&e->sec);
  if (e->self_netns >= 0) close(e->self_netns);
  if (e->agent_mfd >= 0) close(e->agent_mfd);
  if (e->name_fd >= 0) {
    char p[PATH_MAX];
    name_lock_path(e, p, sizeof p);
    unlink(p); /* while still holding it: see lock_cgroup_name */
    close(e->name_fd);
  }
  if (e->lock_fd >= 0) close(e->lock_fd);
  free(e->state_dir);
  free(e->sandboxes_dir);
  free(e->pool_dir);
  free(e->agent_dir);
  free(e->run_dir);
  free(e->slot_dir);
  free(e->stage_dir);
  free(e->cgroup_name);
  free(e->creating); /* empty: every create removes its id */
  pthread_mutex_destroy(&e->lock);
  free(e);
}

int asbe_engine_pool_fill(asbe_engine *e, uint64_t bytes, unsigned n) {
  asbe__clear_error();
  return asbe__pool_fill(e, bytes, n);
}

const char *asbe_engine_cgroup_info(const asbe_engine *e) {
  return e->cg.info;
}
const char *asbe_engine_workload_cgroups(const asbe_engine *e) {
  return e->cg.workload_env;
}

/* ---- sandbox helpers ----------------------------------------------------- */

static int valid_id(const char *id) {
  size_t n = id ? strlen(id) : 0;
  if (n == 0 || n > 63) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = id[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_'))
      return 0;
  }
  return id[0] != '-';
}

/* The cgroup.procs files exec joins, from sb->cg. */
static int sb_workload_paths(asbe_sandbox *sb) {
  for (int i = 0; i < sb->n_cg_workload; i++) free(sb->cg_workload[i]);
  sb->n_cg_workload = 0;
  for (int i = 0; i < sb->cg.n; i++) {
    char d[PATH_MAX];
    asbe__cg_path(&sb->cg, i, sb->id, ASBE_CGW_WORKLOAD, d, sizeof d);
    sb->cg_workload[i] = asbe__strfmt("%s/cgroup.procs", d);
    if (!sb->cg_workload[i]) return -ENOMEM;
    sb->n_cg_workload++;
  }
  return 0;
}

static asbe_sandbox *sb_new(asbe_engine *e, const char *id) {
  asbe_sandbox *sb = calloc(1, sizeof *sb);
  if (!sb) return NULL;
  sb->e = e;
  sb->pidfd = sb->log_fd = -1;
  sb->id = strdup(id);
  sb->dir = asbe__strfmt("%s/%s", e->sandboxes_dir, id);
  pthread_mutex_init(&sb->lock, NULL);
  sb->cg_workload = calloc(ASBE_CG_MAX, sizeof(char *));
  if (!sb->id || !sb->dir || !sb->cg_workload || asbe__cg_copy(&e->cg, &sb->cg) < 0 ||
      sb_workload_paths(sb) < 0) {
    asbe_sandbox_release(sb);
    return NULL;
  }
  return sb;
}

/* After its cgroups are gone: the dir they were under, if it is not the
 * engine's (an engine that ran in another cgroup made it), goes too. */
static void drop_old_bases(const asbe_cg *sbcg, const asbe_cg *ecg) {
  for (int i = 0; i < sbcg->n; i++)
    if (i < ecg->n && strcmp(sbcg->h[i].base, ecg->h[i].base)) rmdir(sbcg->h[i].base);
}

/* The cgroups a record says a sandbox has (a copy of the engine's layout
 * where the record knows no better). */
static int rec_cg(asbe_engine *e, const asbe__rec *rc, const char *id, asbe_cg *out) {
  int r = asbe__cg_copy(&e->cg, out);
  if (r < 0) return r;
  for (int i = 0; i < rc->ncg; i++) asbe__cg_rebase(out, rc->cg_name[i], rc->cg_path[i], id);
  return 0;
}

static int write_map(pid_t pid, const char *file, uid_t base) {
  char path[64], v[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
  snprintf(v, sizeof v, "0 %u %u\n", (unsigned)base, ASBE_UID_RANGE);
  int r = asbe__write_str(path, v);
  return r < 0 ? asbe__fail(r, "write %s", path) : 0;
}

/* open_tree + idmap (to userns) + read-only: a detached mount fd. path
 * relative to dirfd; "" = the mount dirfd itself (a detached one too). */
static int idmapped_ro_at(int dirfd, const char *path, int userns) {
  int fd =
      open_tree(dirfd, path,
                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | (path[0] ? 0 : AT_EMPTY_PATH));
  if (fd < 0) return asbe__failerr("open_tree %s", path[0] ? path : "(agent dir)");
  struct mount_attr a;
  memset(&a, 0, sizeof a);
  a.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID;
  a.userns_fd = (uint64_t)userns;
  if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0) {
    int r = asbe__failerr("idmap %s", path[0] ? path : "(agent dir)");
    close(fd);
    return r;
  }
  return fd;
}

static int idmapped_ro(const char *path, int userns) {
  return idmapped_ro_at(AT_FDCWD, path, userns);
}

/* A volume (asbe_volume_open's mount fd): a clone, read-write, idmapped to
 * the sandbox's userns. The volume's filesystem stores the uids as the
 * sandboxes see them (uid 1000 on disk is uid 1000 in every sandbox),
 * whatever host range each sandbox's slot maps them to. */
static int idmapped_rw_fd(int mfd, int userns) {
  int fd = open_tree(mfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  if (fd < 0) return asbe__failerr("open_tree (volume)");
  struct mount_attr a;
  memset(&a, 0, sizeof a);
  a.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID;
  a.userns_fd = (uint64_t)userns;
  if (mount_setattr(fd, "", AT_EMPTY_PATH, &a, sizeof a) < 0) {
    int r = asbe__failerr("idmap (volume)");
    close(fd);
    return r;
  }
  return fd;
}

/* The detached mounts of a sandbox's root, idmapped to userns: the
 * template's layers, its binds, the agent dir (in that order, into fds). */
static int root_fds(asbe_engine *e, const asbe_template *t, int userns, int *fds, int *nfds) {
  for (size_t i = 0; i < t->n_layers; i++) {
    if ((fds[*nfds] = idmapped_ro(t->layers[i], userns)) < 0) return fds[*nfds];
    (*nfds)++;
  }
  for (size_t i = 0; i < t->n_binds; i++) {
    int vfd = t->bind_fd ? t->bind_fd[i] : -1;
    if ((fds[*nfds] =
             vfd >= 0 ? idmapped_rw_fd(vfd, userns) : idmapped_ro(t->bind_src[i], userns)) < 0)
      return fds[*nfds];
    (*nfds)++;
  }
  if ((fds[*nfds] = idmapped_ro_at(e->agent_mfd, "", userns)) < 0) return fds[*nfds];
  (*nfds)++;
  return 0;
}

/* Prepares the writable layer: upper/, work/, run/ owned by root inside
 * (log/ too, but no path inside the sandbox reaches it: see open_log). */
static int prep_writable(int mfd, uid_t uid) {
  static const char *const dirs[] = {"upper", "work", "run", "log"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(dirs); i++) {
    if (mkdirat(mfd, dirs[i], 0755) < 0 && errno != EEXIST)
      return asbe__failerr("mkdir %s on the writable layer", dirs[i]);
    if (fchownat(mfd, dirs[i], uid, uid, AT_SYMLINK_NOFOLLOW) < 0)
      return asbe__failerr("chown %s on the writable layer", dirs[i]);
    /* upper/ is the sandbox's "/": its mode must not depend on a umask */
    if (fchmodat(mfd, dirs[i], 0755, 0) < 0)
      return asbe__failerr("chmod %s on the writable layer", dirs[i]);
  }
  return 0;
}

/* The agent log: stdout and stderr of the init and the agent. Not a file in
 * the sandbox's tree (the engine used to read /run/asb/agent.log through
 * /proc/<init>/root, and a sandbox that made it a symlink got the engine to
 * return any host file), not a pipe (a restarted engine adopts running
 * sandboxes, and a pipe without a reader would kill or stall the agent
 * meanwhile), not a file in the engine's state dir (a sandbox could fill the
 * host's disk through it). It is log/agent.log on the sandbox's writable
 * layer: bounded by the sandbox's disk limit like everything it writes, and
 * outside its tree (only upper/ and run/ of that fs are mounted inside), so
 * the sandbox holds it only as the fds its init has. The engine keeps an fd
 * and reads through it; a restarted one gets it back from the init
 * (pidfd_getfd) and checks it is the same inode. Owned by root inside, who
 * may write to it through /proc/1/fd/1 as before. */
/* spec->run_files into run/ of the writable layer: each a new file renamed
 * over what the sandbox may have left at its name (never followed). */
static int put_run_files(int mfd, uid_t uid, const char *const *rf) {
  if (!rf) return 0;
  int run = openat(mfd, "run", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (run < 0) return asbe__failerr("run/ on the writable layer");
  int r = 0;
  for (size_t i = 0; r == 0 && rf[i] && rf[i + 1]; i += 2) {
    const char *name = rf[i], *data = rf[i + 1];
    char tmp[300];
    if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") ||
        (size_t)snprintf(tmp, sizeof tmp, ".%s.asb-new", name) >= sizeof tmp) {
      r = asbe__fail(-EINVAL, "run file name \"%s\"", name);
      break;
    }
    unlinkat(run, tmp, 0);
    int fd = openat(run, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    size_t len = strlen(data);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len || fchown(fd, uid, uid) < 0) {
      r = asbe__failerr("/run/asb/%s on the writable layer", name);
    } else if (renameat(run, tmp, run, name) < 0) {
      /* a dir the sandbox made there: it goes (only if empty) */
      if (unlinkat(run, name, AT_REMOVEDIR) < 0 || renameat(run, tmp, run, name) < 0)
        r = asbe__failerr("/run/asb/%s on the writable layer", name);
    }
    if (fd >= 0) close(fd);
    if (r < 0) unlinkat(run, tmp, 0);
  }
  close(run);
  return r;
}

static int open_log(int mfd, uid_t uid, dev_t *dev, ino_t *ino) {
  int fd =
      openat(mfd, "log/agent.log", O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  struct stat st;
  if (fd < 0 || fchown(fd, uid, uid) < 0 || fstat(fd, &st) < 0) {
    int r = asbe__failerr("the agent log on the writable layer");
    if (fd >= 0) close(fd);
    return r;
  }
  *dev = st.st_dev;
  *ino = st.st_ino;
  return fd;
}

static char **build_env(const asbe_engine *e, const asbe_sandbox_spec *spec) {
  size_t extra = 0;
  if (spec->agent_env)
    while (spec->agent_env[extra]) extra++;
  char **env = calloc(extra + 9, sizeof(char *));
  if (!env) return NULL;
  size_t n = 0;
  env[n++] = strdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  env[n++] = strdup("HOME=/root");
  env[n++] = asbe__strfmt("ASB_SANDBOX_ID=%s", spec->id);
  env[n++] = strdup("ASB_RUN_DIR=/run/asb");
  env[n++] = asbe__strfmt("ASB_WORKLOAD_CGROUPS=%s", e->cg.workload_env);
  env[n++] = asbe__strfmt("ASB_NOFILE=%u:%u", ASBE_NOFILE_SOFT, ASBE_NOFILE_HARD);
  /* issue 23's phase timers (docs/envd.md): an engine run with ASB_TIMING
   * has envd write them inside the sandbox, readable through /files */
  if (getenv("ASB_TIMING")) env[n++] = strdup("ASB_TIMING=/run/asb/envd-timing.log");
  /* ASB_PRESTART=0 turns envd's pre-started login shell off (bench/cmd_bench
   * compares both paths side by side) */
  if (getenv("ASB_PRESTART")) env[n++] = asbe__strfmt("ASB_PRESTART=%s", getenv("ASB_PRESTART"));
  for (size_t i = 0; i < extra; i++) env[n++] = strdup(spec->agent_env[i]);
  for (size_t i = 0; i < n; i++)
    if (!env[i]) {
      for (size_t k = 0; k < n; k++) free(env[k]);
      free(env);
      return NULL;
    }
  return env;
}

/* asb-init -x SOCK [-a N [-d]] [-- AGENT... AUX...]: the strings are the
 * spec's, but for the count (v[0] of the returned block is freed with it:
 * see free_argv). */
static char **build_argv(const asbe_sandbox_spec *spec) {
  size_t n = 0, na = 0;
  if (spec->agent_argv)
    while (spec->agent_argv[n]) n++;
  if (spec->aux_argv)
    while (spec->aux_argv[na]) na++;
  char **v = calloc(n + na + 9, sizeof(char *));
  if (!v) return NULL;
  size_t k = 0;
  v[k++] = "asb-init";
  v[k++] = "-x"; /* the exec service, see init/exec_proto.h */
  v[k++] = ASB_EXEC_SOCK;
  if (na) {
    v[k++] = "-a";
    if (!(v[k++] = asbe__strfmt("%zu", na))) {
      free(v);
      return NULL;
    }
    if (spec->aux_on_demand) v[k++] = "-d";
  }
  if (n || na) v[k++] = "--";
  for (size_t i = 0; i < n; i++) v[k++] = (char *)spec->agent_argv[i];
  for (size_t i = 0; i < na; i++) v[k++] = (char *)spec->aux_argv[i];
  return v;
}

static void free_argv(char **v) {
  if (v && v[3] && !strcmp(v[3], "-a")) free(v[4]);
  free(v);
}

static void free_strv(char **v) {
  if (!v) return;
  for (size_t i = 0; v[i]; i++) free(v[i]);
  free(v);
}

static int build_plan(asbe_engine *e, const asbe_sandbox_spec *spec, asbe_plan *p) {
  const asbe_template *t = spec->tmpl;
  if (t->n_layers < 1 || t->n_layers > ASBE_MAX_LAYERS || t->n_binds > ASBE_MAX_BINDS)
    return asbe__fail(-EINVAL, "template: 1..%d layers and at most %d binds", ASBE_MAX_LAYERS,
                      ASBE_MAX_BINDS);
  snprintf(p->stage, sizeof p->stage, "%s", e->stage_dir);
  asbi_buf o = ASBI_BUF_INIT;
  asbi_buf_puts(&o, "lowerdir=");
  for (size_t i = t->n_layers; i-- > 0;) /* overlay lists the top layer first */
    asbi_buf_printf(&o, "l%zu%s", i, i ? ":" : "");
  /* xino=on: one st_dev for every file, and inode numbers unique across
   * the layers (the layer's index in the high bits). inotify reports a
   * watched file by the overlay's (dev, ino); a checkpoint (CRIU) finds
   * envd's watched files again by them, which fails for a lower-layer
   * file without xino (its st_dev is the layer's). docs/lifecycle.md
   * ("The overlay's xino") says what it costs. */
  asbi_buf_puts(&o, ",upperdir=w/upper,workdir=w/work,userxattr,xino=on");
  if (!o.data || o.len >= sizeof p->ovl_opts) {
    asbi_buf_free(&o);
    return asbe__fail(-E2BIG, "overlay options");
  }
  memcpy(p->ovl_opts, o.data, o.len + 1);
  asbi_buf_free(&o);
  p->n_layers = (int)t->n_layers;
  for (size_t i = 0; i < t->n_layers; i++)
    snprintf(p->layer_dir[i], sizeof p->layer_dir[i], "l%zu", i);
  p->n_binds = (int)t->n_binds;
  for (size_t i = 0; i < t->n_binds; i++)
    if ((size_t)snprintf(p->bind_dst[i], sizeof p->bind_dst[i], "r%s", t->bind_dst[i]) >=
        sizeof p->bind_dst[i])
      return asbe__fail(-ENAMETOOLONG, "bind target %s", t->bind_dst[i]);
  for (int i = 0; i < e->cg.n; i++) {
    if (!e->cg.h[i].split) continue;
    asbe__cg_path(&e->cg, i, spec->id, ASBE_CGW_WORKLOAD, p->cg_src[p->n_cg], sizeof p->cg_src[0]);
    snprintf(p->cg_dst[p->n_cg], sizeof p->cg_dst[0], "r/run/asb/cgroup/%s", e->cg.h[i].name);
    p->n_cg++;
  }
  snprintf(p->hostname, sizeof p->hostname, "%s", spec->id);
  snprintf(p->hostname_line, sizeof p->hostname_line, "%s\n", spec->id);
  snprintf(p->hosts, sizeof p->hosts,
           "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
           "127.0.1.1\t%s\n",
           spec->id);
  if (spec->resolv_conf &&
      (size_t)snprintf(p->resolv, sizeof p->resolv, "%s", spec->resolv_conf) >= sizeof p->resolv)
    return asbe__fail(-ENAMETOOLONG, "resolv.conf of %zu bytes", strlen(spec->resolv_conf));
  if (spec->extra_ca_pem &&
      (size_t)snprintf(p->ca_pem, sizeof p->ca_pem, "%s", spec->extra_ca_pem) >= sizeof p->ca_pem)
    return asbe__fail(-ENAMETOOLONG, "CA certificate of %zu bytes", strlen(spec->extra_ca_pem));
  snprintf(p->shm_opts, sizeof p->shm_opts, "mode=1777,size=%llu",
           (unsigned long long)(spec->shm_bytes ? spec->shm_bytes : DEFAULT_SHM));
  p->sec = &e->sec;
  return 0;
}

/* The sandbox's user namespace is owned by the sandbox's own host uid, not
 * by root: the kernel charges what a user namespace's users hold of the
 * per-user counts (inotify instances and watches, fanotify groups, message
 * queue bytes, pending signals, locked shm) to its owner in the parent
 * namespace too, against the owner's limit. Owned by root, one sandbox could
 * take all 128 inotify instances of the host's root and of every other
 * sandbox. The owner is the effective uid of the creator, so this thread
 * (credentials are per thread; raw syscalls, not glibc's broadcasting
 * wrappers) takes that euid for the clone only, keeping its capabilities
 * (SECBIT_NO_SETUID_FIXUP); the child's securebits start afresh in its new
 * user namespace. */
static pid_t clone_sandbox(int *pidfd, uid_t owner) {
  int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
  int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  if (bits < 0 || prctl(PR_SET_SECUREBITS, bits | SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0) return -1;
  if (syscall(SYS_setresuid, -1, owner, -1) < 0) {
    int err = errno;
    prctl(PR_SET_SECUREBITS, bits, 0, 0, 0);
    errno = err;
    return -1;
  }
  struct clone_args ca;
  memset(&ca, 0, sizeof ca);
  ca.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS |
             CLONE_NEWIPC | CLONE_PIDFD;
  ca.pidfd = (uint64_t)(uintptr_t)pidfd;
  ca.exit_signal = SIGCHLD;
  pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
  if (pid == 0) return 0;
  int err = errno;
  /* back to root (the real and saved uids stayed 0); a changed euid also
   * cleared the process's dumpable flag */
  if (syscall(SYS_setresuid, -1, 0, -1) < 0) abort(); /* cannot happen: suid is 0 */
  prctl(PR_SET_SECUREBITS, bits, 0, 0, 0);
  if (dumpable >= 0) prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0);
  errno = err;
  return pid;
}

/* How the setup child ended, once its end of the channel went without a
 * message ("" if it has not ended within a second: then only the channel
 * says what happened). The status is peeked (WNOWAIT): the failure path
 * reaps it. */
static void child_end(const asbe_sandbox *sb, char *out, size_t len) {
  out[0] = '\0';
  struct pollfd pf = {.fd = sb->pidfd, .events = POLLIN};
  siginfo_t si;
  memset(&si, 0, sizeof si);
  if (sb->pidfd < 0 || poll(&pf, 1, 1000) != 1 ||
      waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || !si.si_pid)
    return;
  if (si.si_code == CLD_EXITED)
    snprintf(out, len, " (it exited with status %d)", si.si_status);
  else
    snprintf(out, len, " (killed by signal %d%s)", si.si_status,
             si.si_code == CLD_DUMPED ? ", core dumped" : "");
}

/* Waits for the child's next message. 0 = got `type`; <0 = failure (the
 * child's own error when it sent one). EOF counts as success for EXEC.
 * A reset is the child gone with a message of ours unread (an EXEC sent
 * while it failed): the kernel reports that before the messages still
 * queued, so the next read has the child's own error if it sent one; with
 * none, it died, as at an EOF before EXEC, and how it ended is said. */
static int child_says(asbe_sandbox *sb, int sock, int type) {
  asbe_msg m;
  memset(&m, 0, sizeof m);
  int n = asbe__recv_fds(sock, &m, sizeof m, NULL, 0, NULL);
  int reset = n == -ECONNRESET;
  if (reset) n = asbe__recv_fds(sock, &m, sizeof m, NULL, 0, NULL); /* the error is read now */
  if (n == -ECONNRESET || (n == 0 && (type != 0 || reset))) {
    char how[96];
    child_end(sb, how, sizeof how);
    return asbe__fail(-ECHILD, "sandbox %s: setup process died%s", sb->id, how);
  }
  if (n < 0) return asbe__fail(n, "sandbox %s: setup channel", sb->id);
  if (n == 0) return 0; /* exec'd: the socket closed on exec */
  if (m.type == ASBE_MSG_ERR) {
    m.what[sizeof m.what - 1] = '\0';
    return asbe__fail(-m.err, "sandbox %s: %s", sb->id, m.what);
  }
  if (m.type != type) return asbe__fail(-EPROTO, "sandbox %s: setup protocol", sb->id);
  return 0;
}

static void reap_pidfd(asbe_sandbox *sb) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  int r;
  do r = waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED);
  while (r < 0 && errno == EINTR);
  if (r == 0) {
    if (si.si_code == CLD_EXITED)
      sb->status = (si.si_status & 0xff) << 8;
    else
      sb->status = (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
  }
}

/* ---- create -------------------------------------------------------------- */

/* The creates in progress (see asbe_engine.creating). */
static int creating_add(asbe_engine *e, const char *id) {
  pthread_mutex_lock(&e->lock);
  char **v = realloc(e->creating, (e->n_creating + 1) * sizeof *v);
  if (v) {
    e->creating = v;
    e->creating[e->n_creating++] = (char *)id;
  }
  pthread_mutex_unlock(&e->lock);
  return v ? 0 : asbe__fail(-ENOMEM, "sandbox");
}

static void creating_del(asbe_engine *e, const char *id) {
  pthread_mutex_lock(&e->lock);
  for (size_t i = 0; i < e->n_creating; i++)
    if (e->creating[i] == id) {
      e->creating[i] = e->creating[--e->n_creating];
      break;
    }
  pthread_mutex_unlock(&e->lock);
}

static int creating_has(asbe_engine *e, const char *id) {
  pthread_mutex_lock(&e->lock);
  int has = 0;
  for (size_t i = 0; i < e->n_creating && !has; i++) has = !strcmp(e->creating[i], id);
  pthread_mutex_unlock(&e->lock);
  return has;
}

int asbe_sandbox_create(asbe_engine *e, const asbe_sandbox_spec *spec, asbe_sandbox **out) {
  asbe__clear_error();
  *out = NULL;
  if (!spec || !spec->tmpl) return asbe__fail(-EINVAL, "sandbox spec: template required");
  if (!valid_id(spec->id))
    return asbe__fail(-EINVAL, "sandbox id \"%s\": use 1..63 of [A-Za-z0-9_-]",
                      spec->id ? spec->id : "");
  asbe_sandbox *sb = sb_new(e, spec->id);
  if (!sb) return asbe__fail(-ENOMEM, "sandbox");
  asbe_plan *plan = calloc(1, sizeof *plan);
  char **argv = build_argv(spec), **envp = build_env(e, spec);
  int r = 0, wfd = -1, sock[2] = {-1, -1}, userns = -1, have_dir = 0, have_slot = 0, have_cg = 0;
  int resuming = 0;
  int fds[ASBE_MAX_LAYERS + ASBE_MAX_BINDS + 2], nfds = 0;
  char path[PATH_MAX];
  if (!plan || !argv || !envp) {
    r = asbe__fail(-ENOMEM, "sandbox");
    goto fail;
  }
  if ((r = build_plan(e, spec, plan)) < 0) goto fail;
  plan->argv = argv;
  plan->envp = envp;

  if (spec->resume) {
    /* A paused sandbox booted again: its dir, its slot (the writable
     * layer's files belong to its host uids) and its layer. A failure
     * leaves it paused as it was. */
    asbe__rec rc;
    if (spec->disk_tmpfs || asbe__rec_read(sb->dir, &rc) < 0 || strcmp(rc.status, "paused")) {
      r = asbe__fail(-ENOENT, "sandbox %s: no paused sandbox to boot", sb->id);
      goto fail;
    }
    if ((r = creating_add(e, sb->id)) < 0) goto fail;
    resuming = 1;
    sb->slot = rc.slot;
    if ((r = asbe__slot_retake(e, sb->slot, sb->dir)) < 0) goto fail;
  } else {
    if (mkdir(sb->dir, 0700) < 0) {
      r = errno == EEXIST ? asbe__fail(-EEXIST, "sandbox %s exists", sb->id)
                          : asbe__failerr("mkdir %s", sb->dir);
      goto fail;
    }
    have_dir = 1; /* no record until the init runs: see rec_state() */
    if ((r = creating_add(e, sb->id)) < 0) {
      have_dir = 0;
      rmdir(sb->dir);
      goto fail;
    }
    if ((r = asbe__slot_claim(e, sb->dir, &sb->slot)) < 0) goto fail;
    have_slot = 1;
  }
  sb->host_uid = ASBE_UID_BASE + sb->slot * ASBE_UID_RANGE;
  sb->disk_tmpfs = spec->disk_tmpfs != 0;

  if (spec->resume) {
    snprintf(path, sizeof path, "%s/disk.img", sb->dir);
    /* Its last boot's loop device goes once that boot's mounts are gone
     * (asynchronously after the kill): never two mounts of one ext4. */
    for (int waited = 0; asbe__loop_count_under(sb->dir) > 0; waited += 10) {
      if (waited > 20000) {
        r = asbe__fail(-EBUSY, "sandbox %s: %s is still attached", sb->id, path);
        goto fail;
      }
      usleep(10000);
    }
    r = asbe__disk_mount_rw(path, &wfd);
  } else if (spec->disk_tmpfs) {
    r = asbe__disk_tmpfs(spec->disk_bytes, &wfd);
  } else {
    snprintf(path, sizeof path, "%s/disk.img", sb->dir);
    r = asbe__disk_take(e, spec->disk_bytes, path, &wfd);
  }
  if (r < 0) goto fail;
  if ((r = prep_writable(wfd, sb->host_uid)) < 0 ||
      (r = put_run_files(wfd, sb->host_uid, spec->run_files)) < 0)
    goto fail;
  {
    struct stat ws;
    if (fstatat(wfd, "run", &ws, AT_SYMLINK_NOFOLLOW) < 0) {
      r = asbe__failerr("stat run/ on the writable layer");
      goto fail;
    }
    sb->run_dev = ws.st_dev;
  }
  if ((sb->log_fd = open_log(wfd, sb->host_uid, &sb->log_dev, &sb->log_ino)) < 0) {
    r = sb->log_fd;
    goto fail;
  }

  asbe_cg_limits lim = {spec->memory_bytes, spec->pids_max,
                        spec->agent_memory_bytes ? spec->agent_memory_bytes : DEFAULT_AGENT_MEMORY,
                        spec->agent_pids_max ? spec->agent_pids_max : DEFAULT_AGENT_PIDS,
                        spec->cpu_millicores};
  have_cg = 1;
  if ((r = asbe__cg_create(&sb->cg, sb->id, &lim, sb->host_uid)) < 0) goto fail;

  int forking = spec->criu && spec->fork_of && !spec->resume;
  /* a fork: another sandbox's images, made this one's checkpoint */
  if (forking && (r = asbe__criu_fork_images(sb, spec->fork_of, wfd)) < 0) goto fail;
  if ((spec->resume && spec->criu) || forking) {
    /* its checkpoint restored (criu.c): the same processes and memory */
    if ((userns = asbe__criu_userns(sb->host_uid)) < 0) {
      r = asbe__fail(userns, "sandbox %s: a user namespace of its slot", sb->id);
      userns = -1;
      goto fail;
    }
    const asbe_template *t = spec->tmpl;
    if ((r = root_fds(e, t, userns, fds, &nfds)) < 0) goto fail;
    close(userns);
    userns = -1;
    r = asbe__criu_restore(sb, spec->criu, wfd, plan->ovl_opts, (int)t->n_layers, fds,
                           (const char *const *)t->bind_dst, (int)t->n_binds, fds + t->n_layers,
                           fds[t->n_layers + t->n_binds]);
    for (int i = 0; i < nfds; i++) close(fds[i]);
    nfds = 0;
    close(wfd);
    wfd = -1;
    /* a fork's images are the parent's: gone once read (the fail path
     * removes the whole dir); criu may have restored the parent's
     * freezer state, frozen for the dump */
    if (forking && r == 0) {
      asbe_paused_checkpoint_drop(e, sb->id);
      r = asbe__cg_freeze(&sb->cg, sb->id, 0);
    }
    if (r < 0) goto fail;
    sb->pidfd = (int)syscall(SYS_pidfd_open, sb->pid, 0);
    pid_t ppid = 0;
    if (sb->pidfd < 0 || asbe__proc_stat(sb->pid, &ppid, NULL) < 0) {
      r = asbe__fail(-ESRCH, "sandbox %s: the restored init is gone", sb->id);
      goto fail;
    }
    sb->is_child = ppid == getpid();
    sb->starttime = asbe__proc_starttime(sb->pid);
    if ((r = asbe__cg_finish(&sb->cg, sb->id, &lim)) < 0 ||
        (r = asbe__rec_write(sb, "running")) < 0)
      goto fail;
    creating_del(e, sb->id);
    free(plan);
    free_argv(argv);
    free_strv(envp);
    *out = sb;
    return 0;
  }

  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) < 0) {
    r = asbe__failerr("socketpair");
    goto fail;
  }
  plan->sock = sock[1];
  plan->wfd = wfd;
  plan->logfd = sb->log_fd;
  pid_t pid = clone_sandbox(&sb->pidfd, sb->host_uid);
  if (pid < 0) {
    r = asbe__failerr("clone3");
    goto fail;
  }
  if (pid == 0) {
    close(sock[0]);
    asbe__child_main(plan);
  }
  sb->pid = pid;
  sb->is_child = 1;
  close(sock[1]);
  sock[1] = -1;
  close(wfd); /* the child has it */
  wfd = -1;

  if ((r = write_map(pid, "uid_map", sb->host_uid)) < 0 ||
      (r = write_map(pid, "gid_map", sb->host_uid)) < 0)
    goto fail;
  snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
  userns = open(path, O_RDONLY | O_CLOEXEC);
  if (userns < 0) {
    r = asbe__failerr("open %s", path);
    goto fail;
  }
  if ((r = root_fds(e, spec->tmpl, userns, fds, &nfds)) < 0) goto fail;
  close(userns);
  userns = -1;

  if ((r = asbe__cg_enter(&sb->cg, sb->id, pid, ASBE_CGW_SB)) < 0) goto fail;
  asbe_msg m;
  memset(&m, 0, sizeof m);
  m.type = ASBE_MSG_GO;
  if ((r = asbe__send_fds(sock[0], &m, sizeof m, fds, nfds)) < 0) {
    r = asbe__fail(r, "sandbox %s: send", sb->id);
    goto fail;
  }
  for (int i = 0; i < nfds; i++) close(fds[i]);
  nfds = 0;
  if ((r = child_says(sb, sock[0], ASBE_MSG_CG)) < 0) goto fail;
  if ((r = asbe__cg_enter(&sb->cg, sb->id, pid, ASBE_CGW_AGENT)) < 0 ||
      (r = asbe__cg_finish(&sb->cg, sb->id, &lim)) < 0)
    goto fail;
  sb->starttime = asbe__proc_starttime(pid);
  if (!sb->starttime) {
    /* Gone already (its pidfd is readable: it exited): the child failed
     * after CG (it does its mounts then), and its own message, still
     * queued, says why. Only then: a live child waits for EXEC, and
     * reading its socket would wait with it. */
    struct pollfd pf = {.fd = sb->pidfd, .events = POLLIN};
    int cr = sb->pidfd >= 0 && poll(&pf, 1, 0) == 1 ? child_says(sb, sock[0], 0) : 0;
    r = cr < 0 ? cr : asbe__fail(-ESRCH, "sandbox %s: init gone", sb->id);
    goto fail;
  }
  if ((r = asbe__rec_write(sb, "running")) < 0) goto fail;
  m.type = ASBE_MSG_EXEC;
  if ((r = asbe__send_fds(sock[0], &m, sizeof m, NULL, 0)) < 0) {
    /* the child failed meanwhile (it does its mounts after CG): its own
     * message, still queued, says why */
    int cr = child_says(sb, sock[0], 0);
    r = cr < 0 ? cr : asbe__fail(r, "sandbox %s: send", sb->id);
    goto fail;
  }
  if ((r = child_says(sb, sock[0], 0)) < 0) goto fail;
  creating_del(e, sb->id);
  close(sock[0]);
  free(plan);
  free_argv(argv);
  free_strv(envp);
  *out = sb;
  return 0;

fail:
  for (int i = 0; i < nfds; i++) close(fds[i]);
  if (userns >= 0) close(userns);
  if (sock[0] >= 0) close(sock[0]);
  if (sock[1] >= 0) close(sock[1]);
  if (wfd >= 0) close(wfd);
  if (sb->pidfd >= 0) {
    syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
    reap_pidfd(sb);
  }
  {
    char msg[512];
    asbe__save_error(msg, sizeof msg);
    if (have_cg) asbe__cg_destroy(&sb->cg, sb->id, 5000);
    if (have_slot) asbe__slot_release(e, sb->slot, sb->dir);
    if (have_dir) {
      asbe__rm_rf(sb->dir);
      creating_del(e, sb->id);
    }
    if (resuming) { /* paused again, as it was (the record may say running) */
      sb->pid = 0;
      sb->starttime = 0;
      asbe__rec_write(sb, "paused");
      creating_del(e, sb->id);
    }
    asbe__restore_error(msg);
  }
  free(plan);
  free_argv(argv);
  free_strv(envp);
  asbe_sandbox_release(sb);
  return r;
}

/* ---- kill, release, adopt ------------------------------------------------ */

int asbe_sandbox_start_aux(asbe_sandbox *sb) {
  asbe__clear_error();
  if (!asbe_sandbox_alive(sb)) return asbe__fail(-ESRCH, "the sandbox is not running");
  if (syscall(SYS_pidfd_send_signal, sb->pidfd, ASB_INIT_AUX_SIGNAL, NULL, 0) < 0)
    return asbe__failerr("signal the sandbox's init");
  return 0;
}

/* keep: 0 remove the state dir, 1 keep it "stopped", 2 keep it "paused"
 * with its uid slot. */
static int kill_impl(asbe_sandbox *sb, int keep) {
  asbe__clear_error();
  asbe_engine *e = sb->e;
  int r = 0;
  if (!sb->dead) {
    asbe__cg_kill(&sb->cg, sb->id);
    if (sb->pidfd >= 0) syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
    /* the v1 freezer holds killed tasks until thawed (v2 does not) */
    if (sb->frozen && asbe__cg_freeze(&sb->cg, sb->id, 0) == 0) sb->frozen = 0;
    /* The init finishes dying only once every process of its pid namespace
     * is reaped, including those we exec'd (our children): reap as we go. */
    for (int waited = 0; sb->pidfd >= 0 && !asbe__wait_readable(sb->pidfd, 20);) {
      asbe__procs_reap(sb);
      waited += 20;
      if (waited % 1000 == 0) {
        asbe__cg_kill(&sb->cg, sb->id);
        syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
      }
      if (waited > 60000) {
        r = asbe__fail(-ETIMEDOUT, "sandbox %s: init does not die", sb->id);
        break;
      }
    }
    if (r < 0) return r;
    if (sb->is_child) reap_pidfd(sb);
    sb->dead = 1;
  }
  /* it pins the writable layer's mount (and so the loop device): an export
   * of the layer waits for that to go */
  if (sb->log_fd >= 0) close(sb->log_fd);
  sb->log_fd = -1;
  asbe__procs_reap(sb);
  int cr = asbe__cg_destroy(&sb->cg, sb->id, 10000);
  if (cr < 0)
    r = cr;
  else
    drop_old_bases(&sb->cg, &e->cg);
  if (keep == 2 && access(sb->dir, F_OK) == 0) {
    /* the record first: from then on the slot's claim holds without a
     * live init (slot.c) */
    int wr = asbe__rec_write(sb, "paused");
    if (wr < 0 && r == 0) r = asbe__fail(wr, "sandbox %s: record", sb->id);
    return r;
  }
  asbe__slot_release(e, sb->slot, sb->dir); /* no-op if not ours any more */
  if (!keep) {
    int rr = asbe__rm_rf(sb->dir);
    if (rr < 0 && r == 0) r = asbe__fail(rr, "remove %s", sb->dir);
  } else if (access(sb->dir, F_OK) == 0) {
    asbe__rec_write(sb, "stopped");
  }
  return r;
}

int asbe_sandbox_kill(asbe_sandbox *sb, int remove_state) {
  return kill_impl(sb, remove_state ? 0 : 1);
}

int asbe_sandbox_stop(asbe_sandbox *sb) {
  if (sb->disk_tmpfs)
    return asbe__fail(-EOPNOTSUPP,
                      "sandbox %s: a tmpfs writable layer does not outlive its "
                      "processes",
                      sb->id);
  return kill_impl(sb, 2);
}

int asbe_sandbox_checkpoint(asbe_sandbox *sb, const char *criu) {
  int r = asbe__criu_dump(sb, criu);
  /* criu killed them: what is left (cgroups, the slot's claim) as a stop
   * leaves it, recorded paused */
  return r < 0 ? r : asbe_sandbox_stop(sb);
}

int asbe_paused_hold(asbe_engine *e, const char *id) {
  asbe__clear_error();
  if (!valid_id(id)) return asbe__fail(-EINVAL, "sandbox id");
  asbe_sandbox *sb = sb_new(e, id);
  if (!sb) return asbe__fail(-ENOMEM, "sandbox");
  asbe__rec rc;
  int r = asbe__rec_read(sb->dir, &rc) == 0 && !strcmp(rc.status, "paused")
              ? asbe__slot_retake(e, rc.slot, sb->dir)
              : asbe__fail(-ENOENT, "sandbox %s is not paused", id);
  asbe_sandbox_release(sb);
  return r;
}

int asbe_paused_from_reboot(asbe_engine *e, const char *id) {
  asbe__clear_error();
  if (!valid_id(id)) return asbe__fail(-EINVAL, "sandbox id");
  asbe_sandbox *sb = sb_new(e, id);
  if (!sb) return asbe__fail(-ENOMEM, "sandbox");
  asbe__rec rc;
  char img[PATH_MAX];
  struct stat st;
  snprintf(img, sizeof img, "%s/disk.img", sb->dir);
  int r;
  if (asbe__rec_read(sb->dir, &rc) < 0 || strcmp(rc.status, "running") ||
      !asbe__rec_other_boot(&rc)) {
    r = asbe__fail(-ESRCH, "sandbox %s was not running in another boot", id);
  } else if (lstat(img, &st) < 0 || !S_ISREG(st.st_mode)) {
    r = asbe__fail(-EOPNOTSUPP, "sandbox %s has no disk image", id);
  } else {
    /* its record as a stop leaves it: no init, its slot and cgroup paths
     * (the reaper removes what of them is left) */
    sb->slot = rc.slot;
    sb->host_uid = ASBE_UID_BASE + rc.slot * ASBE_UID_RANGE;
    sb->run_dev = (dev_t)rc.run_dev;
    asbe__cg_free(&sb->cg);
    if ((r = rec_cg(e, &rc, id, &sb->cg)) == 0) r = asbe__rec_write(sb, "paused");
    if (r < 0) r = asbe__fail(r, "sandbox %s: record", id);
  }
  asbe_sandbox_release(sb);
  return r;
}

int asbe_paused_export(asbe_engine *e, const char *id, const char *dest) {
  asbe__clear_error();
  if (!valid_id(id)) return asbe__fail(-EINVAL, "sandbox id");
  asbe_sandbox *sb = sb_new(e, id);
  if (!sb) return asbe__fail(-ENOMEM, "sandbox");
  asbe__rec rc;
  int r;
  if (asbe__rec_read(sb->dir, &rc) == 0 && !strcmp(rc.status, "paused")) {
    /* no init runs on it: its files are the image's, owned by its slot's ids */
    sb->slot = rc.slot;
    sb->host_uid = ASBE_UID_BASE + rc.slot * ASBE_UID_RANGE;
    sb->dead = 1;
    r = asbe_sandbox_export_upper(sb, dest);
  } else {
    r = asbe__fail(-ENOENT, "sandbox %s is not paused", id);
  }
  asbe_sandbox_release(sb);
  return r;
}

int asbe_paused_remove(asbe_engine *e, const char *id) {
  asbe__clear_error();
  if (!valid_id(id)) return asbe__fail(-EINVAL, "sandbox id");
  asbe_sandbox *sb = sb_new(e, id);
  if (!sb) return asbe__fail(-ENOMEM, "sandbox");
  asbe__rec rc;
  int r = 0;
  if (asbe__rec_read(sb->dir, &rc) == 0 && !strcmp(rc.status, "paused")) {
    asbe__slot_release(e, rc.slot, sb->dir);
    int rr = asbe__rm_rf(sb->dir);
    if (rr < 0) r = asbe__fail(rr, "remove %s", sb->dir);
  } else if (access(sb->dir, F_OK) == 0) {
    r = asbe__fail(-EBUSY, "sandbox %s is not paused", id);
  }
  asbe_sandbox_release(sb);
  return r;
}

void asbe_sandbox_release(asbe_sandbox *sb) {
  if (!sb) return;
  pthread_mutex_lock(&sb->lock);
  asbe_proc *p = sb->procs;
  sb->procs = NULL;
  pthread_mutex_unlock(&sb->lock);
  while (p) { /* handles the caller still has lose their sandbox */
    asbe_proc *n = p->next;
    p->sb = NULL;
    p->next = NULL;
    if (p->detached) {
      if (!p->reaped && p->ctl < 0) waitpid(p->pid, NULL, WNOHANG);
      if (p->ctl >= 0) close(p->ctl);
      if (p->pidfd >= 0) close(p->pidfd);
      free(p);
    }
    p = n;
  }
  if (sb->pidfd >= 0) close(sb->pidfd);
  if (sb->log_fd >= 0) close(sb->log_fd);
  for (int i = 0; i < sb->n_cg_workload; i++) free(sb->cg_workload[i]);
  free(sb->cg_workload);
  asbe__cg_free(&sb->cg);
  free(sb->id);
  free(sb->dir);
  pthread_mutex_destroy(&sb->lock);
  free(sb);
}

int asbe_sandbox_adopt(asbe_engine *e, const char *id, asbe_sandbox **out) {
  asbe__clear_error();
  *out = NULL;
  if (!valid_id(id)) return asbe__fail(-EINVAL, "sandbox id");
  asbe_sandbox *sb = sb_new(e, id);
  if (!sb) return asbe__fail(-ENOMEM, "sandbox");
  asbe__rec rc;
  int r = asbe__rec_read(sb->dir, &rc);
  if (r < 0) {
    r = asbe__fail(r == -ENOENT ? -ESRCH : r, "sandbox %s: no record", id);
    goto fail;
  }
  if (strcmp(rc.status, "running") != 0 || rc.pid <= 0) {
    r = asbe__fail(-ESRCH, "sandbox %s is %s", id, rc.status);
    goto fail;
  }
  sb->slot = rc.slot;
  sb->host_uid = ASBE_UID_BASE + rc.slot * ASBE_UID_RANGE;
  sb->pid = rc.pid;
  sb->starttime = rc.start;
  sb->pidfd = (int)syscall(SYS_pidfd_open, rc.pid, 0);
  /* the pidfd is the recorded init only if this boot's process of that
   * pid has its start time and lives in the sandbox's cgroup, and it still
   * lives after those were read (so the pid was not reused meanwhile) */
  if (sb->pidfd < 0 || !asbe__rec_is_init(&rc, rc.pid) || !asbe_sandbox_alive(sb)) {
    r = asbe__fail(-ESRCH, "sandbox %s: init %d is gone", id, (int)rc.pid);
    goto fail;
  }
  pid_t ppid = 0;
  sb->is_child = asbe__proc_stat(rc.pid, &ppid, NULL) == 0 && ppid == getpid();
  sb->run_dev = (dev_t)rc.run_dev;
  sb->log_dev = (dev_t)rc.log_dev;
  sb->log_ino = (ino_t)rc.log_ino;
  if (rc.log_ino) {
    /* the init's stdout is the agent log, unless root inside took over the
     * init and replaced it: only the recorded inode is taken */
    int fd = (int)syscall(SYS_pidfd_getfd, sb->pidfd, 1, 0);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == sb->log_dev &&
        st.st_ino == sb->log_ino)
      sb->log_fd = fd;
    else if (fd >= 0)
      close(fd);
  }
  asbe__cg_free(&sb->cg);
  if ((r = rec_cg(e, &rc, id, &sb->cg)) < 0 || (r = sb_workload_paths(sb)) < 0) {
    r = asbe__fail(r, "sandbox %s", id);
    goto fail;
  }
  asbe_stats st;
  if (asbe__cg_stats(&sb->cg, id, &st) < 0) {
    r = asbe__fail(-ENOENT, "sandbox %s: cgroups missing", id);
    goto fail;
  }
  sb->frozen = st.frozen;
  *out = sb;
  return 0;
fail:
  asbe_sandbox_release(sb);
  return r;
}

/* ---- freeze, stats, accessors -------------------------------------------- */

int asbe_sandbox_freeze(asbe_sandbox *sb) {
  asbe__clear_error();
  if (sb->dead) return asbe__fail(-ESRCH, "sandbox %s is dead", sb->id);
  int r = asbe__cg_freeze(&sb->cg, sb->id, 1);
  if (r == 0) sb->frozen = 1;
  return r;
}

int asbe_sandbox_thaw(asbe_sandbox *sb) {
  asbe__clear_error();
  if (sb->dead) return asbe__fail(-ESRCH, "sandbox %s is dead", sb->id);
  int r = asbe__cg_freeze(&sb->cg, sb->id, 0);
  if (r == 0) sb->frozen = 0;
  return r;
}

int asbe_sandbox_swap_out(asbe_sandbox *sb, uint64_t *moved) {
  asbe__clear_error();
  if (moved) *moved = 0;
  if (sb->dead) return asbe__fail(-ESRCH, "sandbox %s is dead", sb->id);
  if (!sb->frozen) return asbe__fail(-EBUSY, "sandbox %s is not frozen", sb->id);
  return asbe__cg_swap(&sb->cg, sb->id, 1, moved);
}

int asbe_sandbox_swap_block(asbe_sandbox *sb) {
  asbe__clear_error();
  if (sb->dead) return asbe__fail(-ESRCH, "sandbox %s is dead", sb->id);
  return asbe__cg_swap(&sb->cg, sb->id, 0, NULL);
}

int asbe_sandbox_swap_prefetch(asbe_sandbox *sb) {
  asbe__clear_error();
  if (sb->dead) return asbe__fail(-ESRCH, "sandbox %s is dead", sb->id);
  if (!sb->frozen) return asbe__fail(-EBUSY, "sandbox %s is not frozen", sb->id);
  return asbe__cg_prefetch(&sb->cg, sb->id);
}

int asbe_sandbox_stats(asbe_sandbox *sb, asbe_stats *st) {
  asbe__clear_error();
  if (sb->dead) return asbe__fail(-ESRCH, "sandbox %s is dead", sb->id);
  int r = asbe__cg_stats(&sb->cg, sb->id, st);
  if (r < 0) return r;
  int run = asbe__run_open(sb, NULL, 0);
  if (run >= 0) {
    struct statfs fs;
    if (fstatfs(run, &fs) == 0) {
      st->disk_total_bytes = (uint64_t)fs.f_blocks * (uint64_t)fs.f_bsize;
      st->disk_used_bytes = (uint64_t)(fs.f_blocks - fs.f_bfree) * (uint64_t)fs.f_bsize;
    }
    close(run);
  }
  asbe__clear_error(); /* disk numbers are best effort */
  return 0;
}

int asbe_sandbox_agent_log(asbe_sandbox *sb) {
  asbe__clear_error();
  if (sb->log_fd < 0) return asbe__fail(-ENOENT, "sandbox %s: no agent log", sb->id);
  /* a new open file (own offset, readable) of the very inode the engine
   * holds: the magic link of its own fd, not a path of the sandbox */
  char p[64];
  snprintf(p, sizeof p, "/proc/self/fd/%d", sb->log_fd);
  int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != sb->log_ino) {
    int r = fd < 0 ? asbe__failerr("sandbox %s: agent log", sb->id)
                   : asbe__fail(-EIO, "sandbox %s: agent log", sb->id);
    if (fd >= 0) close(fd);
    return r;
  }
  return fd;
}

const char *asbe_sandbox_id(const asbe_sandbox *sb) {
  return sb->id;
}
pid_t asbe_sandbox_pid(const asbe_sandbox *sb) {
  return sb->pid;
}
int asbe_sandbox_pidfd(const asbe_sandbox *sb) {
  return sb->pidfd;
}
uint32_t asbe_sandbox_slot(const asbe_sandbox *sb) {
  return sb->slot;
}
uid_t asbe_sandbox_host_uid(const asbe_sandbox *sb) {
  return sb->host_uid;
}
const char *asbe_sandbox_dir(const asbe_sandbox *sb) {
  return sb->dir;
}

/* ---- recovery ------------------------------------------------------------ */

int asbe_state_remove(asbe_engine *e, const char *id) {
  asbe__clear_error();
  if (!valid_id(id)) return asbe__fail(-EINVAL, "sandbox id");
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s", e->sandboxes_dir, id);
  asbe__rec rc;
  if (asbe__rec_read(dir, &rc) == 0 && !strcmp(rc.status, "running") &&
      asbe__rec_is_init(&rc, rc.pid))
    return asbe__fail(-EBUSY, "sandbox %s is running", id);
  int r = asbe__rm_rf(dir);
  return r < 0 ? asbe__fail(r, "remove %s", dir) : 0;
}

/* Is the sandbox recorded in dir alive (1), probably being created (2),
 * stopped (3) or dead (0)? A dir gets its record once its init runs; a dir
 * without one is left alone for a minute (a create in progress), then it is
 * litter of a create that crashed. */
/* 1 live, 2 being created by this process (no record yet), 3 stopped,
 * 0 dead: a dir without a record that no create of ours is making was left
 * by an engine that died mid-create (one engine per state dir). */
static int rec_state(asbe_engine *e, const char *id, const char *dir, asbe__rec *rc) {
  if (asbe__rec_read(dir, rc) < 0) return creating_has(e, id) ? 2 : 0;
  if (!strcmp(rc->status, "running")) return asbe__rec_is_init(rc, rc->pid);
  if (!strcmp(rc->status, "stopped") || !strcmp(rc->status, "paused")) return 3;
  return 0;
}

typedef struct keep_ctx {
  asbe_engine *e;
  char **ids;
  size_t n;
} keep_ctx;

static int keep_loop(const char *path, void *ctx) {
  keep_ctx *k = ctx;
  if (asbe__pool_holds(k->e, path)) return 1;
  if (asbe__volume_image(k->e, path)) return 1; /* volumes: the engine's, not a sandbox's */
  size_t sl = strlen(k->e->sandboxes_dir);
  if (strncmp(path, k->e->sandboxes_dir, sl) || path[sl] != '/') return 0;
  const char *id = path + sl + 1;
  size_t il = strcspn(id, "/");
  for (size_t i = 0; i < k->n; i++)
    if (strlen(k->ids[i]) == il && !strncmp(k->ids[i], id, il)) return 1;
  return 0;
}

int asbe_reap(asbe_engine *e, void (*live_cb)(const char *id, void *ctx), void *ctx,
              asbe_reap_report *report) {
  asbe__clear_error();
  asbe_reap_report rep;
  memset(&rep, 0, sizeof rep);
  keep_ctx keep = {e, NULL, 0};
  DIR *d = opendir(e->sandboxes_dir);
  if (!d) return asbe__failerr("open %s", e->sandboxes_dir);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || !valid_id(de->d_name)) continue;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", e->sandboxes_dir, de->d_name);
    asbe__rec rc;
    int st = rec_state(e, de->d_name, dir, &rc);
    if (st == 1 || st == 2) {
      char **nv = realloc(keep.ids, (keep.n + 1) * sizeof *nv);
      if (nv) {
        keep.ids = nv;
        keep.ids[keep.n++] = strdup(de->d_name);
      }
      if (st == 1) {
        rep.live++;
        if (live_cb) live_cb(de->d_name, ctx);
      }
      continue;
    }
    /* dead (or stopped): its processes, cgroups and loop devices go; not
     * cgroups another engine marked as its own (an id both have, by chance
     * or by hand) */
    asbe_cg cg;
    if (rec_cg(e, &rc, de->d_name, &cg) == 0) {
      int foreign = 0;
      for (int i = 0; i < cg.n; i++) foreign |= asbe__cg_owned(&cg, i, de->d_name, NULL, 0) < 0;
      if (!foreign && asbe__cg_exists(&cg, de->d_name)) {
        asbe__cg_kill(&cg, de->d_name);
        if (asbe__cg_destroy(&cg, de->d_name, 5000) == 0) {
          rep.cgroups++;
          drop_old_bases(&cg, &e->cg);
        }
      }
      asbe__cg_free(&cg);
    }
    rep.loops += (unsigned)asbe__loop_detach_under(dir, NULL, NULL);
    if (st == 3) continue;
    if (rc.status[0]) asbe__slot_release(e, rc.slot, dir);
    if (asbe__rm_rf(dir) == 0) rep.sandboxes++;
  }
  closedir(d);
  /* cgroup dirs of no known sandbox that this state dir's engine made (an
   * engine that used this cgroup name before may have had another state
   * dir: its sandboxes may be alive, and are not ours to judge) */
  for (int i = 0; i < e->cg.n; i++) {
    DIR *cd = opendir(e->cg.h[i].base);
    if (!cd) continue;
    while ((de = readdir(cd))) {
      if (de->d_type != DT_DIR || de->d_name[0] == '.') continue;
      int known = 0;
      for (size_t k = 0; k < keep.n && !known; k++) known = !strcmp(keep.ids[k], de->d_name);
      if (known || !valid_id(de->d_name) || asbe__cg_owned(&e->cg, i, de->d_name, NULL, 0) != 1)
        continue;
      asbe__cg_kill(&e->cg, de->d_name);
      if (asbe__cg_destroy(&e->cg, de->d_name, 5000) == 0) rep.cgroups++;
    }
    closedir(cd);
  }
  /* loop devices backed by our files that nobody uses */
  rep.loops += (unsigned)asbe__loop_detach_under(e->state_dir, keep_loop, &keep);
  /* pool leftovers (not golden images, not what the pool holds now) */
  if ((d = opendir(e->pool_dir))) {
    while ((de = readdir(d))) {
      if (strncmp(de->d_name, "img-", 4) && strncmp(de->d_name, "tmp-", 4)) continue;
      char p[PATH_MAX];
      snprintf(p, sizeof p, "%s/%s", e->pool_dir, de->d_name);
      if (asbe__pool_holds(e, p)) continue;
      if (unlink(p) == 0) rep.files++;
    }
    closedir(d);
  }
  rep.slots = asbe__slot_reap(e);
  for (size_t k = 0; k < keep.n; k++) free(keep.ids[k]);
  free(keep.ids);
  if (report) *report = rep;
  return 0;
}
