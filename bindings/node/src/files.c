/* agent-sandbox Node binding: the filesystem of a sandbox, and watches.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "anode.h"
#include "events.h"
#include "gen.h"

/* Options every file call takes: user, requestTimeoutMs, gzip. */
static int read_files_opts(napi_env env, gen_call *c, napi_value o) {
  return anode_opt_string(env, o, "user", &c->s[5]) ||
         anode_opt_long(env, o, "requestTimeoutMs", &c->call_timeout) ||
         anode_opt_bool(env, o, "gzip", &c->i[3]);
}

static asb_files_options files_opts(gen_call *c) {
  asb_files_options o = ASB_FILES_OPTIONS_INIT;
  o.user = c->s[5];
  o.timeout_ms = c->call_timeout;
  o.cancel = c->base.cancel;
  o.gzip = c->i[3];
  return o;
}

enum {
  FOP_READ = 1,
  FOP_READ_STREAM,
  FOP_WRITE,
  FOP_WRITE_STREAM,
  FOP_WRITE_MANY,
  FOP_LIST,
  FOP_EXISTS,
  FOP_STAT,
  FOP_REMOVE,
  FOP_RENAME,
  FOP_MAKE_DIR,
  FOP_DOWNLOAD_URL,
  FOP_UPLOAD_URL
};

static int on_chunk(const char *data, size_t len, void *ud) {
  anode_call *c = ud;
  if (atomic_load(&c->aborted)) return 0; /* cancelled: see js_abort */
  anode_msg *m = anode_msg_bytes(EV_DATA, data, len);
  return m ? anode_emit(c, m) : 1;
}

/* The upload's next bytes, fed by JS on EV_NEED (files.feed). */
static long on_need(char *buf, size_t cap, void *ud) {
  gen_call *c = ud;
  anode_call *base = &c->base;
  pthread_mutex_lock(&base->mu);
  for (;;) {
    if (anode_call_stopping(base)) {
      pthread_mutex_unlock(&base->mu);
      return -1;
    }
    if (c->feed_off < c->feed_len) {
      size_t n = c->feed_len - c->feed_off;
      if (n > cap) n = cap;
      memcpy(buf, c->feed + c->feed_off, n);
      c->feed_off += n;
      pthread_mutex_unlock(&base->mu);
      return (long)n;
    }
    if (c->feed_eof) {
      pthread_mutex_unlock(&base->mu);
      return 0;
    }
    if (!c->feed_req) {
      c->feed_req = 1;
      pthread_mutex_unlock(&base->mu);
      anode_msg *m = anode_msg_bytes(EV_NEED, NULL, 0);
      if (!m || anode_emit(base, m)) return -1;
      pthread_mutex_lock(&base->mu);
      continue;
    }
    pthread_cond_wait(&base->cv, &base->mu);
  }
}

typedef struct {
  asb_write_entry *entries;
  char **paths;
  char **datas;
  size_t n;
} many;

