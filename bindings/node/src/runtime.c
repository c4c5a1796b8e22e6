/* agent-sandbox Node binding: module init, worker threads, the loop's
 * queue, calls, handles and the argument/result helpers. See anode.h.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anode.h"

#define ASB_API_TABLE_IMPLEMENTATION
#include "api_table.h"

/* Bytes of events a call may have posted that JS has not handled yet
 * before its worker waits. */
#define PENDING_LIMIT (1u << 20)

/* ---- per-environment state ---------------------------------------------------- */

struct anode_env {
  napi_env env;
  uv_async_t async;
  napi_async_context ctx;
  napi_ref resource;
  napi_async_cleanup_hook_handle cleanup;
  pthread_mutex_t qmu; /* the queue, closing */
  anode_msg *qhead, *qtail;
  int closing;
  atomic_int refs;   /* 1 for the handle + one per call not yet done */
  anode_call *calls; /* in flight (loop thread) */
  unsigned inflight;
  double next_id;
  asb_cancel *spare[64]; /* reset tokens for reuse (loop thread) */
  int nspare;
};

static void env_unref(anode_env *ae) {
  if (atomic_fetch_sub(&ae->refs, 1) != 1) return;
  for (int i = 0; i < ae->nspare; i++) asb_cancel_free(ae->spare[i]);
  pthread_mutex_destroy(&ae->qmu);
  free(ae);
}

static anode_env *env_of(napi_env env) {
  void *p = NULL;
  napi_get_instance_data(env, &p);
  return p;
}

/* ---- errors ------------------------------------------------------------------- */

napi_value anode_undefined(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

napi_value anode_napi_fail(napi_env env) {
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) {
    const napi_extended_error_info *info = NULL;
    napi_get_last_error_info(env, &info);
    napi_throw_error(env, "ERR_AGENT_SANDBOX_NAPI",
                     info && info->error_message ? info->error_message : "Node-API call failed");
  }
  return NULL;
}

napi_value anode_throw(napi_env env, const char *code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) napi_throw_type_error(env, code, msg);
  return NULL;
}

char *anode_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* ---- worker threads --------------------------------------------------------------
 * One pool for the process (every environment's calls): a thread per call
 * in flight up to $ASB_NODE_MAX_THREADS (default 256; further calls wait in
 * the queue), idle threads kept 30 s for the next calls. */

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  anode_call *head, *tail;
  unsigned queued, idle, threads, max;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0, 0, 0};

static void post(anode_env *ae, anode_msg *m);

static void *worker_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&pool.mu);
  for (;;) {
    while (!pool.head) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += 30;
      pool.idle++;
      int rc = pthread_cond_timedwait(&pool.cv, &pool.mu, &ts);
      pool.idle--;
      if (rc == ETIMEDOUT && !pool.head) {
        pool.threads--;
        pthread_mutex_unlock(&pool.mu);
        return NULL;
      }
    }
    anode_call *c = pool.head;
    pool.head = c->qnext;
    if (!pool.head) pool.tail = NULL;
    pool.queued--;
    pthread_mutex_unlock(&pool.mu);
    c->work(c);
    post(c->ae, &c->done);
    pthread_mutex_lock(&pool.mu);
  }
}

static void pool_submit(anode_call *c) {
  pthread_mutex_lock(&pool.mu);
  if (!pool.max) {
    const char *m = getenv("ASB_NODE_MAX_THREADS");
    long v = m ? strtol(m, NULL, 10) : 0;
    pool.max = v > 0 && v < 100000 ? (unsigned)v : 256;
  }
  c->qnext = NULL;
  if (pool.tail)
    pool.tail->qnext = c;
  else
    pool.head = c;
  pool.tail = c;
  pool.queued++;
  if (pool.idle >= pool.queued) {
    pthread_cond_signal(&pool.cv);
  } else if (pool.threads < pool.max) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 2u << 20);
    if (pthread_create(&t, &attr, worker_main, NULL) == 0)
      pool.threads++;
    else if (pool.idle)
      pthread_cond_signal(&pool.cv);
    pthread_attr_destroy(&attr);
  }
  pthread_mutex_unlock(&pool.mu);
}

/* ---- the loop's queue ----------------------------------------------------------------- */

static void call_free_native(anode_call *c) {
  if (c->cleanup) c->cleanup(c);
  free(c->err.message);
  free(c->err.remote_code);
  free(c->err.reason);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
}

static void msg_free(anode_msg *m) {
  if (m->drop) m->drop(m);
  free(m->data);
  free(m);
}

/* Worker side. After closing (environment teardown) nothing reaches JS:
 * the call's C resources are freed here (its JS references went with the
 * environment). */
static void post(anode_env *ae, anode_msg *m) {
  pthread_mutex_lock(&ae->qmu);
  if (ae->closing) {
    pthread_mutex_unlock(&ae->qmu);
    if (m->kind == MSG_DONE) {
      anode_call *c = m->call;
      if (c->cancel) asb_cancel_free(c->cancel);
      call_free_native(c);
      free(c);
      env_unref(ae);
    } else {
      msg_free(m);
    }
    return;
  }
  m->next = NULL;
  if (ae->qtail)
    ae->qtail->next = m;
  else
    ae->qhead = m;
  ae->qtail = m;
  uv_async_send(&ae->async);
  pthread_mutex_unlock(&ae->qmu);
}

