/* The E2B control plane of the local engine, its HTTP front: create,
 * list, get, kill, timeouts, pause/resume/connect, metrics, logs (and the
 * template routes of api_templates.c). It checks the JSON of a request,
 * calls the operation (sandboxes.c) and writes the result with E2B's
 * fields, status codes and error bodies ({"code": <int>, "message": ...}).
 * SPDX-License-Identifier: Apache-2.0 */
#include "api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_secrets.h"
#include "api_builder.h"
#include "api_templates.h"
#include "eng_err.h"
#include "net/policy.h"
#include "proto/pjson.h"
#include "proto/url.h"
#include "registry.h"
#include "sandboxes.h"
#include "snapshots.h"
#include "sbxnet.h"
#include "util/util.h"
#include "volumes.h"

#define MAX_TIMEOUT_S (30 * 86400)
#define DEFAULT_CONNECT_TIMEOUT_S 300
#define LIST_LIMIT_MAX 100

/* 404 for an unknown sandbox, naming it and, if it existed, why it ended
 * (err from sandboxes_get). */
static void not_found(api_reply *r, const char *id, const eng_err *err) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "code", 404);
  cJSON_AddStringToObject(j, "message", err->message);
  cJSON_AddStringToObject(j, "sandboxID", id);
  if (err->code[0]) cJSON_AddStringToObject(j, "reason", err->code);
  api_reply_json(r, 404, j);
}

/* ---- request bodies and replies ------------------------------------------------------ */

static cJSON *parse_body(api_req *q, api_reply *r, int required) {
  if (!q->body || q->body_len == 0) {
    if (required) api_error(r, 400, "request body is required (JSON)");
    return required ? NULL : cJSON_CreateObject();
  }
  const char *err = NULL;
  cJSON *j = asbi_pj_parse(q->body, q->body_len, &err);
  if (!j) {
    api_error(r, 400, "malformed JSON body: %s", err ? err : "invalid");
    return NULL;
  }
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    api_error(r, 400, "the body must be a JSON object");
    return NULL;
  }
  return j;
}

/* An object whose values are all strings (metadata, envVars); absent/null is
 * fine (→ empty object). Returns -1 and replies 400 otherwise. */
static int string_map(const cJSON *body, const char *key, cJSON **out, api_reply *r) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
  *out = NULL;
  if (!v || cJSON_IsNull(v)) {
    *out = cJSON_CreateObject();
    return 0;
  }
  if (!cJSON_IsObject(v)) {
    api_error(r, 400, "'%s' must be an object of strings", key);
    return -1;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, v) {
    if (!cJSON_IsString(it)) {
      api_error(r, 400, "'%s.%s' must be a string", key, it->string);
      return -1;
    }
    if (strlen(it->string) == 0 || strchr(it->string, '=') || strlen(it->string) > 1024 ||
        strlen(it->valuestring) > 131072) {
      api_error(r, 400, "'%s' has an invalid key '%s'", key, it->string);
      return -1;
    }
  }
  *out = cJSON_Duplicate(v, 1);
  return 0;
}

/* timeout seconds: absent → dflt; must be an integer in [0, MAX]. */
static int get_timeout(const cJSON *body, const char *key, int dflt, int *out, api_reply *r) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
  if (!v || cJSON_IsNull(v)) {
    *out = dflt;
    return 0;
  }
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > MAX_TIMEOUT_S ||
      v->valuedouble != (double)(int64_t)v->valuedouble) {
    api_error(r, 400, "'%s' must be a whole number of seconds in 0..%d", key, MAX_TIMEOUT_S);
    return -1;
  }
  *out = (int)v->valuedouble;
  return 0;
}

/* The Sandbox object of create/connect replies. */
static cJSON *sandbox_json(engine *e, const sbx *s) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "templateID", s->template_id);
  cJSON_AddStringToObject(j, "sandboxID", s->id);
  if (s->alias && *s->alias) cJSON_AddStringToObject(j, "alias", s->alias);
  cJSON_AddStringToObject(j, "clientID", "local");
  cJSON_AddStringToObject(j, "envdVersion", e->envd_version);
  cJSON_AddItemToObject(
      j, "volumeMounts",
      s->volume_mounts ? cJSON_Duplicate(s->volume_mounts, 1) : cJSON_CreateArray());
  cJSON_AddStringToObject(j, "envdAccessToken", s->token);
  cJSON_AddStringToObject(j, "trafficAccessToken", s->traffic_token);
  cJSON_AddStringToObject(j, "domain", e->domain);
  /* ours: what a fork got of its parent (snapshots.c) */
  if (s->fork_mode[0]) cJSON_AddStringToObject(j, "forkMode", s->fork_mode);
  return j;
}

