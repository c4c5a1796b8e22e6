"""Sandbox lifecycle: metadata, list, timeouts, pause/resume (pause mode and
swap figures), metrics, connect by id, kill. SPDX-License-Identifier: Apache-2.0"""
import asyncio

from agent_sandbox import Sandbox


async def main():
    sandbox = await Sandbox.create(timeout=120, metadata={"owner": "example"})
    print("created", sandbox.sandbox_id)
    print([s.sandbox_id for s in await Sandbox.list(metadata={"owner": "example"})])
    await sandbox.set_timeout(300)
    info = await sandbox.get_info()
    print(info.state.value, info.template_id, info.end_at > info.started_at)
    print("paused", await sandbox.pause(), await sandbox.is_running())
    info = await sandbox.get_info()  # under the engine's --pause-swap: where the RAM went
    print(info.pause_mode, info.swap or "RAM kept (no --pause-swap)")
    again = await Sandbox.connect(sandbox.sandbox_id)        # resumes it
    print("running", await again.is_running())
    print("metrics samples", len(await again.get_metrics()))
    print("killed", await sandbox.kill(), await Sandbox.kill_by_id(sandbox.sandbox_id))


asyncio.run(main())
