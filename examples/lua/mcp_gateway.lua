-- E2B's mcp option natively: Sandbox.create{ mcp } makes a sandbox of the
-- bundled mcp-gateway template and starts the gateway in it with the MCP
-- servers given (here one stdio server, inline); sb:get_mcp_url() and
-- sb:get_mcp_token() are what an MCP client needs (docs/mcp.md). The
-- request is sent with curl to sb:loopback_url(50005) (nothing to resolve).
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

-- a stdio MCP server with one tool (newline-delimited JSON-RPC)
local server = table.concat({
  'import json, sys',
  'for line in sys.stdin:',
  '    m = json.loads(line)',
  '    if "id" not in m: continue',
  '    r = {"tools": [{"name": "hello", "inputSchema": {"type": "object"}}]} if m["method"] == "tools/list" else {}',
  '    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\\n"); sys.stdout.flush()',
}, "\n")

do
  local sb <close> = assert(asb.Sandbox.create{
    mcp = { ["github/example/hello"] = { runCmd = "python3 -c '" .. server .. "'" } }, timeout_ms = 60000 })
  print("url", assert(sb:get_mcp_url()))
  local token = assert(sb:get_mcp_token())
  local curl = assert(io.popen("curl -sS " .. assert(sb:loopback_url(50005)) .. "/mcp" ..
    " -H 'Authorization: Bearer " .. token .. "' -H 'Content-Type: application/json'" ..
    " -H 'Accept: application/json, text/event-stream'" ..
    [[ --data '{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}']]))
  local reply = assert(asb.json_decode(curl:read("a")))
  curl:close()
  local names = {}
  for _, t in ipairs(reply.result.tools) do names[#names + 1] = t.name end
  print("tools", table.concat(names, ","))
end

-- a gateway that does not start: the sandbox is killed, nil and the reason
local sb, err = asb.Sandbox.create{ mcp = { exa = { apiKey = "k" } } }
print("refused", sb == nil, err.code, (err.message:match("^[^:]+")))
