-- Volume mounts through the Lua binding: Sandbox.create{ volume_mounts }
-- (asb_sandbox_options.volume_mounts) on a volume made with E2B's /volumes
-- API (curl on the engine's unix socket): two sandboxes share it; bad
-- mounts are refused. And asb.volumes / asb.Volume over asb_volume*:
-- create, get, list, delete, every file call, seen from a sandbox. And
-- agent_sandbox.compat's Volume (E2B's Python names and exception
-- classes), mounted with compat's Sandbox.create{ volume_mounts, lifecycle }.
-- A volume from its token (volumes.from_token, compat's Volume(id, name,
-- token)); a sandbox info's lifecycle and volume_mounts (E2B's SandboxInfo)
-- from get_info and the list.
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
    -- E2B's SandboxInfo.volume_mounts and lifecycle (a list's items: no lifecycle)
    local info = assert(b:get_info())
    assert.are.same({ { name = name, path = "/home/user/v" } }, info.volume_mounts)
    assert.are.same({ on_timeout = "kill", auto_resume = false }, info.lifecycle)
    local listed
    for _, i in ipairs(assert(asb.Sandbox.list())) do
      if i.sandbox_id == a.sandbox_id then listed = i end
    end
    assert.are.same({ { name = name, path = "/mnt/v" } }, listed.volume_mounts)
    assert.is_nil(listed.lifecycle)
    a:kill()
    b:kill()
  end)

  it("are reached from a token alone", function()
    local got = assert(asb.volumes.get(name))
    -- no API call, no API key: the content API takes the token
    local url = io.open(state .. "/engine.url"):read("l")
    local v = assert(asb.volumes.from_token(got.volume_id, name, got.token,
                                            { api_key = "not-the-key", api_url = url, sandbox_url = url }))
    assert.are.same({ got.volume_id, name, got.token, 0 }, { v.volume_id, v.name, v.token, v.size_mb })
    assert(v:write_file("/tok.txt", "by-token", { force = true }))
    assert.are.equal("by-token", assert(got:read_file("/tok.txt")))
    local bad = assert(asb.volumes.from_token(got.volume_id, nil, "wrong-token"))
    local _, err = bad:exists("/")
    assert.are.equal("ASB_EAUTH", err.code)
    _, err = asb.volumes.from_token(got.volume_id, name, "tok\r\nX: y")
    assert.are.equal("ASB_EINVAL", err.code)
    -- compat: E2B's Volume(volume_id, name, token) and its error classes
    local e2b = require "agent_sandbox.compat"
    local cv = assert(e2b.Volume(got.volume_id, name, got.token))
    assert.are.equal("by-token", assert(cv.read_file("/tok.txt")))
    assert.is_true(e2b.VolumePathNotFoundException:is(select(2, cv.read_file("/missing"))))
    assert.has_error(function() e2b.Volume(got.volume_id, name) end)
    assert(v:remove("/tok.txt"))
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

describe("compat Volume", function()
  local e2b = require "agent_sandbox.compat"

  it("has E2B's names and exceptions, and mounts in a compat sandbox", function()
    local v, err = e2b.Volume.connect("no-such-volume")
    assert.is_nil(v)
    assert.is_true(e2b.VolumeNotFoundException:is(err))
    assert.is_true(e2b.NotFoundException:is(err))
    assert.is_false(e2b.VolumeException:is(err))
    assert.are.equal(e2b.VolumeNotFoundError, e2b.VolumeNotFoundException)
    assert.are.equal("Volume no-such-volume not found", err.message)
    assert.is_true(e2b.VolumeNotFoundException:is(select(2, e2b.Volume.get_info("no-such-volume"))))
    assert.is_false(e2b.Volume.destroy("no-such-volume"))

    local cname = name .. "-compat"
    local vol = assert(e2b.Volume.create(cname, { size_mb = 16 }))
    assert.are.equal(cname, vol.name)
    assert.are.equal(vol.token, assert(e2b.Volume.get_info(cname)).token)
    local listed = false
    for _, i in ipairs(assert(e2b.Volume.list())) do listed = listed or i.volume_id == vol.volume_id end
    assert.is_true(listed)
    _, err = vol.read_file("/missing.txt")
    assert.is_true(e2b.VolumePathNotFoundException:is(err))
    assert.are.equal("Path /missing.txt not found", err.message)
    assert.is_true(e2b.VolumePathNotFoundException:is(select(2, vol.list("/missing"))))
    assert.is_true(e2b.VolumePathNotFoundException:is(select(2, vol:remove("/missing"))))
    assert.is_false(vol.exists("/missing.txt"))
    assert(vol.write_file("/hello.txt", "hi\n", { uid = 1000, gid = 1000 }))
    _, err = vol.write_file("/hello.txt", "x")
    assert.is_true(e2b.VolumeException:is(err))
    assert.matches("^409: ", err.message)
    assert(vol.make_dir("/a/b", { force = true }))
    assert.are.equal(448, assert(vol.update_metadata("/a/b", { mode = 448 })).mode)
    assert.are.same({ "hi\n" }, assert(vol.read_file("/hello.txt", { format = "stream" })))

    -- E2B's volume_mounts (a Volume) and lifecycle, at create
    local sb = assert(e2b.Sandbox.create{ timeout = 60, volume_mounts = { ["/mnt/data"] = vol },
                                          lifecycle = { on_timeout = "pause", auto_resume = true } })
    finally(function() sb.kill() end)
    local info = assert(sb.get_info())
    assert.is_true(info.auto_resume)
    assert.are.same({ on_timeout = "pause", auto_resume = true }, info.lifecycle)
    assert.are.same({ { name = cname, path = "/mnt/data" } }, info.volume_mounts)
    assert(sb.commands.run("echo from-sandbox >> /mnt/data/hello.txt"))
    assert.are.equal("hi\nfrom-sandbox\n", assert(vol.read_file("/hello.txt")))
    _, err = e2b.Volume.destroy(vol.volume_id)
    assert.is_true(e2b.VolumeException:is(err))
    assert.matches("^409: .*mounted by 1 running sandbox", err.message)
    assert.truthy(err.message:find(sb.sandbox_id, 1, true))
    assert.is_true(sb.kill())
    assert.is_true(e2b.Volume.destroy(vol.volume_id))
    assert.has_error(function() e2b.Sandbox.create{ lifecycle = { on_timeout = "sleep" } } end)
  end)
end)
