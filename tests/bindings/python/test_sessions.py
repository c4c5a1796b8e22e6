"""Sessions (asb_session_*) from Python, across two processes.
SPDX-License-Identifier: Apache-2.0"""

import os
import subprocess
import sys
import textwrap

import pytest

from agent_sandbox import NotFoundException, Sandbox, SandboxNotFoundException, sessions


def _py(code: str, env) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


async def test_save_get_list_delete(engine):
    sb = await Sandbox.create()
    try:
        await sessions.save("py-one", sb, {"task": "triage"})
        await sb.save_session("py-two")
        info = await sessions.get("py-one")
        assert info.name == "py-one" and info.sandbox_id == sb.sandbox_id
        assert info.template == "base" and info.metadata["task"] == "triage"
        assert "task" in info.metadata and "other" not in info.metadata
        names = [s.name for s in await sessions.list_all()]
        assert {"py-one", "py-two"} <= set(names)
        again = await sessions.load("py-two")
        assert (await again.commands.run("echo back")).stdout == "back\n"
        await sessions.delete("py-two")
        with pytest.raises(NotFoundException):
            await sessions.get("py-two")
        with pytest.raises(NotFoundException):
            await sessions.delete("py-two")
        with pytest.raises(Exception):
            await sessions.save("bad name!", sb)
    finally:
        await sb.kill()
    with pytest.raises(SandboxNotFoundException):
        await sessions.load("py-one")  # the session stays; its sandbox is gone
    sessions.delete_sync("py-one")


def test_two_processes(engine):
    env = engine.env()
    sid = _py("""
        from agent_sandbox import Sandbox
        sb = Sandbox.create_sync(timeout=120)
        sb.files.write_sync("/tmp/note", "from the first process")
        sb.save_session_sync("cross-proc", {"by": "first"})
        print(sb.sandbox_id)
    """, env).strip()
    out = _py("""
        import asyncio
        from agent_sandbox import sessions
        async def main():
            info = await sessions.get("cross-proc")
            sb = await sessions.load("cross-proc")
            print(info.sandbox_id == sb.sandbox_id, info.metadata["by"])
            print(await sb.files.read("/tmp/note"))
            await sb.kill()
            await sessions.delete("cross-proc")
        asyncio.run(main())
    """, env)
    assert out.splitlines() == ["True first", "from the first process"]
    assert sid
