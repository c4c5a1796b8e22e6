"""@sandbox: call a function, it runs in a sandbox.
SPDX-License-Identifier: Apache-2.0"""
import asyncio

from agent_sandbox import sandbox


@sandbox(timeout=120)
def system_info(extra: str) -> dict:
    import platform
    import socket

    return {"hostname": socket.gethostname(), "python": platform.python_version(), "extra": extra}


@sandbox(keep_alive=True)
async def accumulate(value: int) -> int:
    import os

    path = "/tmp/total"
    total = int(open(path).read()) if os.path.exists(path) else 0
    total += value
    open(path, "w").write(str(total))
    return total


@sandbox
def divide(a, b):
    return a / b


async def main():
    print(system_info("from the host"))
    print([await accumulate(v) for v in (1, 2, 3)])   # one sandbox, kept between calls
    accumulate.close()
    try:
        divide(1, 0)
    except ZeroDivisionError as e:
        print("remote error:", e, "| remote traceback attached:", e.__cause__ is not None)


asyncio.run(main())
