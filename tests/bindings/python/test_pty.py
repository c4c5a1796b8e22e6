"""sandbox.pty: create, type into it, resize, kill.
SPDX-License-Identifier: Apache-2.0"""

import asyncio

from agent_sandbox import PtySize


async def test_pty_roundtrip(sandbox):
    out = bytearray()
    got = asyncio.Event()

    def on_data(b: bytes):
        out.extend(b)
        if b"marker-42" in out:
            got.set()

    h = await sandbox.pty.create(PtySize(rows=30, cols=100), on_data)
    assert h.pid > 0
    await sandbox.pty.send_stdin(h.pid, b"stty size; echo marker-$((40+2))\n")
    await asyncio.wait_for(got.wait(), 30)
    assert b"30 100" in out
    await sandbox.pty.resize(h.pid, PtySize(rows=10, cols=40))
    out.clear()
    got.clear()
    await h.send_stdin(b"stty size; echo marker-$((41+1))\n")
    await asyncio.wait_for(got.wait(), 30)
    assert b"10 40" in out
    assert await sandbox.pty.kill(h.pid) is True
    r = await h.wait()
    assert r.exit_code != 0


def test_pty_blocking(sync_sandbox):
    out = bytearray()
    h = sync_sandbox.pty.create(PtySize(24, 80), on_data=out.extend, timeout=30)
    h.send_stdin(b"echo from-pty; exit 3\n")
    r = h.wait()
    assert b"from-pty" in out and r.exit_code == 3