static void call_unlink(anode_env *ae, anode_call *c) {
  if (c->prev)
    c->prev->next = c->next;
  else
    ae->calls = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
}

static anode_call *call_find(anode_env *ae, double id) {
  for (anode_call *c = ae->calls; c; c = c->next)
    if (c->id == id) return c;
  return NULL;
}

static void call_ack(anode_call *c, size_t n) {
  pthread_mutex_lock(&c->mu);
  c->pending = c->pending > n ? c->pending - n : 0;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void call_wake(anode_call *c, int abort) {
  if (abort) atomic_store(&c->aborted, 1);
  asb_cancel_request(c->cancel);
  pthread_mutex_lock(&c->mu);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void box_release(anode_box *b);

static void invoke(napi_env env, anode_env *ae, napi_value fn, size_t argc, napi_value *argv,
                   napi_value *ret) {
  napi_value global, r = NULL;
  napi_get_global(env, &global);
  napi_status st = napi_make_callback(env, ae->ctx, global, fn, argc, argv, &r);
  if (st == napi_pending_exception) {
    /* Our JS layer catches what user callbacks throw; anything else is a
     * bug to surface as an uncaught exception. */
    napi_value exc;
    if (napi_get_and_clear_last_exception(env, &exc) == napi_ok) napi_fatal_exception(env, exc);
  }
  if (ret) *ret = r;
}

static void handle_event(napi_env env, anode_env *ae, anode_msg *m) {
  anode_call *c = m->call;
  napi_value fn = NULL;
  int deferred = 0;
  if (c->on_event && napi_get_reference_value(env, c->on_event, &fn) == napi_ok && fn) {
    napi_value argv[3], ret = NULL;
    napi_create_int32(env, m->event, &argv[0]);
    argv[1] = m->build ? m->build(env, m) : NULL;
    if (!argv[1]) argv[1] = anode_undefined(env);
    napi_create_double(env, (double)m->cost, &argv[2]);
    invoke(env, ae, fn, 3, argv, &ret);
    bool t = false;
    if (ret && napi_get_value_bool(env, ret, &t) == napi_ok && t) deferred = 1;
  }
  if (!deferred) call_ack(c, m->cost);
  msg_free(m);
}

static void handle_done(napi_env env, anode_env *ae, anode_call *c) {
  call_unlink(ae, c);
  if (--ae->inflight == 0) uv_unref((uv_handle_t *)&ae->async);
  napi_value argv[3];
  napi_create_int32(env, c->rc, &argv[0]);
  argv[1] = c->result ? c->result(env, c) : NULL;
  if (!argv[1]) argv[1] = anode_undefined(env);
  if (c->rc < 0) {
    napi_value d;
    napi_create_array_with_length(env, 6, &d);
    napi_value v;
    napi_create_int32(env, c->err.http_status, &v);
    napi_set_element(env, d, 0, v);
    napi_set_element(env, d, 1,
                     anode_str(env, c->err.message ? c->err.message : asb_strerror(c->rc)));
    napi_set_element(env, d, 2, anode_str(env, c->err.remote_code ? c->err.remote_code : ""));
    napi_create_int32(env, c->err.retry_after, &v);
    napi_set_element(env, d, 3, v);
    napi_set_element(env, d, 4, anode_str(env, c->err.reason ? c->err.reason : ""));
    napi_set_element(env, d, 5, anode_str(env, asb_status_name(c->rc)));
    argv[2] = d;
  } else {
    argv[2] = anode_undefined(env);
  }
  if (c->box) {
    c->box->busy--;
    if (c->box->closed && !c->box->busy) box_release(c->box);
  }
  napi_value fn = NULL;
  if (c->cb) napi_get_reference_value(env, c->cb, &fn);
  if (c->cb) napi_delete_reference(env, c->cb);
  if (c->on_event) napi_delete_reference(env, c->on_event);
  for (int i = 0; i < c->nkeep; i++) napi_delete_reference(env, c->keep[i]);
  call_free_native(c);
  if (c->cancel) {
    if (ae->nspare < (int)(sizeof ae->spare / sizeof ae->spare[0])) {
      asb_cancel_reset(c->cancel);
      ae->spare[ae->nspare++] = c->cancel;
    } else {
      asb_cancel_free(c->cancel);
    }
  }
  free(c);
  if (fn) invoke(env, ae, fn, 3, argv, NULL);
  env_unref(ae);
}

static void on_async(uv_async_t *h) {
  anode_env *ae = h->data;
  pthread_mutex_lock(&ae->qmu);
  anode_msg *m = ae->qhead;
  ae->qhead = ae->qtail = NULL;
  pthread_mutex_unlock(&ae->qmu);
  napi_env env = ae->env;
  while (m) {
    anode_msg *next = m->next;
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    if (m->kind == MSG_DONE)
      handle_done(env, ae, m->call);
    else
      handle_event(env, ae, m);
    napi_close_handle_scope(env, scope);
    m = next;
  }
}

/* ---- calls ----------------------------------------------------------------------- */

anode_call *anode_call_new(napi_env env, size_t size, napi_value cb) {
  napi_valuetype t;
  if (napi_typeof(env, cb, &t) != napi_ok || t != napi_function) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "the last argument must be a callback");
    return NULL;
  }
  anode_call *c = calloc(1, size);
  if (!c) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  c->ae = env_of(env);
  c->done.kind = MSG_DONE;
  c->done.call = c;
  napi_create_reference(env, cb, 1, &c->cb);
  return c;
}

