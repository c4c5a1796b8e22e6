-- run_code and code contexts (the code interpreter on port 49999).
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"

local sb
setup(function()
  sb = H.sandbox()
  assert(sb:run_code("1", { timeout_ms = 120000 })) -- the interpreter's first start
end)
teardown(function() if sb then sb:kill() end end)

describe("run_code", function()
  it("returns the value, the logs and the execution count", function()
    local ex = assert(sb:run_code("print(2 ** 10)"))
    assert.are.same({ "1024\n" }, ex.logs.stdout)
    assert.is_nil(ex.error)
    ex = assert(sb:run_code("2 ** 10"))
    assert.are.equal("1024", ex.text)
    assert.is_true(ex.results[1].is_main)
    assert.are.equal("1024", ex.results[1].text)
    assert.are.equal("integer", math.type(ex.execution_count))
  end)

  it("keeps state; code that raises is a result with an error", function()
    assert(sb:run_code("x = 41"))
    assert.are.equal("42", assert(sb:run_code("x + 1")).text)
    local ex = assert(sb:run_code("1 / 0"))
    assert.are.equal("ZeroDivisionError", ex.error.name)
    assert.matches("division", ex.error.value)
    assert.matches("ZeroDivisionError", ex.error.traceback)
  end)

  it("streams to callbacks; rich results carry every format", function()
    local out, results, errors = {}, {}, {}
    local ex = assert(sb.code:run("import sys\nprint('a')\nprint('b', file=sys.stderr)\n" ..
                                  "class H:\n    def _repr_html_(self): return '<b>hi</b>'\nH()", {
      on_stdout = function(s) out[#out + 1] = "out:" .. s end,
      on_stderr = function(s) out[#out + 1] = "err:" .. s end,
      on_result = function(r) results[#results + 1] = r end,
    }))
    assert.matches("out:a\n", table.concat(out))
    assert.matches("err:b\n", table.concat(out))
    assert.are.equal(1, #results)
    assert.are.equal("<b>hi</b>", results[1].html)
    assert.are.equal("<b>hi</b>", ex.results[1].html)
    local has = {}
    for _, f in ipairs(ex.results[1].formats) do has[f] = true end
    assert.is_true(has.html and has.text)
    assert(sb:run_code("raise ValueError('v')", { on_error = function(name, value, tb)
      errors[#errors + 1] = { name, value, tb }
    end }))
    assert.are.equal("ValueError", errors[1][1])
    assert.are.equal("v", errors[1][2])
  end)

  it("a callback that raises aborts the run (the cell is interrupted) and its error comes back", function()
    assert(sb:run_code("kept = 'state'"))
    local ok, err = pcall(sb.run_code, sb, "import time\nprint('x', flush=True)\ntime.sleep(30)",
                          { on_stdout = function() error("cell out") end })
    assert.is_false(ok)
    assert.matches("code_spec.lua:%d+: cell out", err)
    -- the interpreter interrupts the aborted cell only: the next one runs
    -- whole, on the same kernel and state
    local ex = assert(sb:run_code("kept"))
    assert.is_nil(ex.error)
    assert.are.equal("state", ex.text, "the kernel and its state stay")
  end)

  it("runs other languages and in contexts", function()
    local ex = assert(sb:run_code("echo from-bash", { language = "bash" }))
    assert.matches("from%-bash", (ex.text or "") .. table.concat(ex.logs.stdout))
    local ctx = assert(sb:create_code_context{ cwd = "/tmp" })
    assert.truthy(ctx.id)
    assert(sb:run_code("y = 'in ctx'", { context = ctx }))
    assert.are.equal("in ctx", assert(sb:run_code("y", { context = ctx })).text)
    assert.are.equal("/tmp", assert(sb:run_code("import os; os.getcwd()", { context = ctx.id })).text)
    local ids = {}
    for _, c in ipairs(assert(sb:list_code_contexts())) do ids[c.id] = true end
    assert.is_true(ids[ctx.id])
    assert(sb:restart_code_context(ctx))
    assert.are.equal("NameError", assert(sb:run_code("y", { context = ctx })).error.name)
    assert(sb:remove_code_context(ctx))
    H.fails("ASB_ENOTFOUND", sb:run_code("1", { context = ctx }))
    H.fails("ASB_EINVAL", sb:run_code("1", { context = "nope", language = "python" }))
  end)

  it("times out a cell (nil, err) and the context stays usable", function()
    H.fails("ASB_ETIMEOUT", sb:run_code("import time\ntime.sleep(30)", { timeout_ms = 500 }))
    assert.are.equal("3", assert(sb:run_code("1 + 2")).text)
  end)
end)
