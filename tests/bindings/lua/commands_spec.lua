-- Commands, background processes and ptys; callbacks on the calling thread,
-- callbacks that raise, process handles' __close and __gc.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"

local sb
setup(function() sb = H.sandbox() end)
teardown(function() if sb then sb:kill() end end)

describe("commands:run", function()
  it("returns stdout, stderr and the exit code", function()
    local r = assert(sb.commands:run("echo out; echo err >&2; exit 3"))
    assert.are.same({ exit_code = 3, stdout = "out\n", stderr = "err\n", error = r.error }, r)
    assert.are.equal("integer", math.type(r.exit_code))
  end)

  it("with check = true, a non-zero exit is nil, err carrying the result", function()
    local err = H.fails("ASB_ECOMMANDEXIT", sb.commands:run("echo partial; exit 4", { check = true }))
    assert.are.equal(4, err.exit_code)
    assert.are.equal("partial\n", err.stdout)
    assert.are.equal(4, err.result.exit_code)
    assert.is_truthy(assert(sb.commands:run("true", { check = true })))
  end)

  it("takes envs, cwd, user, stdin and a tag", function()
    local r = assert(sb.commands:run("echo $A-$B; pwd; id -un", {
      envs = { A = "x", B = 2 }, cwd = "/tmp", user = "root" }))
    assert.are.equal("x-2\n/tmp\nroot\n", r.stdout)
    r = assert(sb.commands:run("cat; echo", { stdin = "fed\0bytes" }))
    assert.are.equal("fed\0bytes\n", r.stdout)
  end)

  it("streams output to callbacks on the calling thread, in order", function()
    local chunks, co = {}, coroutine.running()
    local r = assert(sb.commands:run("for i in 1 2 3; do echo line$i; sleep 0.05; done; echo e >&2", {
      on_stdout = function(s)
        assert.are.equal(co, coroutine.running())
        chunks[#chunks + 1] = s
      end,
      on_stderr = function(s) chunks[#chunks + 1] = "E:" .. s end,
    }))
    assert.are.equal("line1\nline2\nline3\n", r.stdout)
    local out = table.concat(chunks)
    assert.matches("line1\nline2\nline3\n", out)
    assert.matches("E:e\n", out)
  end)

  it("runs callbacks inside a coroutine on that coroutine", function()
    local co = coroutine.create(function()
      local me, seen = coroutine.running(), nil
      local r = assert(sb.commands:run("echo in-co", { on_stdout = function() seen = coroutine.running() end }))
      return r.stdout, seen == me
    end)
    local ok, out, same = coroutine.resume(co)
    assert.is_true(ok, out)
    assert.are.equal("in-co\n", out)
    assert.is_true(same)
  end)

  it("aborts the call when a callback raises, and raises that error with its traceback", function()
    local calls = 0
    local ok, err = pcall(sb.commands.run, sb.commands, "echo a; sleep 0.2; echo b; sleep 30", {
      on_stdout = function() calls = calls + 1; error("stop here") end,
    })
    assert.is_false(ok)
    assert.are.equal(1, calls)
    assert.matches("commands_spec.lua:%d+: stop here", err)
    assert.matches("stack traceback:", err)
    -- an error object comes back as itself, with a traceback field
    local obj = setmetatable({ why = "mine" }, { __tostring = function() return "mine" end })
    ok, err = pcall(sb.commands.run, sb.commands, "echo x", { on_stderr = nil,
      on_stdout = function() error(obj) end })
    assert.is_false(ok)
    assert.are.equal(obj, err)
    local plain = {}
    ok, err = pcall(sb.commands.run, sb.commands, "echo x", { on_stdout = function() error(plain) end })
    assert.are.equal(plain, err)
    assert.matches("stack traceback", plain.traceback)
    -- the sandbox is fine afterwards
    assert.are.equal("ok\n", assert(sb.commands:run("echo ok")).stdout)
  end)

  it("returns nil, err for a command's timeout and a bad cwd", function()
    H.fails("ASB_ETIMEOUT", sb.commands:run("sleep 30", { timeout_ms = 300 }))
    H.fails("ASB_EINVAL", sb.commands:run("true", { cwd = "/no/such/dir" }))
    -- envd answers an unknown user as E2B's does: unauthenticated
    H.fails("ASB_EAUTH", sb.commands:run("true", { user = "nosuchuser" }))
  end)

  it("raises for a callback that is not a function", function()
    assert.has_error(function() sb.commands:run("true", { on_stdout = "print" }) end)
  end)
end)

describe("background commands", function()
  it("start, stream while waited for, and end with a result", function()
    local got = {}
    local p = assert(sb.commands:run("echo started; sleep 0.1; echo done", {
      background = true, on_stdout = function(s) got[#got + 1] = s end }))
    assert.are.equal("integer", math.type(p.pid))
    assert.matches("^agent_sandbox.Process%(%d+%)$", tostring(p))
    local r = assert(p:wait())
    assert.are.equal("started\ndone\n", r.stdout)
    assert.are.equal("started\ndone\n", table.concat(got))
    assert.are.same(r, assert(p:wait()), "a second wait gives the same result")
    p:close()
    assert.matches("closed", tostring(p))
  end)

  it("take stdin, are listed, connected to and killed", function()
    local p = assert(sb.commands:start("cat", { stdin = true, tag = "lua-cat" }))
    local procs = assert(sb.commands:list())
    local mine
    for _, i in ipairs(procs) do if i.pid == p.pid then mine = i end end
    assert.truthy(mine)
    assert.are.equal("lua-cat", mine.tag)
    assert.truthy(p:send_stdin("hello\n"))
    assert.truthy(sb.commands:send_stdin(p.pid, "again\n"))
    local seen = {}
    local q = assert(sb.commands:connect(p.pid, { on_stdout = function(s) seen[#seen + 1] = s end }))
    assert.truthy(p:close_stdin())
    local r = assert(p:wait())
    assert.are.equal("hello\nagain\n", r.stdout)
    q:close()
    local k = assert(sb.commands:start("sleep 60"))
    assert.is_true(H.ok(k:kill()))
    local res = H.ok(k:wait())
    assert.are_not.equal(0, res.exit_code)
    assert.is_true(H.eventually(function() return H.ok(sb.commands:kill(k.pid)) == false end))
    H.fails("ASB_ENOTFOUND", sb.commands:connect(999999))
  end)

  it("pull their output with read and lines, at the caller's pace", function()
    local p = assert(sb.commands:start("echo a; echo b >&2; sleep 0.1; echo c"))
    local got = {}
    for data, kind in p:lines() do got[#got + 1] = kind .. ":" .. data end
    local text = table.concat(got)
    assert.matches("stdout:a\n", text)
    assert.matches("stderr:b\n", text)
    assert.matches("stdout:c\n", text)
    assert.is_nil(p:read())
    assert.are.equal("a\nc\n", assert(p:wait()).stdout)
    -- "late" waits for a file, not a clock: a 1 s sleep was over before the
    -- read's 100 ms on a loaded machine, and the read got "late"
    local q = assert(sb.commands:start(
      "while [ ! -e /tmp/read-go ]; do sleep 0.05; done; echo late"))
    H.fails("ASB_ETIMEOUT", q:read{ timeout_ms = 100 })
    assert(sb.files:write("/tmp/read-go", ""))
    local data, kind = q:read()
    assert.are.same({ "late\n", "stdout" }, { data, kind })
    q:close()
    assert.has_error(function() q:read() end, "agent_sandbox: the process handle is closed")
  end)

  it("wait's timeout_ms bounds that wait only", function()
    local p = assert(sb.commands:start(
      "while [ ! -e /tmp/wait-go ]; do sleep 0.05; done; echo late"))
    H.fails("ASB_ETIMEOUT", p:wait{ timeout_ms = 100 })
    assert(sb.files:write("/tmp/wait-go", ""))
    assert.are.equal("late\n", assert(p:wait()).stdout)
  end)

  it("re-raise a wait callback's error; the process runs on", function()
    local p = assert(sb.commands:start("echo one; sleep 0.3; echo two"))
    local ok, err = pcall(p.wait, p, { on_stdout = function() error("no more") end })
    assert.is_false(ok)
    assert.matches("no more", err)
    assert.has_error(function()
      p:wait{ on_stdout = function() p:wait() end }
    end)
    p:disconnect()
    p:close()
  end)

  it("<close> kills a running process; __gc only releases its handle", function()
    local pid
    do
      local p <close> = assert(sb.commands:start("sleep 60"))
      pid = p.pid
    end
    assert.truthy(H.eventually(function()
      for _, i in ipairs(assert(sb.commands:list())) do if i.pid == pid then return false end end
      return true
    end))
    local p = assert(sb.commands:start("sleep 60"))
    pid = p.pid
    p = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    local found = false
    for _, i in ipairs(assert(sb.commands:list())) do found = found or i.pid == pid end
    assert.is_true(found, "a collected handle leaves its process running")
    assert.is_true(H.ok(sb.commands:kill(pid)))
    assert.has_error(function()
      local q = assert(sb.commands:start("true"))
      q:close()
      q:wait()
    end, "agent_sandbox: the process handle is closed")
  end)

  it("closing a handle from one of its own callbacks ends the call (nil, ECANCELED)", function()
    local p = assert(sb.commands:start("echo a; sleep 30"))
    H.fails("ASB_ECANCELED", p:wait{ on_stdout = function() p:close() end })
    assert.matches("closed", tostring(p))
    local other = H.sandbox()
    H.fails("ASB_ECANCELED", other.commands:run("echo x; sleep 30", {
      on_stdout = function() other:close() end }))
    assert.is_true(H.ok(asb.Sandbox.kill(other.id)))
  end)

  it("signal", function()
    local p = assert(sb.commands:start("trap 'echo term; exit 7' TERM; echo ready; sleep 30 & wait"))
    local ready = false
    -- wait until the trap is set (its "ready" line), then signal
    local r = H.ok(p:wait{ on_stdout = function(s)
      if not ready and s:find("ready") then
        ready = true
        assert(sb.commands:signal(p.pid, 15))
      end
    end })
    assert.are.equal(7, r.exit_code)
    assert.matches("term", r.stdout)
  end)
end)

describe("ptys", function()
  it("run a shell on a terminal of a size, typed into, resized and killed", function()
    local out, step = {}, 0
    local p
    -- each step once the shell answered the one before (calls made from
    -- inside the wait's own callback)
    p = assert(sb.pty:create{ cols = 100, rows = 30, on_data = function(d)
      out[#out + 1] = d
      local text = table.concat(out)
      if step == 0 and text:find("pty%-42") then
        step = 1
        assert(sb.pty:resize(p.pid, 120, 40))
        assert(p:send_stdin("stty size; exit\n"))
      end
    end })
    assert.is_true(p.pty)
    assert.truthy(sb.pty:send_input(p.pid, "stty size; echo pty-$((6*7))\n"))
    local r = H.ok(p:wait())
    assert.are.equal(0, r.exit_code)
    local text = table.concat(out)
    assert.matches("30 100.*pty%-42.*40 120", text)
    local q = assert(sb.pty:create{})
    assert.is_true(H.ok(sb.pty:kill(q.pid)))
    assert.are_not.equal(0, H.ok(q:wait()).exit_code)
    q:close()
    -- the sandbox forgets it once its end was reported (a condition, not a delay)
    assert.is_true(H.eventually(function() return H.ok(sb.pty:kill(q.pid)) == false end))
  end)
end)
