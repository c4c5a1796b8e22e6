-- Sandboxes: lifecycle, clients, the error convention, handles (__gc,
-- __close, __tostring, closed handles), the module's hygiene.
-- SPDX-License-Identifier: Apache-2.0
-- The descriptors a child of this process inherits before the library
-- made any connection (whatever busted and ctest left open): a child
-- started later must inherit no more (see "is reached by a host curl").
local function child_fds()
  local p = assert(io.popen("exec sh -c 'ls -l /proc/$$/fd'"))
  local fds = {}
  for n, target in p:read("a"):gmatch("(%d+) %-> ([^\n]*)") do
    if n ~= "0" and n ~= "1" and n ~= "2" then fds[#fds + 1] = n .. " -> " .. target end
  end
  p:close()
  table.sort(fds)
  return table.concat(fds, "\n")
end
local FDS_AT_START = child_fds()

local H = require "helper"
local asb = require "agent_sandbox"

describe("agent_sandbox", function()
  it("sets no globals and reports the library's version", function()
    local before = {}
    for k in pairs(_G) do before[k] = true end
    package.loaded["agent_sandbox"], package.loaded["agent_sandbox.core"] = nil, nil
    local again = require "agent_sandbox"
    for k in pairs(_G) do assert.is_true(before[k], "new global " .. k) end
    local v, major, minor, patch = again.version()
    assert.are.equal(("%d.%d.%d"):format(major, minor, patch), v)
    assert.are.equal((major << 16) | (minor << 8) | patch, again.version_number())
    assert.are.equal("integer", math.type(major))
    assert.truthy(asb.strerror("ASB_ENOTFOUND"):len() > 0)
  end)

  it("makes clients from the environment (the local engine)", function()
    local c = assert(asb.Client.new())
    assert.matches("^http://127%.0%.0%.1:%d+$", c.api_url)
    assert.are.equal("boolean", type(c.has_api_key))
    assert.are.equal("integer", math.type(c.request_timeout_ms))
    assert.matches("^agent_sandbox.Client%(http", tostring(c))
    assert.has_error(function() asb.Client.new{ api_kye = "x" } end,
                     "Client.new: unknown option 'api_kye'")
  end)
end)

describe("a sandbox", function()
  local sb
  setup(function() sb = H.sandbox({ metadata = { suite = "lua" }, envs = { GREETING = "hej" } }) end)
  teardown(function() if sb then sb:kill() end end)

  it("is a userdata with fields, methods and a __tostring", function()
    assert.are.equal("userdata", type(sb))
    assert.are.equal(asb.Sandbox, getmetatable(sb))
    assert.matches("^[%w]+$", sb.id)
    assert.are.equal(sb.id, sb.sandbox_id)
    assert.are.equal("agent_sandbox.Sandbox(" .. sb.id .. ")", tostring(sb))
    assert.truthy(sb.envd_version)
    assert.are.equal(sb, sb.commands.sandbox)
    assert.has_error(function() sb.id = "x" end)
  end)

  it("runs with its create options", function()
    local r = assert(sb.commands:run("echo $GREETING"))
    assert.are.equal("hej\n", r.stdout)
    local info = assert(sb:get_info())
    assert.are.equal(sb.id, info.sandbox_id)
    assert.are.equal("running", info.state)
    assert.are.equal("lua", info.metadata.suite)
    assert.are.equal("integer", math.type(info.started_at))
    assert.is_true(info.end_at > info.started_at)
  end)

  it("is listed, by metadata and state, following every page", function()
    local all = assert(asb.Sandbox.list{ metadata = { suite = "lua" } })
    local ids = {}
    for _, i in ipairs(all) do ids[i.sandbox_id] = true end
    assert.is_true(ids[sb.id])
    local paused = assert(asb.Sandbox.list{ state = "paused", metadata = { suite = "lua" } })
    for _, i in ipairs(paused) do assert.are_not.equal(sb.id, i.sandbox_id) end
    local one = assert(asb.Sandbox.list{ limit = 1 })
    assert.are.equal(1, #one)
  end)

  it("sets its timeout, answers is_running, gives hosts, URLs and metrics", function()
    assert.is_true(assert(sb:set_timeout(600000)))
    assert.is_true(assert(sb:is_running()))
    assert.matches("^8080%-" .. sb.id, assert(sb:get_host(8080)))
    assert.matches("^https?://", assert(sb:get_url(8080)))
    local loop = assert(sb:loopback_url(49983))
    assert.matches("^http://127%.0%.0%.1:%d+$", loop)
    assert.are.equal(loop, assert(sb:loopback_url(49983)))
    local metrics = assert(sb:get_metrics())
    assert.are.equal("table", type(metrics))
    for _, m in ipairs(metrics) do
      assert.are.equal("integer", math.type(m.sampled_at))
      assert.are.equal("number", type(m.cpu_used_pct))
    end
    assert.matches("^https?://", assert(sb:download_url("/etc/hostname")))
    assert.matches("^https?://", assert(sb:upload_url("/tmp/up")))
  end)

  -- A host program the Lua program starts reaches a loopback URL: curl
  -- through io.popen, as a user's script runs it (this process's
  -- environment and descriptors are curl's), one connection kept alive
  -- for several requests, and several curls at once; and a child holds
  -- none of the library's descriptors while its connections and a
  -- command's stream are open. (In the sanitizer tree such a curl once
  -- hung for good: it inherited LD_PRELOAD of the ASan runtime from
  -- lua5.4 — docs/development.md. `timeout` only stops a hang.)
  it("is reached by a host curl the program starts (loopback URL), which inherits no fd of the library", function()
    assert(sb.files:write("/tmp/www/index.txt", "from the sandbox"))
    local srv <close> = assert(sb.commands:start("exec python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/www"))
    assert.truthy(H.eventually(function()
      local r = sb.commands:run("python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:8000/index.txt\")'")
      return r and r.exit_code == 0
    end, 120), "the server in the sandbox did not start")
    local url = H.q(assert(sb:loopback_url(8000)) .. "/index.txt")
    local function sh(cmd)
      local p = assert(io.popen(cmd .. " 2>&1"))
      local out = p:read("a")
      local _, _, code = p:close()
      return out, code
    end
    local out, code = sh("timeout -k 5 120 curl -sS " .. url)
    assert(code == 0 and out == "from the sandbox",
           ("host curl: exit %s (124: it hung), output %q"):format(tostring(code), out))
    -- keep-alive: three requests, one connection
    out, code = sh("timeout -k 5 120 curl -sS -w ' %{num_connects}\\n' " .. url .. " " .. url .. " " .. url)
    assert.are.equal(0, code, out)
    assert.are.equal("from the sandbox 1\nfrom the sandbox 0\nfrom the sandbox 0\n", out)
    -- eight at once, each its own connection (each body one write)
    out, code = sh("for i in 1 2 3 4 5 6 7 8; do timeout -k 5 120 curl -sS " .. url .. " & done; wait")
    assert.are.equal(0, code, out)
    assert.are.equal(string.rep("from the sandbox", 8), out)
    assert.are.equal(FDS_AT_START, child_fds(), "a child inherits descriptors of the library")
  end)

  it("pauses and resumes, keeping its files", function()
    assert(sb.files:write("/tmp/kept", "still here"))
    assert.is_true(assert(sb:pause()))
    assert.is_false(H.ok(sb:pause()))
    assert.are.equal("paused", assert(sb:get_info()).state)
    assert.is_true(assert(sb:resume()))
    assert.are.equal("still here", assert(sb.files:read("/tmp/kept")))
  end)

  it("pauses without memory: files kept, booted again on resume", function()
    local boot0 = assert(sb.commands:run("cat /proc/sys/kernel/random/boot_id")).stdout
    assert.is_true(assert(sb:pause{ keep_memory = false }))
    assert.are.equal("filesystem", assert(sb:get_info()).pause_mode)
    assert.is_true(assert(sb:resume()))
    assert.are.equal("still here", assert(sb.files:read("/tmp/kept")))
    assert.are_not.equal(boot0, assert(sb.commands:run("cat /proc/sys/kernel/random/boot_id")).stdout)
  end)

  it("connects again by id, and attaches with its token", function()
    local again = assert(asb.Sandbox.connect(sb.id))
    assert.are.equal(sb.id, again.id)
    assert.are.equal("still here", assert(again.files:read("/tmp/kept")))
    again:close()
    assert.is_true(assert(sb:is_running()), "closing a second handle leaves it running")
  end)

  it("raises for programming errors", function()
    assert.has_error(function() sb.commands:run(42) end,
                     "commands:run: cmd must be a string (got number)")
    assert.has_error(function() sb.commands:run("true", { timeout = 5 }) end,
                     "commands:run: unknown option 'timeout'")
    assert.has_error(function() sb.files:read("/x", "text") end)
    assert.has_error(function() sb:set_timeout("soon") end)
    assert.has_error(function() asb.Sandbox.create{ template = 3 } end)
  end)
end)

describe("the error convention", function()
  it("returns nil, err for an unknown sandbox", function()
    local err = H.fails("ASB_ESANDBOXNOTFOUND", asb.Sandbox.connect("nosuchsandbox0000000"))
    assert.are.equal("Sandbox.connect", err.op)
    assert.are.equal(404, err.http_status)
    assert.is_false(H.ok(asb.Sandbox.kill("nosuchsandbox0000000")))
  end)

  it("returns nil, err for an unknown template", function()
    local v, err = asb.Sandbox.create{ template = "no-such-template" }
    assert.is_nil(v)
    assert.truthy(err.code == "ASB_ENOTFOUND" or err.code == "ASB_ETEMPLATE", tostring(err))
  end)

  it("returns nil, err when nothing listens (ECONNECTION) or the key is wrong (EAUTH)", function()
    local c = assert(asb.Client.new())
    local down = assert(asb.Client.new{ api_url = "http://127.0.0.1:1", max_retries = 0,
                                        autostart = false })
    H.fails("ASB_ECONNECTION", asb.Sandbox.create{ client = down })
    local wrong = assert(asb.Client.new{ api_url = c.api_url, api_key = "not-the-key" })
    local err = H.fails("ASB_EAUTH", asb.Sandbox.list{ client = wrong })
    assert.are.equal(401, err.http_status)
  end)

  it("with autostart = false, no engine running is ECONNECTION (nothing started)", function()
    local dir = os.getenv("ASB_TEST_STATE") .. "/no-engine"
    local out, ok = H.sh(("mkdir -p %s && ASB_STATE_DIR=%s %s -e %s"):format(H.q(dir), H.q(dir), H.LUA,
      H.q([[local asb = require "agent_sandbox"
            local v, err = asb.Sandbox.create{ autostart = false }
            io.write(tostring(v), " ", err.code)]])))
    assert.is_true(ok, out)
    assert.are.equal("nil ASB_ECONNECTION", out)
    assert.is_nil(io.open(dir .. "/engine.pid"), "no engine was started")
  end)

  it("returns nil, err (ESANDBOXGONE) from a killed sandbox's calls", function()
    local sb = H.sandbox()
    assert.is_true(assert(sb:kill()))
    assert.is_false(H.ok(sb:kill()))
    local v, err = sb.commands:run("true")
    assert.is_nil(v)
    H.fails("ASB_ESANDBOXGONE", v, err)
    assert.are.equal("killed", err.reason)
    sb:close()
  end)
end)

describe("handles", function()
  it("<close> kills the sandbox at the end of the scope", function()
    local id
    do
      local sb <close> = H.sandbox()
      id = sb.id
      assert.is_true(assert(sb:is_running()))
    end
    assert.are.equal("killed", H.fails("ASB_ESANDBOXGONE", asb.Sandbox.connect(id)).reason)
  end)

  it("<close> kills it when the scope ends with an error too", function()
    local id
    local ok = pcall(function()
      local sb <close> = H.sandbox()
      id = sb.id
      error("leaving early")
    end)
    assert.is_false(ok)
    assert.are.equal("killed", H.fails("ASB_ESANDBOXGONE", asb.Sandbox.connect(id)).reason)
  end)

  it("close() lets go of the handle only; a closed handle raises", function()
    local sb = H.sandbox()
    local id = sb.id
    sb:close()
    sb:close()
    assert.is_false(sb:is_open())
    assert.are.equal("agent_sandbox.Sandbox(" .. id .. ", closed)", tostring(sb))
    assert.has_error(function() sb:is_running() end, "agent_sandbox: the sandbox is closed")
    assert.has_error(function() sb.files:read("/etc/hostname") end)
    local again = assert(asb.Sandbox.connect(id))
    assert.is_true(assert(again:kill()))
  end)

  it("__gc releases a forgotten handle; the sandbox and its children stay usable", function()
    local sb = H.sandbox()
    local id, files = sb.id, sb.files
    sb = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    -- the Files object keeps its sandbox alive
    assert.are.equal(id, files.sandbox.id)
    assert(files:write("/tmp/alive", "yes"))
    files = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    local again = assert(asb.Sandbox.connect(id))
    assert.are.equal("yes", assert(again.files:read("/tmp/alive")))
    assert(again:kill())
  end)

  it("keeps its client alive", function()
    local c = assert(asb.Client.new())
    local sb = H.sandbox({ client = c })
    c = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.is_true(assert(sb:is_running()))
    assert.are.equal(asb.Client, getmetatable(sb.client))
    assert(sb:kill())
  end)
end)
