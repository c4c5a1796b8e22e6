"""agent-sandbox for Python: sandboxes for AI agents over libagentsandbox.

Async first, with a blocking twin of everything::

    import asyncio
    from agent_sandbox import Sandbox

    async def main():
        async with await Sandbox.create() as sandbox:
            proc = await sandbox.commands.run("echo 'Hello from sandbox!'")
            print(proc.stdout)

    asyncio.run(main())

- :class:`Sandbox` (async; every method ``m`` has a blocking ``m_sync``),
  :class:`SandboxSync` (= :class:`agent_sandbox.sync.Sandbox`, all blocking);
- :mod:`agent_sandbox.compat`: E2B's ``Sandbox``/``AsyncSandbox`` names and
  signatures; :mod:`agent_sandbox.sessions`: named sessions;
  :mod:`agent_sandbox.templates`: build, list, get and delete templates;
  :func:`sandbox` (the decorator): run a function in a sandbox;
  :mod:`agent_sandbox.server`: serve named commands from inside a template;
- :mod:`agent_sandbox.lowlevel`: the SWIG module over the C ABI.
"""

from typing import TYPE_CHECKING, Any

# The pure-Python parts load at once; the client (which needs the native
# module over libagentsandbox) loads on first use of one of its names, so
# ``agent_sandbox.server`` also works inside a sandbox, where only the
# server SDK's library is present.
from . import exceptions, models
from .exceptions import *  # noqa: F401,F403 (names in exceptions.__all__)
from .models import *  # noqa: F401,F403 (names in models.__all__)

if TYPE_CHECKING:
    from ._async import (
        Code,
        CommandHandle,
        Commands,
        Files,
        FileStream,
        Pty,
        Sandbox,
        WatchHandle,
    )
    from ._native import CancelToken
    from ._sync import Network
    from ._sync import Sandbox as SandboxSync
    from .decorator import RemoteError, RemoteTraceback, sandbox
    from .volumes import Volume, VolumeSync

_LAZY = {
    "Sandbox": ("._async", "Sandbox"),
    "Code": ("._async", "Code"),
    "CommandHandle": ("._async", "CommandHandle"),
    "Commands": ("._async", "Commands"),
    "Files": ("._async", "Files"),
    "FileStream": ("._async", "FileStream"),
    "Pty": ("._async", "Pty"),
    "WatchHandle": ("._async", "WatchHandle"),
    "CancelToken": ("._native", "CancelToken"),
    "Network": ("._sync", "Network"),
    "SandboxSync": ("._sync", "Sandbox"),
    "RemoteError": (".decorator", "RemoteError"),
    "RemoteTraceback": (".decorator", "RemoteTraceback"),
    "sandbox": (".decorator", "sandbox"),
    "Volume": (".volumes", "Volume"),
    "VolumeSync": (".volumes", "VolumeSync"),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where[0], __name__), where[1])
    globals()[name] = value
    return value


def __dir__() -> "list[str]":
    return sorted(set(globals()) | set(_LAZY))


__version__ = "1.0.0"


def library_version() -> str:
    """The version of the libagentsandbox this module runs against."""
    from . import lowlevel

    return lowlevel.asb_version()[0]


__all__ = [
    "Sandbox",
    "SandboxSync",
    "Commands",
    "CommandHandle",
    "Pty",
    "Files",
    "FileStream",
    "WatchHandle",
    "Network",
    "Code",
    "CancelToken",
    "Volume",
    "VolumeSync",
    "library_version",
    "sandbox",
    "RemoteError",
    "RemoteTraceback",
    "exceptions",
    "models",
    *exceptions.__all__,
    *models.__all__,
]
