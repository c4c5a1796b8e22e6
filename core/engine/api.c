/* The E2B control plane of the local engine: create, list, get, kill,
 * timeouts, pause/resume/connect, metrics, logs, templates — with E2B's
 * fields, status codes and error bodies ({"code": <int>, "message": ...}).
 * SPDX-License-Identifier: Apache-2.0 */
#include "api.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/http1.h"
#include "proto/pjson.h"
#include "proto/url.h"
#include "util/buf.h"
#include "util/util.h"

#define MAX_TIMEOUT_S (30 * 86400)
#define DEFAULT_CREATE_TIMEOUT_S 15 /* E2B's API default; SDKs send 300 */
#define ENVD_READY_MS 10000
#define DEFAULT_CONNECT_TIMEOUT_S 300
#define LIST_LIMIT_MAX 100

/* ---- replies --------------------------------------------------------------------- */

void api_reply_json(api_reply *r, int status, cJSON *body) {
  r->status = status;
  r->body = body ? cJSON_PrintUnformatted(body) : NULL;
  cJSON_Delete(body);
}

void api_error(api_reply *r, int status, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "code", status);
  cJSON_AddStringToObject(j, "message", msg);
  api_reply_json(r, status, j);
}

/* 404 for an unknown sandbox, naming it and, if it existed, why it ended. */
static void not_found(engine *e, api_reply *r, const char *id, const char *dying) {
  char why[32];
  const char *reason = dying ? dying : reg_tomb(e, id, why, sizeof why);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "code", 404);
  char msg[256];
  if (reason)
    snprintf(msg, sizeof msg, "sandbox \"%s\" is gone (%s)", id, reason);
  else
    snprintf(msg, sizeof msg, "sandbox \"%s\" not found", id);
  cJSON_AddStringToObject(j, "message", msg);
  cJSON_AddStringToObject(j, "sandboxID", id);
  if (reason) cJSON_AddStringToObject(j, "reason", reason);
  api_reply_json(r, 404, j);
}

/* ---- envd over its unix socket ----------------------------------------------------- */

int envd_request(sbx *s, const char *method, const char *path, const char *body,
                 char **reply, int timeout_ms) {
  if (reply) *reply = NULL;
  int fd = asbe_sandbox_connect_unix(s->iso, "envd.sock");
  if (fd < 0) return fd;
  char token[sizeof s->token + 32];
  snprintf(token, sizeof token, "X-Access-Token: %s", s->token);
  const char *hs[4];
  size_t n = 0;
  hs[n++] = "User-Agent: agent-sandboxd";
  if (s->token[0]) hs[n++] = token;
  if (body) hs[n++] = "Content-Type: application/json";
  hs[n] = NULL;
  return sbx_http_fd(fd, method, path, hs, body, body ? strlen(body) : 0, reply, timeout_ms,
                     4u << 20);
}

/* ---- helpers ---------------------------------------------------------------------- */

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
static int string_map(const cJSON *body, const char *key, cJSON **out,
                      api_reply *r) {
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
    if (strlen(it->string) == 0 || strchr(it->string, '=') ||
        strlen(it->string) > 1024 || strlen(it->valuestring) > 131072) {
      api_error(r, 400, "'%s' has an invalid key '%s'", key, it->string);
      return -1;
    }
  }
  *out = cJSON_Duplicate(v, 1);
  return 0;
}

/* timeout seconds: absent → dflt; must be an integer in [0, MAX]. */
static int get_timeout(const cJSON *body, const char *key, int dflt, int *out,
                       api_reply *r) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
  if (!v || cJSON_IsNull(v)) {
    *out = dflt;
    return 0;
  }
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > MAX_TIMEOUT_S ||
      v->valuedouble != (double)(int64_t)v->valuedouble) {
    api_error(r, 400, "'%s' must be a whole number of seconds in 0..%d", key,
              MAX_TIMEOUT_S);
    return -1;
  }
  *out = (int)v->valuedouble;
  return 0;
}

