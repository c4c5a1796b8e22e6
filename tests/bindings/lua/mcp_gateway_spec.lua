-- E2B's mcp option through agent_sandbox.compat: Sandbox.create{ mcp }
-- makes a sandbox of the bundled mcp-gateway template and starts our
-- mcp-gateway in it, as E2B's SDKs do; get_mcp_url() has E2B's form,
-- get_mcp_token() the token (also read back from the gateway's file by a
-- connected object); tests/npm/mcp/echo_server.py answers tools/call
-- through the engine's router (plain http, the sandbox's host in Host:);
-- a bad config is nil, SandboxException "Failed to start MCP gateway: ...".
-- The same natively (asb.Sandbox.create{ mcp }: the C library's mcp_json;
-- sb:get_mcp_url(), sb:get_mcp_token()), with ASB_ENOTFOUND from a sandbox
-- without a gateway and sb.traffic_access_token (compat's too).
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local e2b = require "agent_sandbox.compat"
local json = require "dkjson"
local asb = require "agent_sandbox"

local src = assert(io.open(os.getenv("ASB_REPO") .. "/tests/npm/mcp/echo_server.py")):read("a")
local mcp = { ["github/asb-tests/echo"] = { installCmd = "echo installed > marker",
                                            runCmd = "python3 -c '" .. src .. "'",
                                            envs = { GREETING = "lua" } } }

local function rpc_host(host, token, method, params)
  local port = assert(host:match(":(%d+)$"), host)
  local body = json.encode({ jsonrpc = "2.0", id = 1, method = method, params = params or {} })
  local out, ok = H.sh("curl -sS -w '\\n%{http_code}' http://127.0.0.1:" .. port .. "/mcp" ..
                       " -H " .. H.q("Host: " .. host) ..
                       " -H " .. H.q("Authorization: Bearer " .. token) ..
                       " -H 'Content-Type: application/json'" ..
                       " -H 'Accept: application/json, text/event-stream' --data " .. H.q(body))
  assert(ok, out)
  local text, status = out:match("^(.*)\n(%d+)%s*$")
  return tonumber(status), text
end

local function rpc(sbx, token, method, params)
  return rpc_host(assert(sbx.get_host(50005)), token, method, params)
end

describe("agent_sandbox.compat mcp", function()
  it("starts the gateway; its URL, token and tools", function()
    local sbx = assert(e2b.Sandbox.create{ mcp = mcp, timeout = 120 })
    local ok, err = pcall(function()
      assert.are.equal("https://" .. sbx.get_host(50005) .. "/mcp", sbx.get_mcp_url())
      local token = assert(sbx.get_mcp_token())
      assert.matches("^[0-9a-f-]+$", token)
      local other = assert(e2b.Sandbox.connect(sbx.sandbox_id))
      assert.are.equal(token, other.get_mcp_token())
      local st, text = rpc(sbx, token, "tools/call", { name = "echo.echo", arguments = { text = "hi" } })
      assert.are.equal(200, st)
      assert.are.equal("lua hi installed", json.decode(text).result.content[1].text)
      assert.are.equal(401, (rpc(sbx, token .. "x", "tools/list")))
    end)
    sbx.kill()
    assert(ok, err)
  end)

  it("a bad config is E2B's SandboxException", function()
    local sbx, err = e2b.Sandbox.create{ mcp = { exa = { apiKey = "k" } }, timeout = 60 }
    assert.is_nil(sbx)
    assert.is_true(e2b.SandboxException:is(err))
    assert.are.equal("SandboxException", err.name)
    assert.matches("^Failed to start MCP gateway: .*catalog servers", err.message)
  end)
end)

describe("agent_sandbox mcp (native)", function()
  it("create{ mcp } starts the gateway in C; its URL, token and tools/list", function()
    local sb = assert(asb.Sandbox.create{ mcp = mcp, timeout_ms = 120000 })
    local ok, err = pcall(function()
      assert.are.equal(assert(sb:get_url(50005)) .. "/mcp", assert(sb:get_mcp_url()))
      local token = assert(sb:get_mcp_token())
      assert.matches("^[0-9a-f-]+$", token)
      local other = assert(asb.Sandbox.connect(sb.id))
      assert.are.equal(token, assert(other:get_mcp_token()))
      other:close()
      local host = assert(sb:get_host(50005))
      local st, text = rpc_host(host, token, "tools/list")
      assert.are.equal(200, st)
      local names = {}
      for _, t in ipairs(json.decode(text).result.tools) do names[t.name] = true end
      assert.is_true(names["echo.echo"])
      assert.are.equal(401, (rpc_host(host, token .. "x", "tools/list")))
    end)
    sb:kill()
    assert(ok, err)
  end)

  it("a gateway that does not start: nil, ASB_ERROR, no sandbox left", function()
    local before = #assert(asb.Sandbox.list())
    local err = H.fails("ASB_ERROR", asb.Sandbox.create{
      mcp = { ["github/a/b"] = { runCmd = "echo no >&2; exit 6" } } })
    assert.matches("^Failed to start MCP gateway: .*exited with status 6: no", err.message)
    assert.are.equal(before, #assert(asb.Sandbox.list()))
  end)

  it("no gateway is ASB_ENOTFOUND; traffic_access_token of allow_public_traffic false", function()
    local sb = assert(asb.Sandbox.create{ network = { allow_public_traffic = false }, timeout_ms = 60000 })
    local ok, err = pcall(function()
      H.fails("ASB_ENOTFOUND", sb:get_mcp_token())
      assert.are.equal("string", type(sb.traffic_access_token))
      assert.is_true(#sb.traffic_access_token > 0)
      local other = assert(e2b.Sandbox.connect(sb.id)) -- E2B's field, through compat
      assert.are.equal(sb.traffic_access_token, other.traffic_access_token)
    end)
    sb:kill()
    assert(ok, err)
  end)
end)
