-- Every script under examples/lua runs to completion against a real engine,
-- configured the way users run them (nothing but ASB_STATE_DIR).
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"

local function run(name, ...)
  local out, ok = H.lua(H.REPO .. "/examples/lua/" .. name, ...)
  assert(ok, name .. " failed:\n" .. out)
  return out
end

describe("examples/lua", function()
  it("quickstart.lua", function()
    local out = run("quickstart.lua")
    assert.matches("hello from Linux\nhi from Lua\nnil\tASB_ENOTFOUND", out)
  end)

  it("commands.lua", function()
    local out = run("commands.lua")
    assert.matches("> tick 1", out)
    assert.matches("exit\t3\nASB_ECOMMANDEXIT\t4\nhi from /tmp\nSHOUT\nhello Alice\n", out)
    assert.matches("stdout: out\n", out)
    assert.matches("stderr: err\n", out)
    assert.matches("false\tseen enough", out)
  end)

  it("files.lua", function()
    local out = run("files.lua")
    assert.matches("9\tbytes back", out)
    assert.matches("streamed 4194304 bytes\npulled 4194304 bytes", out)
    assert.matches("exists\ttrue", out)
    assert.matches("event create done", out)
  end)

  it("git.lua", function()
    local out = run("git.lua")
    assert.matches("untracked\tREADME\npush without upstream\tASB_EGITUPSTREAM\n", out)
    assert.matches("pulled\tnews", out)
    assert.matches("branches\tmain,topic\ton\ttopic\nclean\ttrue\tupstream\tnil\n", out)
  end)

  it("checkpoint.lua", function() -- no --pause-criu here (examples_criu_spec.lua: with it)
    local out = run("checkpoint.lua")
    assert.matches("paused:\tpaused\tpause mode\tmemory\n", out, 1, true)
    assert.matches("\tthe same process counts on\n", out, 1, true)
  end)

  it("pty.lua", function()
    assert.matches("exit\t0\tsize\t30 100", run("pty.lua"))
  end)

  it("code.lua", function()
    local out = run("code.lua")
    assert.matches("value\t42\nstdout: printed\nvalue\t43\nraised\tZeroDivisionError", out)
    assert.matches("context\t/tmp", out)
    assert.matches("from bash", out)
  end)

  it("fork.lua", function() -- no --pause-criu here: every fork is booted fresh
    local out = run("fork.lua")
    assert.matches("parent fork mode\tnil\nfork\tfiles\tat the fork\none of two\tfiles\tfiles\n"
                   .. "one of two\tfiles\tfiles\n", out)
  end)

  it("lifecycle.lua", function()
    local out = run("lifecycle.lua")
    assert.matches("state\trunning\towner\tlifecycle.lua", out)
    assert.matches("paused\ttrue\tfalse\nmemory\tRAM kept %(no %-%-pause%-swap%)\nrunning\ttrue\n"
                   .. "listed\ttrue\nsame\ttrue\nkilled\ttrue\tfalse", out)
    assert.matches("nil\tASB_ESANDBOXGONE\tkilled", out)
  end)

  it("sessions.lua", function()
    assert.matches("^saved %w+ as lua%-example", run("sessions.lua"))
    assert.matches("reconnected: written by the first run", run("sessions.lua"))
    assert.matches("session closed", run("sessions.lua", "done"))
  end)

  it("volumes.lua", function()
    assert.matches("^from lua\nfrom the sandbox\nfile\t/log.txt\t1000\ndeleted\ttrue", run("volumes.lua"))
  end)

  it("mcp_gateway.lua", function()
    local out = run("mcp_gateway.lua")
    assert.matches("^url\thttp://50005%-%w+%.localhost:%d+/mcp\ntools\thello%.hello,", out)
    assert.matches("\nrefused\ttrue\tASB_ERROR\tFailed to start MCP gateway\n", out)
  end)

  it("secrets.lua", function()
    assert.matches("^created\ttrue\tversion\t1\ttrue\nupdated version\t2\texample\nlisted\ttrue\n" ..
                   "header value\tBearer %${e2b%.secrets%.lua%-example%-key%-%d+}\ndeleted\ttrue\n$", run("secrets.lua"))
  end)

  it("templates.lua", function()
    local out = run("templates.lua")
    assert.matches("built\tlua%-example\t%(new%)\nbaked in\nlisted\t%w+\ndeleted\ttrue", out)
  end)

  it("named_commands.lua", function()
    local out = run("named_commands.lua", H.BUILD .. "/examples/templates/lua-hello")
    assert.matches("template lua%-hello\n", out)
    assert.matches("  add%(a: integer, b: float%) Adds two numbers", out)
    assert.matches("Hello, Alice!\nadd\t42.0\nstats\t3\t15\t5.0\n", out)
    assert.matches("ASB_ECOMMANDFAILED\tValueError\nASB_EINVAL\nASB_ECOMMANDNOTFOUND\n", out)
    assert.matches("listening on 9001\nword_count\t4", out)
  end)

  it("e2b_compat.lua", function()
    assert.matches("hello from an E2B program\ndata\nexit code\t2\nFileNotFoundException", run("e2b_compat.lua"))
  end)
end)