static void w_files(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_files_options o = files_opts(c);
  int rc = ASB_EINVAL;
  switch (c->op) {
    case FOP_READ: {
      char *d = NULL;
      size_t n = 0;
      rc = asb_files_read(&d, &n, c->sb, c->s[0], &o);
      c->out = d;
      c->len = n;
      break;
    }
    case FOP_READ_STREAM:
      rc = asb_files_read_stream(c->sb, c->s[0], &o, on_chunk, base);
      break;
    case FOP_WRITE: {
      asb_entry *e = NULL;
      rc = asb_files_write(&e, c->sb, c->s[0], c->data ? c->data : "", c->len, &o);
      c->out = e;
      break;
    }
    case FOP_WRITE_STREAM: {
      asb_entry *e = NULL;
      rc = asb_files_write_stream(&e, c->sb, c->s[0], on_need, c, (asb_int64)c->d[0], &o);
      c->out = e;
      break;
    }
    case FOP_WRITE_MANY: {
      many *m = c->out2;
      asb_entry_list *l = NULL;
      rc = asb_files_write_many(&l, c->sb, m->entries, m->n, &o);
      c->out = l;
      break;
    }
    case FOP_LIST: {
      asb_entry_list *l = NULL;
      rc = asb_files_list(&l, c->sb, c->s[0], c->i[0], &o);
      c->out = l;
      break;
    }
    case FOP_EXISTS:
      rc = asb_files_exists(c->sb, c->s[0], &o);
      break;
    case FOP_STAT: {
      asb_entry *e = NULL;
      rc = asb_files_stat(&e, c->sb, c->s[0], &o);
      c->out = e;
      break;
    }
    case FOP_REMOVE:
      rc = asb_files_remove(c->sb, c->s[0], &o);
      break;
    case FOP_RENAME: {
      asb_entry *e = NULL;
      rc = asb_files_rename(&e, c->sb, c->s[0], c->s[1], &o);
      c->out = e;
      break;
    }
    case FOP_MAKE_DIR:
      rc = asb_files_make_dir(c->sb, c->s[0], &o);
      break;
    case FOP_DOWNLOAD_URL:
    case FOP_UPLOAD_URL: {
      char *url = NULL;
      rc = c->op == FOP_DOWNLOAD_URL
               ? asb_files_download_url(&url, c->sb, c->s[0], c->s[5], c->l[0])
               : asb_files_upload_url(&url, c->sb, c->s[0], c->s[5], c->l[0]);
      c->out = url;
      break;
    }
  }
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

static napi_value r_files(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (base->rc < 0) return NULL;
  switch (c->op) {
    case FOP_READ: {
      char *d = c->out;
      if (c->i[0]) return anode_strn(env, d, c->len); /* as text */
      napi_value v = anode_adopt_buffer(env, &d, c->len);
      c->out = d;
      return v;
    }
    case FOP_WRITE:
    case FOP_WRITE_STREAM:
    case FOP_STAT:
    case FOP_RENAME:
      return anode_entry(env, c->out);
    case FOP_WRITE_MANY:
    case FOP_LIST:
      return anode_entry_list(env, c->out);
    case FOP_DOWNLOAD_URL:
    case FOP_UPLOAD_URL:
      return anode_str(env, c->out);
    default:
      return anode_num(env, base->rc);
  }
}

static void c_files(anode_call *base) {
  gen_call *c = (gen_call *)base;
  switch (c->op) {
    case FOP_READ:
    case FOP_DOWNLOAD_URL:
    case FOP_UPLOAD_URL:
      asb_free(c->out);
      break;
    case FOP_WRITE:
    case FOP_WRITE_STREAM:
    case FOP_STAT:
    case FOP_RENAME:
      asb_entry_free(c->out);
      break;
    case FOP_WRITE_MANY:
    case FOP_LIST:
      asb_entry_list_free(c->out);
      break;
  }
  c->out = NULL;
  many *m = c->out2;
  if (m) {
    for (size_t i = 0; i < m->n; i++) {
      free(m->paths[i]);
      free(m->datas[i]);
    }
    free(m->paths);
    free(m->datas);
    free(m->entries);
    free(m);
  }
  c->out2 = NULL;
  gen_cleanup(base);
}

/* files(sandbox, op, path, arg, opts, onEvent, cb):
 *   read (1; arg: true for text), readStream (2; chunks as events),
 *   write (3; arg: the data), writeStream (4; arg: the size or -1, chunks
 *   fed on EV_NEED), writeMany (5; path unused, arg: [{path, data}]),
 *   list (6; arg: depth), exists (7), stat (8), remove (9), rename (10;
 *   arg: the new path), makeDir (11), downloadUrl (12; arg: expires in
 *   seconds), uploadUrl (13; same). opts: user, requestTimeoutMs, gzip. */
static napi_value js_files(napi_env env, napi_callback_info info) {
  GEN_ARGS(7);
  gen_call *c = gen_new(env, argv[6]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  int32_t op = 0;
  if (!b) return gen_discard(env, c);
  napi_get_value_int32(env, argv[1], &op);
  if (op < FOP_READ || op > FOP_UPLOAD_URL) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown files operation");
    return gen_discard(env, c);
  }
  if ((op != FOP_WRITE_MANY && anode_get_string(env, argv[2], &c->s[0])) ||
      read_files_opts(env, c, argv[4]) || anode_call_on_event(env, &c->base, argv[5]))
    return gen_discard(env, c);
  napi_value arg = argv[3];
  int bad = 0;
  switch (op) {
    case FOP_READ: {
      bool t = false;
      napi_get_value_bool(env, arg, &t);
      c->i[0] = t;
      break;
    }
    case FOP_WRITE:
      bad = anode_get_bytes(env, arg, &c->data, &c->len) != 0;
      break;
    case FOP_WRITE_STREAM:
      bad = napi_get_value_double(env, arg, &c->d[0]) != napi_ok;
      break;
    case FOP_LIST:
      bad = napi_get_value_int32(env, arg, &c->i[0]) != napi_ok;
      break;
    case FOP_RENAME:
      bad = anode_get_string(env, arg, &c->s[1]) != 0;
      break;
    case FOP_DOWNLOAD_URL:
    case FOP_UPLOAD_URL:
      bad = anode_get_long(env, arg, &c->l[0]) != 0;
      break;
    case FOP_WRITE_MANY: {
      bool is = false;
      napi_is_array(env, arg, &is);
      if (!is) {
        bad = 1;
        break;
      }
      uint32_t n = 0;
      napi_get_array_length(env, arg, &n);
      many *m = calloc(1, sizeof *m);
      c->out2 = m;
      if (!m) {
        bad = 1;
        break;
      }
      m->entries = calloc(n ? n : 1, sizeof *m->entries);
      m->paths = calloc(n ? n : 1, sizeof *m->paths);
      m->datas = calloc(n ? n : 1, sizeof *m->datas);
      if (!m->entries || !m->paths || !m->datas) {
        bad = 1;
        break;
      }
      for (uint32_t i = 0; i < n && !bad; i++) {
        napi_value e, p, d;
        napi_get_element(env, arg, i, &e);
        if (napi_get_named_property(env, e, "path", &p) != napi_ok ||
            napi_get_named_property(env, e, "data", &d) != napi_ok) {
          bad = 1;
          break;
        }
        size_t len = 0;
        if (anode_get_string(env, p, &m->paths[i]) || anode_get_bytes(env, d, &m->datas[i], &len)) {
          bad = 1;
          free(m->paths[i]);
          m->paths[i] = NULL;
          break;
        }
        m->entries[i].path = m->paths[i];
        m->entries[i].data = m->datas[i];
        m->entries[i].len = len;
        m->n = i + 1;
      }
      break;
    }
  }
  if (bad) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "bad argument for this files operation");
    return gen_discard(env, c);
  }
  c->op = op;
  c->base.work = w_files;
  c->base.result = r_files;
  c->base.cleanup = c_files;
  return anode_call_submit(env, &c->base, b);
}

