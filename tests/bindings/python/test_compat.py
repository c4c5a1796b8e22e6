"""E2B programs run through agent_sandbox.compat with only their import line
changed (e2b_programs/), plus checks of the E2B-specific behaviour.
SPDX-License-Identifier: Apache-2.0"""

import subprocess
import sys
from pathlib import Path

import pytest

from agent_sandbox.compat import (
    AsyncSandbox,
    CommandExitException,
    Execution,
    FileNotFoundException,
    InvalidArgumentException,
    Sandbox,
    SandboxNotFoundException,
    TimeoutException,
)

from conftest import eventually

HERE = Path(__file__).parent


def _run(engine, name):
    r = subprocess.run([sys.executable, str(HERE / "e2b_programs" / name)], env=engine.env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.splitlines()


def test_sync_program(engine):
    assert _run(engine, "basics_sync.py") == [
        "running True",
        "hello from e2b 0",
        "exit 3 oops",
        "hi there",
        "bytearray",
        "['a.txt', 'b.txt', 'hello.txt']",
        "True True",
        "bg bg",
        "listed True False",
        "info base basics_sync",
        "host True",
        "connected again",
        "killed True False",
    ]


def test_async_program(engine):
    assert _run(engine, "basics_async.py") == [
        "['one', 'two'] ['one', 'two']",
        "True background 0",
        "watched True",
        "pty True",
        "procs True",
        "killed True",
    ]


def test_code_interpreter_program(engine, code_sandbox):
    assert _run(engine, "code_interpreter.py") == [
        "2",
        "None ['only printed\\n']",
        "['streamed\\n']",
        "NameError",
        "10",
    ]


def test_e2b_semantics(engine):
    with Sandbox.create() as sbx:
        with pytest.raises(CommandExitException) as ei:
            sbx.commands.run("exit 7")
        assert ei.value.exit_code == 7
        h = sbx.commands.run("exit 2", background=True)
        with pytest.raises(CommandExitException):
            h.wait()
        assert sbx.commands.run("sleep 0.1", timeout=None).exit_code == 0
        sid = sbx.sandbox_id
    assert Sandbox.kill(sid) is False
    with pytest.raises(SandboxNotFoundException):
        Sandbox.connect(sid)


def test_e2b_behaviour_its_suite_checks(engine):
    """What E2B's own Python suite found different (issue 20)."""
    import time
    import urllib.parse

    sbx = Sandbox.create()
    try:
        # list(depth=0): E2B's message, not a silent depth 1
        with pytest.raises(InvalidArgumentException, match="depth should be at least 1"):
            sbx.files.list("/tmp", depth=0)
        assert sbx.files.list("/tmp", depth=None) is not None
        # a missing file read as a stream raises at read(), not on first iteration
        with pytest.raises(FileNotFoundException):
            sbx.files.read("/tmp/no-such-file", format="stream")
        # a negative expiry is signed (already expired); envd refuses it
        url = sbx.download_url("/tmp/x", use_signature_expiration=-120)
        exp = int(urllib.parse.parse_qs(urllib.parse.urlparse(url).query)["signature_expiration"][0])
        assert exp < time.time()
        assert sbx._envd_version == sbx.envd_version and sbx._envd_access_token
        # started_after is the engine's filter (whole seconds), as E2B's API
        import datetime as dt

        from agent_sandbox.compat import SandboxQuery

        sid = sbx.sandbox_id
        started = sbx.get_info().started_at
        ids = [i.sandbox_id for i in Sandbox.list(SandboxQuery(started_after=started)).next_items()]
        assert sid in ids
        later = Sandbox.list(SandboxQuery(started_after=started + dt.timedelta(seconds=1)))
        assert sid not in [i.sandbox_id for i in later.next_items()]
        # file metadata: stored on write, surfaced by get_info and list
        w = sbx.files.write("/tmp/md.txt", "m", metadata={"author": "mish", "purpose": "t"})
        assert w.metadata == {"author": "mish", "purpose": "t"}
        assert sbx.files.get_info("/tmp/md.txt").metadata == {"author": "mish", "purpose": "t"}
        listed = {e.name: e.metadata for e in sbx.files.list("/tmp")}
        assert listed["md.txt"] == {"author": "mish", "purpose": "t"}
        assert sbx.files.get_info("/tmp").metadata is None
        with pytest.raises(InvalidArgumentException):
            sbx.files.write("/tmp/md2.txt", "m", metadata={"bad key": "v"})

        from agent_sandbox.compat import WriteEntry

        sbx.files.write_files([WriteEntry(path="/tmp/we.txt", data="we")])
        assert sbx.files.read("/tmp/we.txt") == "we"
        # the sandbox killed under wait(): TimeoutException, with E2B's words
        h = sbx.commands.run("sleep 60", background=True)
    finally:
        sbx.kill()
    with pytest.raises(TimeoutException, match="killed or reached its end of life"):
        h.wait()
    # set_timeout(0) ends the sandbox's life now, as in E2B
    sbx = Sandbox.create()
    sbx.set_timeout(0)
    assert eventually(lambda: not sbx.is_running())


async def test_fork_count_is_checked_before_asking(engine):
    # E2B refuses count < 1 client-side with InvalidArgumentException, also
    # by id for a sandbox that does not exist (so before any request).
    with pytest.raises(InvalidArgumentException, match="count must be at least 1"):
        Sandbox.fork("sbx-none", count=0)
    with pytest.raises(InvalidArgumentException, match="count must be at least 1"):
        await AsyncSandbox.fork("sbx-none", count=-1)


def test_lifecycle_is_validated_as_e2b():
    """E2B's create-time lifecycle checks, raised before any request."""
    from agent_sandbox.compat import _lifecycle as lc

    with pytest.raises(InvalidArgumentException, match="auto_resume can only be True"):
        Sandbox.create(lifecycle={"on_timeout": "kill", "auto_resume": True})
    with pytest.raises(InvalidArgumentException, match="keep_memory is only allowed"):
        lc({"on_timeout": {"action": "kill", "keep_memory": True}})
    with pytest.raises(InvalidArgumentException, match="keep_memory: False"):
        lc({"on_timeout": {"action": "pause", "keep_memory": False}, "auto_resume": True})
    assert lc({"on_timeout": "pause", "auto_resume": True}) == (True, True, True)
    assert lc({"on_timeout": {"action": "pause"}}) == (True, True, False)
    assert lc({"on_timeout": {"action": "pause", "keep_memory": False}}) == (True, False, False)
    assert lc({"on_timeout": "kill"}) == (False, True, False)
    assert lc(None) == (False, True, False)


def test_pause_without_memory_and_auto_resume(engine):
    """keep_memory=False boots the sandbox again on connect (files kept, a
    new boot_id); lifecycle auto_resume is kept and reported."""
    sbx = Sandbox.create(timeout=120)
    try:
        sbx.files.write("/home/user/kept.txt", "files only")
        boot0 = sbx.commands.run("cat /proc/sys/kernel/random/boot_id").stdout
        assert sbx.pause(keep_memory=False) is True
        assert sbx._s.get_info().pause_mode == "filesystem"
        again = Sandbox.connect(sbx.sandbox_id)
        assert again.files.read("/home/user/kept.txt") == "files only"
        assert again.commands.run("cat /proc/sys/kernel/random/boot_id").stdout != boot0
    finally:
        sbx.kill()
    sleepy = Sandbox.create(timeout=120, lifecycle={"on_timeout": "pause", "auto_resume": True})
    try:
        info = sleepy._s.get_info()
        assert info.auto_resume is True
        assert sleepy.pause() is True
        assert sleepy._s.get_info().pause_mode == "memory"
    finally:
        sleepy.kill()


def test_breaking_out_of_a_command_loop_does_not_wait(engine):
    """``for stdout, _, _ in handle: break`` stops iterating, as in E2B, and
    the command keeps running (a ``cat`` waiting on its stdin)."""
    import threading

    with Sandbox.create() as sbx:
        h = sbx.commands.run("echo first; exec cat", background=True, stdin=True)
        seen = []

        def loop():
            for stdout, _, _ in h:
                seen.append(stdout)
                break

        t = threading.Thread(target=loop, daemon=True)
        t.start()
        # generous: a blocked loop would wait for the command, which never ends
        t.join(60)
        assert not t.is_alive(), "the loop did not stop at break"
        assert seen == ["first\n"]
        assert h.pid in [p.pid for p in sbx.commands.list()]
        h.kill()


async def test_async_signed_urls_are_plain_methods(engine):
    sbx = await AsyncSandbox.create()
    try:
        url = sbx.download_url("/tmp/x", "user", 120)
        assert isinstance(url, str) and "signature=" in url
        assert isinstance(sbx.upload_url("/tmp/x"), str)
        with pytest.raises(FileNotFoundException):
            await sbx.files.read("/tmp/no-such-file", format="stream")
        assert sbx._envd_version and sbx._envd_access_token
    finally:
        await sbx.kill()


async def test_async_e2b_semantics(engine):
    sbx = await AsyncSandbox.create()
    try:
        with pytest.raises(CommandExitException):
            await sbx.commands.run("exit 5")
        assert await AsyncSandbox.pause(sbx.sandbox_id) is True
        assert await AsyncSandbox.pause(sbx.sandbox_id) is False
        info = await AsyncSandbox.get_info(sbx.sandbox_id)
        assert info.state.value == "paused"
        await AsyncSandbox.connect(sbx.sandbox_id)
        assert (await sbx.commands.run("echo up")).stdout == "up\n"
        paginator = AsyncSandbox.list()
        items = await paginator.next_items()
        assert sbx.sandbox_id in [i.sandbox_id for i in items]
    finally:
        assert await AsyncSandbox.kill(sbx.sandbox_id) is True


def test_execution_text_is_e2b(code_sandbox):
    from agent_sandbox.compat import Execution as CompatExecution
    from agent_sandbox.models import Execution as Native, Logs

    native = Native(logs=Logs(stdout=["printed\n"]))
    assert native.text == "printed"
    assert CompatExecution._of(native).text is None


async def test_secrets_through_the_engine(engine):
    """E2B's Secret/AsyncSecret over e2b.api's endpoints and asb_secrets_*,
    against the engine's /secrets store: values go in and never come back."""
    import os

    from agent_sandbox.compat import AsyncSecret, Secret, SecretException, SecretNotFoundException
    from agent_sandbox.compat.api.client.api.secrets import get_secrets_secret_id
    from agent_sandbox.compat.api.client.client import AuthenticatedClient

    tag = f"py-sec-{os.getpid()}"
    made = []
    try:
        a = Secret.create(f"{tag}-a", "sk-value-a", metadata={"env": "test"})
        made.append(a.secret_id)
        assert a.secret_id.startswith("sec_") and a.name == f"{tag}-a" and a.version == 1
        assert a.metadata == {"env": "test"} and a.created_at.year >= 2026
        assert Secret.get_info(a.name).secret_id == a.secret_id  # by name and by id
        assert Secret.get_info(a.secret_id).name == a.name
        u = Secret.update(a.secret_id, "sk-value-a2")
        assert (u.version, u.metadata) == (2, {"env": "test"})  # metadata kept
        assert Secret.update(a.name, "v3", metadata={"k": "v"}).metadata == {"k": "v"}
        for n in "bcd":
            made.append((await AsyncSecret.create(f"{tag}-{n}", "v")).secret_id)
        with pytest.raises(SecretException, match="exists"):  # the name is taken
            Secret.create(f"{tag}-b", "v")
        with pytest.raises(InvalidArgumentException):
            Secret.create("bad name{", "v")
        ids, pages, p = [], 0, Secret.list(limit=2)
        while p.has_next:
            got = p.next_items()
            assert len(got) <= 2
            ids += [s.secret_id for s in got]
            pages += 1
        assert ids == made and pages == 2
        ap = AsyncSecret.list(limit=3)
        assert len(await ap.next_items()) == 3 and ap.has_next
        with pytest.raises(SecretNotFoundException):
            Secret.update("no-such-secret", "v")
        with pytest.raises(SecretNotFoundException):
            await AsyncSecret.get_info("no-such-secret")
        # the endpoint function answers E2B's Response: 404, no exception
        res = get_secrets_secret_id.sync_detailed("no-such-secret", client=AuthenticatedClient())
        assert int(res.status_code) == 404 and res.parsed.message
        raw = repr(Secret.get_info(a.secret_id)) + repr(res)
        assert "sk-value" not in raw and "v3" not in raw
        assert await AsyncSecret.destroy(made[1]) is True
        assert Secret.exists(made[1]) is False and await AsyncSecret.exists(made[2]) is True
        assert Secret.destroy(made[1]) is False
        assert Secret.fill(a.name) == "${e2b.secrets." + a.name + "}"
    finally:
        for sid in made:
            Secret.destroy(sid)


def test_e2b_api_models_and_helpers():
    """e2b.api's models and helpers E2B programs build requests with:
    NewSandbox's wire names, the IAM option's checks, encode_path_param."""
    from agent_sandbox.compat import Secret, build_iam_config
    from agent_sandbox.compat.api import encode_path_param
    from agent_sandbox.compat.api.client.models import NewSandbox, SandboxAutoResumeConfig
    from agent_sandbox.compat.api.client.types import UNSET

    body = NewSandbox(template_id="t", auto_pause=True,
                      auto_resume=SandboxAutoResumeConfig(enabled=True), metadata={"a": "b"})
    d = body.to_dict()
    assert (d["templateID"], d["autoPause"], d["autoResume"], d["metadata"]) == \
        ("t", True, {"enabled": True}, {"a": "b"})
    back = NewSandbox.from_dict({"templateID": "t", "autoResume": {"enabled": False}, "x": 1})
    assert back.auto_resume == SandboxAutoResumeConfig(enabled=False)
    assert back.to_dict()["x"] == 1
    iam = build_iam_config({"tokens": {"aws": Secret.iam_token(audience="sts", token_type="JWT-SVID")}})
    assert NewSandbox(template_id="t", iam=iam).to_dict()["iam"] == \
        {"tokens": {"aws": {"audience": "sts", "tokenType": "JWT-SVID"}}}
    assert build_iam_config({"tokens": {}}) is None and "iam" not in NewSandbox("t", iam=UNSET).to_dict()
    with pytest.raises(InvalidArgumentException, match="token_type"):
        build_iam_config({"tokens": {"aws": {"audience": "a", "tokenType": "JWT-SVID"}}})
    with pytest.raises(InvalidArgumentException, match="is not usable"):
        build_iam_config({"tokens": {"a}b": {"audience": "a", "token_type": "JWT-SVID"}}})
    assert encode_path_param("team/snap:default") == "team%2Fsnap%3Adefault"
    assert encode_path_param("a-b_c.d~e") == "a-b_c.d~e" and encode_path_param("a b") == "a%20b"


async def test_traffic_access_token(engine):
    # E2B's sandbox.traffic_access_token: what requests to its ports carry
    # (e2b-traffic-access-token) when they are closed to the public
    # (allow_public_traffic=False); the engine gives every sandbox one (the
    # stock code-interpreter SDKs send it too), the same after connect
    closed = Sandbox.create(timeout=60, network={"allow_public_traffic": False})
    try:
        assert len(closed.traffic_access_token) >= 32
        assert Sandbox.connect(closed.sandbox_id).traffic_access_token == closed.traffic_access_token
    finally:
        closed.kill()
    async with await AsyncSandbox.create(timeout=60) as sbx:
        assert sbx.traffic_access_token and sbx.traffic_access_token != closed.traffic_access_token


async def test_connect_goes_through_e2b_api(engine, monkeypatch):
    """Sandbox.connect asks e2b.api's connect endpoint (over the library) and
    reads its answer as E2B does: a Sandbox model from elsewhere is attached
    by its id and tokens, with no tokens nothing is signed."""
    from agent_sandbox.compat.api.client.api.sandboxes import post_sandboxes_sandbox_id_connect as ep
    from agent_sandbox.compat.api.client.client import AuthenticatedClient
    from agent_sandbox.compat.api.client.models import ConnectSandbox
    from agent_sandbox.compat.api.client.models import Sandbox as SandboxModel

    sbx = Sandbox.create(timeout=60)
    try:
        res = ep.sync_detailed(sbx.sandbox_id, client=AuthenticatedClient(),
                               body=ConnectSandbox(timeout=60))
        assert int(res.status_code) == 200 and res.parsed.sandbox_id == sbx.sandbox_id
        assert res.parsed.envd_access_token == sbx._envd_access_token
        assert Sandbox.connect(sbx.sandbox_id).commands.run("echo hi").stdout == "hi\n"
        with pytest.raises(SandboxNotFoundException):
            Sandbox.connect("sbx-none-such")
        seen = []

        def fake(sandbox_id, *, client, body):
            seen.append((sandbox_id, body.timeout))
            model = SandboxModel(client_id="c", envd_version="0.2.4", sandbox_id=sandbox_id,
                                 template_id="t")
            return type(res)(status_code=res.status_code, content=b"", headers={}, parsed=model)

        monkeypatch.setattr(ep, "sync_detailed", fake)
        other = Sandbox.connect(sbx.sandbox_id, timeout=30)
        assert seen == [(sbx.sandbox_id, 30)]
        assert other._envd_access_token is None and other.traffic_access_token is None
        assert "signature" not in other.download_url("a.txt")
    finally:
        sbx.kill()


async def test_create_goes_through_e2b_api(engine, monkeypatch):
    """Sandbox.create builds E2B's NewSandbox body as its SDK does (each
    lifecycle field only when configured, volume mounts as E2B's list, the
    network in its wire names with the engine's own limits kept) and sends
    it through e2b.api's post_sandboxes (over the library); its answer is
    read as connect's is."""
    from agent_sandbox.compat.api.client.api.sandboxes import post_sandboxes
    from agent_sandbox.compat.api.client.client import AuthenticatedClient
    from agent_sandbox.compat.api.client.models import NewSandbox
    from agent_sandbox.compat.api.client.models import Sandbox as SandboxModel

    res = post_sandboxes.sync_detailed(client=AuthenticatedClient(),
                                       body=NewSandbox(template_id="base", timeout=60,
                                                       metadata={"via": "e2b-api"}))
    assert int(res.status_code) == 201
    try:
        sbx = Sandbox.connect(res.parsed.sandbox_id)
        assert sbx.get_info().metadata == {"via": "e2b-api"}
    finally:
        Sandbox.kill(res.parsed.sandbox_id)

    live = await AsyncSandbox.create(timeout=60, metadata={"k": "async"},
                                     lifecycle={"on_timeout": "pause"})
    try:
        assert (await live.get_info()).metadata == {"k": "async"}
        assert (await live.commands.run("echo ok")).stdout == "ok\n"
    finally:
        await live.kill()

    bodies = []

    def fake(*, client, body):
        bodies.append(body.to_dict())
        m = SandboxModel(client_id="c", envd_version="0.2.4", sandbox_id="sbx-x", template_id="t")
        return type(res)(status_code=res.status_code, content=b"", headers={}, parsed=m)

    monkeypatch.setattr(post_sandboxes, "sync_detailed", fake)
    assert Sandbox.create().sandbox_id == "sbx-x"
    Sandbox.create("t", timeout=30, lifecycle={"on_timeout": {"action": "pause",
                                                              "keep_memory": False}},
                   volume_mounts={"/mnt/data": "vol"},
                   network={"allow_out": ["10.0.0.1"], "max_connections": 5})
    Sandbox.create(lifecycle={"on_timeout": "pause", "auto_resume": True})
    plain, full, resume = bodies
    assert plain["templateID"] == "base" and plain["timeout"] == 300
    assert not {"autoPause", "autoPauseMemory", "autoResume", "network",
                "volumeMounts"} & set(plain)
    assert (full["templateID"], full["timeout"]) == ("t", 30)
    assert full["autoPause"] is True and full["autoPauseMemory"] is False
    assert "autoResume" not in full
    assert full["volumeMounts"] == [{"name": "vol", "path": "/mnt/data"}]
    assert full["network"] == {"allowOut": ["10.0.0.1"], "maxConnections": 5}
    assert resume["autoPause"] is True and resume["autoResume"] == {"enabled": True}
    with pytest.raises(InvalidArgumentException, match="auto_resume"):
        Sandbox.create(lifecycle={"auto_resume": True})
    assert len(bodies) == 3  # refused before any request


def test_sync_watch_handle_polls_collect_every_event(engine):
    """E2B's sync WatchHandle, a polling watcher in envd as E2B's: one
    get_new_events() after the changes has them all (a recursive watch
    reports a directory made under it and a file written in that
    directory: E2B's test_watch_recursive_directory_after_nested_folder_
    addition), a second has nothing again (nothing repeated), and a
    stopped handle's poll answers at once with nothing. (The file's event
    is a WRITE when envd watched the new directory before the write, else
    the CREATE of envd's scan of it: which one is up to envd's watcher
    thread.)"""
    from agent_sandbox.compat import FilesystemEventType

    with Sandbox.create() as sbx:
        sbx.files.make_dir("/tmp/w")
        h = sbx.files.watch_dir("/tmp/w", recursive=True)
        sbx.files.make_dir("/tmp/w/sub")
        sbx.files.write("/tmp/w/sub/f.txt", "x")
        got = h.get_new_events()
        kinds = {(e.type, e.name) for e in got}
        assert (FilesystemEventType.CREATE, "sub") in kinds, got
        assert any(e.name == "sub/f.txt" for e in got), got
        assert len([e for e in got if e.type == FilesystemEventType.CREATE
                    and e.name == "sub"]) == 1, got
        assert h.get_new_events() == []
        h.stop()
        assert h.get_new_events() == []


async def test_kill_by_pid_returns_once_the_process_is_gone(engine):
    """compat's commands.kill(pid) / pty.kill(pid), sync and async, return
    True once envd has reaped the process, so `kill -0 <pid>` right after
    finds nothing (E2B's test_kill_pty; before, a not yet reaped zombie
    answered it); an unknown pid is False."""
    from agent_sandbox.compat import PtySize

    with Sandbox.create() as sbx:
        term = sbx.pty.create(PtySize(80, 24))
        assert sbx.pty.kill(term.pid) is True
        with pytest.raises(CommandExitException):
            sbx.commands.run(f"kill -0 {term.pid}")
        bg = sbx.commands.run("sleep 600", background=True)
        assert sbx.commands.kill(bg.pid) is True
        with pytest.raises(CommandExitException):
            sbx.commands.run(f"kill -0 {bg.pid}")
        assert sbx.pty.kill(999999) is False and sbx.commands.kill(999999) is False
    asbx = await AsyncSandbox.create()
    try:
        aterm = await asbx.pty.create(PtySize(80, 24), on_data=lambda d: None)
        assert await asbx.pty.kill(aterm.pid) is True
        with pytest.raises(CommandExitException):
            await asbx.commands.run(f"kill -0 {aterm.pid}")
        abg = await asbx.commands.run("sleep 600", background=True)
        assert await asbx.commands.kill(abg.pid) is True
        with pytest.raises(CommandExitException):
            await asbx.commands.run(f"kill -0 {abg.pid}")
        assert await asbx.pty.kill(999999) is False
    finally:
        await asbx.kill()
