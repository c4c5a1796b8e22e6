-- LuaRocks: the Lua 5.4 binding of agent-sandbox, built from this checkout.
--   cd bindings/lua && luarocks --lua-version=5.4 make --deps-mode=none
-- (offline: dkjson comes from Debian's lua-dkjson; without --deps-mode=none
-- luarocks fetches it from its own repository). SWIG 4 generates
-- agent_sandbox.core from ../agentsandbox.i; libagentsandbox is found as
-- rock-build.sh says ($ASB_BUILD_DIR, pkg-config agentsandbox, ../../build).
-- SPDX-License-Identifier: Apache-2.0
rockspec_format = "3.0"
package = "agent_sandbox"
version = "scm-1"
source = {
  url = "git+file://../..", -- not fetched by `luarocks make`: this checkout is the source
}
description = {
  summary = "E2B-compatible sandboxes from Lua 5.4 (agent-sandbox's libagentsandbox)",
  detailed = [[
    Disposable Linux sandboxes: commands, files, ptys, code in stateful
    kernels, named commands, sessions and templates, against the local
    agent-sandbox engine or any E2B-compatible cloud. agent_sandbox.compat
    has E2B's Python SDK names; agent_sandbox.server serves named commands
    from a template; `lua5.4 -l agent_sandbox.mcp` is the MCP server.
  ]],
  license = "Apache-2.0",
  labels = { "sandbox", "e2b", "agents" },
}
dependencies = {
  "lua >= 5.4",
  "dkjson >= 2.5",
}
build = {
  type = "command",
  build_command = [[CC="$(CC)" CFLAGS="$(CFLAGS)" LIBFLAG="$(LIBFLAG)" LUA_INCDIR="$(LUA_INCDIR)" sh rock-build.sh]],
  install = {
    lua = {
      ["agent_sandbox.init"] = "agent_sandbox/init.lua",
      ["agent_sandbox.compat"] = "agent_sandbox/compat.lua",
      ["agent_sandbox.server"] = "agent_sandbox/server.lua",
      ["agent_sandbox.mcp"] = "agent_sandbox/mcp.lua",
    },
    lib = {
      ["agent_sandbox.core"] = "rock-build/core.so",
      ["agent_sandbox.server_core"] = "rock-build/server_core.so",
    },
  },
}
