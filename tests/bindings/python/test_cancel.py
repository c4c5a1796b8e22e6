"""Cancellation: cancelling an awaiting task triggers the call's asb_cancel
token, so the remote call really stops; many concurrent coroutines on one
event loop. (No timing assertions: each test only checks what happened.)
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import threading
import time

import pytest

from agent_sandbox import CancelToken, OperationCancelledError, Sandbox
from conftest import eventually


DEADLINE = 120  # seconds; only ends a test that would hang


async def _running(sandbox, marker, n=1):
    """Wait until n commands with marker run (a cancel sent before its
    command started could leave the command running unseen)."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        procs = await sandbox.commands.list()
        if sum(marker in " ".join(p.args) for p in procs) >= n:
            return True
        await asyncio.sleep(0.05)
    return False


async def _cancel_after_start(sandbox, coro, marker):
    """Start coro, wait until the sandbox shows marker running, cancel it."""
    task = asyncio.ensure_future(coro)
    assert await _running(sandbox, marker)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelled_run_kills_the_command(sandbox):
    await _cancel_after_start(sandbox, sandbox.commands.run("sleep 1000 # cancel-me-1"),
                              "cancel-me-1")
    # The command is gone: the cancellation killed it.
    assert eventually(lambda: not any("cancel-me-1" in " ".join(p.args)
                                      for p in sandbox.commands.list_sync()))


async def test_cancelled_run_with_callbacks(sandbox):
    got = []
    coro = sandbox.commands.run("while :; do echo tick; sleep 0.05; done # cancel-me-2",
                                on_stdout=got.append)
    await _cancel_after_start(sandbox, coro, "cancel-me-2")
    assert eventually(lambda: not any("cancel-me-2" in " ".join(p.args)
                                      for p in sandbox.commands.list_sync()))


async def test_cancelled_wait_leaves_background_command(sandbox):
    h = await sandbox.commands.run("sleep 1000", background=True)
    t = asyncio.ensure_future(h.wait())
    await asyncio.sleep(0.1)
    t.cancel()
    with pytest.raises(asyncio.CancelledError):
        await t
    assert h.pid in [p.pid for p in await sandbox.commands.list()]  # still running
    assert await h.kill()


async def test_cancelled_file_stream(sandbox):
    await sandbox.files.write("/tmp/cancel-big", b"z" * (4 << 20))
    stream = await sandbox.files.read("/tmp/cancel-big", format="stream")
    await stream.__anext__()
    task = asyncio.ensure_future(stream.read())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await stream.aclose()


async def test_cancelled_create(engine):
    """A cancelled create returns promptly-cancelled and leaves no half-made
    handle; the engine stays usable."""
    task = asyncio.ensure_future(Sandbox.create(metadata={"cancelled": "create"}))
    await asyncio.sleep(0)
    task.cancel()
    try:
        sb = await task
    except asyncio.CancelledError:
        sb = None
    if sb is not None:  # it finished before the cancel landed
        await sb.kill()
    for info in await Sandbox.list(metadata={"cancelled": "create"}):
        await Sandbox.kill_by_id(info.sandbox_id)
    async with await Sandbox.create() as again:
        assert (await again.commands.run("echo ok")).stdout == "ok\n"


def test_cancel_token_blocking(sync_sandbox):
    tok = CancelToken()

    def cancel_once_running():
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end and not any(
                "cancel-me-3" in " ".join(p.args) for p in sync_sandbox.commands.list()):
            time.sleep(0.05)
        tok.cancel()

    threading.Thread(target=cancel_once_running, daemon=True).start()
    with pytest.raises(OperationCancelledError):
        with tok:
            sync_sandbox.commands.run("sleep 1000 # cancel-me-3")
    assert eventually(lambda: not any("cancel-me-3" in " ".join(p.args)
                                      for p in sync_sandbox.commands.list()))
    assert tok.cancelled
    tok.reset()
    with tok:
        assert sync_sandbox.commands.run("echo fine").stdout == "fine\n"


async def test_many_concurrent_coroutines(sandbox):
    n = 100
    results = await asyncio.gather(*(sandbox.commands.run(f"echo {i}") for i in range(n)))
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(n)]
    files = await asyncio.gather(*(sandbox.files.write(f"/tmp/conc/{i}", str(i)) for i in range(50)))
    assert len(files) == 50
    back = await asyncio.gather(*(sandbox.files.read(f"/tmp/conc/{i}") for i in range(50)))
    assert back == [str(i) for i in range(50)]


async def test_cancel_many_at_once(sandbox):
    tasks = [asyncio.ensure_future(sandbox.commands.run(f"sleep 1000 # mass-{i}"))
             for i in range(20)]
    assert await _running(sandbox, "mass-", 20)
    for t in tasks:
        t.cancel()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(d, asyncio.CancelledError) for d in done)
    assert eventually(lambda: not any("mass-" in " ".join(p.args)
                                      for p in sandbox.commands.list_sync()))
