/* The MCP protocol core, independent of the transport: revisions and their
 * negotiation, the lifecycle, JSON-RPC dispatch (batches where the revision
 * has them), calls on worker threads with cancellation, progress and log
 * notifications, and the ticker that flushes streamed output.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcp.h"
#include "proto/pjson.h"
#include "util/util.h"

/* The revisions the official TypeScript SDK (@modelcontextprotocol/sdk)
 * offers: its LATEST_PROTOCOL_VERSION first, then SUPPORTED_PROTOCOL_VERSIONS. */
const char *const mcp_revisions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                     "2024-10-07"};
const size_t mcp_revision_count = sizeof mcp_revisions / sizeof mcp_revisions[0];

int mcp_revision_find(const char *rev) {
  for (size_t i = 0; rev && i < mcp_revision_count; i++)
    if (!strcmp(rev, mcp_revisions[i])) return (int)i;
  return -1;
}

/* Revisions are dates: later ones compare greater as strings. */
int mcp_rev_at_least(const mcp_session *s, const char *rev) {
  const char *r = s->rev >= 0 ? mcp_revisions[s->rev] : mcp_revisions[0];
  return strcmp(r, rev) >= 0;
}

static const char *const LEVELS[] = {"debug", "info",     "notice", "warning",
                                     "error", "critical", "alert",  "emergency"};

void mcp_logf(const mcp_server *srv, const char *fmt, ...) {
  if (srv && !srv->cfg.verbose) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "agent-sandbox-mcp: %s\n", buf);
}

/* ---- sinks ------------------------------------------------------------------ */

void mcp_sink_ref(mcp_sink *s) {
  if (s) atomic_fetch_add(&s->refs, 1);
}

void mcp_sink_unref(mcp_sink *s) {
  if (s && atomic_fetch_sub(&s->refs, 1) == 1) s->destroy(s);
}

typedef struct batch_sink {
  mcp_sink base;
  mcp_sink *parent;
  size_t n, got;
  asbi_buf arr;
  pthread_mutex_t mu;
} batch_sink;

static void batch_send(mcp_sink *sk, char *msg, int final) {
  batch_sink *b = (batch_sink *)sk;
  if (!final) {
    b->parent->send(b->parent, msg, 0);
    return;
  }
  pthread_mutex_lock(&b->mu);
  if (msg) {
    asbi_buf_puts(&b->arr, b->arr.len ? "," : "[");
    asbi_buf_puts(&b->arr, msg);
    free(msg);
  }
  int done = ++b->got == b->n;
  char *out = NULL;
  if (done && b->arr.len) {
    asbi_buf_puts(&b->arr, "]");
    out = asbi_buf_detach(&b->arr, NULL);
  }
  pthread_mutex_unlock(&b->mu);
  /* Every answer of the batch was suppressed: none at all (JSON-RPC). */
  if (done) b->parent->send(b->parent, out, 1);
}

static void batch_destroy(mcp_sink *sk) {
  batch_sink *b = (batch_sink *)sk;
  mcp_sink_unref(b->parent);
  asbi_buf_free(&b->arr);
  pthread_mutex_destroy(&b->mu);
  free(b);
}

mcp_sink *mcp_batch_sink_new(mcp_sink *parent, size_t n) {
  batch_sink *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  atomic_init(&b->base.refs, 1);
  b->base.send = batch_send;
  b->base.destroy = batch_destroy;
  b->parent = parent;
  mcp_sink_ref(parent);
  b->n = n;
  asbi_buf_init(&b->arr, 0);
  pthread_mutex_init(&b->mu, NULL);
  return &b->base;
}

/* ---- the ticker ----------------------------------------------------------------- */

#define TICK_MS 100
#define FLUSH_AFTER_MS 100
#define FLUSH_BYTES 8192
#define HEARTBEAT_MS 5000

static void flush_output(mcp_call *c, int final);

/* Wake the ticker: a call has a progress token or output waiting. Never
 * called with a call's out_mu held (the ticker takes it under srv->mu). */
static void ticker_kick(mcp_server *srv) {
  pthread_mutex_lock(&srv->mu);
  if (!srv->tick_wanted) {
    srv->tick_wanted = 1;
    pthread_cond_signal(&srv->tick_cv);
  }
  pthread_mutex_unlock(&srv->mu);
}

/* Sleeps while no call needs it, so calls without progress or output
 * (most of them) cost no extra wake-ups. */
static void *ticker_main(void *arg) {
  mcp_server *srv = arg;
  pthread_mutex_lock(&srv->mu);
  while (!srv->stopping) {
    if (!srv->tick_wanted) {
      pthread_cond_wait(&srv->tick_cv, &srv->mu);
      continue;
    }
    struct timespec ts = asbi_deadline(CLOCK_REALTIME, TICK_MS);
    pthread_cond_timedwait(&srv->tick_cv, &srv->mu, &ts);
    if (srv->stopping) break;
    uint64_t now = asbi_now_ms();
    int wanted = 0;
    for (mcp_session *s = srv->sessions; s; s = s->next) {
      pthread_mutex_lock(&s->mu);
      for (mcp_call *c = s->calls; c; c = c->next) {
        pthread_mutex_lock(&c->out_mu);
        if (c->pending_since_ms && now - c->pending_since_ms >= FLUSH_AFTER_MS) flush_output(c, 0);
        if (c->pending_since_ms) wanted = 1;
        pthread_mutex_unlock(&c->out_mu);
        if (c->progress_token) wanted = 1;
        if (c->progress_token && now - c->last_progress_ms >= HEARTBEAT_MS) {
          char msg[64];
          snprintf(msg, sizeof msg, "running for %llu s",
                   (unsigned long long)((now - c->started_ms) / 1000));
          mcp_call_progress(c, msg);
        }
      }
      pthread_mutex_unlock(&s->mu);
    }
    srv->tick_wanted = wanted;
  }
  pthread_mutex_unlock(&srv->mu);
  return NULL;
}

