/* agent-sandbox Node binding: volumes (volume.h): the control plane
 * (create, get, list, delete with the API key) and a volume's files (its
 * own token), each call on the addon's worker threads. Two entry points:
 * volumeOp(client, op, idOrName, sizeMB, callOpts, cb) and
 * volumeFile(volume, op, path, opts, data, cb), and volumeFromToken
 * (client, id, name, token, cb); lib/volume.js gives them
 * E2B's Volume names.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anode.h"
#include "gen.h"

enum { VOP_CREATE = 1, VOP_GET, VOP_LIST, VOP_DELETE };
enum {
  VF_READ = 1,
  VF_WRITE,
  VF_MAKE_DIR,
  VF_GET_INFO,
  VF_EXISTS,
  VF_UPDATE_METADATA,
  VF_REMOVE,
  VF_LIST
};

typedef struct vol_call {
  gen_call g;
  asb_volume *vol; /* the volume acted on (volumeFile) */
} vol_call;

/* ---- values ------------------------------------------------------------------------- */

static napi_value volume_fields(napi_env env, const asb_volume *v) {
  napi_value o = anode_obj(env);
  anode_set(env, o, "volumeId", anode_str(env, asb_volume_id(v)));
  anode_set(env, o, "name", anode_str(env, asb_volume_name(v)));
  anode_set(env, o, "sizeMB", anode_num(env, asb_volume_size_mb(v)));
  return o;
}

static napi_value entry_value(napi_env env, const asb_volume_entry *e) {
  napi_value o = anode_obj(env);
  anode_set(env, o, "name", anode_str(env, asb_volume_entry_name(e)));
  anode_set(env, o, "type", anode_str(env, asb_volume_entry_type(e)));
  anode_set(env, o, "path", anode_str(env, asb_volume_entry_path(e)));
  anode_set(env, o, "size", anode_num(env, (double)asb_volume_entry_size(e)));
  anode_set(env, o, "mode", anode_num(env, asb_volume_entry_mode(e)));
  anode_set(env, o, "uid", anode_num(env, asb_volume_entry_uid(e)));
  anode_set(env, o, "gid", anode_num(env, asb_volume_entry_gid(e)));
  /* Unix seconds; the JS side makes Dates */
  anode_set(env, o, "atime", anode_num(env, (double)asb_volume_entry_accessed_at(e)));
  anode_set(env, o, "mtime", anode_num(env, (double)asb_volume_entry_modified_at(e)));
  anode_set(env, o, "ctime", anode_num(env, (double)asb_volume_entry_changed_at(e)));
  anode_set(env, o, "target", anode_str(env, asb_volume_entry_target(e)));
  return o;
}

/* A RangeError (anode_throw's are TypeErrors). */
static void throw_range(napi_env env, const char *key) {
  char msg[96];
  snprintf(msg, sizeof msg, "%s is out of range", key);
  napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
}

/* ---- the control plane ------------------------------------------------------------------ */

