"""Commands: run to completion, stream output, feed stdin, run in the
background, list and kill. SPDX-License-Identifier: Apache-2.0"""
import asyncio

from agent_sandbox import CommandExitException, Sandbox


async def main():
    async with await Sandbox.create() as sandbox:
        r = await sandbox.commands.run("echo $GREETING from $(pwd)", envs={"GREETING": "hi"},
                                       cwd="/tmp")
        print(r.stdout.strip(), r.exit_code)

        # Output as it arrives (plain or async callbacks run on the event loop).
        await sandbox.commands.run("for i in 1 2 3; do echo line $i; sleep 0.1; done",
                                   on_stdout=lambda s: print("stdout:", s.strip()))

        # A non-zero exit code is in the result; check=True raises instead.
        r = await sandbox.commands.run("exit 3")
        print("exit code", r.exit_code)
        try:
            await sandbox.commands.run("echo failing >&2; exit 4", check=True)
        except CommandExitException as e:
            print("raised:", e.exit_code, e.stderr.strip())

        # stdin: a string is written to it and then closed.
        r = await sandbox.commands.run("tr a-z A-Z", stdin="shout\n")
        print(r.stdout.strip())

        # Background: a handle with pid, send_stdin, wait, kill.
        h = await sandbox.commands.run("read name; echo hello $name", background=True, stdin=True)
        await h.send_stdin("Alice\n")
        print((await h.wait()).stdout.strip())
        sleeper = await sandbox.commands.run("sleep 600", background=True, tag="sleeper")
        print([p.tag for p in await sandbox.commands.list() if p.pid == sleeper.pid])
        print("killed", await sandbox.commands.kill(sleeper.pid))

        # Cancelling the awaiting task stops the command in the sandbox too.
        task = asyncio.ensure_future(sandbox.commands.run("sleep 600"))
        await asyncio.sleep(0.5)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            print("cancelled")


asyncio.run(main())