/* ListedSandbox / SandboxDetail. */
static cJSON *listed_json(engine *e, sbx *s, int detail) {
  cJSON *j = cJSON_CreateObject();
  pthread_mutex_lock(&s->mu);
  cJSON_AddStringToObject(j, "templateID", s->template_id);
  if (s->alias && *s->alias) cJSON_AddStringToObject(j, "alias", s->alias);
  cJSON_AddStringToObject(j, "sandboxID", s->id);
  cJSON_AddStringToObject(j, "clientID", "local");
  asbi_pj_add_time(j, "startedAt", s->started_ms);
  asbi_pj_add_time(j, "endAt", s->end_ms);
  cJSON_AddNumberToObject(j, "cpuCount", s->cpu_count);
  cJSON_AddNumberToObject(j, "memoryMB", s->memory_mb);
  cJSON_AddNumberToObject(j, "diskSizeMB", s->disk_mb);
  cJSON_AddItemToObject(
      j, "volumeMounts",
      s->volume_mounts ? cJSON_Duplicate(s->volume_mounts, 1) : cJSON_CreateArray());
  cJSON_AddItemToObject(j, "metadata",
                        s->metadata ? cJSON_Duplicate(s->metadata, 1) : cJSON_CreateObject());
  cJSON_AddStringToObject(j, "state", s->state == SBX_PAUSED ? "paused" : "running");
  cJSON_AddStringToObject(j, "envdVersion", e->envd_version);
  if (detail) {
    cJSON_AddStringToObject(j, "envdAccessToken", s->token);
    cJSON_AddStringToObject(j, "domain", e->domain);
    cJSON_AddBoolToObject(j, "allowInternetAccess", sbxnet_allow_internet(e, s));
    cJSON_AddItemToObject(j, "network", sbxnet_json(s));
    cJSON *lc = cJSON_AddObjectToObject(j, "lifecycle");
    cJSON_AddBoolToObject(lc, "autoResume", s->auto_resume);
    cJSON_AddStringToObject(lc, "onTimeout", s->auto_pause ? "pause" : "kill");
  }
  if (s->fork_mode[0]) cJSON_AddStringToObject(j, "forkMode", s->fork_mode);
  /* ours (E2B has no field for it): what a pause kept */
  if (s->state == SBX_PAUSED)
    cJSON_AddStringToObject(j, "pauseMode",
                            s->paused_ckpt    ? "checkpoint"
                            : s->paused_nomem ? "filesystem"
                                              : "memory");
  /* ours: under --pause-swap, where a memory-paused sandbox's RAM went
   * (GET /sandboxes/{id} only: it reads the sandbox's cgroup files) */
  asbe_stats st;
  if (detail && s->state == SBX_PAUSED && !s->paused_nomem && e->swap_path && s->iso &&
      asbe_sandbox_stats(s->iso, &st) == 0) {
    cJSON *sw = cJSON_AddObjectToObject(j, "swap");
    cJSON_AddNumberToObject(sw, "swappedBytes", (double)st.swap_bytes);
    cJSON_AddNumberToObject(sw, "residentBytes", (double)st.memory_bytes);
    /* not known (0) for a sandbox this engine adopted paused: left out
     * rather than a 0 that would read as a figure */
    if (s->swap_mem_before)
      cJSON_AddNumberToObject(sw, "residentBeforeBytes", (double)s->swap_mem_before);
  }
  pthread_mutex_unlock(&s->mu);
  return j;
}

static cJSON *metric_json(const sbx *s, const sbx_metric *m) {
  cJSON *j = cJSON_CreateObject();
  char t[40];
  asbi_rfc3339_ms(m->ts * 1000, t);
  cJSON_AddStringToObject(j, "timestamp", t);
  cJSON_AddNumberToObject(j, "timestampUnix", (double)m->ts);
  cJSON_AddNumberToObject(j, "cpuCount", s->cpu_count);
  cJSON_AddNumberToObject(j, "cpuUsedPct", m->cpu_pct);
  cJSON_AddNumberToObject(j, "memUsed", (double)m->mem_used);
  cJSON_AddNumberToObject(j, "memTotal", (double)m->mem_total);
  cJSON_AddNumberToObject(j, "memCache", (double)m->mem_cache);
  cJSON_AddNumberToObject(j, "diskUsed", (double)m->disk_used);
  cJSON_AddNumberToObject(j, "diskTotal", (double)m->disk_total);
  cJSON_AddNumberToObject(j, "netBytesOut", (double)m->net_bytes_out);
  cJSON_AddNumberToObject(j, "netBytesIn", (double)m->net_bytes_in);
  return j;
}

static int parse_unix_q(api_req *q, const char *name, int64_t *out, api_reply *r) {
  const char *v = api_query(q, name);
  *out = 0;
  if (!v || !*v) return 0;
  if (asbi_parse_i64(v, strlen(v), out)) {
    /* E2B's SDKs send RFC 3339 strings for these; accept both. */
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!strptime(v, "%Y-%m-%dT%H:%M:%S", &tm)) {
      api_error(r, 400, "'%s' must be Unix seconds or an RFC 3339 date-time", name);
      return -1;
    }
    *out = (int64_t)timegm(&tm);
  }
  return 0;
}

/* An RFC 3339 date-time (to the second) as Unix ms: 0, or -1 if it is not
 * one. */
