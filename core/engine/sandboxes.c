/* The sandbox operations (see sandboxes.h): the policy of create, lookup,
 * list, kill, timeouts, pause, resume/connect, metrics and logs, on the
 * registry, the lifecycle thread, the templates and the isolation runtime.
 * SPDX-License-Identifier: Apache-2.0 */
#include "sandboxes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundled.h"
#include "codei.h"
#include "lifecycle.h"
#include "sbxexec.h"
#include "sbxnet.h"
#include "templates.h"
#include "tstart.h"
#include "volumes.h"
#include "util/log.h"
#include "util/util.h"

#define ENVD_READY_MS 10000
/* how long create waits for a code-interpreter template's /health */
#define CODEI_READY_MS 30000
#define LOGS_READ_MAX (16u << 20)
#define LOG_LINE_MAX 4096

/* ---- create ------------------------------------------------------------------------ */

static int wait_envd(sbx *s) {
  int64_t deadline = asbi_unix_ms() + ENVD_READY_MS;
  useconds_t nap = 100;
  for (;;) {
    int fd = asbe_sandbox_connect_unix(s->iso, "envd.sock");
    if (fd >= 0) {
      close(fd);
      return 0;
    }
    if (!asbe_sandbox_alive(s->iso)) return -ESRCH;
    if (asbi_unix_ms() >= deadline) return -ETIMEDOUT;
    usleep(nap);
    if (nap < 5000) nap *= 2;
  }
}

/* A (re)started sandbox's network attached with the default policy, then
 * its envd answering: what create, a fork's restore and resume all do
 * before they talk to it. whose names it in the error ("the sandbox's",
 * "the fork's", "\"<id>\"'s"). 0, or the error set. */
static int connect_and_wait(engine *e, sbx *s, const char *whose, eng_err *err) {
  char why[512];
  if (sbxnet_attach(e, s, why, sizeof why) || sbxnet_apply(e, s, NULL, why, sizeof why))
    return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot connect %s network: %s", whose, why);
  int rc = wait_envd(s);
  if (rc)
    return eng_err_set(err, ENG_EINTERNAL, NULL, "%s agent did not start: %s", whose,
                       strerror(-rc));
  return 0;
}

/* envd's /init: the sandbox's env vars, its access token, the defaults.
 * The first one (prepare) sets the token: envd has none yet, so it goes
 * without one. A claim's second one carries the claimant's env vars and is
 * authenticated by the token already set (envd's guard: only the same
 * token may re-init), with no timestamp, so envd applies it whatever its
 * clock says about the first. */
static int init_envd_as(engine *e, sbx *s, int again, const char *auth) {
  cJSON *init = cJSON_CreateObject();
  cJSON *env = cJSON_Duplicate(s->env_vars, 1);
  /* the programs that bring their own CA bundle are pointed at the
   * sandbox's, which holds the engine's CA (its portal's https) and, with
   * network, the egress CA; the sandbox's env vars win */
  static const char *const ca_vars[] = {"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS",
                                        "REQUESTS_CA_BUNDLE"};
  int ca = env && sbxnet_ca_installed(e, s->iso);
  for (size_t i = 0; ca && i < sizeof ca_vars / sizeof ca_vars[0]; i++)
    if (!cJSON_GetObjectItemCaseSensitive(env, ca_vars[i]))
      cJSON_AddStringToObject(env, ca_vars[i], SBXNET_CA_BUNDLE);
  cJSON_AddItemToObject(init, "envVars", env);
  cJSON_AddStringToObject(init, "accessToken", s->token);
  cJSON_AddStringToObject(init, "defaultUser", "user");
  cJSON_AddStringToObject(init, "defaultWorkdir", "/home/user");
  if (!again) {
    char ts[40];
    asbi_rfc3339_ms(asbi_unix_ms(), ts);
    cJSON_AddStringToObject(init, "timestamp", ts);
  }
  char *body = cJSON_PrintUnformatted(init);
  cJSON_Delete(init);
  int st = body ? sbx_envd_request(s->iso,
                                   auth    ? auth
                                   : again ? s->token
                                           : "",
                                   "POST", "/init", body, NULL, 5000)
                : -ENOMEM;
  free(body);
  return st;
}

static int init_envd(engine *e, sbx *s, int again) {
  return init_envd_as(e, s, again, NULL);
}

/* The isolated sandbox of s (its id, limits) on tmpl (t's layers, or the
 * ones s was made on), with envd and the code interpreter as t wants
 * them; resume: the paused one booted again on its kept files. 0 or a
 * negative errno (asbe_errmsg). */
