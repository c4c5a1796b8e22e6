"""Sandbox lifecycle: create/connect/list/kill/set_timeout/get_info/
is_running/pause/resume/get_metrics, context managers, errors.
SPDX-License-Identifier: Apache-2.0"""

import datetime as dt

import pytest

from agent_sandbox import (
    AuthenticationException,
    InvalidArgumentException,
    NotFoundException,
    Sandbox,
    SandboxException,
    SandboxInfo,
    SandboxNotFoundException,
    SandboxState,
    SandboxSync,
)


def _child_fds():
    """The sockets, pipes and anonymous inodes (eventfd, ...) a child of
    this process started with os.system (system(3): no close_fds) inherits,
    past 0-2: "<fd> -> <target>" lines."""
    import os
    import re
    import tempfile

    with tempfile.NamedTemporaryFile("r") as f:
        os.system("ls -l /proc/$$/fd > " + f.name)
        return sorted(m.group(1) + " -> " + m.group(2)
                      for m in re.finditer(r"(\d+) -> ((?:socket|pipe|anon_inode):\S*)", f.read())
                      if int(m.group(1)) > 2)


# before the library made any connection (pytest imports this file first)
_FDS_AT_IMPORT = _child_fds()


async def test_create_with_metadata_and_envs(engine):
    async with await Sandbox.create(template="base", timeout=120, metadata={"suite": "py", "n": "1"},
                                    envs={"GREETING": "hi"}) as sb:
        assert len(sb.sandbox_id) == 20 and sb.id == sb.sandbox_id
        assert sb.envd_version
        r = await sb.commands.run("echo $GREETING")
        assert r.stdout == "hi\n"
        info = await sb.get_info()
        assert isinstance(info, SandboxInfo)
        assert info.sandbox_id == sb.sandbox_id and info.template_id == "base"
        assert info.metadata == {"suite": "py", "n": "1"}
        assert info.state == SandboxState.RUNNING
        assert info.end_at > info.started_at
        assert (info.end_at - info.started_at) <= dt.timedelta(seconds=121)
        listed = await Sandbox.list(metadata={"suite": "py"})
        assert [i.sandbox_id for i in listed] == [sb.sandbox_id]
        sid = sb.sandbox_id
    # the context manager killed it
    assert await Sandbox.kill_by_id(sid) is False
    with pytest.raises(SandboxNotFoundException):
        await Sandbox.connect(sid)


async def test_connect_set_timeout_and_kill(engine):
    sb = await Sandbox.create(timeout=60)
    try:
        other = await Sandbox.connect(sb.sandbox_id)
        assert other.sandbox_id == sb.sandbox_id
        await other.files.write("/tmp/shared", "x")
        assert await sb.files.read("/tmp/shared") == "x"
        await sb.set_timeout(30)
        end = (await sb.get_info()).end_at
        assert end <= dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=31)
        assert await sb.is_running()
    finally:
        assert await sb.kill() is True
    assert await sb.kill() is False
    assert await sb.is_running() is False


async def test_pause_resume(engine):
    sb = await Sandbox.create()
    try:
        await sb.commands.run("echo kept > /tmp/state")
        assert await sb.pause() is True
        assert await sb.pause() is False
        info = await sb.get_info()
        assert info.state == SandboxState.PAUSED
        assert await sb.is_running() is False
        paused = await Sandbox.list(state="paused")
        assert sb.sandbox_id in [i.sandbox_id for i in paused]
        await sb.resume(timeout=60)
        assert (await sb.get_info()).state == SandboxState.RUNNING
        assert (await sb.commands.run("cat /tmp/state")).stdout == "kept\n"
        # connect resumes a paused sandbox too
        await sb.pause()
        again = await Sandbox.connect(sb.sandbox_id)
        assert (await again.commands.run("echo up")).stdout == "up\n"
    finally:
        await sb.kill()


async def test_metrics(sandbox):
    m = await sandbox.get_metrics()
    assert isinstance(m, list)
    for s in m:
        assert s.cpu_count > 0 and s.mem_total > 0


