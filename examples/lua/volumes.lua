-- Volumes: make one, write a file into it from Lua, mount it in a sandbox
-- that appends to the file, read it back once the sandbox is gone, delete.
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local v = assert(asb.volumes.create("lua-example-" .. tostring(os.time()), { size_mb = 64 }))
-- owned by uid 1000, the sandboxes' "user", so it may append to it
assert(v:write_file("/log.txt", "from lua\n", { uid = 1000, gid = 1000 }))
do
  local sb <close> = assert(asb.Sandbox.create{ volume_mounts = { ["/mnt/data"] = v } })
  assert(sb.commands:run("echo from the sandbox >> /mnt/data/log.txt"))
  sb:kill()
end
io.write(assert(v:read_file("/log.txt")))
for _, e in ipairs(assert(v:list("/"))) do print(e.type, e.path, e.uid) end
print("deleted", assert(asb.volumes.delete(v.volume_id)))