static int start_iso_criu(engine *e, const template_info *t, const asbe_template *tmpl, sbx *s,
                          int resume, const char *criu, const char *fork_of, asbe_sandbox **out) {
  const char *args[] = {"--unix", "/run/asb/envd.sock", NULL};
  char **argv = asbe_agent_argv("envd", args);
  asbe_sandbox_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.id = s->id;
  spec.tmpl = tmpl;
  spec.memory_bytes = (uint64_t)s->memory_mb << 20;
  spec.pids_max = 1024;
  spec.cpu_millicores = (uint32_t)s->cpu_count * 1000;
  spec.disk_bytes = (uint64_t)s->disk_mb << 20;
  spec.agent_argv = (const char *const *)argv;
  spec.resolv_conf = sbxnet_resolv_conf(e);
  spec.extra_ca_pem = sbxnet_ca_pem(e);
  spec.resume = resume;
  spec.criu = criu;
  spec.fork_of = fork_of;
  /* the code interpreter's token hashes (codei.c), also for a restore: a
   * fork's interpreter takes its own from there */
  char *tokf = e->codei_path ? codei_token_file(s) : NULL;
  const char *rf[] = {CODEI_TOKEN_FILE, tokf, NULL};
  spec.run_files = tokf ? rf : NULL;
  /* The code interpreter, asb-init's aux agent: started with the sandbox for
   * the code-interpreter templates (Python importing ipykernel dominates the
   * first run_code, so the kernel warms while envd starts), on the first
   * request for port 49999 otherwise. */
  char **aux = codei_aux_argv(e, s);
  spec.aux_argv = (const char *const *)aux;
  spec.aux_on_demand = !t->start_codei;
  int rc =
      argv && ((aux && tokf) || !e->codei_path) ? asbe_sandbox_create(e->iso, &spec, out) : -ENOMEM;
  if (rc == 0 && !criu) s->codei_started = aux && t->start_codei;
  free(tokf);
  free(argv);
  codei_argv_free(aux);
  return rc;
}

static int start_iso(engine *e, const template_info *t, const asbe_template *tmpl, sbx *s,
                     int resume, asbe_sandbox **out) {
  return start_iso_criu(e, t, tmpl, s, resume, NULL, NULL, out);
}

/* The criu that restores a checkpoint: --pause-criu's, else the default
 * one if it is there (an engine started without the option still
 * restores what one with it paused), else NULL (boot it). */
static const char *restore_criu(engine *e) {
  if (e->criu_path) return e->criu_path;
  return access(ENGINE_DEFAULT_CRIU, X_OK) == 0 ? ENGINE_DEFAULT_CRIU : NULL;
}

/* What s takes of its template t: its ids, size, layers, commands. */
static void of_template(sbx *s, const template_info *t) {
  s->template_id = asbi_strdup(t->id);
  s->alias = asbi_strdup(t->alias);
  s->cpu_count = t->cpu_count;
  s->memory_mb = t->memory_mb;
  s->disk_mb = t->disk_mb;
  /* a snapshot's layers too: build_gc keeps them while s runs */
  if (t->snap_source && !t->spec) s->tmpl_layers = templates_layers_json(t);
  if (t->spec) {
    s->tmpl_layers = templates_layers_json(t);
    s->commands = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t->spec, "commands"), 1);
    s->tmpl_env = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t->spec, "env"), 1);
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(t->spec, "commandsPort");
    s->commands_port = cJSON_IsNumber(cp) ? cp->valueint : 9000;
  }
}

/* The prepare half of create: everything that depends only on the
 * template, and so can be done ahead of time for a warm pool (pool.c): the
 * id and tokens (drawn here, shown to nobody until a create hands the
 * sandbox out, and never to two claimants: a pooled sandbox is claimed
 * once), the isolated sandbox with its cgroups, limits, disk and mounts,
 * envd up with its token, the template's start command and ready check,
 * the code interpreter. Not registered, no engine.json: an engine that
 * dies with it prepared kills it at the next start (no record). */
int sandboxes_prepare(engine *e, template_info *t, const cJSON *env_vars, sbx **out, eng_err *err) {
  return sandboxes_prepare_vols(e, t, env_vars, NULL, out, err);
}