int anode_call_keep(napi_env env, anode_call *c, napi_value v) {
  if (c->nkeep >= (int)(sizeof c->keep / sizeof c->keep[0])) return -1;
  return napi_create_reference(env, v, 1, &c->keep[c->nkeep++]) == napi_ok ? 0 : -1;
}

int anode_call_on_event(napi_env env, anode_call *c, napi_value fn) {
  napi_valuetype t;
  if (napi_typeof(env, fn, &t) != napi_ok) return -1;
  if (t == napi_undefined || t == napi_null) return 0;
  if (t != napi_function) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "the event handler must be a function");
    return -1;
  }
  return napi_create_reference(env, fn, 1, &c->on_event) == napi_ok ? 0 : -1;
}

void anode_call_discard(napi_env env, anode_call *c) {
  if (!c) return;
  if (c->cb) napi_delete_reference(env, c->cb);
  if (c->on_event) napi_delete_reference(env, c->on_event);
  for (int i = 0; i < c->nkeep; i++) napi_delete_reference(env, c->keep[i]);
  call_free_native(c);
  free(c);
}

napi_value anode_call_submit(napi_env env, anode_call *c, anode_box *box) {
  anode_env *ae = c->ae;
  if (ae->nspare) {
    c->cancel = ae->spare[--ae->nspare];
  } else if (asb_cancel_new(&c->cancel) != ASB_OK) {
    anode_call_discard(env, c);
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  c->box = box;
  if (box) box->busy++;
  c->id = ++ae->next_id;
  c->next = ae->calls;
  if (ae->calls) ae->calls->prev = c;
  ae->calls = c;
  if (ae->inflight++ == 0) uv_ref((uv_handle_t *)&ae->async);
  atomic_fetch_add(&ae->refs, 1);
  pool_submit(c);
  return anode_num(env, c->id);
}

void anode_call_fail(anode_call *c, int rc) {
  c->rc = rc;
  const asb_error *e = asb_error_last();
  if (e->code == rc) {
    c->err.http_status = e->http_status;
    c->err.retry_after = e->retry_after;
    c->err.message = anode_strdup(e->message);
    c->err.remote_code = anode_strdup(e->remote_code);
    c->err.reason = anode_strdup(e->reason);
  } else {
    c->err.retry_after = -1;
    c->err.message = anode_strdup(asb_strerror(rc));
  }
}

int anode_call_stopping(anode_call *c) {
  return atomic_load(&c->aborted) || asb_cancel_is_requested(c->cancel);
}

int anode_emit(anode_call *c, anode_msg *m) {
  m->kind = MSG_EVENT;
  m->call = c;
  pthread_mutex_lock(&c->mu);
  while (c->pending > PENDING_LIMIT && !anode_call_stopping(c)) pthread_cond_wait(&c->cv, &c->mu);
  if (atomic_load(&c->aborted)) {
    /* A JS callback threw: the call's token was requested, which ends it
     * (ASB_ECANCELED: a foreground command is killed, a cell interrupted);
     * what still arrives meanwhile is dropped. */
    pthread_mutex_unlock(&c->mu);
    msg_free(m);
    return 0;
  }
  c->pending += m->cost;
  pthread_mutex_unlock(&c->mu);
  post(c->ae, m);
  return 0;
}

static napi_value build_bytes(napi_env env, anode_msg *m) {
  napi_value v;
  void *p;
  if (napi_create_buffer_copy(env, m->len, m->data ? m->data : "", &p, &v) != napi_ok) return NULL;
  return v;
}

anode_msg *anode_msg_bytes(int event, const void *data, size_t len) {
  anode_msg *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  if (len) {
    m->data = malloc(len);
    if (!m->data) {
      free(m);
      return NULL;
    }
    memcpy(m->data, data, len);
  }
  m->len = len;
  m->event = event;
  m->cost = len + 64;
  m->build = build_bytes;
  return m;
}

/* ---- sinks -------------------------------------------------------------------------- */

anode_sink *anode_sink_new(void) {
  anode_sink *s = calloc(1, sizeof *s);
  if (s) pthread_mutex_init(&s->mu, NULL);
  return s;
}

void anode_sink_set(anode_sink *s, anode_call *c) {
  pthread_mutex_lock(&s->mu);
  s->call = c;
  pthread_mutex_unlock(&s->mu);
}

anode_call *anode_sink_get(anode_sink *s) {
  pthread_mutex_lock(&s->mu);
  anode_call *c = s->call;
  pthread_mutex_unlock(&s->mu);
  return c;
}

void anode_sink_free(anode_sink *s) {
  if (!s) return;
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* ---- handles ---------------------------------------------------------------------------- */

static void box_release(anode_box *b) {
  void *p = b->ptr;
  b->ptr = NULL;
  if (!p) return;
  switch (b->kind) {
    case BOX_CLIENT:
      asb_client_free(p);
      break;
    case BOX_SANDBOX:
      asb_sandbox_free(p);
      break;
    case BOX_PROCESS:
      asb_process_free(p);
      break;
    case BOX_WATCH:
      asb_watch_free(p);
      break;
    case BOX_AGENT:
      asb_agent_session_free(p);
      break;
    case BOX_VOLUME:
      asb_volume_free(p);
      break;
  }
  /* After the free returned no callback of the handle starts. */
  anode_sink_free(b->sink);
  b->sink = NULL;
}

static void box_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  anode_box *b = data;
  /* A call in flight holds a reference to the external, so none is. */
  box_release(b);
  free(b);
}

static const char *box_names[] = {"",      "client",        "sandbox", "process",
                                  "watch", "agent session", "volume"};

napi_value anode_box_new(napi_env env, anode_box_kind kind, void *ptr, anode_sink *sink) {
  anode_box *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->kind = kind;
  b->ptr = ptr;
  b->sink = sink;
  napi_value v;
  if (napi_create_external(env, b, box_finalize, NULL, &v) != napi_ok) {
    box_release(b);
    free(b);
    return NULL;
  }
  napi_type_tag tag = {0x6167656e74736278ull, (uint64_t)kind};
  napi_type_tag_object(env, v, &tag);
  return v;
}

static anode_box *box_peek(napi_env env, napi_value v, anode_box_kind kind) {
  napi_type_tag tag = {0x6167656e74736278ull, (uint64_t)kind};
  bool ok = false;
  if (napi_check_object_type_tag(env, v, &tag, &ok) != napi_ok || !ok) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "expected a %s handle", box_names[kind]);
    return NULL;
  }
  void *p = NULL;
  napi_get_value_external(env, v, &p);
  return p;
}

