/* agent-sandbox Node binding: secrets (secret.h, docs/reference/secret.md).
 * A value goes in (create, update) and never comes out: no result here
 * carries it, and the copy this call made of it is wiped before it is
 * freed.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "anode.h"
#include "gen.h"

enum { SOP_CREATE = 1, SOP_UPDATE, SOP_GET, SOP_DELETE, SOP_LIST };

static napi_value secret_value(napi_env env, const asb_secret *s) {
  napi_value o = anode_obj(env);
  anode_set(env, o, "id", anode_str(env, asb_secret_id(s)));
  anode_set(env, o, "name", anode_str(env, asb_secret_name(s)));
  anode_set(env, o, "version", anode_num(env, asb_secret_version(s)));
  anode_set(env, o, "createdAt", anode_num(env, (double)asb_secret_created_at(s)));
  anode_set(env, o, "updatedAt", anode_num(env, (double)asb_secret_updated_at(s)));
  napi_value md = anode_obj(env);
  size_t n = asb_secret_metadata_count(s);
  for (size_t i = 0; i < n; i++)
    anode_set(env, md, asb_secret_metadata_key(s, i),
              anode_str(env, asb_secret_metadata_value(s, i)));
  anode_set(env, o, "metadata", md);
  return o;
}

static void w_secrets(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  const char *const *md = (const char *const *)c->v[0];
  asb_secret *s = NULL;
  asb_secret_page *p = NULL;
  int rc = ASB_EINVAL;
  switch (c->op) {
    case SOP_CREATE:
      rc = asb_secrets_create(&s, c->client, c->s[0], c->s[1], md, &call);
      break;
    case SOP_UPDATE:
      rc = asb_secrets_update(&s, c->client, c->s[0], c->s[1], md, &call);
      break;
    case SOP_GET:
      rc = asb_secrets_get(&s, c->client, c->s[0], &call);
      break;
    case SOP_DELETE:
      rc = asb_secrets_delete(c->client, c->s[0], &call);
      break;
    case SOP_LIST:
      rc = asb_secrets_list(&p, c->client, (int)c->l[0], c->s[2], &call);
      break;
  }
  c->out = s;
  c->out2 = p;
  if (rc < 0) anode_call_fail(base, rc);
}

static napi_value r_secrets(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (base->rc < 0) return NULL;
  if (c->out) return secret_value(env, c->out);
  if (!c->out2) return anode_undefined(env); /* delete */
  const asb_secret_page *p = c->out2;
  size_t n = asb_secret_page_count(p);
  napi_value items, o = anode_obj(env);
  napi_create_array_with_length(env, n, &items);
  for (size_t i = 0; i < n; i++)
    napi_set_element(env, items, (uint32_t)i, secret_value(env, asb_secret_page_get(p, i)));
  anode_set(env, o, "items", items);
  anode_set(env, o, "nextToken", anode_str(env, asb_secret_page_next_token(p)));
  return o;
}

static void c_secrets(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_secret_free(c->out);
  asb_secret_page_free(c->out2);
  c->out = c->out2 = NULL;
  if (c->s[1]) { /* the value: not left in freed memory */
    volatile char *p = c->s[1];
    while (*p) *p++ = 0;
  }
  gen_cleanup(base);
}

/* secretsOp(client, op, {secret, value, metadata, limit, nextToken,
 * requestTimeoutMs}, cb): create (1; secret = the name), update (2),
 * get (3), delete (4), list (5) -> a secret {id, name, version,
 * createdAt, updatedAt (Unix seconds), metadata}, {items, nextToken}
 * (list) or undefined (delete). */
static napi_value js_secrets_op(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  c->base.cleanup = c_secrets;
  anode_box *b = gen_client(env, c, argv[0]);
  int32_t op = 0;
  napi_value o = argv[2];
  if (!b || napi_get_value_int32(env, argv[1], &op) != napi_ok || op < SOP_CREATE ||
      op > SOP_LIST || anode_opt_string(env, o, "secret", &c->s[0]) ||
      anode_opt_string(env, o, "value", &c->s[1]) || anode_opt_strv(env, o, "metadata", &c->v[0]) ||
      anode_opt_long(env, o, "limit", &c->l[0]) ||
      anode_opt_string(env, o, "nextToken", &c->s[2]) || gen_read_callopts(env, c, o)) {
    if (b && (op < SOP_CREATE || op > SOP_LIST))
      anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown operation");
    return gen_discard(env, c);
  }
  c->op = op;
  c->base.work = w_secrets;
  c->base.result = r_secrets;
  return anode_call_submit(env, &c->base, b);
}

const anode_fn anode_secrets_fns[] = {{"secretsOp", js_secrets_op}, {NULL, NULL}};