int sandboxes_prepare_vols(engine *e, template_info *t, const cJSON *env_vars,
                           const cJSON *volume_mounts, sbx **out, eng_err *err) {
  *out = NULL;
  eng_err_clear(err);
  int rc;
  sbx *s = reg_sbx_new();
  if (!s) return eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
  s->env_vars = env_vars ? cJSON_Duplicate(env_vars, 1) : cJSON_CreateObject();
  if (!s->env_vars) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
    goto out;
  }
  if (asbi_random_alnum(s->id, ENGINE_ID_LEN) || asbi_random_hex(s->token, 40) ||
      asbi_random_hex(s->traffic_token, 40)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "no randomness available");
    goto out;
  }
  of_template(s, t);

  /* Volumes: binds of their filesystems on a copy of the template made for
   * this sandbox (volumes.c; iso idmaps them to its user namespace) */
  asbe_template *vt = NULL;
  if (volume_mounts && cJSON_GetArraySize(volume_mounts)) {
    char why[512] = "out of memory";
    if (!(s->volume_mounts = cJSON_Duplicate(volume_mounts, 1)) ||
        !(vt = asbe_template_copy(t->tmpl)) ||
        volumes_add_to(e, volume_mounts, vt, why, sizeof why)) {
      asbe_template_free(vt);
      eng_err_set(err, ENG_EINTERNAL, NULL, "cannot mount the volumes: %s", why);
      goto out;
    }
  }
  rc = start_iso(e, t, vt ? vt : t->tmpl, s, 0, &s->iso);
  asbe_template_free(vt); /* its mount fds: the sandbox has its clones */
  if (rc) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot create the sandbox: %s", asbe_errmsg());
    goto out;
  }
  /* From here a failure must undo the sandbox: create is transactional.
   * Its network: attached now (a pooled sandbox too), with the default
   * policy (internet on, as for the template's start command), and the
   * claimant's policy applied in personalise. */
  if (connect_and_wait(e, s, "the sandbox's", err)) goto undo;
  int st = init_envd(e, s, 0);
  if (st < 200 || st >= 300) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "the sandbox's agent refused /init (%s)",
                st < 0 ? strerror(-st) : "HTTP error");
    goto undo;
  }
  /* A template's start command and ready check: create returns once the
   * check passes, or fails (and undoes the sandbox) naming it. */
  if (t->spec) {
    char why[4096];
    if (tstart_run(e, s, t, why, sizeof why)) {
      eng_err_set(err, ENG_EINTERNAL, "template_start_failed", "%s", why);
      asbi_log("sandbox %s: %s", s->id, why);
      goto undo;
    }
  }
  /* Code-interpreter templates: create returns once the interpreter is up,
   * as E2B's does (its kernel warmed while envd started). */
  if (s->codei_started && (rc = codei_wait_ready(e, s, CODEI_READY_MS)))
    asbi_log(
        "sandbox %s: the code interpreter is not ready after create's wait (%s); "
        "its first call will wait for it",
        s->id, strerror(-rc));
  *out = s;
  return 0;
undo:
  sbxnet_detach(e, s, 1);
  asbe_sandbox_kill(s->iso, 1);
out:
  reg_sbx_free(s);
  return -1;
}

/* Whether a create may take a pooled sandbox of t: the claimant's env vars
 * reach envd at the claim (/init), and a code-interpreter template's
 * interpreter, already running with its kernels, takes them at the claim
 * too (POST /envs: its own environment, its kernels', kept across its
 * restarts). A template's start command got its environment in prepare,
 * and so did the on-demand interpreter of other templates (its argv is
 * fixed when asb-init starts, though it runs later): a create with env
 * vars gets a fresh sandbox of those. */
static int pool_fits(engine *e, const template_info *t, const sandboxes_create_req *rq) {
  if (!rq->env_vars || !cJSON_GetArraySize(rq->env_vars)) return 1;
  const cJSON *start = t->spec ? cJSON_GetObjectItemCaseSensitive(t->spec, "start") : NULL;
  if (start && !cJSON_IsNull(start)) return 0;
  return !e->codei_path || t->start_codei;
}

/* The claim half of create: what is the claimant's. Its env vars (a
 * pooled sandbox's envd gets them by a second /init), metadata, lifetime
 * and autoPause, its start time; then the record (engine.json) and the
 * table: from here it is listed, routed to and timed. On failure the
 * caller still owns s (and kills it). */
