--- agent_sandbox.mcp: the MCP server for Lua users.
--
--   lua5.4 -l agent_sandbox.mcp                 # stdio (an MCP client starts it)
--   lua5.4 -l agent_sandbox.mcp - --http        # arguments after "-" are its own
--
-- Loading this module replaces the Lua process with agent-sandbox-mcp, the
-- one MCP server (a C program on libagentsandbox, docs/mcp.md): there is
-- no second implementation in Lua. It runs with this process's stdin,
-- stdout, environment (ASB_* / E2B_*: the same configuration the binding
-- uses) and the arguments of `arg` (what follows the script name, "-").
-- The program is found at $ASB_MCP_BIN, else the bin directory of the
-- prefix this binding was installed to, else the build tree it was built
-- in, else on $PATH. It returns only if none can be started: then it
-- raises with what it tried (a command-line use exits 1 with that message).
--
-- SPDX-License-Identifier: Apache-2.0
local core = require "agent_sandbox.core"

local NAME = "agent-sandbox-mcp"

local function executable(path)
  if not path or path == "" then return false end
  local f = io.open(path, "rb")
  if not f then return false end
  f:close()
  return true
end

local installed, build = core.asblua_mcp_paths()
local candidates = {}
local env = os.getenv("ASB_MCP_BIN")
if env and env ~= "" then
  candidates = { env } -- set: this one, or an error (no silent fallback)
else
  for _, p in ipairs({ installed, build }) do
    if executable(p) then candidates[#candidates + 1] = p end
  end
  candidates[#candidates + 1] = NAME -- $PATH
end

local args = { NAME }
local a = rawget(_G, "arg")
if type(a) == "table" then
  for i = 1, #a do args[#args + 1] = tostring(a[i]) end
end

local tried = {}
for _, path in ipairs(candidates) do
  args[1] = path
  local _, err = core.asblua_exec(path, args)
  tried[#tried + 1] = err
end
error("agent_sandbox.mcp: cannot start " .. NAME .. " (set ASB_MCP_BIN to its path): " ..
      table.concat(tried, "; "), 0)