static int rfc3339_ms_of(const char *v, int64_t *out) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (!strptime(v, "%Y-%m-%dT%H:%M:%S", &tm)) return -1;
  *out = (int64_t)timegm(&tm) * 1000;
  return 0;
}

/* nextToken is a cursor, as E2B's is: "c<startedAt ms>.<sandbox id>" of the
 * last sandbox of the page, and the next page starts after that key (an
 * offset would shift when sandboxes end between pages: list a page, kill
 * what it holds, ask for the next, and an offset skips as many as were
 * killed). */
static int parse_cursor(const char *t, int64_t *ms, char *id, size_t idlen) {
  const char *dot = t[0] == 'c' ? strchr(t, '.') : NULL;
  if (!dot || asbi_parse_i64(t + 1, (size_t)(dot - t - 1), ms) || *ms < 0) return -1;
  size_t n = strlen(dot + 1);
  if (n == 0 || n >= idlen) return -1;
  for (size_t i = 0; i < n; i++)
    if (!((dot[1 + i] >= 'a' && dot[1 + i] <= 'z') || (dot[1 + i] >= '0' && dot[1 + i] <= '9')))
      return -1;
  memcpy(id, dot + 1, n + 1);
  return 0;
}

/* The metadata query "k=v&k2=v2" (url-encoded pairs) as an object, or NULL
 * when it is malformed. */
