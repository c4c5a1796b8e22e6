"""Volume mounts through the Python binding: ``volume_mounts`` of
``Sandbox.create`` (sync and async) and of ``agent_sandbox.compat``, on a
volume made with E2B's /volumes API. Two sandboxes share it; a bad mount is
the engine's 400 as InvalidArgumentException.
SPDX-License-Identifier: Apache-2.0"""

import json
import os
import urllib.request

import pytest

from agent_sandbox import InvalidArgumentException, Sandbox, SandboxSync
from agent_sandbox import compat


def _volumes(engine, method, path, body=None):
    req = urllib.request.Request(engine.url + path, method=method,
                                 data=json.dumps(body).encode() if body else None,
                                 headers={"X-API-Key": engine.key,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return r.status, (json.loads(r.read() or b"null"))


@pytest.fixture(scope="module")
def volume(engine):
    name = f"py-vol-{os.getpid()}"
    st, v = _volumes(engine, "POST", "/volumes", {"name": name, "sizeMB": 32})
    assert st == 201
    yield v
    _volumes(engine, "DELETE", f"/volumes/{v['volumeID']}")


async def test_async_and_sync_share_a_volume(engine, volume):
    name = volume["name"]
    async with await Sandbox.create(timeout=120, volume_mounts={"/mnt/v": name}) as a:
        with SandboxSync.create(timeout=120, volume_mounts={"/home/user/v": volume["volumeID"]}) as b:
            await a.commands.run("echo from-async > /mnt/v/f")
            r = b.commands.run("cat /home/user/v/f; stat -c %U /home/user/v/f")
            assert r.stdout == "from-async\nuser\n"


def test_compat_volume_mounts(engine, volume):
    class Vol:  # E2B's Volume: its name is what is sent
        name = volume["name"]
    sb = compat.Sandbox.create(timeout=60, volume_mounts={"/data": Vol()})
    try:
        assert sb.commands.run("echo x > /data/c && cat /data/c").stdout == "x\n"
    finally:
        sb.kill()


def test_bad_mount_path(engine, volume):
    with pytest.raises(InvalidArgumentException, match="volume mount path"):
        SandboxSync.create(timeout=30, volume_mounts={"/proc/x": volume["name"]})
    with pytest.raises(TypeError):
        SandboxSync.create(timeout=30, volume_mounts={"/x": 3})
