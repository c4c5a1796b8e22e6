"""An interactive terminal: type into bash, resize it, read its output.
SPDX-License-Identifier: Apache-2.0"""
import asyncio

from agent_sandbox import PtySize, Sandbox


async def main():
    async with await Sandbox.create() as sandbox:
        screen = bytearray()
        changed = asyncio.Event()

        def on_data(data: bytes):
            screen.extend(data)
            changed.set()

        async def wait_for(text: str):
            while text not in screen.decode(errors="replace"):
                changed.clear()
                await asyncio.wait_for(changed.wait(), 30)

        terminal = await sandbox.pty.create(PtySize(rows=24, cols=80), on_data=on_data)
        await terminal.send_stdin(b"stty size\n")
        await wait_for("24 80")
        await sandbox.pty.resize(terminal.pid, PtySize(rows=40, cols=120))
        await terminal.send_stdin(b"stty size; exit\n")
        await terminal.wait()
        print("24 80" in screen.decode(), "40 120" in screen.decode())


asyncio.run(main())
