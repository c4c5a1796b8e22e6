"""Named commands end to end: the python-hello example template (the Python
server SDK inside a sandbox, built by the engine from
build/examples/templates/python-hello), the built-in python-base, and the
errors a client sees: sandbox.run / run_command / list_commands, async,
the *_sync twins, the blocking API and the compat extension.
SPDX-License-Identifier: Apache-2.0"""

import asyncio

import pytest

from conftest import REPO, build_template, delete_template

HELLO_DIR = REPO / "build" / "examples" / "templates" / "python-hello"


@pytest.fixture(scope="module")
def hello(engine):
    from agent_sandbox import Sandbox

    if not (HELLO_DIR / "sdk" / "lib").is_dir():
        pytest.fail(f"{HELLO_DIR} is not staged (ninja -C build python-hello-template)")
    name = build_template(engine, HELLO_DIR)
    sb = Sandbox.create_sync(template=name, timeout=600)
    yield sb
    sb.kill_sync()
    delete_template(engine, name)


def test_run_returns_the_result(hello):
    assert asyncio.run(hello.run("hello", name="Alice")) == "Hello, Alice!"
    assert asyncio.run(hello.run("hello")) == "Hello, world!"  # the default
    assert hello.run_sync("hello", name="Bob") == "Hello, Bob!"
    assert hello.sync.run("hello", name="Carol") == "Hello, Carol!"


def test_argument_types(hello):
    assert hello.run_sync("add", a=2) == 2.5
    assert hello.run_sync("add", a="40", b="2") == 42.0  # coerced by the server SDK
    r = hello.run_sync("stats", values=[1, 2, 3], label="x")
    assert r == {"label": "x", "count": 3, "sum": 6, "mean": 2.0}
    # a coroutine command, run as the sandbox's user by the start command
    who = hello.run_sync("whoami")
    assert who["user"] == "user" and who["sandbox_id"] == hello.sandbox_id
    assert hello.run_command_sync("hello", {"name": "Dan"}, timeout=30) == "Hello, Dan!"
    # the command name is positional-only: an argument may be called "command"
    assert asyncio.run(hello.run_command("stats", {"values": [4]})).get("mean") == 4.0


def test_list_commands(hello):
    cmds = {c.name: c for c in hello.list_commands_sync()}
    assert set(cmds) == {"hello", "add", "stats", "whoami"}  # secret is hidden
    h = cmds["hello"]
    assert h.description == "Greets someone."
    (arg,) = h.args
    assert (arg.name, arg.type, arg.required, arg.default, arg.description) == \
        ("name", "string", False, "world", "who to greet")
    a, b = cmds["add"].args
    assert (a.name, a.type, a.required, a.default) == ("a", "integer", True, None)
    assert (b.name, b.type, b.required, b.default) == ("b", "float", False, "0.5")
    assert [(x.name, x.type, x.required) for x in cmds["stats"].args] == \
        [("values", "json", True), ("label", "string", False)]
    assert [c.name for c in asyncio.run(hello.list_commands())] == list(cmds)
    assert hello.run_sync("secret") == "hidden but callable"


def test_unknown_command(hello):
    from agent_sandbox import CommandNotFoundError, NotFoundException

    with pytest.raises(CommandNotFoundError) as ei:
        hello.run_sync("nope")
    assert "nope" in str(ei.value) and "hello" in str(ei.value)  # lists what exists
    assert isinstance(ei.value, NotFoundException) and ei.value.http_status == 404
    with pytest.raises(CommandNotFoundError):
        asyncio.run(hello.run("nope", x=1))


def test_bad_arguments(hello):
    from agent_sandbox import InvalidArgumentException

    with pytest.raises(InvalidArgumentException, match="missing required argument 'a'"):
        hello.run_sync("add")
    with pytest.raises(InvalidArgumentException, match="'a'.*integer"):
        hello.run_sync("add", a="many")
    with pytest.raises(InvalidArgumentException, match="unexpected argument 'bogus'"):
        asyncio.run(hello.run("hello", bogus=1))
    # refused before anything is sent
    with pytest.raises(InvalidArgumentException, match="JSON"):
        hello.run_sync("hello", name=object())
    with pytest.raises(InvalidArgumentException, match="mapping"):
        hello.run_command_sync("hello", ["not", "a", "mapping"])


def test_remote_failure(hello):
    from agent_sandbox import CommandFailedError

    with pytest.raises(CommandFailedError) as ei:
        hello.run_sync("stats", values=[])
    e = ei.value
    assert e.type == "ValueError" and e.remote_code == "ValueError"
    assert "values must not be empty" in str(e) and e.http_status == 500
    # the server keeps serving after a failure
    assert hello.run_sync("hello", name="again") == "Hello, again!"


def test_nothing_listening(engine):
    """A sandbox whose template serves no commands: a clear error, not a hang."""
    from agent_sandbox import SandboxException, SandboxSync

    with SandboxSync.create(timeout=60) as sb:
        with pytest.raises(SandboxException, match="port"):
            sb.run("hello")
        with pytest.raises(SandboxException):
            sb.list_commands()
        # another port: a server started by hand in the sandbox
        with pytest.raises(SandboxException):
            sb.run_command("hello", port=9100)


def test_compat_extension(hello):
    from agent_sandbox.compat import AsyncSandbox, Sandbox

    sb = Sandbox.connect(hello.sandbox_id)
    assert sb.run("hello", name="E2B") == "Hello, E2B!"
    assert "hello" in [c.name for c in sb.list_commands()]

    async def main():
        a = await AsyncSandbox.connect(hello.sandbox_id)
        return await a.run("hello", name="async")

    assert asyncio.run(main()) == "Hello, async!"


def test_python_base(engine):
    """The built-in template: built on first use, hello registered."""
    from agent_sandbox import SandboxSync

    with SandboxSync.create(template="python-base", timeout=60) as sb:
        assert sb.run("hello", name="Alice") == "Hello, Alice!"
        assert [c.name for c in sb.list_commands()] == ["hello"]
        # the SDK is importable by the sandbox's python3 (PYTHONPATH is the template's)
        r = sb.commands.run("PYTHONPATH=/opt/agent-sandbox/python python3 -c "
                            "'import agent_sandbox.server as s; print(s.__file__)'")
        assert r.stdout.strip() == "/opt/agent-sandbox/python/agent_sandbox/server.py"
