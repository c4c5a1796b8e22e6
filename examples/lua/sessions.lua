-- Sessions: remember a sandbox under a name and reconnect from another run
-- (or another language: the store is the same for Python and Node).
--   lua5.4 examples/lua/sessions.lua        first run: creates and saves
--   lua5.4 examples/lua/sessions.lua        later runs: reconnect
--   lua5.4 examples/lua/sessions.lua done   kill it and forget the session
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local NAME = "lua-example"
if arg[1] == "done" then
  local sb = asb.sessions.load(NAME)
  if sb then sb:kill() end
  assert(asb.sessions.delete(NAME))
  print("session closed")
  return
end

local sb, err = asb.sessions.load(NAME)
if sb then
  print("reconnected: " .. assert(sb.files:read("/tmp/note")))
  sb:close() -- let go of the handle; the sandbox keeps running
  return
end
assert(err.code == "ASB_ENOTFOUND", tostring(err))
sb = assert(asb.Sandbox.create{ timeout_ms = 600000 })
assert(sb.files:write("/tmp/note", "written by the first run"))
assert(sb:save_session(NAME, { example = "sessions.lua" }))
print("saved " .. sb.id .. " as " .. NAME)
sb:close()
