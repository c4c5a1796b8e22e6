/*
 * agent_sandbox.server_core — the C half of agent_sandbox.server: the server
 * SDK (libagentsandbox-server) in pull mode, for a Lua state.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * Commands are registered without a C handler, so the server's own threads
 * never run Lua: they do the HTTP, the access token, argument checking and
 * coercion, and queue each call; the Lua thread takes them with
 * srv:next_call() (asb_server_next_call) — blocking in srv:serve(), or when
 * srv:fd() (an eventfd, readable while calls wait) polls readable in the
 * host's own event loop — and answers each one with call:reply(json) or
 * call:fail(type, message). A call collected unanswered is failed, so no
 * HTTP request waits for the shutdown grace.
 *
 * Hand-written, not generated: the server SDK is its own library (a template
 * needs only it, not libagentsandbox nor agent_sandbox.core), and what Lua
 * needs of it is a small pull loop, not the handler-on-a-thread half of the
 * API (bindings/lua/unbound.txt lists what is not used, and why).
 *
 * Errors follow agent_sandbox's convention: an expected failure (a port in
 * use, a name taken, the server stopped) returns nil, err, with err a table
 * {code, status, message, op} whose metatable the Lua layer sets
 * (agent_sandbox/server.lua); wrong argument types raise.
 */
#include <agentsandbox/server.h>
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#define SERVER_MT "agent_sandbox.server_core.Server"
#define CALL_MT "agent_sandbox.server_core.Call"

typedef struct lserver {
  asb_server *s;
} lserver;

typedef struct lcall {
  asb_server_call *c; /* NULL once answered */
} lcall;

static const char *status_name(int rc) {
  switch (rc) {
    case ASB_EINVAL:
      return "ASB_EINVAL";
    case ASB_EEXISTS:
      return "ASB_EEXISTS";
    case ASB_ECANCELED:
      return "ASB_ECANCELED";
    case ASB_ETIMEOUT:
      return "ASB_ETIMEOUT";
    case ASB_ENOMEM:
      return "ASB_ENOMEM";
    case ASB_ECONNECTION:
      return "ASB_ECONNECTION";
    case ASB_EVERSION:
      return "ASB_EVERSION";
    case ASB_ECOMMANDFAILED:
      return "ASB_ECOMMANDFAILED";
    default:
      return "ASB_ERROR";
  }
}

/* nil, {code, status, message, op}: the server SDK's last error for rc. */
static int fail(lua_State *L, int rc, const char *op) {
  const asb_error *e = asb_server_error_last();
  lua_pushnil(L);
  lua_createtable(L, 0, 4);
  lua_pushstring(L, status_name(rc));
  lua_setfield(L, -2, "code");
  lua_pushinteger(L, rc);
  lua_setfield(L, -2, "status");
  lua_pushstring(L, e->code == rc && e->message ? e->message : status_name(rc));
  lua_setfield(L, -2, "message");
  lua_pushstring(L, op);
  lua_setfield(L, -2, "op");
  return 2;
}

static lserver *check_server(lua_State *L) {
  lserver *ls = (lserver *)luaL_checkudata(L, 1, SERVER_MT);
  if (!ls->s) luaL_error(L, "agent_sandbox.server: the server is closed");
  return ls;
}

static const char *opt_string(lua_State *L, int t, const char *key) {
  const char *s = NULL;
  if (lua_getfield(L, t, key) != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "server: %s must be a string", key);
    s = lua_tostring(L, -1); /* kept alive by the options table */
  }
  lua_pop(L, 1);
  return s;
}

static lua_Integer opt_integer(lua_State *L, int t, const char *key, lua_Integer def) {
  lua_Integer v = def;
  if (lua_getfield(L, t, key) != LUA_TNIL) {
    int ok = 0;
    v = lua_tointegerx(L, -1, &ok);
    if (!ok) luaL_error(L, "server: %s must be an integer", key);
  }
  lua_pop(L, 1);
  return v;
}

