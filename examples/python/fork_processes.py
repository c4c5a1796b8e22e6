"""A fork that keeps the parent's running processes (the engine's
--pause-criu, docs/snapshots.md): a process counts in the sandbox; a fork
gets the parent's files and, on an engine with --pause-criu, its processes
and memory: the fork's counter goes on from the parent's number (the same
pid inside), while the parent's counts on too. Against an engine without
--pause-criu the fork boots fresh on the parent's files: the count file is
there, no counter runs. Each fork's fork_mode says which it got; with
keep_processes=False a fork boots fresh on the files on any engine, and
fork_many forks several in one call. SPDX-License-Identifier: Apache-2.0"""
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


async def read_count(sandbox):
    pid, n = map(int, (await sandbox.files.read("/tmp/count")).split())
    return pid, n


async def count(sandbox, after=0, within=60):
    """The counter's (pid, count) once its count is past `after` (None if it
    does not get there within `within` seconds)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if await sandbox.files.exists("/tmp/count"):
            pid, n = await read_count(sandbox)
            if n > after:
                return pid, n
        await asyncio.sleep(0.1)
    return None


async def main():
    async with await Sandbox.create(timeout=300) as parent:
        counter = await parent.commands.run(COUNTER, background=True)
        # Stop streaming its output: the fork's dump ends the engine's
        # connections into the parent (docs/snapshots.md); it runs on.
        await counter.disconnect()
        pid, before = await count(parent, 2)
        print("parent counting: pid", pid, "at", before)
        async with await parent.fork(timeout=300) as fork:
            print("fork: fork mode", fork.fork_mode)  # "processes" with --pause-criu
            fpid, at = await read_count(fork)  # the parent's number at the fork
            print("fork: its count file says pid", fpid, "at", at)
            # the parent counts 10 more: a counter in the fork counts too
            _, later = await count(parent, at + 10)
            moved = await count(fork, at, within=30)
            if moved and moved[0] == pid:
                print("fork: pid", moved[0], "at", moved[1],
                      ": the parent's process counts on in the fork")
            else:
                print("fork: no counter runs: it booted fresh on the files")
            print("parent: at", later, ": counts on")
        # two more in one call, booted fresh on the parent's files
        for f in await parent.fork_many(2, timeout=300, keep_processes=False):
            if isinstance(f, Exception):  # that fork failed to start
                print("fresh fork failed:", f)
                continue
            print("fresh fork: fork mode", f.fork_mode)  # "files"
            await f.kill()


asyncio.run(main())