async def test_list_filters(engine):
    a = await Sandbox.create(metadata={"grp": "lf", "which": "a"})
    b = await Sandbox.create(metadata={"grp": "lf", "which": "b"})
    try:
        ids = {i.sandbox_id for i in await Sandbox.list(metadata={"grp": "lf"})}
        assert ids == {a.sandbox_id, b.sandbox_id}
        only_b = await Sandbox.list(metadata={"grp": "lf", "which": "b"})
        assert [i.sandbox_id for i in only_b] == [b.sandbox_id]
        assert len(await Sandbox.list(metadata={"grp": "lf"}, limit=1)) == 1
        assert {i.sandbox_id for i in await Sandbox.list(template="base", metadata={"grp": "lf"})} == ids
    finally:
        await a.kill()
        await b.kill()


def test_sync_flavours(engine):
    with SandboxSync.create() as sb:
        assert sb.commands.run("echo sync").stdout == "sync\n"
        assert sb.is_running()
        sid = sb.sandbox_id
    assert SandboxSync.kill_by_id(sid) is False
    with Sandbox.create_sync() as sb2:  # the async flavour's twins
        assert sb2.is_running_sync()
        assert sb2.get_info_sync().sandbox_id == sb2.sandbox_id
        assert sb2.sync.commands.run("echo x").stdout == "x\n"


async def test_errors(engine):
    with pytest.raises(NotFoundException):
        await Sandbox.create(template="no-such-template")
    with pytest.raises(SandboxNotFoundException):
        await Sandbox.connect("nosuchsandbox0000000")
    with pytest.raises(AuthenticationException) as ei:
        await Sandbox.create(api_url=engine.url, api_key="e2b_" + "0" * 40)
    assert ei.value.http_status == 401 and ei.value.status == "ASB_EAUTH"
    assert not isinstance(ei.value, SandboxException)  # as in E2B
    with pytest.raises(InvalidArgumentException):
        await Sandbox.create(api_url="not a url")


async def test_network_urls(sandbox):
    url = sandbox.network.get_url(3000)
    host = sandbox.network.get_host(3000)
    assert host == f"3000-{sandbox.sandbox_id}.{sandbox.sandbox_domain}"
    assert url == f"http://{host}"
    assert sandbox.get_url(8080).startswith("http://8080-")
    assert "X-Access-Token" in sandbox.network.get_access_headers()


async def test_port_is_reachable(sandbox):
    """A server in the sandbox is reachable at get_url(port)."""
    import urllib.request

    await sandbox.files.write("/tmp/www/index.txt", "served")
    h = await sandbox.commands.run("cd /tmp/www && exec python3 -m http.server 8765",
                                   background=True, timeout=0)
    try:
        host = sandbox.network.get_host(8765)

        def fetch():
            # The engine routes by Host; connect to it directly (no DNS needed).
            port = sandbox.sandbox_domain.rsplit(":", 1)[1]
            req = urllib.request.Request(f"http://127.0.0.1:{port}/index.txt",
                                         headers={"Host": host})
            try:
                return urllib.request.urlopen(req, timeout=5).read()
            except Exception:
                return None

        from conftest import eventually

        assert eventually(fetch) == b"served"
    finally:
        await h.kill()


async def test_loopback_url_opens_in_urllib(sandbox):
    """loopback_url(port): http://127.0.0.1:<n>, which urllib opens with no
    resolver for *.localhost; the same URL on every call."""
    import urllib.request

    await sandbox.files.write("/tmp/www/index.txt", "served on loopback")
    h = await sandbox.commands.run("cd /tmp/www && exec python3 -m http.server 8766",
                                   background=True, timeout=0)
    try:
        url = await sandbox.loopback_url(8766)
        assert url.startswith("http://127.0.0.1:")
        assert sandbox.loopback_url_sync(8766) == url

        def fetch():
            try:
                return urllib.request.urlopen(url + "/index.txt", timeout=5).read()
            except Exception:
                return None

        from conftest import eventually

        assert eventually(fetch) == b"served on loopback"
        # a host curl the program starts (the timeout only stops a hang)
        import subprocess

        r = subprocess.run(["curl", "-sS", url + "/index.txt", url + "/index.txt", "-w", " %{num_connects}\n"],
                           capture_output=True, timeout=120)
        assert (r.returncode, r.stdout) == (0, b"served on loopback 1\nserved on loopback 0\n"), r.stderr
        # and a child inherits none of the library's descriptors, with its
        # connections and the server's command stream open
        assert _child_fds() == _FDS_AT_IMPORT
        with pytest.raises(InvalidArgumentException):
            await sandbox.loopback_url(70000)
    finally:
        await h.kill()