/* feed(id, chunk | null): the upload's next bytes (null: the end). */
static napi_value js_feed(napi_env env, napi_callback_info info) {
  GEN_ARGS(2);
  anode_call *base = anode_call_lookup(env, argv[0]);
  if (!base) return anode_undefined(env);
  gen_call *c = (gen_call *)base;
  char *d = NULL;
  size_t n = 0;
  int eof = anode_is_nullish(env, argv[1]);
  if (!eof && anode_get_bytes(env, argv[1], &d, &n)) return NULL;
  pthread_mutex_lock(&base->mu);
  free(c->feed);
  c->feed = d;
  c->feed_len = n;
  c->feed_off = 0;
  c->feed_eof = eof;
  c->feed_req = 0;
  pthread_cond_broadcast(&base->cv);
  pthread_mutex_unlock(&base->mu);
  return anode_undefined(env);
}

/* ---- watches ------------------------------------------------------------------------------ */

static const char *event_name(asb_fs_event_type t) {
  switch (t) {
    case ASB_FS_EVENT_CREATE:
      return "create";
    case ASB_FS_EVENT_WRITE:
      return "write";
    case ASB_FS_EVENT_REMOVE:
      return "remove";
    case ASB_FS_EVENT_RENAME:
      return "rename";
    case ASB_FS_EVENT_CHMOD:
      return "chmod";
  }
  return "unknown";
}

