/* Sandbox records: the live table, their persistence next to the isolation
 * runtime's state, and tombstones saying why a sandbox ended.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/pjson.h"
#include "registry.h"

#include "net/policy.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/util.h"

#define TOMBS_MAX 10000

sbx *reg_sbx_new(void) {
  sbx *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->boot_mu, NULL);
  s->auto_pause_memory = 1;
  s->refs = 1;
  s->state = SBX_RUNNING;
  return s;
}

void reg_sbx_free(sbx *s) {
  if (!s) return;
  while (s->idle) {
    upstream *u = s->idle;
    s->idle = u->next;
    close(u->fd);
    free(u);
  }
  if (s->iso) asbe_sandbox_release(s->iso);
  cJSON_Delete(s->metadata);
  cJSON_Delete(s->env_vars);
  cJSON_Delete(s->tmpl_layers);
  cJSON_Delete(s->commands);
  cJSON_Delete(s->tmpl_env);
  cJSON_Delete(s->volume_mounts);
  if (s->net_policy) {
    asbn_policy_free(s->net_policy);
    free(s->net_policy);
  }
  free(s->template_id);
  free(s->alias);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->boot_mu);
  free(s);
}

sbx *reg_get(engine *e, const char *id) {
  sbx *found = NULL;
  pthread_mutex_lock(&e->mu);
  for (size_t i = 0; i < e->nsbx; i++)
    if (strcmp(e->sbx[i]->id, id) == 0) {
      found = e->sbx[i];
      found->refs++;
      break;
    }
  pthread_mutex_unlock(&e->mu);
  return found;
}

void reg_busy_add(sbx *s, sbx_busy *b) {
  b->next = s->busy;
  s->busy = b;
}

void reg_busy_del(sbx *s, sbx_busy *b) {
  for (sbx_busy **pp = &s->busy; *pp; pp = &(*pp)->next)
    if (*pp == b) {
      *pp = b->next;
      break;
    }
}

int reg_shut_busy(sbx *s) {
  int n = 0;
  for (sbx_busy *b = s->busy; b; b = b->next)
    if (*b->fd >= 0 && shutdown(*b->fd, SHUT_RDWR) == 0) n++;
  return n;
}

void reg_put(engine *e, sbx *s) {
  if (!s) return;
  pthread_mutex_lock(&e->mu);
  int last = --s->refs == 0;
  pthread_mutex_unlock(&e->mu);
  if (last) reg_sbx_free(s);
}

int reg_add(engine *e, sbx *s) {
  pthread_mutex_lock(&e->mu);
  if (e->nsbx == e->capsbx) {
    size_t cap = e->capsbx ? e->capsbx * 2 : 64;
    sbx **v = realloc(e->sbx, cap * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&e->mu);
      return -ENOMEM;
    }
    e->sbx = v;
    e->capsbx = cap;
  }
  e->sbx[e->nsbx++] = s;
  pthread_mutex_unlock(&e->mu);
  return 0;
}

static void tomb_append_file(engine *e, const tomb *t) {
  char path[4096];
  snprintf(path, sizeof path, "%s/gone.log", e->state_dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  char line[128];
  int n = snprintf(line, sizeof line, "%s %s %lld\n", t->id, t->reason, (long long)t->ended_ms);
  if (write(fd, line, (size_t)n) != n) asbi_log("cannot record tombstone of %s", t->id);
  close(fd);
}

static void tomb_add_locked(engine *e, const char *id, const char *reason, int64_t when) {
  if (e->ntombs == e->captombs) {
    if (e->captombs >= TOMBS_MAX) { /* forget the oldest half */
      memmove(e->tombs, e->tombs + TOMBS_MAX / 2, (e->ntombs - TOMBS_MAX / 2) * sizeof *e->tombs);
      e->ntombs -= TOMBS_MAX / 2;
    } else {
      size_t cap = e->captombs ? e->captombs * 2 : 256;
      tomb *v = realloc(e->tombs, cap * sizeof *v);
      if (!v) return;
      e->tombs = v;
      e->captombs = cap;
    }
  }
  tomb *t = &e->tombs[e->ntombs++];
  snprintf(t->id, sizeof t->id, "%s", id);
  snprintf(t->reason, sizeof t->reason, "%s", reason);
  t->ended_ms = when;
}