/* ---- threads -------------------------------------------------------------------- */

typedef struct mcp_thread {
  struct mcp_thread *next;
  mcp_server *srv;
  pthread_t th;
  void *(*fn)(void *);
  void *arg;
  int done;
} mcp_thread;

static void *thread_main(void *a) {
  mcp_thread *t = a;
  t->fn(t->arg);
  pthread_mutex_lock(&t->srv->threads_mu);
  t->done = 1;
  pthread_cond_broadcast(&t->srv->threads_cv);
  pthread_mutex_unlock(&t->srv->threads_mu);
  return NULL;
}

/* Join the threads that are done (they are only leaving). Holds
 * threads_mu. */
static void reap_locked(mcp_server *srv) {
  for (mcp_thread **p = &srv->threads; *p;) {
    mcp_thread *t = *p;
    if (!t->done) {
      p = &t->next;
      continue;
    }
    *p = t->next;
    pthread_join(t->th, NULL);
    free(t);
  }
}

int mcp_thread_start(mcp_server *srv, void *(*fn)(void *), void *arg) {
  mcp_thread *t = calloc(1, sizeof *t);
  if (!t) return ENOMEM;
  t->srv = srv;
  t->fn = fn;
  t->arg = arg;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1u << 20);
  pthread_mutex_lock(&srv->threads_mu);
  reap_locked(srv);
  int rc = pthread_create(&t->th, &attr, thread_main, t);
  if (rc == 0) {
    t->next = srv->threads;
    srv->threads = t;
  } else {
    free(t);
  }
  pthread_mutex_unlock(&srv->threads_mu);
  pthread_attr_destroy(&attr);
  return rc;
}

/* Wait up to ms for every thread to be done, join them; how many are not. */
static int threads_join(mcp_server *srv, long ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  pthread_mutex_lock(&srv->threads_mu);
  int left;
  for (;;) {
    reap_locked(srv);
    left = 0;
    for (mcp_thread *t = srv->threads; t; t = t->next) left++;
    if (!left || pthread_cond_timedwait(&srv->threads_cv, &srv->threads_mu, &ts) == ETIMEDOUT)
      break;
  }
  reap_locked(srv);
  pthread_mutex_unlock(&srv->threads_mu);
  return left;
}

/* ---- the server ---------------------------------------------------------------- */

static int disabled(const mcp_config *cfg, const char *name) {
  for (char **d = cfg->disabled; d && *d; d++)
    if (!strcmp(*d, name)) return 1;
  return 0;
}

int mcp_server_init(mcp_server *srv, const mcp_config *cfg, const asb_client_options *copts) {
  memset(srv, 0, sizeof *srv);
  srv->cfg = *cfg;
  const char *err = NULL;
  srv->tools = asbi_pj_parse(mcp_tools_json, strlen(mcp_tools_json), &err);
  if (!srv->tools) {
    fprintf(stderr, "agent-sandbox-mcp: tools.json: %s\n", err ? err : "invalid");
    return -1;
  }
  for (char **d = cfg->disabled; d && *d; d++) {
    int found = 0;
    cJSON *t;
    cJSON_ArrayForEach(t, srv->tools) {
      const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "name");
      if (cJSON_IsString(n) && !strcmp(n->valuestring, *d)) found = 1;
    }
    if (!found) {
      fprintf(stderr, "agent-sandbox-mcp: --disable-tool %s: no such tool\n", *d);
      cJSON_Delete(srv->tools);
      return -1;
    }
  }
  for (int i = cJSON_GetArraySize(srv->tools) - 1; i >= 0; i--) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(srv->tools, i), "name");
    if (disabled(cfg, n->valuestring)) cJSON_DeleteItemFromArray(srv->tools, i);
  }
  pthread_mutex_init(&srv->mu, NULL);
  pthread_cond_init(&srv->tick_cv, NULL);
  pthread_mutex_init(&srv->threads_mu, NULL);
  pthread_cond_init(&srv->threads_cv, NULL);
  if (copts) {
    int rc = asb_client_new(&srv->client, copts);
    if (rc != ASB_OK) {
      fprintf(stderr, "agent-sandbox-mcp: %s\n", asb_error_last()->message);
      cJSON_Delete(srv->tools);
      return -1;
    }
  }
  if (pthread_create(&srv->ticker, NULL, ticker_main, srv) == 0) srv->ticker_started = 1;
  return 0;
}

