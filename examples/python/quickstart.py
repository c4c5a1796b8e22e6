"""Quickstart: create a sandbox, run a command and code, call a named
command, write and read a file, get a port's URL. With nothing configured it
uses the local engine (started on demand, as root; its first use of the
built-in python-base template builds it, about a second); set E2B_API_KEY
(and E2B_DOMAIN or E2B_API_URL) to use a remote E2B-compatible engine.

    python3 examples/python/quickstart.py
SPDX-License-Identifier: Apache-2.0
"""
import asyncio
from agent_sandbox import Sandbox

async def main():
    async with await Sandbox.create(template="python-base") as sandbox:
        proc = await sandbox.commands.run("echo 'Hello from sandbox!'")
        print(proc.stdout)          # Hello from sandbox!
        print(proc.exit_code)       # 0
        result = await sandbox.run_code("print(2 ** 10)")
        print(result.text)          # 1024
        greeting = await sandbox.run("hello", name="Alice")
        print(greeting)             # the registered function's return value
        await sandbox.files.write("/tmp/data.txt", "content")
        content = await sandbox.files.read("/tmp/data.txt")
        url = sandbox.network.get_url(3000)

asyncio.run(main())
