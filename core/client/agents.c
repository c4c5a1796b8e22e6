/* The agents API (agents.h): coding-agent sessions served by a sandbox's
 * server SDK under /agents on its commands port, routed like named
 * commands (named.c). A turn's events stream as NDJSON; a stream that
 * breaks is resumed with GET .../events?after=<last seq>&stream=ndjson, so
 * the caller sees every event once, in order.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/cmdargs.h"
#include "proto/ndjson.h"
#include "proto/pjson.h"
#include "proto/url.h"
#include "util/util.h"
#include "envd.h"

#define DEFAULT_PORT 9000
#define RESUME_TRIES 8 /* reconnects in a row without a new event */

ASBI_DEFINE_OPTIONS_INIT(asb_agents_options, ASB_AGENTS_OPTIONS_VERSION, ASB_AGENTS_OPTIONS_INIT)
ASBI_DEFINE_OPTIONS_INIT(asb_agent_session_options, ASB_AGENT_SESSION_OPTIONS_VERSION,
                         ASB_AGENT_SESSION_OPTIONS_INIT)

struct asb_agent_session {
  asbi_life life; /* the user's reference and one per call in flight */
  asb_sandbox *sandbox;
  char *id;
  char *agent;
  int port;
};

struct asb_agent_event {
  asb_int64 seq;
  int turn;
  char *type;
  char *json;
};

struct asb_agent_event_list {
  asb_agent_event *v;
  size_t n, cap;
};

/* ---- requests ------------------------------------------------------------------------ */

typedef struct req_ctx {
  asb_sandbox *sb;
  int port;
  long timeout_ms;
  asb_cancel *cancel;
  asb_cancel *stop;
} req_ctx;

/* Maps an error reply of the agents service ({"error", "type"}) or of the
 * route to it. */
static int map_error(const asbi_http_resp *resp, const char *what, int port) {
  long st = resp->status;
  cJSON *j = resp->body.len ? asbi_pj_parse(resp->body.data, resp->body.len, NULL) : NULL;
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
  int rc;
  if (cJSON_IsString(err) && cJSON_IsString(type)) {
    const char *m = err->valuestring, *t = type->valuestring;
    int code;
    if (st == 404 && !strcmp(t, "NotFound"))
      code = ASB_EUNSUPPORTED;
    else if (st == 404 || st == 410 || !strcmp(t, "AgentNotInstalledError"))
      code = ASB_ENOTFOUND;
    else if (st == 409)
      code = ASB_EEXISTS;
    else if (st == 400 || st == 413 || st == 405)
      code = ASB_EINVAL;
    else if (st == 401)
      code = ASB_EAUTH;
    else if (st == 429)
      code = ASB_ERATELIMIT;
    else if (!strcmp(t, "InstallError"))
      code = ASB_ECOMMANDFAILED;
    else
      code = ASB_ERROR;
    if (code == ASB_EUNSUPPORTED)
      rc =
          asbi_err_remote(code, (int)st, t, "%s: port %d does not serve agents: %s", what, port, m);
    else
      rc = asbi_err_remote(code, (int)st, t, "%s: %s", what, m);
    cJSON_Delete(j);
    return rc;
  }
  if (st == 502 && cJSON_IsString(err) && strcmp(err->valuestring, "port_closed") == 0) {
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "message");
    rc = asbi_err_remote(ASB_ECONNECTION, (int)st, "port_closed", "%s: %s", what,
                         cJSON_IsString(msg) ? msg->valuestring : "nothing listens on the port");
    cJSON_Delete(j);
    return rc;
  }
  cJSON_Delete(j);
  return asbi_map_http_error(resp, what);
}

typedef struct stream_ud stream_ud;
static int on_stream_data(void *ud, const char *p, size_t n);

/* One request to path (after the port's root: "/agents/..."). With su,
 * the body of a 2xx reply streams into it; else *out gets the parsed JSON
 * reply (may be NULL). */
