/* Warm pools: the refill thread. For every template whose pool is below
 * its target (pool_target), it prepares one sandbox at a time with
 * sandboxes_prepare (create's first half: namespaces, cgroups and limits,
 * disk, mounts, asb-init, envd initialised with a token of its own, the
 * start command, the code interpreter) and puts it into the template's
 * pool (templates.c); sandboxes_create takes one and personalises it.
 *
 * Rate: one sandbox at a time, on one thread; while foreground creates are
 * under way, or one returned less than REFILL_QUIET_MS ago (its caller's
 * first commands follow at once), it waits, up to REFILL_YIELD_MS, so
 * they have the CPUs first;
 * a template whose prepare failed is left alone for REFILL_BACKOFF_MS.
 * Memory: no refill while MemAvailable is below e->pool_min_avail, so a
 * pool never takes the memory sandboxes in use need. Pooled sandboxes that
 * die idle are swept out about once a second.
 * SPDX-License-Identifier: Apache-2.0 */
#include "pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry.h"
#include "sandboxes.h"
#include "sbxnet.h"
#include "templates.h"
#include "util/log.h"
#include "util/util.h"

#define REFILL_YIELD_MS 250
#define REFILL_QUIET_MS 100
#define REFILL_BACKOFF_MS 5000
#define REFILL_IDLE_MS 2000
#define REFILL_SWEEP_MS 1000

int pool_parse(const char *arg, char **name, int *n) {
  const char *eq = arg ? strrchr(arg, '=') : NULL;
  if (!eq || eq == arg || (size_t)(eq - arg) > 128 || eq[1] < '0' || eq[1] > '9') return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(eq + 1, &end, 10);
  if (errno || end == eq + 1 || *end || v < 0 || v > POOL_SIZE_MAX) return -1;
  if (!(*name = strndup(arg, (size_t)(eq - arg)))) return -1;
  *n = (int)v;
  return 0;
}

int pool_target(engine *e, const template_info *t) {
  for (size_t i = 0; i < e->npool; i++)
    if (!strcmp(e->pool_names[i], t->id) || (t->alias && !strcmp(e->pool_names[i], t->alias)))
      return e->pool_sizes[i];
  const cJSON *p = t->spec ? cJSON_GetObjectItemCaseSensitive(t->spec, "pool") : NULL;
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "size");
  return cJSON_IsNumber(n) ? n->valueint : 0;
}

uint64_t pool_memory(engine *e, const template_info *t) {
  uint64_t sum = 0;
  pthread_mutex_lock(&e->tmpl_mu);
  for (sbx *s = t->pool; s; s = s->pool_next) {
    asbe_stats st;
    if (asbe_sandbox_stats(s->iso, &st) == 0) sum += st.memory_bytes;
  }
  pthread_mutex_unlock(&e->tmpl_mu);
  return sum;
}

cJSON *pool_json(engine *e, const template_info *t) {
  uint64_t mem = pool_memory(e, t);
  pthread_mutex_lock(&e->tmpl_mu);
  unsigned ready = t->pool_ready;
  uint64_t claims = t->pool_claims, misses = t->pool_misses;
  pthread_mutex_unlock(&e->tmpl_mu);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "target", pool_target(e, t));
  cJSON_AddNumberToObject(j, "ready", ready);
  cJSON_AddNumberToObject(j, "claims", (double)claims);
  cJSON_AddNumberToObject(j, "misses", (double)misses);
  cJSON_AddNumberToObject(j, "memoryBytes", (double)mem);
  cJSON_AddNumberToObject(j, "memoryBytesPerSandbox", ready ? (double)(mem / ready) : 0);
  /* below its target and not refilled: the host is short of memory */
  cJSON_AddBoolToObject(
      j, "heldByMemory",
      (int)ready < pool_target(e, t) && __atomic_load_n(&e->pool_low_mem, __ATOMIC_RELAXED));
  return j;
}

/* MemAvailable of /proc/meminfo in bytes (UINT64_MAX if unreadable: no
 * bound then rather than no pool). */
static uint64_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "re");
  if (!f) return UINT64_MAX;
  char line[128];
  unsigned long long kb = 0;
  int have = 0;
  while (!have && fgets(line, sizeof line, f))
    have = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
  fclose(f);
  return have ? (uint64_t)kb << 10 : UINT64_MAX;
}

/* Waits on pool_cv (tmpl_mu held) at most ms. */
static void nap_locked(engine *e, int64_t ms) {
  struct timespec ts = asbi_deadline(CLOCK_MONOTONIC, ms);
  pthread_cond_timedwait(&e->pool_cv, &e->tmpl_mu, &ts);
}

/* The template furthest below its target (referenced), or NULL. At most
 * every REFILL_SWEEP_MS, first takes dead sandboxes out of every pool (so
 * they are refilled, and hold no cgroups and disks till a claim finds
 * them). */
