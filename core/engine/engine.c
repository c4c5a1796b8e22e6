/* The engine as a library (engine.h): its state made and released in one
 * place, and its start-up and stop apart from any front: the agent dir,
 * the isolation runtime, the templates, the sandboxes a previous run left
 * running (adopted) or dead (reaped), interrupted builds, the lifecycle
 * thread.
 * SPDX-License-Identifier: Apache-2.0 */
#include "engine.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api_builder.h"
#include "build.h"
#include "snapshots.h"
#include "lifecycle.h"
#include "net/egress/secrets.h"
#include "volumes.h"
#include "pool.h"
#include "proto/url.h"
#include "registry.h"
#include "sbxnet.h"
#include "swap.h"
#include "templates.h"
#include "util/log.h"
#include "util/util.h"

void engine_init(engine *e) {
  memset(e, 0, sizeof *e);
  pthread_mutex_init(&e->mu, NULL);
  pthread_mutex_init(&e->tmpl_mu, NULL);
  pthread_mutex_init(&e->build_mu, NULL);
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&e->bundled_mu, &a);
  pthread_mutexattr_destroy(&a);
  asbi_buf_init(&e->bundled_done, 0);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* pool.c's timed waits */
  pthread_cond_init(&e->pool_cv, &ca);
  pthread_condattr_destroy(&ca);
  e->lc_kick_fd = -1;
}

void engine_free(engine *e) {
  free(e->sbx);
  free(e->tombs);
  free(e->state_dir);
  free(e->envd_path);
  free(e->init_path);
  free(e->codei_path);
  free(e->templates_dir);
  for (size_t i = 0; e->image_dirs[i]; i++) free(e->image_dirs[i]);
  free(e->envd_version);
  free(e->domain);
  free(e->swap_path);
  free(e->criu_path);
  for (size_t i = 0; i < e->npool; i++) free(e->pool_names[i]);
  free(e->pool_names);
  free(e->pool_sizes);
  pthread_cond_destroy(&e->pool_cv);
  asbi_buf_free(&e->bundled_done);
  pthread_mutex_destroy(&e->bundled_mu);
  pthread_mutex_destroy(&e->build_mu);
  pthread_mutex_destroy(&e->tmpl_mu);
  pthread_mutex_destroy(&e->mu);
}

/* ---- start-up ---------------------------------------------------------------------- */