static int request(const req_ctx *rc, const char *method, const char *path, const char *body,
                   const char *what, stream_ud *su, cJSON **out) {
  if (out) *out = NULL;
  asb_sandbox *sb = rc->sb;
  int port = rc->port ? rc->port : DEFAULT_PORT;
  if (port < 1 || port > 65535) return asbi_err(ASB_EINVAL, "%s: port %d out of range", what, port);
  asbi_buf url = ASBI_BUF_INIT, store = ASBI_BUF_INIT;
  asbi_route_cfg cfg = {sb->client->sandbox_url, sb->client->debug, sb->domain, sb->id};
  if (asbi_url_sandbox_base(&url, &cfg, port, ASBI_URL_API) != 0 || asbi_buf_puts(&url, path)) {
    asbi_buf_free(&url);
    return asbi_err(ASB_EINVAL, "%s: cannot route to sandbox %s", what, sb->id);
  }
  char port_hdr[40];
  snprintf(port_hdr, sizeof port_hdr, "E2b-Sandbox-Port: %d", port);
  const char *hs[10];
  size_t n = 0;
  hs[n++] = sb->hdr_id;
  hs[n++] = port_hdr;
  if (sb->hdr_token) hs[n++] = sb->hdr_token;
  hs[n++] = sb->hdr_ua;
  if (body) hs[n++] = "Content-Type: application/json";
  if (su) hs[n++] = "Accept: application/x-ndjson";
  if (sb->traffic_token) {
    if (asbi_buf_printf(&store, "E2B-Traffic-Access-Token: %s", sb->traffic_token)) {
      asbi_buf_free(&url);
      return asbi_oom();
    }
    hs[n++] = store.data;
  }
  hs[n] = NULL;
  /* streams wait as long as the turn runs unless a timeout was given */
  long t = rc->timeout_ms;
  long timeout = su ? (t > 0 ? t : 0) : asbi_client_timeout(sb->client, t);
  asbi_http_req r = {.method = method,
                     .url = url.data,
                     .headers = hs,
                     .headers2 = (const char *const *)sb->client->headers,
                     .body = body,
                     .body_len = body ? strlen(body) : 0,
                     .timeout_ms = timeout,
                     .cancel = rc->cancel,
                     .stop = rc->stop,
                     .idempotent = strcmp(method, "GET") == 0,
                     .max_retries = sb->client->max_retries,
                     .on_data = su ? on_stream_data : NULL,
                     .ud = su};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  int rcode = asbi_http_do(sb->client->http, &r, &resp);
  if (rcode) {
    asbi_prefix_error(rcode, what);
  } else if (resp.status >= 400) {
    rcode = map_error(&resp, what, port);
  } else if (!su && out) {
    const char *why = NULL;
    *out = resp.body.len ? asbi_pj_parse(resp.body.data, resp.body.len, &why) : NULL;
    if (!*out)
      rcode = asbi_err(ASB_EPROTOCOL, "%s: malformed reply from port %d: %s", what, port,
                       why ? why : "empty body");
  }
  asbi_http_resp_free(&resp);
  asbi_buf_free(&url);
  asbi_buf_free(&store);
  return rcode;
}

/* ---- events and streams ------------------------------------------------------------------ */

static void event_clear(asb_agent_event *e) {
  free(e->type);
  free(e->json);
  memset(e, 0, sizeof *e);
}

static int list_push(asb_agent_event_list *l, const asb_agent_event *e) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 32;
    asb_agent_event *v = realloc(l->v, cap * sizeof *v);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
  }
  asb_agent_event *d = &l->v[l->n];
  d->seq = e->seq;
  d->turn = e->turn;
  d->type = asbi_strdup(e->type);
  d->json = asbi_strdup(e->json);
  if (!d->type || !d->json) {
    event_clear(d);
    return -1;
  }
  l->n++;
  return 0;
}

struct stream_ud {
  const asb_agents_options *opts;
  asbi_ndjson nd;
  asb_int64 last_seq;            /* the last event delivered */
  int turn;                      /* the turn whose end ends the stream (0 = none yet) */
  int want_turn_end;             /* send: stop at that turn's turn.completed */
  char *turn_json;               /* its turn.completed */
  asb_agent_event_list *collect; /* events: keep them */
  int cb_rc;                     /* the callback's non-zero return */
  int proto_rc;                  /* a malformed event */
  int progress;                  /* events delivered by this request */
};

static int on_line(void *ud, const char *line, size_t len) {
  stream_ud *su = ud;
  const char *why = NULL;
  cJSON *j = asbi_pj_parse(line, len, &why);
  const cJSON *seq = cJSON_GetObjectItemCaseSensitive(j, "seq");
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
  if (!cJSON_IsObject(j) || !cJSON_IsNumber(seq) || !cJSON_IsString(type)) {
    cJSON_Delete(j);
    su->proto_rc = asbi_err(ASB_EPROTOCOL, "agents: a malformed event in the stream%s%s",
                            why ? ": " : "", why ? why : "");
    return su->proto_rc;
  }
  asb_int64 s = (asb_int64)seq->valuedouble;
  const cJSON *turn = cJSON_GetObjectItemCaseSensitive(j, "turn");
  int t = cJSON_IsNumber(turn) ? turn->valueint : 0;
  if (s <= su->last_seq) { /* a repeat after a resume */
    cJSON_Delete(j);
    return 0;
  }
  if (su->want_turn_end && !su->turn && !strcmp(type->valuestring, "turn.started")) su->turn = t;
  asb_agent_event e = {s, t, asbi_strdup(type->valuestring), asbi_strndup(line, len)};
  cJSON_Delete(j);
  if (!e.type || !e.json) {
    event_clear(&e);
    return su->proto_rc = asbi_oom();
  }
  su->last_seq = s;
  su->progress++;
  int done = su->want_turn_end && su->turn && t == su->turn && !strcmp(e.type, "turn.completed");
  if (su->collect && list_push(su->collect, &e)) {
    event_clear(&e);
    return su->proto_rc = asbi_oom();
  }
  if (su->opts && su->opts->on_event) {
    int rc = su->opts->on_event(&e, su->opts->userdata);
    if (rc) {
      su->cb_rc = rc;
      event_clear(&e);
      return asbi_err(rc < 0 ? rc : ASB_EUSER, "agents: the event callback returned %d", rc);
    }
  }
  if (done) {
    su->turn_json = e.json;
    e.json = NULL;
  }
  event_clear(&e);
  return 0;
}