/* The Sandbox object of create/connect replies. */
static cJSON *sandbox_json(engine *e, sbx *s) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "templateID", s->template_id);
  cJSON_AddStringToObject(j, "sandboxID", s->id);
  if (s->alias && *s->alias) cJSON_AddStringToObject(j, "alias", s->alias);
  cJSON_AddStringToObject(j, "clientID", "local");
  cJSON_AddStringToObject(j, "envdVersion", e->envd_version);
  cJSON_AddStringToObject(j, "envdAccessToken", s->token);
  cJSON_AddStringToObject(j, "trafficAccessToken", s->traffic_token);
  cJSON_AddStringToObject(j, "domain", e->domain);
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
  json_add_time(j, "startedAt", s->started_ms);
  json_add_time(j, "endAt", s->end_ms);
  cJSON_AddNumberToObject(j, "cpuCount", s->cpu_count);
  cJSON_AddNumberToObject(j, "memoryMB", s->memory_mb);
  cJSON_AddNumberToObject(j, "diskSizeMB", s->disk_mb);
  cJSON_AddItemToObject(j, "metadata", s->metadata ? cJSON_Duplicate(s->metadata, 1)
                                                   : cJSON_CreateObject());
  cJSON_AddStringToObject(j, "state", s->state == SBX_PAUSED ? "paused" : "running");
  cJSON_AddStringToObject(j, "envdVersion", e->envd_version);
  cJSON_AddItemToObject(j, "volumeMounts", cJSON_CreateArray());
  if (detail) {
    cJSON_AddStringToObject(j, "envdAccessToken", s->token);
    cJSON_AddStringToObject(j, "domain", e->domain);
    cJSON_AddBoolToObject(j, "allowInternetAccess", 0);
    cJSON *lc = cJSON_AddObjectToObject(j, "lifecycle");
    cJSON_AddBoolToObject(lc, "autoResume", 0);
    cJSON_AddStringToObject(lc, "onTimeout", s->auto_pause ? "pause" : "kill");
  }
  pthread_mutex_unlock(&s->mu);
  return j;
}

/* Extend the lifetime to at least now + seconds (never shortens). */
static void extend(sbx *s, int seconds) {
  int64_t want = now_unix_ms() + (int64_t)seconds * 1000;
  pthread_mutex_lock(&s->mu);
  if (want > s->end_ms) s->end_ms = want;
  pthread_mutex_unlock(&s->mu);
}

/* ---- create ------------------------------------------------------------------------ */

static int wait_envd(sbx *s) {
  int64_t deadline = now_unix_ms() + ENVD_READY_MS;
  useconds_t nap = 100;
  for (;;) {
    int fd = asbe_sandbox_connect_unix(s->iso, "envd.sock");
    if (fd >= 0) {
      close(fd);
      return 0;
    }
    if (!asbe_sandbox_alive(s->iso)) return -ESRCH;
    if (now_unix_ms() >= deadline) return -ETIMEDOUT;
    usleep(nap);
    if (nap < 5000) nap *= 2;
  }
}

