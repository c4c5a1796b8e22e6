"""sandbox.files: read (text/bytes/stream), write (str/bytes/file object),
write_files, list, exists, get_info, remove, rename, make_dir, watch_dir.
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import io
import os

import pytest

from agent_sandbox import (
    EntryInfo,
    FileNotFoundException,
    FilesystemEventType,
    FileType,
    NotFoundException,
)
from conftest import eventually


async def test_write_and_read(sandbox):
    info = await sandbox.files.write("/tmp/data.txt", "content")
    assert isinstance(info, EntryInfo)
    assert info.name == "data.txt" and info.path == "/tmp/data.txt" and info.type == FileType.FILE
    assert await sandbox.files.read("/tmp/data.txt") == "content"
    assert await sandbox.files.read("/tmp/data.txt", format="bytes") == b"content"
    assert await sandbox.files.read_text("/tmp/data.txt") == "content"
    blob = bytes(range(256)) * 10
    await sandbox.files.write("/tmp/blob", blob)
    assert await sandbox.files.read_bytes("/tmp/blob") == blob


async def test_relative_paths_and_users(sandbox):
    await sandbox.files.write("rel/notes.txt", "in home")
    assert (await sandbox.commands.run("cat /home/user/rel/notes.txt")).stdout == "in home"
    info = await sandbox.files.get_info("rel/notes.txt")
    assert info.owner == "user"
    await sandbox.files.write("/root/secret", "r", user="root")
    assert (await sandbox.files.get_info("/root/secret", user="root")).owner == "root"
    with pytest.raises(Exception):
        await sandbox.files.read("/root/secret")  # user may not read root's home


async def test_large_round_trip_and_stream(sandbox):
    data = os.urandom(1 << 20)
    await sandbox.files.write("/tmp/big", data)
    assert await sandbox.files.read("/tmp/big", format="bytes") == data
    stream = await sandbox.files.read("/tmp/big", format="stream")
    chunks = [c async for c in stream]
    assert len(chunks) >= 1 and b"".join(chunks) == data
    async with await sandbox.files.read("/tmp/big", format="stream") as s:
        first = await s.__anext__()
        assert data.startswith(first)
    # gzip both ways
    await sandbox.files.write("/tmp/big.gz-transfer", data, gzip=True)
    assert await sandbox.files.read("/tmp/big.gz-transfer", format="bytes", gzip=True) == data


async def test_write_from_file_object(sandbox, tmp_path):
    p = tmp_path / "local.bin"
    data = os.urandom(300_000)
    p.write_bytes(data)
    with open(p, "rb") as f:
        info = await sandbox.files.write("/tmp/from-file", f)
    assert info.size == len(data) or info.path == "/tmp/from-file"
    assert await sandbox.files.read_bytes("/tmp/from-file") == data
    await sandbox.files.write("/tmp/from-bytesio", io.BytesIO(b"bytesio"))
    assert await sandbox.files.read("/tmp/from-bytesio") == "bytesio"


async def test_write_files(sandbox):
    infos = await sandbox.files.write_files([
        {"path": "/tmp/many/a.txt", "data": "A"},
        {"path": "/tmp/many/b.bin", "data": b"\x00B"},
        ("/tmp/many/c.txt", io.BytesIO(b"C")),
    ])
    assert sorted(i.name for i in infos) == ["a.txt", "b.bin", "c.txt"]
    assert await sandbox.files.read("/tmp/many/b.bin", format="bytes") == b"\x00B"


async def test_list_exists_info_remove_rename_make_dir(sandbox):
    assert await sandbox.files.make_dir("/tmp/tree/sub") is True
    assert await sandbox.files.make_dir("/tmp/tree/sub") is False
    await sandbox.files.write("/tmp/tree/sub/f.txt", "12345")
    await sandbox.files.write("/tmp/tree/top.txt", "t")
    names = sorted(e.name for e in await sandbox.files.list("/tmp/tree"))
    assert names == ["sub", "top.txt"]
    deep = sorted(e.path for e in await sandbox.files.list("/tmp/tree", depth=2))
    assert "/tmp/tree/sub/f.txt" in deep
    info = await sandbox.files.get_info("/tmp/tree/sub/f.txt")
    assert info.size == 5 and info.type == FileType.FILE and info.permissions.startswith("-rw")
    assert info.modified_time is not None
    assert (await sandbox.files.get_info("/tmp/tree/sub")).type == FileType.DIR
    assert await sandbox.files.exists("/tmp/tree/top.txt") is True
    moved = await sandbox.files.rename("/tmp/tree/top.txt", "/tmp/tree/moved.txt")
    assert moved.path == "/tmp/tree/moved.txt"
    assert await sandbox.files.exists("/tmp/tree/top.txt") is False
    await sandbox.files.remove("/tmp/tree")
    assert await sandbox.files.exists("/tmp/tree") is False


async def test_symlink_entry(sandbox):
    await sandbox.commands.run("ln -sf /etc/hostname /tmp/link")
    entries = {e.name: e for e in await sandbox.files.list("/tmp")}
    assert entries["link"].type == FileType.SYMLINK or entries["link"].symlink_target


async def test_not_found(sandbox):
    with pytest.raises(FileNotFoundException):
        await sandbox.files.read("/tmp/does-not-exist")
    with pytest.raises(NotFoundException):
        await sandbox.files.get_info("/tmp/does-not-exist")
    with pytest.raises(FileNotFoundException):
        await sandbox.files.list("/tmp/does-not-exist")
    stream = await sandbox.files.read("/tmp/does-not-exist", format="stream")
    with pytest.raises(FileNotFoundException):
        await stream.read()


async def test_watch_dir(sandbox):
    await sandbox.files.make_dir("/tmp/watched")
    events = []
    seen = asyncio.Event()

    async def on_event(ev):
        events.append(ev)
        if ev.name == "last.txt":
            seen.set()

    h = await sandbox.files.watch_dir("/tmp/watched", on_event, recursive=True)
    await sandbox.files.write("/tmp/watched/one.txt", "1")
    await sandbox.commands.run("mkdir -p /tmp/watched/d && echo 2 > /tmp/watched/d/two.txt")
    await sandbox.files.write("/tmp/watched/last.txt", "x")
    await asyncio.wait_for(seen.wait(), 30)
    await h.stop()
    names = {e.name for e in events}
    assert {"one.txt", "d/two.txt", "last.txt"} <= names
    assert FilesystemEventType.CREATE in {e.type for e in events}


def test_watch_dir_blocking(sync_sandbox):
    sync_sandbox.files.make_dir("/tmp/watched-sync")
    h = sync_sandbox.files.watch_dir("/tmp/watched-sync", include_entry=True)
    sync_sandbox.files.write("/tmp/watched-sync/a.txt", "a")
    got = []
    assert eventually(lambda: got.extend(h.get_new_events()) or any(e.name == "a.txt" for e in got))
    ev = [e for e in got if e.name == "a.txt"][0]
    assert ev.entry is None or ev.entry.name == "a.txt"
    h.stop()


def test_watch_dir_polling(sync_sandbox):
    """A polling watch: each poll has every change made before it, with no
    waiting, and only what is new."""
    sync_sandbox.files.make_dir("/tmp/watched-poll")
    h = sync_sandbox.files.watch_dir("/tmp/watched-poll", recursive=True, polling=True)
    assert h.get_new_events() == []
    for i in range(10):
        sync_sandbox.files.write(f"/tmp/watched-poll/f{i}", "a")
        got = {(e.type, e.name) for e in h.get_new_events()}
        assert (FilesystemEventType.CREATE, f"f{i}") in got, got
        assert (FilesystemEventType.WRITE, f"f{i}") in got, got
    sync_sandbox.commands.run("mkdir /tmp/watched-poll/d && echo 2 > /tmp/watched-poll/d/two")
    names = {e.name for e in h.get_new_events()}
    assert {"d", "d/two"} <= names, names
    assert h.get_new_events() == []
    sync_sandbox.files.write("/tmp/watched-poll/late", "b")
    assert [e.name for e in h.get_new_events()][:1] == ["late"]
    h.stop()
    assert h.get_new_events() == []


def test_blocking_stream(sync_sandbox):
    sync_sandbox.files.write("/tmp/s.bin", b"x" * 200_000)
    with sync_sandbox.files.read("/tmp/s.bin", format="stream") as s:
        assert b"".join(s) == b"x" * 200_000
    s = sync_sandbox.files.read("/tmp/s.bin", format="stream")
    next(s)
    s.close()  # stops early without hanging


def test_file_twins(sandbox):
    sandbox.files.write_sync("/tmp/twin", "t")
    assert sandbox.files.read_sync("/tmp/twin") == "t"
    assert sandbox.files.exists_sync("/tmp/twin")