static void w_volume_op(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_call_options call = gen_callopts(c);
  int rc = ASB_EINVAL;
  switch (c->op) {
    case VOP_CREATE: {
      asb_volume *v = NULL;
      rc = asb_volumes_create(&v, c->client, c->s[0], c->i[0], &call);
      c->out = v;
      break;
    }
    case VOP_GET: {
      asb_volume *v = NULL;
      rc = asb_volumes_get(&v, c->client, c->s[0], &call);
      c->out = v;
      break;
    }
    case VOP_LIST: {
      asb_volume_list *l = NULL;
      rc = asb_volumes_list(&l, c->client, &call);
      c->out2 = l;
      break;
    }
    case VOP_DELETE:
      rc = asb_volumes_delete(c->client, c->s[0], &call);
      break;
  }
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

static napi_value r_volume_op(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (base->rc < 0) return NULL;
  if (c->out) { /* create, get: the fields, its token and the handle */
    asb_volume *v = c->out;
    napi_value o = volume_fields(env, v);
    anode_set(env, o, "token", anode_str(env, asb_volume_token(v)));
    c->out = NULL;
    anode_set(env, o, "handle", anode_box_new(env, BOX_VOLUME, v, NULL));
    return o;
  }
  if (c->out2) {
    const asb_volume_list *l = c->out2;
    size_t n = asb_volume_list_count(l);
    napi_value a;
    napi_create_array_with_length(env, n, &a);
    for (size_t i = 0; i < n; i++)
      napi_set_element(env, a, (uint32_t)i, volume_fields(env, asb_volume_list_get(l, i)));
    return a;
  }
  return anode_num(env, base->rc);
}

static void c_volume_op(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_volume_free(c->out);
  asb_volume_list_free(c->out2);
  c->out = c->out2 = NULL;
  gen_cleanup(base);
}

/* volumeOp(client, op, idOrName, sizeMB, callOpts, cb): create (1), get
 * (2), list (3), delete (4). */
static napi_value js_volume_op(napi_env env, napi_callback_info info) {
  GEN_ARGS(6);
  gen_call *c = gen_new(env, argv[5]);
  if (!c) return NULL;
  anode_box *b = gen_client(env, c, argv[0]);
  int32_t op = 0;
  if (!b) return gen_discard(env, c);
  napi_get_value_int32(env, argv[1], &op);
  if (op < VOP_CREATE || op > VOP_DELETE) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown volume operation");
    return gen_discard(env, c);
  }
  long size = 0;
  if ((op != VOP_LIST && anode_get_string(env, argv[2], &c->s[0])) ||
      (op == VOP_CREATE && anode_get_long(env, argv[3], &size)) ||
      gen_read_callopts(env, c, argv[4]))
    return gen_discard(env, c);
  if (size < 0 || size > 0x7fffffffL) {
    throw_range(env, "sizeMB");
    return gen_discard(env, c);
  }
  c->i[0] = (int)size;
  c->op = op;
  c->base.work = w_volume_op;
  c->base.result = r_volume_op;
  c->base.cleanup = c_volume_op;
  return anode_call_submit(env, &c->base, b);
}

