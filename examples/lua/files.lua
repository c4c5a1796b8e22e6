-- Files: bytes in and out, streaming both ways (pushed or pulled), listing,
-- metadata, and a directory watch.
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local sb <close> = assert(asb.Sandbox.create{})

assert(sb.files:write("/tmp/demo/bytes.bin", "\0\1\2binary"))
print(#assert(sb.files:read("/tmp/demo/bytes.bin")), "bytes back")

-- Stream 4 MiB up from a reader function, and down in chunks.
local piece, left = ("x"):rep(65536), 64
assert(sb.files:write("/tmp/demo/big", function()
  left = left - 1
  if left >= 0 then return piece end
end))
local total = 0
assert(sb.files:read_stream("/tmp/demo/big", function(chunk) total = total + #chunk end))
print("streamed " .. total .. " bytes")

-- Or pull it at your own pace (the library reads ahead about 1 MiB).
local reader <close> = assert(sb.files:open("/tmp/demo/big"))
local pulled = 0
for chunk in reader:chunks() do pulled = pulled + #chunk end
print("pulled " .. pulled .. " bytes")

assert(sb.files:write_files({ { path = "/tmp/demo/a.txt", data = "A" }, { path = "/tmp/demo/b.txt", data = "B" } }))
for _, e in ipairs(assert(sb.files:list("/tmp/demo"))) do print(e.type, e.name, e.size) end
print("exists", assert(sb.files:exists("/tmp/demo/a.txt")))
assert(sb.files:rename("/tmp/demo/a.txt", "/tmp/demo/c.txt"))
assert(sb.files:remove("/tmp/demo/big"))

-- A watch reports what changes after it is in place.
local w <close> = assert(sb.files:watch_dir("/tmp/demo", { on_event = function(ev)
  print("event " .. ev.type .. " " .. ev.name)
end }))
assert(sb.files:write("/tmp/demo/done", "x"))
assert(w:wait(1000))

-- A polling watch: each get_new_events() has every change made before it.
local p <close> = assert(sb.files:watch_dir("/tmp/demo", { polling = true }))
assert(sb.files:write("/tmp/demo/later", "x"))
for _, ev in ipairs(assert(p:get_new_events())) do print("polled " .. ev.type .. " " .. ev.name) end
