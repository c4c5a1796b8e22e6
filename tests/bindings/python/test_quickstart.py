"""The contract: examples/python/quickstart.py, exactly as written, against
the local engine: the built-in python-base template (built on first use),
a command, the code interpreter, the named command "hello" that
python-base's commands.py registers, files and a port URL. Every printed
value is checked.
SPDX-License-Identifier: Apache-2.0"""

import subprocess
import sys
from pathlib import Path

QUICKSTART = Path(__file__).resolve().parents[3] / "examples" / "python" / "quickstart.py"


def test_quickstart_as_written(engine):
    r = subprocess.run([sys.executable, str(QUICKSTART)], env=engine.env(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "Hello from sandbox!",  # proc.stdout ends with a newline: an empty line follows
        "",
        "0",
        "1024",
        "Hello, Alice!",
    ]
    from agent_sandbox import Sandbox

    assert Sandbox.list_sync() == []  # "async with" killed the program's sandbox


def test_quickstart_values(engine):
    """What the program does not print: the file it wrote and the URL."""
    import asyncio

    from agent_sandbox import Sandbox

    async def main():
        async with await Sandbox.create(template="python-base") as sandbox:
            await sandbox.files.write("/tmp/data.txt", "content")
            assert await sandbox.files.read("/tmp/data.txt") == "content"
            assert sandbox.network.get_url(3000) == \
                f"http://3000-{sandbox.sandbox_id}.{sandbox.sandbox_domain}"
            commands = await sandbox.list_commands()
            assert [c.name for c in commands] == ["hello"]
            assert commands[0].args[0].name == "name" and commands[0].args[0].default == "world"
            assert await sandbox.run("hello") == "Hello, world!"

    asyncio.run(main())
