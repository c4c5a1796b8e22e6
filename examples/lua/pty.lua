-- A terminal: an interactive shell on a pty of a given size.
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local sb <close> = assert(asb.Sandbox.create{})
local screen = {}
local term = assert(sb.pty:create{ cols = 100, rows = 30, on_data = function(d)
  screen[#screen + 1] = d
end })
assert(term:send_stdin("stty size; exit\n"))
local r = assert(term:wait())
print("exit", r.exit_code, "size", table.concat(screen):match("(%d+ %d+)\r?\n"))