static void create(engine *e, api_req *q, api_reply *r) {
  cJSON *body = parse_body(q, r, 1);
  if (!body) return;
  sbx *s = NULL;
  template_info *t = NULL;
  const cJSON *tv = cJSON_GetObjectItemCaseSensitive(body, "templateID");
  if (!cJSON_IsString(tv) || !*tv->valuestring) {
    api_error(r, 400, "'templateID' is required");
    goto out;
  }
  {
    char berr[2048];
    if (bundled_ensure(e, tv->valuestring, berr, sizeof berr)) {
      api_error(r, 500, "%s", berr);
      goto out;
    }
  }
  t = templates_find(e, tv->valuestring);
  if (!t) {
    api_error(r, 404, "template \"%s\" not found", tv->valuestring);
    goto out;
  }
  int timeout_s;
  if (get_timeout(body, "timeout", DEFAULT_CREATE_TIMEOUT_S, &timeout_s, r)) goto out;
  if (timeout_s == 0) timeout_s = DEFAULT_CREATE_TIMEOUT_S;
  const cJSON *ap = cJSON_GetObjectItemCaseSensitive(body, "autoPause");
  if (ap && !cJSON_IsBool(ap) && !cJSON_IsNull(ap)) {
    api_error(r, 400, "'autoPause' must be a boolean");
    goto out;
  }
  if (!(s = sbx_new())) {
    api_error(r, 500, "out of memory");
    goto out;
  }
  if (string_map(body, "metadata", &s->metadata, r) ||
      string_map(body, "envVars", &s->env_vars, r))
    goto out;
  s->auto_pause = cJSON_IsTrue(ap);
  if (asbi_random_alnum(s->id, ENGINE_ID_LEN) || asbi_random_hex(s->token, 40) ||
      asbi_random_hex(s->traffic_token, 40)) {
    api_error(r, 500, "no randomness available");
    goto out;
  }
  s->template_id = asbi_strdup(t->id);
  s->alias = asbi_strdup(t->alias);
  s->cpu_count = t->cpu_count;
  s->memory_mb = t->memory_mb;
  s->disk_mb = t->disk_mb;
  if (t->spec) {
    s->tmpl_layers = templates_layers_json(t);
    s->commands = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t->spec, "commands"), 1);
    s->tmpl_env = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t->spec, "env"), 1);
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(t->spec, "commandsPort");
    s->commands_port = cJSON_IsNumber(cp) ? cp->valueint : 9000;
  }
  s->started_ms = now_unix_ms();
  s->end_ms = s->started_ms + (int64_t)timeout_s * 1000;

  const char *args[] = {"--unix", "/run/asb/envd.sock", NULL};
  char **argv = asbe_agent_argv("envd", args);
  asbe_sandbox_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.id = s->id;
  spec.tmpl = t->tmpl;
  spec.memory_bytes = (uint64_t)t->memory_mb << 20;
  spec.pids_max = 1024;
  spec.cpu_millicores = (uint32_t)t->cpu_count * 1000;
  spec.disk_bytes = (uint64_t)t->disk_mb << 20;
  spec.agent_argv = (const char *const *)argv;
  int rc = argv ? asbe_sandbox_create(e->iso, &spec, &s->iso) : -ENOMEM;
  free(argv);
  if (rc) {
    api_error(r, 500, "cannot create the sandbox: %s", asbe_errmsg());
    goto out;
  }
  /* From here a failure must undo the sandbox: create is transactional. */
  /* Code-interpreter templates warm their kernel from the start, while envd
   * starts: Python importing ipykernel dominates the first run_code. */
  if (t->start_codei && e->codei_path) codei_start(e, s);
  if ((rc = wait_envd(s))) {
    api_error(r, 500, "the sandbox's agent did not start: %s", strerror(-rc));
    goto undo;
  }
  cJSON *init = cJSON_CreateObject();
  cJSON_AddItemToObject(init, "envVars", cJSON_Duplicate(s->env_vars, 1));
  cJSON_AddStringToObject(init, "accessToken", s->token);
  cJSON_AddStringToObject(init, "defaultUser", "user");
  cJSON_AddStringToObject(init, "defaultWorkdir", "/home/user");
  char ts[40];
  rfc3339_ms(now_unix_ms(), ts);
  cJSON_AddStringToObject(init, "timestamp", ts);
  char *init_body = cJSON_PrintUnformatted(init);
  cJSON_Delete(init);
  /* The token is not set in envd yet: send /init without it. */
  char token[sizeof s->token];
  memcpy(token, s->token, sizeof token);
  s->token[0] = '\0';
  int st = init_body ? envd_request(s, "POST", "/init", init_body, NULL, 5000) : -ENOMEM;
  memcpy(s->token, token, sizeof token);
  free(init_body);
  if (st < 200 || st >= 300) {
    api_error(r, 500, "the sandbox's agent refused /init (%s)",
              st < 0 ? strerror(-st) : "HTTP error");
    goto undo;
  }
  /* A template's start command and ready check: create returns once the
   * check passes, or fails (and undoes the sandbox) naming it. */
  if (t->spec) {
    char why[4096];
    if (template_start(e, s, t, why, sizeof why)) {
      cJSON *j = cJSON_CreateObject();
      cJSON_AddNumberToObject(j, "code", 500);
      cJSON_AddStringToObject(j, "message", why);
      cJSON_AddStringToObject(j, "error", "template_start_failed");
      api_reply_json(r, 500, j);
      engine_log("sandbox %s: %s", s->id, why);
      goto undo;
    }
  }
  if ((rc = reg_save(e, s))) {
    api_error(r, 500, "cannot record the sandbox: %s", strerror(-rc));
    goto undo;
  }
  t->spawn_count++;
  t->last_spawned_ms = now_unix_ms();
  api_reply_json(r, 201, sandbox_json(e, s));
  reg_add(e, s); /* the table takes our reference */
  s = NULL;
  goto out;