static int on_stream_data(void *ud, const char *p, size_t n) {
  stream_ud *su = ud;
  return asbi_ndjson_feed(&su->nd, p, n, on_line, su);
}

/* The end of one streamed request: deliver a last line without newline. */
static int stream_finish(stream_ud *su) {
  int rc = asbi_ndjson_finish(&su->nd, on_line, su);
  asbi_ndjson_free(&su->nd);
  asbi_ndjson_init(&su->nd, 0);
  return rc;
}

/* A failure a stream is resumed after: the connection, not the caller. */
static int resumable(int rc) {
  return rc == ASB_ECONNECTION;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- options and sessions ---------------------------------------------------------------- */

static void ctx_from(req_ctx *c, asb_agent_session *s, const asb_agents_options *o) {
  c->sb = s->sandbox;
  c->port = o && o->port ? o->port : s->port;
  c->timeout_ms = o ? o->timeout_ms : 0;
  c->cancel = o ? o->cancel : NULL;
  c->stop = s->life.stop;
}

static int session_make(asb_agent_session **out, asb_sandbox *sb, const char *id, const char *agent,
                        int port) {
  asb_agent_session *s = calloc(1, sizeof *s);
  if (!s) return asbi_oom();
  if (asbi_life_init(&s->life)) {
    free(s);
    return asbi_oom();
  }
  s->id = asbi_strdup(id);
  s->agent = asbi_strdup(agent ? agent : "");
  s->port = port;
  if (!s->id || !s->agent) {
    free(s->id);
    free(s->agent);
    asbi_life_drop(&s->life);
    asbi_life_fini(&s->life);
    free(s);
    return asbi_oom();
  }
  asbi_sandbox_ref(sb);
  s->sandbox = sb;
  *out = s;
  return ASB_OK;
}

static void session_drop(asb_agent_session *s) {
  if (!asbi_life_drop(&s->life)) return;
  asbi_sandbox_unref(s->sandbox);
  free(s->id);
  free(s->agent);
  asbi_life_fini(&s->life);
  free(s);
}

static void session_release_(asb_agent_session *const *s) {
  if (*s) session_drop(*s);
}

static asb_agent_session *session_hold(asb_agent_session *s) {
  if (s) asbi_life_hold(&s->life);
  return s;
}

#define SESSION_CALL(s)                                                                       \
  asb_agent_session *const held_session_ __attribute__((cleanup(session_release_), unused)) = \
      session_hold(s)

static int json_text(const cJSON *j, char **out) {
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_json_print(j, &b)) {
    asbi_buf_free(&b);
    return asbi_oom();
  }
  *out = asbi_buf_detach(&b, NULL);
  return ASB_OK;
}

/* Add a string member when s is set. */
static void add_opt_str(cJSON *o, const char *k, const char *s) {
  if (s) cJSON_AddStringToObject(o, k, s);
}

