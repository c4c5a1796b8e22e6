/* agent-sandbox Node binding: the runtime shared by the addon's sources.
 *
 * How a call runs (docs/node.md, "How it works"):
 *  - a JS function of the addon copies its arguments into a call (the
 *    "baton"), takes a strong reference to every JS object the C call needs
 *    alive (the handle it acts on, buffers it reads), and queues the call on
 *    the addon's own worker threads — not libuv's pool, whose 4 threads long
 *    waits (a background command's output, a watch, a code run) would
 *    starve;
 *  - the worker makes the blocking C call, copies the thread's last error
 *    if it failed, and posts the call back to its event loop through one
 *    uv_async_t per environment and a queue of ours (no thread-safe
 *    function: a queue whose closing we control outlives environment
 *    teardown without a use after free);
 *  - on the loop the result is converted to JS, the references dropped and
 *    the call's JS callback(status, value, detail) invoked; the JS layer
 *    turns that into a resolved or rejected Promise;
 *  - streaming callbacks post events through the same queue, so they reach
 *    JS in order and before the completion; a call that has too many bytes
 *    not yet handled by JS waits (back-pressure);
 *  - every call has its own asb_cancel: an AbortSignal, a callback that
 *    threw, or closing the handle requests it.
 *
 * Handles are napi externals holding an anode_box. A box is released (the
 * asb_x_free) when it is closed or collected and no call on it is in flight
 * — both happen on the loop thread, so no call can start after its handle
 * was freed (docs/abi.md, Lifecycle) and none is left using it.
 *
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ANODE_H
#define ANODE_H

#define NAPI_VERSION 8
#include <node_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include <agentsandbox.h>

/* ---- checks ---------------------------------------------------------------- */

#define NAPI_OK(env, call)                              \
  do {                                                  \
    if ((call) != napi_ok) return anode_napi_fail(env); \
  } while (0)

napi_value anode_napi_fail(napi_env env);
napi_value anode_throw(napi_env env, const char *code, const char *fmt, ...);
napi_value anode_undefined(napi_env env);

/* ---- handles ---------------------------------------------------------------- */

typedef enum {
  BOX_CLIENT = 1,
  BOX_SANDBOX,
  BOX_PROCESS,
  BOX_WATCH,
  BOX_AGENT,
  BOX_VOLUME,
  BOX_LAST = BOX_VOLUME
} anode_box_kind;

typedef struct anode_sink anode_sink;
typedef struct anode_call anode_call;

typedef struct anode_box {
  anode_box_kind kind;
  void *ptr;        /* the asb_* handle; NULL once released */
  unsigned busy;    /* calls in flight on it (loop thread only) */
  int closed;       /* close() was asked: refuse new calls */
  anode_sink *sink; /* process / watch: where their callbacks go */
} anode_box;

/* The box of an external of the given kind, or NULL with a TypeError
 * thrown (also when it is closed). */
anode_box *anode_box_arg(napi_env env, napi_value v, anode_box_kind kind);
/* Wrap ptr in a new external. */
napi_value anode_box_new(napi_env env, anode_box_kind kind, void *ptr, anode_sink *sink);

/* ---- calls ------------------------------------------------------------------- */

typedef struct anode_err {
  int http_status;
  int retry_after;
  char *message;
  char *remote_code;
  char *reason;
} anode_err;

typedef struct anode_env anode_env;

/* Message kinds in the loop's queue. */
enum { MSG_DONE = 1, MSG_EVENT = 2 };

typedef struct anode_msg anode_msg;
struct anode_msg {
  anode_msg *next;
  int kind;
  anode_call *call;
  int event;                                  /* MSG_EVENT: its kind for JS */
  size_t cost;                                /* bytes counted for back-pressure */
  napi_value (*build)(napi_env, anode_msg *); /* MSG_EVENT: the JS value */
  void (*drop)(anode_msg *);                  /* frees what build did not take */
  size_t len;
  char *data; /* owned payload */
  void *extra;
};

struct anode_call {
  anode_call *prev, *next; /* the environment's calls in flight */
  anode_call *qnext;       /* the worker pool's queue */
  anode_msg done;          /* posted when the work is over */
  double id;
  anode_env *ae;
  anode_box *box;    /* the handle it acts on (busy while in flight) */
  napi_ref cb;       /* cb(status, value, detail) */
  napi_ref on_event; /* optional: onEvent(kind, value, cost) */
  napi_ref keep[4];  /* other JS objects kept alive */
  int nkeep;
  asb_cancel *cancel;
  int rc;
  anode_err err;
  atomic_int aborted; /* a JS callback threw: C callbacks return 1 */
  /* back-pressure and requests from the worker */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t pending;
  /* the work (worker thread), the result (loop thread; may be NULL for
   * undefined), and what to free either way (any thread). */
  void (*work)(anode_call *);
  napi_value (*result)(napi_env, anode_call *);
  void (*cleanup)(anode_call *);
};

