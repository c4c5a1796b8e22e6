-- The filesystem: reads and writes (binary, streamed both ways), listing,
-- metadata, watches; readers and watch callbacks that raise.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"

local sb
setup(function() sb = H.sandbox() end)
teardown(function() if sb then sb:kill() end end)

local function bytes(n)
  local t = {}
  for i = 1, n do t[i] = string.char((i * 7 + i // 256) % 256) end
  return table.concat(t)
end

describe("files", function()
  it("write and read any bytes", function()
    local data = bytes(70000) .. "\0end"
    local e = assert(sb.files:write("/tmp/lua/bin/data", data))
    assert.are.equal("data", e.name)
    assert.are.equal(data, assert(sb.files:read("/tmp/lua/bin/data")))
    assert.are.equal(data, assert(sb.files:read("/tmp/lua/bin/data", { gzip = true })))
    assert.are.equal("", assert(sb.files:read(assert(sb.files:write("/tmp/empty", "")).path)))
  end)

  it("stream a write from a reader function and from a file, and a read to a callback", function()
    local chunk, n, asked = bytes(50000), 0, nil
    local e = assert(sb.files:write("/tmp/streamed", function(max)
      asked = max
      n = n + 1
      if n <= 40 then return chunk end
    end))
    assert.truthy(asked > 0)
    local got, pieces = {}, 0
    assert.is_true(assert(sb.files:read_stream(e.path, function(c)
      pieces = pieces + 1
      got[#got + 1] = c
    end)))
    assert.are.equal(chunk:rep(40), table.concat(got))
    assert.truthy(pieces > 1, "in several chunks")
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(chunk:rep(3))
    f:close()
    f = assert(io.open(path, "rb"))
    assert(sb.files:write("/tmp/from-file", f))
    f:close()
    os.remove(path)
    assert.are.equal(chunk:rep(3), assert(sb.files:read("/tmp/from-file")))
  end)

  it("open a file and pull it chunk by chunk", function()
    local big = bytes(65536):rep(40)
    assert(sb.files:write("/tmp/pulled", big))
    local got, n = {}, 0
    do
      local r <close> = assert(sb.files:open("/tmp/pulled"))
      assert.matches("^agent_sandbox.FileReader%(/tmp/pulled%)$", tostring(r))
      for chunk in r:chunks() do
        n = n + 1
        got[#got + 1] = chunk
      end
      assert.is_nil(r:read())
    end
    assert.are.equal(big, table.concat(got))
    assert.truthy(n > 1)
    local r = assert(sb.files:open("/tmp/pulled"))
    assert.truthy(assert(r:read()))
    r:stop()
    H.fails("ASB_ECANCELED", r:read())
    r:close()
    assert.has_error(function() r:read() end, "agent_sandbox: the file reader is closed")
    H.fails("ASB_ENOTFOUND", sb.files:open("/tmp/none/such"))
    r = assert(sb.files:open("/tmp/pulled"))
    r = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
  end)

  it("a reader or a chunk callback that raises aborts the transfer with its error", function()
    local ok, err = pcall(sb.files.write, sb.files, "/tmp/aborted", function() error("reader broke") end)
    assert.is_false(ok)
    assert.matches("files_spec.lua:%d+: reader broke", err)
    ok, err = pcall(sb.files.write, sb.files, "/tmp/aborted", function() return 42 end)
    assert.is_false(ok)
    assert.matches("the reader must return a string", err)
    ok, err = pcall(sb.files.read_stream, sb.files, "/tmp/streamed", function() error("enough") end)
    assert.is_false(ok)
    assert.matches("enough", err)
  end)

  it("write several files at once, list, stat, rename, remove, make_dir", function()
    local entries = assert(sb.files:write_files({
      { path = "/tmp/many/a.txt", data = "A" }, { "/tmp/many/sub/b.txt", "BB" } }))
    assert.are.equal(2, #entries)
    assert.is_true(H.ok(sb.files:exists("/tmp/many/a.txt")))
    assert.is_false(H.ok(sb.files:exists("/tmp/many/none")))
    local names = {}
    for _, e in ipairs(assert(sb.files:list("/tmp/many"))) do names[e.name] = e.type end
    assert.are.same({ ["a.txt"] = "file", sub = "dir" }, names)
    local deep = assert(sb.files:list("/tmp/many", { depth = 2 }))
    assert.are.equal(3, #deep)
    local info = assert(sb.files:get_info("/tmp/many/sub/b.txt"))
    assert.are.equal(2, info.size)
    assert.are.equal("integer", math.type(info.modified_at))
    assert.matches("^%-rw", info.permissions)
    local moved = assert(sb.files:rename("/tmp/many/a.txt", "/tmp/many/c.txt"))
    assert.are.equal("/tmp/many/c.txt", moved.path)
    assert.is_true(assert(sb.files:remove("/tmp/many/sub")))
    assert.is_false(H.ok(sb.files:exists("/tmp/many/sub")))
    assert.is_true(H.ok(sb.files:make_dir("/tmp/made/deep")))
    assert.is_false(H.ok(sb.files:make_dir("/tmp/made/deep")))
    assert.are.equal("dir", assert(sb.files:stat("/tmp/made/deep")).type)
    assert(sb.commands:run("ln -sf /tmp/many/c.txt /tmp/link"))
    assert.are.equal("/tmp/many/c.txt", assert(sb.files:get_info("/tmp/link")).symlink_target)
  end)

  it("returns nil, err for missing paths and denied ones", function()
    H.fails("ASB_ENOTFOUND", sb.files:read("/tmp/none/such"))
    assert.is_true(assert(sb.files:remove("/tmp/none/such")), "missing is not an error (E2B)")
    H.fails("ASB_ENOTFOUND", sb.files:list("/tmp/none/such"))
    H.fails("ASB_ENOTFOUND", sb.files:get_info("/tmp/none/such"))
    H.fails("ASB_ENOTFOUND", sb.files:read_stream("/tmp/none/such", function() end))
    assert(sb.files:write("/root/secret", "x", { user = "root" }))
    local v, err = sb.files:read("/root/secret", { user = "user" })
    assert.is_nil(v)
    assert.truthy(err.code == "ASB_EPERM" or err.code == "ASB_EAUTH", tostring(err))
  end)
end)

describe("watches", function()
  it("deliver events to on_event while waited for", function()
    assert(sb.files:make_dir("/tmp/watched"))
    local events = {}
    local w = assert(sb.files:watch_dir("/tmp/watched", { on_event = function(ev)
      events[#events + 1] = ev
    end }))
    assert.matches("^agent_sandbox.Watch%(/tmp/watched%)$", tostring(w))
    assert(sb.files:write("/tmp/watched/new.txt", "x"))
    H.eventually(function()
      assert(w:wait(200))
      for _, ev in ipairs(events) do
        if ev.name == "new.txt" and (ev.type == "create" or ev.type == "write") then return true end
      end
    end)
    local found = false
    for _, ev in ipairs(events) do found = found or ev.name == "new.txt" end
    assert.is_true(found)
    w:stop()
    w:stop()
    assert.matches("stopped", tostring(w))
    assert.has_error(function() w:wait(10) end, "agent_sandbox: the watch is closed")
  end)

  it("queue events for get_new_events without on_event, recursively, with entries", function()
    assert(sb.files:make_dir("/tmp/rec/a"))
    local w <close> = assert(sb.files:watch_dir("/tmp/rec", { recursive = true, include_entry = true }))
    assert(sb.files:write("/tmp/rec/a/deep.txt", "1234"))
    local got
    H.eventually(function()
      for _, ev in ipairs(assert(w:get_new_events(200))) do
        if ev.name:match("deep%.txt$") then got = ev end
      end
      return got
    end)
    assert.truthy(got)
    assert.truthy(got.entry and got.entry.name == "deep.txt", "include_entry gives the entry")
  end)

  it("a polling watch's poll has every change made before it, and only the new ones", function()
    assert(sb.files:make_dir("/tmp/pw"))
    local w <close> = assert(sb.files:watch_dir("/tmp/pw", { polling = true }))
    assert.are.equal(0, #assert(w:get_new_events()))
    for i = 1, 5 do
      assert(sb.files:write("/tmp/pw/f" .. i, "x"))
      local kinds = {}
      for _, ev in ipairs(assert(w:get_new_events())) do kinds[ev.type .. " " .. ev.name] = true end
      assert.truthy(kinds["create f" .. i] and kinds["write f" .. i])
    end
    assert.are.equal(0, #assert(w:get_new_events()))
    local n = 0
    local v <close> = assert(sb.files:watch_dir("/tmp/pw", { polling = true,
                                                             on_event = function() n = n + 1 end }))
    assert(sb.files:write("/tmp/pw/g", "x"))
    assert.truthy(assert(v:poll()) >= 2)
    assert.truthy(n >= 2)
  end)

  it("stop from on_event ends the wait; a raising on_event is raised again", function()
    assert(sb.files:make_dir("/tmp/w2"))
    local w = assert(sb.files:watch_dir("/tmp/w2", { on_event = function() end }))
    local n = 0
    w = assert(sb.files:watch_dir("/tmp/w2", { on_event = function() n = n + 1; w:stop() end }))
    assert(sb.files:write("/tmp/w2/a", "x"))
    H.eventually(function()
      local r = H.ok(w:wait(200))
      return n > 0 or not r
    end)
    assert.are.equal(1, n)
    assert.matches("stopped", tostring(w))
    local r = assert(sb.files:watch_dir("/tmp/w2", { on_event = function() error("watcher failed") end }))
    assert(sb.files:write("/tmp/w2/b", "x"))
    local ok, err = pcall(function()
      H.eventually(function() return r:wait(200) == nil end)
    end)
    assert.is_false(ok)
    assert.matches("watcher failed", err)
    r:stop()
    H.fails("ASB_ENOTFOUND", sb.files:watch_dir("/tmp/none/such"))
  end)

  it("__gc releases a forgotten watch", function()
    local w = assert(sb.files:watch_dir("/tmp"))
    w = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.is_true(assert(sb:is_running()))
  end)
end)