int mcp_server_free(mcp_server *srv) {
  pthread_mutex_lock(&srv->mu);
  srv->stopping = 1;
  pthread_cond_broadcast(&srv->tick_cv);
  pthread_mutex_unlock(&srv->mu);
  if (srv->ticker_started) pthread_join(srv->ticker, NULL);
  int left = threads_join(srv, 10000);
  if (left) return left; /* a call is stuck in the library: leave it all */
  pthread_mutex_destroy(&srv->threads_mu);
  pthread_cond_destroy(&srv->threads_cv);
  mcp_sandbox_cache_free(srv);
  for (size_t i = 0; i < sizeof srv->tools_json / sizeof srv->tools_json[0]; i++)
    free(srv->tools_json[i]);
  cJSON_Delete(srv->tools);
  asb_client_free(srv->client);
  pthread_mutex_destroy(&srv->mu);
  pthread_cond_destroy(&srv->tick_cv);
  return 0;
}

/* ---- sessions -------------------------------------------------------------------- */

mcp_session *mcp_session_new(mcp_server *srv, mcp_sink *out, const char *transport) {
  mcp_session *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->srv = srv;
  s->rev = -1;
  atomic_init(&s->log_level, MCP_LOG_INFO);
  s->out = out;
  mcp_sink_ref(out);
  s->transport = transport;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  pthread_mutex_init(&s->default_mu, NULL);
  pthread_mutex_lock(&srv->mu);
  s->next = srv->sessions;
  srv->sessions = s;
  pthread_mutex_unlock(&srv->mu);
  return s;
}

void mcp_session_set_out(mcp_session *s, mcp_sink *out) {
  mcp_sink_ref(out);
  pthread_mutex_lock(&s->mu);
  mcp_sink *old = s->out;
  s->out = out;
  pthread_mutex_unlock(&s->mu);
  mcp_sink_unref(old);
}

int mcp_session_busy(mcp_session *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->ncalls;
  pthread_mutex_unlock(&s->mu);
  return n > 0;
}

static void cancel_locked(mcp_call *c) {
  if (!atomic_exchange(&c->cancelled, 1)) asb_cancel_request(c->cancel);
}

int mcp_session_wait_idle(mcp_session *s, long ms) {
  struct timespec ts = asbi_deadline(CLOCK_REALTIME, ms);
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  while (s->ncalls > 0 && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&s->cv, &s->mu, &ts);
  int idle = s->ncalls == 0;
  pthread_mutex_unlock(&s->mu);
  return idle;
}

void mcp_session_cancel(mcp_session *s) {
  pthread_mutex_lock(&s->mu);
  for (mcp_call *c = s->calls; c; c = c->next) cancel_locked(c);
  pthread_mutex_unlock(&s->mu);
}

void mcp_session_cancel_all(mcp_session *s, long grace_ms) {
  mcp_session_cancel(s);
  if (!mcp_session_wait_idle(s, grace_ms))
    mcp_logf(NULL, "calls still running after cancellation; exiting anyway");
}

void mcp_session_close(mcp_session *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->state = 2;
  pthread_mutex_unlock(&s->mu);
  mcp_session_cancel_all(s, 10000);
  mcp_bg_close_all(s);
  mcp_sandbox_end_default(s);
  mcp_server *srv = s->srv;
  pthread_mutex_lock(&srv->mu);
  for (mcp_session **p = &srv->sessions; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  pthread_mutex_unlock(&srv->mu);
  /* Calls that outlived the grace still point at the session: leave it. */
  pthread_mutex_lock(&s->mu);
  int left = s->ncalls;
  pthread_mutex_unlock(&s->mu);
  if (left) return;
  mcp_sink_unref(s->out);
  for (size_t i = 0; i < s->nknown; i++) free(s->known[i]);
  free(s->known);
  free(s->default_id);
  free(s->client_name);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->default_mu);
  free(s);
}

static mcp_sink *session_out(mcp_session *s) {
  pthread_mutex_lock(&s->mu);
  mcp_sink *o = s->out;
  mcp_sink_ref(o);
  pthread_mutex_unlock(&s->mu);
  return o;
}

/* ---- notifications out ---------------------------------------------------------- */

void mcp_call_notify(mcp_call *c, const char *method, cJSON *params) {
  char *m = mcp_rpc_notification(method, params);
  if (m) c->sink->send(c->sink, m, 0);
}

static cJSON *log_params(int level, const char *logger, cJSON *data) {
  cJSON *p = cJSON_CreateObject();
  if (!p) {
    cJSON_Delete(data);
    return NULL;
  }
  cJSON_AddStringToObject(p, "level", LEVELS[level]);
  if (logger) cJSON_AddStringToObject(p, "logger", logger);
  cJSON_AddItemToObject(p, "data", data ? data : cJSON_CreateNull());
  return p;
}

void mcp_call_log(mcp_call *c, int level, const char *logger, cJSON *data) {
  if (level < atomic_load(&c->s->log_level)) {
    cJSON_Delete(data);
    return;
  }
  cJSON *p = log_params(level, logger, data);
  if (p) mcp_call_notify(c, "notifications/message", p);
}

void mcp_session_log(mcp_session *s, int level, const char *logger, cJSON *data) {
  if (level < atomic_load(&s->log_level)) {
    cJSON_Delete(data);
    return;
  }
  cJSON *p = log_params(level, logger, data);
  char *m = p ? mcp_rpc_notification("notifications/message", p) : NULL;
  mcp_sink *o = session_out(s);
  if (o && m)
    o->send(o, m, 0);
  else
    free(m);
  mcp_sink_unref(o);
}

