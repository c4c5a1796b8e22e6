"""Volume mounts through the Python binding: ``volume_mounts`` of
``Sandbox.create`` (sync and async) and of ``agent_sandbox.compat``, on a
volume made with E2B's /volumes API. Two sandboxes share it; a bad mount is
the engine's 400 as InvalidArgumentException. And the Volume classes
(agent_sandbox.Volume / VolumeSync over asb_volume*, compat's E2B-named
Volume / AsyncVolume): create, connect, list, destroy, every file call,
a volume written from Python and from a sandbox that mounts it; a volume
from its token (VolumeSync.from_token, E2B's Volume(volume_id, name, token))
and E2B's volume exception classes; a sandbox info's lifecycle and
volume_mounts (E2B's SandboxInfo), from get_info and from the list.
SPDX-License-Identifier: Apache-2.0"""

import json
import os
import urllib.request

import pytest

from agent_sandbox import (AuthenticationException, InvalidArgumentException,
                           NotFoundException, Sandbox, SandboxException, SandboxSync, Volume,
                           VolumeNotFoundException, VolumePathNotFoundException, VolumeSync)
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


async def test_info_lifecycle_and_volume_mounts(engine, volume):
    name = volume["name"]
    with SandboxSync.create(timeout=120, volume_mounts={"/mnt/v": name}) as sb:
        info = sb.get_info()
        assert info.volume_mounts == [{"name": name, "path": "/mnt/v"}]
        assert info.lifecycle == {"on_timeout": "kill", "auto_resume": False}
        listed = [i for i in SandboxSync.list() if i.sandbox_id == sb.sandbox_id]
        assert [i.volume_mounts for i in listed] == [[{"name": name, "path": "/mnt/v"}]]
        assert listed[0].lifecycle is None  # E2B's ListedSandbox has none
        # compat: E2B's SandboxInfo fields, on the instance and by id
        ci = compat.Sandbox.get_info(sb.sandbox_id)
        assert (ci.lifecycle, ci.volume_mounts) == (info.lifecycle, info.volume_mounts)
    async with await compat.AsyncSandbox.create(
            timeout=120, lifecycle={"on_timeout": "pause", "auto_resume": True}) as a:
        ai = await a.get_info()
        assert ai.lifecycle == {"on_timeout": "pause", "auto_resume": True}
        assert ai.volume_mounts == []


def test_volume_from_token(engine, volume):
    token = VolumeSync.connect(volume["name"]).token
    # no API call, and no API key needed: the content API takes the token
    v = VolumeSync.from_token(volume["volumeID"], volume["name"], token, api_url=engine.url,
                              sandbox_url=engine.url, api_key="not-the-key")
    assert (v.volume_id, v.name, v.token, v.size_mb) == (volume["volumeID"], volume["name"],
                                                         token, 0)
    v.write_file("/tok.txt", "by-token", force=True)
    assert VolumeSync.connect(volume["name"]).read_file("/tok.txt") == "by-token"
    with pytest.raises(VolumePathNotFoundException):
        v.read_file("/no-such-file")
    with pytest.raises(AuthenticationException):
        VolumeSync.from_token(volume["volumeID"], None, "wrong-token").exists("/")
    with pytest.raises(InvalidArgumentException):
        VolumeSync.from_token(volume["volumeID"], "n", "")
    with pytest.raises(VolumeNotFoundException):  # also a NotFoundException, as E2B's
        VolumeSync.connect("no-such-volume")
    # E2B's constructor, sync and async, in compat
    cv = compat.Volume(volume["volumeID"], volume["name"], token)
    assert cv.read_file("/tok.txt") == "by-token" and cv.name == volume["name"]
    with pytest.raises(compat.VolumePathNotFoundException):
        cv.get_info("/no-such-file")
    with pytest.raises(compat.VolumeNotFoundException):
        compat.Volume.connect("no-such-volume")
    with pytest.raises(InvalidArgumentException, match="token"):
        compat.Volume(volume["volumeID"], volume["name"])
    # anything else is E2B's VolumeException ("<status>: <message>"), which
    # is not a SandboxException (as E2B's); credentials errors keep theirs
    cv.write_file("/tok.txt", "x", force=True)
    with pytest.raises(compat.VolumeException, match="^409: ") as ei:
        cv.write_file("/tok.txt", "again")
    assert not isinstance(ei.value, compat.SandboxException)
    # a name the engine refuses is a 400: InvalidArgumentException, as E2B's
    # handle_api_exception makes it (create goes through e2b.api's post_volumes)
    with pytest.raises(InvalidArgumentException, match="name"):
        compat.Volume.create("bad/name")
    with pytest.raises(AuthenticationException):
        compat.Volume(volume["volumeID"], volume["name"], "wrong-token").exists("/")
    v.remove("/tok.txt")


