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
  :func:`sandbox` (the decorator): run a function in a sandbox;
  :mod:`agent_sandbox.server`: serve named commands from inside a template;
- :mod:`agent_sandbox.lowlevel`: the SWIG module over the C ABI.
"""

from . import exceptions, models
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
from .decorator import RemoteError, RemoteTraceback, sandbox
from ._sync import Network
from ._sync import Sandbox as SandboxSync
from .exceptions import (
    AgentSandboxError,
    AuthenticationException,
    BuildException,
    CommandExitException,
    CommandFailedError,
    CommandNotFoundError,
    FileNotFoundException,
    InvalidArgumentException,
    NotEnoughSpaceException,
    NotFoundException,
    OperationCancelledError,
    PermissionDeniedException,
    RateLimitException,
    SandboxException,
    SandboxGoneException,
    SandboxNotFoundException,
    TemplateException,
    TimeoutException,
)
from .models import (
    CommandArg,
    CommandInfo,
    CommandResult,
    Context,
    EntryInfo,
    Execution,
    ExecutionError,
    FilesystemEvent,
    FilesystemEventType,
    FileType,
    Logs,
    OutputMessage,
    ProcessInfo,
    PtySize,
    Result,
    SandboxInfo,
    SandboxMetrics,
    SandboxState,
    SessionInfo,
    TemplateInfo,
    WriteInfo,
)
from . import lowlevel as _ll

__version__ = "1.0.0"


def library_version() -> str:
    """The version of the libagentsandbox this module runs against."""
    return _ll.asb_version()[0]


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
    "library_version",
    "sandbox",
    "RemoteError",
    "RemoteTraceback",
    # exceptions
    "AgentSandboxError",
    "SandboxException",
    "TimeoutException",
    "InvalidArgumentException",
    "NotEnoughSpaceException",
    "NotFoundException",
    "FileNotFoundException",
    "SandboxNotFoundException",
    "SandboxGoneException",
    "AuthenticationException",
    "TemplateException",
    "RateLimitException",
    "CommandExitException",
    "BuildException",
    "CommandNotFoundError",
    "CommandFailedError",
    "OperationCancelledError",
    "PermissionDeniedException",
    # models
    "CommandResult",
    "ProcessInfo",
    "PtySize",
    "FileType",
    "EntryInfo",
    "WriteInfo",
    "FilesystemEvent",
    "FilesystemEventType",
    "SandboxState",
    "SandboxInfo",
    "SandboxMetrics",
    "Result",
    "Logs",
    "ExecutionError",
    "Execution",
    "OutputMessage",
    "Context",
    "CommandArg",
    "CommandInfo",
    "SessionInfo",
    "TemplateInfo",
    "exceptions",
    "models",
]
