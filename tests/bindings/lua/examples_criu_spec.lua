-- examples/lua/checkpoint.lua against an engine with --pause-criu
-- (docs/lifecycle.md): pause_mode "checkpoint", and the restored process
-- counts on (examples_spec.lua runs it without the option). run.sh skips
-- it only when no criu binary is found ($ASB_CRIU, else the cache path).
-- engine-criu
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"

describe("examples/lua with --pause-criu", function()
  it("checkpoint.lua", function()
    local out, ok = H.lua(H.REPO .. "/examples/lua/checkpoint.lua")
    assert(ok, "checkpoint.lua failed:\n" .. out)
    assert.matches("paused:\tpaused\tpause mode\tcheckpoint\n", out, 1, true)
    assert.matches("\tthe same process counts on\n", out, 1, true)
  end)
end)