undo:
  asbe_sandbox_kill(s->iso, 1);
out:
  sbx_free(s);
  templates_put(e, t);
  cJSON_Delete(body);
}

/* ---- list ------------------------------------------------------------------------------ */

/* metadata query "k=v&k2=v2" (url-encoded pairs): 1 if s matches all. */
static int meta_match(sbx *s, const char *q) {
  if (!q || !*q) return 1;
  char *dup = asbi_strdup(q), *save = NULL;
  int ok = dup != NULL;
  for (char *pair = dup ? strtok_r(dup, "&", &save) : NULL; ok && pair;
       pair = strtok_r(NULL, "&", &save)) {
    char *eq = strchr(pair, '=');
    char *k = NULL, *v = NULL;
    if (!eq || asbi_url_unescape(pair, (size_t)(eq - pair), 1, &k) ||
        asbi_url_unescape(eq + 1, strlen(eq + 1), 1, &v)) {
      ok = 0;
    } else {
      const cJSON *have = cJSON_GetObjectItemCaseSensitive(s->metadata, k);
      ok = cJSON_IsString(have) && strcmp(have->valuestring, v) == 0;
    }
    free(k);
    free(v);
  }
  free(dup);
  return ok;
}

/* The list's order: newest first, ties by id; "asc" is its exact reverse. */
static int key_desc(int64_t xs, const char *xid, int64_t ys, const char *yid) {
  if (xs != ys) return xs < ys ? 1 : -1;
  return strcmp(xid, yid);
}

static int by_start_desc(const void *a, const void *b) {
  const sbx *x = *(sbx *const *)a, *y = *(sbx *const *)b;
  return key_desc(x->started_ms, x->id, y->started_ms, y->id);
}

static int by_start_asc(const void *a, const void *b) { return by_start_desc(b, a); }

/* nextToken is a cursor, as E2B's is: "c<startedAt ms>.<sandbox id>" of the
 * last sandbox of the page, and the next page starts after that key. An
 * offset would shift when sandboxes end between pages (list a page, kill
 * what it holds, ask for the next: an offset skips as many as were killed). */
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

