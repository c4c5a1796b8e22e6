"""Templates from Python: build one from a template.yaml, start a sandbox
from it, list and delete it. python3 templates.py
SPDX-License-Identifier: Apache-2.0"""
import asyncio
import pathlib
import tempfile

from agent_sandbox import BuildException, Sandbox, templates

YAML = """\
name: py-example
description: a template built from Python
steps:
  - copy: {src: motd.txt, dest: /etc/motd.d/example}
  - run: echo "built at $(date -u +%Y)" > /srv/built
"""


async def main():
    with tempfile.TemporaryDirectory() as d:
        pathlib.Path(d, "template.yaml").write_text(YAML)
        pathlib.Path(d, "motd.txt").write_text("hello from a template\n")
        info = await templates.build(d)
        print(info.name, "cached" if info.cached else "built", info.build_id)

    sandbox = await Sandbox.create(info.name)
    try:
        print((await sandbox.commands.run("cat /etc/motd.d/example")).stdout.strip())
    finally:
        await sandbox.kill()

    print("listed:", info.name in [t.name for t in await templates.list_all()])
    await templates.delete(info.name)

    with tempfile.TemporaryDirectory() as d:
        pathlib.Path(d, "template.yaml").write_text("name: py-broken\nsteps:\n  - run: exit 3\n")
        try:
            await templates.build(d)
        except BuildException as e:
            print("build failed:", str(e).splitlines()[0])


asyncio.run(main())
