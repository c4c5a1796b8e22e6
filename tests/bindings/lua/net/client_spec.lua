-- lua net.client_lua: sandbox networking through the Lua binding and
-- agent_sandbox.compat against the real engine run.sh started, with the
-- network on inside the closed topology (tests/support/in_net_topo.sh):
-- create with allow_internet_access = false and allow/deny lists, read
-- back, update live, refusals; and examples/lua/network.lua. No packet is
-- sent. (Outside tests/bindings/lua/*_spec.lua: the lua.* tests run with
-- the network off.)
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"
local compat = require "agent_sandbox.compat"

describe("network options, against the engine", function()
  it("create, read back, update live, refusals", function()
    local sb = assert(asb.Sandbox.create{
      timeout_ms = 120000, allow_internet_access = false,
      network = { allow_out = { "198.18.0.10" }, deny_out = { "198.18.0.66" } } })
    local info = assert(sb:get_info())
    assert.are.equal(false, info.allow_internet_access)
    assert.are.same({ "198.18.0.10" }, info.network.allow_out)
    assert.are.same({ "198.18.0.66" }, info.network.deny_out)
    assert.is_true(sb:update_network{ deny_out = { "198.18.2.0/24" }, allow_internet_access = true })
    info = assert(sb:get_info())
    assert.are.equal(true, info.allow_internet_access)
    assert.are.same({ "198.18.2.0/24" }, info.network.deny_out)
    local err = H.fails("ASB_EINVAL", sb:update_network{ allow_out = { "198.18.0.0/99" } })
    assert.matches("198.18.0.0/99", err.message, 1, true)
    -- compat, by id: attached, not connected
    assert(compat.Sandbox.update_network(sb.id, { allow_out = { "198.18.0.12" } }))
    assert.are.same({ "198.18.0.12" }, assert(sb:get_info()).network.allow_out)
    assert.is_true(sb:kill())
    sb:close()
  end)

  it("examples/lua/network.lua", function()
    local out, ok = H.lua(H.REPO .. "/examples/lua/network.lua")
    assert(ok, "network.lua failed:\n" .. out)
    assert.matches("created: internet\tfalse\tallow_out\t198.18.0.0/24", out, 1, true)
    assert.matches("updated: allow_out\t198.18.1.0/24", out, 1, true)
    assert.matches("unknown option 'allowout'", out, 1, true)
  end)
end)
