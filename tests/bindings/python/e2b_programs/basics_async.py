# An E2B program (async SDK); only the import line differs from E2B's:
#   from e2b import AsyncSandbox, PtySize, FilesystemEventType
import asyncio

from agent_sandbox.compat import AsyncSandbox, PtySize, FilesystemEventType


async def main():
    sbx = await AsyncSandbox.create(timeout=120)
    out = []

    async def on_stdout(data):
        out.append(data)

    r = await sbx.commands.run("echo one; echo two", on_stdout=on_stdout)
    print(r.stdout.split(), "".join(out).split())

    cmd = await sbx.commands.run("sleep 0.3; echo background", background=True)
    res = await cmd.wait()
    print(cmd.pid > 0, res.stdout.strip(), cmd.exit_code)

    events = []
    await sbx.files.make_dir("/home/user/watched")
    handle = await sbx.files.watch_dir("/home/user/watched", on_event=events.append)
    await sbx.files.write("/home/user/watched/new.txt", "x")
    for _ in range(200):
        if any(e.name == "new.txt" for e in events):
            break
        await asyncio.sleep(0.05)
    await handle.stop()
    print("watched", any(e.type == FilesystemEventType.CREATE for e in events))

    pty_out = bytearray()
    terminal = await sbx.pty.create(PtySize(cols=80, rows=24), on_data=pty_out.extend)
    await sbx.pty.send_stdin(terminal.pid, b"echo from-pty; exit\n")
    await terminal.wait()
    print("pty", b"from-pty" in pty_out)

    procs = await sbx.commands.list()
    print("procs", isinstance(procs, list))
    print("killed", await sbx.kill())


asyncio.run(main())
