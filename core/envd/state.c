/* envd: the process-wide state set at startup and by /init (g_envd): the
 * access token, the default user and workdir, the /init environment
 * variables, and the limits fixed by the command line.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "httpd/httpd.h"
#include "state.h"
#include "util/buf.h"
#include "util/util.h"

envd_state g_envd = {.lock = PTHREAD_MUTEX_INITIALIZER, .init_lock = PTHREAD_MUTEX_INITIALIZER};

char *envd_default_user(void) {
  pthread_mutex_lock(&g_envd.lock);
  char *s = asbi_strdup(g_envd.default_user);
  pthread_mutex_unlock(&g_envd.lock);
  return s;
}

char *envd_default_workdir(void) {
  pthread_mutex_lock(&g_envd.lock);
  char *s = asbi_strdup(g_envd.default_workdir);
  pthread_mutex_unlock(&g_envd.lock);
  return s;
}

char *envd_token(void) {
  pthread_mutex_lock(&g_envd.lock);
  char *s = asbi_strdup(g_envd.access_token);
  pthread_mutex_unlock(&g_envd.lock);
  return s;
}

char **envd_env_snapshot(size_t *n) {
  pthread_mutex_lock(&g_envd.lock);
  char **v = calloc(g_envd.n_envs + 1, sizeof *v);
  size_t k = 0;
  for (size_t i = 0; v && i < g_envd.n_envs; i++) {
    asbi_buf b = ASBI_BUF_INIT;
    asbi_buf_printf(&b, "%s=%s", g_envd.envs[i].key, g_envd.envs[i].value);
    v[k++] = asbi_buf_detach(&b, NULL);
  }
  pthread_mutex_unlock(&g_envd.lock);
  *n = k;
  return v;
}

void envd_strv_free(char **v) {
  if (!v) return;
  for (size_t i = 0; v[i]; i++) free(v[i]);
  free(v);
}

/* Lock held. */
static void env_set(const char *k, const char *v, int internal) {
  for (size_t i = 0; i < g_envd.n_envs; i++) {
    if (strcmp(g_envd.envs[i].key, k) == 0) {
      if (g_envd.envs[i].internal && !internal) return;
      if (strcmp(g_envd.envs[i].value, v) != 0) g_envd.env_gen++;
      free(g_envd.envs[i].value);
      g_envd.envs[i].value = asbi_strdup(v);
      g_envd.envs[i].internal = internal;
      return;
    }
  }
  g_envd.env_gen++;
  envd_env_var *n = realloc(g_envd.envs, (g_envd.n_envs + 1) * sizeof *g_envd.envs);
  if (!n) return;
  g_envd.envs = n;
  g_envd.envs[g_envd.n_envs++] = (envd_env_var){asbi_strdup(k), asbi_strdup(v), internal};
}

void envd_env_set_internal(const char *key, const char *value) {
  pthread_mutex_lock(&g_envd.lock);
  env_set(key, value, 1);
  pthread_mutex_unlock(&g_envd.lock);
}

void envd_env_replace(const cJSON *obj) {
  pthread_mutex_lock(&g_envd.lock);
  for (size_t i = 0; i < g_envd.n_envs;) {
    envd_env_var *e = &g_envd.envs[i];
    if (!e->internal && !cJSON_GetObjectItemCaseSensitive(obj, e->key)) {
      free(e->key);
      free(e->value);
      g_envd.envs[i] = g_envd.envs[--g_envd.n_envs];
      g_envd.env_gen++;
      continue;
    }
    i++;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, obj) {
    if (cJSON_IsString(it) && it->string && it->string[0] && !strchr(it->string, '='))
      env_set(it->string, it->valuestring, 0);
  }
  pthread_mutex_unlock(&g_envd.lock);
}

uint64_t envd_env_gen(void) {
  pthread_mutex_lock(&g_envd.lock);
  uint64_t g = g_envd.env_gen;
  pthread_mutex_unlock(&g_envd.lock);
  return g;
}

cJSON *envd_env_json(void) {
  cJSON *o = cJSON_CreateObject();
  pthread_mutex_lock(&g_envd.lock);
  for (size_t i = 0; i < g_envd.n_envs; i++)
    cJSON_AddStringToObject(o, g_envd.envs[i].key, g_envd.envs[i].value);
  pthread_mutex_unlock(&g_envd.lock);
  return o;
}

void envd_state_free(void) {
  pthread_mutex_lock(&g_envd.lock);
  free(g_envd.access_token);
  free(g_envd.default_user);
  free(g_envd.default_workdir);
  for (size_t i = 0; i < g_envd.n_envs; i++) {
    free(g_envd.envs[i].key);
    free(g_envd.envs[i].value);
  }
  free(g_envd.envs);
  for (size_t i = 0; i < g_envd.n_cgroups; i++) free(g_envd.cgroups[i]);
  free(g_envd.cgroups);
  for (size_t i = 0; g_envd.cgroup_procs && g_envd.cgroup_procs[i]; i++)
    free(g_envd.cgroup_procs[i]);
  free(g_envd.cgroup_procs);
  g_envd.cgroup_procs = NULL;
  free(g_envd.oom_counter);
  free(g_envd.path_env);
  g_envd.access_token = g_envd.default_user = g_envd.default_workdir = NULL;
  g_envd.envs = NULL;
  g_envd.n_envs = 0;
  g_envd.cgroups = NULL;
  g_envd.n_cgroups = 0;
  g_envd.oom_counter = g_envd.path_env = NULL;
  g_envd.last_init_ts = 0;
  pthread_mutex_unlock(&g_envd.lock);
}

int envd_state_init(const envd_init *in) {
  pthread_mutex_lock(&g_envd.init_lock);
  /* E2B's guard: once a token is set, only the same token may re-init
   * (without MMDS there is no other source of truth). A rotation: the
   * current token in the header, a new one in the body. */
  char *cur = envd_token();
  const char *reqtok = in->access_token && in->access_token[0] ? in->access_token : NULL;
  const char *auth = in->auth_token && in->auth_token[0] ? in->auth_token : NULL;
  int same = reqtok && cur && asbi_httpd_token_eq(cur, reqtok);
  int rotate = reqtok && cur && auth && asbi_httpd_token_eq(cur, auth);
  if (cur && !same && !rotate) {
    free(cur);
    pthread_mutex_unlock(&g_envd.init_lock);
    return reqtok ? ENVD_INIT_BAD_TOKEN : ENVD_INIT_RESET_DENIED;
  }
  free(cur);
  pthread_mutex_lock(&g_envd.lock);
  int apply = !in->has_timestamp || in->timestamp_ns > g_envd.last_init_ts;
  if (apply && in->has_timestamp) g_envd.last_init_ts = in->timestamp_ns;
  if (apply) {
    free(g_envd.access_token);
    g_envd.access_token = reqtok ? asbi_strdup(reqtok) : NULL;
    if (in->default_user && in->default_user[0]) {
      free(g_envd.default_user);
      g_envd.default_user = asbi_strdup(in->default_user);
    }
    if (in->default_workdir && in->default_workdir[0]) {
      free(g_envd.default_workdir);
      g_envd.default_workdir = asbi_strdup(in->default_workdir);
    }
  }
  pthread_mutex_unlock(&g_envd.lock);
  if (apply && in->env_vars) envd_env_replace(in->env_vars);
  pthread_mutex_unlock(&g_envd.init_lock);
  return apply ? ENVD_INIT_APPLIED : ENVD_INIT_STALE;
}