/* Allocate a call of size bytes (a struct starting with anode_call);
 * cb_index is the argument index of the completion callback. Throws and
 * returns NULL on bad arguments. */
anode_call *anode_call_new(napi_env env, size_t size, napi_value cb);
/* Keep v alive until the call completed. */
int anode_call_keep(napi_env env, anode_call *c, napi_value v);
/* Set the optional event function (undefined / null: none). */
int anode_call_on_event(napi_env env, anode_call *c, napi_value fn);
/* Account the call on box (NULL: none) and queue it; returns its id (a JS
 * number) for cancel/ack. */
napi_value anode_call_submit(napi_env env, anode_call *c, anode_box *box);
/* Free a call that was not submitted (argument errors). */
void anode_call_discard(napi_env env, anode_call *c);

/* Record the calling thread's last error for rc (worker thread, right
 * after the failing C call). */
void anode_call_fail(anode_call *c, int rc);

/* From a worker: post an event (takes m); waits while too much is pending
 * unless the call was aborted or cancelled. Returns 0, or 1 when the C
 * callback should abort the C call. */
int anode_emit(anode_call *c, anode_msg *m);
anode_msg *anode_msg_bytes(int event, const void *data, size_t len);
int anode_call_stopping(anode_call *c);
/* The call in flight with this id (a JS number), or NULL. */
anode_call *anode_call_lookup(napi_env env, napi_value id);

/* Streaming sink of a process or watch: their C callbacks get it as
 * userdata and forward to the call now waiting on the handle. */
struct anode_sink {
  pthread_mutex_t mu;
  anode_call *call;
};
anode_sink *anode_sink_new(void);
void anode_sink_set(anode_sink *s, anode_call *c);
anode_call *anode_sink_get(anode_sink *s);
void anode_sink_free(anode_sink *s);

/* ---- argument helpers (loop thread) ------------------------------------------
 * Each returns 0, or -1 with a JS exception pending. Optional ones leave
 * *out untouched for undefined/null. */
int anode_get_string(napi_env env, napi_value v, char **out); /* malloc'd */
int anode_opt_string(napi_env env, napi_value obj, const char *key, char **out);
int anode_opt_long(napi_env env, napi_value obj, const char *key, long *out);
int anode_opt_int(napi_env env, napi_value obj, const char *key, int *out);
int anode_opt_bool(napi_env env, napi_value obj, const char *key, int *out);
int anode_opt_double(napi_env env, napi_value obj, const char *key, double *out);
/* An array of strings -> a NULL-ended malloc'd vector of copies. */
int anode_opt_strv(napi_env env, napi_value obj, const char *key, char ***out);
int anode_get_strv(napi_env env, napi_value v, char ***out);
void anode_strv_free(char **v);
int anode_get_u32(napi_env env, napi_value v, unsigned *out);
int anode_get_long(napi_env env, napi_value v, long *out);
int anode_is_nullish(napi_env env, napi_value v);
/* Bytes of a Buffer / TypedArray / ArrayBuffer / string: a copy. */
int anode_get_string_any(napi_env env, napi_value v, char **out, size_t *len); /* NULs kept */
int anode_get_bytes(napi_env env, napi_value v, char **data, size_t *len);
char *anode_strdup(const char *s);

/* ---- result helpers (loop thread) ---------------------------------------------- */
napi_value anode_str(napi_env env, const char *s); /* NULL -> undefined */
napi_value anode_strn(napi_env env, const char *s, size_t n);
/* A Buffer over *data (asb_malloc'd, len bytes), which it then owns (*data
 * set to NULL); a copy where Node cannot adopt it (*data kept). */
napi_value anode_adopt_buffer(napi_env env, char **data, size_t len);
napi_value anode_num(napi_env env, double d);
napi_value anode_bool(napi_env env, int b);
napi_value anode_obj(napi_env env);
void anode_set(napi_env env, napi_value obj, const char *key, napi_value v);
napi_value anode_strv(napi_env env, const char *const *v); /* NULL-ended -> array */
napi_value anode_entry(napi_env env, const asb_entry *e);
napi_value anode_entry_list(napi_env env, const asb_entry_list *l);

/* ---- module parts ---------------------------------------------------------------- */

typedef struct {
  const char *name;
  napi_callback fn;
} anode_fn;

/* Each source defines its table; the module exports them all. */
extern const anode_fn anode_runtime_fns[];
extern const anode_fn anode_client_fns[];
extern const anode_fn anode_process_fns[];
extern const anode_fn anode_files_fns[];
extern const anode_fn anode_code_fns[];
extern const anode_fn anode_agents_fns[];
extern const anode_fn anode_git_fns[];
extern const anode_fn anode_volume_fns[];
extern const anode_fn anode_secrets_fns[];

/* What a function's table row says (bindings/gen/api_table.h), for checks. */
unsigned anode_api_flags(const char *name);

#endif /* ANODE_H */