int asb_agent_session_new(asb_agent_session **out, asb_sandbox *sb, const char *agent,
                          const asb_agent_session_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (out) *out = NULL;
  if (!out || !sb || !agent || !*agent)
    return asbi_err(ASB_EINVAL, "agent_session_new: sandbox, agent and out are required");
  ASBI_CHECK_VERSION(o, ASB_AGENT_SESSION_OPTIONS_VERSION, "asb_agent_session_options");
  cJSON *b = cJSON_CreateObject();
  if (!b) return asbi_oom();
  cJSON_AddStringToObject(b, "agent", agent);
  if (o) {
    add_opt_str(b, "cwd", o->cwd);
    add_opt_str(b, "model", o->model);
    add_opt_str(b, "base_url", o->base_url);
    add_opt_str(b, "api_key_env", o->api_key_env);
    add_opt_str(b, "wire_api", o->wire_api);
    add_opt_str(b, "approval", o->approval);
    add_opt_str(b, "sandbox", o->sandbox);
    if (o->args) {
      cJSON *a = cJSON_AddArrayToObject(b, "args");
      for (const char *const *p = o->args; *p; p++) cJSON_AddItemToArray(a, cJSON_CreateString(*p));
    }
    if (o->env) {
      cJSON *e = cJSON_AddObjectToObject(b, "env");
      for (const char *const *p = o->env; *p; p++) {
        const char *eq = strchr(*p, '=');
        if (!eq || eq == *p) {
          cJSON_Delete(b);
          return asbi_err(ASB_EINVAL, "agent_session_new: env entry '%.100s' is not NAME=value",
                          *p);
        }
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - *p), *p);
        cJSON_AddStringToObject(e, name, eq + 1);
      }
    }
    if (o->install) cJSON_AddBoolToObject(b, "install", o->install > 0);
  }
  char *body = NULL;
  int rc = json_text(b, &body);
  cJSON_Delete(b);
  if (rc) return rc;
  req_ctx c = {sb, o ? o->port : 0, o ? o->timeout_ms : 0, o ? o->cancel : NULL, sb->life.stop};
  char what[160];
  snprintf(what, sizeof what, "agent_session_new %.100s", agent);
  cJSON *reply = NULL;
  rc = request(&c, "POST", "/agents/sessions", body, what, NULL, &reply);
  free(body);
  if (rc) return rc;
  const char *id = NULL;
  asbi_pj_get_str(reply, "id", &id);
  if (!id || !*id) {
    cJSON_Delete(reply);
    return asbi_err(ASB_EPROTOCOL, "%s: the reply has no session id", what);
  }
  rc = session_make(out, sb, id, agent, o ? o->port : 0);
  cJSON_Delete(reply);
  return rc;
}

static int session_path(asbi_buf *b, const asb_agent_session *s, const char *action) {
  if (asbi_buf_puts(b, "/agents/sessions/") || asbi_url_escape(b, s->id, 0)) return -1;
  if (action && (asbi_buf_putc(b, '/') || asbi_buf_puts(b, action))) return -1;
  return 0;
}

int asb_agent_session_connect(asb_agent_session **out, asb_sandbox *sb, const char *id,
                              const asb_agents_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (out) *out = NULL;
  if (!out || !sb || !id || !*id)
    return asbi_err(ASB_EINVAL, "agent_session_connect: sandbox, id and out are required");
  ASBI_CHECK_VERSION(o, ASB_AGENTS_OPTIONS_VERSION, "asb_agents_options");
  asbi_buf p = ASBI_BUF_INIT;
  if (asbi_buf_puts(&p, "/agents/sessions/") || asbi_url_escape(&p, id, 0)) {
    asbi_buf_free(&p);
    return asbi_oom();
  }
  req_ctx c = {sb, o ? o->port : 0, o ? o->timeout_ms : 0, o ? o->cancel : NULL, sb->life.stop};
  cJSON *reply = NULL;
  int rc = request(&c, "GET", p.data, NULL, "agent_session_connect", NULL, &reply);
  asbi_buf_free(&p);
  if (rc) return rc;
  const char *agent = NULL;
  asbi_pj_get_str(reply, "agent", &agent);
  rc = session_make(out, sb, id, agent, o ? o->port : 0);
  cJSON_Delete(reply);
  return rc;
}

void asb_agent_session_free(asb_agent_session *s) {
  if (!s) return;
  asbi_life_stop(&s->life);
  session_drop(s);
}

const char *asb_agent_session_id(const asb_agent_session *s) {
  return s ? s->id : NULL;
}
const char *asb_agent_session_agent(const asb_agent_session *s) {
  return s ? s->agent : NULL;
}

/* ---- turns ------------------------------------------------------------------------------ */

struct asb_agent_turn {
  cJSON *j;
  char *json;
  char **files;
  size_t nfiles;
  char **cmds;
  int *codes;
  size_t ncmds;
  asb_int64 last_seq;
};

void asb_agent_turn_free(asb_agent_turn *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nfiles; i++) free(t->files[i]);
  for (size_t i = 0; i < t->ncmds; i++) free(t->cmds[i]);
  free(t->files);
  free(t->cmds);
  free(t->codes);
  free(t->json);
  cJSON_Delete(t->j);
  free(t);
}

