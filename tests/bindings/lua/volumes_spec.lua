-- Volume mounts through the Lua binding: Sandbox.create{ volume_mounts }
-- (asb_sandbox_options.volume_mounts) on a volume made with E2B's /volumes
-- API (curl on the engine's unix socket): two sandboxes share it; bad
-- mounts are refused.
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
