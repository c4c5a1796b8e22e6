/* mcp-gateway's --config reader (gwconf.h). SPDX-License-Identifier: Apache-2.0 */
#include "gwconf.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pjson.h"

#define GW_MAX_CMD 65536

static char *dup_s(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* A name part of github/<owner>/<repo>: GitHub's characters. */
static int name_ok(const char *s, size_t n) {
  if (n == 0 || n > 100) return 0;
  if (n == 1 && s[0] == '.') return 0;
  if (n == 2 && s[0] == '.' && s[1] == '.') return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '-' || ch == '_' || ch == '.'))
      return 0;
  }
  return 1;
}

/* An environment variable's name: [A-Za-z_][A-Za-z0-9_]*. */
static int env_name_ok(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9')) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return 0;
  return 1;
}

static int cmd_ok(const char *s) {
  return *s && strlen(s) <= GW_MAX_CMD;
}

void gw_conf_free(gw_conf *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++) {
    gw_server_conf *s = &c->servers[i];
    free(s->key);
    free(s->prefix);
    free(s->run_cmd);
    free(s->install_cmd);
    if (s->envs)
      for (char **e = s->envs; *e; e++) free(*e);
    free(s->envs);
  }
  free(c->servers);
  c->servers = NULL;
  c->n = 0;
}

static int server_parse(const cJSON *item, gw_server_conf *s, char *err, size_t n) {
  const char *key = item->string;
  if (strncmp(key, "github/", 7) != 0) {
    snprintf(err, n,
             "MCP server '%.100s' is one of E2B's catalog servers, which run from Docker "
             "images: this sandbox has no image store and no internet to get one; use a "
             "\"github/<owner>/<repo>\" entry with a runCmd that starts a stdio server here",
             key);
    return -1;
  }
  const char *owner = key + 7, *slash = strchr(owner, '/');
  const char *repo = slash ? slash + 1 : NULL;
  if (!slash || !name_ok(owner, (size_t)(slash - owner)) || !name_ok(repo, strlen(repo))) {
    snprintf(err, n, "MCP server '%.200s': the key must be github/<owner>/<repo>", key);
    return -1;
  }
  if (!cJSON_IsObject(item)) {
    snprintf(err, n, "MCP server '%.200s': expected an object {runCmd, installCmd?, envs?}", key);
    return -1;
  }
  const cJSON *f;
  cJSON_ArrayForEach(f, item) {
    if (strcmp(f->string, "runCmd") && strcmp(f->string, "installCmd") &&
        strcmp(f->string, "envs")) {
      snprintf(err, n, "MCP server '%.200s': unknown field '%.100s'", key, f->string);
      return -1;
    }
  }
  const cJSON *run = cJSON_GetObjectItemCaseSensitive(item, "runCmd");
  const cJSON *inst = cJSON_GetObjectItemCaseSensitive(item, "installCmd");
  const cJSON *envs = cJSON_GetObjectItemCaseSensitive(item, "envs");
  if (!cJSON_IsString(run) || !cmd_ok(run->valuestring)) {
    snprintf(err, n, "MCP server '%.200s': runCmd must be a non-empty string", key);
    return -1;
  }
  if (inst && !cJSON_IsNull(inst) && (!cJSON_IsString(inst) || !cmd_ok(inst->valuestring))) {
    snprintf(err, n, "MCP server '%.200s': installCmd must be a non-empty string", key);
    return -1;
  }
  if (envs && !cJSON_IsNull(envs) && !cJSON_IsObject(envs)) {
    snprintf(err, n, "MCP server '%.200s': envs must be an object of strings", key);
    return -1;
  }
  s->key = dup_s(key);
  s->prefix = dup_s(repo);
  s->run_cmd = dup_s(run->valuestring);
  s->install_cmd = cJSON_IsString(inst) ? dup_s(inst->valuestring) : NULL;
  int ne = cJSON_IsObject(envs) ? cJSON_GetArraySize(envs) : 0;
  if (ne > GW_MAX_ENVS) {
    snprintf(err, n, "MCP server '%.200s': more than %d envs", key, GW_MAX_ENVS);
    return -1;
  }
  s->envs = calloc((size_t)ne + 1, sizeof *s->envs);
  if (!s->key || !s->prefix || !s->run_cmd || (cJSON_IsString(inst) && !s->install_cmd) ||
      !s->envs) {
    snprintf(err, n, "out of memory");
    return -1;
  }
  /* the prefix becomes part of tool names: [A-Za-z0-9_-] only */
  for (char *p = s->prefix; *p; p++)
    if (*p == '.') *p = '_';
  if (!strcmp(s->prefix, "sandbox")) {
    snprintf(err, n, "MCP server '%.200s': the tool prefix 'sandbox.' is the gateway's own tools'",
             key);
    return -1;
  }
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, envs) {
    if (!env_name_ok(e->string) || !cJSON_IsString(e)) {
      snprintf(err, n,
               "MCP server '%.200s': envs.%.100s must be a string named [A-Za-z_][A-Za-z0-9_]*",
               key, e->string);
      return -1;
    }
    size_t kl = strlen(e->string), vl = strlen(e->valuestring);
    char *kv = malloc(kl + vl + 2);
    if (!kv) {
      snprintf(err, n, "out of memory");
      return -1;
    }
    memcpy(kv, e->string, kl);
    kv[kl] = '=';
    memcpy(kv + kl + 1, e->valuestring, vl + 1);
    s->envs[i++] = kv;
  }
  return 0;
}

int gw_conf_parse(const char *json, size_t len, gw_conf *out, char *err, size_t n) {
  out->servers = NULL;
  out->n = 0;
  const char *perr = NULL;
  cJSON *root = asbi_pj_parse(json, len, &perr);
  if (!root) {
    snprintf(err, n, "--config is not valid JSON: %s", perr ? perr : "parse error");
    return -1;
  }
  int rc = -1;
  if (!cJSON_IsObject(root)) {
    snprintf(err, n, "--config must be a JSON object of MCP servers");
    goto done;
  }
  int cnt = cJSON_GetArraySize(root);
  if (cnt == 0) {
    snprintf(err, n, "--config names no MCP server");
    goto done;
  }
  if (cnt > GW_MAX_SERVERS) {
    snprintf(err, n, "--config names more than %d MCP servers", GW_MAX_SERVERS);
    goto done;
  }
  out->servers = calloc((size_t)cnt, sizeof *out->servers);
  if (!out->servers) {
    snprintf(err, n, "out of memory");
    goto done;
  }
  const cJSON *item;
  cJSON_ArrayForEach(item, root) {
    gw_server_conf *s = &out->servers[out->n++];
    if (server_parse(item, s, err, n) != 0) goto done;
    for (size_t j = 0; j + 1 < out->n; j++) {
      if (!strcmp(out->servers[j].key, s->key)) {
        snprintf(err, n, "MCP server '%.200s' is named twice", s->key);
        goto done;
      }
      if (!strcmp(out->servers[j].prefix, s->prefix)) {
        snprintf(err, n, "MCP servers '%.200s' and '%.200s' would share the tool prefix '%.100s.'",
                 out->servers[j].key, s->key, s->prefix);
        goto done;
      }
    }
  }
  rc = 0;
done:
  cJSON_Delete(root);
  if (rc != 0) gw_conf_free(out);
  return rc;
}
