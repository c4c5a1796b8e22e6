-- A pause with memory to disk (the engine's --pause-criu, docs/lifecycle.md):
-- a process counts in the sandbox; the pause writes its memory to the
-- sandbox's disk (pause_mode "checkpoint", the RAM freed), the resume
-- restores it and the same process counts on from where it was. Against an
-- engine without --pause-criu the pause keeps the RAM (pause_mode "memory")
-- and the process goes on just the same.
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local COUNTER = "python3 -c \"import os, time\n" ..
  "i = 0\n" ..
  "while True:\n" ..
  "    i += 1\n" ..
  "    open('/tmp/count.new', 'w').write('%d %d' % (os.getpid(), i))\n" ..
  "    os.rename('/tmp/count.new', '/tmp/count')\n" ..
  "    time.sleep(0.1)\""

-- The counter's pid and count once its count is past `after`.
local function count(sb, after)
  for _ = 1, 600 do
    local s = sb.files:exists("/tmp/count") and sb.files:read("/tmp/count")
    local pid, n = (s or ""):match("^(%d+) (%d+)$")
    if n and tonumber(n) > (after or 0) then return tonumber(pid), tonumber(n) end
    os.execute("sleep 0.1")
  end
  error("the counter does not count")
end

local sb <close> = assert(asb.Sandbox.create{ timeout_ms = 300000 })
local p = assert(sb.commands:start(COUNTER))
-- Stop streaming its output: under --pause-criu a stream still open into
-- the sandbox fails the dump (docs/lifecycle.md). The process runs on.
p:disconnect()
local pid, before = count(sb, 2)
print("counting: pid", pid, "at", before)
assert(sb:pause())
local info = assert(sb:get_info())
print("paused:", info.state, "pause mode", info.pause_mode)
assert(sb:resume())
local pid2, at = count(sb)        -- where it stopped: not started again
local pid3, later = count(sb, at) -- and it runs again
local same = pid2 == pid and pid3 == pid and at >= before and later > at
print("resumed: pid", pid3, "at", at, "then", later,
      same and "the same process counts on" or "NOT the same process going on")
if not same then os.exit(1) end
