-- Code in stateful kernels (the code interpreter): values, printed output,
-- errors, contexts, another language.
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local sb <close> = assert(asb.Sandbox.create{})

local ex = assert(sb:run_code("x = 6 * 7\nx", { timeout_ms = 120000 }))
print("value", ex.text)
ex = assert(sb:run_code("print('printed'); x + 1", { on_stdout = function(s) io.write("stdout: ", s) end }))
print("value", ex.text)

ex = assert(sb:run_code("1 / 0"))
print("raised", ex.error.name, ex.error.value)

local ctx = assert(sb:create_code_context{ cwd = "/tmp" })
assert(sb:run_code("import os; here = os.getcwd()", { context = ctx }))
print("context", assert(sb:run_code("here", { context = ctx })).text)
assert(sb:remove_code_context(ctx))

ex = assert(sb:run_code("echo from bash", { language = "bash" }))
io.write(table.concat(ex.logs.stdout))
