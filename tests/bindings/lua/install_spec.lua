-- CMake's install of the binding: agent_sandbox/*.lua and core.so land in
-- directories on Lua 5.4's default package.path / cpath (pkg-config
-- lua5.4's for the prefix, docs/lua.md), the modules carry the installed
-- library directory as RPATH, and the installed module works and finds the
-- installed agent-sandbox-mcp. Installed with DESTDIR into this run's
-- state directory (the real prefix is left alone); the installed
-- libagentsandbox is then reached through LD_LIBRARY_PATH, because the
-- RPATH names the real prefix.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"

local function cache(name)
  for line in io.lines(H.BUILD .. "/CMakeCache.txt") do
    local v = line:match("^" .. name .. ":[A-Z]+=(.*)$")
    if v then return v end
  end
end

local function on_path(path, dir, suffix)
  return (";" .. path .. ";"):find(";" .. dir .. suffix .. ";", 1, true) ~= nil
end

describe("cmake --install", function()
  it("puts the modules on Lua 5.4's default paths, and they work from there", function()
    if (os.getenv("ASB_LUA_PRELOAD") or ""):match("%S") then
      pending("a sanitizer tree: the install is checked in the normal tree")
      return
    end
    local lmod, cmod = cache("ASB_LUA_LMOD_DIR"), cache("ASB_LUA_CMOD_DIR")
    local libdir = cache("CMAKE_INSTALL_PREFIX") .. "/" .. cache("CMAKE_INSTALL_LIBDIR")
    local defaults = H.sh("env -u LUA_PATH -u LUA_PATH_5_4 -u LUA_CPATH -u LUA_CPATH_5_4 lua5.4 " ..
                          "-e 'io.write(package.path, \"\\n\", package.cpath)'")
    local path, cpath = defaults:match("^(.-)\n(.*)$")
    assert.is_true(on_path(path, lmod, "/?/init.lua"), lmod .. " is not on " .. path)
    assert.is_true(on_path(cpath, cmod, "/?.so"), cmod .. " is not on " .. cpath)

    local dest = assert(os.getenv("ASB_TEST_STATE")) .. "/destdir"
    local out, ok = H.sh(("DESTDIR=%s cmake --install %s"):format(H.q(dest), H.q(H.BUILD)))
    assert(ok, out)
    for _, f in ipairs({ lmod .. "/agent_sandbox/init.lua", lmod .. "/agent_sandbox/compat.lua",
                         lmod .. "/agent_sandbox/server.lua", lmod .. "/agent_sandbox/mcp.lua",
                         cmod .. "/agent_sandbox/core.so", cmod .. "/agent_sandbox/server_core.so" }) do
      assert.truthy(io.open(dest .. f), f .. " was not installed")
    end
    local dyn = H.sh("readelf -d " .. H.q(dest .. cmod .. "/agent_sandbox/core.so"))
    assert.matches("R[UN]*PATH%)%s+Library r[un]*path: %[" .. libdir:gsub("%p", "%%%0") .. "%]", dyn)

    local env = ("env -u ASB_MCP_BIN LD_LIBRARY_PATH=%s LUA_PATH='%s/?.lua;%s/?/init.lua;;' LUA_CPATH='%s/?.so;;' ")
                :format(H.q(dest .. libdir), dest .. lmod, dest .. lmod, dest .. cmod)
    out, ok = H.sh(env .. "lua5.4 -e " .. H.q([[
local asb = require "agent_sandbox"
require "agent_sandbox.server"
local sb <close> = assert(asb.Sandbox.create{})
io.write(assert(sb.commands:run("echo from the install")).stdout)
]]))
    assert(ok, out)
    assert.are.equal("from the install\n", out)
    -- the prefix's bin/, found next to the libagentsandbox the module loaded
    out = H.sh(env .. "lua5.4 -l agent_sandbox.mcp - --which")
    assert.are.equal(dest .. cache("CMAKE_INSTALL_PREFIX") .. "/bin/agent-sandbox-mcp\n", out)
  end)
end)
