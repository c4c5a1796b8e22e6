-- Quickstart: a sandbox, a command, a file, some code; killed at the end of
-- the scope (<close>). Run from a checkout after `cmake --build build`:
--   LUA_PATH='build/lua/?.lua;build/lua/?/init.lua;;' LUA_CPATH='build/lua/?.so;;' \
--     lua5.4 examples/lua/quickstart.lua
-- (an installed binding needs neither variable). With nothing configured it
-- uses the local engine; set E2B_API_KEY (and E2B_DOMAIN) for a cloud.
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local sb <close> = assert(asb.Sandbox.create{ template = "base", timeout_ms = 60000 })
print("sandbox " .. sb.id)

local r = assert(sb.commands:run("echo hello from $(uname -s)"))
io.write(r.stdout)

assert(sb.files:write("/tmp/greeting.txt", "hi from Lua\n"))
io.write(assert(sb.files:read("/tmp/greeting.txt")))

-- Expected failures are nil, err; assert() turns them into errors.
local data, err = sb.files:read("/no/such/file")
print(data, err.code)