anode_box *anode_box_arg(napi_env env, napi_value v, anode_box_kind kind) {
  anode_box *b = box_peek(env, v, kind);
  if (b && (b->closed || !b->ptr)) {
    napi_throw_error(env, "ERR_AGENT_SANDBOX_CLOSED", "the handle is closed");
    return NULL;
  }
  return b;
}

/* close(handle): refuse new calls; release now, or when the calls in
 * flight on it (now cancelled) have returned. Idempotent. */
static napi_value js_close(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  uint32_t kind = 0;
  if (argc < 2 || napi_get_value_uint32(env, argv[1], &kind) != napi_ok || kind < BOX_CLIENT ||
      kind > BOX_LAST)
    return anode_throw(env, "ERR_INVALID_ARG_TYPE", "close(handle, kind)");
  anode_box *b = box_peek(env, argv[0], (anode_box_kind)kind);
  if (!b) return NULL;
  if (b->closed) return anode_undefined(env);
  b->closed = 1;
  if (!b->busy) {
    box_release(b);
    return anode_undefined(env);
  }
  /* Stop what waits on it (these never block) and cancel its calls. */
  if (b->kind == BOX_PROCESS && b->ptr) asb_process_disconnect(b->ptr);
  if (b->kind == BOX_WATCH && b->ptr) asb_watch_stop(b->ptr);
  anode_env *ae = env_of(env);
  for (anode_call *c = ae->calls; c; c = c->next)
    if (c->box == b) call_wake(c, 0);
  return anode_undefined(env);
}

/* ---- cancel / abort / ack by call id --------------------------------------------------- */

anode_call *anode_call_lookup(napi_env env, napi_value v) {
  double id;
  if (napi_get_value_double(env, v, &id) != napi_ok) return NULL;
  return call_find(env_of(env), id);
}

static anode_call *call_arg(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
  if (napi_get_cb_info(env, info, argc, argv, NULL, NULL) != napi_ok || *argc < 1) return NULL;
  double id;
  if (napi_get_value_double(env, argv[0], &id) != napi_ok) return NULL;
  return call_find(env_of(env), id);
}

/* cancel(id): request the call's token (an AbortSignal fired). */
static napi_value js_cancel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  anode_call *c = call_arg(env, info, &argc, argv);
  if (c) call_wake(c, 0);
  return anode_undefined(env);
}

/* abort(id): a JS callback of the call threw. The call is cancelled
 * rather than ended by a non-zero callback return (ASB_EUSER), because the
 * token also kills a foreground command (kill_on_cancel) and interrupts a
 * code cell, where ASB_EUSER would leave them running; a watch, which has
 * no token, is stopped. Its events from now on are dropped. */
static napi_value js_abort(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  anode_call *c = call_arg(env, info, &argc, argv);
  if (!c) return anode_undefined(env);
  call_wake(c, 1);
  if (c->box && c->box->kind == BOX_WATCH && c->box->ptr) asb_watch_stop(c->box->ptr);
  return anode_undefined(env);
}

/* ack(id, cost): JS has handled an event whose handler returned true. */
static napi_value js_ack(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  anode_call *c = call_arg(env, info, &argc, argv);
  double n = 0;
  if (c && argc >= 2 && napi_get_value_double(env, argv[1], &n) == napi_ok && n > 0)
    call_ack(c, (size_t)n);
  return anode_undefined(env);
}

/* nop(cb): a call that does nothing on a worker: the binding's fixed cost
 * per call (bench/node_bench.mjs). */
static void w_nop(anode_call *c) {
  (void)c;
}