/* The entry is only valid during the callback, so its fields are copied
 * into the message (as a small JS-ready record). */
typedef struct {
  char *name, *path, *perm, *owner, *group, *target;
  int type;
  double size, mode, modified_ms;
} entry_copy;

static napi_value build_watch(napi_env env, anode_msg *m) {
  napi_value o = anode_obj(env);
  anode_set(env, o, "type", anode_str(env, event_name((asb_fs_event_type)m->len)));
  anode_set(env, o, "name", anode_str(env, m->data));
  entry_copy *e = m->extra;
  if (e) {
    static const char *types[] = {NULL, "file", "dir", "symlink"};
    napi_value en = anode_obj(env);
    anode_set(env, en, "name", anode_str(env, e->name));
    anode_set(env, en, "type",
              anode_str(env, e->type >= 1 && e->type <= 3 ? types[e->type] : NULL));
    anode_set(env, en, "path", anode_str(env, e->path));
    anode_set(env, en, "size", anode_num(env, e->size));
    anode_set(env, en, "mode", anode_num(env, e->mode));
    anode_set(env, en, "permissions", anode_str(env, e->perm));
    anode_set(env, en, "owner", anode_str(env, e->owner));
    anode_set(env, en, "group", anode_str(env, e->group));
    anode_set(env, en, "modifiedMs", anode_num(env, e->modified_ms));
    anode_set(env, en, "symlinkTarget", anode_str(env, e->target));
    anode_set(env, o, "entry", en);
  }
  return o;
}

static void drop_watch(anode_msg *m) {
  entry_copy *e = m->extra;
  if (!e) return;
  free(e->name);
  free(e->path);
  free(e->perm);
  free(e->owner);
  free(e->group);
  free(e->target);
  free(e);
  m->extra = NULL;
}

static int on_watch(asb_fs_event_type type, const char *name, const asb_entry *entry, void *ud) {
  anode_call *c = anode_sink_get(ud);
  if (!c) return 0;
  if (atomic_load(&c->aborted)) return 0; /* cancelled: see js_abort */
  anode_msg *m = calloc(1, sizeof *m);
  if (!m) return 1;
  m->event = EV_WATCH;
  m->data = anode_strdup(name ? name : "");
  m->len = (size_t)type;
  m->cost = 128;
  m->build = build_watch;
  m->drop = drop_watch;
  if (entry) {
    entry_copy *e = calloc(1, sizeof *e);
    if (e) {
      e->name = anode_strdup(asb_entry_name(entry));
      e->path = anode_strdup(asb_entry_path(entry));
      e->perm = anode_strdup(asb_entry_permissions(entry));
      e->owner = anode_strdup(asb_entry_owner(entry));
      e->group = anode_strdup(asb_entry_group(entry));
      e->target = anode_strdup(asb_entry_symlink_target(entry));
      e->type = (int)asb_entry_type(entry);
      e->size = (double)asb_entry_size(entry);
      e->mode = asb_entry_mode(entry);
      e->modified_ms = (double)asb_entry_modified_at(entry) * 1000.0 +
                       (double)(asb_entry_modified_nanos(entry) / 1000000);
    }
    m->extra = e;
  }
  return anode_emit(c, m);
}

static void w_watch_dir(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_watch_options o = ASB_WATCH_OPTIONS_INIT;
  o.user = c->s[5];
  o.recursive = c->i[0];
  o.include_entry = c->i[1];
  o.polling = c->i[2];
  o.request_timeout_ms = c->call_timeout;
  o.on_event = on_watch;
  o.userdata = c->out2;
  o.cancel = base->cancel;
  asb_watch *w = NULL;
  int rc = asb_files_watch_dir(&w, c->sb, c->s[0], &o);
  if (rc < 0) anode_call_fail(base, rc);
  c->out = w;
}

static napi_value r_watch_dir(napi_env env, anode_call *base) {
  gen_call *c = (gen_call *)base;
  if (!c->out) return NULL;
  napi_value h = anode_box_new(env, BOX_WATCH, c->out, c->out2);
  c->out = c->out2 = NULL;
  return h;
}