static int turn_from(asb_agent_turn **out, char *json /* taken */, asb_int64 seq) {
  asb_agent_turn *t = calloc(1, sizeof *t);
  if (!t) {
    free(json);
    return asbi_oom();
  }
  t->json = json;
  t->last_seq = seq;
  t->j = asbi_pj_parse(json, strlen(json), NULL);
  if (!cJSON_IsObject(t->j)) {
    asb_agent_turn_free(t);
    return asbi_err(ASB_EPROTOCOL, "agent_session_send: a malformed turn.completed");
  }
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(t->j, "files_changed"), *it;
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(t->j, "commands");
  size_t nf = cJSON_IsArray(f) ? (size_t)cJSON_GetArraySize(f) : 0;
  size_t nc = cJSON_IsArray(c) ? (size_t)cJSON_GetArraySize(c) : 0;
  t->files = calloc(nf + 1, sizeof *t->files);
  t->cmds = calloc(nc + 1, sizeof *t->cmds);
  t->codes = calloc(nc + 1, sizeof *t->codes);
  if (!t->files || !t->cmds || !t->codes) {
    asb_agent_turn_free(t);
    return asbi_oom();
  }
  const cJSON *fa = nf ? f : NULL, *ca = nc ? c : NULL;
  cJSON_ArrayForEach(it, fa) {
    if (cJSON_IsString(it) && (t->files[t->nfiles] = asbi_strdup(it->valuestring))) t->nfiles++;
  }
  cJSON_ArrayForEach(it, ca) {
    const char *cmd = NULL;
    asbi_pj_get_str(it, "command", &cmd);
    if (!cmd || !(t->cmds[t->ncmds] = asbi_strdup(cmd))) continue;
    const cJSON *ec = cJSON_GetObjectItemCaseSensitive(it, "exit_code");
    t->codes[t->ncmds++] = cJSON_IsNumber(ec) ? ec->valueint : -1;
  }
  *out = t;
  return ASB_OK;
}

/* Follow the session's log after su->last_seq until the stream ends (the
 * session idle) or su's turn ended; resumes after broken connections. */
static int follow(asb_agent_session *s, const asb_agents_options *o, stream_ud *su,
                  const char *what) {
  req_ctx c;
  ctx_from(&c, s, o);
  int misses = 0;
  for (;;) {
    asbi_buf p = ASBI_BUF_INIT;
    if (session_path(&p, s, "events") ||
        asbi_buf_printf(&p, "?after=%lld&stream=ndjson", (long long)su->last_seq)) {
      asbi_buf_free(&p);
      return asbi_oom();
    }
    su->progress = 0;
    int rc = request(&c, "GET", p.data, NULL, what, su, NULL);
    asbi_buf_free(&p);
    int frc = stream_finish(su);
    if (!rc) rc = frc;
    if (su->cb_rc) return su->cb_rc < 0 ? su->cb_rc : ASB_EUSER;
    if (su->proto_rc) return su->proto_rc;
    if (su->turn_json) return ASB_OK;
    if (!rc) {
      if (!su->want_turn_end) return ASB_OK; /* idle: everything came */
      /* idle without our turn's end: only if its events were dropped */
      if (++misses > RESUME_TRIES)
        return asbi_err(ASB_EPROTOCOL, "%s: the session went idle without the turn's end", what);
      continue;
    }
    if (!resumable(rc)) return rc;
    misses = su->progress ? 0 : misses + 1;
    if (misses > RESUME_TRIES) return rc;
    nap_ms(100L * misses);
  }
}

int asb_agent_session_send(asb_agent_turn **out, asb_agent_session *s, const char *prompt,
                           const asb_agents_options *o) {
  SESSION_CALL(s);
  if (out) *out = NULL;
  if (!out || !s || !prompt || !*prompt)
    return asbi_err(ASB_EINVAL, "agent_session_send: session, prompt and out are required");
  ASBI_CHECK_VERSION(o, ASB_AGENTS_OPTIONS_VERSION, "asb_agents_options");
  cJSON *b = cJSON_CreateObject();
  cJSON_AddStringToObject(b, "prompt", prompt);
  char *body = NULL;
  int rc = json_text(b, &body);
  cJSON_Delete(b);
  if (rc) return rc;
  /* the log's position before the turn, in case the first request breaks
   * before its first event */
  stream_ud su = {.opts = o, .want_turn_end = 1};
  asbi_ndjson_init(&su.nd, 0);
  req_ctx c;
  ctx_from(&c, s, o);
  asbi_buf p = ASBI_BUF_INIT;
  if (session_path(&p, s, "messages") || asbi_buf_puts(&p, "?stream=ndjson")) {
    asbi_buf_free(&p);
    free(body);
    asbi_ndjson_free(&su.nd);
    return asbi_oom();
  }
  rc = request(&c, "POST", p.data, body, "agent_session_send", &su, NULL);
  asbi_buf_free(&p);
  free(body);
  int frc = stream_finish(&su);
  if (!rc) rc = frc;
  if (su.cb_rc)
    rc = su.cb_rc < 0 ? su.cb_rc : ASB_EUSER;
  else if (su.proto_rc)
    rc = su.proto_rc;
  else if (!su.turn_json && (!rc || resumable(rc)) && su.turn)
    rc = follow(s, o, &su, "agent_session_send"); /* the stream broke: resume */
  else if (!su.turn_json && !rc)
    rc = asbi_err(ASB_EPROTOCOL, "agent_session_send: the stream ended before the turn did");
  asbi_ndjson_free(&su.nd);
  if (rc || !su.turn_json) {
    free(su.turn_json);
    return rc ? rc : asbi_err(ASB_EPROTOCOL, "agent_session_send: no turn.completed");
  }
  return turn_from(out, su.turn_json, su.last_seq);
}