static void list(engine *e, api_req *q, api_reply *r, int v2) {
  const char *meta = api_query(q, "metadata");
  const char *state = v2 ? api_query(q, "state") : "running";
  const char *order = v2 ? api_query(q, "order") : NULL;
  const char *tmpl = v2 ? api_query(q, "template") : NULL;
  const char *after = v2 ? api_query(q, "startedAfter") : NULL;
  const char *limit_s = v2 ? api_query(q, "limit") : NULL;
  const char *next = v2 ? api_query(q, "nextToken") : NULL;
  int want_running = 1, want_paused = v2;
  if (state && *state) {
    want_running = want_paused = 0;
    char *dup = asbi_strdup(state), *save = NULL;
    for (char *p = dup ? strtok_r(dup, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save)) {
      if (strcmp(p, "running") == 0) want_running = 1;
      else if (strcmp(p, "paused") == 0) want_paused = 1;
      else {
        free(dup);
        api_error(r, 400, "unknown state '%s' (running, paused)", p);
        return;
      }
    }
    free(dup);
  }
  if (order && *order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
    api_error(r, 400, "order must be asc or desc");
    return;
  }
  int64_t limit = LIST_LIMIT_MAX, cur_ms = 0;
  if (limit_s && (asbi_parse_i64(limit_s, strlen(limit_s), &limit) || limit < 1 ||
                  limit > LIST_LIMIT_MAX)) {
    api_error(r, 400, "limit must be 1..%d", LIST_LIMIT_MAX);
    return;
  }
  char cur_id[ENGINE_ID_LEN + 1] = "";
  int has_cursor = next && *next;
  if (has_cursor && parse_cursor(next, &cur_ms, cur_id, sizeof cur_id)) {
    api_error(r, 400, "invalid nextToken");
    return;
  }
  int asc = order && strcmp(order, "asc") == 0;
  int64_t after_ms = 0;
  if (after && *after) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!strptime(after, "%Y-%m-%dT%H:%M:%S", &tm)) {
      api_error(r, 400, "startedAfter must be an RFC 3339 date-time");
      return;
    }
    after_ms = (int64_t)timegm(&tm) * 1000;
  }
  size_t n = 0;
  sbx **v = reg_list(e, &n);
  if (!v) {
    api_error(r, 500, "out of memory");
    return;
  }
  qsort(v, n, sizeof *v, asc ? by_start_asc : by_start_desc);
  cJSON *arr = cJSON_CreateArray();
  int64_t shown = 0, running = 0, last_ms = 0;
  int more = 0;
  char last_id[ENGINE_ID_LEN + 1] = "";
  for (size_t i = 0; i < n; i++) {
    sbx *s = v[i];
    int paused = s->state == SBX_PAUSED;
    if (s->state == SBX_DEAD || (paused && !want_paused) || (!paused && !want_running))
      continue;
    if (!meta_match(s, meta)) continue;
    if (tmpl && *tmpl && strcmp(tmpl, s->template_id) && strcmp(tmpl, s->alias)) continue;
    if (after_ms && s->started_ms < after_ms) continue;
    if (!paused) running++;
    if (has_cursor) {
      int c = key_desc(s->started_ms, s->id, cur_ms, cur_id);
      if (asc ? c >= 0 : c <= 0) continue; /* on an earlier page */
    }
    if (v2 && shown == limit) {
      more = 1;
      continue;
    }
    shown++;
    last_ms = s->started_ms;
    snprintf(last_id, sizeof last_id, "%s", s->id);
    cJSON_AddItemToArray(arr, listed_json(e, s, 0));
  }
  reg_put_all(e, v, n);
  if (more)
    snprintf(r->next_token, sizeof r->next_token, "c%lld.%s", (long long)last_ms, last_id);
  if (v2 && want_running) r->total_running = running;
  api_reply_json(r, 200, arr);
}

/* ---- per-sandbox calls ---------------------------------------------------------------- */

static void get_info(engine *e, sbx *s, api_reply *r) {
  api_reply_json(r, 200, listed_json(e, s, 1));
}