/* new{host, token, max_body_bytes, max_connections, shutdown_grace_ms}. */
static int l_new(lua_State *L) {
  if (lua_isnoneornil(L, 1)) lua_newtable(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  asb_server_options o = ASB_SERVER_OPTIONS_INIT;
  o.host = opt_string(L, 1, "host");
  o.token = opt_string(L, 1, "token");
  o.max_body_bytes = (size_t)opt_integer(L, 1, "max_body_bytes", 0);
  o.max_connections = (unsigned)opt_integer(L, 1, "max_connections", 0);
  o.shutdown_grace_ms = (long)opt_integer(L, 1, "shutdown_grace_ms", 0);
  lserver *ls = (lserver *)lua_newuserdatauv(L, sizeof *ls, 1);
  ls->s = NULL;
  luaL_setmetatable(L, SERVER_MT);
  lua_newtable(L); /* the uservalue: the Lua layer's state (its handlers) */
  lua_setiuservalue(L, -2, 1);
  int rc = asb_server_new(&ls->s, &o);
  if (rc) return fail(L, rc, "server.new");
  return 1;
}

static int arg_type(lua_State *L, const char *t) {
  static const char *const names[] = {"string", "integer", "float", "boolean", "json", NULL};
  static const int types[] = {ASB_ARG_STRING, ASB_ARG_INTEGER, ASB_ARG_FLOAT, ASB_ARG_BOOLEAN,
                              ASB_ARG_JSON};
  for (int i = 0; names[i]; i++)
    if (strcmp(t, names[i]) == 0) return types[i];
  return luaL_error(L,
                    "server: argument type '%s' is not string, integer, float, boolean or "
                    "json",
                    t);
}

/* srv:register(name, description, hidden, args): args is a list of
 * {name, type, required, default (text), description}. */
static int l_register(lua_State *L) {
  lserver *ls = check_server(L);
  const char *name = luaL_checkstring(L, 2);
  const char *desc = luaL_optstring(L, 3, NULL);
  int hidden = lua_toboolean(L, 4);
  luaL_checktype(L, 5, LUA_TTABLE);
  asb_server_command *cmd = NULL;
  int rc = asb_server_register(&cmd, ls->s, name, desc, NULL, NULL, NULL);
  if (rc) return fail(L, rc, "server.command");
  lua_Integer n = luaL_len(L, 5);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 5, i);
    int a = lua_gettop(L);
    luaL_checktype(L, a, LUA_TTABLE);
    const char *an = opt_string(L, a, "name");
    const char *at = opt_string(L, a, "type");
    const char *def = opt_string(L, a, "default");
    const char *ad = opt_string(L, a, "description");
    lua_getfield(L, a, "required");
    int required = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (!an || !at) return luaL_error(L, "server: argument %d needs a name and a type", (int)i);
    rc = asb_server_command_add_arg(cmd, an, arg_type(L, at), required ? ASB_ARG_REQUIRED : 0, def,
                                    ad);
    lua_pop(L, 1);
    if (rc) return fail(L, rc, "server.command");
  }
  if (hidden && (rc = asb_server_command_set_hidden(cmd, 1)) != 0)
    return fail(L, rc, "server.command");
  lua_pushboolean(L, 1);
  return 1;
}

/* srv:start(port): serving (on the server's threads, which only queue
 * calls) once it returns. */
static int l_start(lua_State *L) {
  lserver *ls = check_server(L);
  int port = (int)luaL_checkinteger(L, 2);
  int rc = asb_server_start_background(ls->s, port);
  if (rc) return fail(L, rc, "server.start");
  lua_pushboolean(L, 1);
  return 1;
}

static int l_port(lua_State *L) {
  lua_pushinteger(L, asb_server_port(check_server(L)->s));
  return 1;
}

static int l_fd(lua_State *L) {
  lua_pushinteger(L, asb_server_fd(check_server(L)->s));
  return 1;
}

/* srv:stop(): stop accepting; queued calls get 503, next_call returns
 * ASB_ECANCELED. Never blocks (also from a handler). */
static int l_stop(lua_State *L) {
  asb_server_stop(check_server(L)->s);
  return 0;
}

/* srv:wait(): until the server stopped (not from a handler). */
static int l_wait(lua_State *L) {
  asb_server_wait(check_server(L)->s);
  return 0;
}

/* srv:next_call(timeout_ms): the next call (a Call), or nil, err:
 * ASB_ETIMEOUT when none came within timeout_ms (0 = do not wait, negative
 * = until one comes or the server stops), ASB_ECANCELED once it stopped. */
static int l_next_call(lua_State *L) {
  lserver *ls = check_server(L);
  long timeout = (long)luaL_optinteger(L, 2, -1);
  lcall *lc = (lcall *)lua_newuserdatauv(L, sizeof *lc, 0); /* before: no leak on OOM */
  lc->c = NULL;
  luaL_setmetatable(L, CALL_MT);
  int rc = asb_server_next_call(&lc->c, ls->s, timeout);
  if (rc) return fail(L, rc, "server.next_call");
  return 1;
}

