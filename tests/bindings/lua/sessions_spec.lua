-- Sessions (asb_session_*): the one on-disk store every binding shares,
-- across processes and languages (saved from Python, loaded from Lua, and
-- back).
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"

local function python(code)
  local py = H.python()
  if not py then return nil end
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(code)
  f:close()
  local out, ok = H.sh(H.q(py) .. " " .. H.q(path))
  os.remove(path)
  assert(ok, "python failed:\n" .. out)
  return out
end

describe("sessions", function()
  it("save, get, list, load and delete", function()
    local sb = H.sandbox()
    assert.is_true(assert(asb.sessions.save("lua-one", sb, { task = "triage" })))
    assert.is_true(assert(sb:save_session("lua-two")))
    local s = assert(asb.sessions.get("lua-one"))
    assert.are.equal("lua-one", s.name)
    assert.are.equal(sb.id, s.sandbox_id)
    assert.are.equal("base", s.template_id)
    assert.are.equal("triage", s.metadata.task)
    assert.is_nil(s.metadata.other)
    assert.are.equal("integer", math.type(s.created_at))
    local names = {}
    for _, r in ipairs(assert(asb.sessions.list())) do names[r.name] = true end
    assert.is_true(names["lua-one"] and names["lua-two"])
    local again = assert(asb.sessions.load("lua-two"))
    assert.are.equal("back\n", assert(again.commands:run("echo back")).stdout)
    assert.is_true(assert(asb.sessions.delete("lua-two")))
    H.fails("ASB_ENOTFOUND", asb.sessions.get("lua-two"))
    H.fails("ASB_ENOTFOUND", asb.sessions.delete("lua-two"))
    H.fails("ASB_EINVAL", asb.sessions.save("bad name!", sb))
    assert(sb:kill())
    -- the session stays; its sandbox is gone
    local v, err = asb.sessions.load("lua-one")
    assert.is_nil(v)
    assert.truthy(err.code == "ASB_ESANDBOXGONE" or err.code == "ASB_ESANDBOXNOTFOUND", tostring(err))
    assert(asb.sessions.delete("lua-one"))
  end)

  it("a session saved from Python loads in Lua, and one saved in Lua loads in Python", function()
    local out = python([[
from agent_sandbox import Sandbox
sb = Sandbox.create_sync(timeout=300)
sb.files.write_sync("/tmp/note", "from python")
sb.save_session_sync("py-to-lua", {"by": "python"})
print(sb.sandbox_id)
]])
    if not out then
      pending("the Python binding is not built (cmake --build build --target python-binding)")
      return
    end
    local id = out:match("(%w+)%s*$")
    local rec = assert(asb.sessions.get("py-to-lua"))
    assert.are.equal(id, rec.sandbox_id)
    assert.are.equal("python", rec.metadata.by)
    local sb = assert(asb.Sandbox.from_session("py-to-lua"))
    assert.are.equal(id, sb.id)
    assert.are.equal("from python", assert(sb.files:read("/tmp/note")))
    assert(sb.files:write("/tmp/note", "from lua"))
    assert(sb:save_session("lua-to-py", { by = "lua" }))
    out = python([[
import asyncio
from agent_sandbox import sessions
async def main():
    info = await sessions.get("lua-to-py")
    sb = await sessions.load("lua-to-py")
    print(info.metadata["by"], info.sandbox_id == sb.sandbox_id)
    print(await sb.files.read("/tmp/note"))
    await sb.kill()
    await sessions.delete("lua-to-py")
    await sessions.delete("py-to-lua")
asyncio.run(main())
]])
    assert.are.equal("lua True\nfrom lua\n", out)
    H.fails("ASB_ENOTFOUND", asb.sessions.get("lua-to-py"))
  end)
end)