int asb_agent_session_events(asb_agent_event_list **out, asb_agent_session *s, asb_int64 after,
                             const asb_agents_options *o) {
  SESSION_CALL(s);
  if (out) *out = NULL;
  if (!out || !s || after < 0)
    return asbi_err(ASB_EINVAL, "agent_session_events: session and out are required, after >= 0");
  ASBI_CHECK_VERSION(o, ASB_AGENTS_OPTIONS_VERSION, "asb_agents_options");
  asb_agent_event_list *l = calloc(1, sizeof *l);
  if (!l) return asbi_oom();
  stream_ud su = {.opts = o, .last_seq = after, .collect = l};
  asbi_ndjson_init(&su.nd, 0);
  int rc;
  if (o && o->follow) {
    rc = follow(s, o, &su, "agent_session_events");
  } else {
    /* the page(s) there are now */
    req_ctx c;
    ctx_from(&c, s, o);
    rc = ASB_OK;
    for (int more = 1; more && !rc;) {
      asbi_buf p = ASBI_BUF_INIT;
      cJSON *reply = NULL;
      if (session_path(&p, s, "events") ||
          asbi_buf_printf(&p, "?after=%lld&limit=1000", (long long)su.last_seq)) {
        asbi_buf_free(&p);
        rc = asbi_oom();
        break;
      }
      rc = request(&c, "GET", p.data, NULL, "agent_session_events", NULL, &reply);
      asbi_buf_free(&p);
      if (rc) break;
      const cJSON *evs = cJSON_GetObjectItemCaseSensitive(reply, "events"), *e;
      if (!cJSON_IsArray(evs)) {
        cJSON_Delete(reply);
        rc = asbi_err(ASB_EPROTOCOL, "agent_session_events: the reply has no events");
        break;
      }
      cJSON_ArrayForEach(e, evs) {
        char *line = NULL;
        if ((rc = json_text(e, &line))) break;
        rc = on_line(&su, line, strlen(line));
        free(line);
        if (rc) break;
      }
      more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "more")) &&
             cJSON_GetArraySize(evs) > 0;
      cJSON_Delete(reply);
    }
    if (su.cb_rc) rc = su.cb_rc < 0 ? su.cb_rc : ASB_EUSER;
  }
  asbi_ndjson_free(&su.nd);
  free(su.turn_json);
  if (rc) {
    asb_agent_event_list_free(l);
    return rc;
  }
  *out = l;
  return ASB_OK;
}

static int simple(asb_agent_session *s, const char *method, const char *action,
                  const asb_agents_options *o, const char *what, cJSON **reply) {
  req_ctx c;
  ctx_from(&c, s, o);
  asbi_buf p = ASBI_BUF_INIT;
  if (session_path(&p, s, action)) {
    asbi_buf_free(&p);
    return asbi_oom();
  }
  int rc = request(&c, method, p.data, !strcmp(method, "POST") ? "{}" : NULL, what, NULL, reply);
  asbi_buf_free(&p);
  return rc;
}

int asb_agent_session_cancel(asb_agent_session *s, const asb_agents_options *o) {
  SESSION_CALL(s);
  if (!s) return asbi_err(ASB_EINVAL, "agent_session_cancel: no session");
  ASBI_CHECK_VERSION(o, ASB_AGENTS_OPTIONS_VERSION, "asb_agents_options");
  cJSON *reply = NULL;
  int rc = simple(s, "POST", "cancel", o, "agent_session_cancel", &reply);
  cJSON_Delete(reply);
  return rc;
}

int asb_agent_session_info(char **json, asb_agent_session *s, const asb_agents_options *o) {
  SESSION_CALL(s);
  if (json) *json = NULL;
  if (!s || !json) return asbi_err(ASB_EINVAL, "agent_session_info: session and json are required");
  ASBI_CHECK_VERSION(o, ASB_AGENTS_OPTIONS_VERSION, "asb_agents_options");
  cJSON *reply = NULL;
  int rc = simple(s, "GET", NULL, o, "agent_session_info", &reply);
  if (!rc) rc = json_text(reply, json);
  cJSON_Delete(reply);
  return rc;
}

int asb_agent_session_close(asb_agent_session *s, const asb_agents_options *o) {
  SESSION_CALL(s);
  if (!s) return asbi_err(ASB_EINVAL, "agent_session_close: no session");
  ASBI_CHECK_VERSION(o, ASB_AGENTS_OPTIONS_VERSION, "asb_agents_options");
  cJSON *reply = NULL;
  int rc = simple(s, "DELETE", NULL, o, "agent_session_close", &reply);
  cJSON_Delete(reply);
  return rc;
}

/* ---- the agents ----------------------------------------------------------------------- */

struct asb_agent {
  char *name, *package, *version, *path;
  int installed;
};

struct asb_agent_list {
  asb_agent *v;
  size_t n;
};

static char *str_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? asbi_strdup(v->valuestring) : NULL;
}

