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


async def test_sudo_in_a_pty_keeps_the_terminal(sandbox):
    """sudo's command gets the caller's terminal as its stdio (issue 20):
    it sees a tty, its size, and what is typed reaches it."""
    out = bytearray()
    got = asyncio.Event()

    def on_data(b: bytes):
        out.extend(b)
        if b"done-7" in out:
            got.set()

    h = await sandbox.pty.create(PtySize(rows=33, cols=77), on_data)
    await sandbox.pty.send_stdin(
        h.pid, b"sudo sh -c 'test -t 0 && echo is-a-tty; stty size; read x; echo got-$x'\n")
    await sandbox.pty.send_stdin(h.pid, b"typed\n")
    await sandbox.pty.send_stdin(h.pid, b"echo uid-$(sudo id -u); echo done-$((3+4))\n")
    await asyncio.wait_for(got.wait(), 60)
    text = out.decode(errors="replace")
    assert "is-a-tty" in text and "33 77" in text and "got-typed" in text, text
    assert "uid-0" in text, text
    await sandbox.pty.kill(h.pid)
