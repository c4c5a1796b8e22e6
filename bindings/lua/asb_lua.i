/*
 * agent-sandbox — the Lua half of bindings/agentsandbox.i: typemaps and the
 * callback trampolines.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * Conventions of the generated module (agent_sandbox.core, Lua 5.4):
 *   - a function with outputs returns status, out1, ... (several values),
 *     else the status alone; the caller reads asblua_error_last() right
 *     after a negative status (agent_sandbox/init.lua does);
 *   - byte buffers and strings are Lua strings (nil for NULL); integers are
 *     Lua integers, never floats;
 *   - "KEY=VALUE" vectors are given as a table: {KEY = "v"} or {"KEY=v"};
 *   - there is no interpreter lock: every call, the blocking ones too, runs
 *     on the calling Lua thread and blocks it until the C call returns
 *     (ASB_BLOCKING is empty). Callbacks run inside that C call, on that
 *     same thread (the C library calls them on the thread making the call,
 *     docs/abi.md), through lua_pcall: nothing ever calls into Lua from
 *     another OS thread.
 */

/* dladdr (agent_sandbox.mcp finds the MCP server next to the loaded
 * libagentsandbox) is a GNU extension; the CMake build defines _GNU_SOURCE
 * for every file, luarocks' build (rock-build.sh) does not. */
%begin %{
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
%}

/* The shared interface (and gen/asb_api.i) write %arg as the Python side's
 * library defines it; Lua's has no such macro. */
#define %arg(Arg...) Arg

/* ---- no interpreter lock to release --------------------------------------- */
%define ASB_BLOCKING(NAME)
%enddef

%{
#include <lauxlib.h>

/* Integers cross as lua_Integer: the default typemaps go through lua_Number
 * (2.5 becomes 2 silently, a size comes back as 12.0). A float with an exact
 * integer value is accepted, as string.rep and friends do. */
static int asblua_isinteger(lua_State *L, int i) {
  int ok = 0;
  (void)lua_tointegerx(L, i, &ok);
  return ok;
}
%}

%typemap(in, checkfn="asblua_isinteger") int, short, long, long long, signed char
%{$1 = ($type)lua_tointeger(L, $input);%}
%typemap(in, checkfn="asblua_isinteger") unsigned int, unsigned short, unsigned long,
    unsigned long long, unsigned char, size_t
%{if (lua_tointeger(L, $input) < 0) {
    lua_pushfstring(L, "%s: argument %d must not be negative", "$symname", $argnum);
    SWIG_fail;
  }
  $1 = ($type)lua_tointeger(L, $input);%}
%typemap(in, checkfn="asblua_isinteger") enum SWIGTYPE
%{$1 = ($type)(int)lua_tointeger(L, $input);%}
%typemap(out) int, short, long, long long, signed char, unsigned int, unsigned short,
    unsigned long, unsigned long long, unsigned char, size_t
%{  lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++;%}
%typemap(out) enum SWIGTYPE
%{  lua_pushinteger(L, (lua_Integer)(int)$1); SWIG_arg++;%}