static void c_watch_dir(anode_call *base) {
  gen_call *c = (gen_call *)base;
  asb_watch_free(c->out);
  anode_sink_free(c->out2);
  c->out = c->out2 = NULL;
  gen_cleanup(base);
}

/* watchDir(sandbox, path, opts {user, recursive, includeEntry, polling,
 * requestTimeoutMs}, cb) -> watch handle, once the watch is in place */
static napi_value js_watch_dir(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  anode_box *b = gen_sandbox(env, c, argv[0]);
  napi_value o = argv[2];
  if (!b || anode_get_string(env, argv[1], &c->s[0]) ||
      anode_opt_string(env, o, "user", &c->s[5]) || anode_opt_bool(env, o, "recursive", &c->i[0]) ||
      anode_opt_bool(env, o, "includeEntry", &c->i[1]) ||
      anode_opt_bool(env, o, "polling", &c->i[2]) ||
      anode_opt_long(env, o, "requestTimeoutMs", &c->call_timeout))
    return gen_discard(env, c);
  c->out2 = anode_sink_new();
  if (!c->out2) return gen_discard(env, c);
  c->base.work = w_watch_dir;
  c->base.result = r_watch_dir;
  c->base.cleanup = c_watch_dir;
  return anode_call_submit(env, &c->base, b);
}

/* watchWait's and watchPoll's work: c->i[0] set, one poll */
static void w_watch_wait(anode_call *base) {
  gen_call *c = (gen_call *)base;
  anode_sink *s = c->out2;
  anode_sink_set(s, base);
  int rc = c->i[0] ? asb_watch_poll(c->watch, NULL) : asb_watch_wait(c->watch, c->l[0]);
  anode_sink_set(s, NULL);
  c->out2 = NULL;
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

static napi_value r_count(napi_env env, anode_call *base) {
  return base->rc >= 0 ? anode_num(env, base->rc) : NULL;
}

/* watchWait(watch, timeoutMs, onEvent, cb) -> events delivered; ends when
 * watchStop is called, the handle closed, the watch ended or timeoutMs
 * passed (negative: no limit). */
static napi_value js_watch_wait(napi_env env, napi_callback_info info) {
  GEN_ARGS(4);
  gen_call *c = gen_new(env, argv[3]);
  if (!c) return NULL;
  anode_box *b = gen_box(env, c, argv[0], BOX_WATCH);
  if (!b || anode_get_long(env, argv[1], &c->l[0]) || anode_call_on_event(env, &c->base, argv[2]))
    return gen_discard(env, c);
  c->watch = b->ptr;
  c->out2 = b->sink;
  c->base.work = w_watch_wait;
  c->base.result = r_count;
  return anode_call_submit(env, &c->base, b);
}

/* watchPoll(watch, onEvent, cb) -> events delivered: a polling watch's
 * events since the last poll (every change made before the call). */
static napi_value js_watch_poll(napi_env env, napi_callback_info info) {
  GEN_ARGS(3);
  gen_call *c = gen_new(env, argv[2]);
  if (!c) return NULL;
  anode_box *b = gen_box(env, c, argv[0], BOX_WATCH);
  if (!b || anode_call_on_event(env, &c->base, argv[1])) return gen_discard(env, c);
  c->watch = b->ptr;
  c->out2 = b->sink;
  c->i[0] = 1;
  c->base.work = w_watch_wait;
  c->base.result = r_count;
  return anode_call_submit(env, &c->base, b);
}

/* watchStop(watch): make a watchWait in progress return (never blocks). */
static napi_value js_watch_stop(napi_env env, napi_callback_info info) {
  GEN_ARGS(1);
  anode_box *b = anode_box_arg(env, argv[0], BOX_WATCH);
  if (!b) return NULL;
  asb_watch_stop(b->ptr);
  return anode_undefined(env);
}

const anode_fn anode_files_fns[] = {{"files", js_files},
                                    {"feed", js_feed},
                                    {"watchDir", js_watch_dir},
                                    {"watchWait", js_watch_wait},
                                    {"watchPoll", js_watch_poll},
                                    {"watchStop", js_watch_stop},
                                    {NULL, NULL}};