static void agent_free(asb_agent *a) {
  free(a->name);
  free(a->package);
  free(a->version);
  free(a->path);
}

static int agent_item(const cJSON *j, void *item) {
  asb_agent *a = item;
  if (!cJSON_IsObject(j) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "name")))
    return asbi_err(ASB_EPROTOCOL, "agents_list: an agent without a name");
  a->name = str_of(j, "name");
  a->package = str_of(j, "package");
  a->version = str_of(j, "version");
  a->path = str_of(j, "path");
  a->installed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "installed"));
  if (!a->name || !a->package) {
    if (!a->package && a->name) a->package = asbi_strdup("");
    if (!a->name || !a->package) {
      agent_free(a);
      return asbi_oom();
    }
  }
  return ASB_OK;
}
static void agent_drop(void *item) {
  agent_free(item);
}

int asb_agents_list(asb_agent_list **out, asb_sandbox *sb, const asb_agents_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (out) *out = NULL;
  if (!out || !sb) return asbi_err(ASB_EINVAL, "agents_list: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_AGENTS_OPTIONS_VERSION, "asb_agents_options");
  req_ctx c = {sb, o ? o->port : 0, o ? o->timeout_ms : 0, o ? o->cancel : NULL, sb->life.stop};
  cJSON *reply = NULL;
  int rc = request(&c, "GET", "/agents", NULL, "agents_list", NULL, &reply);
  if (rc) return rc;
  asb_agent_list *l = calloc(1, sizeof *l);
  if (!l)
    rc = asbi_oom();
  else
    rc = asbi_json_member_items(reply, "agents", "agents_list", sizeof *l->v, agent_item,
                                agent_drop, (void **)&l->v, &l->n);
  cJSON_Delete(reply);
  if (rc) {
    free(l);
    return rc;
  }
  *out = l;
  return ASB_OK;
}

size_t asb_agent_list_count(const asb_agent_list *l) {
  return l ? l->n : 0;
}
const asb_agent *asb_agent_list_get(const asb_agent_list *l, size_t i) {
  return l && i < l->n ? &l->v[i] : NULL;
}
const asb_agent *asb_agent_list_find(const asb_agent_list *l, const char *name) {
  for (size_t i = 0; l && name && i < l->n; i++)
    if (!strcmp(l->v[i].name, name)) return &l->v[i];
  return NULL;
}
void asb_agent_list_free(asb_agent_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) agent_free(&l->v[i]);
  free(l->v);
  free(l);
}
const char *asb_agent_name(const asb_agent *a) {
  return a ? a->name : NULL;
}
const char *asb_agent_package(const asb_agent *a) {
  return a ? a->package : NULL;
}
int asb_agent_installed(const asb_agent *a) {
  return a ? a->installed : 0;
}
const char *asb_agent_version(const asb_agent *a) {
  return a ? a->version : NULL;
}
const char *asb_agent_path(const asb_agent *a) {
  return a ? a->path : NULL;
}

/* The install's own stream: install.* events until install.completed. */
typedef struct install_ud {
  const asb_agents_options *opts;
  char *status, *version, *error;
  int cb_rc;
} install_ud;

static int install_event(const asb_agent_event *e, void *ud) {
  install_ud *iu = ud;
  if (!strcmp(e->type, "install.completed")) {
    cJSON *j = asbi_pj_parse(e->json, strlen(e->json), NULL);
    free(iu->status);
    free(iu->version);
    free(iu->error);
    iu->status = str_of(j, "status");
    iu->version = str_of(j, "version");
    iu->error = str_of(j, "error");
    cJSON_Delete(j);
  }
  if (iu->opts && iu->opts->on_event) {
    int rc = iu->opts->on_event(e, iu->opts->userdata);
    if (rc) iu->cb_rc = rc;
    return rc;
  }
  return 0;
}