void reg_remove(engine *e, sbx *s, const char *reason) {
  int found = 0;
  pthread_mutex_lock(&e->mu);
  for (size_t i = 0; i < e->nsbx; i++)
    if (e->sbx[i] == s) {
      e->sbx[i] = e->sbx[--e->nsbx];
      found = 1;
      break;
    }
  if (found) {
    tomb_add_locked(e, s->id, reason, asbi_unix_ms());
    tomb_append_file(e, &e->tombs[e->ntombs - 1]);
  }
  pthread_mutex_unlock(&e->mu);
  if (found && e->sandbox_gone) e->sandbox_gone(e, s->id); /* its loopback URLs close */
  if (found) reg_put(e, s);                                /* the table's reference */
}

void reg_tomb_add(engine *e, const char *id, const char *reason) {
  pthread_mutex_lock(&e->mu);
  tomb_add_locked(e, id, reason, asbi_unix_ms());
  if (e->ntombs) tomb_append_file(e, &e->tombs[e->ntombs - 1]);
  pthread_mutex_unlock(&e->mu);
}

const char *reg_tomb(engine *e, const char *id, char *buf, size_t len) {
  const char *r = NULL;
  pthread_mutex_lock(&e->mu);
  for (size_t i = e->ntombs; i-- > 0;)
    if (strcmp(e->tombs[i].id, id) == 0) {
      snprintf(buf, len, "%s", e->tombs[i].reason);
      r = buf;
      break;
    }
  pthread_mutex_unlock(&e->mu);
  return r;
}

void reg_load_tombs(engine *e) {
  char path[4096];
  snprintf(path, sizeof path, "%s/gone.log", e->state_dir);
  FILE *f = fopen(path, "re");
  if (!f) return;
  char id[64], reason[64];
  long long when;
  pthread_mutex_lock(&e->mu);
  while (fscanf(f, "%63s %63s %lld", id, reason, &when) == 3)
    if (strlen(id) <= ENGINE_ID_LEN) tomb_add_locked(e, id, reason, when);
  pthread_mutex_unlock(&e->mu);
  fclose(f);
  /* Rewrite compactly so the file does not grow without bound. */
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *o = fopen(tmp, "we");
  if (!o) return;
  pthread_mutex_lock(&e->mu);
  for (size_t i = 0; i < e->ntombs; i++)
    fprintf(o, "%s %s %lld\n", e->tombs[i].id, e->tombs[i].reason, (long long)e->tombs[i].ended_ms);
  pthread_mutex_unlock(&e->mu);
  if (fclose(o) == 0) rename(tmp, path);
}

sbx **reg_list(engine *e, size_t *n) {
  pthread_mutex_lock(&e->mu);
  sbx **v = malloc((e->nsbx ? e->nsbx : 1) * sizeof *v);
  *n = 0;
  if (v) {
    for (size_t i = 0; i < e->nsbx; i++) {
      v[i] = e->sbx[i];
      v[i]->refs++;
    }
    *n = e->nsbx;
  }
  pthread_mutex_unlock(&e->mu);
  return v;
}

void reg_put_all(engine *e, sbx **v, size_t n) {
  for (size_t i = 0; i < n; i++) reg_put(e, v[i]);
  free(v);
}

/* ---- persistence ------------------------------------------------------------ */

static void record_path(engine *e, const char *id, char *out, size_t len) {
  snprintf(out, len, "%s/sandboxes/%s/engine.json", e->state_dir, id);
}

