"""Sessions: remember a sandbox under a name and reconnect to it from
another run (or another language's binding). Run it twice, then with
"done": python3 sessions.py; python3 sessions.py; python3 sessions.py done
SPDX-License-Identifier: Apache-2.0"""
import asyncio
import sys

from agent_sandbox import NotFoundException, Sandbox, sessions


async def main():
    if sys.argv[1:] == ["done"]:
        sandbox = await sessions.load("py-example")
        await sandbox.kill()
        await sessions.delete("py-example")
        print("session closed")
        return
    try:
        sandbox = await sessions.load("py-example")
        print("reconnected:", await sandbox.files.read("/tmp/note"))
    except NotFoundException:
        sandbox = await Sandbox.create(timeout=600)
        await sandbox.files.write("/tmp/note", "written by the first run")
        await sessions.save("py-example", sandbox, {"purpose": "example"})
        print("saved", sandbox.sandbox_id)
    for s in await sessions.list_all():
        print(s.name, s.sandbox_id, s.metadata.get("purpose"))


asyncio.run(main())
