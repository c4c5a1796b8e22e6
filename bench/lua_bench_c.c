/*
 * The C side of bench/lua_bench.lua: the same calls made straight on the C
 * library, timed in C, in the same process as the Lua calls they are
 * compared with (a Lua C module, not part of the binding).
 *
 *   local c = require "lua_bench_c"
 *   local h = c.open(sandbox_id, api_url, api_key)  -- its own client and handle
 *   local s = h:run("true")           -- seconds taken by asb_commands_run
 *   local s = h:file(path, data)      -- asb_files_write + asb_files_read
 *   c.now()                           -- CLOCK_MONOTONIC, seconds
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#include <agentsandbox.h>
#include <lauxlib.h>
#include <lua.h>
#include <string.h>
#include <time.h>

typedef struct bench_h {
  asb_client *client;
  asb_sandbox *sb;
} bench_h;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int l_now(lua_State *L) {
  lua_pushnumber(L, now());
  return 1;
}

static int fail(lua_State *L, const char *what, int rc) {
  return luaL_error(L, "%s: %s (%s)", what, asb_error_last()->message, asb_status_name(rc));
}

static int l_gc(lua_State *L) {
  bench_h *h = (bench_h *)luaL_checkudata(L, 1, "lua_bench_c");
  asb_sandbox_free(h->sb);
  asb_client_free(h->client);
  h->sb = NULL;
  h->client = NULL;
  return 0;
}

static int l_open(lua_State *L) {
  const char *id = luaL_checkstring(L, 1);
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.api_url = o.sandbox_url = luaL_checkstring(L, 2);
  o.api_key = luaL_checkstring(L, 3);
  bench_h *h = (bench_h *)lua_newuserdatauv(L, sizeof *h, 0);
  memset(h, 0, sizeof *h);
  luaL_setmetatable(L, "lua_bench_c");
  int rc = asb_client_new(&h->client, &o);
  if (rc) return fail(L, "asb_client_new", rc);
  rc = asb_sandbox_connect(&h->sb, h->client, id, 0, NULL);
  if (rc) return fail(L, "asb_sandbox_connect", rc);
  return 1;
}

static int l_run(lua_State *L) {
  bench_h *h = (bench_h *)luaL_checkudata(L, 1, "lua_bench_c");
  const char *cmd = luaL_checkstring(L, 2);
  asb_command_result *r = NULL;
  double t = now();
  int rc = asb_commands_run(&r, h->sb, cmd, NULL);
  double dt = now() - t;
  asb_command_result_free(r);
  if (rc) return fail(L, "asb_commands_run", rc);
  lua_pushnumber(L, dt);
  return 1;
}

static int l_file(lua_State *L) {
  bench_h *h = (bench_h *)luaL_checkudata(L, 1, "lua_bench_c");
  const char *path = luaL_checkstring(L, 2);
  size_t len = 0, back = 0;
  const char *data = luaL_checklstring(L, 3, &len);
  char *buf = NULL;
  double t = now();
  int rc = asb_files_write(NULL, h->sb, path, data, len, NULL);
  int rc2 = rc ? rc : asb_files_read(&buf, &back, h->sb, path, NULL);
  double dt = now() - t;
  asb_free(buf);
  if (rc || rc2) return fail(L, "asb_files_write/read", rc ? rc : rc2);
  if (back != len) return luaL_error(L, "read back %d bytes of %d", (int)back, (int)len);
  lua_pushnumber(L, dt);
  return 1;
}

int luaopen_lua_bench_c(lua_State *L);
int luaopen_lua_bench_c(lua_State *L) {
  static const luaL_Reg methods[] = {
      {"run", l_run}, {"file", l_file}, {"__gc", l_gc}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {{"open", l_open}, {"now", l_now}, {NULL, NULL}};
  if (luaL_newmetatable(L, "lua_bench_c")) {
    luaL_setfuncs(L, methods, 0);
    lua_pushvalue(L, -1);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  return 1;
}
