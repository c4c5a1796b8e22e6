-- A sandbox's life: metadata, info, timeouts, pause (its mode and swap
-- figures) and resume, listing, connecting again, killing; and what an
-- unknown sandbox gives.
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local sb = assert(asb.Sandbox.create{ metadata = { owner = "lifecycle.lua" }, timeout_ms = 120000 })
local info = assert(sb:get_info())
print("state", info.state, "owner", info.metadata.owner)
assert(sb:set_timeout(300000))

print("paused", assert(sb:pause()), sb:pause()) -- true, then false: it already was
local paused = assert(sb:get_info()) -- under the engine's --pause-swap: where the RAM went
if paused.swap then
  print(paused.pause_mode, "swapped out", paused.swap.swapped_bytes, "in RAM", paused.swap.resident_bytes,
        "of", paused.swap.resident_before_bytes)
else
  print(paused.pause_mode, "RAM kept (no --pause-swap)")
end
assert(sb:resume())
print("running", assert(sb:is_running()))

for _, i in ipairs(assert(asb.Sandbox.list{ metadata = { owner = "lifecycle.lua" } })) do
  print("listed", i.sandbox_id == sb.id)
end

local again = assert(asb.Sandbox.connect(sb.id))
print("same", again.id == sb.id)
print("killed", assert(again:kill()), again:kill()) -- true, then false: already gone
sb:close()

local none, err = asb.Sandbox.connect(sb.id)
print(none, err.code, err.reason)