static cJSON *metadata_query(const char *q) {
  cJSON *o = cJSON_CreateObject();
  char *dup = asbi_strdup(q), *save = NULL;
  int ok = o && dup;
  for (char *pair = ok ? strtok_r(dup, "&", &save) : NULL; ok && pair;
       pair = strtok_r(NULL, "&", &save)) {
    char *eq = strchr(pair, '=');
    char *k = NULL, *v = NULL;
    if (!eq || asbi_url_unescape(pair, (size_t)(eq - pair), 1, &k) ||
        asbi_url_unescape(eq + 1, strlen(eq + 1), 1, &v))
      ok = 0;
    else
      cJSON_AddItemToObject(o, k, cJSON_CreateString(v));
    free(k);
    free(v);
  }
  free(dup);
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* ---- routes ------------------------------------------------------------------------ */

static void create(engine *e, api_req *q, api_reply *r) {
  cJSON *body = parse_body(q, r, 1);
  if (!body) return;
  cJSON *metadata = NULL, *env_vars = NULL, *vols = NULL;
  asbn_policy net;
  int have_net = 0;
  sandboxes_create_req rq;
  memset(&rq, 0, sizeof rq);
  const cJSON *tv = cJSON_GetObjectItemCaseSensitive(body, "templateID");
  const cJSON *ap = cJSON_GetObjectItemCaseSensitive(body, "autoPause");
  if (!cJSON_IsString(tv) || !*tv->valuestring) {
    api_error(r, 400, "'templateID' is required");
    goto out;
  }
  if (get_timeout(body, "timeout", SANDBOXES_DEFAULT_TIMEOUT_S, &rq.timeout_s, r)) goto out;
  if (ap && !cJSON_IsBool(ap) && !cJSON_IsNull(ap)) {
    api_error(r, 400, "'autoPause' must be a boolean");
    goto out;
  }
  const cJSON *apm = cJSON_GetObjectItemCaseSensitive(body, "autoPauseMemory");
  if (apm && !cJSON_IsBool(apm) && !cJSON_IsNull(apm)) {
    api_error(r, 400, "'autoPauseMemory' must be a boolean");
    goto out;
  }
  /* E2B's SandboxAutoResumeConfig: {"enabled": bool} */
  const cJSON *ar = cJSON_GetObjectItemCaseSensitive(body, "autoResume");
  const cJSON *are = cJSON_IsObject(ar) ? cJSON_GetObjectItemCaseSensitive(ar, "enabled") : NULL;
  if ((ar && !cJSON_IsObject(ar) && !cJSON_IsNull(ar)) ||
      (cJSON_IsObject(ar) && !cJSON_IsBool(are))) {
    api_error(r, 400, "'autoResume' must be an object {\"enabled\": boolean}");
    goto out;
  }
  rq.auto_pause_no_memory = cJSON_IsFalse(apm);
  rq.auto_resume = cJSON_IsTrue(are);
  if (rq.auto_resume && !cJSON_IsTrue(ap)) {
    api_error(r, 400, "'autoResume' needs 'autoPause': true (only a paused sandbox resumes)");
    goto out;
  }
  if (rq.auto_resume && rq.auto_pause_no_memory) {
    /* E2B: a filesystem-only snapshot must be resumed explicitly */
    api_error(r, 400,
              "'autoResume' cannot be combined with 'autoPauseMemory': false (a sandbox "
              "paused without memory reboots, and is resumed only explicitly)");
    goto out;
  }
  if (string_map(body, "metadata", &metadata, r) || string_map(body, "envVars", &env_vars, r))
    goto out;
  if (volumes_parse_mounts(e, cJSON_GetObjectItemCaseSensitive(body, "volumeMounts"), &vols, r))
    goto out;
  rq.volume_mounts = vols;
  char why[512];
  /* E2B's create body spells it allow_internet_access (NewSandbox; the
   * stock SDKs send that); the replies' allowInternetAccess is taken too */
  const cJSON *aia = cJSON_GetObjectItemCaseSensitive(body, "allow_internet_access");
  if (!aia) aia = cJSON_GetObjectItemCaseSensitive(body, "allowInternetAccess");
  if (asbn_policy_parse(aia, cJSON_GetObjectItemCaseSensitive(body, "network"), &net, why,
                        sizeof why) != 0) {
    api_error(r, 400, "%s", why);
    goto out;
  }
  have_net = 1;
  rq.network = &net;
  rq.template_id = tv->valuestring;
  rq.auto_pause = cJSON_IsTrue(ap);
  rq.metadata = metadata;
  rq.env_vars = env_vars;
  sbx *s = NULL;
  eng_err err;
  if (sandboxes_create(e, &rq, &s, &err) == 0) {
    api_reply_json(r, 201, sandbox_json(e, s));
    reg_put(e, s);
  } else {
    api_reply_err(r, &err);
  }
out:
  if (have_net) asbn_policy_free(&net);
  cJSON_Delete(metadata);
  cJSON_Delete(env_vars);
  cJSON_Delete(vols);
  cJSON_Delete(body);
}

/* PUT /sandboxes/{id}/network: E2B's SandboxNetworkUpdateConfig replaces
 * the egress rules (an omitted field clears it; allow_internet_access
 * omitted is true); allowPublicTraffic, maskRequestHost and our own limits
 * are not egress rules and stay unless given. */
static void set_network(engine *e, sbx *s, api_req *q, api_reply *r) {
  cJSON *body = parse_body(q, r, 1);
  if (!body) return;
  asbn_policy p;
  char why[512];
  if (asbn_policy_parse(cJSON_GetObjectItemCaseSensitive(body, "allow_internet_access"), body, &p,
                        why, sizeof why) != 0) {
    api_error(r, 400, "%s", why);
    cJSON_Delete(body);
    return;
  }
  pthread_mutex_lock(&s->mu);
  const asbn_policy *old = s->net_policy;
  if (old) {
    if (!cJSON_GetObjectItemCaseSensitive(body, "allowPublicTraffic"))
      p.allow_public_traffic = old->allow_public_traffic;
    if (!cJSON_GetObjectItemCaseSensitive(body, "maskRequestHost") && old->mask_request_host)
      p.mask_request_host = asbi_strdup(old->mask_request_host);
    if (!cJSON_GetObjectItemCaseSensitive(body, "egressBytesPerSecond"))
      p.egress_bytes_per_s = old->egress_bytes_per_s;
    if (!cJSON_GetObjectItemCaseSensitive(body, "maxConnections"))
      p.max_connections = old->max_connections;
  }
  pthread_mutex_unlock(&s->mu);
  eng_err err;
  if (sandboxes_set_network(e, s, &p, &err))
    api_reply_err(r, &err);
  else
    r->status = 204;
  asbn_policy_free(&p);
  cJSON_Delete(body);
}

static void list(engine *e, api_req *q, api_reply *r, int v2) {
  const char *meta = api_query(q, "metadata");
  const char *state = v2 ? api_query(q, "state") : "running";
  const char *order = v2 ? api_query(q, "order") : NULL;
  const char *tmpl = v2 ? api_query(q, "template") : NULL;
  const char *after = v2 ? api_query(q, "startedAfter") : NULL;
  const char *limit_s = v2 ? api_query(q, "limit") : NULL;
  const char *next = v2 ? api_query(q, "nextToken") : NULL;
  sandboxes_filter f;
  memset(&f, 0, sizeof f);
  f.running = 1;
  f.paused = v2;
  if (state && *state) {
    f.running = f.paused = 0;
    char *dup = asbi_strdup(state), *save = NULL;
    for (char *p = dup ? strtok_r(dup, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save)) {
      if (strcmp(p, "running") == 0)
        f.running = 1;
      else if (strcmp(p, "paused") == 0)
        f.paused = 1;
      else {
        api_error(r, 400, "unknown state '%s' (running, paused)", p); /* p is in dup */
        free(dup);
        return;
      }
    }
    free(dup);
  }
  if (order && *order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
    api_error(r, 400, "order must be asc or desc");
    return;
  }
  f.ascending = order && strcmp(order, "asc") == 0;
  f.limit = v2 ? LIST_LIMIT_MAX : 0; /* the classic list has no pages */
  if (limit_s && (asbi_parse_i64(limit_s, strlen(limit_s), &f.limit) || f.limit < 1 ||
                  f.limit > LIST_LIMIT_MAX)) {
    api_error(r, 400, "limit must be 1..%d", LIST_LIMIT_MAX);
    return;
  }
  char cursor_id[ENGINE_ID_LEN + 1] = "";
  if (next && *next && parse_cursor(next, &f.cursor_ms, cursor_id, sizeof cursor_id)) {
    api_error(r, 400, "invalid nextToken");
    return;
  }
  f.cursor_id = cursor_id;
  if (after && *after && rfc3339_ms_of(after, &f.started_after_ms)) {
    api_error(r, 400, "startedAfter must be an RFC 3339 date-time");
    return;
  }
  f.template_id = tmpl;
  cJSON *want = NULL;
  if (meta && *meta && !(want = metadata_query(meta))) {
    /* a malformed metadata filter matches nothing */
    if (v2 && f.running) r->total_running = 0;
    api_reply_json(r, 200, cJSON_CreateArray());
    return;
  }
  f.metadata = want;
  sandboxes_page page;
  eng_err err;
  int rc = sandboxes_list(e, &f, &page, &err);
  cJSON_Delete(want);
  if (rc) {
    api_reply_err(r, &err);
    return;
  }
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < page.n; i++) cJSON_AddItemToArray(arr, listed_json(e, page.v[i], 0));
  if (page.more && page.n) {
    const sbx *last = page.v[page.n - 1];
    snprintf(r->next_token, sizeof r->next_token, "c%lld.%s", (long long)last->started_ms,
             last->id);
  }
  if (v2 && f.running) r->total_running = page.running;
  sandboxes_page_free(e, &page);
  api_reply_json(r, 200, arr);
}

