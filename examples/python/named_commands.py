"""Named commands: call the commands a template serves, and serve your own
with the Python server SDK (agent_sandbox.server).

1. python-base (built into the engine) runs a commands.py that registers
   ``hello``: list it, call it, see the errors a client gets.
2. Your own commands: write a commands.py into the sandbox and serve it on
   another port with the SDK that python-base carries. In a real template
   this is the start command (see examples/templates/python-hello).

    python3 examples/python/named_commands.py
SPDX-License-Identifier: Apache-2.0
"""
import asyncio
import time

from agent_sandbox import (
    CommandFailedError,
    CommandNotFoundError,
    InvalidArgumentException,
    Sandbox,
    SandboxException,
)

MY_COMMANDS = '''
from typing import List
from agent_sandbox.server import command, start

@command
def word_count(text: str, top: int = 3) -> dict:
    """Counts words; returns the total and the most common ones."""
    words = text.lower().split()
    counts = {w: words.count(w) for w in set(words)}
    common = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return {"total": len(words), "common": common}

@command
def mean(values: List[float]) -> float:
    if not values:
        raise ValueError("no values")
    return sum(values) / len(values)

start(9001)
'''


async def main():
    async with await Sandbox.create(template="python-base") as sandbox:
        # 1. what python-base serves
        for c in await sandbox.list_commands():
            args = ", ".join(f"{a.name}: {a.type} = {a.default!r}" for a in c.args)
            print(f"{c.name}({args}) - {c.description}")
        print(await sandbox.run("hello", name="Alice"))
        try:
            await sandbox.run("goodbye")
        except CommandNotFoundError as e:
            print("not found:", e)
        try:
            await sandbox.run("hello", nme="typo")
        except InvalidArgumentException as e:
            print("bad arguments:", e)

        # 2. serve your own commands on port 9001
        await sandbox.files.write("/home/user/my_commands.py", MY_COMMANDS)
        await sandbox.commands.run(
            "PYTHONPATH=/opt/agent-sandbox/python python3 /home/user/my_commands.py",
            background=True)
        deadline = time.monotonic() + 120  # wait until it listens (nothing there: SandboxException)
        while True:
            try:
                await sandbox.list_commands(port=9001)
                break
            except SandboxException:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
        r = await sandbox.run_command("word_count", {"text": "a b a c a b"}, port=9001)
        print("word_count:", r)
        print("mean:", await sandbox.run_command("mean", {"values": [1, 2, 3, 4]}, port=9001))
        try:
            await sandbox.run_command("mean", {"values": []}, port=9001)
        except CommandFailedError as e:
            print(f"remote {e.type}: {e}")


asyncio.run(main())