static napi_value js_nop(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  anode_call *c = anode_call_new(env, sizeof *c, argv[0]);
  if (!c) return NULL;
  c->work = w_nop;
  return anode_call_submit(env, c, NULL);
}

/* The calls in flight, handles' busy counts: for tests of the binding. */
static napi_value js_stats(napi_env env, napi_callback_info info) {
  (void)info;
  anode_env *ae = env_of(env);
  napi_value o = anode_obj(env);
  anode_set(env, o, "inflight", anode_num(env, ae->inflight));
  pthread_mutex_lock(&pool.mu);
  anode_set(env, o, "threads", anode_num(env, pool.threads));
  anode_set(env, o, "idle", anode_num(env, pool.idle));
  anode_set(env, o, "maxThreads", anode_num(env, pool.max ? pool.max : 256));
  pthread_mutex_unlock(&pool.mu);
  return o;
}

/* ---- the ABI description ------------------------------------------------------------------- */

unsigned anode_api_flags(const char *name) {
  for (const asb_api_function_info *f = asb_api_functions; f->name; f++)
    if (strcmp(f->name, name) == 0) return f->flags;
  return ~0u;
}

/* The functions this addon calls, and where: W = on its worker threads,
 * L = on the loop thread. abiCheck() compares this with what abi/api.json
 * says (through bindings/gen/api_table.h): a blocking function must be
 * called from a worker; an output's free function must be the one this
 * addon uses. abi.bindings_coverage reads the same list (bound.h). */
#define ANODE_W 1
#define ANODE_L 2
#define ANODE_B 3
#define X(name, where) {#name, where},
static const struct {
  const char *name;
  int where;
} bound[] = {
#include "bound.h"
    {NULL, 0}};
#undef X

/* Handle types and the free function this addon releases them with. */
static const struct {
  const char *type, *free_fn;
} frees[] = {{"asb_client", "asb_client_free"},
             {"asb_sandbox", "asb_sandbox_free"},
             {"asb_process", "asb_process_free"},
             {"asb_watch", "asb_watch_free"},
             {"asb_command_result", "asb_command_result_free"},
             {"asb_git_status", "asb_git_status_free"},
             {"asb_git_branch_list", "asb_git_branch_list_free"},
             {"asb_process_list", "asb_process_list_free"},
             {"asb_entry", "asb_entry_free"},
             {"asb_entry_list", "asb_entry_list_free"},
             {"asb_execution", "asb_execution_free"},
             {"asb_code_context", "asb_code_context_free"},
             {"asb_code_context_list", "asb_code_context_list_free"},
             {"asb_sandbox_info", "asb_sandbox_info_free"},
             {"asb_sandbox_page", "asb_sandbox_page_free"},
             {"asb_metrics", "asb_metrics_free"},
             {"asb_named_command_list", "asb_named_command_list_free"},
             {"asb_session", "asb_session_free"},
             {"asb_session_list", "asb_session_list_free"},
             {"asb_template", "asb_template_free"},
             {"asb_template_list", "asb_template_list_free"},
             {"asb_template_build", "asb_template_build_free"},
             {"asb_snapshot_list", "asb_snapshot_list_free"},
             {"asb_fork_list", "asb_fork_list_free"},
             {"asb_agent_list", "asb_agent_list_free"},
             {"asb_agent_session", "asb_agent_session_free"},
             {"asb_agent_turn", "asb_agent_turn_free"},
             {"asb_agent_event_list", "asb_agent_event_list_free"},
             {"asb_volume", "asb_volume_free"},
             {"asb_volume_list", "asb_volume_list_free"},
             {"asb_volume_entry", "asb_volume_entry_free"},
             {"asb_volume_entry_list", "asb_volume_entry_list_free"},
             {"asb_secret", "asb_secret_free"},
             {"asb_secret_page", "asb_secret_page_free"},
             {"asb_cancel", "asb_cancel_free"},
             {"char", "asb_free"},
             {NULL, NULL}};

static napi_value js_abi_check(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
  napi_create_array(env, &out);
  uint32_t n = 0;
  char msg[256];
  for (int i = 0; bound[i].name; i++) {
    unsigned fl = anode_api_flags(bound[i].name);
    if (fl == ~0u) {
      snprintf(msg, sizeof msg, "%s: not in abi/api.json", bound[i].name);
      napi_set_element(env, out, n++, anode_str(env, msg));
      continue;
    }
    if ((fl & ASB_API_SERVER)) continue;
    if ((fl & ASB_API_BLOCKING) && bound[i].where != ANODE_W) {
      snprintf(msg, sizeof msg, "%s blocks but is called on the loop thread", bound[i].name);
      napi_set_element(env, out, n++, anode_str(env, msg));
    }
    if (!(fl & ASB_API_BLOCKING) && bound[i].where == ANODE_W && !(fl & ASB_API_CALLBACKS)) {
      /* allowed (a worker may call anything), nothing to report */
    }
  }
  for (const asb_api_output_info *o = asb_api_outputs; o->function; o++) {
    if (!o->free_fn[0] || strncmp(o->function, "asb_server_", 11) == 0) continue;
    int used = 0;
    for (int i = 0; bound[i].name; i++)
      if (strcmp(bound[i].name, o->function) == 0) used = 1;
    if (!used) continue;
    int found = 0;
    for (int i = 0; frees[i].type; i++) {
      if (strcmp(frees[i].type, o->type) != 0) continue;
      found = 1;
      if (strcmp(frees[i].free_fn, o->free_fn) != 0) {
        snprintf(msg, sizeof msg, "%s: output %s is freed with %s, the table says %s", o->function,
                 o->type, frees[i].free_fn, o->free_fn);
        napi_set_element(env, out, n++, anode_str(env, msg));
      }
    }
    if (!found) {
      snprintf(msg, sizeof msg, "%s: output type %s has no free function here", o->function,
               o->type);
      napi_set_element(env, out, n++, anode_str(env, msg));
    }
  }
  return out;
}