static void set_timeout(engine *e, sbx *s, api_req *q, api_reply *r) {
  cJSON *body = parse_body(q, r, 1);
  if (!body) return;
  int secs;
  if (!cJSON_GetObjectItemCaseSensitive(body, "timeout")) {
    api_error(r, 400, "'timeout' is required");
  } else if (get_timeout(body, "timeout", 0, &secs, r) == 0) {
    /* An explicit timeout sets the lifetime, shorter or longer. */
    sandboxes_set_timeout(e, s, secs);
    r->status = 204;
  }
  cJSON_Delete(body);
}

static void refresh(engine *e, sbx *s, api_req *q, api_reply *r) {
  cJSON *body = parse_body(q, r, 0);
  if (!body) return;
  int secs;
  if (get_timeout(body, "duration", 60, &secs, r) == 0) {
    if (secs > 3600) {
      api_error(r, 400, "'duration' must be at most 3600 seconds");
    } else {
      sandboxes_extend(e, s, secs);
      r->status = 204;
    }
  }
  cJSON_Delete(body);
}

/* E2B's SandboxPauseRequest: {"memory": bool = true}; no body is memory. */
static void pause_sbx(engine *e, sbx *s, api_req *q, api_reply *r) {
  cJSON *body = parse_body(q, r, 0);
  if (!body) return;
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(body, "memory");
  if (m && !cJSON_IsBool(m) && !cJSON_IsNull(m)) {
    cJSON_Delete(body);
    return api_error(r, 400, "'memory' must be a boolean");
  }
  int memory = !cJSON_IsFalse(m);
  cJSON_Delete(body);
  eng_err err;
  if (sandboxes_pause(e, s, memory, &err) == 0)
    r->status = 204;
  else
    api_reply_err(r, &err);
}

/* connect (200 running / 201 resumed) and the deprecated resume (201; 409
 * if it was running). */
static void connect_sbx(engine *e, sbx *s, api_req *q, api_reply *r, int resume) {
  cJSON *body = parse_body(q, r, 0);
  if (!body) return;
  int secs;
  /* E2B's spec requires timeout for connect, but its SDKs omit it when the
   * caller gave none: then the SDKs' default lifetime applies. */
  int bad = get_timeout(body, "timeout",
                        resume ? SANDBOXES_DEFAULT_TIMEOUT_S : DEFAULT_CONNECT_TIMEOUT_S, &secs, r);
  cJSON_Delete(body);
  if (bad) return;
  int resumed = 0;
  eng_err err;
  if (sandboxes_connect(e, s, secs, resume, &resumed, &err))
    api_reply_err(r, &err);
  else
    api_reply_json(r, resumed ? 201 : 200, sandbox_json(e, s));
}

static void metrics(engine *e, sbx *s, api_req *q, api_reply *r) {
  int64_t start, end;
  if (parse_unix_q(q, "start", &start, r) || parse_unix_q(q, "end", &end, r)) return;
  sbx_metric m[ENGINE_METRICS_RING];
  size_t n = sandboxes_metrics(e, s, start, end, m);
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, metric_json(s, &m[i]));
  api_reply_json(r, 200, arr);
}

static void metrics_many(engine *e, api_req *q, api_reply *r) {
  const char *ids = api_query(q, "sandbox_ids");
  cJSON *out = cJSON_CreateObject();
  cJSON *map = cJSON_AddObjectToObject(out, "sandboxes");
  char *dup = asbi_strdup(ids ? ids : ""), *save = NULL;
  for (char *id = dup ? strtok_r(dup, ",", &save) : NULL; id; id = strtok_r(NULL, ",", &save)) {
    sbx *s = reg_get(e, id);
    if (!s) continue;
    sbx_metric m;
    if (sandboxes_metric_now(e, s, &m)) cJSON_AddItemToObject(map, s->id, metric_json(s, &m));
    reg_put(e, s);
  }
  free(dup);
  api_reply_json(r, 200, out);
}

