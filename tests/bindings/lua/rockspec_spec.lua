-- bindings/lua/agent_sandbox-scm-1.rockspec: `luarocks make`, offline
-- (--deps-mode=none: dkjson is Debian's), into a tree of its own, from a
-- copy of the checkout's bindings/ and include/ (the source tree stays
-- clean); the installed rock then works from a fresh lua5.4.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"

describe("the rockspec", function()
  it("builds and installs with luarocks make, offline, and the rock works", function()
    local _, has = H.sh("command -v luarocks")
    if not has then
      pending("no luarocks (apt-get install luarocks)")
      return
    end
    if (os.getenv("ASB_LUA_PRELOAD") or ""):match("%S") then
      pending("a sanitizer tree: the rock is a plain build, checked in the normal tree")
      return
    end
    local work = assert(os.getenv("ASB_TEST_STATE")) .. "/rock"
    local tree = work .. "/tree"
    assert(H.sh(("mkdir -p %s && cp -r %s %s %s/"):format(H.q(work), H.q(H.REPO .. "/bindings"),
                                                      H.q(H.REPO .. "/include"), H.q(work))))
    local out, ok = H.sh(("cd %s/bindings/lua && rm -rf rock-build && ASB_BUILD_DIR=%s " ..
                          "luarocks --lua-version=5.4 make --deps-mode=none --tree=%s " ..
                          "agent_sandbox-scm-1.rockspec CFLAGS='-O0 -fPIC'"):format(H.q(work), H.q(H.BUILD), H.q(tree)))
    assert(ok, out)
    -- the rockspec hands luarocks' CFLAGS to the compiler (-O0 here: the
    -- 17,000-line SWIG wrapper takes ~18 s at luarocks' default -O2, 3 s so)
    assert.matches("%-O0 %-fPIC", out)
    assert.matches("agent_sandbox scm%-1 is now installed", out)
    for _, f in ipairs({ "lib/lua/5.4/agent_sandbox/core.so", "lib/lua/5.4/agent_sandbox/server_core.so",
                         "share/lua/5.4/agent_sandbox/init.lua", "share/lua/5.4/agent_sandbox/compat.lua",
                         "share/lua/5.4/agent_sandbox/server.lua", "share/lua/5.4/agent_sandbox/mcp.lua" }) do
      assert.truthy(io.open(tree .. "/" .. f), f)
    end
    local script = work .. "/use.lua"
    local s = assert(io.open(script, "w"))
    s:write([[
local asb = require "agent_sandbox"
assert(package.searchpath("agent_sandbox.core", package.cpath):find("/rock/tree/", 1, true))
require "agent_sandbox.server"
local sb <close> = assert(asb.Sandbox.create{})
io.write(assert(sb.commands:run("echo from the rock")).stdout)
]])
    s:close()
    local env = ("LUA_PATH='%s/share/lua/5.4/?.lua;%s/share/lua/5.4/?/init.lua;;' " ..
                 "LUA_CPATH='%s/lib/lua/5.4/?.so;;' "):format(tree, tree, tree)
    out, ok = H.sh(env .. H.LUA .. " " .. H.q(script))
    assert(ok, out)
    assert.are.equal("from the rock\n", out)
  end)
end)
