-- Volume mounts through the Lua binding: Sandbox.create{ volume_mounts }
-- (asb_sandbox_options.volume_mounts) on a volume made with E2B's /volumes
-- API (curl on the engine's unix socket): two sandboxes share it; bad
-- mounts are refused. And asb.volumes / asb.Volume over asb_volume*:
-- create, get, list, delete, every file call, seen from a sandbox.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"

local state = os.getenv("ASB_STATE_DIR")
local name = "lua-vol-" .. tostring(os.time()) .. "-" .. tostring(math.random(1000000))

local function api(method, path, body)
  local key = io.open(state .. "/api_key"):read("l")
  local out, ok = H.sh("curl -sS -o /dev/null -w '%{http_code}' --unix-socket " .. H.q(state .. "/engine.sock") ..
                       " -X " .. method .. " -H " .. H.q("X-API-Key: " .. key) ..
                       " -H 'Content-Type: application/json'" ..
                       (body and (" --data " .. H.q(body)) or "") .. " http://engine" .. path)
  assert(ok, out)
  return tonumber(out)
end

describe("volume mounts", function()
  setup(function()
    assert.are.equal(201, api("POST", "/volumes", '{"name":"' .. name .. '","sizeMB":32}'))
  end)
  teardown(function() api("DELETE", "/volumes/" .. name) end)

  it("are shared by two sandboxes", function()
    local a = H.sandbox({ timeout_ms = 60000, volume_mounts = { ["/mnt/v"] = name } })
    local b = H.sandbox({ timeout_ms = 60000, volume_mounts = { ["/home/user/v"] = { name = name } } })
    assert(a.commands:run("echo from-a > /mnt/v/f"))
    local r = assert(b.commands:run("cat /home/user/v/f; stat -c %U /home/user/v/f"))
    assert.are.equal("from-a\nuser\n", r.stdout)
    assert.are.equal(409, api("DELETE", "/volumes/" .. name))
    a:kill()
    b:kill()
  end)

  it("refuses bad ones", function()
    assert.has_error(function() asb.Sandbox.create{ volume_mounts = { ["/x"] = 3 } } end)
    local sb, err = asb.Sandbox.create{ volume_mounts = { ["/proc/x"] = name } }
    assert.is_nil(sb)
    assert.matches("volume mount path", tostring(err))
  end)
end)

describe("volumes", function()
  it("are made, filled, mounted and deleted through the library", function()
    local vname = name .. "-api"
    assert.is_nil((asb.volumes.create("bad/name")))
    local v = assert(asb.volumes.create(vname, { size_mb = 32 }))
    assert.are.equal(32, v.size_mb)
    assert.truthy(#v.token > 0)
    local _, err = asb.volumes.create(vname)
    assert.are.equal("ASB_EEXISTS", err.code)
    assert.are.equal(v.volume_id, assert(asb.volumes.get(vname)).volume_id)
    local found = false
    for _, i in ipairs(assert(asb.volumes.list())) do found = found or i.name == vname end
    assert.is_true(found)

    local e = assert(v:write_file("/a.bin", "hi\0x", { uid = 1000, gid = 1000 }))
    assert.are.same({ "file", 4, 1000, 420 }, { e.type, e.size, e.uid, e.mode })
    assert.are.equal("hi\0x", assert(v:read_file("/a.bin")))
    _, err = v:write_file("/a.bin", "x")
    assert.are.equal("ASB_EEXISTS", err.code)
    _, err = v:make_dir("/d/e")
    assert.are.equal("ASB_ENOTFOUND", err.code)
    assert(v:make_dir("/d/e", { force = true, uid = 1000, gid = 1000 }))
    assert.is_true(v:exists("/d/e"))
    assert.is_false(v:exists("/nope"))
    local paths = {}
    for _, x in ipairs(assert(v:list("/", { depth = 2 }))) do paths[#paths + 1] = x.path end
    table.sort(paths)
    assert.are.same({ "/a.bin", "/d", "/d/e" }, paths)
    assert.are.equal(384, assert(v:update_metadata("/a.bin", { mode = 384 })).mode)

    local sb = H.sandbox({ timeout_ms = 60000, volume_mounts = { ["/mnt/v"] = v } })
    local r = assert(sb.commands:run("stat -c '%a %U' /mnt/v/a.bin; echo s > /mnt/v/d/e/f"))
    assert.are.equal("600 user\n", r.stdout)
    assert.are.equal("s\n", assert(v:read_file("/d/e/f")))
    _, err = asb.volumes.delete(vname)
    assert.are.equal("ASB_EEXISTS", err.code)
    sb:kill()

    assert(v:remove("/d"))
    assert.is_false(v:exists("/d/e/f"))
    assert.is_true(asb.volumes.delete(v.volume_id))
    _, err = asb.volumes.get(vname)
    assert.are.equal("ASB_ENOTFOUND", err.code)
  end)
end)