static void set_timeout(engine *e, sbx *s, api_req *q, api_reply *r) {
  cJSON *body = parse_body(q, r, 1);
  if (!body) return;
  int secs;
  if (!cJSON_GetObjectItemCaseSensitive(body, "timeout")) {
    api_error(r, 400, "'timeout' is required");
  } else if (get_timeout(body, "timeout", 0, &secs, r) == 0) {
    /* An explicit timeout sets the lifetime, shorter or longer. */
    pthread_mutex_lock(&s->mu);
    s->end_ms = now_unix_ms() + (int64_t)secs * 1000;
    pthread_mutex_unlock(&s->mu);
    reg_save(e, s);
    lifecycle_kick(e);
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
      extend(s, secs);
      reg_save(e, s);
      lifecycle_kick(e);
      r->status = 204;
    }
  }
  cJSON_Delete(body);
}

static void pause_sbx(engine *e, sbx *s, api_reply *r) {
  int rc = lifecycle_pause(e, s);
  if (rc == 0)
    r->status = 204;
  else if (rc == -EALREADY)
    api_error(r, 409, "sandbox \"%s\" is already paused", s->id);
  else
    api_error(r, 500, "cannot pause sandbox \"%s\": %s", s->id, asbe_errmsg());
}

/* connect (200 running / 201 resumed) and the deprecated resume (201; 409
 * if it was running). */
static void connect_sbx(engine *e, sbx *s, api_req *q, api_reply *r, int resume) {
  cJSON *body = parse_body(q, r, 0);
  if (!body) return;
  int secs;
  /* E2B's spec requires timeout for connect, but its SDKs omit it when the
   * caller gave none: then the SDKs' default lifetime applies. */
  if (get_timeout(body, "timeout", resume ? DEFAULT_CREATE_TIMEOUT_S : DEFAULT_CONNECT_TIMEOUT_S,
                  &secs, r)) {
    cJSON_Delete(body);
    return;
  }
  cJSON_Delete(body);
  pthread_mutex_lock(&s->mu);
  int was_paused = s->state == SBX_PAUSED;
  pthread_mutex_unlock(&s->mu);
  if (resume && !was_paused) {
    api_error(r, 409, "sandbox \"%s\" is already running", s->id);
    return;
  }
  /* The new lifetime first: a sandbox thawed with its old, passed
   * deadline would be paused again by the lifecycle thread at once. */
  extend(s, secs);
  if (was_paused) {
    int rc = lifecycle_resume(e, s);
    if (rc) {
      api_error(r, 500, "cannot resume sandbox \"%s\": %s", s->id, asbe_errmsg());
      return;
    }
    engine_log("sandbox %s: resumed", s->id);
  }
  reg_save(e, s);
  lifecycle_kick(e);
  api_reply_json(r, was_paused ? 201 : 200, sandbox_json(e, s));
}

static cJSON *metric_json(const sbx *s, const sbx_metric *m) {
  cJSON *j = cJSON_CreateObject();
  char t[40];
  rfc3339_ms(m->ts * 1000, t);
  cJSON_AddStringToObject(j, "timestamp", t);
  cJSON_AddNumberToObject(j, "timestampUnix", (double)m->ts);
  cJSON_AddNumberToObject(j, "cpuCount", s->cpu_count);
  cJSON_AddNumberToObject(j, "cpuUsedPct", m->cpu_pct);
  cJSON_AddNumberToObject(j, "memUsed", (double)m->mem_used);
  cJSON_AddNumberToObject(j, "memTotal", (double)m->mem_total);
  cJSON_AddNumberToObject(j, "memCache", (double)m->mem_cache);
  cJSON_AddNumberToObject(j, "diskUsed", (double)m->disk_used);
  cJSON_AddNumberToObject(j, "diskTotal", (double)m->disk_total);
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

static void metrics(engine *e, sbx *s, api_req *q, api_reply *r) {
  int64_t start, end;
  if (parse_unix_q(q, "start", &start, r) || parse_unix_q(q, "end", &end, r)) return;
  lifecycle_sample(e, s); /* include "now" */
  cJSON *arr = cJSON_CreateArray();
  pthread_mutex_lock(&s->mu);
  for (unsigned i = 0; i < s->ring_n; i++) {
    unsigned at = (s->ring_at + ENGINE_METRICS_RING - s->ring_n + i) % ENGINE_METRICS_RING;
    const sbx_metric *m = &s->ring[at];
    if ((start && m->ts < start) || (end && m->ts > end)) continue;
    cJSON_AddItemToArray(arr, metric_json(s, m));
  }
  pthread_mutex_unlock(&s->mu);
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
    lifecycle_sample(e, s);
    pthread_mutex_lock(&s->mu);
    if (s->ring_n) {
      unsigned at = (s->ring_at + ENGINE_METRICS_RING - 1) % ENGINE_METRICS_RING;
      cJSON_AddItemToObject(map, s->id, metric_json(s, &s->ring[at]));
    }
    pthread_mutex_unlock(&s->mu);
    reg_put(e, s);
  }
  free(dup);
  api_reply_json(r, 200, out);
}