static template_info *pick(engine *e, int64_t now, int64_t *last_sweep) {
  size_t n = 0;
  template_info **v = templates_snapshot(e, &n);
  template_info *best = NULL;
  long best_gap = 0;
  int sweep = now - *last_sweep >= REFILL_SWEEP_MS;
  if (sweep) *last_sweep = now;
  for (size_t i = 0; v && i < n; i++) {
    if (sweep) templates_pool_sweep(e, v[i]);
    int want = pool_target(e, v[i]);
    pthread_mutex_lock(&e->tmpl_mu);
    long gap = v[i]->pool_closed || now - v[i]->pool_fail_ms < REFILL_BACKOFF_MS
                   ? 0
                   : (long)want - (long)v[i]->pool_ready;
    pthread_mutex_unlock(&e->tmpl_mu);
    if (gap > best_gap) {
      best = v[i];
      best_gap = gap;
    }
  }
  if (best) templates_hold(e, best);
  templates_put_all(e, v, n);
  return best;
}

static void *refill(void *arg) {
  engine *e = arg;
  int low_mem_said = 0;
  int64_t last_sweep = 0;
  pthread_mutex_lock(&e->tmpl_mu);
  while (!e->pool_stop) {
    pthread_mutex_unlock(&e->tmpl_mu);
    template_info *t = pick(e, asbi_unix_ms(), &last_sweep);
    uint64_t avail = t ? mem_available() : UINT64_MAX;
    pthread_mutex_lock(&e->tmpl_mu);
    if (!t) {
      nap_locked(e, REFILL_IDLE_MS);
      continue;
    }
    __atomic_store_n(&e->pool_low_mem, avail < e->pool_min_avail, __ATOMIC_RELAXED);
    if (avail < e->pool_min_avail) {
      if (!low_mem_said)
        asbi_log("warm pools: not refilling while MemAvailable (%llu MiB) is below %llu MiB",
                 (unsigned long long)(avail >> 20), (unsigned long long)(e->pool_min_avail >> 20));
      low_mem_said = 1;
      pthread_mutex_unlock(&e->tmpl_mu);
      templates_put(e, t);
      pthread_mutex_lock(&e->tmpl_mu);
      nap_locked(e, REFILL_IDLE_MS);
      continue;
    }
    low_mem_said = 0;
    /* Foreground creates first (a burst claims; the refill follows). */
    int64_t now = asbi_unix_ms(), until = now + REFILL_YIELD_MS;
    while (!e->pool_stop && now < until &&
           (__atomic_load_n(&e->creates, __ATOMIC_RELAXED) > 0 ||
            now - __atomic_load_n(&e->last_create_ms, __ATOMIC_RELAXED) < REFILL_QUIET_MS)) {
      nap_locked(e, 10);
      now = asbi_unix_ms();
    }
    if (e->pool_stop || t->pool_closed) {
      pthread_mutex_unlock(&e->tmpl_mu);
      templates_put(e, t);
      pthread_mutex_lock(&e->tmpl_mu);
      continue;
    }
    e->pool_busy = t;
    pthread_mutex_unlock(&e->tmpl_mu);
    sbx *s = NULL;
    eng_err err;
    if (sandboxes_prepare(e, t, NULL, &s, &err) == 0) {
      s->pooled_ms = asbi_unix_ms();
      if (templates_pool_put(e, t, s)) { /* drained or stopping meanwhile */
        sbxnet_detach(e, s, 1);
        asbe_sandbox_kill(s->iso, 1);
        reg_sbx_free(s);
      }
    } else {
      asbi_log("template %s: warm pool: cannot prepare a sandbox (%s); retrying in %d s", t->alias,
               err.message, REFILL_BACKOFF_MS / 1000);
      pthread_mutex_lock(&e->tmpl_mu);
      t->pool_fail_ms = asbi_unix_ms();
      pthread_mutex_unlock(&e->tmpl_mu);
    }
    templates_put(e, t); /* before a drain that waits for it goes on */
    pthread_mutex_lock(&e->tmpl_mu);
    e->pool_busy = NULL;
    pthread_cond_broadcast(&e->pool_cv);
  }
  pthread_mutex_unlock(&e->tmpl_mu);
  return NULL;
}

int pool_start(engine *e, const engine_config *cfg) {
  e->pool_min_avail = cfg->pool_min_avail_mb << 20;
  if (cfg->npool_templates) {
    e->pool_names = calloc(cfg->npool_templates, sizeof *e->pool_names);
    e->pool_sizes = calloc(cfg->npool_templates, sizeof *e->pool_sizes);
    if (!e->pool_names || !e->pool_sizes) return -1;
  }
  for (size_t i = 0; i < cfg->npool_templates; i++) {
    if (pool_parse(cfg->pool_templates[i], &e->pool_names[e->npool], &e->pool_sizes[e->npool])) {
      asbi_log("--pool-template %s: not NAME=N (N 0..%d)", cfg->pool_templates[i], POOL_SIZE_MAX);
      return -1;
    }
    e->npool++;
  }
  e->pool_stop = 0;
  if (pthread_create(&e->pool_thread, NULL, refill, e)) return -1;
  e->pool_running = 1;
  return 0;
}

void pool_stop(engine *e) {
  if (!e->pool_running) return;
  pthread_mutex_lock(&e->tmpl_mu);
  e->pool_stop = 1;
  pthread_cond_broadcast(&e->pool_cv);
  pthread_mutex_unlock(&e->tmpl_mu);
  pthread_join(e->pool_thread, NULL);
  e->pool_running = 0;
}