int reg_save(engine *e, sbx *s) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return -ENOMEM;
  pthread_mutex_lock(&s->mu);
  cJSON_AddStringToObject(j, "id", s->id);
  cJSON_AddStringToObject(j, "token", s->token);
  cJSON_AddStringToObject(j, "trafficToken", s->traffic_token);
  cJSON_AddStringToObject(j, "templateID", s->template_id ? s->template_id : "");
  cJSON_AddStringToObject(j, "alias", s->alias ? s->alias : "");
  cJSON_AddItemToObject(j, "metadata",
                        s->metadata ? cJSON_Duplicate(s->metadata, 1) : cJSON_CreateObject());
  cJSON_AddItemToObject(j, "envVars",
                        s->env_vars ? cJSON_Duplicate(s->env_vars, 1) : cJSON_CreateObject());
  cJSON_AddNumberToObject(j, "startedMs", (double)s->started_ms);
  cJSON_AddNumberToObject(j, "endMs", (double)s->end_ms);
  cJSON_AddBoolToObject(j, "autoPause", s->auto_pause);
  cJSON_AddBoolToObject(j, "autoPauseMemory", s->auto_pause_memory);
  cJSON_AddBoolToObject(j, "autoResume", s->auto_resume);
  cJSON_AddNumberToObject(j, "timeoutS", s->timeout_s);
  if (s->state == SBX_PAUSED) cJSON_AddBoolToObject(j, "pausedMemory", !s->paused_nomem);
  /* pausedMemory false beside it: an engine that knows no checkpoints
   * boots it on its files */
  if (s->state == SBX_PAUSED && s->paused_ckpt) cJSON_AddBoolToObject(j, "pausedCheckpoint", 1);
  cJSON_AddNumberToObject(j, "cpuCount", s->cpu_count);
  cJSON_AddNumberToObject(j, "memoryMB", s->memory_mb);
  cJSON_AddNumberToObject(j, "diskMB", s->disk_mb);
  cJSON_AddStringToObject(j, "state", s->state == SBX_PAUSED ? "paused" : "running");
  if (s->tmpl_layers)
    cJSON_AddItemToObject(j, "templateLayers", cJSON_Duplicate(s->tmpl_layers, 1));
  if (s->commands) cJSON_AddItemToObject(j, "customCommands", cJSON_Duplicate(s->commands, 1));
  if (s->tmpl_env) cJSON_AddItemToObject(j, "templateEnv", cJSON_Duplicate(s->tmpl_env, 1));
  if (s->commands_port) cJSON_AddNumberToObject(j, "commandsPort", s->commands_port);
  if (s->fork_mode[0]) cJSON_AddStringToObject(j, "forkMode", s->fork_mode);
  if (s->volume_mounts)
    cJSON_AddItemToObject(j, "volumeMounts", cJSON_Duplicate(s->volume_mounts, 1));
  if (s->net_policy) {
    /* E2B's shape, plus the upstream proxy's password GET never shows */
    cJSON_AddBoolToObject(j, "allowInternetAccess", s->net_policy->allow_internet);
    cJSON_AddItemToObject(j, "network", asbn_policy_to_json(s->net_policy));
    if (s->net_policy->egress_proxy_pass)
      cJSON_AddStringToObject(j, "egressProxyPassword", s->net_policy->egress_proxy_pass);
  }
  pthread_mutex_unlock(&s->mu);
  char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  if (!text) return -ENOMEM;
  char path[4096], tmp[4200];
  record_path(e, s->id, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int rc = 0;
  if (fd < 0) {
    rc = -errno;
  } else {
    /* No fsync (it was one on every create, 1-10 ms on this VM's disk):
     * a record matters only while its sandbox's processes live, and they
     * do not outlive the machine; an engine that crashes leaves the page
     * cache, so the next one reads what was written. write + rename keep
     * a reader from ever seeing half a record. */
    size_t n = strlen(text);
    if (write(fd, text, n) != (ssize_t)n) rc = -EIO;
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0) rc = -errno;
  }
  free(text);
  return rc;
}

