"""The named commands of the python-base template, served on port 9000.

Call them from a client with ``await sandbox.run("hello", name="Alice")``;
list them with ``await sandbox.list_commands()``. To serve your own, build
a template on python-base that copies its own commands.py (see
docs/python.md, "agent_sandbox.server").
SPDX-License-Identifier: Apache-2.0
"""

from agent_sandbox.server import command, start


@command
def hello(name: str = "world") -> str:
    """Greets someone.

    Args:
        name: who to greet
    """
    return f"Hello, {name}!"


if __name__ == "__main__":
    start(9000, agents=True)