/* The uservalue table of the server (the Lua layer's state). */
static int l_state(lua_State *L) {
  luaL_checkudata(L, 1, SERVER_MT);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

/* srv:close(): stop, wait for the calls in progress (up to the grace) and
 * release the server. Idempotent; also __gc. */
static int l_close(lua_State *L) {
  lserver *ls = (lserver *)luaL_checkudata(L, 1, SERVER_MT);
  asb_server_free(ls->s);
  ls->s = NULL;
  return 0;
}

static lcall *check_call(lua_State *L) {
  lcall *lc = (lcall *)luaL_checkudata(L, 1, CALL_MT);
  if (!lc->c) luaL_error(L, "agent_sandbox.server: the call was answered already");
  return lc;
}

/* call:command(), call:args_json(): the command's name, every present
 * argument as one JSON object (after the server's coercion). */
static int l_command(lua_State *L) {
  lua_pushstring(L, asb_server_call_command(check_call(L)->c));
  return 1;
}

static int l_args_json(lua_State *L) {
  const char *j = asb_server_call_args_json(check_call(L)->c);
  lua_pushstring(L, j ? j : "{}");
  return 1;
}

/* call:reply(json): answer with the result (JSON text; nil = null). */
static int l_reply(lua_State *L) {
  lcall *lc = check_call(L);
  const char *json = luaL_optstring(L, 2, "null");
  int rc = asb_server_call_set_result_json(lc->c, json);
  if (rc) {
    asb_server_call_fail(lc->c, "TypeError", "the command's result is not valid JSON");
    lc->c = NULL;
    return fail(L, rc, "server.reply");
  }
  rc = asb_server_call_reply(lc->c);
  lc->c = NULL;
  if (rc) return fail(L, rc, "server.reply");
  lua_pushboolean(L, 1);
  return 1;
}

/* call:fail(type, message): answer HTTP 500 {"error": message, "type": type}. */
static int l_fail(lua_State *L) {
  lcall *lc = check_call(L);
  const char *type = luaL_optstring(L, 2, NULL);
  const char *msg = luaL_optstring(L, 3, "");
  int rc = asb_server_call_fail(lc->c, type, msg);
  lc->c = NULL;
  if (rc) return fail(L, rc, "server.fail");
  lua_pushboolean(L, 1);
  return 1;
}

static int l_call_gc(lua_State *L) {
  lcall *lc = (lcall *)luaL_checkudata(L, 1, CALL_MT);
  if (lc->c) {
    asb_server_call_fail(lc->c, "Error", "the call was dropped unanswered");
    lc->c = NULL;
  }
  return 0;
}

static int l_call_tostring(lua_State *L) {
  lcall *lc = (lcall *)luaL_checkudata(L, 1, CALL_MT);
  lua_pushfstring(L, "agent_sandbox.server.Call(%s)",
                  lc->c ? asb_server_call_command(lc->c) : "answered");
  return 1;
}

static int l_server_tostring(lua_State *L) {
  lserver *ls = (lserver *)luaL_checkudata(L, 1, SERVER_MT);
  if (!ls->s) {
    lua_pushliteral(L, "agent_sandbox.server.Server(closed)");
  } else {
    lua_pushfstring(L, "agent_sandbox.server.Server(port %d)", asb_server_port(ls->s));
  }
  return 1;
}

int luaopen_agent_sandbox_server_core(lua_State *L);
int luaopen_agent_sandbox_server_core(lua_State *L) {
  static const luaL_Reg server_methods[] = {
      {"register", l_register}, {"start", l_start}, {"port", l_port},           {"fd", l_fd},
      {"stop", l_stop},         {"wait", l_wait},   {"next_call", l_next_call}, {"state", l_state},
      {"close", l_close},       {NULL, NULL}};
  static const luaL_Reg call_methods[] = {{"command", l_command},
                                          {"args_json", l_args_json},
                                          {"reply", l_reply},
                                          {"fail", l_fail},
                                          {NULL, NULL}};
  if (luaL_newmetatable(L, SERVER_MT)) {
    luaL_newlib(L, server_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, l_server_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_getfield(L, -1, "__index"); /* the methods: the Lua layer adds its own */
  lua_remove(L, -2);
  if (luaL_newmetatable(L, CALL_MT)) {
    luaL_newlib(L, call_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_call_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_call_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, l_new);
  lua_setfield(L, -2, "new");
  lua_insert(L, -2);
  lua_setfield(L, -2, "Server"); /* the server methods table */
  return 1;
}