async def test_async_volume_from_token(engine, volume):
    token = VolumeSync.connect(volume["name"]).token
    av = compat.AsyncVolume(volume["volumeID"], volume["name"], token)
    await av.write_file("/atok.txt", "a", force=True)
    assert await av.read_file("/atok.txt") == "a"
    nv = Volume.from_token(volume["volumeID"], volume["name"], token)
    assert await nv.exists("/atok.txt")
    await nv.remove("/atok.txt")


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


def test_volume_sync_calls(engine):
    name = f"py-vs-{os.getpid()}"
    with pytest.raises(InvalidArgumentException):
        VolumeSync.create("bad/name")
    v = VolumeSync.create(name, size_mb=32)
    try:
        assert (v.name, v.size_mb) == (name, 32) and v.volume_id and v.token
        with pytest.raises(SandboxException, match="exists|taken"):
            VolumeSync.create(name)
        assert VolumeSync.connect(name).volume_id == v.volume_id
        info = VolumeSync.get_info(v.volume_id)
        assert (info.name, info.token) == (name, v.token)
        assert any(i.volume_id == v.volume_id and i.size_mb == 32 for i in VolumeSync.list())
        with pytest.raises(NotFoundException):
            VolumeSync.connect("no-such-volume")

        e = v.write_file("/a.bin", b"\x00\xffhi", uid=1000, gid=1000)
        assert (e.type, e.path, e.size, e.uid, e.mode) == ("file", "/a.bin", 4, 1000, 0o644)
        assert v.read_file("/a.bin", format="bytes") == b"\x00\xffhi"
        with pytest.raises(SandboxException):
            v.write_file("/a.bin", "again")
        v.write_file("/a.bin", "again", force=True, uid=1000, gid=1000)
        assert v.read_file("/a.bin") == "again"
        with pytest.raises(NotFoundException):
            v.make_dir("/d/e")
        assert v.make_dir("/d/e", force=True, mode=0o700).mode == 0o700
        assert v.exists("/d/e") and not v.exists("/d/x")
        assert {x.path for x in v.list("/", depth=2)} == {"/a.bin", "/d", "/d/e"}
        u = v.update_metadata("/a.bin", mode=0o600)
        assert (u.mode, u.uid) == (0o600, 1000)
        assert v.get_info("/d").type == "directory"
        v.remove("/d")
        assert not v.exists("/d/e")
        with pytest.raises(NotFoundException):
            v.read_file("/d/e")
    finally:
        assert VolumeSync.destroy(name) is True
    assert VolumeSync.destroy(name) is False


async def test_volume_async_and_mount(engine):
    v = await Volume.create(f"py-va-{os.getpid()}", size_mb=32)
    try:
        await v.write_file("/in.txt", "from-python\n", uid=1000, gid=1000)
        async with await Sandbox.create(timeout=120, volume_mounts={"/mnt/v": v}) as sb:
            r = await sb.commands.run("cat /mnt/v/in.txt; echo from-sandbox > /mnt/v/out.txt")
            assert r.stdout == "from-python\n"
            with pytest.raises(SandboxException, match="mounted"):
                await Volume.destroy(v.volume_id)
        assert await v.read_file("/out.txt") == "from-sandbox\n"
        assert (await v.get_info("/out.txt")).uid == 1000
        assert sorted(e.name for e in await v.list("/")) == ["in.txt", "out.txt"]
        assert v.name in [i.name for i in await Volume.list()]
    finally:
        assert await Volume.destroy(v.volume_id)


