"""Running code: a stateful Python kernel, rich results, errors, contexts.
SPDX-License-Identifier: Apache-2.0"""
import asyncio

from agent_sandbox import Sandbox


async def main():
    async with await Sandbox.create() as sandbox:
        print((await sandbox.run_code("print(2 ** 10)")).text)   # printed: 1024
        await sandbox.run_code("x = 41")
        print((await sandbox.run_code("x + 1")).text)           # the value: 42
        r = await sandbox.run_code("1 / 0")
        print(r.error.name, r.error.value)
        await sandbox.run_code("import time\nfor i in range(3):\n    print(i); time.sleep(0.1)",
                               on_stdout=lambda s: print("live:", s.strip()))
        ctx = await sandbox.create_code_context(cwd="/tmp")
        print((await sandbox.run_code("import os; os.getcwd()", context=ctx)).text)
        await sandbox.remove_code_context(ctx)


asyncio.run(main())