static int personalise(engine *e, template_info *t, sbx *s, const sandboxes_create_req *rq,
                       int pooled, eng_err *err) {
  s->metadata = rq->metadata ? cJSON_Duplicate(rq->metadata, 1) : cJSON_CreateObject();
  s->auto_pause = rq->auto_pause != 0;
  s->auto_pause_memory = !rq->auto_pause_no_memory;
  s->auto_resume = rq->auto_resume != 0;
  if (!s->metadata) return eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
  /* Also without env vars: an envd that asb-init restarted while the
   * sandbox sat in the pool has no token; this /init gives it the
   * claimant's before anyone can reach it. */
  if (pooled) {
    cJSON *env = rq->env_vars ? cJSON_Duplicate(rq->env_vars, 1) : cJSON_CreateObject();
    if (!env) return eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
    cJSON_Delete(s->env_vars);
    s->env_vars = env;
    int st = init_envd(e, s, 1);
    if (st < 200 || st >= 300)
      return eng_err_set(err, ENG_EINTERNAL, NULL, "the sandbox's agent refused /init (%s)",
                         st < 0 ? strerror(-st) : "HTTP error");
    /* the interpreter and its kernels, up since prepare (pool_fits) */
    if (s->codei_started && cJSON_GetArraySize(env) && (st = codei_set_envs(e, s, env)))
      return eng_err_set(err, ENG_EINTERNAL, NULL,
                         "the code interpreter did not take the env vars (%s)", strerror(-st));
  }
  /* the claimant's network policy, before anyone can reach the sandbox */
  char nwhy[512];
  if (sbxnet_apply(e, s, rq->network, nwhy, sizeof nwhy))
    return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot connect the sandbox's network: %s", nwhy);
  /* its portal (portal.c): a pooled one prepared before the port was open has none yet */
  if (e->sandbox_netns) e->sandbox_netns(e, s, 1);
  int timeout_s = rq->timeout_s > 0 ? rq->timeout_s : SANDBOXES_DEFAULT_TIMEOUT_S;
  s->timeout_s = timeout_s;
  s->started_ms = asbi_unix_ms();
  s->end_ms = s->started_ms + (int64_t)timeout_s * 1000;
  int rc;
  if ((rc = reg_save(e, s)))
    return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot record the sandbox: %s", strerror(-rc));
  pthread_mutex_lock(&e->tmpl_mu);
  t->spawn_count++;
  t->last_spawned_ms = s->started_ms;
  pthread_mutex_unlock(&e->tmpl_mu);
  /* Not yet visible to anyone: one reference for the table, one for the
   * caller. */
  s->refs = 2;
  if (reg_add(e, s)) {
    s->refs = 1;
    return eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
  }
  lifecycle_kick(e); /* a new deadline */
  return 0;
}

int sandboxes_create(engine *e, const sandboxes_create_req *rq, sbx **out, eng_err *err) {
  *out = NULL;
  eng_err_clear(err);
  if (bundled_ensure(e, rq->template_id, err)) return -1;
  template_info *t = templates_find(e, rq->template_id);
  if (!t)
    return eng_err_set(err, ENG_ENOTFOUND, NULL, "template \"%s\" not found", rq->template_id);
  __atomic_add_fetch(&e->creates, 1, __ATOMIC_RELAXED); /* the refill waits */
  sbx *s = NULL;
  /* A warm one if the pool has it: one that died idle (its envd refuses
   * the claim's /init) is killed and the next tried, then a fresh one. */
  int fits = pool_fits(e, t, rq);
  /* volumes are mounted when a sandbox is made: none of the pool has them */
  int vols = rq->volume_mounts && cJSON_GetArraySize(rq->volume_mounts);
  while (!vols && (s = templates_pool_take(e, t, fits))) {
    if (asbe_sandbox_alive(s->iso) && personalise(e, t, s, rq, 1, err) == 0) break;
    asbi_log("sandbox %s: pooled sandbox unusable (%s); killed", s->id,
             err->message[0] ? err->message : "it died");
    sbxnet_detach(e, s, 1);
    asbe_sandbox_kill(s->iso, 1);
    reg_sbx_free(s);
    s = NULL;
    eng_err_clear(err);
  }
  if (!s && sandboxes_prepare_vols(e, t, rq->env_vars, rq->volume_mounts, &s, err) == 0 &&
      personalise(e, t, s, rq, 0, err) != 0) {
    sbxnet_detach(e, s, 1);
    asbe_sandbox_kill(s->iso, 1);
    reg_sbx_free(s);
    s = NULL;
  }
  __atomic_store_n(&e->last_create_ms, asbi_unix_ms(), __ATOMIC_RELAXED);
  __atomic_sub_fetch(&e->creates, 1, __ATOMIC_RELAXED);
  templates_put(e, t);
  *out = s;
  return s ? 0 : -1;
}

/* ---- a fork with its processes (--pause-criu) ----------------------------------- */

