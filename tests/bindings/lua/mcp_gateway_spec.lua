-- E2B's mcp option through agent_sandbox.compat: Sandbox.create{ mcp }
-- makes a sandbox of the bundled mcp-gateway template and starts our
-- mcp-gateway in it, as E2B's SDKs do; get_mcp_url() has E2B's form,
-- get_mcp_token() the token (also read back from the gateway's file by a
-- connected object); tests/npm/mcp/echo_server.py answers tools/call
-- through the engine's router (plain http, the sandbox's host in Host:);
-- a bad config is nil, SandboxException "Failed to start MCP gateway: ...".
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local e2b = require "agent_sandbox.compat"
local json = require "dkjson"

local src = assert(io.open(os.getenv("ASB_REPO") .. "/tests/npm/mcp/echo_server.py")):read("a")
local mcp = { ["github/asb-tests/echo"] = { installCmd = "echo installed > marker",
                                            runCmd = "python3 -c '" .. src .. "'",
                                            envs = { GREETING = "lua" } } }

local function rpc(sbx, token, method, params)
  local host = assert(sbx.get_host(50005))
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