sbx *reg_load(engine *e, const char *id) {
  char path[4096];
  record_path(e, id, path, sizeof path);
  asbi_buf b = ASBI_BUF_INIT;
  cJSON *j = asbi_buf_read_file(&b, path, 1u << 20) == 0 && b.data
                 ? asbi_pj_parse(b.data, b.len, NULL)
                 : NULL;
  asbi_buf_free(&b);
  if (!j) return NULL;
  sbx *s = reg_sbx_new();
  const char *str = NULL;
  if (!s) goto fail;
  if (asbi_pj_get_str(j, "id", &str) != 0 || !str || strcmp(str, id) != 0) goto fail;
  snprintf(s->id, sizeof s->id, "%s", id);
  str = NULL;
  asbi_pj_get_str(j, "token", &str);
  snprintf(s->token, sizeof s->token, "%s", str ? str : "");
  str = NULL;
  asbi_pj_get_str(j, "trafficToken", &str);
  snprintf(s->traffic_token, sizeof s->traffic_token, "%s", str ? str : "");
  /* a record from before traffic tokens: one now (a code interpreter
   * started from here on takes it) */
  if (!s->traffic_token[0] && asbi_random_hex(s->traffic_token, 40)) goto fail;
  str = NULL;
  asbi_pj_get_str(j, "templateID", &str);
  s->template_id = asbi_strdup(str ? str : "base");
  str = NULL;
  asbi_pj_get_str(j, "alias", &str);
  s->alias = asbi_strdup(str ? str : "");
  s->metadata = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(j, "metadata"), 1);
  s->env_vars = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(j, "envVars"), 1);
  const cJSON *v;
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "startedMs")) && cJSON_IsNumber(v))
    s->started_ms = (int64_t)v->valuedouble;
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "endMs")) && cJSON_IsNumber(v))
    s->end_ms = (int64_t)v->valuedouble;
  s->auto_pause = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "autoPause"));
  /* records from before pause modes: memory kept, no auto-resume */
  s->auto_pause_memory = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "autoPauseMemory"));
  s->auto_resume = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "autoResume"));
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "timeoutS")) && cJSON_IsNumber(v))
    s->timeout_s = v->valueint;
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "cpuCount"))) s->cpu_count = v->valueint;
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "memoryMB"))) s->memory_mb = v->valueint;
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "diskMB"))) s->disk_mb = v->valueint;
  str = NULL;
  asbi_pj_get_str(j, "state", &str);
  s->state = str && strcmp(str, "paused") == 0 ? SBX_PAUSED : SBX_RUNNING;
  s->paused_nomem =
      s->state == SBX_PAUSED && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "pausedMemory"));
  s->paused_ckpt =
      s->paused_nomem && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "pausedCheckpoint"));
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "templateLayers")) && cJSON_IsArray(v))
    s->tmpl_layers = cJSON_Duplicate(v, 1);
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "customCommands")) && cJSON_IsArray(v))
    s->commands = cJSON_Duplicate(v, 1);
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "templateEnv")) && cJSON_IsObject(v))
    s->tmpl_env = cJSON_Duplicate(v, 1);
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "commandsPort")) && cJSON_IsNumber(v))
    s->commands_port = v->valueint;
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "volumeMounts")) && cJSON_IsArray(v))
    s->volume_mounts = cJSON_Duplicate(v, 1);
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "forkMode")) && cJSON_IsString(v) &&
      (!strcmp(v->valuestring, "processes") || !strcmp(v->valuestring, "files")))
    snprintf(s->fork_mode, sizeof s->fork_mode, "%s", v->valuestring);
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "network")) && cJSON_IsObject(v)) {
    const cJSON *pw = cJSON_GetObjectItemCaseSensitive(j, "egressProxyPassword");
    const cJSON *px = cJSON_GetObjectItemCaseSensitive(v, "egressProxy");
    if (cJSON_IsString(pw) && cJSON_IsObject(px))
      cJSON_AddItemToObject((cJSON *)px, "password", cJSON_CreateString(pw->valuestring));
    s->net_policy = calloc(1, sizeof *s->net_policy);
    char why[256];
    if (!s->net_policy ||
        asbn_policy_parse(cJSON_GetObjectItemCaseSensitive(j, "allowInternetAccess"), v,
                          s->net_policy, why, sizeof why) != 0) {
      /* a record this engine wrote: refusing everything beats opening it */
      asbi_log("sandbox %s: its recorded network policy does not parse; it gets none", id);
      free(s->net_policy);
      s->net_policy = calloc(1, sizeof *s->net_policy);
      if (!s->net_policy) goto fail;
    }
  }
  if (!s->template_id || !s->alias) goto fail;
  cJSON_Delete(j);
  return s;
fail:
  cJSON_Delete(j);
  reg_sbx_free(s);
  return NULL;
}
