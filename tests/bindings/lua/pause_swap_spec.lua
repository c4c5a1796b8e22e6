-- sb:get_info()'s swap and pause_mode on an engine with a small
-- --pause-swap (docs/lifecycle.md): a sandbox holding 32 MiB in a process,
-- paused with memory, reports most of them swapped out of the RAM it had
-- (also through agent_sandbox.compat); running again, or paused without
-- memory, swap is nil (not zeros), and a list's items never have it.
-- engine-args: --pause-swap 64M
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"
local compat = require "agent_sandbox.compat"

local MIB = 1 << 20
-- A process holding 32 MiB of random bytes; /tmp/held once they are there.
local HOLDER = "python3 -c \"import os, time\n" ..
  "b = bytearray(os.urandom(32 << 20))\n" ..
  "open('/tmp/held', 'w').write('y')\n" ..
  "time.sleep(100000)\""

describe("pause swap figures", function()
  local sb
  setup(function() sb = H.sandbox{ timeout_ms = 300000 } end)
  teardown(function()
    if sb then
      sb:kill()
      sb:close()
    end
  end)

  it("a memory pause reports its swap; running or paused without memory: nil", function()
    assert.is_nil(assert(sb:get_info()).swap) -- running
    local p <close> = assert(sb.commands:start(HOLDER))
    assert.is_true(H.eventually(function() return sb.files:exists("/tmp/held") end, 120))
    assert.is_true(assert(sb:pause()))
    local info = assert(sb:get_info())
    assert.are.same({ "paused", "memory" }, { info.state, info.pause_mode })
    local sw = assert(info.swap, "no swap table")
    assert.are.equal("integer", math.type(sw.swapped_bytes))
    assert.is_true(sw.resident_before_bytes > 32 * MIB)
    assert.is_true(sw.swapped_bytes > 16 * MIB)
    assert.is_true(sw.resident_bytes >= 0 and sw.resident_bytes < sw.resident_before_bytes - 16 * MIB)
    local c = assert(compat.Sandbox.get_info(sb.id))
    assert.are.equal("memory", c.pause_mode)
    assert.is_true(c.swap ~= nil and c.swap.swapped_bytes > 16 * MIB)
    -- a list's items never carry it (GET /sandboxes/{id} only)
    local n = 0
    for _, i in ipairs(assert(asb.Sandbox.list())) do
      if i.sandbox_id == sb.id then
        n = n + 1
        assert.is_nil(i.swap)
      end
    end
    assert.are.equal(1, n)

    assert.is_true(assert(sb:resume()))
    info = assert(sb:get_info())
    assert.are.equal("running", info.state)
    assert.is_nil(info.pause_mode)
    assert.is_nil(info.swap)

    assert.is_true(assert(sb:pause{ keep_memory = false }))
    info = assert(sb:get_info())
    assert.are.equal("filesystem", info.pause_mode)
    assert.is_nil(info.swap)
  end)
end)
