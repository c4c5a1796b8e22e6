"""SandboxInfo.swap and pause_mode on an engine with a small --pause-swap
(docs/lifecycle.md): a sandbox holding 32 MiB in a process, paused with
memory, reports most of them swapped out of the RAM it had (async and sync
flavours, and agent_sandbox.compat's get_info); running again, or paused
without memory, it reports None (not zeros). The engine is this file's own
(--kill-on-exit: it kills the sandboxes and removes its swap file).
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import time

import pytest

from agent_sandbox import Sandbox, SandboxState, SandboxSwapInfo
from agent_sandbox import compat
from conftest import start_engine

MIB = 1 << 20

# A process holding 32 MiB of random bytes; /tmp/held once they are there.
HOLDER = ("python3 -c \"import os, time\n"
          "b = bytearray(os.urandom(32 << 20))\n"
          "open('/tmp/held', 'w').write('y')\n"
          "time.sleep(100000)\"")


@pytest.fixture(scope="module")
def engine():
    e = start_engine(("--pause-swap", "64M"))
    yield e
    e.stop()


async def test_memory_pause_reports_the_swap_then_none(engine):
    async with await Sandbox.create(timeout=300) as sb:
        assert (await sb.get_info()).swap is None  # running
        await sb.commands.run(HOLDER, background=True)

        end = time.monotonic() + 120  # the deadline only stops a hang
        while not await sb.files.exists("/tmp/held") and time.monotonic() < end:
            await asyncio.sleep(0.05)
        assert await sb.files.exists("/tmp/held")
        assert await sb.pause() is True
        info = await sb.get_info()
        assert info.state == SandboxState.PAUSED and info.pause_mode == "memory"
        sw = info.swap
        assert isinstance(sw, SandboxSwapInfo)
        assert sw.resident_before_bytes > 32 * MIB
        assert sw.swapped_bytes > 16 * MIB
        assert 0 <= sw.resident_bytes < sw.resident_before_bytes - 16 * MIB
        # the blocking flavour and the E2B-named surface read the same
        sync_info = sb.sync.get_info()
        assert sync_info.swap is not None and sync_info.swap.swapped_bytes > 16 * MIB
        c = compat.Sandbox.get_info(sb.sandbox_id)
        assert c.pause_mode == "memory" and c.swap is not None
        # a list's items never carry it (GET /sandboxes/{id} only)
        listed = [i for i in await Sandbox.list() if i.sandbox_id == sb.sandbox_id]
        assert len(listed) == 1 and listed[0].swap is None

        await sb.resume(timeout=300)
        info = await sb.get_info()
        assert info.state == SandboxState.RUNNING
        assert info.pause_mode is None and info.swap is None

        assert await sb.pause(keep_memory=False) is True
        info = await sb.get_info()
        assert info.pause_mode == "filesystem" and info.swap is None