/* ---- handles ---------------------------------------------------------------- */
%define ASB_OUT_HANDLE(T)
%typemap(in, numinputs=0) T **out (T *tmp = NULL) { $1 = &tmp; }
%typemap(argout) T **out {
  if (*$1) {
    SWIG_NewPointerObj(L, (void *)*$1, $descriptor(T *), 1);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}
%enddef

/* Processes and watches: agent_sandbox frees them itself (after the
 * callback state they use), so the userdata does not own them. */
%define ASB_OUT_HANDLE_UNOWNED(T)
%typemap(in, numinputs=0) T **out (T *tmp = NULL) { $1 = &tmp; }
%typemap(argout) T **out {
  if (*$1) {
    SWIG_NewPointerObj(L, (void *)*$1, $descriptor(T *), 0);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}
%enddef

/* ---- byte and string outputs ------------------------------------------------ */
%typemap(in, numinputs=0) (char **data, size_t *len) (char *tdata = NULL, size_t tlen = 0) {
  $1 = &tdata;
  $2 = &tlen;
}
%typemap(argout) (char **data, size_t *len) {
  if (*$1) {
    lua_pushlstring(L, *$1, *$2);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}
%typemap(freearg) (char **data, size_t *len) { asb_free(*$1); }

%typemap(in, numinputs=0) char **url (char *tmp = NULL), char **result_json (char *tmp = NULL),
                          char **value (char *tmp = NULL), char **version (char *tmp = NULL),
                          char **json (char *tmp = NULL), char **snapshot_id (char *tmp = NULL),
                          char **token (char *tmp = NULL), char **hash (char *tmp = NULL) {
  $1 = &tmp;
}
%typemap(argout) char **url, char **result_json, char **value, char **version, char **json,
                 char **snapshot_id, char **token, char **hash {
  if (*$1) {
    lua_pushstring(L, *$1);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}
%typemap(freearg) char **url, char **result_json, char **value, char **version, char **json,
                  char **snapshot_id, char **token, char **hash {
  asb_free(*$1);
}

/* Views (asb_process_read, asb_file_reader_read): the bytes are copied into
 * a Lua string at once; the library's memory is valid only until the next
 * call on the handle. */
%typemap(in, numinputs=0) (const char **data, size_t *len) (const char *tdata = NULL, size_t tlen = 0) {
  $1 = ($1_ltype)&tdata;
  $2 = &tlen;
}
%typemap(argout) (const char **data, size_t *len) {
  if (*$1) {
    lua_pushlstring(L, *$1, *$2);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}
%typemap(in, numinputs=0) int *kind (int t = 0), int *exists (int t = 0),
                          int *present (int t = 0) { $1 = &t; }
%typemap(argout) int *kind, int *exists, int *present {
  lua_pushinteger(L, *$1);
  SWIG_arg++;
}

/* const char *asb_command_result_stdout(r, size_t *len): the bytes, as one
 * string (the plain string the out typemap pushed is replaced). */
%typemap(in, numinputs=0) size_t *len (size_t tlen = 0) { $1 = &tlen; }
%typemap(argout) size_t *len {
  lua_pop(L, 1);
  if (result) {
    lua_pushlstring(L, result, *$1);
  } else {
    lua_pushnil(L);
  }
}

%typemap(in, numinputs=0) int *major (int t = 0), int *minor (int t = 0), int *patch (int t = 0) {
  $1 = &t;
}
%typemap(argout) int *major, int *minor, int *patch {
  lua_pushinteger(L, *$1);
  SWIG_arg++;
}

%typemap(in, numinputs=0) (char *buf, size_t buflen) (char tmp[1024]) {
  tmp[0] = 0;
  $1 = tmp;
  $2 = sizeof tmp;
}
%typemap(argout) (char *buf, size_t buflen) {
  if (result == 0) {
    lua_pushstring(L, $1);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}

/* ---- byte inputs: a Lua string (any bytes) ---------------------------------- */
%typemap(in) (const void *data, size_t len) (size_t n = 0) {
  if (lua_type(L, $input) != LUA_TSTRING) {
    lua_pushfstring(L, "%s: argument %d must be a string (got %s)", "$symname", $argnum,
                    luaL_typename(L, $input));
    SWIG_fail;
  }
  $1 = (void *)lua_tolstring(L, $input, &n);
  $2 = n;
}

/* ---- "KEY=VALUE" vectors ------------------------------------------------------ */
%fragment("asblua_strv", "header") {
/* {KEY = value} becomes "KEY=value" strings (keys sorted, so the order is
 * the same every time); {"KEY=value", ...} is taken as is. Returns a
 * malloc'd NULL-ended vector (free with asbswig_strv_free), or NULL with an
 * error message pushed, so the wrapper's fail path frees what the other
 * arguments hold (it raises only on a memory error, as any push does). */
static int asblua_strv_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *const *asblua_strv_from(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (!lua_istable(L, idx)) {
    lua_pushstring(L, "expected a table: {KEY = value} or {\"KEY=value\", ...}");
    return NULL;
  }
  if (!lua_checkstack(L, 4)) {
    lua_pushstring(L, "stack overflow");
    return NULL;
  }
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    n++;
    lua_pop(L, 1);
  }
  char **v = (char **)calloc(n + 1, sizeof *v);
  if (!v) {
    lua_pushstring(L, "not enough memory");
    return NULL;
  }
  size_t i = 0, arr = lua_rawlen(L, idx);
  const char *bad = NULL;
  lua_pushnil(L);
  while (!bad && lua_next(L, idx)) {
    int kt = lua_type(L, -2), vt = lua_type(L, -1);
    if (kt == LUA_TNUMBER && lua_isinteger(L, -2) && arr == n) {
      if (vt != LUA_TSTRING) {
        bad = "a list of \"KEY=value\" strings holds only strings";
      } else if (!(v[i++] = asbswig_strdup(lua_tostring(L, -1)))) {
        bad = "not enough memory";
      }
    } else if (kt == LUA_TSTRING && (vt == LUA_TSTRING || vt == LUA_TNUMBER ||
                                     vt == LUA_TBOOLEAN)) {
      size_t kl = 0, vl = 0;
      const char *k = lua_tolstring(L, -2, &kl);
      const char *s = vt == LUA_TBOOLEAN ? (lua_toboolean(L, -1) ? "true" : "false") : NULL;
      if (!s) {
        s = lua_tolstring(L, -1, &vl); /* the value slot: lua_next needs only the key */
      } else {
        vl = strlen(s);
      }
      if (!s || strlen(k) != kl || strchr(k, '=') || kl == 0) {
        bad = "a key must be a non-empty string without '='";
      } else if (!(v[i] = (char *)malloc(kl + vl + 2))) {
        bad = "not enough memory";
      } else {
        memcpy(v[i], k, kl);
        v[i][kl] = '=';
        memcpy(v[i] + kl + 1, s, vl);
        v[i][kl + vl + 1] = 0;
        i++;
      }
    } else {
      bad = "expected {KEY = value} (string keys; string, number or boolean values) or a "
            "list of \"KEY=value\" strings";
    }
    lua_pop(L, 1);
  }
  if (bad) {
    lua_pop(L, 1); /* the key lua_next left */
    asbswig_strv_free((const char *const *)v);
    lua_pushstring(L, bad);
    return NULL;
  }
  if (arr != n) qsort(v, i, sizeof *v, asblua_strv_cmp);
  return (const char *const *)v;
}

static void asblua_push_strv(lua_State *L, const char *const *v) {
  lua_newtable(L);
  for (lua_Integer i = 0; v && v[i]; i++) {
    lua_pushstring(L, v[i]);
    lua_rawseti(L, -2, i + 1);
  }
}
}

%typemap(in, fragment="asblua_strv") const char *const * (const char *const *tmp = NULL) {
  if (!lua_isnil(L, $input)) {
    tmp = asblua_strv_from(L, $input);
    if (!tmp) SWIG_fail;
  }
  $1 = ($1_ltype)tmp;
}
%typemap(freearg) const char *const * { asbswig_strv_free((const char *const *)tmp$argnum); }
%typemap(out, fragment="asblua_strv") const char *const * {
  asblua_push_strv(L, (const char *const *)$1);
  SWIG_arg++;
}

/* ---- write_many: a list of {path = ..., data = ...} (or {path, data}) -------- */
%typemap(in) (const asb_write_entry *files, size_t count) (asb_write_entry *items = NULL) {
  if (!lua_istable(L, $input)) {
    lua_pushstring(L, "write_many: expected a list of {path = ..., data = ...}");
    SWIG_fail;
  }
  size_t n = lua_rawlen(L, $input);
  items = (asb_write_entry *)calloc(n + 1, sizeof *items);
  if (!items) {
    lua_pushstring(L, "not enough memory");
    SWIG_fail;
  }
  /* The strings stay referenced by the caller's table during the call. */
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, $input, (lua_Integer)i + 1);
    int ok = lua_istable(L, -1);
    if (ok) {
      if (lua_getfield(L, -1, "path") == LUA_TNIL) {
        lua_pop(L, 1);
        lua_rawgeti(L, -1, 1);
      }
      if (lua_getfield(L, -2, "data") == LUA_TNIL) {
        lua_pop(L, 1);
        lua_rawgeti(L, -2, 2);
      }
      ok = lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING;
      if (ok) {
        items[i].path = lua_tostring(L, -2);
        items[i].data = lua_tolstring(L, -1, &items[i].len);
      }
      lua_pop(L, 2);
    }
    lua_pop(L, 1);
    if (!ok) {
      lua_pushfstring(L, "write_many: item %d is not {path = <string>, data = <string>}",
                      (int)i + 1);
      SWIG_fail;
    }
  }
  $1 = items;
  $2 = n;
}
%typemap(freearg) (const asb_write_entry *files, size_t count) { free(items$argnum); }

/* ---- callbacks ------------------------------------------------------------------ */
%{
/* The Lua functions of one call, or of one process / watch handle, live in
 * the uservalue table of an "agent_sandbox.callbacks" userdata (made by
 * asblua_callbacks{...}): on_stdout, on_stderr (strings), on_result (a
 * table), on_error (name, value, traceback), on_event (type, name, entry),
 * reader (cap -> string or nil), and the slot "error" where the first error
 * a function raised is kept. The C struct is the userdata's memory (it
 * never moves); the C library gets it as its userdata.
 *
 * A trampoline is called by the C library on the thread that made the C
 * call, inside that call: L, set when the call starts (asblua_arm, the
 * callback typemaps, bind), is the Lua thread that made it, blocked in the
 * call. The trampoline runs the Lua function with lua_pcall on L, so an
 * error never unwinds through the C library: it is stored, the trampoline
 * returns non-zero, the C call returns ASB_EUSER, and agent_sandbox raises
 * the stored error (with the callback's traceback) to the caller. Nothing
 * the trampoline does outside lua_pcall can raise: it pushes only light C
 * functions and light userdata, after lua_checkstack. A registry table with
 * weak values maps the struct's address to its userdata (per lua_State: no
 * process-wide state), so nothing needs unreferencing when it is
 * collected. */
#define ASBLUA_CALLBACKS_MT "agent_sandbox.callbacks"
#define ASBLUA_CALLBACKS_MAP "agent_sandbox.callbacks.map"

typedef struct asblua_cb {
  lua_State *L; /* the Lua thread of the call in progress */
  int failed;   /* a function raised: the call is being aborted */
  int lost;     /* ... and its error could not be kept (out of memory) */
} asblua_cb;

enum asblua_kind { ASBLUA_STDOUT, ASBLUA_STDERR, ASBLUA_EVENT, ASBLUA_RESULT, ASBLUA_ERROR,
                   ASBLUA_READ };

static const char *const asblua_fn_names[] = {"on_stdout", "on_stderr", "on_event",
                                              "on_result", "on_error", "reader"};

typedef struct asblua_args {
  enum asblua_kind kind;
  const char *data; /* stdout/stderr */
  size_t len;
  int type; /* event */
  const char *name, *value, *traceback; /* event name; error */
  const asb_entry *entry;
  const asb_code_result *result;
  char *buf; /* reader: cap in, count out */
  size_t cap;
  long n;
} asblua_args;

static void asblua_push_entry(lua_State *L, const asb_entry *e);
static void asblua_push_code_result(lua_State *L, const asb_code_result *r);

static const char *asblua_event_name(int type) {
  switch (type) {
  case ASB_FS_EVENT_CREATE: return "create";
  case ASB_FS_EVENT_WRITE: return "write";
  case ASB_FS_EVENT_REMOVE: return "remove";
  case ASB_FS_EVENT_RENAME: return "rename";
  case ASB_FS_EVENT_CHMOD: return "chmod";
  default: return "unknown";
  }
}

/* The uservalue table of the callbacks userdata of cb, pushed; nil if it
 * was collected. Raises only on memory errors (protected callers only). */
static void asblua_cb_table(lua_State *L, asblua_cb *cb) {
  lua_getfield(L, LUA_REGISTRYINDEX, ASBLUA_CALLBACKS_MAP);
  if (lua_rawgetp(L, -1, cb) == LUA_TUSERDATA) {
    lua_getiuservalue(L, -1, 1);
    lua_replace(L, -3);
    lua_pop(L, 1);
  } else {
    lua_pop(L, 2);
    lua_pushnil(L);
  }
}

/* Protected: calls the function for args (light userdata 1: cb, 2: args). */
static int asblua_deliver(lua_State *L) {
  asblua_cb *cb = (asblua_cb *)lua_touserdata(L, 1);
  asblua_args *a = (asblua_args *)lua_touserdata(L, 2);
  asblua_cb_table(L, cb);
  if (!lua_istable(L, -1)) return 0;
  if (lua_getfield(L, -1, asblua_fn_names[a->kind]) == LUA_TNIL) return 0;
  int nargs = 1;
  switch (a->kind) {
  case ASBLUA_STDOUT:
  case ASBLUA_STDERR:
    lua_pushlstring(L, a->data, a->len);
    break;
  case ASBLUA_EVENT:
    lua_pushstring(L, asblua_event_name(a->type));
    lua_pushstring(L, a->name ? a->name : "");
    if (a->entry) {
      asblua_push_entry(L, a->entry);
    } else {
      lua_pushnil(L);
    }
    nargs = 3;
    break;
  case ASBLUA_RESULT:
    asblua_push_code_result(L, a->result);
    break;
  case ASBLUA_ERROR:
    lua_pushstring(L, a->name ? a->name : "");
    lua_pushstring(L, a->value ? a->value : "");
    lua_pushstring(L, a->traceback ? a->traceback : "");
    nargs = 3;
    break;
  case ASBLUA_READ:
    lua_pushinteger(L, (lua_Integer)a->cap);
    break;
  }
  lua_call(L, nargs, a->kind == ASBLUA_READ ? 1 : 0);
  if (a->kind == ASBLUA_READ) {
    size_t n = 0;
    if (lua_isnil(L, -1)) {
      a->n = 0;
    } else if (lua_type(L, -1) != LUA_TSTRING) {
      return luaL_error(L, "the reader must return a string, or nil at the end (got %s)",
                        luaL_typename(L, -1));
    } else {
      const char *s = lua_tolstring(L, -1, &n);
      if (n > a->cap) {
        return luaL_error(L, "the reader returned %d bytes, more than the %d asked for",
                          (int)n, (int)a->cap);
      }
      memcpy(a->buf, s, n);
      a->n = (long)n;
    }
  }
  return 0;
}

/* Message handler: the error with the traceback of where it was raised.
 * A string gets it appended (as lua.c shows errors); a table without a
 * traceback field gets one; other values become a string. */
static int asblua_msgh(lua_State *L) {
  if (lua_type(L, 1) == LUA_TSTRING) {
    luaL_traceback(L, L, lua_tostring(L, 1), 1);
    return 1;
  }
  if (lua_type(L, 1) == LUA_TTABLE) {
    if (lua_getfield(L, 1, "traceback") == LUA_TNIL) {
      luaL_traceback(L, L, NULL, 1);
      lua_setfield(L, 1, "traceback");
    }
    lua_settop(L, 1);
    return 1;
  }
  if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
    lua_settop(L, 1); /* an object with __tostring is kept as it is */
    return 1;
  }
  const char *msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Protected: keeps the error (value 2) in the slot of cb (light userdata 1),
 * unless an earlier one is there. */
static int asblua_store_error(lua_State *L) {
  asblua_cb *cb = (asblua_cb *)lua_touserdata(L, 1);
  asblua_cb_table(L, cb);
  if (!lua_istable(L, -1)) return 0;
  if (lua_getfield(L, -1, "error") == LUA_TNIL) {
    lua_pushvalue(L, 2);
    lua_setfield(L, -3, "error");
  }
  return 0;
}

/* Runs one callback; 0 to go on, 1 to abort the C call. */
static int asblua_dispatch(asblua_cb *cb, asblua_args *a) {
  lua_State *L = cb->L;
  if (!L || cb->failed) return 1;
  if (!lua_checkstack(L, 8)) {
    cb->failed = cb->lost = 1;
    return 1;
  }
  int top = lua_gettop(L);
  lua_pushcfunction(L, asblua_msgh);
  lua_pushcfunction(L, asblua_deliver);
  lua_pushlightuserdata(L, cb);
  lua_pushlightuserdata(L, a);
  if (lua_pcall(L, 2, 0, top + 1) != LUA_OK) {
    cb->failed = 1;
    /* stack: msgh, error */
    lua_pushcfunction(L, asblua_store_error);
    lua_pushlightuserdata(L, cb);
    lua_pushvalue(L, -3);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) cb->lost = 1;
  }
  lua_settop(L, top);
  return cb->failed;
}

static int asblua_tramp_stdout(const char *data, size_t len, void *ud) {
  asblua_args a = {ASBLUA_STDOUT, data, len, 0, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0};
  return asblua_dispatch((asblua_cb *)ud, &a);
}

static int asblua_tramp_stderr(const char *data, size_t len, void *ud) {
  asblua_args a = {ASBLUA_STDERR, data, len, 0, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0};
  return asblua_dispatch((asblua_cb *)ud, &a);
}

static int asblua_tramp_event(asb_fs_event_type type, const char *name, const asb_entry *entry,
                              void *ud) {
  asblua_args a = {ASBLUA_EVENT, NULL, 0, (int)type, name, NULL, NULL, entry, NULL, NULL, 0, 0};
  return asblua_dispatch((asblua_cb *)ud, &a);
}

static int asblua_tramp_result(const asb_code_result *result, void *ud) {
  asblua_args a = {ASBLUA_RESULT, NULL, 0, 0, NULL, NULL, NULL, NULL, result, NULL, 0, 0};
  return asblua_dispatch((asblua_cb *)ud, &a);
}

static int asblua_tramp_error(const char *name, const char *value, const char *traceback,
                              void *ud) {
  asblua_args a = {ASBLUA_ERROR, NULL, 0, 0, name, value, traceback, NULL, NULL, NULL, 0, 0};
  return asblua_dispatch((asblua_cb *)ud, &a);
}

static long asblua_tramp_read(char *buf, size_t cap, void *ud) {
  asblua_args a = {ASBLUA_READ, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, buf, cap, 0};
  if (asblua_dispatch((asblua_cb *)ud, &a)) return -1;
  return a.n;
}

/* An agent session's event (agents.h): its JSON text goes to on_stdout. */
static int asblua_tramp_agent_event(const asb_agent_event *event, void *ud) {
  const char *json = asb_agent_event_json(event);
  asblua_args a = {ASBLUA_STDOUT, json, json ? strlen(json) : 0, 0, NULL, NULL, NULL, NULL,
                   NULL, NULL, 0, 0};
  return asblua_dispatch((asblua_cb *)ud, &a);
}

/* The callbacks userdata at idx, armed for a call made on L; NULL if idx
 * is something else. */
static asblua_cb *asblua_cb_arm(lua_State *L, int idx) {
  asblua_cb *cb = (asblua_cb *)luaL_testudata(L, idx, ASBLUA_CALLBACKS_MT);
  if (cb) {
    cb->L = L;
    cb->failed = cb->lost = 0;
  }
  return cb;
}
%}

/* The callback pair of read_stream / write_stream takes a callbacks userdata:
 * its on_stdout is the data sink, its reader the source. */
%typemap(in, checkfn="lua_isuserdata") (asb_data_fn on_data, void *userdata) {
  asblua_cb *cb = asblua_cb_arm(L, $input);
  if (!cb) {
    lua_pushstring(L, "$symname: expected agent_sandbox callbacks");
    SWIG_fail;
  }
  $1 = asblua_tramp_stdout;
  $2 = cb;
}
%typemap(in, checkfn="lua_isuserdata") (asb_read_fn read, void *userdata) {
  asblua_cb *cb = asblua_cb_arm(L, $input);
  if (!cb) {
    lua_pushstring(L, "$symname: expected agent_sandbox callbacks");
    SWIG_fail;
  }
  $1 = asblua_tramp_read;
  $2 = cb;
}
/* bind(cb) on the options structs (asb_lua_shims.i): nil unbinds. */
%typemap(in) asblua_cb *cb {
  $1 = lua_isnil(L, $input) ? NULL : asblua_cb_arm(L, $input);
  if (!$1 && !lua_isnil(L, $input)) {
    lua_pushstring(L, "$symname: expected agent_sandbox callbacks or nil");
    SWIG_fail;
  }
}