int sandboxes_fork_restore(engine *e, const sandboxes_create_req *rq, const char *parent_id,
                           const char *parent_token, int codei_started, sbx **out, eng_err *err) {
  *out = NULL;
  eng_err_clear(err);
  if (!e->criu_path) return eng_err_set(err, ENG_ECONFLICT, NULL, "the engine runs without criu");
  template_info *t = templates_find(e, rq->template_id);
  if (!t)
    return eng_err_set(err, ENG_ENOTFOUND, NULL, "template \"%s\" not found", rq->template_id);
  sbx *s = reg_sbx_new();
  int rc;
  if (!s) {
    templates_put(e, t);
    return eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
  }
  s->env_vars = rq->env_vars ? cJSON_Duplicate(rq->env_vars, 1) : cJSON_CreateObject();
  if (!s->env_vars || asbi_random_alnum(s->id, ENGINE_ID_LEN) || asbi_random_hex(s->token, 40) ||
      asbi_random_hex(s->traffic_token, 40)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory or no randomness");
    goto out;
  }
  of_template(s, t);
  snprintf(s->fork_mode, sizeof s->fork_mode, "processes");
  int64_t t0 = asbi_unix_ms();
  if ((rc = start_iso_criu(e, t, t->tmpl, s, 0, e->criu_path, parent_id, &s->iso))) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot restore the fork: %s", asbe_errmsg());
    goto out;
  }
  s->codei_started = codei_started; /* its interpreter (or not) as the parent's */
  if (connect_and_wait(e, s, "the fork's", err)) goto undo;
  /* envd came back with the parent's token: the fork's own replaces it,
   * authenticated by the parent's (the only one it takes), before anyone
   * else can reach it; the parent's is refused from here */
  int st = init_envd_as(e, s, 1, parent_token);
  if (st < 200 || st >= 300) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "the fork's agent refused its new token (%s)",
                st < 0 ? strerror(-st) : "HTTP error");
    goto undo;
  }
  if (personalise(e, t, s, rq, 0, err)) goto undo;
  asbi_log("sandbox %s: forked from %s with its processes (restored in %lld ms)", s->id, parent_id,
           (long long)(asbi_unix_ms() - t0));
  templates_put(e, t);
  *out = s;
  return 0;
undo:
  sbxnet_detach(e, s, 1);
  asbe_sandbox_kill(s->iso, 1);
out:
  reg_sbx_free(s);
  templates_put(e, t);
  return -1;
}

/* ---- lookup and list ------------------------------------------------------------- */

int sandboxes_get(engine *e, const char *id, sbx **out, eng_err *err) {
  *out = NULL;
  sbx *s = reg_get(e, id);
  char why[32] = "";
  if (s) {
    pthread_mutex_lock(&s->mu);
    if (s->state == SBX_DEAD) snprintf(why, sizeof why, "%s", s->end_reason);
    pthread_mutex_unlock(&s->mu);
    if (!why[0]) {
      *out = s;
      return 0;
    }
    reg_put(e, s); /* being killed right now: already gone for callers */
  } else {
    reg_tomb(e, id, why, sizeof why);
  }
  if (why[0]) return eng_err_set(err, ENG_ENOTFOUND, why, "sandbox \"%s\" is gone (%s)", id, why);
  return eng_err_set(err, ENG_ENOTFOUND, NULL, "sandbox \"%s\" not found", id);
}

/* 1 if every key of want has the same string value in have. */
static int meta_match(const cJSON *have, const cJSON *want) {
  const cJSON *it;
  cJSON_ArrayForEach(it, want) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(have, it->string);
    if (!cJSON_IsString(it) || !cJSON_IsString(v) || strcmp(v->valuestring, it->valuestring))
      return 0;
  }
  return 1;
}

/* The list's order: newest first, ties by id; ascending is its exact
 * reverse. */
static int key_desc(int64_t xs, const char *xid, int64_t ys, const char *yid) {
  if (xs != ys) return xs < ys ? 1 : -1;
  return strcmp(xid, yid);
}

static int by_start_desc(const void *a, const void *b) {
  const sbx *x = *(sbx *const *)a, *y = *(sbx *const *)b;
  return key_desc(x->started_ms, x->id, y->started_ms, y->id);
}

static int by_start_asc(const void *a, const void *b) {
  return by_start_desc(b, a);
}

