-- Templates: build one from a directory with a template.yaml, create a
-- sandbox from it, list and delete it.
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p '" .. dir .. "'"))
local f = assert(io.open(dir .. "/template.yaml", "w"))
f:write("name: lua-example\ndescription: built by examples/lua/templates.lua\n",
        "steps:\n  - run: echo baked in > /srv/motd\n")
f:close()

local t = assert(asb.templates.build(dir))
print("built", t.name, t.cached and "(cached)" or "(new)")
os.execute("rm -rf '" .. dir .. "'")

do
  local sb <close> = assert(asb.Sandbox.create{ template = "lua-example" })
  io.write(assert(sb.commands:run("cat /srv/motd")).stdout)
end
for _, x in ipairs(assert(asb.templates.list())) do
  if x.name == "lua-example" then print("listed", x.id) end
end
print("deleted", assert(asb.templates.delete("lua-example")))
