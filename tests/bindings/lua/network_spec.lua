-- Sandbox networking (E2B's allow_internet_access, network, update_network)
-- through the Lua binding and agent_sandbox.compat. The encoding part talks
-- to a canned control plane (tests/support/canned_cp.py, standing for a
-- remote API) and checks the request bodies against E2B's wire shapes.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"
local compat = require "agent_sandbox.compat"
local json = require "dkjson"

local log = os.tmpname()
local server, port, pid

local function requests()
  local out = {}
  local f = io.open(log)
  if not f then return out end
  for line in f:lines() do out[#out + 1] = json.decode(line) end
  f:close()
  return out
end

local function last()
  local r = requests()
  return r[#r], #r
end

local function conn(t, e2b)
  local url = "http://127.0.0.1:" .. port
  t = t or {}
  t.api_url, t.sandbox_url, t.api_key = url, url, "k"
  if not e2b then t.max_retries = -1 end
  return t
end

describe("network options, encoded", function()
  setup(function()
    server = assert(io.popen("exec /usr/bin/python3 " .. H.REPO .. "/tests/support/canned_cp.py "
                             .. log, "r"))
    port, pid = server:read("n", "n")
    assert(port and pid, "the canned control plane did not start")
  end)
  teardown(function()
    if pid then os.execute("kill " .. math.tointeger(pid)) end
    if server then server:close() end
    os.remove(log)
  end)

  it("create sends E2B's body, Lua names mapped, callbacks resolved", function()
    local rules = { ["api.example.test"] = {
      { transform = function(ctx)
          return { headers = { Authorization = "Bearer " .. ctx.iam.tokens.aws } }
        end } } }
    local sb = assert(asb.Sandbox.create(conn{
      allow_internet_access = false,
      network = {
        allow_out = function(ctx) return { "198.18.0.10", (next(ctx.rules)) } end,
        deny_out = function(ctx) return { ctx.all_traffic } end,
        rules = rules,
        egress_proxy = { address = "198.18.0.20:1080", username = "u" },
        allow_public_traffic = false,
        mask_request_host = "${PORT}-x.example.test",
      },
    }))
    local r = last()
    assert.are.equal("POST", r.method)
    assert.are.equal("/v2/sandboxes", r.path)
    assert.are.equal(false, r.body.allow_internet_access)
    assert.are.same({
      allowOut = { "198.18.0.10", "api.example.test" },
      denyOut = { "0.0.0.0/0" },
      rules = { ["api.example.test"] = { { transform = { headers = {
        Authorization = "Bearer ${e2b.identity.tokens.aws}" } } } } },
      egressProxy = { address = "198.18.0.20:1080", username = "u" },
      allowPublicTraffic = false,
      maskRequestHost = "${PORT}-x.example.test",
    }, r.body.network)
    sb:close()
    assert(asb.Sandbox.create(conn())):close()
    r = last()
    assert.is_nil(r.body.allow_internet_access)
    assert.is_nil(r.body.network)
  end)

  it("refuses mistakes before sending, naming the member", function()
    local _, n = last()
    local err = H.fails("ASB_EINVAL", asb.Sandbox.create(conn{ network = { allowout = {} } }))
    assert.matches("allowout", err.message)
    err = H.fails("ASB_EINVAL", asb.Sandbox.create(conn{ network = {
      allow_public_traffic = "no" } }))
    assert.matches("allowPublicTraffic", err.message)
    -- an empty table is a list for lists, an object for rules
    assert(asb.Sandbox.create(conn{ network = { allow_out = {}, rules = {} } })):close()
    local r, m = last()
    assert.are.equal(n + 1, m)
    assert.are.equal("[]", json.encode(r.body.network.allowOut))
    assert.are.equal("{}", json.encode(r.body.network.rules))
    assert.has_error(function() asb.Sandbox.create(conn{ network = { deny_out = "x" } }) end)
  end)

  it("update_network puts the update config; get_info reads it back", function()
    local sb = assert(asb.Sandbox.create(conn()))
    assert.is_true(sb:update_network{ allow_out = { "198.18.0.10" },
                                      allow_internet_access = false })
    local r = last()
    assert.are.equal("PUT", r.method)
    assert.are.equal("/sandboxes/n0net0test/network", r.path)
    assert.are.same({ allowOut = { "198.18.0.10" }, allow_internet_access = false }, r.body)
    assert.is_true(sb:update_network())
    assert.are.equal("{}", json.encode(last().body))
    local info = assert(sb:get_info())
    assert.are.equal(false, info.allow_internet_access)
    assert.are.same({ "198.18.0.10", "*.example.test" }, info.network.allow_out)
    assert.are.same({ address = "198.18.0.20:1080", username = "u" }, info.network.egress_proxy)
    assert.are.equal(false, info.network.allow_public_traffic)
    assert.is_nil(info.network_json)
    sb:close()
  end)

  it("compat: E2B's names and calls", function()
    assert.are.equal("0.0.0.0/0", compat.ALL_TRAFFIC)
    local sb = assert(compat.Sandbox.create(conn({ allow_internet_access = false,
                                                   network = { deny_out = { compat.ALL_TRAFFIC } } },
                                                 true)))
    assert.are.equal(false, last().body.allow_internet_access)
    assert.are.same({ denyOut = { "0.0.0.0/0" } }, last().body.network)
    assert(sb.update_network{ allow_out = { "198.18.0.12" } })
    assert.are.same({ allowOut = { "198.18.0.12" } }, last().body)
    assert(compat.Sandbox.update_network("n0net0test", { deny_out = { "198.18.0.13" } }, conn(nil, true)))
    assert.are.equal("PUT", last().method)
    assert.are.same({ denyOut = { "198.18.0.13" } }, last().body)
    assert.are.same({ "0.0.0.0/0" }, assert(sb.get_info()).network.deny_out)
  end)
end)