/* `envd --version` prints the E2B envd version it implements. */
static char *envd_version(const char *envd) {
  int p[2];
  if (pipe(p)) return NULL;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    close(p[1]);
    execl(envd, envd, "--version", (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  char buf[128] = "";
  ssize_t n = pid > 0 ? read(p[0], buf, sizeof buf - 1) : -1;
  close(p[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  if (n <= 0) return NULL;
  buf[n] = 0;
  /* The last token that looks like a version. */
  char *v = NULL;
  for (char *t = strtok(buf, " \t\r\n"); t; t = strtok(NULL, " \t\r\n"))
    if (t[0] >= '0' && t[0] <= '9' && strchr(t, '.')) v = t;
  return v ? asbi_strdup(v) : NULL;
}

typedef struct adopt_ctx {
  engine *e;
  unsigned adopted;
} adopt_ctx;

static void on_live(const char *id, void *ctx) {
  adopt_ctx *a = ctx;
  engine *e = a->e;
  sbx *s = reg_load(e, id);
  if (!s) {
    /* a warm-pool sandbox (never handed out) or an interrupted create */
    asbi_log("sandbox %s is alive but has no engine record; killing it", id);
    asbe_sandbox *iso = NULL;
    if (asbe_sandbox_adopt(e->iso, id, &iso) != 0) {
      asbi_log("sandbox %s: cannot adopt it to kill it: %s", id, asbe_errmsg());
      return;
    }
    if (asbe_sandbox_kill(iso, 1) != 0) asbi_log("sandbox %s: kill: %s", id, asbe_errmsg());
    asbe_sandbox_release(iso);
    return;
  }
  if (asbe_sandbox_adopt(e->iso, id, &s->iso) != 0) {
    asbi_log("sandbox %s: cannot adopt: %s", id, asbe_errmsg());
    reg_sbx_free(s);
    return;
  }
  /* A paused sandbox stays frozen; make sure the runtime agrees. */
  if (s->state == SBX_PAUSED) asbe_sandbox_freeze(s->iso);
  /* --pause-swap: a running one never swaps (one made before the option
   * was on could); a paused one keeps what it has out. Without it, one a
   * --pause-swap engine paused (its pages back in RAM: swap_open swapped
   * the file off) swaps as any sandbox again. */
  if ((s->state != SBX_PAUSED || !e->swap_path) && asbe_sandbox_swap_block(s->iso))
    asbi_log("sandbox %s: %s", id, asbe_errmsg());
  /* A running one found frozen: the engine died between freezing it and
   * recording the pause (lifecycle_pause), so nobody was told it paused;
   * as recorded, it runs (swapping forbidden above first, as a resume
   * does). */
  asbe_stats fst;
  if (s->state == SBX_RUNNING && asbe_sandbox_stats(s->iso, &fst) == 0 && fst.frozen &&
      asbe_sandbox_thaw(s->iso))
    asbi_log("sandbox %s: adopted frozen, cannot thaw it: %s", id, asbe_errmsg());
  /* Its network: the engine that left it took its pair away (or this
   * start reaped it); a new one, with its recorded policy. */
  char why[512];
  if (sbxnet_attach(e, s, why, sizeof why) || sbxnet_apply(e, s, NULL, why, sizeof why))
    asbi_log("sandbox %s: adopted without network: %s", id, why);
  reg_add(e, s);
  a->adopted++;
}

/* Whether sandboxes/<id>/engine.json exists (the sandbox was handed out). */
static int recorded(engine *e, const char *id) {
  char p[4200];
  snprintf(p, sizeof p, "%s/sandboxes/%s/engine.json", e->state_dir, id);
  return access(p, F_OK) == 0;
}

/* The record of a sandbox paused without memory whose kept files the
 * reaper left (it keeps "paused" state dirs), or NULL. */
static sbx *paused_nomem_record(engine *e, const char *id) {
  char p[4200];
  snprintf(p, sizeof p, "%s/sandboxes/%s/disk.img", e->state_dir, id);
  if (access(p, F_OK) != 0) return NULL;
  sbx *s = reg_load(e, id);
  if (s && s->state == SBX_RUNNING && asbe_paused_checkpointed(e->iso, id)) {
    /* --pause-criu: the engine died between the dump and recording the
     * pause; its processes are in the checkpoint */
    s->state = SBX_PAUSED;
    s->paused_nomem = s->paused_ckpt = 1;
    reg_save(e, s);
  }
  if (s && s->state == SBX_PAUSED && s->paused_nomem) {
    /* its slot, before any create can take it (after a host reboot the
     * registry is empty); taken, its resume fails and says so */
    if (asbe_paused_hold(e->iso, id)) asbi_log("sandbox %s: %s", id, asbe_errmsg());
    return s;
  }
  reg_sbx_free(s);
  return NULL;
}

/* A sandbox paused with memory before the host rebooted: its processes
 * and memory are gone with that boot, its files are not. Before the
 * reaper would remove them, it becomes a sandbox paused without memory
 * (its runtime record and engine.json both), which connect boots again. A
 * sandbox left running, or whose init died in this boot, is gone as
 * ever. */
static void from_reboot(engine *e, const char *id) {
  sbx *s = id ? reg_load(e, id) : NULL;
  if (s && s->state == SBX_PAUSED && !s->paused_nomem && asbe_paused_from_reboot(e->iso, id) == 0) {
    s->paused_nomem = 1;
    if (reg_save(e, s) == 0)
      asbi_log(
          "sandbox %s: paused with memory before a host reboot: its processes are gone, "
          "its files kept (paused without memory now: connect boots it)",
          id);
    else if (asbe_paused_remove(e->iso, id) == 0) /* kept by the reaper, listed by nobody */
      asbi_log(
          "sandbox %s: paused before a host reboot; cannot record it paused without "
          "memory: removed",
          id);
  }
  reg_sbx_free(s);
}

static void adopt_or_reap(engine *e) {
  /* Remember every recorded sandbox first: the reaper removes dead ones. */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/sandboxes", e->state_dir);
  char **known = NULL;
  size_t nknown = 0;
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.' || !recorded(e, de->d_name)) continue;
    char **v = realloc(known, (nknown + 1) * sizeof *v);
    if (!v) break;
    known = v;
    known[nknown++] = asbi_strdup(de->d_name);
  }
  if (d) closedir(d);
  for (size_t i = 0; i < nknown; i++) from_reboot(e, known[i]);
  reg_load_tombs(e);
  adopt_ctx a = {e, 0};
  asbe_reap_report rep;
  memset(&rep, 0, sizeof rep);
  if (asbe_reap(e->iso, on_live, &a, &rep) != 0) asbi_log("reaper: %s", asbe_errmsg());
  for (size_t i = 0; i < nknown; i++) {
    sbx *s = known[i] ? reg_get(e, known[i]) : NULL;
    if (s) {
      reg_put(e, s);
    } else if (known[i] && (s = paused_nomem_record(e, known[i]))) {
      reg_add(e, s); /* paused without memory: nothing ran to adopt */
      a.adopted++;
    } else if (known[i] && strlen(known[i]) <= ENGINE_ID_LEN) {
      /* Recorded but not alive: it ended while the engine was down. (One
       * without engine.json was never handed out: a warm-pool sandbox or
       * an interrupted create; nobody asks for its id.) */
      char tb[32];
      if (!reg_tomb(e, known[i], tb, sizeof tb)) reg_tomb_add(e, known[i], "engine_restart");
    }
    free(known[i]);
  }
  free(known);
  asbi_log(
      "start-up: adopted %u live sandbox(es); cleaned %u dead, %u cgroup(s), "
      "%u loop device(s), %u file(s)",
      a.adopted, rep.sandboxes, rep.cgroups, rep.loops, rep.files);
}

/* Drops the table's references: sandboxes not killed keep running. */
static void drop_records(engine *e) {
  pthread_mutex_lock(&e->mu);
  sbx **all = e->sbx;
  size_t nall = e->nsbx;
  e->sbx = NULL;
  e->nsbx = e->capsbx = 0;
  pthread_mutex_unlock(&e->mu);
  for (size_t i = 0; i < nall; i++) reg_put(e, all[i]);
  free(all);
}

int engine_open(engine *e, const engine_config *cfg, eng_err *err) {
  if (!(e->state_dir = realpath(cfg->state_dir, NULL)))
    return eng_err_set(err, ENG_EINTERNAL, NULL, "no state dir %s: %s", cfg->state_dir,
                       strerror(errno));
  e->envd_path = realpath(cfg->envd, NULL);
  e->init_path = realpath(cfg->init, NULL);
  if (!e->envd_path || !e->init_path)
    return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot find %s: %s",
                       e->envd_path ? cfg->init : cfg->envd, strerror(errno));
  const char *codei = cfg->codei ? cfg->codei : "";
  e->codei_path = *codei && access(codei, X_OK) == 0 ? realpath(codei, NULL) : NULL;
  if (!e->codei_path)
    asbi_log("no code interpreter at %s: port %d is not served", *codei ? codei : "(none)",
             ASBI_CODE_PORT);
  const char *tdir = cfg->templates_dir ? cfg->templates_dir : "";
  e->templates_dir = *tdir ? realpath(tdir, NULL) : NULL;
  if (*tdir && !e->templates_dir)
    asbi_log("no bundled templates at %s (python-base): %s", tdir, strerror(errno));
  {
    char idir[4200];
    snprintf(idir, sizeof idir, "%s/images", e->state_dir);
    if (mkdir(idir, 0700) < 0 && errno != EEXIST)
      return eng_err_set(err, ENG_EINTERNAL, NULL, "%s: %s", idir, strerror(errno));
    size_t n = 0;
    if (!(e->image_dirs[n++] = realpath(idir, NULL)))
      return eng_err_set(err, ENG_EINTERNAL, NULL, "%s: %s", idir, strerror(errno));
    for (size_t i = 0; i < cfg->nimage_dirs && i < ENGINE_MAX_IMAGE_DIRS; i++) {
      struct stat st;
      char *r = realpath(cfg->image_dirs[i], NULL);
      if (!r || stat(r, &st) < 0 || !S_ISDIR(st.st_mode)) {
        int en = r ? ENOTDIR : errno;
        free(r);
        return eng_err_set(err, ENG_EINVAL, NULL, "--image-dir %s: %s", cfg->image_dirs[i],
                           strerror(en));
      }
      e->image_dirs[n++] = r;
    }
  }
  e->envd_version = envd_version(e->envd_path);
  if (!e->envd_version) e->envd_version = asbi_strdup(ENGINE_ENVD_VERSION_FALLBACK);
  char agent_dir[4096];
  snprintf(agent_dir, sizeof agent_dir, "%s/agent", e->state_dir);
  const char *bins[] = {e->envd_path, e->codei_path};
  if (asbe_agentdir_build(agent_dir, e->init_path, bins, e->codei_path ? 2 : 1))
    return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot assemble the agent dir: %s",
                       asbe_errmsg());
  /* Inside sandboxes the programs are called "envd" and "code-interpreter"
   * whatever their names on the host. */
  const char *host_bins[] = {e->envd_path, e->codei_path};
  const char *names[] = {"envd", "code-interpreter"};
  for (int i = 0; i < 2; i++) {
    if (!host_bins[i]) continue;
    const char *base = strrchr(host_bins[i], '/');
    base = base ? base + 1 : host_bins[i];
    if (strcmp(base, names[i]) == 0) continue;
    char link[4200];
    snprintf(link, sizeof link, "%s/bin/%s", agent_dir, names[i]);
    unlink(link);
    if (symlink(base, link) != 0) asbi_log("cannot link %s: %s", link, strerror(errno));
  }
  asbe_engine_config ic;
  memset(&ic, 0, sizeof ic);
  ic.state_dir = e->state_dir;
  ic.agent_dir = agent_dir;
  ic.cgroup_name = cfg->cgroup_name;
  ic.pool_disk_bytes = cfg->pool > 0 ? 1024ull << 20 : 0;
  ic.pool_target = cfg->pool > 0 ? (unsigned)cfg->pool : 0;
  ic.swap_block = cfg->pause_swap_bytes > 0;
  ic.criu_timeout_ms = (uint64_t)cfg->criu_timeout_s * 1000;
  ic.criu_timeout_per_gib_ms = (uint64_t)cfg->criu_timeout_per_gib_s * 1000;
  ic.criu_disk_reserve_bytes = cfg->criu_disk_reserve;
  if (asbe_engine_open(&ic, &e->iso))
    return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot open the isolation runtime: %s",
                       asbe_errmsg());
  char serr[256];
  if (asbn_secrets_open(e->state_dir, &e->secrets, serr, sizeof serr)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "%s", serr);
    goto fail;
  }
  int vrc = volumes_open(e);
  if (vrc) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot open the volume store: %s", strerror(-vrc));
    goto fail;
  }
  if (sbxnet_open(e, cfg, err)) goto fail;
  /* before the adoption: paused sandboxes an engine left may have pages
   * in the file it left active */
  if (swap_open(e, cfg->pause_swap_bytes, err)) goto fail;
  e->swap_prefetch = cfg->pause_swap_prefetch;
  if (cfg->pause_criu && !(e->criu_path = asbi_strdup(cfg->pause_criu))) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
    goto fail;
  }
  if (templates_init(e)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot prepare the base template");
    goto fail;
  }
  /* E2B's builder API's builds and tags kept from before */
  api_builder_open(e);
  adopt_or_reap(e);
  build_cleanup(e); /* build sandboxes of builds a crash interrupted */
  build_gc(e);      /* builds no template and no live sandbox uses */
  snapshots_gc(e);  /* forks' snapshots no live sandbox uses */
  if (lifecycle_start(e)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot start the lifecycle thread");
    goto fail;
  }
  if (pool_start(e, cfg)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot start the warm pools (see the log)");
    lifecycle_stop(e);
    goto fail;
  }
  return 0;