async def test_compat_volume_names(engine):
    name = f"py-vc-{os.getpid()}"
    vol = compat.Volume.create(name, request_timeout=30)
    try:
        assert vol.write_file("/x.txt", "hi").path == "/x.txt"
        assert compat.Volume.connect(vol.volume_id).read_file("/x.txt") == "hi"
        assert compat.Volume.get_info(name).volume_id == vol.volume_id
        assert vol.get_info("/x.txt").size == 2
        assert name in [i.name for i in compat.Volume.list()]
        with pytest.raises(TypeError):
            compat.Volume.list(no_such_option=1)
        avol = await compat.AsyncVolume.connect(name)
        assert await avol.exists("/x.txt")
        assert [e.path for e in await avol.list("/") if e.path == "/x.txt"] == ["/x.txt"]
    finally:
        assert compat.Volume.destroy(name) is True


async def test_compat_volume_errors_types_and_stream(engine):
    """E2B's volume exceptions (a conflict is VolumeException, not a
    SandboxException; a missing path VolumePathNotFoundException; a missing
    volume VolumeNotFoundException), VolumeFileType, format="stream"."""
    name = f"py-ve-{os.getpid()}"
    vol = compat.Volume.create(name)
    try:
        vol.write_file("/s.bin", b"x" * 70000)
        with pytest.raises(compat.VolumeException) as exc:
            vol.write_file("/s.bin", "again")
        assert not isinstance(exc.value, SandboxException)
        with pytest.raises(compat.VolumeException):
            vol.make_dir("/")
        with pytest.raises(compat.VolumePathNotFoundException):
            vol.read_file("/none")
        with pytest.raises(compat.VolumePathNotFoundException):
            vol.remove("/none")
        with pytest.raises(compat.VolumeNotFoundException):
            compat.Volume.connect("no-such-volume")
        info = vol.get_info("/s.bin")
        assert info.type is compat.VolumeFileType.FILE and info.type.value == "file"
        assert vol.get_info("/").type == "directory"
        chunks = list(vol.read_file("/s.bin", format="stream"))
        assert len(chunks) > 1 and b"".join(chunks) == b"x" * 70000
        avol = await compat.AsyncVolume.connect(name)
        got = [c async for c in await avol.read_file("/s.bin", format="stream")]
        assert b"".join(got) == b"x" * 70000
        with pytest.raises(compat.VolumePathNotFoundException):
            await avol.get_info("/none")
    finally:
        assert compat.Volume.destroy(name) is True


def test_compat_volume_crud_through_e2b_api(engine):
    """compat's Volume.create/connect/get_info/list/destroy are calls of
    e2b.api's volumes endpoints (E2B's generated-client names): against
    the engine their answers are E2B's status codes and models, and the
    Volume a create or connect makes does its file calls with the token
    the answer carried."""
    from agent_sandbox.compat.api.client.api.volumes import (delete_volumes_volume_id,
                                                             get_volumes, get_volumes_volume_id,
                                                             post_volumes)
    from agent_sandbox.compat.api.client.models import NewVolume, VolumeAndToken
    from agent_sandbox.compat.api.client_sync import get_api_client

    client = get_api_client(compat.ConnectionConfig())
    name = f"py-vapi-{os.getpid()}"
    res = post_volumes.sync_detailed(client=client, body=NewVolume(name=name, size_mb=16))
    assert int(res.status_code) == 201 and isinstance(res.parsed, VolumeAndToken)
    vid = res.parsed.volume_id
    try:
        assert res.parsed.name == name and res.parsed.token and res.parsed.size_mb == 16
        got = get_volumes_volume_id.sync_detailed(vid, client=client)
        assert int(got.status_code) == 200 and got.parsed.token == res.parsed.token
        assert name in [v.name for v in get_volumes.sync_detailed(client=client).parsed]
        assert int(get_volumes_volume_id.sync_detailed("no-such-volume",
                                                       client=client).status_code) == 404
        assert VolumeAndToken.from_dict(res.parsed.to_dict()) == res.parsed
        vol = compat.Volume.connect(vid)
        assert (vol.volume_id, vol.name, vol.token) == (vid, name, res.parsed.token)
        vol.write_file("/c.txt", "crud")
        assert compat.Volume(vid, name, vol.token).read_file("/c.txt") == "crud"
        info = compat.Volume.get_info(vid)
        assert (info.name, info.token, info.size_mb, info.domain) == (name, vol.token, 16, None)
        # no domain in the engine's answer: E2B's fallback, the connection's
        assert vol._domain == compat.ConnectionConfig().domain
        assert vol._get_volume_config(proxy="http://127.0.0.1:1").proxy == "http://127.0.0.1:1"
        assert isinstance(vol._get_volume_config(), compat.VolumeConnectionConfig)
        assert "VolumeConnectionConfig" in compat.__all__ and "VolumeApiParams" in compat.__all__
    finally:
        assert int(delete_volumes_volume_id.sync_detailed(vid, client=client).status_code) == 204
    assert int(delete_volumes_volume_id.sync_detailed(vid, client=client).status_code) == 404
    assert compat.Volume.destroy(vid) is False
    with pytest.raises(compat.VolumeNotFoundException, match=f"Volume {vid} not found"):
        compat.Volume.get_info(vid)