/* The agent log of the sandbox (sandboxes_logs), v2 as {"logs": [entries]},
 * v1 as {"logs": [lines], "logEntries": [entries]}. */
static void logs(engine *e, sbx *s, api_req *q, api_reply *r, int v2) {
  int64_t start = 0, limit = 1000;
  const char *ls = api_query(q, "limit");
  if (ls && *ls && (asbi_parse_i64(ls, strlen(ls), &limit) || limit < 1 || limit > 10000)) {
    api_error(r, 400, "limit must be 1..10000");
    return;
  }
  if (parse_unix_q(q, "start", &start, r)) return;
  char **v = NULL;
  size_t n = 0;
  eng_err err;
  if (sandboxes_logs(e, s, limit, &v, &n, &err)) {
    api_reply_err(r, &err);
    return;
  }
  cJSON *lines = cJSON_CreateArray(), *entries = cJSON_CreateArray();
  char ts[40];
  asbi_rfc3339_ms(s->started_ms, ts);
  for (size_t i = 0; i < n; i++) {
    cJSON *l = cJSON_CreateObject();
    cJSON_AddStringToObject(l, "timestamp", ts);
    cJSON_AddStringToObject(l, "line", v[i]);
    cJSON_AddItemToArray(lines, l);
    cJSON *en = cJSON_CreateObject();
    cJSON_AddStringToObject(en, "timestamp", ts);
    cJSON_AddStringToObject(en, "level", "info");
    cJSON_AddStringToObject(en, "message", v[i]);
    cJSON_AddItemToObject(en, "fields", cJSON_CreateObject());
    cJSON_AddItemToArray(entries, en);
  }
  sandboxes_lines_free(v, n);
  cJSON *out = cJSON_CreateObject();
  if (v2) {
    cJSON_Delete(lines);
    cJSON_AddItemToObject(out, "logs", entries);
  } else {
    cJSON_AddItemToObject(out, "logs", lines);
    cJSON_AddItemToObject(out, "logEntries", entries);
  }
  api_reply_json(r, 200, out);
}

/* POST /sandboxes/{id}/ports/{port}/loopback: http://127.0.0.1:<n> for that
 * port (loopurl.c), for clients that cannot resolve *.localhost. */
static void loopback_url(engine *e, api_req *q, api_reply *r, const char *id, const char *rest) {
  int64_t port = 0;
  const char *slash = strchr(rest, '/');
  if (!slash || strcmp(slash, "/loopback") != 0)
    return api_error(r, 404, "no such endpoint: %s %s", q->method, q->path);
  if (strcmp(q->method, "POST") != 0)
    return api_error(r, 405, "method %s not allowed on %s", q->method, q->path);
  if (asbi_parse_i64(rest, (size_t)(slash - rest), &port) || port < 1 || port > 65535)
    return api_error(r, 400, "port must be 1..65535, not '%.*s'", (int)(slash - rest), rest);
  sbx *s = NULL;
  eng_err err;
  if (sandboxes_get(e, id, &s, &err)) return not_found(r, id, &err);
  char sid[64];
  snprintf(sid, sizeof sid, "%s", s->id);
  reg_put(e, s);
  int lport = 0, rc = e->loopback_open ? e->loopback_open(e, sid, (int)port, &lport) : -ENOTSUP;
  if (rc == -ESRCH) return api_error(r, 404, "sandbox \"%s\" ended", sid);
  if (rc == -ENOSPC)
    return api_error(r, 429, "too many loopback URLs (64 per sandbox, 4096 per engine)");
  if (rc) return api_error(r, 500, "cannot open a loopback listener: %s", strerror(-rc));
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", lport);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "sandboxID", sid);
  cJSON_AddNumberToObject(o, "port", (double)port);
  cJSON_AddStringToObject(o, "url", url);
  cJSON_AddNumberToObject(o, "loopbackPort", lport);
  api_reply_json(r, 200, o);
}

/* ---- snapshots and fork (snapshots.c) ------------------------------------------------ */

/* E2B's SnapshotInfo: the id tag-qualified, as E2B's are ("name:default";
 * no team namespace here). */
static cJSON *snapshot_json(const template_info *t) {
  cJSON *j = cJSON_CreateObject();
  char full[300];
  snprintf(full, sizeof full, "%s:default", t->alias);
  cJSON_AddStringToObject(j, "snapshotID", full);
  cJSON *names = cJSON_AddArrayToObject(j, "names");
  cJSON_AddItemToArray(names, cJSON_CreateString(full));
  return j;
}

