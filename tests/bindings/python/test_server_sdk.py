"""agent_sandbox.server in this process: a CommandRegistry served by
libagentsandbox-server on a free loopback port, called with the client's
asb_sandbox_run_command in debug mode (the sandbox URL is the server), so
the SDK's typing, results and errors are checked without a sandbox. (The
same SDK inside a template: test_named.py.)
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import dataclasses
import os
import threading
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from conftest import REPO

os.environ.setdefault("ASB_SERVER_LIB",
                      str(REPO / "build" / "core" / "server" / "libagentsandbox-server.so.1"))

from agent_sandbox.server import CommandRegistry, ServerError  # noqa: E402


@dataclasses.dataclass
class Point:
    x: int
    y: int


reg = CommandRegistry()


@reg.command
def hello(name: str = "world") -> str:
    """Greets someone.

    More text that is not the summary.

    Args:
        name: who to greet,
            on two lines
    """
    return f"Hello, {name}!"


@reg.command(name="typed", description="every type")
def _typed(i: int, f: float = 1.5, b: bool = False, s: Optional[str] = None,
           d: Dict[str, int] = None, xs: List[int] = [1, 2], anything=None, n=3):
    return {"i": i, "f": f, "b": b, "s": s, "d": d, "xs": xs, "anything": anything, "n": n,
            "types": [type(v).__name__ for v in (i, f, b, n)]}


@reg.command
async def later(x: int) -> int:
    await asyncio.sleep(0.01)
    return x * 2


@reg.command
def point() -> Point:
    return Point(1, 2)


@reg.command
def unserializable():
    return object()


@reg.command
def fails(message: str):
    raise KeyError(message)


@reg.command(hidden=True)
def hidden() -> str:
    return "h"


barrier = threading.Barrier(3, timeout=120)


@reg.command
def rendezvous() -> bool:
    barrier.wait()  # returns only when three calls run at once
    return True


def attach(url, token=None):
    """A client handle whose sandbox traffic goes to url (debug mode)."""
    from agent_sandbox import _native as N
    from agent_sandbox import _sync as S
    from agent_sandbox import lowlevel as ll

    c = N.client(api_url=url, api_key="e2b_00", sandbox_url=url, debug=True, max_retries=-1)
    o = ll.asb_sandbox_attach_options()
    if token:
        o.envd_access_token = token
    return S.Sandbox(N.call(ll.asb_sandbox_attach, c, "standalone", o), c, {})


@pytest.fixture(scope="module")
def server():
    srv = reg.start(0, host="127.0.0.1", token="", background=True)
    yield srv
    srv.stop()
    assert srv.port == 0


@pytest.fixture(scope="module")
def sb(server):
    return attach(f"http://127.0.0.1:{server.port}")


def test_types_and_defaults(sb):
    r = sb.run("typed", i=3)
    assert r == {"i": 3, "f": 1.5, "b": False, "s": None, "d": None, "xs": [1, 2],
                 "anything": None, "n": 3, "types": ["int", "float", "bool", "int"]}
    r = sb.run("typed", i="7", f=2, b="yes", s=5, d={"k": 1}, xs=[3], anything=[1, "a"], n=4)
    assert r["types"] == ["int", "float", "bool", "int"]
    assert (r["i"], r["f"], r["b"], r["s"], r["d"], r["anything"]) == \
        (7, 2.0, True, "5", {"k": 1}, [1, "a"])


def test_listing(sb):
    cmds = {c.name: c for c in sb.list_commands()}
    assert "hidden" not in cmds and "_typed" not in cmds
    assert cmds["hello"].description == "Greets someone."
    assert cmds["hello"].args[0].description == "who to greet, on two lines"
    assert cmds["typed"].description == "every type"
    assert [(a.name, a.type, a.required, a.default) for a in cmds["typed"].args] == [
        ("i", "integer", True, None), ("f", "float", False, "1.5"),
        ("b", "boolean", False, "false"), ("s", "string", False, None),
        ("d", "json", False, None), ("xs", "json", False, "[1, 2]"),
        ("anything", "json", False, None), ("n", "integer", False, "3")]
    assert sb.run("hidden") == "h"


def test_results(sb):
    assert sb.run("later", x=21) == 42
    assert sb.run("point") == {"x": 1, "y": 2}


def test_errors(sb):
    from agent_sandbox import CommandFailedError, CommandNotFoundError, InvalidArgumentException

    with pytest.raises(CommandFailedError) as ei:
        sb.run("fails", message="no such key")
    assert ei.value.type == "KeyError" and "no such key" in str(ei.value)
    with pytest.raises(CommandFailedError) as ei:
        sb.run("unserializable")
    assert ei.value.type == "TypeError" and "JSON" in str(ei.value)
    with pytest.raises(CommandNotFoundError, match="available: hello"):
        sb.run("missing")
    with pytest.raises(InvalidArgumentException):
        sb.run("later", x="not a number")


def test_concurrent_calls(sb):
    async def three():
        from agent_sandbox import _async as A

        a = A.Sandbox(sb)
        return await asyncio.gather(*(a.run("rendezvous") for _ in range(3)))

    assert asyncio.run(three()) == [True, True, True]


def test_token():
    from agent_sandbox import AuthenticationException

    with reg.start(0, host="127.0.0.1", token="s3cret", background=True) as srv:
        url = f"http://127.0.0.1:{srv.port}"
        assert attach(url, token="s3cret").run("hello") == "Hello, world!"
        with pytest.raises(AuthenticationException):
            attach(url, token="wrong").run("hello")


def test_registry_in_process():
    assert reg.call("hello", name="x") == "Hello, x!"
    assert reg.call("later", x=2) == 4
    assert "hidden" in reg.names
    desc = {d["name"]: d for d in reg.describe()}
    assert desc["typed"]["args"][0] == {"name": "i", "type": "integer", "required": True,
                                        "default": None, "description": ""}


def test_bad_registrations():
    r = CommandRegistry()

    def positional(a, /):
        return a

    with pytest.raises(ServerError, match="positional-only"):
        r.register(positional)
    r.register(lambda: 1, name="bad name!")
    with pytest.raises(ServerError, match="bad name!"):
        r.start(0, host="127.0.0.1", background=True)


def test_port_in_use(server):
    with pytest.raises(ServerError, match=str(server.port)):
        reg.start(server.port, host="127.0.0.1", background=True)


def test_blocking_start_stops_on_sigterm(tmp_path):
    """start() in a program's main thread serves until SIGTERM, then exits 0."""
    import signal
    import subprocess
    import sys
    import time

    prog = tmp_path / "commands.py"
    prog.write_text(
        "from agent_sandbox.server import command, start\n"
        "@command\n"
        "def hello(name: str = 'world') -> str:\n"
        "    return f'Hello, {name}!'\n"
        "print('serving', flush=True)\n"
        "start(0)\n"
        "print('stopped', flush=True)\n")
    p = subprocess.Popen([sys.executable, str(prog)], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, ASB_SERVER_TOKEN=""))
    assert p.stdout.readline().strip() == "serving"

    def catches_sigterm():
        # start() serves until SIGTERM once it has its handler: wait for
        # that (SigCgt), not for a while
        for line in open(f"/proc/{p.pid}/status"):
            if line.startswith("SigCgt:"):
                return int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1))
        return False

    end = time.monotonic() + 120
    while not catches_sigterm() and time.monotonic() < end:
        time.sleep(0.01)
    assert catches_sigterm()
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0 and out.strip() == "stopped"
