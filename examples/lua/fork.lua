-- Forks (docs/snapshots.md): a new sandbox with this one's files now, and
-- on an engine with --pause-criu its running processes too. The fork
-- options: keep_processes = false boots a fork fresh on the files,
-- fork_many makes count forks in one call (a sandbox or the error of
-- each), and each fork's fork_mode says what it got: "processes" or "files".
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local sb = assert(asb.Sandbox.create{ timeout_ms = 120000 })
assert(sb.commands:run("echo at the fork > /home/user/state.txt"))
print("parent fork mode", sb.fork_mode) -- nil: not a fork
local fresh = assert(sb:fork{ timeout_ms = 60000, keep_processes = false })
print("fork", fresh.fork_mode, (assert(fresh.commands:run("cat /home/user/state.txt")).stdout:gsub("\n$", "")))
fresh:kill()
-- the engine's choice: with --pause-criu "processes", else "files"
for _, f in ipairs(assert(sb:fork_many(2, { timeout_ms = 60000 }))) do
  if getmetatable(f) == asb.Error then
    print("a fork failed to start:", f.message)
  else
    print("one of two", f.fork_mode, assert(f:get_info()).fork_mode)
    f:kill()
  end
end
sb:kill()