static void snapshot_sbx(engine *e, sbx *s, api_req *q, api_reply *r) {
  cJSON *body = parse_body(q, r, 0);
  if (!body) return;
  const cJSON *nv = cJSON_GetObjectItemCaseSensitive(body, "name");
  if (nv && !cJSON_IsNull(nv) && !cJSON_IsString(nv)) {
    api_error(r, 400, "'name' must be a string");
    cJSON_Delete(body);
    return;
  }
  template_info *t = NULL;
  eng_err err;
  if (snapshots_take(e, s, cJSON_IsString(nv) ? nv->valuestring : NULL, 0, &t, &err)) {
    api_reply_err(r, &err);
  } else {
    api_reply_json(r, 201, snapshot_json(t));
    templates_put(e, t);
  }
  cJSON_Delete(body);
}

/* GET /snapshots: nextToken is the id of the last one of the page before
 * (ids are the order, so snapshots taken between pages shift nothing). */
static void snapshots_get(engine *e, api_req *q, api_reply *r) {
  int64_t limit = 100;
  const char *ls = api_query(q, "limit");
  if (ls && *ls && (asbi_parse_i64(ls, strlen(ls), &limit) || limit < 1 || limit > 100))
    return api_error(r, 400, "limit must be 1..100");
  const char *next = api_query(q, "nextToken");
  if (next && strlen(next) > ENGINE_ID_LEN) return api_error(r, 400, "invalid nextToken");
  size_t n = 0;
  int more = 0;
  template_info **v = snapshots_list(e, api_query(q, "sandboxID"), api_query(q, "name"), next,
                                     (size_t)limit, &n, &more);
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, snapshot_json(v[i]));
  if (more && n) snprintf(r->next_token, sizeof r->next_token, "%s", v[n - 1]->id);
  templates_put_all(e, v, n);
  api_reply_json(r, 200, arr);
}

/* E2B's SandboxForkRequest (timeout defaults to 15 s, count to 1): its
 * body, or NULL after a 400. Checked before the sandbox is looked up, as
 * E2B answers a bad count before an unknown sandbox. */
static cJSON *fork_body(api_req *q, api_reply *r, int *secs, int *count, int *processes) {
  cJSON *body = parse_body(q, r, 0);
  if (!body) return NULL;
  const cJSON *cv = cJSON_GetObjectItemCaseSensitive(body, "count");
  *count = 1;
  /* ours: keepProcesses false asks a --pause-criu engine for forks booted
   * fresh on the files (what an engine without it always gives) */
  const cJSON *kp = cJSON_GetObjectItemCaseSensitive(body, "keepProcesses");
  if (kp && !cJSON_IsNull(kp) && !cJSON_IsBool(kp)) {
    api_error(r, 400, "'keepProcesses' must be a boolean");
    cJSON_Delete(body);
    return NULL;
  }
  *processes = !cJSON_IsFalse(kp);
  if (get_timeout(body, "timeout", 15, secs, r)) {
    cJSON_Delete(body);
    return NULL;
  }
  if (cv && !cJSON_IsNull(cv)) {
    if (!cJSON_IsNumber(cv) || cv->valuedouble != (double)(int)cv->valuedouble ||
        cv->valueint < 1 || cv->valueint > SNAPSHOTS_FORK_MAX) {
      api_error(r, 400, "'count' must be a whole number in 1..%d", SNAPSHOTS_FORK_MAX);
      cJSON_Delete(body);
      return NULL;
    }
    *count = cv->valueint;
  }
  return body;
}

static void fork_sbx(engine *e, sbx *s, api_req *q, api_reply *r) {
  int secs = 0, count = 1, processes = 1;
  cJSON *body = fork_body(q, r, &secs, &count, &processes);
  if (!body) return;
  sbx *made[SNAPSHOTS_FORK_MAX];
  eng_err errs[SNAPSHOTS_FORK_MAX], err;
  if (snapshots_fork(e, s, secs, count, processes, made, errs, &err)) {
    api_reply_err(r, &err);
    goto out;
  }
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; i < count; i++) {
    cJSON *res = cJSON_CreateObject();
    if (made[i]) {
      cJSON_AddItemToObject(res, "sandbox", sandbox_json(e, made[i]));
      reg_put(e, made[i]);
    } else {
      cJSON *ej = cJSON_AddObjectToObject(res, "error");
      cJSON_AddNumberToObject(ej, "code", api_status_of(&errs[i]));
      cJSON_AddStringToObject(ej, "message", errs[i].message);
    }
    cJSON_AddItemToArray(arr, res);
  }
  api_reply_json(r, 201, arr);
out:
  cJSON_Delete(body);
}

/* ---- dispatch ------------------------------------------------------------------------------ */

/* Splits "/sandboxes/<id>[/<action>]" (after an optional "/v2"). */
static int sandbox_path(const char *path, char *id, size_t idlen, const char **action) {
  const char *p = path;
  if (asbi_startswith(p, "/v2/")) p += 3;
  if (!asbi_startswith(p, "/sandboxes/")) return 0;
  p += strlen("/sandboxes/");
  const char *slash = strchr(p, '/');
  size_t n = slash ? (size_t)(slash - p) : strlen(p);
  if (n == 0 || n >= idlen) return 0;
  memcpy(id, p, n);
  id[n] = 0;
  *action = slash ? slash + 1 : "";
  return 1;
}