static napi_value js_version(napi_env env, napi_callback_info info) {
  (void)info;
  return anode_str(env, asb_version(NULL, NULL, NULL));
}

static napi_value js_status_name(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t code = 0;
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc) napi_get_value_int32(env, argv[0], &code);
  napi_value o = anode_obj(env);
  anode_set(env, o, "name", anode_str(env, asb_status_name(code)));
  anode_set(env, o, "message", anode_str(env, asb_strerror(code)));
  return o;
}

const anode_fn anode_runtime_fns[] = {{"close", js_close},
                                      {"cancel", js_cancel},
                                      {"abort", js_abort},
                                      {"ack", js_ack},
                                      {"stats", js_stats},
                                      {"nop", js_nop},
                                      {"abiCheck", js_abi_check},
                                      {"version", js_version},
                                      {"statusName", js_status_name},
                                      {NULL, NULL}};

/* ---- argument helpers --------------------------------------------------------------------------
 */

int anode_is_nullish(napi_env env, napi_value v) {
  napi_valuetype t;
  if (!v || napi_typeof(env, v, &t) != napi_ok) return 1;
  return t == napi_undefined || t == napi_null;
}

int anode_get_string(napi_env env, napi_value v, char **out) {
  size_t n = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "expected a string");
    return -1;
  }
  char *s = malloc(n + 1);
  if (!s) {
    napi_throw_error(env, NULL, "out of memory");
    return -1;
  }
  napi_get_value_string_utf8(env, v, s, n + 1, &n);
  if (strlen(s) != n) {
    free(s);
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "a string must not contain NUL characters");
    return -1;
  }
  free(*out);
  *out = s;
  return 0;
}

static int opt_get(napi_env env, napi_value obj, const char *key, napi_value *v) {
  if (anode_is_nullish(env, obj)) return 0;
  bool has = false;
  if (napi_has_named_property(env, obj, key, &has) != napi_ok || !has) return 0;
  if (napi_get_named_property(env, obj, key, v) != napi_ok) return -1;
  return anode_is_nullish(env, *v) ? 0 : 1;
}

int anode_opt_string(napi_env env, napi_value obj, const char *key, char **out) {
  napi_value v;
  int r = opt_get(env, obj, key, &v);
  if (r <= 0) return r;
  if (anode_get_string(env, v, out) != 0) {
    bool p = false;
    napi_is_exception_pending(env, &p);
    return -1;
  }
  return 0;
}

int anode_opt_double(napi_env env, napi_value obj, const char *key, double *out) {
  napi_value v;
  int r = opt_get(env, obj, key, &v);
  if (r <= 0) return r;
  if (napi_get_value_double(env, v, out) != napi_ok) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "option %s must be a number", key);
    return -1;
  }
  return 0;
}

int anode_opt_long(napi_env env, napi_value obj, const char *key, long *out) {
  double d;
  int found = 0;
  napi_value v;
  int r = opt_get(env, obj, key, &v);
  if (r < 0) return -1;
  found = r;
  if (!found) return 0;
  if (napi_get_value_double(env, v, &d) != napi_ok || d != d) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "option %s must be a number", key);
    return -1;
  }
  if (d > 2147483647.0 * 1000) d = 2147483647.0 * 1000;
  if (d < -2147483647.0) d = -2147483647.0;
  *out = (long)d;
  return 0;
}

int anode_opt_int(napi_env env, napi_value obj, const char *key, int *out) {
  long l = *out;
  if (anode_opt_long(env, obj, key, &l) != 0) return -1;
  if (l > 2147483647L) l = 2147483647L;
  *out = (int)l;
  return 0;
}

int anode_opt_bool(napi_env env, napi_value obj, const char *key, int *out) {
  napi_value v;
  int r = opt_get(env, obj, key, &v);
  if (r <= 0) return r;
  napi_value b;
  bool val = false;
  napi_coerce_to_bool(env, v, &b);
  napi_get_value_bool(env, b, &val);
  *out = val ? 1 : 0;
  return 0;
}

void anode_strv_free(char **v) {
  if (!v) return;
  for (char **p = v; *p; p++) free(*p);
  free(v);
}

int anode_get_strv(napi_env env, napi_value v, char ***out) {
  bool is = false;
  if (napi_is_array(env, v, &is) != napi_ok || !is) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "expected an array of strings");
    return -1;
  }
  uint32_t n = 0;
  napi_get_array_length(env, v, &n);
  char **vec = calloc(n + 1, sizeof *vec);
  if (!vec) return -1;
  for (uint32_t i = 0; i < n; i++) {
    napi_value e;
    napi_get_element(env, v, i, &e);
    if (anode_get_string(env, e, &vec[i]) != 0) {
      anode_strv_free(vec);
      return -1;
    }
  }
  anode_strv_free(*out);
  *out = vec;
  return 0;
}

