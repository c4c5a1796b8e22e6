"""The blocking API: the same classes as :mod:`agent_sandbox` with plain
(non-async) methods.

    from agent_sandbox.sync import Sandbox
    with Sandbox.create() as sandbox:
        print(sandbox.commands.run("echo hi").stdout)

``agent_sandbox.SandboxSync`` is this :class:`Sandbox`. The async API's
``*_sync`` twins (``Sandbox.create_sync()``, ``commands.run_sync()``) are
another way to block: they return the async-flavoured sandbox.
"""

from ._sync import (  # noqa: F401
    Code,
    CommandHandle,
    Commands,
    FileStream,
    Files,
    Network,
    Pty,
    Sandbox,
    WatchHandle,
)

__all__ = ["Sandbox", "Commands", "CommandHandle", "Pty", "Files", "FileStream", "WatchHandle",
           "Network", "Code"]
