/* agent-sandbox Node binding: the general-purpose call most functions use
 * (a few strings, vectors and numbers copied from JS, the handles it acts
 * on, up to two outputs).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ANODE_GEN_H
#define ANODE_GEN_H

#include <stdlib.h>

#include "anode.h"

typedef struct gen_call {
  anode_call base;
  int op;
  char *s[6];
  char **v[3];
  long l[4];
  int i[4];
  double d[4];
  long call_timeout; /* asb_call_options.timeout_ms */
  asb_client *client;
  asb_sandbox *sb;
  asb_process *proc;
  asb_watch *watch;
  void *out, *out2;
  char *data; /* bytes given */
  size_t len;
  /* an upload fed from JS (files.c): the chunk being read, end of input */
  char *feed;
  size_t feed_len, feed_off;
  int feed_eof, feed_req;
} gen_call;

/* Arguments of a JS function: missing ones are undefined. */
#define GEN_ARGS(n)     \
  size_t argc = (n);    \
  napi_value argv[(n)]; \
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));

static inline void gen_cleanup(anode_call *base) {
  gen_call *c = (gen_call *)base;
  for (int i = 0; i < 6; i++) {
    free(c->s[i]);
    c->s[i] = NULL;
  }
  for (int i = 0; i < 3; i++) {
    anode_strv_free(c->v[i]);
    c->v[i] = NULL;
  }
  free(c->data);
  c->data = NULL;
  free(c->feed);
  c->feed = NULL;
}

static inline gen_call *gen_new(napi_env env, napi_value cb) {
  gen_call *c = (gen_call *)anode_call_new(env, sizeof(gen_call), cb);
  if (c) c->base.cleanup = gen_cleanup;
  return c;
}

static inline napi_value gen_discard(napi_env env, gen_call *c) {
  anode_call_discard(env, &c->base);
  return NULL;
}

static inline anode_box *gen_box(napi_env env, gen_call *c, napi_value v, anode_box_kind kind) {
  anode_box *b = anode_box_arg(env, v, kind);
  if (!b || anode_call_keep(env, &c->base, v) != 0) return NULL;
  return b;
}

static inline anode_box *gen_client(napi_env env, gen_call *c, napi_value v) {
  anode_box *b = gen_box(env, c, v, BOX_CLIENT);
  if (b) c->client = (asb_client *)b->ptr;
  return b;
}

static inline anode_box *gen_sandbox(napi_env env, gen_call *c, napi_value v) {
  anode_box *b = gen_box(env, c, v, BOX_SANDBOX);
  if (b) c->sb = (asb_sandbox *)b->ptr;
  return b;
}

static inline asb_call_options gen_callopts(gen_call *c) {
  asb_call_options o = ASB_CALL_OPTIONS_INIT;
  o.timeout_ms = c->call_timeout;
  o.cancel = c->base.cancel;
  return o;
}

static inline int gen_read_callopts(napi_env env, gen_call *c, napi_value obj) {
  return anode_opt_long(env, obj, "requestTimeoutMs", &c->call_timeout);
}

#endif /* ANODE_GEN_H */
