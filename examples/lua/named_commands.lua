-- Named commands: build the lua-hello template (its commands.lua serves
-- them with agent_sandbox.server), call them from a sandbox made from it,
-- see the errors a client gets; then serve your own commands from the same
-- SDK on another port inside that sandbox.
--   lua5.4 examples/lua/named_commands.lua [<staged lua-hello dir>]
-- The staged template is build/examples/templates/lua-hello (CMake puts
-- the SDK next to template.yaml and commands.lua there).
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local here = arg[0]:match("^(.*)/[^/]*$") or "."
local dir = arg[1] or ((os.getenv("ASB_BUILD_DIR") or (here .. "/../../build")) ..
                       "/examples/templates/lua-hello")
local t = assert(asb.templates.build(dir))
print("template " .. t.name)

local sb <close> = assert(asb.Sandbox.create{ template = "lua-hello" })
for _, c in ipairs(assert(sb:list_commands())) do
  local args = {}
  for _, a in ipairs(c.args) do args[#args + 1] = a.name .. ": " .. a.type end
  print(("  %s(%s) %s"):format(c.name, table.concat(args, ", "), c.description))
end
print(assert(sb:run("hello", { name = "Alice" })))
print("add", assert(sb:run("add", { a = 40, b = 2 })))
local s = assert(sb:run("stats", { values = { 2, 4, 9 } }))
print("stats", s.count, s.sum, s.mean)

-- What goes wrong comes back as nil, err.
local _, e1 = sb:run("stats", { values = {} })
print(e1.code, e1.remote_code)
local _, e2 = sb:run("add", { a = "not a number" })
print(e2.code)
local _, e3 = sb:run("nope")
print(e3.code)

-- Your own commands, served on port 9001 by the SDK the template carries
-- (its env, which the start command gets, is passed here by hand).
assert(sb.files:write("/tmp/mine.lua", [[
local server = require "agent_sandbox.server"
server.command("word_count", { args = { { "text", "string", required = true } } }, function(a)
  local n = 0
  for _ in a.text:gmatch("%S+") do n = n + 1 end
  return n
end)
local srv = assert(server.listen(9001))
print("listening on " .. srv:port())
io.stdout:flush()
assert(srv:serve())
]]))
local sdk = "/opt/hello/sdk"
local p = assert(sb.commands:start("exec lua5.4 /tmp/mine.lua", { envs = {
  LUA_PATH = sdk .. "/lua/?.lua;;", LUA_CPATH = sdk .. "/lua/?.so;;", LD_LIBRARY_PATH = sdk .. "/lib" } }))
for line in p:lines() do -- its output, pulled: once it says it listens
  io.write(line)
  if line:find("listening") then break end
end
print("word_count", assert(sb:run_command("word_count", { text = "the quick brown fox" }, { port = 9001 })))
p:kill()