static void w_volume_from_token(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_volume *v = NULL;
  int rc = asb_volume_from_token(&v, c->client, c->s[0], c->s[1], c->s[2]);
  c->out = v;
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

/* volumeFromToken(client, volumeId, name or null, token, cb): E2B's `new
 * Volume(volumeId, name, token)`, no API call; the value is volumeOp's
 * create/get one. On a worker like the rest (it takes the client's lock
 * nowhere, but its errors travel the same way). */
static napi_value js_volume_from_token(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  gen_call *c = gen_new(env, argv[4]);
  if (!c) return NULL;
  anode_box *b = gen_client(env, c, argv[0]);
  if (!b || anode_get_string(env, argv[1], &c->s[0]) ||
      (!anode_is_nullish(env, argv[2]) && anode_get_string(env, argv[2], &c->s[1])) ||
      anode_get_string(env, argv[3], &c->s[2]))
    return gen_discard(env, c);
  c->base.work = w_volume_from_token;
  c->base.result = r_volume_op;
  c->base.cleanup = c_volume_op;
  return anode_call_submit(env, &c->base, b);
}

/* ---- its files ------------------------------------------------------------------------------ */

static asb_volume_write_options write_opts(vol_call *c) {
  asb_volume_write_options o = ASB_VOLUME_WRITE_OPTIONS_INIT;
  o.uid = c->g.i[0];
  o.gid = c->g.i[1];
  o.mode = c->g.i[2];
  o.force = c->g.i[3];
  o.timeout_ms = c->g.call_timeout;
  o.cancel = c->g.base.cancel;
  return o;
}

static void w_volume_file(anode_call *base) {
  vol_call *vc = (vol_call *)base;
  gen_call *c = &vc->g;
  asb_call_options call = gen_callopts(c);
  asb_volume_write_options wo = write_opts(vc);
  asb_volume_entry *e = NULL;
  int rc = ASB_EINVAL;
  switch (c->op) {
    case VF_READ: {
      char *d = NULL;
      size_t n = 0;
      rc = asb_volume_read_file(&d, &n, vc->vol, c->s[0], &call);
      c->out2 = d;
      c->len = n;
      break;
    }
    case VF_WRITE:
      rc = asb_volume_write_file(&e, vc->vol, c->s[0], c->data ? c->data : "", c->len, &wo);
      break;
    case VF_MAKE_DIR:
      rc = asb_volume_make_dir(&e, vc->vol, c->s[0], &wo);
      break;
    case VF_GET_INFO:
      rc = asb_volume_get_info(&e, vc->vol, c->s[0], &call);
      break;
    case VF_EXISTS:
      rc = asb_volume_exists(vc->vol, c->s[0], &call);
      break;
    case VF_UPDATE_METADATA: /* -1 keeps a value */
      rc = asb_volume_update_metadata(&e, vc->vol, c->s[0], c->i[0], c->i[1], c->i[2], &call);
      break;
    case VF_REMOVE:
      rc = asb_volume_remove(vc->vol, c->s[0], &call);
      break;
    case VF_LIST: {
      asb_volume_entry_list *l = NULL;
      rc = asb_volume_entries_list(&l, vc->vol, c->s[0], c->i[0], &call);
      c->out2 = l;
      break;
    }
  }
  c->out = e;
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

static napi_value r_volume_file(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (base->rc < 0) return NULL;
  switch (c->op) {
    case VF_READ: {
      char *d = c->out2;
      napi_value v = anode_adopt_buffer(env, &d, c->len);
      c->out2 = d;
      return v;
    }
    case VF_EXISTS:
      return anode_bool(env, base->rc == 1);
    case VF_REMOVE:
      return anode_num(env, base->rc);
    case VF_LIST: {
      const asb_volume_entry_list *l = c->out2;
      size_t n = l ? asb_volume_entry_list_count(l) : 0;
      napi_value a;
      napi_create_array_with_length(env, n, &a);
      for (size_t i = 0; i < n; i++)
        napi_set_element(env, a, (uint32_t)i, entry_value(env, asb_volume_entry_list_get(l, i)));
      return a;
    }
    default:
      return c->out ? entry_value(env, c->out) : anode_undefined(env);
  }
}

static void c_volume_file(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_volume_entry_free(c->out);
  c->out = NULL;
  if (c->op == VF_READ)
    asb_free(c->out2);
  else if (c->op == VF_LIST)
    asb_volume_entry_list_free(c->out2);
  c->out2 = NULL;
  gen_cleanup(base);
}

/* An owner or mode of opts: absent -> dflt. */
static int opt_num(napi_env env, napi_value o, const char *key, int dflt, int *out) {
  long v = dflt;
  if (anode_opt_long(env, o, key, &v)) return -1;
  if (v < -1 || v > 0x7fffffffL) {
    throw_range(env, key);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* volumeFile(volume, op, path, opts, data, cb): read (1) -> Buffer, write
 * (2: opts {uid, gid, mode, force}, data bytes) -> entry, makeDir (3: the
 * same opts) -> entry, getInfo (4) -> entry, exists (5) -> bool,
 * updateMetadata (6: opts {uid, gid, mode}, absent kept) -> entry, remove
 * (7), list (8: opts {depth}) -> [entry]. Every op: opts.requestTimeoutMs. */
static napi_value js_volume_file(napi_env env, napi_callback_info info) {
  GEN_ARGS(6);
  vol_call *vc = (vol_call *)anode_call_new(env, sizeof(vol_call), argv[5]);
  if (!vc) return NULL;
  gen_call *c = &vc->g;
  c->base.cleanup = gen_cleanup;
  anode_box *b = gen_box(env, c, argv[0], BOX_VOLUME);
  int32_t op = 0;
  if (!b) return gen_discard(env, c);
  vc->vol = b->ptr;
  napi_get_value_int32(env, argv[1], &op);
  if (op < VF_READ || op > VF_LIST) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown volume file operation");
    return gen_discard(env, c);
  }
  napi_value o = argv[3];
  if (anode_get_string(env, argv[2], &c->s[0]) || gen_read_callopts(env, c, o))
    return gen_discard(env, c);
  int keep = op == VF_UPDATE_METADATA ? -1 : 0;
  if ((op == VF_WRITE || op == VF_MAKE_DIR || op == VF_UPDATE_METADATA) &&
      (opt_num(env, o, "uid", keep, &c->i[0]) || opt_num(env, o, "gid", keep, &c->i[1]) ||
       opt_num(env, o, "mode", keep, &c->i[2])))
    return gen_discard(env, c);
  if ((op == VF_WRITE || op == VF_MAKE_DIR) && anode_opt_bool(env, o, "force", &c->i[3]))
    return gen_discard(env, c);
  if (op == VF_LIST && opt_num(env, o, "depth", 0, &c->i[0])) return gen_discard(env, c);
  if (op == VF_WRITE && anode_get_bytes(env, argv[4], &c->data, &c->len))
    return gen_discard(env, c);
  c->op = op;
  c->base.work = w_volume_file;
  c->base.result = r_volume_file;
  c->base.cleanup = c_volume_file;
  return anode_call_submit(env, &c->base, b);
}

const anode_fn anode_volume_fns[] = {{"volumeOp", js_volume_op},
                                     {"volumeFromToken", js_volume_from_token},
                                     {"volumeFile", js_volume_file},
                                     {NULL, NULL}};