/* Takes c->out_mu: the worker and the ticker both report progress, and the
 * values must grow in the order they are sent. */
void mcp_call_progress(mcp_call *c, const char *message) {
  if (!c->progress_token || atomic_load(&c->cancelled)) return;
  cJSON *p = cJSON_CreateObject();
  cJSON *tok = cJSON_Parse(c->progress_token);
  if (!p || !tok) {
    cJSON_Delete(p);
    cJSON_Delete(tok);
    return;
  }
  cJSON_AddItemToObject(p, "progressToken", tok);
  if (message && mcp_rev_at_least(c->s, "2025-03-26"))
    cJSON_AddStringToObject(p, "message", message);
  pthread_mutex_lock(&c->out_mu);
  c->last_progress_ms = asbi_now_ms();
  /* Progress must grow with every notification; there is no known total. */
  c->progress += 1;
  cJSON_AddNumberToObject(p, "progress", c->progress);
  mcp_call_notify(c, "notifications/progress", p);
  pthread_mutex_unlock(&c->out_mu);
}

int mcp_call_cancelled(mcp_call *c) {
  return atomic_load(&c->cancelled);
}

/* Caller holds c->out_mu. Sends what is pending; all of it when final,
 * otherwise whole UTF-8 sequences only (the rest waits for its bytes). */
static void flush_output(mcp_call *c, int final) {
  static const char *const loggers[] = {"stdout", "stderr"};
  for (int w = 0; w < 2; w++) {
    asbi_buf *b = &c->pending[w];
    if (!b->len) continue;
    size_t n = b->len;
    if (!final) {
      /* Back off over a trailing incomplete sequence (at most 3 bytes). */
      size_t k = 0;
      while (k < 3 && k < n && ((unsigned char)b->data[n - 1 - k] & 0xC0) == 0x80) k++;
      if (k < n && (unsigned char)b->data[n - 1 - k] >= 0xC0) {
        unsigned char lead = (unsigned char)b->data[n - 1 - k];
        size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
        if (k + 1 < want) n -= k + 1;
      }
    }
    if (!n) continue;
    cJSON *text = mcp_json_str(b->data, n);
    asbi_buf_consume(b, n);
    mcp_call_log(c, MCP_LOG_INFO, loggers[w], text);
  }
  c->pending_since_ms = (c->pending[0].len || c->pending[1].len) ? asbi_now_ms() : 0;
}

void mcp_call_output(mcp_call *c, int which, const char *data, size_t len) {
  if (!len) return;
  uint64_t now = asbi_now_ms();
  if (c->progress_token && now - c->last_progress_ms >= 1000) {
    char msg[64];
    snprintf(msg, sizeof msg, "running for %llu s, writing output",
             (unsigned long long)((now - c->started_ms) / 1000));
    mcp_call_progress(c, msg);
  }
  if (atomic_load(&c->s->log_level) > MCP_LOG_INFO) return;
  pthread_mutex_lock(&c->out_mu);
  if (c->stream_capped || !c->streaming) {
    pthread_mutex_unlock(&c->out_mu);
    return;
  }
  size_t room =
      c->s->srv->cfg.max_stream > c->streamed ? c->s->srv->cfg.max_stream - c->streamed : 0;
  size_t take = len < room ? len : room;
  if (take) asbi_buf_append(&c->pending[which], data, take);
  c->streamed += take;
  int kick = 0;
  if (!c->pending_since_ms) {
    c->pending_since_ms = now;
    kick = 1;
  }
  if (take < len) {
    c->stream_capped = 1;
    flush_output(c, 1);
    char note[160];
    snprintf(note, sizeof note,
             "[output streaming stopped after %zu bytes; the result keeps the end of each stream]",
             c->streamed);
    mcp_call_log(c, MCP_LOG_NOTICE, "agent-sandbox-mcp", cJSON_CreateString(note));
  } else if (c->pending[which].len >= FLUSH_BYTES) {
    flush_output(c, 0);
  }
  kick = kick && c->pending_since_ms;
  pthread_mutex_unlock(&c->out_mu);
  if (kick) ticker_kick(c->s->srv);
}

void mcp_call_output_end(mcp_call *c) {
  pthread_mutex_lock(&c->out_mu);
  flush_output(c, 1);
  c->streaming = 0;
  pthread_mutex_unlock(&c->out_mu);
}

/* ---- answering ---------------------------------------------------------------- */

/* Errors whose id is unknown: JSON-RPC says "id": null, but MCP's schema
 * has no null id and 2025-11-25 leaves the id out (the SDKs reject null). */
static int id_null(const mcp_session *s) {
  return s->rev >= 0 && !mcp_rev_at_least(s, "2025-11-25");
}

static void reply_error(mcp_session *s, mcp_sink *sink, const char *id, int code, const char *msg) {
  char *m = mcp_rpc_error(id, id_null(s), code, msg, NULL);
  sink->send(sink, m, 1);
}

static void reply_result(mcp_sink *sink, const char *id, cJSON *result /* consumed */) {
  char *rt = result ? cJSON_PrintUnformatted(result) : NULL;
  cJSON_Delete(result);
  char *m = rt ? mcp_rpc_result(id, rt) : NULL;
  free(rt);
  sink->send(sink, m, 1);
}

