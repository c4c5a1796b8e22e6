"""A pause with memory to disk (the engine's --pause-criu, docs/lifecycle.md):
a process counts in the sandbox; the pause writes its memory to the
sandbox's disk (pause_mode "checkpoint", the RAM freed), the resume
restores it and the same process counts on from where it was. Against an
engine without --pause-criu the pause keeps the RAM (pause_mode "memory")
and the process goes on just the same. SPDX-License-Identifier: Apache-2.0"""
import asyncio
import time

from agent_sandbox import Sandbox

COUNTER = ("python3 -c \"import os, time\n"
           "i = 0\n"
           "while True:\n"
           "    i += 1\n"
           "    open('/tmp/count.new', 'w').write('%d %d' % (os.getpid(), i))\n"
           "    os.rename('/tmp/count.new', '/tmp/count')\n"
           "    time.sleep(0.1)\"")


async def count(sandbox, after=0):
    """The counter's (pid, count) once its count is past `after`."""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if await sandbox.files.exists("/tmp/count"):
            pid, n = map(int, (await sandbox.files.read("/tmp/count")).split())
            if n > after:
                return pid, n
        await asyncio.sleep(0.1)
    raise TimeoutError("the counter does not count")


async def main():
    async with await Sandbox.create(timeout=300) as sandbox:
        counter = await sandbox.commands.run(COUNTER, background=True)
        # Stop streaming its output: under --pause-criu a stream still open
        # into the sandbox fails the dump (criu cannot dump a unix socket
        # whose peer is outside; docs/lifecycle.md). The process runs on.
        await counter.disconnect()
        pid, before = await count(sandbox, 2)
        print("counting: pid", pid, "at", before)
        await sandbox.pause()
        info = await sandbox.get_info()
        print("paused:", info.state.value, "pause mode", info.pause_mode)
        await sandbox.resume(timeout=120)
        pid2, at = await count(sandbox)       # where it stopped: not started again
        pid3, later = await count(sandbox, at)  # and it runs again
        same = pid2 == pid3 == pid and at >= before and later > at
        print("resumed: pid", pid3, "at", at, "then", later, ":",
              "the same process counts on" if same else "NOT the same process going on")
        assert same


asyncio.run(main())
