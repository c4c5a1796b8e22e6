"""sandbox.commands: run, background handles, list/kill/connect, stdin,
callbacks (plain and async, on the event loop), errors, sync twins.
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import threading

import pytest

from agent_sandbox import (
    CommandExitException,
    CommandResult,
    InvalidArgumentException,
    NotFoundException,
    TimeoutException,
)
from conftest import eventually


async def test_run_returns_result(sandbox):
    r = await sandbox.commands.run("echo 'Hello from sandbox!'")
    assert isinstance(r, CommandResult)
    assert r.stdout == "Hello from sandbox!\n"
    assert r.stderr == ""
    assert r.exit_code == 0 and r.error is None and r.success


async def test_nonzero_exit_is_a_result_unless_check(sandbox):
    r = await sandbox.commands.run("echo out; echo err >&2; exit 3")
    assert (r.stdout, r.stderr, r.exit_code) == ("out\n", "err\n", 3)
    with pytest.raises(CommandExitException) as ei:
        await sandbox.commands.run("echo err >&2; exit 4", check=True)
    assert ei.value.exit_code == 4 and ei.value.stderr == "err\n"


async def test_envs_cwd_user(sandbox):
    r = await sandbox.commands.run("echo $FOO; pwd; whoami", envs={"FOO": "bar"}, cwd="/tmp")
    assert r.stdout == "bar\n/tmp\nuser\n"
    r = await sandbox.commands.run("whoami; echo $HOME", user="root")
    assert r.stdout == "root\n/root\n"
    with pytest.raises(InvalidArgumentException):
        await sandbox.commands.run("true", cwd="/no/such/dir")


async def test_binary_and_utf8_output(sandbox):
    r = await sandbox.commands.run("printf 'h\\xc3\\xa9llo \\xe2\\x82\\xac'")
    assert r.stdout == "héllo €"


async def test_timeout_kills(sandbox):
    with pytest.raises(TimeoutException):
        await sandbox.commands.run("sleep 30", timeout=0.5)


async def test_stdin_data(sandbox):
    r = await sandbox.commands.run("cat; echo", stdin="fed to stdin")
    assert r.stdout == "fed to stdin\n"
    r = await sandbox.commands.run("wc -c", stdin=b"\x00\x01\x02")
    assert r.stdout.strip() == "3"


async def test_callbacks_run_on_the_loop(sandbox):
    loop_thread = threading.get_ident()
    seen = []
    threads = set()

    def on_out(s):
        threads.add(threading.get_ident())
        seen.append(("out", s))

    async def on_err(s):
        threads.add(threading.get_ident())
        await asyncio.sleep(0)
        seen.append(("err", s))

    r = await sandbox.commands.run("echo a; echo b >&2; echo c", on_stdout=on_out, on_stderr=on_err)
    assert "".join(s for k, s in seen if k == "out") == "a\nc\n" == r.stdout
    assert "".join(s for k, s in seen if k == "err") == "b\n" == r.stderr
    assert threads == {loop_thread}


async def test_callback_exception_is_reraised(sandbox):
    class Boom(Exception):
        pass

    def bad(_):
        raise Boom("from the callback")

    with pytest.raises(Boom, match="from the callback"):
        await sandbox.commands.run("echo x; sleep 0.2; echo y", on_stdout=bad)


async def test_background_handle(sandbox):
    seen = []
    h = await sandbox.commands.run("echo start; read line; echo got $line; exit 5",
                                   background=True, stdin=True, on_stdout=seen.append)
    assert h.pid > 0
    assert h.pid in [p.pid for p in await sandbox.commands.list()]
    await h.send_stdin("hello\n")
    r = await h.wait()
    assert r.exit_code == 5 and r.stdout == "start\ngot hello\n"
    assert "".join(seen) == r.stdout == h.stdout
    assert h.exit_code == 5
    with pytest.raises(CommandExitException):
        await h.wait(check=True)


async def test_background_kill_and_list(sandbox):
    h = await sandbox.commands.run("sleep 60", background=True, tag="sleeper")
    procs = await sandbox.commands.list()
    me = [p for p in procs if p.pid == h.pid]
    assert me and me[0].tag == "sleeper" and me[0].args[-1] == "sleep 60"
    assert await h.kill() is True
    r = await h.wait()
    assert r.exit_code != 0
    assert eventually(lambda: h.pid not in [p.pid for p in sandbox.commands.list_sync()])
    assert await sandbox.commands.kill(h.pid) is False


async def test_connect_to_running(sandbox):
    # it prints once told to (on stdin), after the connect, however slow
    h = await sandbox.commands.run("read go; echo later", background=True, stdin=True)
    got = []
    h2 = await sandbox.commands.connect(h.pid, on_stdout=got.append)
    await h.send_stdin("go\n")
    r = await h2.wait()
    assert r.stdout == "later\n" and "".join(got) == "later\n"
    await h.wait()
    with pytest.raises(NotFoundException):
        await sandbox.commands.connect(999999)


async def test_send_stdin_and_close_by_pid(sandbox):
    h = await sandbox.commands.run("cat", background=True, stdin=True)
    await sandbox.commands.send_stdin(h.pid, "abc")
    await sandbox.commands.close_stdin(h.pid)
    assert (await h.wait()).stdout == "abc"


async def test_disconnect_keeps_the_command(sandbox):
    h = await sandbox.commands.run("read go; echo done", background=True, stdin=True)
    await h.disconnect()
    h2 = await sandbox.commands.connect(h.pid)
    await sandbox.commands.send_stdin(h.pid, "go\n")
    assert (await h2.wait()).stdout == "done\n"


def test_sync_twins(sandbox):
    r = sandbox.commands.run_sync("echo twin")
    assert r.stdout == "twin\n"
    h = sandbox.commands.run_sync("echo bg; exit 2", background=True)
    out = []
    r = h.wait(on_stdout=out.append)
    assert r.exit_code == 2 and out == ["bg\n"]
    assert sandbox.commands.kill_sync(h.pid) is False


def test_blocking_flavour(sync_sandbox):
    chunks = []
    r = sync_sandbox.commands.run("for i in 1 2 3; do echo $i; done", on_stdout=chunks.append)
    assert r.stdout == "1\n2\n3\n" == "".join(chunks)
    h = sync_sandbox.commands.run("echo a; echo b >&2", background=True)
    items = list(h)
    assert ("a\n", None, None) in items and (None, "b\n", None) in items
    assert h.wait().stdout == "a\n"


def test_many_threads_share_a_sandbox(sync_sandbox):
    out = {}

    def work(i):
        out[i] = sync_sandbox.commands.run(f"echo {i}").stdout

    ts = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == {i: f"{i}\n" for i in range(16)}