int anode_opt_strv(napi_env env, napi_value obj, const char *key, char ***out) {
  napi_value v;
  int r = opt_get(env, obj, key, &v);
  if (r <= 0) return r;
  return anode_get_strv(env, v, out);
}

int anode_get_u32(napi_env env, napi_value v, unsigned *out) {
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok || d < 0 || d > 4294967295.0 ||
      d != (unsigned)d) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "expected a non-negative integer");
    return -1;
  }
  *out = (unsigned)d;
  return 0;
}

int anode_get_long(napi_env env, napi_value v, long *out) {
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok || d != d) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "expected a number");
    return -1;
  }
  *out = (long)d;
  return 0;
}

int anode_get_string_any(napi_env env, napi_value v, char **out, size_t *len) {
  size_t n = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "expected a string");
    return -1;
  }
  char *s = malloc(n + 1);
  if (!s) {
    napi_throw_error(env, NULL, "out of memory");
    return -1;
  }
  napi_get_value_string_utf8(env, v, s, n + 1, &n);
  *out = s;
  *len = n;
  return 0;
}

int anode_get_bytes(napi_env env, napi_value v, char **data, size_t *len) {
  napi_valuetype t;
  napi_typeof(env, v, &t);
  if (t == napi_string) {
    *data = NULL;
    if (anode_get_string_any(env, v, data, len) != 0) return -1;
    return 0;
  }
  void *p = NULL;
  size_t n = 0;
  bool is = false;
  if (napi_is_buffer(env, v, &is) == napi_ok && is) {
    napi_get_buffer_info(env, v, &p, &n);
  } else if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
    napi_typedarray_type tt;
    size_t count, off;
    napi_value ab;
    napi_get_typedarray_info(env, v, &tt, &count, &p, &ab, &off);
    size_t es = 1;
    switch (tt) {
      case napi_int16_array:
      case napi_uint16_array:
        es = 2;
        break;
      case napi_int32_array:
      case napi_uint32_array:
      case napi_float32_array:
        es = 4;
        break;
      case napi_float64_array:
      case napi_bigint64_array:
      case napi_biguint64_array:
        es = 8;
        break;
      default:
        es = 1;
    }
    n = count * es;
  } else if (napi_is_dataview(env, v, &is) == napi_ok && is) {
    napi_value ab;
    size_t off;
    napi_get_dataview_info(env, v, &n, &p, &ab, &off);
  } else if (napi_is_arraybuffer(env, v, &is) == napi_ok && is) {
    napi_get_arraybuffer_info(env, v, &p, &n);
  } else {
    anode_throw(env, "ERR_INVALID_ARG_TYPE",
                "expected a string, Buffer, TypedArray or ArrayBuffer");
    return -1;
  }
  *data = malloc(n ? n : 1);
  if (!*data) return -1;
  if (n) memcpy(*data, p, n);
  *len = n;
  return 0;
}

/* ---- result helpers ------------------------------------------------------------------------- */

napi_value anode_str(napi_env env, const char *s) {
  if (!s) return anode_undefined(env);
  napi_value v;
  if (napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v) != napi_ok) return anode_undefined(env);
  return v;
}

static void adopted_free(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  asb_free(data);
}

napi_value anode_adopt_buffer(napi_env env, char **data, size_t len) {
  napi_value v;
  /* The library's buffer becomes the Buffer's memory (no copy). */
  if (*data && napi_create_external_buffer(env, len, *data, adopted_free, NULL, &v) == napi_ok) {
    *data = NULL;
    return v;
  }
  void *p;
  if (napi_create_buffer_copy(env, len, *data ? *data : "", &p, &v) != napi_ok) return NULL;
  return v;
}

napi_value anode_strn(napi_env env, const char *s, size_t n) {
  napi_value v;
  if (napi_create_string_utf8(env, s ? s : "", s ? n : 0, &v) != napi_ok)
    return anode_undefined(env);
  return v;
}

napi_value anode_num(napi_env env, double d) {
  napi_value v;
  napi_create_double(env, d, &v);
  return v;
}

napi_value anode_bool(napi_env env, int b) {
  napi_value v;
  napi_get_boolean(env, b != 0, &v);
  return v;
}

napi_value anode_obj(napi_env env) {
  napi_value v;
  napi_create_object(env, &v);
  return v;
}

void anode_set(napi_env env, napi_value obj, const char *key, napi_value v) {
  napi_set_named_property(env, obj, key, v ? v : anode_undefined(env));
}

napi_value anode_strv(napi_env env, const char *const *v) {
  napi_value a;
  napi_create_array(env, &a);
  for (uint32_t i = 0; v && v[i]; i++) napi_set_element(env, a, i, anode_str(env, v[i]));
  return a;
}

static const char *file_type_name(asb_file_type t) {
  switch (t) {
    case ASB_FILE_TYPE_FILE:
      return "file";
    case ASB_FILE_TYPE_DIR:
      return "dir";
    case ASB_FILE_TYPE_SYMLINK:
      return "symlink";
    default:
      return NULL;
  }
}

