"""Snapshots and fork (docs/snapshots.md) through the Python binding
(async and blocking) and agent_sandbox.compat (E2B's names): the files of
that instant, forks' writes their own, lists, delete, errors.
SPDX-License-Identifier: Apache-2.0"""

import pytest

from agent_sandbox import InvalidArgumentException, Sandbox, SandboxNotFoundException, SandboxSync
from agent_sandbox import compat


async def test_native_snapshot_fork_list_delete(engine):
    async with await Sandbox.create(timeout=120) as sb:
        await sb.commands.run("echo one > /home/user/f")
        sid = await sb.create_snapshot("py-snap")
        assert sid == "py-snap:default"
        await sb.commands.run("echo two > /home/user/f")
        async with await Sandbox.create(template=sid, timeout=120) as c:
            assert (await c.commands.run("cat /home/user/f")).stdout == "one\n"
        f = await sb.fork(timeout=120, keep_processes=False)
        try:
            assert f.sandbox_id != sb.sandbox_id
            # an engine without --pause-criu: booted fresh on the files
            assert f.fork_mode == "files" and sb.fork_mode is None
            assert (await f.get_info()).fork_mode == "files"
            assert (await sb.get_info()).fork_mode is None
            assert (await f.commands.run("cat /home/user/f; echo fork > /home/user/f")).stdout == "two\n"
            assert (await sb.commands.run("cat /home/user/f")).stdout == "two\n"
        finally:
            await f.kill()
        assert await Sandbox.list_snapshots(sandbox_id=sb.sandbox_id) == ["py-snap:default"]
        assert await Sandbox.delete_snapshot(sid) is True
        assert await Sandbox.delete_snapshot(sid) is False
        assert await Sandbox.list_snapshots(name="py-snap") == []


def test_blocking_fork_of_a_killed_sandbox(engine):
    sb = SandboxSync.create(timeout=60)
    sb.kill()
    with pytest.raises(SandboxNotFoundException):
        sb.fork()
    with pytest.raises(SandboxNotFoundException):
        sb.fork_many(2)
    with pytest.raises(InvalidArgumentException):
        sb.fork_many(101)  # E2B's 1..100, refused before asking
    with pytest.raises(SandboxNotFoundException):
        sb.create_snapshot()


def test_compat_names(engine):
    sbx = compat.Sandbox.create(timeout=120)
    try:
        sbx.commands.run("echo c > /home/user/c")
        info = sbx.create_snapshot(name="py-compat-snap")
        assert isinstance(info, compat.SnapshotInfo)
        assert info.snapshot_id == "py-compat-snap:default" and info.names == [info.snapshot_id]
        by_id = compat.Sandbox.create_snapshot(sbx.sandbox_id)
        p = compat.Sandbox.list_snapshots(sandbox_id=sbx.sandbox_id)
        got = []
        while p.has_next:
            got += [s.snapshot_id for s in p.next_items()]
        assert sorted(got) == sorted([info.snapshot_id, by_id.snapshot_id])
        assert [s.snapshot_id for s in sbx.list_snapshots(name="py-compat-snap").next_items()] \
            == [info.snapshot_id]
        forks = sbx.fork(count=2, keep_processes=True)  # one call, two forks
        assert len(forks) == 2 and all(isinstance(f, compat.Sandbox) for f in forks)
        assert forks[0].sandbox_id != forks[1].sandbox_id
        for f in forks:
            assert f.fork_mode == "files"  # no --pause-criu: files, whatever was asked
            assert f.commands.run("cat /home/user/c").stdout == "c\n"
            f.kill()
        assert compat.Sandbox.delete_snapshot(info.snapshot_id) is True
        assert compat.Sandbox.delete_snapshot(by_id.snapshot_id) is True
        assert compat.Sandbox.delete_snapshot(info.snapshot_id) is False
    finally:
        sbx.kill()


async def test_compat_async(engine):
    sbx = await compat.AsyncSandbox.create(timeout=120)
    try:
        info = await sbx.create_snapshot()
        [f] = await sbx.fork()
        assert isinstance(f, compat.AsyncSandbox)
        assert f.fork_mode == "files" and sbx.fork_mode is None
        await f.kill()
        items = await compat.AsyncSandbox.list_snapshots(name=info.snapshot_id).next_items()
        assert [s.snapshot_id for s in items] == [info.snapshot_id]
        assert await compat.AsyncSandbox.delete_snapshot(info.snapshot_id) is True
    finally:
        await sbx.kill()