/* Logs: the agent log of the sandbox (asb-init's and envd's stdout and
 * stderr), read through the fd the runtime holds: nothing the sandbox
 * names. At most `limit` lines of at most 4 KiB each are returned, and at
 * most LOGS_READ_MAX bytes read (a sandbox writes what it likes there). */
#define LOGS_READ_MAX (16u << 20)
static void logs(engine *e, sbx *s, api_req *q, api_reply *r, int v2) {
  (void)e;
  int64_t start = 0, limit = 1000;
  const char *ls = api_query(q, "limit");
  if (ls && *ls && (asbi_parse_i64(ls, strlen(ls), &limit) || limit < 1 || limit > 10000)) {
    api_error(r, 400, "limit must be 1..10000");
    return;
  }
  if (parse_unix_q(q, "start", &start, r)) return;
  cJSON *lines = cJSON_CreateArray(), *entries = cJSON_CreateArray();
  int lfd = asbe_sandbox_agent_log(s->iso);
  if (lfd >= 0) {
    FILE *f = fdopen(lfd, "r");
    if (!f) close(lfd);
    char line[4096];
    int64_t count = 0;
    size_t read_total = 0;
    char ts[40];
    rfc3339_ms(s->started_ms, ts);
    while (f && count < limit && read_total < LOGS_READ_MAX && fgets(line, sizeof line, f)) {
      size_t n = strlen(line);
      read_total += n;
      while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
      if (!asbi_utf8_valid(line, n)) continue;
      cJSON *l = cJSON_CreateObject();
      cJSON_AddStringToObject(l, "timestamp", ts);
      cJSON_AddStringToObject(l, "line", line);
      cJSON_AddItemToArray(lines, l);
      cJSON *en = cJSON_CreateObject();
      cJSON_AddStringToObject(en, "timestamp", ts);
      cJSON_AddStringToObject(en, "level", "info");
      cJSON_AddStringToObject(en, "message", line);
      cJSON_AddItemToObject(en, "fields", cJSON_CreateObject());
      cJSON_AddItemToArray(entries, en);
      count++;
    }
    if (f) fclose(f);
  }
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

/* ---- templates ------------------------------------------------------------------------- */

static void templates_list(engine *e, api_reply *r) {
  cJSON *arr = cJSON_CreateArray();
  size_t n = 0;
  template_info **v = templates_snapshot(e, &n);
  for (size_t i = 0; v && i < n; i++) cJSON_AddItemToArray(arr, template_json(e, v[i]));
  templates_put_all(e, v, n);
  bundled_list_waiting(e, arr);
  api_reply_json(r, 200, arr);
}

/* ---- dispatch ------------------------------------------------------------------------------ */

/* Splits "/sandboxes/<id>[/<action>]" (after an optional "/v2"). */
static int sandbox_path(const char *path, char *id, size_t idlen,
                        const char **action) {
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
  if (is(q, "POST", "/sandboxes") || is(q, "POST", "/v2/sandboxes")) return create(e, q, r);
  if (is(q, "GET", "/sandboxes")) return list(e, q, r, 0);
  if (is(q, "GET", "/v2/sandboxes")) return list(e, q, r, 1);
  if (is(q, "GET", "/sandboxes/metrics")) return metrics_many(e, q, r);
  if (is(q, "GET", "/templates") || is(q, "GET", "/v2/templates")) return templates_list(e, r);
  if (is(q, "POST", "/templates/builds") || is(q, "POST", "/v2/templates/builds"))
    return build_handle(e, q, r);
  if (asbi_startswith(q->path, "/templates/") && strcmp(q->method, "GET") == 0) {
    const char *name = q->path + strlen("/templates/");
    template_info *t = templates_find(e, name);
    cJSON *waiting = t ? NULL : bundled_waiting_json(e, name);
    if (waiting) {
      api_reply_json(r, 200, waiting);
      return;
    }
    if (!t) return api_error(r, 404, "template \"%s\" not found", name);
    api_reply_json(r, 200, template_json(e, t));
    templates_put(e, t);
    return;
  }
  if (asbi_startswith(q->path, "/templates/") && strcmp(q->method, "DELETE") == 0)
    return template_delete(e, q->path + strlen("/templates/"), r);
  char id[64];
  const char *action = NULL;
  if (!sandbox_path(q->path, id, sizeof id, &action))
    return api_error(r, 404, "no such endpoint: %s %s", q->method, q->path);
  int v2 = asbi_startswith(q->path, "/v2/");
  struct {
    const char *method, *action;
    int v2_ok, v1_ok;
  } routes[] = {{"GET", "", 0, 1},         {"DELETE", "", 0, 1},
                {"POST", "timeout", 0, 1}, {"POST", "refreshes", 0, 1},
                {"POST", "pause", 0, 1},   {"POST", "resume", 0, 1},
                {"POST", "connect", 1, 1}, {"GET", "metrics", 0, 1},
                {"GET", "logs", 1, 1}};
  int known = 0, method_ok = 0;
  for (size_t i = 0; i < ASBI_ARRAY_LEN(routes); i++)
    if (strcmp(routes[i].action, action) == 0 && (v2 ? routes[i].v2_ok : routes[i].v1_ok)) {
      known = 1;
      if (strcmp(routes[i].method, q->method) == 0) method_ok = 1;
    }
  if (!known) return api_error(r, 404, "no such endpoint: %s %s", q->method, q->path);
  if (!method_ok) return api_error(r, 405, "method %s not allowed on %s", q->method, q->path);
  sbx *s = reg_get(e, id);
  if (!s) return not_found(e, r, id, NULL);
  pthread_mutex_lock(&s->mu);
  char dying[32] = "";
  if (s->state == SBX_DEAD) snprintf(dying, sizeof dying, "%s", s->end_reason);
  pthread_mutex_unlock(&s->mu);
  if (dying[0]) { /* being killed right now: already gone for callers */
    reg_put(e, s);
    return not_found(e, r, id, dying);
  }
  if (strcmp(action, "") == 0 && strcmp(q->method, "GET") == 0) get_info(e, s, r);
  else if (strcmp(action, "") == 0) {
    lifecycle_kill(e, s, "killed");
    r->status = 204;
  } else if (strcmp(action, "timeout") == 0) set_timeout(e, s, q, r);
  else if (strcmp(action, "refreshes") == 0) refresh(e, s, q, r);
  else if (strcmp(action, "pause") == 0) pause_sbx(e, s, r);
  else if (strcmp(action, "resume") == 0) connect_sbx(e, s, q, r, 1);
  else if (strcmp(action, "connect") == 0) connect_sbx(e, s, q, r, 0);
  else if (strcmp(action, "metrics") == 0) metrics(e, s, q, r);
  else if (strcmp(action, "logs") == 0) logs(e, s, q, r, v2);
  reg_put(e, s);
}
