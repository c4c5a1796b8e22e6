"""Exceptions, mirroring the E2B SDK's hierarchy.

Every error the C library reports (a negative ``asb_status``) becomes one of
these classes; the table is in docs/python.md. As in E2B,
:class:`AuthenticationException` and :class:`BuildException` are not
:class:`SandboxException` subclasses; all of them derive from
:class:`AgentSandboxError`, which carries the library's details:

- ``code``: the ``asb_status`` value (negative int), ``status``: its name
  (``"ASB_ENOTFOUND"``);
- ``http_status``: the HTTP status of the failing reply (0 if none);
- ``remote_code``: the server's own error code (``"not_found"``, a named
  command's exception type, ...);
- ``retry_after``: seconds to wait on rate limits (-1 if unknown);
- ``reason``: why a sandbox is gone (``"timeout"``, ``"killed"``, ``"oom"``).
"""

from __future__ import annotations

from typing import Optional

__all__ = [
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
    "FileUploadException",
    "CommandNotFoundError",
    "CommandFailedError",
    "OperationCancelledError",
    "PermissionDeniedException",
    "GitAuthException",
    "GitUpstreamException",
    "VolumeException",
    "VolumeNotFoundException",
    "VolumePathNotFoundException",
    "AgentTurnError",
    "VolumeException",
    "VolumeNotFoundException",
    "VolumePathNotFoundException",
    "SecretException",
    "SecretNotFoundException",
]


class AgentSandboxError(Exception):
    """Base of every exception this package raises for a failed call."""

    code: int = -1
    status: str = "ASB_ERROR"
    http_status: int = 0
    remote_code: str = ""
    retry_after: int = -1
    reason: str = ""

    def __init__(self, message: str = "", *args: object, **details: object) -> None:
        super().__init__(message, *args)
        self.message = message
        for key, value in details.items():
            setattr(self, key, value)

    def __str__(self) -> str:
        return self.message or super().__str__()


class SandboxException(AgentSandboxError):
    """Base class for all sandbox errors (E2B's ``SandboxException``)."""


class TimeoutException(SandboxException):
    """A timeout: the request's, the command's or the run's; also an unreachable sandbox."""


class InvalidArgumentException(SandboxException):
    """An invalid argument was given (HTTP 400, ``invalid_argument``)."""


class NotEnoughSpaceException(SandboxException):
    """The sandbox's disk is full (HTTP 507)."""


class NotFoundException(SandboxException):
    """A resource (file, process, context, session) was not found."""


class FileNotFoundException(NotFoundException):
    """A file or directory inside the sandbox was not found."""


class SandboxNotFoundException(NotFoundException):
    """The sandbox does not exist (or no longer runs)."""


class SandboxGoneException(SandboxNotFoundException):
    """The sandbox existed and ended; ``reason`` says why (``timeout``, ``killed``, ``oom``)."""


class VolumeException(AgentSandboxError):
    """A failed volume call (E2B's ``VolumeException``: not a
    :class:`SandboxException`, as in E2B). agent_sandbox.compat's Volume
    raises it, with ``"<HTTP status>: <message>"``, for what has no class
    of its own; the native Volume keeps the general classes."""


class VolumeNotFoundException(NotFoundException):
    """The volume does not exist (E2B's ``VolumeNotFoundException``)."""


class VolumePathNotFoundException(NotFoundException):
    """Nothing is at that path of the volume (E2B's ``VolumePathNotFoundException``)."""


class AuthenticationException(AgentSandboxError):
    """Authentication failed (API key or envd access token)."""


class GitAuthException(AuthenticationException):
    """A git remote wanted credentials, or refused the ones given (``sandbox.git``)."""


class GitUpstreamException(SandboxException):
    """``sandbox.git`` push/pull on a branch that has no upstream, naming no remote."""


class TemplateException(SandboxException):
    """The template cannot be used (e.g. its envd is too old, its start command failed)."""


class RateLimitException(SandboxException):
    """The API rate limit was hit; ``retry_after`` says when to retry."""


class PermissionDeniedException(SandboxException):
    """The sandbox user may not do this (permission denied)."""


class OperationCancelledError(SandboxException):
    """The call was cancelled through a :class:`~agent_sandbox.CancelToken` (sync API).

    The async API raises :class:`asyncio.CancelledError` instead.
    """


class CommandExitException(SandboxException):
    """A command exited with a non-zero exit code.

    Like E2B's, it carries the command's result: ``stdout``, ``stderr``,
    ``exit_code`` and ``error``.
    """

    def __init__(
        self,
        message: str = "",
        *,
        stdout: str = "",
        stderr: str = "",
        exit_code: int = 1,
        error: Optional[str] = None,
        **details: object,
    ) -> None:
        super().__init__(message, **details)
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code
        self.error = error

    def __str__(self) -> str:
        return f"Command exited with code {self.exit_code} and error:\n{self.stderr}"


class BuildException(AgentSandboxError):
    """A template build failed (a step failed; the message ends with its output)."""


class FileUploadException(BuildException):
    """The files of a template's COPY step could not be uploaded (E2B's name)."""


class CommandNotFoundError(NotFoundException):
    """``sandbox.run(name)``: the sandbox serves no command of that name.

    The message lists the commands it does serve.
    """


class CommandFailedError(SandboxException):
    """``sandbox.run(name)``: the named command raised.

    ``type`` is the remote exception's type name (``"ValueError"``) and the
    message its message.
    """

    @property
    def type(self) -> str:
        return self.remote_code


class AgentTurnError(SandboxException):
    """An agent session's turn failed (the agent or its model endpoint
    reported an error, or the agent could not be installed or started).

    ``turn`` is the :class:`~agent_sandbox.agents.AgentTurn`: its ``error``
    says why, its events are in the session's log.
    """

    turn: object = None


class VolumeException(AgentSandboxError):
    """A volume call failed (E2B's ``VolumeException``; like E2B's, not a
    :class:`SandboxException`). Raised by ``agent_sandbox.compat``'s
    ``Volume``/``AsyncVolume``, e.g. writing an existing file without
    ``force``."""


class VolumeNotFoundException(NotFoundException):
    """No volume of that id or name (E2B's ``VolumeNotFoundException``)."""


class VolumePathNotFoundException(NotFoundException):
    """No file or directory at that path in the volume (E2B's
    ``VolumePathNotFoundException``)."""


class SecretException(AgentSandboxError):
    """A secrets call failed (E2B's ``SecretException``; not a
    :class:`SandboxException`)."""


class SecretNotFoundException(SecretException):
    """No secret of that id or name (E2B's ``SecretNotFoundException``)."""
