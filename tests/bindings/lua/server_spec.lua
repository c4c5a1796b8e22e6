-- agent_sandbox.server: the lua-hello template (built in this run's engine,
-- its commands.lua serving on port 9000 inside a sandbox, called through
-- the engine) and a server in a child lua5.4 on a free loopback port,
-- called in debug mode: typed arguments, defaults, results, error replies,
-- hidden commands, handlers on the serving Lua thread, stop from a handler.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"

local TEMPLATE = H.BUILD .. "/examples/templates/lua-hello"

describe("the lua-hello template", function()
  local sb
  setup(function()
    local t = assert(asb.templates.build(TEMPLATE))
    assert.are.equal("lua-hello", t.name)
    sb = assert(asb.Sandbox.create{ template = "lua-hello", timeout_ms = 300000 })
  end)
  teardown(function()
    if sb then sb:kill() end
    asb.templates.delete("lua-hello")
  end)

  it("lists its commands with their typed arguments (hidden ones not)", function()
    local cmds = {}
    for _, c in ipairs(assert(sb:list_commands())) do cmds[c.name] = c end
    assert.is_nil(cmds.secret)
    assert.are.equal("Greets someone.", cmds.hello.description)
    assert.are.same({ name = "name", type = "string", required = false, default = "world",
                      description = "who to greet" }, cmds.hello.args[1])
    assert.are.same({ "integer", true }, { cmds.add.args[1].type, cmds.add.args[1].required })
    assert.are.same({ "float", "0.5" }, { cmds.add.args[2].type, cmds.add.args[2].default })
  end)

  it("runs them with typed arguments and defaults", function()
    assert.are.equal("Hello, Alice!", assert(sb:run("hello", { name = "Alice" })))
    assert.are.equal("Hello, world!", assert(sb:run("hello")))
    assert.are.equal(42.0, assert(sb:run("add", { a = 40, b = 2 })))
    assert.are.equal(3.5, assert(sb:run("add", { a = "3" }))) -- "3" coerced, b's default
    local s = assert(sb:run("stats", { values = { 1, 2, 3 }, label = "l" }))
    assert.are.same({ label = "l", count = 3, sum = 6, mean = 2.0 }, s)
    assert.are.equal("hidden but callable", assert(sb:run("secret")))
    local who = assert(sb:run("whoami"))
    assert.are.same({ "user", 1000, "whoami", "Lua 5.4" }, { who.user, who.uid, who.command, who.lua })
  end)

  it("answers errors as nil, err of each kind", function()
    local err = H.fails("ASB_ECOMMANDFAILED", sb:run("stats", { values = {} }))
    assert.are.equal("ValueError", err.remote_code)
    assert.matches("values must be a non%-empty list", err.message)
    H.fails("ASB_EINVAL", sb:run("add", { a = "x" }))
    H.fails("ASB_EINVAL", sb:run("add", {}))
    H.fails("ASB_EINVAL", sb:run("hello", { name = "x", extra = 1 }))
    assert.matches("available: hello, add, stats, whoami",
                   H.fails("ASB_ECOMMANDNOTFOUND", sb:run("nope")).message)
    -- arguments that are not JSON are the caller's mistake: raised
    assert.has_error(function() sb:run("hello", { name = print }) end)
  end)
end)