void mcp_session_oversized(mcp_session *s, size_t len, mcp_sink *sink) {
  char msg[160];
  snprintf(msg, sizeof msg,
           "Invalid Request: message of %zu bytes or more is over the limit of %zu bytes", len,
           s->srv->cfg.max_message);
  reply_error(s, sink, NULL, MCP_INVALID_REQUEST, msg);
}

/* ---- methods answered on the reader's thread -------------------------------- */

static cJSON *server_info(const mcp_session *s) {
  cJSON *i = cJSON_CreateObject();
  cJSON_AddStringToObject(i, "name", MCP_SERVER_NAME);
  cJSON_AddStringToObject(i, "version", asb_version(NULL, NULL, NULL));
  if (mcp_rev_at_least(s, "2025-06-18")) cJSON_AddStringToObject(i, "title", "agent-sandbox");
  if (mcp_rev_at_least(s, "2025-11-25"))
    cJSON_AddStringToObject(i, "description",
                            "Disposable Linux sandboxes for running commands and code");
  return i;
}

static void do_initialize(mcp_session *s, const mcp_msg *m, mcp_sink *sink) {
  pthread_mutex_lock(&s->mu);
  int state = s->state;
  pthread_mutex_unlock(&s->mu);
  if (state != 0) {
    reply_error(s, sink, m->id, MCP_INVALID_REQUEST, "Invalid Request: already initialized");
    return;
  }
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(m->params, "protocolVersion");
  const cJSON *caps = cJSON_GetObjectItemCaseSensitive(m->params, "capabilities");
  const cJSON *info = cJSON_GetObjectItemCaseSensitive(m->params, "clientInfo");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(info, "name");
  if (!cJSON_IsString(ver) || !cJSON_IsObject(caps) || !cJSON_IsObject(info) ||
      !cJSON_IsString(name)) {
    reply_error(s, sink, m->id, MCP_INVALID_PARAMS,
                "Invalid params: initialize needs protocolVersion (string), capabilities "
                "(object) and clientInfo (object with a name)");
    return;
  }
  /* The client's revision if we have it, else our newest (the client then
   * decides whether it can go on). */
  int rev = mcp_revision_find(ver->valuestring);
  if (rev < 0) rev = 0;
  pthread_mutex_lock(&s->mu);
  s->rev = rev;
  s->state = 1;
  free(s->client_name);
  s->client_name = asbi_strdup(name->valuestring);
  pthread_mutex_unlock(&s->mu);
  mcp_logf(s->srv, "%s session: client %s asked for %s, speaking %s", s->transport,
           name->valuestring, ver->valuestring, mcp_revisions[rev]);

  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "protocolVersion", mcp_revisions[rev]);
  cJSON *c = cJSON_AddObjectToObject(r, "capabilities");
  cJSON_AddObjectToObject(c, "logging");
  cJSON *t = cJSON_AddObjectToObject(c, "tools");
  cJSON_AddBoolToObject(t, "listChanged", 0);
  cJSON *rs = cJSON_AddObjectToObject(c, "resources");
  cJSON_AddBoolToObject(rs, "subscribe", 0);
  cJSON_AddBoolToObject(rs, "listChanged", 0);
  cJSON_AddItemToObject(r, "serverInfo", server_info(s));
  char instr[768];
  snprintf(instr, sizeof instr,
           "These tools give you disposable, isolated Linux sandboxes: run shell commands "
           "(run_command) and code in stateful kernels (run_code), read and write files, expose "
           "ports (get_url). Tools called without a sandbox_id use a default sandbox (template "
           "%s) that is created on first use and %s when this session ends; create_sandbox "
           "makes more. Nothing you do in a sandbox touches the machine this server runs on.",
           s->srv->cfg.template_id ? s->srv->cfg.template_id : "base",
           s->srv->cfg.keep ? "kept" : "killed");
  cJSON_AddStringToObject(r, "instructions", instr);
  reply_result(sink, m->id, r);
}

/* tools/list for the session's revision: fields a revision does not define
 * are left out (title and outputSchema came in 2025-06-18, annotations in
 * 2025-03-26). Built once per revision. */
static char *tools_list_json(mcp_session *s) {
  mcp_server *srv = s->srv;
  int rev = s->rev >= 0 ? s->rev : 0;
  pthread_mutex_lock(&srv->mu);
  if (!srv->tools_json[rev]) {
    cJSON *tools = cJSON_Duplicate(srv->tools, 1);
    cJSON *t;
    cJSON_ArrayForEach(t, tools) {
      if (!mcp_rev_at_least(s, "2025-06-18")) {
        cJSON_DeleteItemFromObjectCaseSensitive(t, "title");
        cJSON_DeleteItemFromObjectCaseSensitive(t, "outputSchema");
      }
      if (!mcp_rev_at_least(s, "2025-03-26"))
        cJSON_DeleteItemFromObjectCaseSensitive(t, "annotations");
      else if (mcp_rev_at_least(s, "2025-06-18")) {
        /* annotations.title is the tool's title too */
        cJSON *a = cJSON_GetObjectItemCaseSensitive(t, "annotations");
        const cJSON *ti = cJSON_GetObjectItemCaseSensitive(t, "title");
        if (a && cJSON_IsString(ti)) cJSON_AddStringToObject(a, "title", ti->valuestring);
      }
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "tools", tools);
    srv->tools_json[rev] = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
  }
  char *out = asbi_strdup(srv->tools_json[rev]);
  pthread_mutex_unlock(&srv->mu);
  return out;
}

