-- `lua5.4 -l agent_sandbox.mcp`: the process becomes agent-sandbox-mcp (the
-- one MCP server, a C program), found through ASB_MCP_BIN, the install
-- prefix, the build tree, then PATH.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"

local MCP = H.BUILD .. "/core/mcp/agent-sandbox-mcp"

local function have_mcp()
  local f = io.open(MCP, "rb")
  if f then f:close() end
  return f ~= nil
end

describe("agent_sandbox.mcp", function()
  it("says what it tried and exits 127 when the program is not there", function()
    local out, ok, code = H.sh("ASB_MCP_BIN=/no/such/agent-sandbox-mcp " .. H.LUA .. " -l agent_sandbox.mcp")
    assert.is_false(ok)
    assert.are.equal(127, code)
    assert.are.equal("agent_sandbox.mcp: cannot find agent-sandbox-mcp (tried " ..
                     "/no/such/agent-sandbox-mcp); build or install it (cmake --install build), " ..
                     "or set ASB_MCP_BIN\n", out)
  end)

  it("is agent-sandbox-mcp itself, with this process's arguments and stdio", function()
    if not have_mcp() then
      pending("agent-sandbox-mcp is not built in " .. H.BUILD .. " (core/mcp)")
      return
    end
    -- found next to the libagentsandbox the module loaded (build/core/client -> core/mcp)
    local which = H.sh("env -u ASB_MCP_BIN " .. H.LUA .. " -l agent_sandbox.mcp - --which")
    assert.are.equal(MCP, (which:gsub("\n$", ""):gsub("/core/client/%.%./", "/core/")))
    local want = H.sh(H.q(MCP) .. " --version")
    assert.are.equal(want, H.sh(H.LUA .. " -l agent_sandbox.mcp - --version"))
    assert.are.equal(want, H.sh("ASB_MCP_BIN=" .. H.q(MCP) .. " " .. H.LUA .. " -l agent_sandbox.mcp - --version"))
    -- an MCP session over stdio: initialize, then tools/list
    local init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":' ..
                 '"2025-06-18","capabilities":{},"clientInfo":{"name":"lua","version":"1"}}}\n' ..
                 '{"jsonrpc":"2.0","method":"notifications/initialized"}\n' ..
                 '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(init)
    f:close()
    local out, ok = H.sh(H.LUA .. " -l agent_sandbox.mcp < " .. H.q(path))
    os.remove(path)
    assert.is_true(ok, out)
    assert.matches('"id":1,"result":{[^\n]*"protocolVersion":"2025%-06%-18"', out)
    assert.matches('"id":2,"result":{"tools":%[', out)
    assert.matches('"run_command"', out)
  end)
end)