int sandboxes_list(engine *e, const sandboxes_filter *f, sandboxes_page *out, eng_err *err) {
  memset(out, 0, sizeof *out);
  size_t n = 0;
  sbx **v = reg_list(e, &n);
  if (!v) return eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
  qsort(v, n, sizeof *v, f->ascending ? by_start_asc : by_start_desc);
  int cursor = f->cursor_id && *f->cursor_id;
  size_t keep = 0;
  for (size_t i = 0; i < n; i++) {
    sbx *s = v[i];
    int paused = s->state == SBX_PAUSED, take = 1;
    if (s->state == SBX_DEAD || (paused && !f->paused) || (!paused && !f->running))
      take = 0;
    else if (f->metadata && !meta_match(s->metadata, f->metadata))
      take = 0;
    else if (f->template_id && *f->template_id && strcmp(f->template_id, s->template_id) &&
             strcmp(f->template_id, s->alias))
      take = 0;
    else if (f->started_after_ms && s->started_ms < f->started_after_ms)
      take = 0;
    if (take) {
      if (!paused) out->running++;
      int c = cursor ? key_desc(s->started_ms, s->id, f->cursor_ms, f->cursor_id) : 1;
      if (cursor && (f->ascending ? c >= 0 : c <= 0)) {
        take = 0; /* on an earlier page */
      } else if (f->limit && (int64_t)keep == f->limit) {
        out->more = 1;
        take = 0;
      }
    }
    if (take)
      v[keep++] = s; /* the page keeps this reference */
    else
      reg_put(e, s);
  }
  out->v = v;
  out->n = keep;
  return 0;
}

void sandboxes_page_free(engine *e, sandboxes_page *p) {
  reg_put_all(e, p->v, p->n);
  memset(p, 0, sizeof *p);
}

/* ---- one sandbox ---------------------------------------------------------------- */

void sandboxes_kill(engine *e, sbx *s) {
  lifecycle_kill(e, s, "killed");
}

void sandboxes_set_timeout(engine *e, sbx *s, int seconds) {
  pthread_mutex_lock(&s->mu);
  s->end_ms = asbi_unix_ms() + (int64_t)seconds * 1000;
  pthread_mutex_unlock(&s->mu);
  reg_save(e, s);
  lifecycle_kick(e);
}

/* The lifetime lasts at least until now + seconds. */
static void extend(sbx *s, int seconds) {
  int64_t want = asbi_unix_ms() + (int64_t)seconds * 1000;
  pthread_mutex_lock(&s->mu);
  if (want > s->end_ms) s->end_ms = want;
  pthread_mutex_unlock(&s->mu);
}

void sandboxes_extend(engine *e, sbx *s, int seconds) {
  extend(s, seconds);
  reg_save(e, s);
  lifecycle_kick(e);
}

int sandboxes_pause(engine *e, sbx *s, int memory, eng_err *err) {
  int rc = lifecycle_pause(e, s, memory);
  if (rc == 0) return 0;
  if (rc == -EALREADY)
    return eng_err_set(err, ENG_ECONFLICT, NULL, "sandbox \"%s\" is already paused", s->id);
  return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot pause sandbox \"%s\": %s", s->id,
                     asbe_errmsg());
}

/* The layers s was made on: t's own, or (t rebuilt since) those recorded
 * for s, which the engine keeps while s exists (build.c), with t's binds.
 * NULL without memory. *made: the caller frees it. */
static const asbe_template *layers_of(const template_info *t, const sbx *s, asbe_template **made) {
  *made = NULL;
  cJSON *now = templates_layers_json(t);
  int same = !s->tmpl_layers || (now && cJSON_Compare(now, s->tmpl_layers, 1));
  cJSON_Delete(now);
  if (same) return t->tmpl;
  asbe_template *m = asbe_template_new();
  const cJSON *it;
  cJSON_ArrayForEach(it, s->tmpl_layers) {
    if (!m || !cJSON_IsString(it) || asbe_template_add_layer(m, it->valuestring)) goto fail;
  }
  for (size_t i = 0; i < asbe_template_bind_count(t->tmpl); i++) {
    const char *dst = NULL, *src = asbe_template_bind(t->tmpl, i, &dst);
    if (asbe_template_add_bind(m, src, dst)) goto fail;
  }
  *made = m;
  return m;
fail:
  asbe_template_free(m);
  return NULL;
}

/* Boots a sandbox paused without memory (under boot_mu, state paused): a
 * fresh asb-init on its kept files, envd with the same access token (the
 * clients' tokens still work), the template's start command and ready
 * check, the code interpreter; a new boot_id. On failure it stays paused. */
