-- agent_sandbox.compat: E2B's Python SDK names, dot-called as in Python,
-- seconds for times, E2B's exception classes on the nil, err convention.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local e2b = require "agent_sandbox.compat"

describe("agent_sandbox.compat", function()
  local sandbox
  setup(function() sandbox = assert(e2b.Sandbox.create{ template = "base", timeout = 300 }) end)
  teardown(function() if sandbox then sandbox.kill() end end)

  it("runs commands the E2B way", function()
    assert.matches("^%w+$", sandbox.sandbox_id)
    local out = {}
    local r = assert(sandbox.commands.run("echo hello from E2B", {
      on_stdout = function(s) out[#out + 1] = s end }))
    assert.are.equal("hello from E2B\n", r.stdout)
    assert.are.equal("hello from E2B\n", table.concat(out))
    -- colon calls work too
    assert.are.equal("x\n", assert(sandbox.commands:run("echo x")).stdout)
    local v, err = sandbox.commands.run("echo partial; exit 3")
    assert.is_nil(v)
    assert.is_true(e2b.CommandExitException:is(err))
    assert.is_true(e2b.SandboxException:is(err))
    assert.is_false(e2b.NotFoundException:is(err))
    assert.are.equal("CommandExitException", err.name)
    -- the JS SDK's names are the same classes
    assert.are.equal(e2b.CommandExitException, e2b.CommandExitError)
    assert.is_true(e2b.CommandExitError:is(err))
    assert.is_true(e2b.SandboxError:is(err))
    assert.is_false(e2b.NotFoundError:is(err))
    assert.are.equal(3, err.exit_code)
    assert.are.equal("partial\n", err.stdout)
    local h = assert(sandbox.commands.run("sleep 0.1; echo bg", { background = true }))
    assert.are.equal("bg\n", assert(h.wait()).stdout)
    h = assert(sandbox.commands.run("exit 5", { background = true }))
    assert.is_true(e2b.CommandExitException:is(select(2, h.wait())))
    v, err = sandbox.commands.run("sleep 10", { timeout = 0.3 })
    assert.is_true(e2b.TimeoutException:is(err))
  end)

  it("reads and writes files, with E2B's not-found class", function()
    local info = assert(sandbox.files.write("/tmp/e2b.txt", "data"))
    assert.are.same({ name = "e2b.txt", path = "/tmp/e2b.txt", type = "file" }, info)
    assert.are.equal("data", assert(sandbox.files.read("/tmp/e2b.txt")))
    assert.are.same({ "data" }, assert(sandbox.files.read("/tmp/e2b.txt", { format = "stream" })))
    local v, err = sandbox.files.read("/tmp/none")
    assert.is_nil(v)
    assert.are.equal("FileNotFoundException", err.name)
    assert.is_true(e2b.NotFoundException:is(err))
    assert.is_false(e2b.SandboxNotFoundException:is(err))
    assert.is_true(H.ok(sandbox.files.exists("/tmp/e2b.txt")))
    local names = {}
    for _, e in ipairs(assert(sandbox.files.list("/tmp"))) do names[e.name] = e.modified_time end
    assert.truthy(names["e2b.txt"])
    assert.are.equal("/tmp/e2b2.txt", assert(sandbox.files.rename("/tmp/e2b.txt", "/tmp/e2b2.txt")).path)
    assert.is_true(assert(sandbox.files.remove("/tmp/e2b2.txt")))
    local w = assert(sandbox.files.watch_dir("/tmp"))
    assert(sandbox.files.write("/tmp/watched", "x"))
    local seen = H.eventually(function()
      for _, ev in ipairs(assert(w.get_new_events())) do
        if ev.name == "watched" then return true end
      end
    end)
    assert.is_true(seen)
    w.stop()
  end)

  it("manages the sandbox: info, timeout, list (a paginator), kill by id", function()
    assert.is_true(assert(sandbox.set_timeout(600)))
    assert.are.equal(sandbox.sandbox_id, assert(sandbox.get_info()).sandbox_id)
    assert.are.equal(sandbox.sandbox_id, assert(e2b.Sandbox.get_info(sandbox.sandbox_id)).sandbox_id)
    assert.is_true(H.ok(sandbox.is_running()))
    assert.matches("^8080%-" .. sandbox.sandbox_id, assert(sandbox.get_host(8080)))
    assert.matches("^https?://", assert(sandbox.download_url("/etc/hostname")))
    assert.are.equal("table", type(assert(sandbox.get_metrics())))
    assert.is_true(H.ok(sandbox.pause()))
    assert.are.equal("paused", assert(sandbox.get_info()).state)
    assert.is_true(H.ok(sandbox.resume()))
    assert.is_true(H.ok(sandbox.is_running()))
    local p = e2b.Sandbox.list{ query = { state = { "running" } } }
    local found = false
    while p.has_next do
      for _, i in ipairs(assert(p.next_items())) do found = found or i.sandbox_id == sandbox.sandbox_id end
    end
    assert.is_true(found)
    local other = assert(e2b.Sandbox.create("base", { timeout = 60 }))
    assert.is_true(H.ok(e2b.Sandbox.kill(other.sandbox_id)))
    assert.is_false(H.ok(e2b.Sandbox.kill(other.sandbox_id)))
    local v, err = e2b.Sandbox.connect(other.sandbox_id)
    assert.is_nil(v)
    assert.is_true(e2b.SandboxNotFoundException:is(err))
    assert.has_error(function() e2b.Sandbox.create{ timeout_ms = 5 } end)
  end)

  it("pauses without memory with E2B's keep_memory keyword, on the sandbox and by id", function()
    assert.is_true(H.ok(sandbox.pause{ keep_memory = false }))
    assert.are.equal("filesystem", assert(sandbox.get_info()).pause_mode)
    assert(e2b.Sandbox.connect(sandbox.sandbox_id)) -- resumed (booted again)
    assert.is_true(H.ok(e2b.Sandbox.pause(sandbox.sandbox_id, { keep_memory = false })))
    local info = assert(e2b.Sandbox.get_info(sandbox.sandbox_id))
    assert.are.same({ "paused", "filesystem" }, { info.state, info.pause_mode })
    assert.is_false(H.ok(e2b.Sandbox.beta_pause(sandbox.sandbox_id)))
    assert.is_true(H.ok(sandbox.resume()))
    assert.is_true(H.ok(sandbox.is_running()))
  end)

  it("runs code as e2b_code_interpreter does", function()
    local lines = {}
    local ex = assert(sandbox.run_code("print('hi')\n6 * 7", {
      on_stdout = function(m) lines[#lines + 1] = m end, timeout = 120 }))
    assert.are.equal("42", ex.text)
    assert.is_true(ex.results[1].is_main_result)
    assert.are.equal("hi\n", lines[1].line)
    assert.is_false(lines[1].error)
    assert.are.equal("integer", math.type(lines[1].timestamp))
    ex = assert(sandbox.run_code("print('only printed')"))
    assert.is_nil(ex.text, "E2B: text is the main result's only")
  end)

  it("drives background commands and ptys by pid, and code contexts", function()
    local h = assert(sandbox.commands.run("cat", { background = true, stdin = true }))
    local listed = false
    for _, i in ipairs(assert(sandbox.commands.list())) do listed = listed or i.pid == h.pid end
    assert.is_true(listed)
    assert.truthy(sandbox.commands.send_stdin(h.pid, "one\n"))
    assert.truthy(h.send_stdin("two\n"))
    local seen = {}
    local c = assert(sandbox.commands.connect(h.pid, { on_stdout = function(s) seen[#seen + 1] = s end }))
    assert.are.equal(h.pid, c.pid)
    assert.truthy(sandbox.commands.close_stdin(h.pid))
    assert.are.equal("one\ntwo\n", assert(h.wait()).stdout)
    c.disconnect()
    local k = assert(sandbox.commands.run("sleep 60", { background = true }))
    assert.is_true(H.ok(sandbox.commands.kill(k.pid)))
    assert.is_true(e2b.CommandExitException:is(select(2, k.wait())))

    local out = {}
    local t = assert(sandbox.pty.create({ cols = 80, rows = 24 }, { timeout = 60 }))
    assert(sandbox.pty.resize(t.pid, { cols = 90, rows = 20 }))
    assert(sandbox.pty.send_stdin(t.pid, "stty size; exit\n"))
    assert(t.wait{ on_pty = function(d) out[#out + 1] = d end })
    assert.matches("20 90", table.concat(out))

    local ctx = assert(sandbox.create_code_context{ cwd = "/tmp" })
    assert.truthy(ctx.id)
    assert(sandbox.run_code("x = 5", { context = ctx }))
    assert.are.equal("5", assert(sandbox.run_code("x", { context = ctx })).text)
    local ids = {}
    for _, x in ipairs(assert(sandbox.list_code_contexts())) do ids[x.id] = true end
    assert.is_true(ids[ctx.id])
    assert(sandbox.restart_code_context(ctx))
    local ex = assert(sandbox.run_code("x", { context = ctx }))
    assert.are.equal("NameError", ex.error.name)
    assert(sandbox.remove_code_context(ctx))
  end)

  it("has E2B's sandbox.git, with its names and exception classes", function()
    local git, d = sandbox.git, "/tmp/compat-git-" .. tostring(os.time())
    assert(git.init(d .. "/remote.git", { bare = true, initial_branch = "main" }))
    assert(git.init(d .. "/r", { initial_branch = "main", timeout = 30 }))
    assert(git.configure_user("C", "c@example.com", { scope = "local", path = d .. "/r" }))
    assert.are.equal("C", git.get_config("user.name", { scope = "local", path = d .. "/r" }))
    assert.is_nil(git.get_config("asbtest.unset", { scope = "local", path = d .. "/r" }))
    assert(sandbox.files.write(d .. "/r/a.txt", "a\n"))
    assert(git:add(d .. "/r", { files = { "a.txt" } })) -- colon calls work too
    assert(git.commit(d .. "/r", "a", { author_name = "A", author_email = "a@example.com" }))
    assert(git.remote_add(d .. "/r", "origin", d .. "/remote.git"))
    assert.is_nil(git.remote_get(d .. "/r", "nope"))
    local v, err = git.push(d .. "/r")
    assert.is_nil(v)
    assert.is_true(e2b.GitUpstreamException:is(err))
    assert.are.equal("GitUpstreamException", err.name)
    assert.is_string(err.stderr)
    v, err = git.commit(d .. "/r", "nothing")
    assert.is_true(e2b.CommandExitException:is(err))
    assert(git.push(d .. "/r", { remote = "origin", branch = "main" }))
    local st = assert(git.status(d .. "/r"))
    assert.are.same({ "main", "origin/main", true }, { st.current_branch, st.upstream, st.is_clean })
    assert.are.same({ "main" }, assert(git.branches(d .. "/r")).branches)
    v, err = git.clone("https://example.invalid/r.git", { password = "p" })
    assert.is_true(e2b.InvalidArgumentException:is(err))
    assert.is_true(e2b.AuthenticationException:is(setmetatable({ name = "GitAuthException" },
                                                               getmetatable(err))))
    assert.has_error(function() git.clone(d, { bogus = 1 }) end)
  end)

  it("<close> kills the sandbox", function()
    local id
    do
      local sb <close> = assert(e2b.Sandbox.create{ timeout = 60 })
      id = sb.sandbox_id
    end
    assert.is_false(H.ok(e2b.Sandbox.kill(id)))
  end)
end)