-- A server in a child lua5.4 (this process's Lua thread is blocked in the
-- client call while the server answers, so the server needs a thread of
-- its own: another process).
local CHILD = [[
local server = require "agent_sandbox.server"
local reg = server.Registry()
local srv
reg:command("echo", { args = { { "value", "json" } } }, function(a) return a.value end)
reg:command("where", {}, function(_, call)
  local co, main = coroutine.running()
  return { main = main, command = call.command }
end)
reg:command("boom", {}, function() error("plain failure") end)
reg:command("bad_result", {}, function() return { f = function() end } end)
reg:command("stop", {}, function() srv:stop(); return "stopping" end)
local err
srv, err = reg:listen(0, { host = "127.0.0.1", token = "" })
assert(srv, tostring(err))
assert(math.type(srv:fd()) == "integer" and srv:fd() >= 0)
assert(srv:poll() == 0) -- nothing waits: returns at once
local taken, terr = srv:next_call(0)
assert(taken == nil and terr.code == "ASB_ETIMEOUT")
io.write(srv:port(), "\n")
io.flush()
if arg[1] == "poll" then
  -- a host's event loop: between its other work it lets the server answer
  -- what waits (a loop with a real event loop would wait for srv:fd())
  local system = require "system"
  local answered = 0
  while true do
    local n, perr = srv:poll()
    if not n then
      io.write("polled ", answered, "; then ", perr.code, "\n")
      break
    end
    answered = answered + n
    if n == 0 then system.sleep(0.002) end
  end
else
  assert(srv:serve())
  local _, after = srv:next_call(0)
  io.write("served; then ", after.code, "\n")
end
srv:close()
]]

describe("a server in another process", function()
  local function child_server(mode)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(CHILD)
    f:close()
    local child = assert(io.popen(H.LUA .. " " .. H.q(path) .. " " .. mode, "r"))
    local port = math.tointeger(tonumber(child:read("l")))
    assert.truthy(port, "the child prints its port")
    local url = "http://127.0.0.1:" .. port
    local c = assert(asb.Client.new{ debug = true, sandbox_url = url })
    local sb = assert(asb.Sandbox.attach("local", { client = c }))
    local function run(name, args) return sb:run_command(name, args, { port = port }) end
    assert.are.same({ 1, "two", { three = true } }, assert(run("echo", { value = { 1, "two", { three = true } } })))
    assert.are.equal(asb.null, assert(run("echo", { value = asb.null })))
    assert.are.same({ main = true, command = "where" }, assert(run("where")))
    local err = H.fails("ASB_ECOMMANDFAILED", run("boom"))
    assert.are.equal("Error", err.remote_code)
    assert.matches("plain failure", err.message)
    assert.are.equal("TypeError", H.fails("ASB_ECOMMANDFAILED", run("bad_result")).remote_code)
    assert.are.equal("stopping", assert(run("stop")))
    local rest = child:read("a")
    local ok = child:close()
    os.remove(path)
    assert.is_true(ok, rest)
    sb:close()
    return rest
  end

  it("serves on its Lua thread until a handler stops it", function()
    assert.are.equal("served; then ASB_ECANCELED\n", child_server("serve"))
  end)

  it("answers from a host's loop with poll until a handler stops it", function()
    -- echo, echo, where, boom and bad_result counted by the polls that
    -- answered them; stop's is counted too when that poll returned before
    -- the server's stop took effect, else that poll returns nil, err (the
    -- server stopped) instead of its count
    assert.matches("^polled [56]; then ASB_ECANCELED\n$", child_server("poll"))
  end)

  it("returns nil, err for a port in use and a bad name; raises for mistakes", function()
    local server = require "agent_sandbox.server"
    local reg = server.Registry()
    reg:command("ok", {}, function() end)
    local a = assert(reg:listen(0, { host = "127.0.0.1" }))
    local err = select(2, reg:listen(a:port(), { host = "127.0.0.1" }))
    assert.are.equal("ASB_ECONNECTION", err.code)
    assert.matches("ASB_ECONNECTION", tostring(err))
    a:close()
    local bad = server.Registry()
    bad:command("1bad", {}, function() end)
    assert.are.equal("ASB_EINVAL", select(2, bad:listen(0)).code)
    assert.has_error(function() reg:command("ok", {}, function() end) end,
                     "server.command: 'ok' is registered already")
    assert.has_error(function() reg:command("t", { args = { { "x", "number" } } }, function() end) end)
    assert.has_error(function() reg:command("f", {}, "not a function") end)
  end)
end)