int asb_agents_install(char **version, asb_sandbox *sb, const char *agent,
                       const asb_agents_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (version) *version = NULL;
  if (!sb || !agent || !*agent) return asbi_err(ASB_EINVAL, "agents_install: bad arguments");
  ASBI_CHECK_VERSION(o, ASB_AGENTS_OPTIONS_VERSION, "asb_agents_options");
  cJSON *b = cJSON_CreateObject();
  if (o) {
    add_opt_str(b, "version", o->install_version);
    add_opt_str(b, "registry", o->registry);
    add_opt_str(b, "source", o->source);
  }
  char *body = NULL;
  int rc = json_text(b, &body);
  cJSON_Delete(b);
  if (rc) return rc;
  asbi_buf p = ASBI_BUF_INIT;
  if (asbi_buf_puts(&p, "/agents/") || asbi_url_escape(&p, agent, 0) ||
      asbi_buf_puts(&p, "/install?stream=ndjson")) {
    asbi_buf_free(&p);
    free(body);
    return asbi_oom();
  }
  install_ud iu = {o, NULL, NULL, NULL, 0};
  asb_agents_options mine = ASB_AGENTS_OPTIONS_INIT;
  if (o) mine = *o;
  mine.on_event = install_event;
  mine.userdata = &iu;
  stream_ud su = {.opts = &mine};
  asbi_ndjson_init(&su.nd, 0);
  req_ctx c = {sb, o ? o->port : 0, o ? o->timeout_ms : 0, o ? o->cancel : NULL, sb->life.stop};
  char what[160];
  snprintf(what, sizeof what, "agents_install %.100s", agent);
  rc = request(&c, "POST", p.data, body, what, &su, NULL);
  asbi_buf_free(&p);
  free(body);
  int frc = stream_finish(&su);
  if (!rc) rc = frc;
  asbi_ndjson_free(&su.nd);
  free(su.turn_json);
  if (iu.cb_rc)
    rc = iu.cb_rc < 0 ? iu.cb_rc : ASB_EUSER;
  else if (su.proto_rc)
    rc = su.proto_rc;
  if (!rc && !iu.status)
    rc = asbi_err(ASB_EPROTOCOL, "%s: the stream ended before install.completed", what);
  else if (!rc && strcmp(iu.status, "installed") != 0)
    rc = asbi_err_remote(ASB_ECOMMANDFAILED, 0, "InstallError", "%s: %s", what,
                         iu.error ? iu.error : "the install failed");
  if (!rc && version) {
    *version = iu.version;
    iu.version = NULL;
  }
  free(iu.status);
  free(iu.version);
  free(iu.error);
  return rc;
}

/* ---- event getters ------------------------------------------------------------------------ */

asb_int64 asb_agent_event_seq(const asb_agent_event *e) {
  return e ? e->seq : 0;
}
const char *asb_agent_event_type(const asb_agent_event *e) {
  return e ? e->type : NULL;
}
int asb_agent_event_turn(const asb_agent_event *e) {
  return e ? e->turn : 0;
}
const char *asb_agent_event_json(const asb_agent_event *e) {
  return e ? e->json : NULL;
}

size_t asb_agent_event_list_count(const asb_agent_event_list *l) {
  return l ? l->n : 0;
}
const asb_agent_event *asb_agent_event_list_get(const asb_agent_event_list *l, size_t i) {
  return l && i < l->n ? &l->v[i] : NULL;
}
void asb_agent_event_list_free(asb_agent_event_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) event_clear(&l->v[i]);
  free(l->v);
  free(l);
}

/* ---- turn getters --------------------------------------------------------------------------- */

static const char *jstr(const asb_agent_turn *t, const char *k) {
  const cJSON *v = t ? cJSON_GetObjectItemCaseSensitive(t->j, k) : NULL;
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static asb_int64 usage_of(const asb_agent_turn *t, const char *k) {
  const cJSON *u = t ? cJSON_GetObjectItemCaseSensitive(t->j, "usage") : NULL;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(u, k);
  return cJSON_IsNumber(v) ? (asb_int64)v->valuedouble : 0;
}

const char *asb_agent_turn_status(const asb_agent_turn *t) {
  return jstr(t, "status");
}
int asb_agent_turn_number(const asb_agent_turn *t) {
  const cJSON *v = t ? cJSON_GetObjectItemCaseSensitive(t->j, "turn") : NULL;
  return cJSON_IsNumber(v) ? v->valueint : 0;
}
const char *asb_agent_turn_final_message(const asb_agent_turn *t) {
  return jstr(t, "final_message");
}
const char *asb_agent_turn_error(const asb_agent_turn *t) {
  return jstr(t, "error");
}
size_t asb_agent_turn_files_changed_count(const asb_agent_turn *t) {
  return t ? t->nfiles : 0;
}
const char *asb_agent_turn_files_changed_get(const asb_agent_turn *t, size_t i) {
  return t && i < t->nfiles ? t->files[i] : NULL;
}
size_t asb_agent_turn_commands_count(const asb_agent_turn *t) {
  return t ? t->ncmds : 0;
}
const char *asb_agent_turn_command(const asb_agent_turn *t, size_t i) {
  return t && i < t->ncmds ? t->cmds[i] : NULL;
}
int asb_agent_turn_command_exit_code(const asb_agent_turn *t, size_t i) {
  return t && i < t->ncmds ? t->codes[i] : -1;
}
asb_int64 asb_agent_turn_input_tokens(const asb_agent_turn *t) {
  return usage_of(t, "input_tokens");
}
asb_int64 asb_agent_turn_output_tokens(const asb_agent_turn *t) {
  return usage_of(t, "output_tokens");
}
asb_int64 asb_agent_turn_last_seq(const asb_agent_turn *t) {
  return t ? t->last_seq : 0;
}
const char *asb_agent_turn_json(const asb_agent_turn *t) {
  return t ? t->json : NULL;
}