static int boot(engine *e, sbx *s, eng_err *err) {
  template_info *t = templates_find(e, s->template_id);
  if (!t && s->alias && *s->alias) t = templates_find(e, s->alias);
  if (!t)
    return eng_err_set(err, ENG_EINTERNAL, NULL,
                       "cannot resume sandbox \"%s\": its template \"%s\" is gone", s->id,
                       s->template_id);
  asbe_template *made = NULL, *vt = NULL;
  const asbe_template *tmpl = layers_of(t, s, &made);
  /* its volumes again, as at create */
  if (tmpl && s->volume_mounts && cJSON_GetArraySize(s->volume_mounts)) {
    char why[512] = "out of memory";
    if (!(vt = asbe_template_copy(tmpl)) ||
        volumes_add_to(e, s->volume_mounts, vt, why, sizeof why)) {
      asbe_template_free(vt);
      asbe_template_free(made);
      templates_put(e, t);
      return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot resume sandbox \"%s\": its volumes: %s",
                         s->id, why);
    }
    tmpl = vt;
  }
  asbe_sandbox *iso = NULL;
  int rc = -ENOMEM, restored = 0;
  if (tmpl && s->paused_ckpt) {
    /* paused with memory to its disk: its checkpoint restored; failing
     * that, booted on its files (its memory is lost: logged) */
    const char *criu = restore_criu(e);
    int64_t t0 = asbi_unix_ms();
    if (!criu)
      asbi_log(
          "sandbox %s: no criu to restore its checkpoint (--pause-criu, %s): booting it "
          "on its files",
          s->id, ENGINE_DEFAULT_CRIU);
    else if ((rc = start_iso_criu(e, t, tmpl, s, 1, criu, NULL, &iso)) == 0)
      restored = 1;
    else
      asbi_log(
          "sandbox %s: cannot restore its checkpoint (%s): booting it on its files, "
          "its processes and memory are lost",
          s->id, asbe_errmsg());
    if (restored)
      asbi_log("sandbox %s: checkpoint restored in %lld ms", s->id,
               (long long)(asbi_unix_ms() - t0));
    if (asbe_paused_checkpoint_drop(e->iso, s->id))
      asbi_log("sandbox %s: %s", s->id, asbe_errmsg());
    pthread_mutex_lock(&s->mu);
    s->paused_ckpt = 0;
    pthread_mutex_unlock(&s->mu);
    if (!restored) s->codei_started = 0;
  }
  if (tmpl && !restored) rc = start_iso(e, t, tmpl, s, 1, &iso);
  asbe_template_free(vt);
  asbe_template_free(made);
  if (rc) {
    templates_put(e, t);
    return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot resume sandbox \"%s\": %s", s->id,
                       rc == -ENOMEM ? "out of memory" : asbe_errmsg());
  }
  pthread_mutex_lock(&s->mu);
  asbe_sandbox *old = s->iso;
  s->iso = iso;
  pthread_mutex_unlock(&s->mu);
  if (old) asbe_sandbox_release(old);
  char whose[ENGINE_ID_LEN + 8];
  snprintf(whose, sizeof whose, "\"%s\"'s", s->id);
  if (connect_and_wait(e, s, whose, err)) goto undo;
  char why[4096];
  if (restored) { /* envd, the start command, the code interpreter: as they were */
    templates_put(e, t);
    return 0;
  }
  int st = init_envd(e, s, 0);
  if (st < 200 || st >= 300) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "the agent of \"%s\" refused /init (%s)", s->id,
                st < 0 ? strerror(-st) : "HTTP error");
    goto undo;
  }
  if (t->spec && tstart_run(e, s, t, why, sizeof why)) {
    eng_err_set(err, ENG_EINTERNAL, "template_start_failed", "%s", why);
    goto undo;
  }
  if (s->codei_started && (rc = codei_wait_ready(e, s, CODEI_READY_MS)))
    asbi_log("sandbox %s: the code interpreter is not ready after resume's wait (%s)", s->id,
             strerror(-rc));
  templates_put(e, t);
  return 0;
undo:
  asbi_log("sandbox %s: %s", s->id, err->message);
  sbxnet_detach(e, s, 1);
  if (asbe_sandbox_stop(s->iso)) asbi_log("sandbox %s: stop: %s", s->id, asbe_errmsg());
  s->codei_started = 0;
  templates_put(e, t);
  return -1;
}