fail:
  pool_stop(e);
  drop_records(e);
  swap_close(e, 0);
  templates_free(e);
  sbxnet_close(e);
  asbe_engine_close(e->iso);
  e->iso = NULL;
  asbn_secrets_close(e->secrets);
  e->secrets = NULL;
  volumes_close(e);
  return -1;
}

void engine_close(engine *e, int kill_sandboxes) {
  build_stop_all(e);    /* builds under way end now, not at their step's end */
  api_builder_close(e); /* its builds first: they use the runtime */
  pool_stop(e);
  lifecycle_stop(e);
  size_t n = 0;
  sbx **v = reg_list(e, &n);
  int swapped = 0; /* paused sandboxes left with memory in the swap file */
  for (size_t i = 0; v && i < n; i++) {
    asbe_stats st;
    pthread_mutex_lock(&v[i]->mu);
    if (!kill_sandboxes && e->swap_path && v[i]->state == SBX_PAUSED && v[i]->iso &&
        !v[i]->paused_nomem && asbe_sandbox_stats(v[i]->iso, &st) == 0 && st.swap_bytes)
      swapped++;
    pthread_mutex_unlock(&v[i]->mu);
    if (kill_sandboxes) lifecycle_kill(e, v[i], "engine_stopped");
    /* sandboxes left running lose their network until the next engine
     * adopts them: nothing of the datapath outlives the engine */
    else
      sbxnet_detach(e, v[i], 0);
  }
  reg_put_all(e, v, n);
  drop_records(e);
  templates_free(e);      /* kills the warm pools' sandboxes, kill_sandboxes or not */
  swap_close(e, swapped); /* after the kills: what they had in it is free */
  sbxnet_close(e);
  asbe_engine_close(e->iso);
  e->iso = NULL;
  asbn_secrets_close(e->secrets);
  e->secrets = NULL;
  volumes_close(e);
}
