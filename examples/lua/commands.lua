-- Commands: output as it arrives, exit codes, environment and directory,
-- stdin, background commands (their output pushed or pulled), and a callback
-- that stops a command.
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local sb <close> = assert(asb.Sandbox.create{})

-- Output streams to the callbacks (on this thread, inside the call).
local r = assert(sb.commands:run("for i in 1 2 3; do echo tick $i; done", {
  on_stdout = function(chunk) io.write("> ", chunk) end,
}))
print("exit", r.exit_code)

-- A non-zero exit is in the result; check = true makes it nil, err.
print("exit", assert(sb.commands:run("exit 3")).exit_code)
local _, err = sb.commands:run("exit 4", { check = true })
print(err.code, err.exit_code)

r = assert(sb.commands:run("echo $NAME from $(pwd)", { envs = { NAME = "hi" }, cwd = "/tmp" }))
io.write(r.stdout)
r = assert(sb.commands:run("tr a-z A-Z", { stdin = "shout\n" }))
io.write(r.stdout)

-- In the background: a handle to wait for, write to, kill.
local p = assert(sb.commands:start("read name; echo hello $name", { stdin = true }))
assert(p:send_stdin("Alice\n"))
io.write(assert(p:wait()).stdout)
-- Or pull a background command's output when you want it, chunk by chunk.
local q <close> = assert(sb.commands:start("echo out; echo err >&2"))
for data, kind in q:lines() do io.write(kind, ": ", data) end
local sleeper <close> = assert(sb.commands:start("sleep 600")) -- killed at the end of the scope
print("running", sleeper.pid)

-- A callback that raises stops the call; the error comes back to the caller.
local ok, why = pcall(sb.commands.run, sb.commands, "yes", {
  on_stdout = function() error("seen enough", 0) end,
})
print(ok, why)