static void do_set_level(mcp_session *s, const mcp_msg *m, mcp_sink *sink) {
  const cJSON *lv = cJSON_GetObjectItemCaseSensitive(m->params, "level");
  for (size_t i = 0; cJSON_IsString(lv) && i < sizeof LEVELS / sizeof LEVELS[0]; i++)
    if (!strcmp(lv->valuestring, LEVELS[i])) {
      atomic_store(&s->log_level, (int)i);
      reply_result(sink, m->id, cJSON_CreateObject());
      return;
    }
  reply_error(s, sink, m->id, MCP_INVALID_PARAMS,
              "Invalid params: level must be one of debug, info, notice, warning, error, "
              "critical, alert, emergency");
}

static void do_resource_templates(mcp_session *s, const mcp_msg *m, mcp_sink *sink) {
  cJSON *r = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(r, "resourceTemplates");
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "uriTemplate", "sandbox://{sandbox_id}/{+path}");
  cJSON_AddStringToObject(t, "name", "sandbox-file");
  if (mcp_rev_at_least(s, "2025-06-18")) cJSON_AddStringToObject(t, "title", "A file in a sandbox");
  cJSON_AddStringToObject(t, "description",
                          "A file or directory in a sandbox, by its absolute path: "
                          "sandbox://<sandbox_id>/home/user/notes.txt");
  cJSON_AddItemToArray(arr, t);
  reply_result(sink, m->id, r);
}

/* ---- calls on worker threads ----------------------------------------------------- */

static void call_free(mcp_call *c) {
  asb_cancel_free(c->cancel);
  cJSON_Delete(c->params);
  free(c->id);
  free(c->method);
  free(c->progress_token);
  asbi_buf_free(&c->pending[0]);
  asbi_buf_free(&c->pending[1]);
  pthread_mutex_destroy(&c->out_mu);
  mcp_sink_unref(c->sink);
  free(c);
}

static const cJSON *find_tool(mcp_server *srv, const char *name) {
  const cJSON *t;
  cJSON_ArrayForEach(t, srv->tools) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "name");
    if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) return t;
  }
  return NULL;
}

/* The result object of a tool call for the session's revision. */
static cJSON *tool_result(mcp_call *c, mcp_result *r) {
  cJSON *res = cJSON_CreateObject();
  if (r->structured) {
    /* The serialized JSON as text too, for clients that only read text. */
    int has_text = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, r->content) {
      const cJSON *ty = cJSON_GetObjectItemCaseSensitive(it, "type");
      if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "text")) has_text = 1;
    }
    if (!has_text) {
      char *t = cJSON_PrintUnformatted(r->structured);
      cJSON *item = cJSON_CreateObject();
      cJSON_AddStringToObject(item, "type", "text");
      cJSON_AddStringToObject(item, "text", t ? t : "{}");
      free(t);
      cJSON_InsertItemInArray(r->content, 0, item);
    }
  }
  cJSON_AddItemToObject(res, "content", r->content);
  r->content = NULL;
  if (r->structured && mcp_rev_at_least(c->s, "2025-06-18")) {
    cJSON_AddItemToObject(res, "structuredContent", r->structured);
    r->structured = NULL;
  }
  if (r->is_error) cJSON_AddBoolToObject(res, "isError", 1);
  cJSON_Delete(r->structured);
  return res;
}

static void run_tool(mcp_call *c) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(c->params, "name");
  if (!cJSON_IsString(name)) {
    reply_error(c->s, c->sink, c->id, MCP_INVALID_PARAMS,
                "Invalid params: tools/call needs params.name (string)");
    return;
  }
  const cJSON *tool = find_tool(c->s->srv, name->valuestring);
  mcp_tool_fn fn = tool ? mcp_tool_impl(name->valuestring) : NULL;
  if (!fn) {
    char msg[200];
    snprintf(msg, sizeof msg, "Unknown tool: %.120s", name->valuestring);
    reply_error(c->s, c->sink, c->id, MCP_INVALID_PARAMS, msg);
    return;
  }
  c->tool = tool;
  cJSON *args = cJSON_GetObjectItemCaseSensitive(c->params, "arguments");
  cJSON *empty = NULL;
  if (!args || cJSON_IsNull(args)) args = empty = cJSON_CreateObject();
  if (!cJSON_IsObject(args)) {
    reply_error(c->s, c->sink, c->id, MCP_INVALID_PARAMS,
                "Invalid params: tools/call params.arguments must be an object");
    return;
  }
  mcp_result r = {cJSON_CreateArray(), NULL, 0};
  /* Bad arguments are a tool error the model can correct (2025-11-25). */
  char *bad =
      mcp_schema_check(cJSON_GetObjectItemCaseSensitive(tool, "inputSchema"), args, "arguments");
  if (bad) {
    mcp_result_fail(&r, "%s", bad);
    free(bad);
  } else {
    fn(c, args, &r);
  }
  cJSON_Delete(empty);
  if (mcp_call_cancelled(c)) {
    cJSON_Delete(r.content);
    cJSON_Delete(r.structured);
    c->sink->send(c->sink, NULL, 1);
    return;
  }
  reply_result(c->sink, c->id, tool_result(c, &r));
}