napi_value anode_entry(napi_env env, const asb_entry *e) {
  if (!e) return anode_undefined(env);
  napi_value o = anode_obj(env);
  anode_set(env, o, "name", anode_str(env, asb_entry_name(e)));
  anode_set(env, o, "type", anode_str(env, file_type_name(asb_entry_type(e))));
  anode_set(env, o, "path", anode_str(env, asb_entry_path(e)));
  anode_set(env, o, "size", anode_num(env, (double)asb_entry_size(e)));
  anode_set(env, o, "mode", anode_num(env, asb_entry_mode(e)));
  anode_set(env, o, "permissions", anode_str(env, asb_entry_permissions(e)));
  anode_set(env, o, "owner", anode_str(env, asb_entry_owner(e)));
  anode_set(env, o, "group", anode_str(env, asb_entry_group(e)));
  double ms =
      (double)asb_entry_modified_at(e) * 1000.0 + (double)(asb_entry_modified_nanos(e) / 1000000);
  anode_set(env, o, "modifiedMs", anode_num(env, ms));
  anode_set(env, o, "symlinkTarget", anode_str(env, asb_entry_symlink_target(e)));
  return o;
}

napi_value anode_entry_list(napi_env env, const asb_entry_list *l) {
  napi_value a;
  napi_create_array(env, &a);
  size_t n = l ? asb_entry_list_count(l) : 0;
  for (size_t i = 0; i < n; i++)
    napi_set_element(env, a, (uint32_t)i, anode_entry(env, asb_entry_list_get(l, i)));
  return a;
}

/* ---- module -------------------------------------------------------------------------------- */

static void on_closed(uv_handle_t *h) {
  anode_env *ae = h->data;
  napi_remove_async_cleanup_hook(ae->cleanup);
  env_unref(ae);
}

/* Environment teardown: nothing more reaches JS; calls still in flight are
 * cancelled and release their C resources when they return. */
static void on_cleanup(napi_async_cleanup_hook_handle handle, void *arg) {
  anode_env *ae = arg;
  ae->cleanup = handle;
  for (anode_call *c = ae->calls; c; c = c->next) call_wake(c, 1);
  pthread_mutex_lock(&ae->qmu);
  ae->closing = 1;
  anode_msg *m = ae->qhead;
  ae->qhead = ae->qtail = NULL;
  pthread_mutex_unlock(&ae->qmu);
  while (m) {
    anode_msg *next = m->next;
    if (m->kind == MSG_DONE) {
      anode_call *c = m->call;
      if (c->cancel) asb_cancel_free(c->cancel);
      call_free_native(c);
      free(c);
      env_unref(ae);
    } else {
      msg_free(m);
    }
    m = next;
  }
  uv_close((uv_handle_t *)&ae->async, on_closed);
}

static void register_all(napi_env env, napi_value exports, const anode_fn *fns) {
  for (; fns->name; fns++) {
    napi_value f;
    napi_create_function(env, fns->name, NAPI_AUTO_LENGTH, fns->fn, NULL, &f);
    napi_set_named_property(env, exports, fns->name, f);
  }
}

static void set_int(napi_env env, napi_value o, const char *k, int v) {
  napi_value n;
  napi_create_int32(env, v, &n);
  napi_set_named_property(env, o, k, n);
}

NAPI_MODULE_INIT() {
  anode_env *ae = calloc(1, sizeof *ae);
  if (!ae) return NULL;
  ae->env = env;
  atomic_init(&ae->refs, 1);
  pthread_mutex_init(&ae->qmu, NULL);
  uv_loop_t *loop = NULL;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || uv_async_init(loop, &ae->async, on_async)) {
    free(ae);
    napi_throw_error(env, NULL, "agent-sandbox: cannot set up the event loop handle");
    return NULL;
  }
  ae->async.data = ae;
  uv_unref((uv_handle_t *)&ae->async);
  napi_value res, name;
  napi_create_object(env, &res);
  napi_create_reference(env, res, 1, &ae->resource);
  napi_create_string_utf8(env, "agent-sandbox", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, res, name, &ae->ctx);
  napi_set_instance_data(env, ae, NULL, NULL);
  napi_add_async_cleanup_hook(env, on_cleanup, ae, NULL);

  register_all(env, exports, anode_runtime_fns);
  register_all(env, exports, anode_client_fns);
  register_all(env, exports, anode_process_fns);
  register_all(env, exports, anode_files_fns);
  register_all(env, exports, anode_code_fns);
  register_all(env, exports, anode_agents_fns);
  register_all(env, exports, anode_git_fns);
  register_all(env, exports, anode_volume_fns);
  register_all(env, exports, anode_secrets_fns);

  napi_value kinds = anode_obj(env);
  set_int(env, kinds, "client", BOX_CLIENT);
  set_int(env, kinds, "sandbox", BOX_SANDBOX);
  set_int(env, kinds, "process", BOX_PROCESS);
  set_int(env, kinds, "watch", BOX_WATCH);
  set_int(env, kinds, "agentSession", BOX_AGENT);
  set_int(env, kinds, "volume", BOX_VOLUME);
  napi_set_named_property(env, exports, "kinds", kinds);
  return exports;
}
