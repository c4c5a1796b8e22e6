"""run_code and code contexts (the code interpreter on port 49999).
SPDX-License-Identifier: Apache-2.0"""

import asyncio

import pytest

from agent_sandbox import Context, Execution, ExecutionError, NotFoundException, Result


async def test_run_code_text(code_sandbox):
    r = await code_sandbox.run_code("print(2 ** 10)")
    assert isinstance(r, Execution)
    assert r.text == "1024"  # printed output when there is no value
    assert r.logs.stdout == ["1024\n"]
    r = await code_sandbox.run_code("2 ** 10")
    assert r.text == "1024" and r.results[0].is_main_result
    assert r.execution_count and r.error is None


async def test_state_persists_and_errors(code_sandbox):
    await code_sandbox.run_code("x = 41")
    assert (await code_sandbox.run_code("x + 1")).text == "42"
    r = await code_sandbox.run_code("1 / 0")
    assert isinstance(r.error, ExecutionError)
    assert r.error.name == "ZeroDivisionError" and "division" in r.error.value
    assert "ZeroDivisionError" in r.error.traceback


async def test_callbacks(code_sandbox):
    out, results, errors = [], [], []

    async def on_result(res):
        results.append(res)

    r = await code_sandbox.run_code(
        "import sys\nprint('a')\nprint('b', file=sys.stderr)\n{'k': 1}",
        on_stdout=out.append, on_stderr=out.append, on_result=on_result,
        on_error=errors.append)
    assert "a\n" in out and "b\n" in out
    assert results and isinstance(results[0], Result)
    assert r.results[0].text == "{'k': 1}"
    await code_sandbox.run_code("raise ValueError('v')", on_error=errors.append)
    assert errors and errors[0].name == "ValueError"


async def test_rich_results(code_sandbox):
    r = await code_sandbox.run_code(
        "class H:\n    def _repr_html_(self): return '<b>hi</b>'\nH()")
    assert r.results[0].html == "<b>hi</b>"
    assert "html" in r.results[0].formats()


async def test_contexts(code_sandbox):
    ctx = await code_sandbox.create_code_context(cwd="/tmp")
    assert isinstance(ctx, Context) and ctx.id
    await code_sandbox.run_code("y = 'in ctx'", context=ctx)
    assert (await code_sandbox.run_code("y", context=ctx)).text == "in ctx"  # E2B's interpreter strips a string's quotes
    assert (await code_sandbox.run_code("import os; os.getcwd()", context=ctx)).text == "/tmp"
    assert ctx.id in [c.id for c in await code_sandbox.list_code_contexts()]
    await code_sandbox.restart_code_context(ctx)
    r = await code_sandbox.run_code("y", context=ctx)
    assert r.error and r.error.name == "NameError"
    await code_sandbox.remove_code_context(ctx)
    with pytest.raises(NotFoundException):
        await code_sandbox.run_code("1", context=ctx)


async def test_other_languages(code_sandbox):
    r = await code_sandbox.run_code("echo from-bash", language="bash")
    assert "from-bash" in (r.text or "".join(r.logs.stdout))


async def test_cancel_interrupts_the_cell(code_sandbox):
    ctx = await code_sandbox.create_code_context()
    task = asyncio.ensure_future(code_sandbox.run_code("import time\nwhile True: time.sleep(0.1)",
                                                       context=ctx))
    await asyncio.sleep(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The kernel was interrupted: the context runs the next cell.
    r = await code_sandbox.run_code("'free'", context=ctx, timeout=60)
    assert r.text == "free"
    await code_sandbox.remove_code_context(ctx)


async def test_timeout_interrupts(code_sandbox):
    from agent_sandbox import TimeoutException

    ctx = await code_sandbox.create_code_context()
    with pytest.raises(TimeoutException):
        await code_sandbox.run_code("import time; time.sleep(60)", context=ctx, timeout=1)
    assert (await code_sandbox.run_code("1 + 1", context=ctx)).text == "2"


def test_blocking(code_sandbox):
    assert code_sandbox.run_code_sync("print(6 * 7)").text == "42"
    assert code_sandbox.sync.run_code("6 * 7").text == "42"
