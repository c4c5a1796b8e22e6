"""Files: write and read (text, bytes, streams), batches, list, info,
rename, remove, and watching a directory. SPDX-License-Identifier: Apache-2.0"""
import asyncio
import io

from agent_sandbox import Sandbox


async def main():
    async with await Sandbox.create() as sandbox:
        await sandbox.files.write("/tmp/hello.txt", "hello")
        print(await sandbox.files.read("/tmp/hello.txt"))
        await sandbox.files.write("/tmp/blob.bin", bytes(range(8)))
        print(await sandbox.files.read("/tmp/blob.bin", format="bytes"))

        # Big files stream both ways: a file object in, chunks out.
        await sandbox.files.write("/tmp/big.bin", io.BytesIO(b"x" * (4 << 20)))
        total = 0
        async for chunk in await sandbox.files.read("/tmp/big.bin", format="stream"):
            total += len(chunk)
        print("streamed", total, "bytes")

        await sandbox.files.write_files([{"path": "/tmp/dir/a.txt", "data": "A"},
                                         {"path": "/tmp/dir/b.txt", "data": "B"}])
        print([e.name for e in await sandbox.files.list("/tmp/dir")])
        info = await sandbox.files.get_info("/tmp/dir/a.txt")
        print(info.size, info.permissions, info.owner)
        await sandbox.files.rename("/tmp/dir/a.txt", "/tmp/dir/c.txt")
        print(await sandbox.files.exists("/tmp/dir/a.txt"), await sandbox.files.make_dir("/tmp/new"))

        # Watching: events reach the callback on the event loop.
        got = asyncio.Event()

        def on_event(event):
            print("event", event.type.value, event.name)
            if event.name == "done":
                got.set()

        watch = await sandbox.files.watch_dir("/tmp/new", on_event)
        await sandbox.files.write("/tmp/new/done", "!")
        await asyncio.wait_for(got.wait(), 30)
        await watch.stop()

        # A polling watch (blocking): each poll has every change made before it.
        polled = sandbox.files.watch_dir_sync("/tmp/new", polling=True)
        await sandbox.files.write("/tmp/new/later", "!")
        print("polled", [(e.type.value, e.name) for e in polled.get_new_events()])
        polled.stop()
        await sandbox.files.remove("/tmp/dir")


asyncio.run(main())