async def test_compat_volume_answers_replaced(engine, monkeypatch):
    """A program (E2B's tests do) that replaces an e2b.api volumes endpoint
    gets its answer through compat's Volume and AsyncVolume: the model's
    id, name, token and BYOC domain (which then names the content API in
    _get_volume_config, as in E2B), a 404 as VolumeNotFoundException /
    False, the instance's proxy."""
    from http import HTTPStatus

    from agent_sandbox.compat.api.client.api.volumes import (delete_volumes_volume_id,
                                                             get_volumes_volume_id,
                                                             post_volumes)
    from agent_sandbox.compat.api.client.models import VolumeAndToken
    from agent_sandbox.compat.api.client.types import Response

    made = []

    def post(*, client, body):
        made.append(body.name)
        return Response(status_code=HTTPStatus(201), content=b"", headers={},
                        parsed=VolumeAndToken.from_dict({"volumeID": "vol-x", "name": body.name,
                                                         "token": "tok-x",
                                                         "domain": "cluster.example.com"}))

    def missing(volume_id, *, client):
        return Response(status_code=HTTPStatus(404), content=b"", headers={}, parsed=None)

    async def apost(*, client, body):
        return post(client=client, body=body)

    async def amissing(volume_id, *, client):
        return missing(volume_id, client=client)

    monkeypatch.setattr(post_volumes, "sync_detailed", post)
    monkeypatch.setattr(post_volumes, "asyncio_detailed", apost)
    monkeypatch.setattr(get_volumes_volume_id, "sync_detailed", missing)
    monkeypatch.setattr(get_volumes_volume_id, "asyncio_detailed", amissing)
    monkeypatch.setattr(delete_volumes_volume_id, "sync_detailed", missing)
    monkeypatch.setattr(delete_volumes_volume_id, "asyncio_detailed", amissing)
    vol = compat.Volume.create("byoc", proxy="http://127.0.0.1:8080")
    assert (vol.volume_id, vol.name, vol.token) == ("vol-x", "byoc", "tok-x")
    assert vol._domain == "cluster.example.com" and vol._proxy == "http://127.0.0.1:8080"
    cfg = vol._get_volume_config()
    assert (cfg.domain, cfg.api_url, cfg.proxy) == ("cluster.example.com",
                                                    "https://api.cluster.example.com",
                                                    "http://127.0.0.1:8080")
    avol = await compat.AsyncVolume.create("abyoc")
    assert (avol.volume_id, avol.name, avol._domain) == ("vol-x", "abyoc", "cluster.example.com")
    assert made == ["byoc", "abyoc"]
    with pytest.raises(compat.VolumeNotFoundException):
        compat.Volume.get_info("vol-x")
    with pytest.raises(compat.VolumeNotFoundException):
        await compat.AsyncVolume.connect("vol-x")
    assert compat.Volume.destroy("vol-x") is False
    assert await compat.AsyncVolume.destroy("vol-x") is False