static void run_resources(mcp_call *c) {
  int code = 0;
  char *msg = NULL;
  cJSON *res;
  if (!strcmp(c->method, "resources/list")) {
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(c->params, "cursor");
    res = mcp_resources_list(c, cJSON_IsString(cur) ? cur->valuestring : NULL, &code, &msg);
  } else {
    const cJSON *uri = cJSON_GetObjectItemCaseSensitive(c->params, "uri");
    if (!cJSON_IsString(uri)) {
      reply_error(c->s, c->sink, c->id, MCP_INVALID_PARAMS,
                  "Invalid params: resources/read needs params.uri (string)");
      return;
    }
    res = mcp_resources_read(c, uri->valuestring, &code, &msg);
  }
  if (mcp_call_cancelled(c)) {
    cJSON_Delete(res);
    free(msg);
    c->sink->send(c->sink, NULL, 1);
    return;
  }
  if (res)
    reply_result(c->sink, c->id, res);
  else
    reply_error(c->s, c->sink, c->id, code ? code : MCP_INTERNAL_ERROR, msg ? msg : "failed");
  free(msg);
}

void mcp_call_run(mcp_call *c) {
  if (!strcmp(c->method, "tools/call"))
    run_tool(c);
  else
    run_resources(c);
  mcp_session *s = c->s;
  mcp_server *srv = s->srv;
  pthread_mutex_lock(&s->mu);
  for (mcp_call **p = &s->calls; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  s->ncalls--;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  atomic_fetch_sub(&srv->inflight, 1);
  call_free(c);
}

static void *call_main(void *arg) {
  mcp_call_run(arg);
  return NULL;
}

/* Registers the call and runs it on a thread of its own, or, with
 * run_here, hands it back for the caller's thread to run (mcp_call_run):
 * the stdio reader does that after passing reading on to a new thread, so
 * the call skips a thread hand-off on its way. */
static void start_call(mcp_session *s, const mcp_msg *m, mcp_sink *sink, mcp_call **run_here) {
  mcp_call *c = calloc(1, sizeof *c);
  if (!c || asb_cancel_new(&c->cancel) != ASB_OK) {
    free(c);
    reply_error(s, sink, m->id, MCP_INTERNAL_ERROR, "out of memory");
    return;
  }
  c->s = s;
  c->id = asbi_strdup(m->id);
  c->method = asbi_strdup(m->method);
  c->params = m->params ? cJSON_Duplicate(m->params, 1) : cJSON_CreateObject();
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(c->params, "_meta");
  const cJSON *tok = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
  if (cJSON_IsString(tok) || cJSON_IsNumber(tok))
    c->progress_token = cJSON_IsNumber(tok) && tok->valuestring ? asbi_strdup(tok->valuestring)
                                                                : cJSON_PrintUnformatted(tok);
  c->started_ms = asbi_now_ms();
  c->last_progress_ms = 0; /* the first output (or tick) reports progress at once */
  pthread_mutex_init(&c->out_mu, NULL);
  asbi_buf_init(&c->pending[0], 0);
  asbi_buf_init(&c->pending[1], 0);
  c->streaming = 1;
  c->sink = sink;
  mcp_sink_ref(sink);
  if (!c->id || !c->method || !c->params) {
    reply_error(s, sink, m->id, MCP_INTERNAL_ERROR, "out of memory");
    call_free(c);
    return;
  }
  pthread_mutex_lock(&s->mu);
  int full = s->ncalls >= s->srv->cfg.max_calls || s->state == 2;
  /* The same id twice in flight would make cancellation ambiguous. */
  int dup = 0;
  for (mcp_call *o = s->calls; o && !dup; o = o->next) dup = !strcmp(o->id, c->id);
  if (!full && !dup) {
    c->next = s->calls;
    s->calls = c;
    s->ncalls++;
  }
  pthread_mutex_unlock(&s->mu);
  if (full || dup) {
    reply_error(s, sink, m->id, dup ? MCP_INVALID_REQUEST : MCP_SERVER_ERROR,
                dup ? "Invalid Request: a request with this id is already in flight"
                    : "Server busy: too many requests in flight; retry when some finish");
    call_free(c);
    return;
  }
  mcp_server *srv = s->srv;
  atomic_fetch_add(&srv->inflight, 1);
  if (c->progress_token) ticker_kick(srv); /* heartbeats */
  if (run_here) {
    *run_here = c;
    return;
  }
  if (mcp_thread_start(srv, call_main, c) != 0) {
    pthread_mutex_lock(&s->mu);
    for (mcp_call **p = &s->calls; *p; p = &(*p)->next)
      if (*p == c) {
        *p = c->next;
        break;
      }
    s->ncalls--;
    pthread_mutex_unlock(&s->mu);
    atomic_fetch_sub(&srv->inflight, 1);
    reply_error(s, sink, m->id, MCP_SERVER_ERROR, "Server busy: cannot start a thread");
    call_free(c);
  }
}

/* ---- dispatch -------------------------------------------------------------------- */

static void do_cancelled(mcp_session *s, const mcp_msg *m) {
  const cJSON *rid = cJSON_GetObjectItemCaseSensitive(m->params, "requestId");
  if (!rid) return;
  char *id = cJSON_PrintUnformatted(rid);
  if (!id) return;
  /* A number id is compared as the client wrote it ("1" and 1 differ). */
  if (cJSON_IsNumber(rid) && rid->valuestring) {
    free(id);
    id = asbi_strdup(rid->valuestring);
  }
  pthread_mutex_lock(&s->mu);
  for (mcp_call *c = s->calls; c; c = c->next)
    if (id && !strcmp(c->id, id)) cancel_locked(c);
  pthread_mutex_unlock(&s->mu);
  mcp_logf(s->srv, "request %s cancelled", id ? id : "?");
  free(id);
}

static void handle_one(mcp_session *s, const mcp_msg *m, mcp_sink *sink, mcp_call **run_here) {
  if (m->kind == MCP_MSG_INVALID) {
    reply_error(s, sink, m->id, m->err_code, m->err_msg);
    return;
  }
  if (m->kind == MCP_MSG_RESPONSE) return; /* we send no requests */
  pthread_mutex_lock(&s->mu);
  int state = s->state;
  pthread_mutex_unlock(&s->mu);
  if (m->kind == MCP_MSG_NOTIFICATION) {
    if (!strcmp(m->method, "notifications/cancelled"))
      do_cancelled(s, m);
    else if (!strcmp(m->method, "notifications/initialized"))
      mcp_logf(s->srv, "%s session initialized", s->transport);
    /* Anything else (progress, roots changes, unknown ones) is ignored. */
    return;
  }
  const char *meth = m->method;
  if (!strcmp(meth, "initialize")) {
    do_initialize(s, m, sink);
    return;
  }
  if (!strcmp(meth, "ping")) {
    reply_result(sink, m->id, cJSON_CreateObject());
    return;
  }
  if (state != 1) {
    reply_error(s, sink, m->id, MCP_INVALID_REQUEST,
                state == 0 ? "Invalid Request: send initialize first"
                           : "Invalid Request: the session is closing");
    return;
  }
  if (!strcmp(meth, "tools/list")) {
    char *t = tools_list_json(s);
    char *msg = t ? mcp_rpc_result(m->id, t) : NULL;
    free(t);
    sink->send(sink, msg, 1);
  } else if (!strcmp(meth, "tools/call") || !strcmp(meth, "resources/list") ||
             !strcmp(meth, "resources/read")) {
    start_call(s, m, sink, run_here);
  } else if (!strcmp(meth, "resources/templates/list")) {
    do_resource_templates(s, m, sink);
  } else if (!strcmp(meth, "logging/setLevel")) {
    do_set_level(s, m, sink);
  } else {
    char msg[200];
    snprintf(msg, sizeof msg, "Method not found: %.120s", meth);
    reply_error(s, sink, m->id, MCP_METHOD_NOT_FOUND, msg);
  }
}

static void handle_parsed(mcp_session *s, mcp_parsed *p, mcp_sink *sink, mcp_call **run_here) {
  if (p->err_code) {
    reply_error(s, sink, NULL, p->err_code, p->err_msg);
    mcp_parsed_free(p);
    return;
  }
  if (!p->batch) {
    handle_one(s, &p->msgs[0], sink, run_here);
    mcp_parsed_free(p);
    return;
  }
  /* Batches exist in 2025-03-26 only (added there, removed in 2025-06-18);
   * initialize may not be in one, so none comes before it. */
  pthread_mutex_lock(&s->mu);
  int ok = s->state == 1 && s->rev >= 0 && !strcmp(mcp_revisions[s->rev], "2025-03-26");
  const char *rev = s->rev >= 0 ? mcp_revisions[s->rev] : NULL;
  pthread_mutex_unlock(&s->mu);
  if (!ok) {
    char msg[160];
    if (rev)
      snprintf(msg, sizeof msg, "Invalid Request: protocol revision %s has no JSON-RPC batches",
               rev);
    else
      snprintf(msg, sizeof msg, "Invalid Request: initialize first, on its own (not in a batch)");
    reply_error(s, sink, NULL, MCP_INVALID_REQUEST, msg);
    mcp_parsed_free(p);
    return;
  }
  size_t n = mcp_parsed_replies(p);
  mcp_sink *b = n ? mcp_batch_sink_new(sink, n) : NULL;
  for (size_t i = 0; i < p->count; i++) {
    if (!strcmp(p->msgs[i].method ? p->msgs[i].method : "", "initialize") &&
        p->msgs[i].kind == MCP_MSG_REQUEST) {
      reply_error(s, b, p->msgs[i].id, MCP_INVALID_REQUEST,
                  "Invalid Request: initialize may not be part of a batch");
      continue;
    }
    handle_one(s, &p->msgs[i], b ? b : sink, NULL);
  }
  mcp_sink_unref(b);
  mcp_parsed_free(p);
}

void mcp_session_handle_parsed(mcp_session *s, mcp_parsed *p, mcp_sink *sink) {
  handle_parsed(s, p, sink, NULL);
}

void mcp_session_handle(mcp_session *s, const char *text, size_t len, mcp_sink *sink,
                        mcp_call **run_here) {
  mcp_parsed p;
  int rc = mcp_rpc_parse(&p, text, len);
  if (rc == -1) {
    mcp_parsed_free(&p);
    reply_error(s, sink, NULL, MCP_INTERNAL_ERROR, "out of memory");
    return;
  }
  handle_parsed(s, &p, sink, run_here);
}
