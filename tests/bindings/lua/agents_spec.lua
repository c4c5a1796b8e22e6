-- sb.agents: a real Codex CLI (from the host-wide prefix
-- scripts/agents-cache.sh fills) in a sandbox of the agents template,
-- against tests/agents/scripted_model.py started inside the same sandbox,
-- on its own loopback (nothing leaves the machine). Skipped without codex.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"

local CODEX = "/usr/local/lib/agent-sandbox/agents/bin/codex"
local have = io.open(CODEX, "r")
if have then have:close() end

local sb, settings

local function start_model()
  local f = assert(io.open(H.REPO .. "/tests/agents/scripted_model.py", "rb"))
  local src = f:read("a")
  f:close()
  assert(sb.files:write("/home/user/scripted_model.py", src))
  assert(sb.commands:run("(setsid python3 /home/user/scripted_model.py --ready-file /tmp/model.port"
                         .. " > /tmp/model.log 2>&1 < /dev/null &)"))
  local port = H.eventually(function()
    local r = assert(sb.commands:run("cat /tmp/model.port 2>/dev/null || true"))
    return tonumber(r.stdout)
  end, 120)
  assert(port, "the scripted model did not start")
  return port
end

describe("sb.agents", function()
  if not have then
    pending("no codex in the host-wide prefix (scripts/agents-cache.sh)")
    return
  end

  setup(function()
    sb = H.sandbox({ template = "agents" })
    local port = start_model()
    settings = { cwd = "/home/user", model = "scripted",
                 base_url = ("http://127.0.0.1:%d/v1"):format(port),
                 api_key_env = "ASB_TEST_KEY", env = { ASB_TEST_KEY = "sk-scripted-test" } }
  end)
  teardown(function() if sb then sb:kill() end end)

  it("lists the agents", function()
    local names, codex = {}, nil
    for _, a in ipairs(assert(sb.agents:list())) do
      names[#names + 1] = a.name
      if a.name == "codex" then codex = a end
    end
    assert.are.same({ "codex", "qwen", "claude", "opencode" }, names)
    assert.is_true(codex.installed)
    assert.are.equal("@openai/codex", codex.package)
    assert.is_truthy(codex.version)
  end)

  it("runs turns with events, keeps the context, reads the log", function()
    assert(sb.commands:run("rm -f /tmp/x"))
    local s <close> = assert(sb.agents:session("codex", settings))
    assert.is_truthy(s.id:match("^ags_"))
    local seen = {}
    local t = assert(s:send("please WRITE the file", { on_event = function(e) seen[#seen + 1] = e end }))
    assert.are.equal("completed", t.status)
    assert.are.equal("done", t.final_message)
    assert.are.equal(1, t.turn)
    assert.is_truthy(t.commands[1].command:find("echo hi > /tmp/x", 1, true))
    assert.are.equal(0, t.commands[1].exit_code)
    assert.is_true(t.usage.input_tokens > 0)
    for i, e in ipairs(seen) do assert.are.equal(i, e.seq) end
    assert.are.equal("turn.completed", seen[#seen].type)
    assert.are.equal(t.seq, seen[#seen].seq)
    assert.are.equal("hi\n", assert(sb.files:read("/tmp/x")))
    local t2 = assert(s:send("RECALL what you did"))
    assert.are.equal("recall: yes", t2.final_message)
    local log = assert(s:events(t.seq))
    assert.are.equal(t.seq + 1, log[1].seq)
    assert.are.equal("turn.completed", log[#log].type)
    for _, e in ipairs(log) do assert.are.equal(2, e.turn) end
    local info = assert(s:info())
    assert.are.equal("idle", info.status)
    assert.are.equal(2, #info.turns)
  end)

  it("returns a failed turn, raises what on_event raises, and says why a session fails", function()
    local s <close> = assert(sb.agents:session("codex", settings))
    local t = assert(s:send("FAIL now"))
    assert.are.equal("failed", t.status)
    assert.is_truthy(t.error:find("scripted failure", 1, true) or t.error:find("400", 1, true))
    -- the callback's own error comes back out of send (the turn goes on)
    local ok, e = pcall(s.send, s, "hello", { on_event = function() error({ stop = true }) end })
    assert.is_false(ok)
    assert.is_true(e.stop)
    local rest = assert(s:events(t.seq, { follow = true }))
    assert.are.equal("turn.completed", rest[#rest].type)
    assert.are.equal("ok", rest[#rest].final_message)
    local err = H.fails("ASB_ENOTFOUND", sb.agents:session("no-such-agent"))
    assert.is_truthy(err.message:find("available: codex, qwen, claude, opencode", 1, true))
    H.fails("ASB_EINVAL", sb.agents:session("codex", { approval = "sometimes" }))
    local id = s.id
    assert.is_true(s:close())
    H.fails("ASB_ENOTFOUND", sb.agents:connect(id))
  end)
end)