int sandboxes_connect(engine *e, sbx *s, int seconds, int resume_only, int *resumed, eng_err *err) {
  *resumed = 0;
  pthread_mutex_lock(&s->boot_mu); /* one boot at a time; a second connect waits for it */
  pthread_mutex_lock(&s->mu);
  int was_paused = s->state == SBX_PAUSED, nomem = s->paused_nomem, dead = s->state == SBX_DEAD;
  pthread_mutex_unlock(&s->mu);
  if (dead) {
    pthread_mutex_unlock(&s->boot_mu);
    return eng_err_set(err, ENG_ENOTFOUND, s->end_reason, "sandbox \"%s\" is gone (%s)", s->id,
                       s->end_reason);
  }
  if (resume_only && !was_paused) {
    pthread_mutex_unlock(&s->boot_mu);
    return eng_err_set(err, ENG_ECONFLICT, NULL, "sandbox \"%s\" is already running", s->id);
  }
  if (was_paused && nomem) {
    int64_t t0 = asbi_unix_ms();
    pthread_mutex_lock(&s->mu);
    int ckpt = s->paused_ckpt;
    pthread_mutex_unlock(&s->mu);
    if (boot(e, s, err)) {
      pthread_mutex_unlock(&s->boot_mu);
      return -1;
    }
    pthread_mutex_lock(&s->mu);
    s->state = SBX_RUNNING;
    s->paused_nomem = 0;
    s->end_ms = 0; /* extend below */
    pthread_mutex_unlock(&s->mu);
    asbi_log("sandbox %s: %s (%lld ms)", s->id,
             ckpt ? "resumed from its checkpoint (or booted if that failed: above)"
                  : "booted again (resume without memory)",
             (long long)(asbi_unix_ms() - t0));
    extend(s, seconds);
    *resumed = 1;
    was_paused = 0;
  }
  pthread_mutex_unlock(&s->boot_mu);
  /* The new lifetime first: a sandbox thawed with its old, passed
   * deadline would be paused again by the lifecycle thread at once. */
  extend(s, seconds);
  if (was_paused) {
    if (lifecycle_resume(e, s))
      return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot resume sandbox \"%s\": %s", s->id,
                         asbe_errmsg());
    asbi_log("sandbox %s: resumed", s->id);
    *resumed = 1;
  }
  reg_save(e, s);
  lifecycle_kick(e);
  return 0;
}

int sandboxes_set_network(engine *e, sbx *s, const asbn_policy *p, eng_err *err) {
  if (!e->dp)
    return eng_err_set(err, ENG_ECONFLICT, NULL,
                       "the engine runs with --no-network: sandboxes have loopback only");
  char why[512];
  if (sbxnet_apply(e, s, p, why, sizeof why))
    return eng_err_set(err, ENG_EINTERNAL, NULL, "cannot update the network of \"%s\": %s", s->id,
                       why);
  reg_save(e, s);
  asbi_log("sandbox %s: network updated", s->id);
  return 0;
}

/* ---- metrics and logs -------------------------------------------------------------- */

size_t sandboxes_metrics(engine *e, sbx *s, int64_t start, int64_t end,
                         sbx_metric out[ENGINE_METRICS_RING]) {
  lifecycle_sample(e, s); /* include "now" */
  size_t n = 0;
  pthread_mutex_lock(&s->mu);
  for (unsigned i = 0; i < s->ring_n; i++) {
    unsigned at = (s->ring_at + ENGINE_METRICS_RING - s->ring_n + i) % ENGINE_METRICS_RING;
    const sbx_metric *m = &s->ring[at];
    if ((start && m->ts < start) || (end && m->ts > end)) continue;
    out[n++] = *m;
  }
  pthread_mutex_unlock(&s->mu);
  return n;
}

int sandboxes_metric_now(engine *e, sbx *s, sbx_metric *out) {
  lifecycle_sample(e, s);
  pthread_mutex_lock(&s->mu);
  int have = s->ring_n > 0;
  if (have) *out = s->ring[(s->ring_at + ENGINE_METRICS_RING - 1) % ENGINE_METRICS_RING];
  pthread_mutex_unlock(&s->mu);
  return have;
}

int sandboxes_logs(engine *e, sbx *s, int64_t limit, char ***lines, size_t *n, eng_err *err) {
  (void)e;
  *lines = NULL;
  *n = 0;
  int lfd = s->iso ? asbe_sandbox_agent_log(s->iso) : -1; /* paused without memory, adopted */
  if (lfd < 0) return 0;
  FILE *f = fdopen(lfd, "r");
  if (!f) {
    close(lfd);
    return 0;
  }
  char line[LOG_LINE_MAX];
  size_t read_total = 0, cap = 0;
  int rc = 0;
  while ((int64_t)*n < limit && read_total < LOGS_READ_MAX && fgets(line, sizeof line, f)) {
    size_t len = strlen(line);
    read_total += len;
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (!asbi_utf8_valid(line, len)) continue;
    if (*n == cap) {
      size_t nc = cap ? cap * 2 : 64;
      char **nv = realloc(*lines, nc * sizeof *nv);
      if (!nv) {
        rc = eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
        break;
      }
      *lines = nv;
      cap = nc;
    }
    if (!((*lines)[*n] = asbi_strdup(line))) {
      rc = eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
      break;
    }
    (*n)++;
  }
  fclose(f);
  if (rc) {
    sandboxes_lines_free(*lines, *n);
    *lines = NULL;
    *n = 0;
  }
  return rc;
}

void sandboxes_lines_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}
