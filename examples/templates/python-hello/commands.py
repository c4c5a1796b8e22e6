"""Named commands of the python-hello example template (port 9000).

Each function is a command; its parameters are the command's keyword
arguments, typed by their annotations (or defaults), and its return value
is the result the client gets from ``sandbox.run(...)``. An exception is an
error reply (the client raises CommandFailedError with its type and
message).
SPDX-License-Identifier: Apache-2.0
"""

import os
from typing import List, Optional

from agent_sandbox.server import command, start


@command
def hello(name: str = "world") -> str:
    """Greets someone.

    Args:
        name: who to greet
    """
    return f"{os.environ.get('HELLO_GREETING', 'Hello')}, {name}!"


@command
def add(a: int, b: float = 0.5) -> float:
    """Adds two numbers (a is an integer, b a float)."""
    return a + b


@command
def stats(values: List[float], label: Optional[str] = None) -> dict:
    """Count, sum and mean of a list of numbers."""
    if not values:
        raise ValueError("values must not be empty")
    return {"label": label, "count": len(values), "sum": sum(values),
            "mean": sum(values) / len(values)}


@command
async def whoami() -> dict:
    """Where the command server runs (a coroutine command)."""
    return {"user": os.environ.get("USER", ""), "uid": os.getuid(), "cwd": os.getcwd(),
            "sandbox_id": os.environ.get("ASB_SANDBOX_ID", "")}


@command(hidden=True)
def secret() -> str:
    """Callable, but not listed."""
    return "hidden but callable"


if __name__ == "__main__":
    start(9000)