static int is(const api_req *q, const char *method, const char *path) {
  return strcmp(q->method, method) == 0 && strcmp(q->path, path) == 0;
}

void api_handle(engine *e, api_req *q, api_reply *r) {
  if (strcmp(q->path, "/health") == 0) {
    r->status = strcmp(q->method, "GET") == 0 || strcmp(q->method, "HEAD") == 0 ? 204 : 405;
    return;
  }
  if (api_secrets_handle(e, q, r)) return;
  if (api_volumes_handle(e, q, r)) return;
  if (is(q, "POST", "/sandboxes") || is(q, "POST", "/v2/sandboxes")) return create(e, q, r);
  if (is(q, "GET", "/sandboxes")) return list(e, q, r, 0);
  if (is(q, "GET", "/v2/sandboxes")) return list(e, q, r, 1);
  if (is(q, "GET", "/sandboxes/metrics")) return metrics_many(e, q, r);
  if (is(q, "GET", "/snapshots")) return snapshots_get(e, q, r);
  if (api_builder_handle(e, q, r)) return; /* E2B's Template builder (api_builder.c) */
  if (is(q, "GET", "/templates") || is(q, "GET", "/v2/templates")) return api_templates_list(e, r);
  if (is(q, "POST", "/templates/builds") || is(q, "POST", "/v2/templates/builds"))
    return api_templates_build(e, q, r);
  if (asbi_startswith(q->path, "/templates/") && strcmp(q->method, "GET") == 0)
    return api_templates_get(e, q->path + strlen("/templates/"), r);
  if (asbi_startswith(q->path, "/templates/") && strcmp(q->method, "DELETE") == 0)
    return api_templates_delete(e, q->path + strlen("/templates/"), r);
  char id[64];
  const char *action = NULL;
  if (!sandbox_path(q->path, id, sizeof id, &action))
    return api_error(r, 404, "no such endpoint: %s %s", q->method, q->path);
  int v2 = asbi_startswith(q->path, "/v2/");
  if (!v2 && asbi_startswith(action, "ports/")) return loopback_url(e, q, r, id, action + 6);
  struct {
    const char *method, *action;
    int v2_ok, v1_ok;
  } routes[] = {{"GET", "", 0, 1},           {"DELETE", "", 0, 1},        {"POST", "timeout", 0, 1},
                {"POST", "refreshes", 0, 1}, {"POST", "pause", 0, 1},     {"POST", "resume", 0, 1},
                {"POST", "connect", 1, 1},   {"GET", "metrics", 0, 1},    {"GET", "logs", 1, 1},
                {"PUT", "network", 0, 1},    {"POST", "snapshots", 0, 1}, {"POST", "fork", 0, 1}};
  int known = 0, method_ok = 0;
  for (size_t i = 0; i < ASBI_ARRAY_LEN(routes); i++)
    if (strcmp(routes[i].action, action) == 0 && (v2 ? routes[i].v2_ok : routes[i].v1_ok)) {
      known = 1;
      if (strcmp(routes[i].method, q->method) == 0) method_ok = 1;
    }
  if (!known) return api_error(r, 404, "no such endpoint: %s %s", q->method, q->path);
  if (!method_ok) return api_error(r, 405, "method %s not allowed on %s", q->method, q->path);
  if (strcmp(action, "fork") == 0) { /* its body's errors come first */
    int secs = 0, count = 1, processes = 1;
    cJSON *fb = fork_body(q, r, &secs, &count, &processes);
    if (!fb) return;
    cJSON_Delete(fb);
  }
  sbx *s = NULL;
  eng_err err;
  if (sandboxes_get(e, id, &s, &err)) return not_found(r, id, &err);
  if (strcmp(action, "") == 0 && strcmp(q->method, "GET") == 0)
    api_reply_json(r, 200, listed_json(e, s, 1));
  else if (strcmp(action, "") == 0) {
    sandboxes_kill(e, s);
    r->status = 204;
  } else if (strcmp(action, "timeout") == 0)
    set_timeout(e, s, q, r);
  else if (strcmp(action, "refreshes") == 0)
    refresh(e, s, q, r);
  else if (strcmp(action, "pause") == 0)
    pause_sbx(e, s, q, r);
  else if (strcmp(action, "resume") == 0)
    connect_sbx(e, s, q, r, 1);
  else if (strcmp(action, "connect") == 0)
    connect_sbx(e, s, q, r, 0);
  else if (strcmp(action, "metrics") == 0)
    metrics(e, s, q, r);
  else if (strcmp(action, "logs") == 0)
    logs(e, s, q, r, v2);
  else if (strcmp(action, "network") == 0)
    set_network(e, s, q, r);
  else if (strcmp(action, "snapshots") == 0)
    snapshot_sbx(e, s, q, r);
  else if (strcmp(action, "fork") == 0)
    fork_sbx(e, s, q, r);
  reg_put(e, s);
}
