-- Sandbox networking (E2B's allow_internet_access and network): egress off
-- except for an allow-list, read back, then changed live. No traffic is
-- sent (198.18.0.0/15 is the benchmarking range, RFC 2544).
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local sb <close> = assert(asb.Sandbox.create{
  timeout_ms = 120000,
  allow_internet_access = false,
  network = { allow_out = { "198.18.0.0/24", "example.test", "*.example.test" },
              deny_out = { "198.18.0.66" } },
})
local info = assert(sb:get_info())
print("created: internet", info.allow_internet_access,
      "allow_out", table.concat(info.network and info.network.allow_out or {}, " "))
assert(sb:update_network{ allow_out = { "198.18.1.0/24" }, allow_internet_access = false })
info = assert(sb:get_info())
print("updated: allow_out", table.concat(info.network and info.network.allow_out or {}, " "))
-- a misspelt option is a programming error: it raises, naming it
local ok, err = pcall(sb.update_network, sb, { allowout = {} })
print("refused:", ok, err)
sb:kill()
