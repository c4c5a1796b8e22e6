--- agent_sandbox.mcp: the MCP server, started from Lua.
--
--   lua5.4 -l agent_sandbox.mcp                 # stdio (an MCP client starts it)
--   lua5.4 -l agent_sandbox.mcp - --http        # arguments after "-" are its own
--   lua5.4 -l agent_sandbox.mcp - --which       # print the binary it would run
--
-- Loading this module replaces the Lua process with agent-sandbox-mcp, the
-- one MCP server (a C program on libagentsandbox, docs/mcp.md): there is
-- no second implementation in Lua. The program gets this process's stdin,
-- stdout, signals, environment (the ASB_* / E2B_* configuration the binding
-- reads) and the arguments of `arg` (what follows the script name, "-").
--
-- The binary, first match wins (the rule every binding's launcher follows,
-- docs/mcp.md):
--   1. $ASB_MCP_BIN (when set, only it: an explicit choice that is not there
--      is an error, not a fallback);
--   2. next to the libagentsandbox this binding loaded: a build tree's
--      core/mcp/ (from core/client/), then the install prefix's bin/;
--   3. agent-sandbox-mcp on $PATH.
-- When none is there it says what it tried on stderr and exits 127.
--
-- SPDX-License-Identifier: Apache-2.0
local core = require "agent_sandbox.core"

local NAME = "agent-sandbox-mcp"

local executable = core.asblua_is_executable

local function dirname(p) return p:match("^(.*)/[^/]*$") or "." end

local function candidates()
  local env = os.getenv("ASB_MCP_BIN")
  if env and env ~= "" then return { env }, true end
  local out = {}
  local lib = core.asblua_library_path()
  if lib then
    local libdir = dirname(lib)
    out[#out + 1] = dirname(libdir) .. "/mcp/" .. NAME -- build/core/client -> build/core/mcp
    -- <prefix>/lib, <prefix>/lib64 or <prefix>/lib/<multiarch>
    local prefix = libdir:match("/lib[^/]*$") and dirname(libdir) or dirname(dirname(libdir))
    out[#out + 1] = prefix .. "/bin/" .. NAME
  end
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    out[#out + 1] = dir .. "/" .. NAME
  end
  return out, false
end

-- lua.c puts the interpreter and its options at arg's negative indices and
-- the script's arguments at the positive ones, but only when there is a
-- script: `lua5.4 -l agent_sandbox.mcp` alone has none, and then arg[0] is
-- the interpreter and arg[1], arg[2] its own "-l", "agent_sandbox.mcp".
local args = {}
local a = rawget(_G, "arg")
if type(a) == "table" and a[-1] ~= nil then
  for i = 1, #a do args[#args + 1] = tostring(a[i]) end
end

local list, explicit = candidates()
local binary
for _, c in ipairs(list) do
  if executable(c) then
    binary = c
    break
  end
  if explicit then break end
end
if not binary then
  io.stderr:write(("agent_sandbox.mcp: cannot find %s (tried %s); build or install it " ..
                   "(cmake --install build), or set ASB_MCP_BIN\n")
                  :format(NAME, #list > 0 and table.concat(list, ", ") or "nothing"))
  os.exit(127)
end
if #args == 1 and args[1] == "--which" then
  io.write(binary, "\n")
  os.exit(0)
end
table.insert(args, 1, binary)
local _, err = core.asblua_exec(binary, args)
io.stderr:write("agent_sandbox.mcp: cannot start " .. err .. "\n")
os.exit(127)
