-- A script in the style of E2B's Python SDK (agent_sandbox.compat): the same
-- names, called with a dot, seconds for times, E2B's exception classes.
-- SPDX-License-Identifier: Apache-2.0
local e2b = require "agent_sandbox.compat"

local sandbox <close> = assert(e2b.Sandbox.create{ timeout = 60 })
local result = assert(sandbox.commands.run("echo hello from an E2B program"))
io.write(result.stdout)
sandbox.files.write("/tmp/x.txt", "data")
print(sandbox.files.read("/tmp/x.txt"))

local _, err = sandbox.commands.run("exit 2")
if e2b.CommandExitException:is(err) then print("exit code", err.exit_code) end
local _, nf = sandbox.files.read("/missing")
print(nf.name)
