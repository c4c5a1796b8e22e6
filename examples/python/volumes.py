"""Volumes: make one, write a file into it from Python, mount it in a
sandbox that appends to the file, read it back once the sandbox is gone;
then the same with E2B's names (agent_sandbox.compat's Volume), and a
volume object made from its id and token alone (E2B's Volume(volume_id,
name, token)).
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import os

from agent_sandbox import Sandbox, Volume
from agent_sandbox import compat


async def main() -> None:
    vol = await Volume.create(f"example-{os.getpid()}", size_mb=64)
    try:
        # owned by uid 1000, the sandboxes' "user", so it may append to it
        await vol.write_file("/log.txt", "from python\n", uid=1000, gid=1000)
        async with await Sandbox.create(volume_mounts={"/mnt/data": vol}) as sb:
            await sb.commands.run("echo from the sandbox >> /mnt/data/log.txt")
            mounts = (await sb.get_info()).volume_mounts  # E2B's [{"name", "path"}]
        print(await vol.read_file("/log.txt"), end="")
        for e in await vol.list("/"):
            print(e.type, oct(e.mode), e.uid, e.path)
        print("mounted at", [m["path"] for m in mounts if m["name"] == vol.name])
    finally:
        await Volume.destroy(vol.volume_id)

    # E2B's Volume, sync: the same calls under E2B's names
    v = compat.Volume.create(f"example-e2b-{os.getpid()}")
    v.make_dir("/a/b", force=True)
    v.write_file("/a/b/c.txt", "e2b names")
    # from its id and token alone: no API call, the token is all its file calls need
    print(compat.Volume(v.volume_id, v.name, v.token).read_file("/a/b/c.txt"))
    print(compat.Volume.get_info(v.volume_id).name == v.name, v.exists("/a/b/c.txt"))
    print(compat.Volume.destroy(v.volume_id))


asyncio.run(main())
