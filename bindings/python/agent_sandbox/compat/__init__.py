"""E2B's Python SDK names and signatures over agent-sandbox.

Change only the import line of an E2B program::

    from e2b import Sandbox, AsyncSandbox            # before
    from agent_sandbox.compat import Sandbox, AsyncSandbox   # after

    from e2b_code_interpreter import Sandbox                  # before
    from agent_sandbox.compat.code_interpreter import Sandbox  # after

Behaviour follows E2B where it differs from the native API:
``commands.run`` raises :class:`CommandExitException` for a non-zero exit
code, ``files.read(format="bytes")`` returns a ``bytearray``, run_code's
``execution.text`` is the main result's text only, its ``on_stdout`` gets
:class:`OutputMessage` objects, ``Sandbox.list()`` returns a paginator,
``kill``/``set_timeout``/``get_info``/``get_metrics``/``pause`` work on an
instance or as ``Sandbox.kill(sandbox_id)``. docs/python-compat.md lists
what is covered, method by method, and what is not.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import functools
import inspect
import time
import warnings
from dataclasses import dataclass
from typing import IO, Any, Callable, Dict, List, Optional, Tuple, TypedDict, Union

from .. import _async as A
from .. import _native as N
from .. import _sync as S
from .. import lowlevel as ll
from ..exceptions import AgentSandboxError
from ..exceptions import (
    AuthenticationException,
    BuildException,
    CommandExitException,
    FileNotFoundException,
    GitAuthException,
    GitUpstreamException,
    InvalidArgumentException,
    NotEnoughSpaceException,
    NotFoundException,
    RateLimitException,
    SandboxException,
    SandboxGoneException,
    SandboxNotFoundException,
    SecretException,
    SecretNotFoundException,
    TemplateException,
    TimeoutException,
    VolumeException,
    VolumeNotFoundException,
    VolumePathNotFoundException,
)
from ..models import (
    CommandResult,
    Context,
    EntryInfo,
    ExecutionError,
    FilesystemEvent,
    FilesystemEventType,
    FileType,
    GitBranches,
    GitFileStatus,
    GitStatus,
    Logs,
    OutputMessage,
    ProcessInfo,
    PtySize,
    Result,
    SandboxInfo,
    SandboxMetrics,
    SandboxState,
    WriteInfo,
)
from ..models import Execution as _NativeExecution
from ..git import AsyncGit, Git
from .._netconf import ALL_TRAFFIC
from .._netconf import EgressProxy as SandboxEgressProxyOpts
from .._netconf import EgressProxyInfo as SandboxEgressProxyInfo
from .._netconf import NetworkInfo as SandboxNetworkInfo
from .._netconf import NetworkOpts as SandboxNetworkOpts
from .._netconf import NetworkUpdate as SandboxNetworkUpdate
from .._netconf import Rule as SandboxNetworkRule
from .._netconf import Rules as SandboxNetworkRules
from .._netconf import SelectorContext as SandboxNetworkSelectorContext
from .._netconf import Selector as SandboxNetworkSelector
from .._netconf import Transform as SandboxNetworkTransform
from .._netconf import TransformContext as SandboxNetworkTransformContext
from .connection_config import ConnectionConfig

__all__ = [
    "ALL_TRAFFIC",
    "SandboxEgressProxyOpts",
    "SandboxEgressProxyInfo",
    "SandboxNetworkInfo",
    "SandboxNetworkOpts",
    "SandboxNetworkUpdate",
    "SandboxNetworkRule",
    "SandboxNetworkRules",
    "SandboxNetworkSelector",
    "SandboxNetworkSelectorContext",
    "SandboxNetworkTransform",
    "SandboxNetworkTransformContext",
    "Sandbox",
    "AsyncSandbox",
    "CommandResult",
    "CommandHandle",
    "AsyncCommandHandle",
    "CommandExitException",
    "ProcessInfo",
    "PtySize",
    "EntryInfo",
    "WriteInfo",
    "FileType",
    "FilesystemEvent",
    "FilesystemEventType",
    "WatchHandle",
    "AsyncWatchHandle",
    "SandboxInfo",
    "SandboxQuery",
    "SandboxState",
    "SandboxMetrics",
    "SandboxPaginator",
    "AsyncSandboxPaginator",
    "SnapshotInfo",
    "SnapshotPaginator",
    "AsyncSnapshotPaginator",
    "Execution",
    "Result",
    "Logs",
    "ExecutionError",
    "OutputMessage",
    "Context",
    "SandboxException",
    "TimeoutException",
    "NotFoundException",
    "FileNotFoundException",
    "SandboxNotFoundException",
    "AuthenticationException",
    "InvalidArgumentException",
    "NotEnoughSpaceException",
    "TemplateException",
    "RateLimitException",
    "BuildException",
    "WriteEntry",
    "Git",
    "AsyncGit",
    "GitStatus",
    "GitFileStatus",
    "GitBranches",
    "GitAuthException",
    "GitUpstreamException",
    "Volume",
    "AsyncVolume",
    "VolumeInfo",
    "VolumeAndToken",
    "VolumeEntryStat",
    "VolumeFileType",
    "VolumeConnectionConfig",
    "VolumeApiParams",
    "VolumeException",
    "VolumeNotFoundException",
    "VolumePathNotFoundException",
    "SecretException",
    "SecretNotFoundException",
    "Secret",
    "AsyncSecret",
    "SecretInfo",
    "SecretPaginator",
    "AsyncSecretPaginator",
    # E2B's Template builder (template/, template_sync/, template_async/)
    "Template",
    "AsyncTemplate",
    "TemplateBase",
    "TemplateBuilder",
    "TemplateFinal",
    "TemplateClass",
    "BuildInfo",
    "BuildStatusReason",
    "CopyItem",
    "InstructionType",
    "TemplateBuildStatus",
    "TemplateBuildStatusResponse",
    "TemplateTag",
    "TemplateTagInfo",
    "LogEntry",
    "LogEntryStart",
    "LogEntryEnd",
    "LogEntryLevel",
    "default_build_logger",
    "ReadyCmd",
    "wait_for_port",
    "wait_for_url",
    "wait_for_process",
    "wait_for_file",
    "wait_for_timeout",
    "FileUploadException",
]

DEFAULT_TEMPLATE = "base"
# E2B's `mcp` option: the template whose `mcp-gateway` serves the configured
# MCP servers on MCP_PORT (docs/mcp.md, "The gateway")
DEFAULT_MCP_TEMPLATE = "mcp-gateway"
MCP_PORT = 50005

# E2B's ApiParams -> our connection options.
_IGNORED_OPTS = ("validate_api_key", "proxy", "logger")


def _conn(opts: Dict[str, Any]) -> Dict[str, Any]:
    conn: Dict[str, Any] = {}
    for k, v in opts.items():
        if v is None:
            continue
        if k in ("api_headers", "headers"):
            conn.setdefault("headers", {}).update(v)
        elif k in _IGNORED_OPTS:
            continue
        elif k in N.CLIENT_KEYS:
            conn[k] = v
        else:
            raise TypeError(f"unexpected keyword argument {k!r}")
    return conn


def _cmd_timeout(timeout: Optional[float]) -> float:
    """E2B: None and 0 disable the command timeout (native: 0)."""
    return timeout or 0


def _unsupported(name: str, value: Any, default: Any) -> None:
    if value is not None and value != default:
        warnings.warn(f"agent_sandbox.compat: {name}={value!r} is not supported and is ignored",
                      stacklevel=3)


_GONE_MESSAGE = ("{}: The sandbox was killed or reached its end of life while the request "
                 "was in flight.")


def _gone_as_timeout(fn: Callable[..., Any]) -> Callable[..., Any]:
    """E2B raises TimeoutException when the sandbox dies under a call (its
    envd connection drops); ours knows it is gone (SandboxGoneException)."""

    @functools.wraps(fn)
    def sync_wrapper(*a: Any, **kw: Any) -> Any:
        try:
            return fn(*a, **kw)
        except SandboxGoneException as e:
            raise TimeoutException(_GONE_MESSAGE.format(e), code=e.code, status=e.status,
                                   reason=e.reason) from e

    @functools.wraps(fn)
    async def async_wrapper(*a: Any, **kw: Any) -> Any:
        try:
            return await fn(*a, **kw)
        except SandboxGoneException as e:
            raise TimeoutException(_GONE_MESSAGE.format(e), code=e.code, status=e.status,
                                   reason=e.reason) from e

    return async_wrapper if inspect.iscoroutinefunction(fn) else sync_wrapper


class _dual:
    """A method callable on an instance (``sbx.kill()``) or on the class
    with a sandbox id first (``Sandbox.kill(sandbox_id)``), as E2B's
    ``class_method_variant``."""

    def __init__(self, inst: Callable[..., Any], cls: Callable[..., Any]) -> None:
        self._inst = inst
        self._cls = cls
        functools.update_wrapper(self, inst)  # type: ignore[arg-type]

    def __get__(self, obj: Any, owner: Any) -> Callable[..., Any]:
        if obj is None:
            return functools.partial(self._cls, owner)
        return functools.partial(self._inst, obj)


# ---- results --------------------------------------------------------------------------


class Execution(_NativeExecution):
    """E2B's Execution: ``text`` is the main result's text only."""

    @property
    def text(self) -> Optional[str]:  # type: ignore[override]
        main = self.main_result
        return main.text if main is not None else None

    @classmethod
    def _of(cls, ex: _NativeExecution) -> "Execution":
        return cls(results=[_typed_result(r) for r in ex.results], logs=ex.logs, error=ex.error,
                   execution_count=ex.execution_count)

    def to_json(self) -> str:
        import json

        results = []
        for r in self.results:
            d = {f: (r.chart.to_dict() if f == "chart" else r[f])
                 for f in r.formats() if f not in (r.extra or {})}
            d["text"] = r.text
            results.append(d)
        return json.dumps({"results": results, "logs": self.logs.to_json(),
                           "error": self.error.to_json() if self.error else None})


def _typed_result(r: Result) -> Result:
    """E2B's Result: ``chart`` is a typed chart (compat.charts), not a dict."""
    from .charts import _deserialize_chart

    if isinstance(r.chart, dict):
        try:
            r.chart = _deserialize_chart(r.chart)
        except Exception:  # an unknown shape: E2B logs it and leaves no chart
            r.chart = None
    return r


def _typed_on_result(fn: Any) -> Any:
    return (lambda r: fn(_typed_result(r))) if fn else None


_KILLED = ("The sandbox was killed while the request was in progress. This can happen when "
           "the sandbox times out or is killed manually. You can modify the sandbox timeout by "
           "passing 'timeout' when starting the sandbox or calling '.set_timeout' on the "
           "sandbox with the desired timeout")


def _killed_error(exc: BaseException, running: Callable[[], Any]) -> Optional[BaseException]:
    """E2B's TimeoutException when a run ended because the sandbox is gone
    (asked after the failure, as E2B does), else None."""
    if isinstance(exc, (InvalidArgumentException, AuthenticationException)):
        return None
    try:
        alive = running()
    except SandboxNotFoundException:
        alive = False
    except Exception:
        return None
    return None if alive else TimeoutException(_KILLED)


@dataclass
class SandboxQuery:
    """Filters of :meth:`Sandbox.list`."""

    metadata: Optional[Dict[str, str]] = None
    state: Optional[List[SandboxState]] = None
    started_after: Optional[_dt.datetime] = None
    template: Optional[str] = None


class _Pages:
    """What E2B's paginators share: the next page's token and whether there is one."""

    def __init__(self, next_token: Optional[str], opts: Dict[str, Any]) -> None:
        self._next_token = next_token
        self._has_next = True
        self._conn = _conn(opts)

    @property
    def has_next(self) -> bool:
        return self._has_next

    @property
    def next_token(self) -> Optional[str]:
        return self._next_token


class _PaginatorBase(_Pages):
    def __init__(self, query: Optional[SandboxQuery] = None, limit: Optional[int] = None,
                 next_token: Optional[str] = None, order: Optional[str] = None,
                 **opts: Any) -> None:
        super().__init__(next_token, opts)
        self.query = query
        self.limit = limit
        self.order = order


    def _fetch(self) -> List[SandboxInfo]:
        if not self._has_next:
            raise SandboxException("No more items to fetch")
        q = self.query or SandboxQuery()
        # started_after goes to the engine, as E2B sends it (pages stay full)
        items, token = S.Sandbox._list_page(metadata=q.metadata, state=q.state,
                                            template=q.template, limit=self.limit,
                                            next_token=self._next_token,
                                            started_after=q.started_after, **self._conn)
        self._next_token = token
        self._has_next = bool(token)
        if self.order == "asc":
            items.reverse()
        return items


class SandboxPaginator(_PaginatorBase):
    """``while paginator.has_next: items = paginator.next_items()``."""

    def next_items(self) -> List[SandboxInfo]:
        return self._fetch()


class AsyncSandboxPaginator(_PaginatorBase):
    """``while paginator.has_next: items = await paginator.next_items()``."""

    async def next_items(self) -> List[SandboxInfo]:
        return await N.run(self._fetch)


@dataclass
class SnapshotInfo:
    """E2B's ``SnapshotInfo``: the id (``"<name>:default"``, what
    ``Sandbox.create`` takes) and its full names."""

    snapshot_id: str
    names: List[str]


class _SnapshotPaginatorBase(_Pages):
    """E2B's snapshot paginator. The library follows every page itself, so
    the first ``next_items()`` returns them all (``limit`` is not a page size
    here) and ``has_next`` is then False."""

    def __init__(self, sandbox_id: Optional[str] = None, limit: Optional[int] = None,
                 next_token: Optional[str] = None, name: Optional[str] = None,
                 **opts: Any) -> None:
        super().__init__(next_token, opts)
        self.sandbox_id = sandbox_id
        self.name = name
        self.limit = limit


    def _fetch(self) -> List[SnapshotInfo]:
        if not self._has_next:
            raise SandboxException("No more items to fetch")
        ids = S.Sandbox.list_snapshots(sandbox_id=self.sandbox_id, name=self.name, **self._conn)
        self._has_next = False
        self._next_token = None
        return [SnapshotInfo(snapshot_id=i, names=[i]) for i in ids]


class SnapshotPaginator(_SnapshotPaginatorBase):
    """``while paginator.has_next: items = paginator.next_items()``."""

    def next_items(self) -> List[SnapshotInfo]:
        return self._fetch()


class AsyncSnapshotPaginator(_SnapshotPaginatorBase):
    """``while paginator.has_next: items = await paginator.next_items()``."""

    async def next_items(self) -> List[SnapshotInfo]:
        return await N.run(self._fetch)


def _snapshot(s: S.Sandbox, name: Optional[str]) -> SnapshotInfo:
    sid = s.create_snapshot(name)
    return SnapshotInfo(snapshot_id=sid, names=[sid])


def _forks(s: S.Sandbox, timeout: Optional[int], count: Optional[int],
           keep_processes: Optional[bool] = None) -> List[Any]:
    """E2B's fork: one entry per fork, a sandbox or the exception that kept
    it from starting (one call: one snapshot, then count sandboxes from it).
    E2B's SDK defaults the lifetime to 300 s and refuses a count below 1
    before asking (E2B's message). keep_processes (ours): False boots the
    forks fresh on the files on a --pause-criu engine (docs/snapshots.md)."""
    if count is not None and count < 1:
        raise InvalidArgumentException("count must be at least 1")
    return s.fork_many(count or 1, timeout=timeout or 300, keep_processes=keep_processes)


# ---- sync: commands, pty, files -------------------------------------------------------------


class CommandHandle:
    """E2B's (sync) CommandHandle: ``wait()`` raises on a non-zero exit code."""

    def __init__(self, h: S.CommandHandle) -> None:
        self._h = h

    @property
    def pid(self) -> int:
        return self._h.pid

    def __iter__(self) -> Any:
        return iter(self._h)

    @_gone_as_timeout
    def wait(self, on_pty: Optional[Callable[[bytes], Any]] = None,
             on_stdout: Optional[Callable[[str], Any]] = None,
             on_stderr: Optional[Callable[[str], Any]] = None) -> CommandResult:
        return self._h.wait(on_stdout=on_stdout, on_stderr=on_stderr, on_pty=on_pty, check=True)

    def kill(self) -> bool:
        return self._h.kill()

    def send_stdin(self, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        self._h.send_stdin(data, request_timeout)

    def close_stdin(self, request_timeout: Optional[float] = None) -> None:
        self._h.close_stdin(request_timeout)

    def disconnect(self) -> None:
        self._h.disconnect()


# A kill by pid answers once envd has sent SIGKILL; until envd has reaped
# the process it is a zombie, which `kill -0 <pid>` still finds (E2B's
# test_kill_pty runs that right after pty.kill). So compat's kill by pid
# returns once the process has left envd's list (reaped), or after
# _KILL_WAIT s (a process the kernel cannot end at once), whichever first.
_KILL_WAIT = 10.0
_KILL_STEP = 0.02


def _listed(procs: List[Any], pid: int) -> bool:
    return any(getattr(p, "pid", None) == pid for p in procs)


def _wait_gone(list_fn: Callable[[], List[Any]], pid: int) -> None:
    deadline = time.monotonic() + _KILL_WAIT
    while time.monotonic() < deadline:
        try:
            if not _listed(list_fn(), pid):
                return
        except AgentSandboxError:  # the sandbox went meanwhile: the process too
            return
        time.sleep(_KILL_STEP)


async def _await_gone(list_fn: Callable[[], Any], pid: int) -> None:
    deadline = time.monotonic() + _KILL_WAIT
    while time.monotonic() < deadline:
        try:
            if not _listed(await list_fn(), pid):
                return
        except AgentSandboxError:
            return
        await asyncio.sleep(_KILL_STEP)


class Commands:
    def __init__(self, c: S.Commands) -> None:
        self._c = c

    def run(self, cmd: str, background: Optional[bool] = None,
            envs: Optional[Dict[str, str]] = None, user: Optional[str] = None,
            cwd: Optional[str] = None, on_stdout: Optional[Callable[[str], Any]] = None,
            on_stderr: Optional[Callable[[str], Any]] = None, stdin: Optional[bool] = None,
            timeout: Optional[float] = 60, request_timeout: Optional[float] = None) -> Any:
        if background:
            return CommandHandle(self._c.run(cmd, background=True, envs=envs, user=user, cwd=cwd,
                                             on_stdout=on_stdout, on_stderr=on_stderr,
                                             stdin=bool(stdin), timeout=_cmd_timeout(timeout),
                                             request_timeout=request_timeout))
        return self._c.run(cmd, envs=envs, user=user, cwd=cwd, on_stdout=on_stdout,
                           on_stderr=on_stderr, stdin=bool(stdin), timeout=_cmd_timeout(timeout),
                           request_timeout=request_timeout, check=True)

    def connect(self, pid: int, timeout: Optional[float] = 60,
                request_timeout: Optional[float] = None) -> CommandHandle:
        return CommandHandle(self._c.connect(pid, timeout=timeout or None,
                                             request_timeout=request_timeout))

    def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        return self._c.list(request_timeout)

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """SIGKILL to the process; True once it is gone (see _KILL_WAIT)."""
        if not self._c.kill(pid, request_timeout):
            return False
        _wait_gone(lambda: self._c.list(request_timeout), pid)
        return True

    def send_stdin(self, pid: int, data: Union[str, bytes],
                   request_timeout: Optional[float] = None) -> None:
        self._c.send_stdin(pid, data, request_timeout)

    def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        self._c.close_stdin(pid, request_timeout)


class Pty:
    def __init__(self, p: S.Pty, c: S.Commands) -> None:
        self._p = p
        self._c = c

    def create(self, size: PtySize, user: Optional[str] = None, cwd: Optional[str] = None,
               envs: Optional[Dict[str, str]] = None, timeout: Optional[float] = 60,
               request_timeout: Optional[float] = None) -> CommandHandle:
        return CommandHandle(self._p.create(size, None, user=user, cwd=cwd, envs=envs,
                                            timeout=_cmd_timeout(timeout),
                                            request_timeout=request_timeout))

    def connect(self, pid: int, timeout: Optional[float] = 60,
                request_timeout: Optional[float] = None) -> CommandHandle:
        return CommandHandle(self._p.connect(pid, None, timeout=timeout or None,
                                             request_timeout=request_timeout))

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """SIGKILL to the terminal's process; True once it is gone."""
        if not self._p.kill(pid, request_timeout):
            return False
        _wait_gone(lambda: self._c.list(request_timeout), pid)
        return True

    def send_stdin(self, pid: int, data: bytes, request_timeout: Optional[float] = None) -> None:
        self._p.send_stdin(pid, data, request_timeout)

    def resize(self, pid: int, size: PtySize, request_timeout: Optional[float] = None) -> None:
        self._p.resize(pid, size, request_timeout)


class WatchHandle:
    """E2B's sync WatchHandle: poll with ``get_new_events()``, end with ``stop()``."""

    def __init__(self, h: S.WatchHandle) -> None:
        self._h = h

    def get_new_events(self, request_timeout: Optional[float] = None) -> List[FilesystemEvent]:
        """The events since the last call: as E2B's, the watcher's in envd
        (a polling watch), so every change made before the call is in it."""
        return self._h.get_new_events(request_timeout=request_timeout)

    def stop(self, request_timeout: Optional[float] = None) -> None:
        self._h.stop()


def _read_result(data: Any, format: str) -> Any:
    if format == "stream":
        # E2B raises at read() (FileNotFoundException for a missing file);
        # the native stream defers the error to its first chunk.
        sync = getattr(data, "_s", data)
        err = getattr(sync, "_error", None)
        if err is not None:
            sync._error = None
            raise err
    return bytearray(data) if format == "bytes" else data


def _depth(depth: Optional[int]) -> int:
    """E2B: None is 1; below 1 is refused with its message."""
    if depth is None:
        return 1
    if depth < 1:
        raise InvalidArgumentException("depth should be at least 1")
    return depth




class WriteEntry(TypedDict):
    """E2B's entry of ``files.write_files``: a path and its data."""

    path: str
    data: Union[str, bytes, IO[Any]]


def _write_entries(files: List[Any]) -> List[Any]:
    return [f if not isinstance(f, dict) else {"path": f["path"], "data": f["data"]} for f in files]


class Filesystem:
    def __init__(self, f: S.Files) -> None:
        self._f = f

    def read(self, path: str, format: str = "text", user: Optional[str] = None,
             request_timeout: Optional[float] = None, gzip: bool = False,
             stream_idle_timeout: Optional[float] = None) -> Any:
        return _read_result(self._f.read(path, format, user=user, request_timeout=request_timeout,
                                         gzip=gzip), format)

    def write(self, path: str, data: Any, user: Optional[str] = None,
              request_timeout: Optional[float] = None, gzip: bool = False,
              use_octet_stream: Optional[bool] = None,
              metadata: Optional[Dict[str, str]] = None) -> WriteInfo:
        return self._f.write(path, data, user=user, request_timeout=request_timeout, gzip=gzip,
                             metadata=metadata)

    def write_files(self, files: List[Any], user: Optional[str] = None,
                    request_timeout: Optional[float] = None, gzip: bool = False,
                    use_octet_stream: Optional[bool] = None,
                    metadata: Optional[Dict[str, str]] = None) -> List[WriteInfo]:
        return list(self._f.write_files(_write_entries(files), user=user,
                                        request_timeout=request_timeout, gzip=gzip,
                                        metadata=metadata))

    def list(self, path: str, depth: Optional[int] = 1, user: Optional[str] = None,
             request_timeout: Optional[float] = None) -> List[EntryInfo]:
        return self._f.list(path, _depth(depth), user=user, request_timeout=request_timeout)

    def exists(self, path: str, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> bool:
        return self._f.exists(path, user=user, request_timeout=request_timeout)

    def get_info(self, path: str, user: Optional[str] = None,
                 request_timeout: Optional[float] = None) -> EntryInfo:
        return self._f.get_info(path, user=user, request_timeout=request_timeout)

    def remove(self, path: str, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> None:
        self._f.remove(path, user=user, request_timeout=request_timeout)

    def rename(self, old_path: str, new_path: str, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> EntryInfo:
        return self._f.rename(old_path, new_path, user=user, request_timeout=request_timeout)

    def make_dir(self, path: str, user: Optional[str] = None,
                 request_timeout: Optional[float] = None) -> bool:
        return self._f.make_dir(path, user=user, request_timeout=request_timeout)

    def watch_dir(self, path: str, user: Optional[str] = None,
                  request_timeout: Optional[float] = None, recursive: bool = False,
                  include_entry: bool = False, allow_network_mounts: bool = False) -> WatchHandle:
        return WatchHandle(self._f.watch_dir(path, recursive=recursive,
                                             include_entry=include_entry, user=user,
                                             polling=True, request_timeout=request_timeout))


# ---- sync sandbox ---------------------------------------------------------------------------


def _lifecycle(lifecycle: Any) -> Tuple[bool, bool, bool]:
    """E2B's ``lifecycle`` checks (build_lifecycle_config), same messages;
    (whether a timeout pauses, whether that pause keeps memory, auto_resume)."""
    if not lifecycle:
        return False, True, False
    raw = lifecycle.get("on_timeout")
    if isinstance(raw, dict):
        action = raw.get("action", "kill")
        keep_memory_given = "keep_memory" in raw
        keep_memory = raw.get("keep_memory")
    else:
        action = raw if raw is not None else "kill"
        keep_memory_given, keep_memory = False, None
    if keep_memory_given and action != "pause":
        raise InvalidArgumentException(
            "keep_memory is only allowed when on_timeout action is 'pause'.")
    if keep_memory is None:
        keep_memory = True
    auto_resume = lifecycle.get("auto_resume")
    if auto_resume and action != "pause":
        raise InvalidArgumentException(
            "auto_resume can only be True when on_timeout action is 'pause'.")
    if not keep_memory and auto_resume:
        raise InvalidArgumentException(
            "auto_resume: True is not a valid value when keep_memory: False - "
            "a filesystem-only snapshot cannot be auto-resumed by traffic and "
            "must be resumed explicitly using Sandbox.connect().")
    return bool(action == "pause"), bool(keep_memory), bool(auto_resume)


def _lifecycle_body(lifecycle: Any) -> Dict[str, Any]:
    """E2B's create-body fields of ``lifecycle`` (checked by _lifecycle):
    each only when configured, so the API keeps its defaults otherwise
    (no ``on_timeout``: no autoPause; no ``keep_memory``: no
    autoPauseMemory; no ``auto_resume``: no autoResume)."""
    from .api.client.models import SandboxAutoResumeConfig
    from .api.client.types import UNSET

    _lifecycle(lifecycle)
    out: Dict[str, Any] = dict(auto_pause=UNSET, auto_pause_memory=UNSET, auto_resume=UNSET)
    if not lifecycle:
        return out
    raw = lifecycle.get("on_timeout")
    if raw is not None:
        action = raw.get("action", "kill") if isinstance(raw, dict) else raw
        out["auto_pause"] = action == "pause"
        if isinstance(raw, dict) and raw.get("keep_memory") is not None:
            out["auto_pause_memory"] = bool(raw["keep_memory"])
    if lifecycle.get("auto_resume") is not None:
        out["auto_resume"] = SandboxAutoResumeConfig(enabled=bool(lifecycle["auto_resume"]))
    return out


def _volume_mounts_body(mounts: Any) -> Any:
    """E2B's ``volume_mounts`` ({path: volume or its name}) as its body's
    list of ``{"name", "path"}``."""
    from .api.client.types import UNSET

    if not mounts:
        return UNSET
    out = []
    for path, vol in mounts.items():
        name = vol if isinstance(vol, str) else getattr(vol, "name", None)
        if not isinstance(path, str) or not isinstance(name, str):
            raise TypeError("volume_mounts maps a mount path to a volume name (or a Volume)")
        out.append({"name": name, "path": path})
    return out


def _create_body(template: str, timeout: Optional[int], metadata: Any, envs: Any,
                 secure: bool, allow_internet_access: bool, mcp: Any, network: Any, iam: Any,
                 lifecycle: Any, volume_mounts: Any) -> Any:
    """E2B's ``NewSandbox`` body of a create, as its SDK builds it (e2b.api's
    ``post_sandboxes`` sends it through the library)."""
    from .._netconf import to_wire
    from .api.client.models import NewSandbox, SandboxNetworkConfig
    from .api.client.types import UNSET

    _unsupported("iam", iam, None)
    net = to_wire(network)
    return NewSandbox(template_id=template, timeout=timeout or 300, **_lifecycle_body(lifecycle),
                      metadata=metadata or {}, env_vars=envs or {},
                      mcp=mcp if mcp is not None else UNSET, secure=secure,
                      allow_internet_access=allow_internet_access,
                      network=SandboxNetworkConfig.from_dict(net) if net is not None else UNSET,
                      volume_mounts=_volume_mounts_body(volume_mounts))


class Sandbox:
    """E2B's ``Sandbox`` (sync), with ``e2b_code_interpreter``'s ``run_code``."""

    default_template = DEFAULT_TEMPLATE

    def __init__(self, sandbox: Optional[S.Sandbox] = None, *,
                 connection_config: Optional[ConnectionConfig] = None,
                 _opts: Optional[Dict[str, Any]] = None, **known: Any) -> None:
        """Sandbox.create() and Sandbox.connect() make one; E2B's
        ``Sandbox(sandbox_id=, sandbox_domain=, envd_version=,
        envd_access_token=, traffic_access_token=, connection_config=)``
        makes a handle to a sandbox it already knows, with no request."""
        if sandbox is None and known.get("sandbox_id"):
            sandbox = _known_sandbox(known, _Options(connection_config, _opts))
        if not isinstance(sandbox, S.Sandbox):
            raise TypeError("use Sandbox.create() or Sandbox.connect()")
        self._s = sandbox
        self._options = _Options(connection_config, _opts)
        # E2B's module classes, looked up here as E2B's Sandbox does
        self.commands = Commands(sandbox.commands)
        self.pty = Pty(sandbox.pty, sandbox.commands)
        self.files = Filesystem(sandbox.files)
        self.git = Git(sandbox)  # E2B's names and arguments (agent_sandbox.git)

    @property
    def connection_config(self) -> ConnectionConfig:
        """The connection options it was made with (E2B's ConnectionConfig)."""
        return self._options.config

    @property
    def sandbox_id(self) -> str:
        return self._s.sandbox_id

    @property
    def sandbox_domain(self) -> str:
        return self._s.sandbox_domain

    @property
    def envd_version(self) -> str:
        return self._s.envd_version

    @property
    def fork_mode(self) -> Optional[str]:
        """Ours: a fork's ``"processes"`` or ``"files"``, else None
        (:attr:`agent_sandbox.Sandbox.fork_mode`)."""
        return self._s.fork_mode

    # private in E2B, but its tests and some programs read them
    @property
    def _envd_version(self) -> str:
        return self._s.envd_version

    @property
    def _envd_access_token(self) -> Optional[str]:
        return self._s.envd_access_token

    @property
    def traffic_access_token(self) -> Optional[str]:
        return self._s.traffic_access_token

    @classmethod
    def create(cls, template: Optional[str] = None, timeout: Optional[int] = None,
               metadata: Optional[Dict[str, str]] = None, envs: Optional[Dict[str, str]] = None,
               secure: bool = True, allow_internet_access: bool = True, mcp: Any = None,
               network: Any = None, iam: Any = None, lifecycle: Any = None,
               volume_mounts: Any = None, logger: Any = None, **opts: Any) -> "Sandbox":
        if template is None and mcp is not None:
            template = DEFAULT_MCP_TEMPLATE
        from .api.client.api.sandboxes import post_sandboxes

        body = _create_body(template or cls.default_template, timeout, metadata, envs, secure,
                            allow_internet_access, mcp, network, iam, lifecycle, volume_mounts)
        res = post_sandboxes.sync_detailed(client=_api_client(opts), body=body)
        return cls(_connected(res, None, opts), _opts=opts)

    def _connect_inst(self, timeout: Optional[int] = None, **opts: Any) -> "Sandbox":
        params = self._options.params(opts)
        if not _is_debug(params):  # E2B's debug mode: no control plane, nothing to ask
            SandboxApi._cls_connect(sandbox_id=self.sandbox_id, timeout=timeout, **params)
        return self

    def _connect_cls(cls, sandbox_id: str, timeout: Optional[int] = None, logger: Any = None,
                     **opts: Any) -> "Sandbox":
        if _is_debug(opts):  # E2B's debug mode: envd on localhost, no control plane
            return cls(sandbox_id=sandbox_id, _opts=opts)
        res = SandboxApi._cls_connect(sandbox_id=sandbox_id, timeout=timeout, **opts)
        return cls(_from_response(res, opts), _opts=opts)

    connect = _dual(_connect_inst, _connect_cls)

    def _kill_inst(self, **opts: Any) -> bool:
        return self._s.kill()

    def _kill_cls(cls, sandbox_id: str, **opts: Any) -> bool:
        return S.Sandbox.kill_by_id(sandbox_id, **_conn(opts))

    kill = _dual(_kill_inst, _kill_cls)

    def _set_timeout_inst(self, timeout: int, **opts: Any) -> None:
        self._s.set_timeout(timeout)

    def _set_timeout_cls(cls, sandbox_id: str, timeout: int, **opts: Any) -> None:
        S.Sandbox.connect(sandbox_id, **_conn(opts)).set_timeout(timeout)

    set_timeout = _dual(_set_timeout_inst, _set_timeout_cls)

    def _get_info_inst(self, **opts: Any) -> SandboxInfo:
        return self._s.get_info()

    def _get_info_cls(cls, sandbox_id: str, **opts: Any) -> SandboxInfo:
        return _attach_by_list(sandbox_id, _conn(opts))

    get_info = _dual(_get_info_inst, _get_info_cls)

    def _get_metrics_inst(self, start: Any = None, end: Any = None,
                          **opts: Any) -> List[SandboxMetrics]:
        return self._s.get_metrics(start, end)

    def _get_metrics_cls(cls, sandbox_id: str, start: Any = None, end: Any = None,
                         **opts: Any) -> List[SandboxMetrics]:
        return S.Sandbox.connect(sandbox_id, **_conn(opts)).get_metrics(start, end)

    get_metrics = _dual(_get_metrics_inst, _get_metrics_cls)

    def _update_network_inst(self, network: Any = None, **opts: Any) -> None:
        self._s.update_network(network, request_timeout=opts.get("request_timeout"))

    def _update_network_cls(cls, sandbox_id: str, network: Any = None, **opts: Any) -> None:
        S.Sandbox.update_network_by_id(sandbox_id, network, **_conn(opts))

    update_network = _dual(_update_network_inst, _update_network_cls)

    def _pause_inst(self, keep_memory: bool = True, **opts: Any) -> bool:
        return SandboxApi._cls_pause(sandbox_id=self.sandbox_id, keep_memory=keep_memory,
                                     **self._options.params(opts))

    def _pause_cls(cls, sandbox_id: str, keep_memory: bool = True, **opts: Any) -> bool:
        return SandboxApi._cls_pause(sandbox_id=sandbox_id, keep_memory=keep_memory, **opts)

    pause = _dual(_pause_inst, _pause_cls)
    beta_pause = pause

    # snapshots and fork (docs/snapshots.md): files, not processes
    def _create_snapshot_inst(self, name: Optional[str] = None, **opts: Any) -> SnapshotInfo:
        return _snapshot(self._s, name)

    def _create_snapshot_cls(cls, sandbox_id: str, name: Optional[str] = None,
                             **opts: Any) -> SnapshotInfo:
        return _snapshot(S.Sandbox._attach(sandbox_id, **_conn(opts)), name)

    create_snapshot = _dual(_create_snapshot_inst, _create_snapshot_cls)

    def _fork_inst(self, timeout: Optional[int] = None, count: Optional[int] = None,
                   keep_processes: Optional[bool] = None, **opts: Any) -> List[Any]:
        return [f if isinstance(f, Exception) else type(self)(f)
                for f in _forks(self._s, timeout, count, keep_processes)]

    def _fork_cls(cls, sandbox_id: str, timeout: Optional[int] = None,
                  count: Optional[int] = None, logger: Any = None,
                  keep_processes: Optional[bool] = None, **opts: Any) -> List[Any]:
        return [f if isinstance(f, Exception) else cls(f)
                for f in _forks(S.Sandbox._attach(sandbox_id, **_conn(opts)), timeout, count,
                                keep_processes)]

    fork = _dual(_fork_inst, _fork_cls)

    def _list_snapshots_inst(self, limit: Optional[int] = None, next_token: Optional[str] = None,
                             name: Optional[str] = None, **opts: Any) -> SnapshotPaginator:
        return SnapshotPaginator(self.sandbox_id, limit, next_token, name, **opts)

    def _list_snapshots_cls(cls, sandbox_id: Optional[str] = None, limit: Optional[int] = None,
                            next_token: Optional[str] = None, name: Optional[str] = None,
                            **opts: Any) -> SnapshotPaginator:
        return SnapshotPaginator(sandbox_id, limit, next_token, name, **opts)

    list_snapshots = _dual(_list_snapshots_inst, _list_snapshots_cls)

    @classmethod
    def delete_snapshot(cls, snapshot_id: str, **opts: Any) -> bool:
        return S.Sandbox.delete_snapshot(snapshot_id, **_conn(opts))

    def is_running(self, request_timeout: Optional[float] = None) -> bool:
        return self._s.is_running(request_timeout=request_timeout)

    @classmethod
    def list(cls, query: Optional[SandboxQuery] = None, limit: Optional[int] = None,
             next_token: Optional[str] = None, order: Optional[str] = None,
             **opts: Any) -> SandboxPaginator:
        return SandboxPaginator(query, limit, next_token, order, **opts)

    def get_host(self, port: int) -> str:
        return self._s.get_host(port)

    def get_mcp_url(self) -> str:
        """The MCP gateway's endpoint (E2B's form: https on the port's host)."""
        return f"https://{self.get_host(MCP_PORT)}/mcp"

    def get_mcp_token(self) -> Optional[str]:
        """The gateway's bearer token: the one the library made when it
        started the gateway at create, else the gateway's token file (read
        as root, as E2B's SDK does)."""
        return self._s.get_mcp_token()

    def upload_url(self, path: Optional[str] = None, user: Optional[str] = None,
                   use_signature_expiration: Optional[int] = None) -> str:
        return self._s.upload_url(path, user=user, expires_in=use_signature_expiration)

    def download_url(self, path: str, user: Optional[str] = None,
                     use_signature_expiration: Optional[int] = None) -> str:
        return self._s.download_url(path, user=user, expires_in=use_signature_expiration)

    # extensions (not in E2B): the named commands a template serves
    def run(self, command: str, /, **kwargs: Any) -> Any:
        """agent-sandbox's named commands: ``sandbox.run("hello", name="Alice")``."""
        return self._s.run_command(command, kwargs)

    def list_commands(self, request_timeout: Optional[float] = None) -> List[Any]:
        """agent-sandbox's named commands: what the sandbox serves."""
        return self._s.list_commands(request_timeout=request_timeout)

    # e2b_code_interpreter
    def run_code(self, code: str, language: Optional[str] = None, context: Optional[Context] = None,
                 on_stdout: Optional[Callable[[OutputMessage], Any]] = None,
                 on_stderr: Optional[Callable[[OutputMessage], Any]] = None,
                 on_result: Optional[Callable[[Result], Any]] = None,
                 on_error: Optional[Callable[[ExecutionError], Any]] = None,
                 envs: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
                 request_timeout: Optional[float] = None) -> Execution:
        if language and context:
            raise InvalidArgumentException("You can provide context or language, but not both at the same time.")
        try:
            ex = self._s.code.run(code, language, context, envs=envs, timeout=timeout,
                                  request_timeout=request_timeout, on_stdout=on_stdout,
                                  on_stderr=on_stderr, on_result=_typed_on_result(on_result),
                                  on_error=on_error, _messages=True)
        except SandboxException as e:
            killed = _killed_error(e, self._s.is_running)
            if killed is None:
                raise
            raise killed from e
        return Execution._of(ex)

    def create_code_context(self, cwd: Optional[str] = None, language: Optional[str] = None,
                            request_timeout: Optional[float] = None) -> Context:
        return self._s.create_code_context(cwd, language, request_timeout)

    def list_code_contexts(self) -> List[Context]:
        return self._s.list_code_contexts()

    def restart_code_context(self, context: Union[Context, str]) -> None:
        self._s.restart_code_context(context)

    def remove_code_context(self, context: Union[Context, str]) -> None:
        self._s.remove_code_context(context)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kill()


def _api_client(opts: Dict[str, Any]) -> Any:
    from .api.client.client import AuthenticatedClient

    return AuthenticatedClient(**opts)


def _ConnectSandbox(timeout: Optional[int]) -> Any:
    from .api.client.models.connect_sandbox import ConnectSandbox

    return ConnectSandbox(timeout=timeout)  # type: ignore[arg-type]  (None: the default)


def _connected(res: Any, sandbox_id: Optional[str], opts: Dict[str, Any]) -> S.Sandbox:
    """The sandbox of e2b.api's connect answer (``sandbox_id`` given) or
    create answer, as E2B's SDK reads it: a failed status raises (the
    library's own exception when the call was made here), a model made
    here carries the library's handle, any other (e.g. from code that
    replaced the endpoint) is attached by its id, tokens and domain
    without a request."""
    from .api import handle_api_exception

    if int(res.status_code) >= 300:
        exc = getattr(res, "_exc", None)
        if exc is not None:
            raise exc
        if int(res.status_code) == 404 and sandbox_id is not None:
            raise SandboxNotFoundException(f"Sandbox {sandbox_id} not found")
        raise handle_api_exception(res, SandboxException)
    m = res.parsed
    native = getattr(m, "_native", None)
    if native is not None:
        return native
    return _attached(_conn(opts), m.sandbox_id, getattr(m, "envd_access_token", None),
                     getattr(m, "envd_version", None), getattr(m, "domain", None),
                     getattr(m, "traffic_access_token", None))


def _attach_by_list(sandbox_id: str, conn: Dict[str, Any]) -> SandboxInfo:
    """get_info by id: connect would resume a paused sandbox, so GET
    /sandboxes/{id} through a handle made without a call (as E2B's by-id
    get_info does; the list's entries have no network config)."""
    return S.Sandbox.get_info_by_id(sandbox_id, **conn)


# ---- E2B's SandboxApi: the control-plane calls by id ---------------------------------------

_CONFIG_KEYS = frozenset(inspect.signature(ConnectionConfig).parameters)


class _Options:
    """A sandbox's connection options, as E2B keeps them: its
    ConnectionConfig (what E2B's ``connection_config`` holds) and the
    library's own options E2B has not (``max_retries``, ``user_agent``)."""

    def __init__(self, config: Optional[ConnectionConfig], opts: Optional[Dict[str, Any]]):
        opts = {k: v for k, v in (opts or {}).items() if v is not None}
        self._extra = {k: v for k, v in opts.items() if k not in _CONFIG_KEYS}
        self._config = config
        self._opts = {k: v for k, v in opts.items() if k in _CONFIG_KEYS}

    @property
    def config(self) -> ConnectionConfig:
        if self._config is None:
            self._config = ConnectionConfig(**self._opts)
        return self._config

    def params(self, overrides: Dict[str, Any]) -> Dict[str, Any]:
        """The options of a call on the sandbox: its own, the call's over
        them (E2B's ``connection_config.get_api_params(**opts)``)."""
        return {**self._extra, **self.config.get_api_params(**overrides)}


def _is_debug(opts: Dict[str, Any]) -> bool:
    debug = opts.get("debug")
    return bool(debug) if debug is not None else ConnectionConfig().debug


def _attached(conn: Dict[str, Any], sandbox_id: str, envd_access_token: Any,
              envd_version: Any, domain: Any, traffic_access_token: Any) -> S.Sandbox:
    """A handle to a sandbox the caller already knows, made without a request."""

    def given(v: Any) -> Optional[str]:
        if hasattr(v, "release") and not isinstance(v, str):  # a packaging Version
            v = str(v)
        return v if isinstance(v, str) and v else None  # not UNSET, None or ""

    c = N.client(**conn)
    o = ll.asb_sandbox_attach_options()
    o.envd_access_token = given(envd_access_token)
    o.envd_version = given(envd_version)
    o.domain = given(domain)
    o.traffic_access_token = given(traffic_access_token)
    return S.Sandbox(N.call(ll.asb_sandbox_attach, c, sandbox_id, o), c, conn)


def _known_sandbox(known: Dict[str, Any], options: _Options) -> S.Sandbox:
    """E2B's ``Sandbox(sandbox_id=..., ...)``: the handle of what it names."""
    allowed = {"sandbox_id", "sandbox_domain", "envd_version", "envd_access_token",
               "traffic_access_token"}
    unknown = set(known) - allowed
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    return _attached(_conn(options.params({})), known["sandbox_id"],
                     known.get("envd_access_token"), known.get("envd_version"),
                     known.get("sandbox_domain"), known.get("traffic_access_token"))


def _from_response(res: Any, opts: Dict[str, Any]) -> S.Sandbox:
    """The sandbox of a SandboxApi answer (its handle when it was made
    here, else attached by its id, domain and tokens)."""
    native = getattr(res, "_native", None)
    if native is not None:
        return native
    return _attached(_conn(opts), res.sandbox_id, res.envd_access_token, res.envd_version,
                     res.sandbox_domain, res.traffic_access_token)


def _create_response(s: S.Sandbox) -> Any:
    from .api import SandboxCreateResponse

    return SandboxCreateResponse(sandbox_id=s.sandbox_id, sandbox_domain=s.sandbox_domain or None,
                                 envd_version=s.envd_version,
                                 envd_access_token=s.envd_access_token,
                                 traffic_access_token=s.traffic_access_token, _native=s)


class SandboxApi:
    """E2B's ``SandboxApi`` (``e2b.sandbox_sync.sandbox_api``): the
    control-plane calls by id that :class:`Sandbox` makes through it, so
    code that replaces one (as E2B's tests do) sees each use. ``opts`` are
    E2B's connection options."""

    @classmethod
    def _cls_connect(cls, sandbox_id: str, timeout: Optional[int] = None, logger: Any = None,
                     **opts: Any) -> Any:
        """Connect (resuming a paused sandbox) through e2b.api's connect
        endpoint: E2B's ``SandboxCreateResponse``."""
        from .api.client.api.sandboxes import post_sandboxes_sandbox_id_connect as ep

        res = ep.sync_detailed(sandbox_id, client=_api_client(opts),
                               body=_ConnectSandbox(timeout=timeout))
        return _create_response(_connected(res, sandbox_id, opts))

    @classmethod
    def _cls_pause(cls, sandbox_id: str, keep_memory: bool = True, **opts: Any) -> bool:
        """POST /sandboxes/{id}/pause: True, or False if it already was
        paused; SandboxNotFoundException for none."""
        conn = _conn(opts)
        return _pause_attached(sandbox_id, conn, keep_memory)


def _pause_attached(sandbox_id: str, conn: Dict[str, Any], keep_memory: bool) -> bool:
    try:
        return S.Sandbox._attach(sandbox_id, **conn).pause(keep_memory=keep_memory)
    except NotFoundException as e:
        if isinstance(e, SandboxNotFoundException):
            raise
        raise SandboxNotFoundException(f"Sandbox {sandbox_id} not found") from e


class AsyncSandboxApi:
    """E2B's ``SandboxApi`` of ``e2b.sandbox_async``: :class:`SandboxApi`'s
    calls, awaited."""

    @classmethod
    async def _cls_connect(cls, sandbox_id: str, timeout: Optional[int] = None,
                           logger: Any = None, **opts: Any) -> Any:
        from .api.client.api.sandboxes import post_sandboxes_sandbox_id_connect as ep

        res = await ep.asyncio_detailed(sandbox_id, client=_api_client(opts),
                                        body=_ConnectSandbox(timeout=timeout))
        return _create_response(_connected(res, sandbox_id, opts))

    @classmethod
    async def _cls_pause(cls, sandbox_id: str, keep_memory: bool = True, **opts: Any) -> bool:
        return await N.run(_pause_attached, sandbox_id, _conn(opts), keep_memory)


# ---- async -------------------------------------------------------------------------------------


class AsyncCommandHandle:
    """E2B's AsyncCommandHandle: output collected from the start, ``wait()``
    raises on a non-zero exit code."""

    def __init__(self, h: A.CommandHandle) -> None:
        self._h = h

    pid = property(lambda self: self._h.pid)
    stdout = property(lambda self: self._h.stdout)
    stderr = property(lambda self: self._h.stderr)
    exit_code = property(lambda self: self._h.exit_code)
    error = property(lambda self: self._h.error)

    @_gone_as_timeout
    async def wait(self) -> CommandResult:
        return await self._h.wait(check=True)

    async def kill(self) -> bool:
        return await self._h.kill()

    async def send_stdin(self, data: Union[str, bytes],
                         request_timeout: Optional[float] = None) -> None:
        await self._h.send_stdin(data, request_timeout)

    async def close_stdin(self, request_timeout: Optional[float] = None) -> None:
        await self._h.close_stdin(request_timeout)

    async def disconnect(self) -> None:
        await self._h.disconnect()


class AsyncCommands:
    def __init__(self, c: A.Commands) -> None:
        self._c = c

    async def run(self, cmd: str, background: Optional[bool] = None,
                  envs: Optional[Dict[str, str]] = None, user: Optional[str] = None,
                  cwd: Optional[str] = None, on_stdout: Any = None, on_stderr: Any = None,
                  stdin: Optional[bool] = None, timeout: Optional[float] = 60,
                  request_timeout: Optional[float] = None) -> Any:
        if background:
            return AsyncCommandHandle(await self._c.run(
                cmd, background=True, envs=envs, user=user, cwd=cwd, on_stdout=on_stdout,
                on_stderr=on_stderr, stdin=bool(stdin), timeout=_cmd_timeout(timeout),
                request_timeout=request_timeout))
        return await self._c.run(cmd, envs=envs, user=user, cwd=cwd, on_stdout=on_stdout,
                                 on_stderr=on_stderr, stdin=bool(stdin),
                                 timeout=_cmd_timeout(timeout), request_timeout=request_timeout,
                                 check=True)

    async def connect(self, pid: int, timeout: Optional[float] = 60,
                      request_timeout: Optional[float] = None, on_stdout: Any = None,
                      on_stderr: Any = None) -> AsyncCommandHandle:
        return AsyncCommandHandle(await self._c.connect(pid, on_stdout=on_stdout,
                                                        on_stderr=on_stderr,
                                                        timeout=timeout or None,
                                                        request_timeout=request_timeout))

    async def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        return await self._c.list(request_timeout)

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """SIGKILL to the process; True once it is gone (see _KILL_WAIT)."""
        if not await self._c.kill(pid, request_timeout):
            return False
        await _await_gone(lambda: self._c.list(request_timeout), pid)
        return True

    async def send_stdin(self, pid: int, data: Union[str, bytes],
                         request_timeout: Optional[float] = None) -> None:
        await self._c.send_stdin(pid, data, request_timeout)

    async def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        await self._c.close_stdin(pid, request_timeout)


class AsyncPty:
    def __init__(self, p: A.Pty, c: A.Commands) -> None:
        self._p = p
        self._c = c

    async def create(self, size: PtySize, on_data: Any, user: Optional[str] = None,
                     cwd: Optional[str] = None, envs: Optional[Dict[str, str]] = None,
                     timeout: Optional[float] = 60,
                     request_timeout: Optional[float] = None) -> AsyncCommandHandle:
        return AsyncCommandHandle(await self._p.create(size, on_data, user=user, cwd=cwd,
                                                       envs=envs, timeout=_cmd_timeout(timeout),
                                                       request_timeout=request_timeout))

    async def connect(self, pid: int, on_data: Any, timeout: Optional[float] = 60,
                      request_timeout: Optional[float] = None) -> AsyncCommandHandle:
        return AsyncCommandHandle(await self._p.connect(pid, on_data, timeout=timeout or None,
                                                        request_timeout=request_timeout))

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """SIGKILL to the terminal's process; True once it is gone."""
        if not await self._p.kill(pid, request_timeout):
            return False
        await _await_gone(lambda: self._c.list(request_timeout), pid)
        return True

    async def send_stdin(self, pid: int, data: bytes,
                         request_timeout: Optional[float] = None) -> None:
        await self._p.send_stdin(pid, data, request_timeout)

    async def resize(self, pid: int, size: PtySize,
                     request_timeout: Optional[float] = None) -> None:
        await self._p.resize(pid, size, request_timeout)


class AsyncWatchHandle:
    def __init__(self, h: A.WatchHandle) -> None:
        self._h = h

    async def stop(self) -> None:
        await self._h.stop()


class AsyncFilesystem:
    def __init__(self, f: A.Files) -> None:
        self._f = f

    async def read(self, path: str, format: str = "text", user: Optional[str] = None,
                   request_timeout: Optional[float] = None, gzip: bool = False,
                   stream_idle_timeout: Optional[float] = None) -> Any:
        return _read_result(await self._f.read(path, format, user=user,
                                               request_timeout=request_timeout, gzip=gzip), format)

    async def write(self, path: str, data: Any, user: Optional[str] = None,
                    request_timeout: Optional[float] = None, gzip: bool = False,
                    use_octet_stream: Optional[bool] = None,
                    metadata: Optional[Dict[str, str]] = None) -> WriteInfo:
        return await self._f.write(path, data, user=user, request_timeout=request_timeout,
                                   gzip=gzip, metadata=metadata)

    async def write_files(self, files: List[Any], user: Optional[str] = None,
                          request_timeout: Optional[float] = None, gzip: bool = False,
                          use_octet_stream: Optional[bool] = None,
                          metadata: Optional[Dict[str, str]] = None) -> List[WriteInfo]:
        return list(await self._f.write_files(_write_entries(files), user=user,
                                              request_timeout=request_timeout, gzip=gzip,
                                              metadata=metadata))

    async def list(self, path: str, depth: Optional[int] = 1, user: Optional[str] = None,
                   request_timeout: Optional[float] = None) -> List[EntryInfo]:
        return await self._f.list(path, _depth(depth), user=user,
                                  request_timeout=request_timeout)

    async def exists(self, path: str, user: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> bool:
        return await self._f.exists(path, user=user, request_timeout=request_timeout)

    async def get_info(self, path: str, user: Optional[str] = None,
                       request_timeout: Optional[float] = None) -> EntryInfo:
        return await self._f.get_info(path, user=user, request_timeout=request_timeout)

    async def remove(self, path: str, user: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> None:
        await self._f.remove(path, user=user, request_timeout=request_timeout)

    async def rename(self, old_path: str, new_path: str, user: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> EntryInfo:
        return await self._f.rename(old_path, new_path, user=user,
                                    request_timeout=request_timeout)

    async def make_dir(self, path: str, user: Optional[str] = None,
                       request_timeout: Optional[float] = None) -> bool:
        return await self._f.make_dir(path, user=user, request_timeout=request_timeout)

    async def watch_dir(self, path: str, on_event: Any, on_exit: Any = None,
                        user: Optional[str] = None, request_timeout: Optional[float] = None,
                        timeout: Optional[float] = 60, recursive: bool = False,
                        include_entry: bool = False,
                        allow_network_mounts: bool = False) -> AsyncWatchHandle:
        return AsyncWatchHandle(await self._f.watch_dir(path, on_event, on_exit=on_exit,
                                                        recursive=recursive,
                                                        include_entry=include_entry, user=user,
                                                        request_timeout=request_timeout))


class AsyncSandbox:
    """E2B's ``AsyncSandbox``, with ``e2b_code_interpreter``'s ``run_code``."""

    default_template = DEFAULT_TEMPLATE

    def __init__(self, sandbox: Optional[A.Sandbox] = None, *,
                 connection_config: Optional[ConnectionConfig] = None,
                 _opts: Optional[Dict[str, Any]] = None, **known: Any) -> None:
        """As :class:`Sandbox`'s (E2B's keyword form makes a handle with no
        request)."""
        if sandbox is None and known.get("sandbox_id"):
            sandbox = A.Sandbox(_known_sandbox(known, _Options(connection_config, _opts)))
        if not isinstance(sandbox, A.Sandbox):
            raise TypeError("use await AsyncSandbox.create() or AsyncSandbox.connect()")
        self._s = sandbox
        self._options = _Options(connection_config, _opts)
        self.commands = AsyncCommands(sandbox.commands)
        self.pty = AsyncPty(sandbox.pty, sandbox.commands)
        self.files = AsyncFilesystem(sandbox.files)
        self.git = AsyncGit(sandbox._sync.git)

    @property
    def connection_config(self) -> ConnectionConfig:
        """The connection options it was made with (E2B's ConnectionConfig)."""
        return self._options.config

    sandbox_id = property(lambda self: self._s.sandbox_id)
    sandbox_domain = property(lambda self: self._s.sandbox_domain)
    envd_version = property(lambda self: self._s.envd_version)
    fork_mode = property(lambda self: self._s.fork_mode)
    # private in E2B, but its tests and some programs read them
    _envd_version = property(lambda self: self._s.envd_version)
    _envd_access_token = property(lambda self: self._s._sync.envd_access_token)
    traffic_access_token = property(lambda self: self._s._sync.traffic_access_token)

    @classmethod
    async def create(cls, template: Optional[str] = None, timeout: Optional[int] = None,
                     metadata: Optional[Dict[str, str]] = None,
                     envs: Optional[Dict[str, str]] = None, secure: bool = True,
                     allow_internet_access: bool = True, mcp: Any = None, network: Any = None,
                     iam: Any = None, lifecycle: Any = None, volume_mounts: Any = None,
                     logger: Any = None, **opts: Any) -> "AsyncSandbox":
        if template is None and mcp is not None:
            template = DEFAULT_MCP_TEMPLATE
        from .api.client.api.sandboxes import post_sandboxes

        body = _create_body(template or cls.default_template, timeout, metadata, envs, secure,
                            allow_internet_access, mcp, network, iam, lifecycle, volume_mounts)
        res = await post_sandboxes.asyncio_detailed(client=_api_client(opts), body=body)
        return cls(A.Sandbox(_connected(res, None, opts)), _opts=opts)

    async def _connect_inst(self, timeout: Optional[int] = None, **opts: Any) -> "AsyncSandbox":
        params = self._options.params(opts)
        if not _is_debug(params):
            await AsyncSandboxApi._cls_connect(sandbox_id=self.sandbox_id, timeout=timeout,
                                               **params)
        return self

    async def _connect_cls(cls, sandbox_id: str, timeout: Optional[int] = None,
                           logger: Any = None, **opts: Any) -> "AsyncSandbox":
        if _is_debug(opts):
            return cls(sandbox_id=sandbox_id, _opts=opts)
        res = await AsyncSandboxApi._cls_connect(sandbox_id=sandbox_id, timeout=timeout, **opts)
        return cls(A.Sandbox(_from_response(res, opts)), _opts=opts)

    connect = _dual(_connect_inst, _connect_cls)

    async def _kill_inst(self, **opts: Any) -> bool:
        return await self._s.kill()

    async def _kill_cls(cls, sandbox_id: str, **opts: Any) -> bool:
        return await A.Sandbox.kill_by_id(sandbox_id, **_conn(opts))

    kill = _dual(_kill_inst, _kill_cls)

    async def _set_timeout_inst(self, timeout: int, **opts: Any) -> None:
        await self._s.set_timeout(timeout)

    async def _set_timeout_cls(cls, sandbox_id: str, timeout: int, **opts: Any) -> None:
        sb = await A.Sandbox.connect(sandbox_id, **_conn(opts))
        await sb.set_timeout(timeout)

    set_timeout = _dual(_set_timeout_inst, _set_timeout_cls)

    async def _get_info_inst(self, **opts: Any) -> SandboxInfo:
        return await self._s.get_info()

    async def _get_info_cls(cls, sandbox_id: str, **opts: Any) -> SandboxInfo:
        return await N.run(_attach_by_list, sandbox_id, _conn(opts))

    get_info = _dual(_get_info_inst, _get_info_cls)

    async def _get_metrics_inst(self, start: Any = None, end: Any = None,
                                **opts: Any) -> List[SandboxMetrics]:
        return await self._s.get_metrics(start, end)

    async def _get_metrics_cls(cls, sandbox_id: str, start: Any = None, end: Any = None,
                               **opts: Any) -> List[SandboxMetrics]:
        sb = await A.Sandbox.connect(sandbox_id, **_conn(opts))
        return await sb.get_metrics(start, end)

    get_metrics = _dual(_get_metrics_inst, _get_metrics_cls)

    async def _update_network_inst(self, network: Any = None, **opts: Any) -> None:
        await self._s.update_network(network, request_timeout=opts.get("request_timeout"))

    async def _update_network_cls(cls, sandbox_id: str, network: Any = None,
                                  **opts: Any) -> None:
        await A.Sandbox.update_network_by_id(sandbox_id, network, **_conn(opts))

    update_network = _dual(_update_network_inst, _update_network_cls)

    async def _pause_inst(self, keep_memory: bool = True, **opts: Any) -> bool:
        return await AsyncSandboxApi._cls_pause(sandbox_id=self.sandbox_id,
                                                keep_memory=keep_memory,
                                                **self._options.params(opts))

    async def _pause_cls(cls, sandbox_id: str, keep_memory: bool = True, **opts: Any) -> bool:
        return await AsyncSandboxApi._cls_pause(sandbox_id=sandbox_id, keep_memory=keep_memory,
                                                **opts)

    pause = _dual(_pause_inst, _pause_cls)
    beta_pause = pause

    # snapshots and fork (docs/snapshots.md): files, not processes
    async def _create_snapshot_inst(self, name: Optional[str] = None,
                                    **opts: Any) -> SnapshotInfo:
        return await N.run(_snapshot, self._s._sync, name)

    async def _create_snapshot_cls(cls, sandbox_id: str, name: Optional[str] = None,
                                   **opts: Any) -> SnapshotInfo:
        conn = _conn(opts)
        return await N.run(lambda: _snapshot(S.Sandbox._attach(sandbox_id, **conn), name))

    create_snapshot = _dual(_create_snapshot_inst, _create_snapshot_cls)

    async def _fork_inst(self, timeout: Optional[int] = None, count: Optional[int] = None,
                         keep_processes: Optional[bool] = None, **opts: Any) -> List[Any]:
        got = await N.run(_forks, self._s._sync, timeout, count, keep_processes)
        return [f if isinstance(f, Exception) else type(self)(A.Sandbox(f)) for f in got]

    async def _fork_cls(cls, sandbox_id: str, timeout: Optional[int] = None,
                        count: Optional[int] = None, logger: Any = None,
                        keep_processes: Optional[bool] = None, **opts: Any) -> List[Any]:
        conn = _conn(opts)
        got = await N.run(lambda: _forks(S.Sandbox._attach(sandbox_id, **conn), timeout, count,
                                         keep_processes))
        return [f if isinstance(f, Exception) else cls(A.Sandbox(f)) for f in got]

    fork = _dual(_fork_inst, _fork_cls)

    def _list_snapshots_inst(self, limit: Optional[int] = None, next_token: Optional[str] = None,
                             name: Optional[str] = None, **opts: Any) -> AsyncSnapshotPaginator:
        return AsyncSnapshotPaginator(self.sandbox_id, limit, next_token, name, **opts)

    def _list_snapshots_cls(cls, sandbox_id: Optional[str] = None, limit: Optional[int] = None,
                            next_token: Optional[str] = None, name: Optional[str] = None,
                            **opts: Any) -> AsyncSnapshotPaginator:
        return AsyncSnapshotPaginator(sandbox_id, limit, next_token, name, **opts)

    list_snapshots = _dual(_list_snapshots_inst, _list_snapshots_cls)

    @classmethod
    async def delete_snapshot(cls, snapshot_id: str, **opts: Any) -> bool:
        return await A.Sandbox.delete_snapshot(snapshot_id, **_conn(opts))

    async def is_running(self, request_timeout: Optional[float] = None) -> bool:
        return await self._s.is_running(request_timeout=request_timeout)

    @classmethod
    def list(cls, query: Optional[SandboxQuery] = None, limit: Optional[int] = None,
             next_token: Optional[str] = None, order: Optional[str] = None,
             **opts: Any) -> AsyncSandboxPaginator:
        return AsyncSandboxPaginator(query, limit, next_token, order, **opts)

    def get_host(self, port: int) -> str:
        return self._s.get_host(port)

    def get_mcp_url(self) -> str:
        """The MCP gateway's endpoint (E2B's form: https on the port's host)."""
        return f"https://{self.get_host(MCP_PORT)}/mcp"

    async def get_mcp_token(self) -> Optional[str]:
        """As Sandbox.get_mcp_token (E2B's async form is a coroutine)."""
        return await self._s.get_mcp_token()

    # plain methods, as in E2B: signing is local (no request)
    def upload_url(self, path: Optional[str] = None, user: Optional[str] = None,
                   use_signature_expiration: Optional[int] = None) -> str:
        return self._s._sync.upload_url(path, user=user, expires_in=use_signature_expiration)

    def download_url(self, path: str, user: Optional[str] = None,
                     use_signature_expiration: Optional[int] = None) -> str:
        return self._s._sync.download_url(path, user=user, expires_in=use_signature_expiration)

    # extensions (not in E2B): the named commands a template serves
    async def run(self, command: str, /, **kwargs: Any) -> Any:
        """agent-sandbox's named commands: ``await sandbox.run("hello", name="Alice")``."""
        return await self._s.run_command(command, kwargs)

    async def list_commands(self, request_timeout: Optional[float] = None) -> List[Any]:
        """agent-sandbox's named commands: what the sandbox serves."""
        return await self._s.list_commands(request_timeout=request_timeout)

    async def run_code(self, code: str, language: Optional[str] = None,
                       context: Optional[Context] = None, on_stdout: Any = None,
                       on_stderr: Any = None, on_result: Any = None, on_error: Any = None,
                       envs: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
                       request_timeout: Optional[float] = None) -> Execution:
        if language and context:
            raise InvalidArgumentException("You can provide context or language, but not both at the same time.")
        try:
            ex = await self._s.code.run(code, language, context, envs=envs, timeout=timeout,
                                        request_timeout=request_timeout, on_stdout=on_stdout,
                                        on_stderr=on_stderr,
                                        on_result=_typed_on_result(on_result),
                                        on_error=on_error, _messages=True)
        except SandboxException as e:
            try:
                alive = await self._s.is_running()
            except SandboxNotFoundException:
                alive = False
            except Exception:
                alive = True
            killed = _killed_error(e, lambda: alive)
            if killed is None:
                raise
            raise killed from e
        return Execution._of(ex)

    async def create_code_context(self, cwd: Optional[str] = None,
                                  language: Optional[str] = None,
                                  request_timeout: Optional[float] = None) -> Context:
        return await self._s.create_code_context(cwd, language, request_timeout)

    async def list_code_contexts(self) -> List[Context]:
        return await self._s.list_code_contexts()

    async def restart_code_context(self, context: Union[Context, str]) -> None:
        await self._s.restart_code_context(context)

    async def remove_code_context(self, context: Union[Context, str]) -> None:
        await self._s.remove_code_context(context)

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.kill()


# ---- volumes --------------------------------------------------------------------------

from .. import volumes as _V  # noqa: E402 (after _conn, which it uses)
from ..volumes import VolumeAndToken, VolumeEntryStat, VolumeFileType, VolumeInfo  # noqa: E402
from .api import handle_api_exception as _api_exception  # noqa: E402
from .api.client.api.volumes import delete_volumes_volume_id as _delete_volume  # noqa: E402
from .api.client.api.volumes import get_volumes as _get_volumes  # noqa: E402
from .api.client.api.volumes import get_volumes_volume_id as _get_volume  # noqa: E402
from .api.client.api.volumes import post_volumes as _post_volumes  # noqa: E402
from .api.client.models import Error as _ApiError  # noqa: E402
from .api.client.models import NewVolume as _NewVolume  # noqa: E402
from .api.client.types import UNSET as _UNSET  # noqa: E402
from .api.client_async import get_api_client as _api_async_client  # noqa: E402
from .api.client_sync import get_api_client as _api_sync_client  # noqa: E402
from .connection_config import VolumeApiParams, VolumeConnectionConfig  # noqa: E402


def _volume_from_token(volume_id: str, name: Optional[str], token: Optional[str],
                       domain: Optional[str], debug: Optional[bool], proxy: Any) -> Any:
    if not token:
        raise InvalidArgumentException(
            "Volume(volume_id, name, token): the volume's token is needed "
            "(Volume.connect(volume_id) fetches it with the API key)")
    return Volume.from_token(volume_id, name, token, domain=domain, debug=debug, proxy=proxy)


class Volume(_V.VolumeSync):
    """E2B's ``Volume`` (sync): ``Volume.create(name)``, ``connect``,
    ``get_info``, ``list``, ``destroy``; ``vol.read_file``, ``write_file``,
    ``list``, ``make_dir``, ``get_info``, ``exists``, ``update_metadata``,
    ``remove``. E2B's connection options (``api_key``, ``domain``,
    ``request_timeout``, ...) as everywhere in compat; the control-plane
    calls go through ``e2b.api``'s volumes endpoints, as E2B's do.
    ``Volume(volume_id, name, token)`` is E2B's volume from its token, with
    no API call (its file calls need only the token)."""

    _conn = staticmethod(_conn)
    _domain: Optional[str] = None
    _debug: Optional[bool] = None
    _proxy: Any = None

    def __init__(self, volume_id: Any, name: Optional[str] = None, token: Optional[str] = None,
                 domain: Optional[str] = None, debug: Optional[bool] = None,
                 proxy: Any = None) -> None:
        if not isinstance(volume_id, str):  # a handle (from_token)
            super().__init__(volume_id)
            return
        super().__init__(_volume_from_token(volume_id, name, token, domain, debug,
                                            proxy)._h)
        self._domain, self._debug, self._proxy = domain, debug, proxy

    def _get_volume_config(self, **opts: Any) -> VolumeConnectionConfig:
        """E2B's: where this volume's content API is (the call's options
        over the volume's domain, debug and proxy)."""
        return VolumeConnectionConfig(
            domain=opts.get("domain") or self._domain,
            debug=opts.get("debug") if opts.get("debug") is not None else self._debug,
            token=opts.get("token") or self.token, api_url=opts.get("api_url"),
            request_timeout=opts.get("request_timeout"), headers=opts.get("headers"),
            logger=opts.get("logger"),
            proxy=opts.get("proxy") if opts.get("proxy") is not None else self._proxy)

    @classmethod
    def _client(cls, opts: Dict[str, Any]) -> Tuple[ConnectionConfig, Any]:
        config = ConnectionConfig(**opts)
        return config, _api_sync_client(config)

    @classmethod
    def create(cls, name: str, *, size_mb: Optional[int] = None, **opts: Any) -> "Volume":
        """A new volume named ``name`` (``size_mb``: agent-sandbox's quota,
        MiB; default the engine's)."""
        config, client = cls._client(opts)
        res = _post_volumes.sync_detailed(client=client, body=_NewVolume(
            name=name, size_mb=_UNSET if size_mb is None else int(size_mb)))
        return cls._from_answer(_vol_model(res), config, opts)

    @classmethod
    def connect(cls, volume_id: str, **opts: Any) -> "Volume":
        """The volume of this id (or name), with its token."""
        config, client = cls._client(opts)
        res = _get_volume.sync_detailed(volume_id, client=client)
        return cls._from_answer(_vol_model(res, volume_id), config, opts)

    @classmethod
    def _from_answer(cls, m: Any, config: ConnectionConfig, opts: Dict[str, Any]) -> "Volume":
        # The file calls reach the engine with the caller's own options; a
        # domain the answer names (E2B's BYOC) is only recorded, as the
        # local engine sends none.
        vol = cls.from_token(m.volume_id, m.name, m.token, **_volume_conn(opts))
        vol._domain = _answer_domain(m) or config.domain
        vol._debug, vol._proxy = config.debug, config.proxy
        return vol

    def _class_get_info(cls, volume_id: str, **opts: Any) -> VolumeAndToken:
        config, client = cls._client(opts)
        return _vol_info(_vol_model(_get_volume.sync_detailed(volume_id, client=client),
                                    volume_id))

    def _class_list(cls, **opts: Any) -> List[VolumeInfo]:
        config, client = cls._client(opts)
        return _vol_list(_get_volumes.sync_detailed(client=client))

    @classmethod
    def destroy(cls, volume_id: str, **opts: Any) -> bool:
        """Delete a volume (by id or name) with its files: True, or False
        if there was none."""
        config, client = cls._client(opts)
        return _vol_destroyed(_delete_volume.sync_detailed(volume_id, client=client))


def _volume_conn(opts: Dict[str, Any]) -> Dict[str, Any]:
    """The caller's options a volume handle keeps for its file calls."""
    return {k: v for k, v in opts.items() if k != "request_timeout" and v is not None}


def _answer_domain(m: Any) -> Optional[str]:
    d = getattr(m, "domain", None)
    return d if isinstance(d, str) and d else None


def _vol_model(res: Any, missing: Optional[str] = None) -> Any:
    """The model of a create/get answer, or E2B's exception for it."""
    if missing is not None and int(res.status_code) == 404:
        raise VolumeNotFoundException(f"Volume {missing} not found")
    if int(res.status_code) >= 300:
        raise _api_exception(res, VolumeException)
    if res.parsed is None:
        raise VolumeException("Body of the request is None")
    if isinstance(res.parsed, _ApiError):
        raise VolumeException(f"{res.parsed.message}: Request failed")
    return res.parsed


def _size(m: Any) -> int:
    s = getattr(m, "size_mb", 0)
    return s if isinstance(s, int) else 0


def _vol_info(m: Any) -> VolumeAndToken:
    return VolumeAndToken(volume_id=m.volume_id, name=m.name, size_mb=_size(m), token=m.token,
                          domain=_answer_domain(m))


def _vol_list(res: Any) -> List[VolumeInfo]:
    if int(res.status_code) >= 300:
        raise _api_exception(res, VolumeException)
    if res.parsed is None:
        return []
    if isinstance(res.parsed, _ApiError):
        raise VolumeException(f"{res.parsed.message}: Request failed")
    return [VolumeInfo(volume_id=v.volume_id, name=v.name, size_mb=_size(v)) for v in res.parsed]


def _vol_destroyed(res: Any) -> bool:
    if int(res.status_code) == 404:
        return False
    if int(res.status_code) >= 300:
        raise _api_exception(res, VolumeException)
    return True


# E2B's volume errors: an unknown volume or path has its class (the native
# Volume raises them), a credentials, rate-limit, timeout or cancel error
# keeps its own; anything else is VolumeException("<status>: <message>"),
# as E2B's handle_api_exception(res, VolumeException) makes it.
from ..exceptions import AgentSandboxError as _AgentSandboxError  # noqa: E402
from ..exceptions import OperationCancelledError as _Cancelled  # noqa: E402

_VOLUME_KEEP = (AuthenticationException, RateLimitException, TimeoutException, _Cancelled,
                NotFoundException, VolumeException, InvalidArgumentException)


def _volume_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, **kw)
        except _AgentSandboxError as e:
            if isinstance(e, _VOLUME_KEEP):
                raise
            st = getattr(e, "http_status", 0) or 0
            ve = VolumeException(f"{st}: {e.message}" if st > 0 else e.message)
            for k in ("code", "status", "http_status", "remote_code", "retry_after", "reason"):
                setattr(ve, k, getattr(e, k, None))
            raise ve from e
    return call


for _n in ("create", "connect", "destroy", "from_token"):
    setattr(Volume, _n, classmethod(_volume_errors(Volume.__dict__[_n].__func__)
                                    if _n in Volume.__dict__
                                    else _volume_errors(_V.VolumeSync.__dict__[_n].__func__)))
for _n in ("read_file", "write_file", "make_dir", "exists", "update_metadata", "remove"):
    setattr(Volume, _n, _volume_errors(_V.VolumeSync.__dict__[_n]))
Volume.get_info = _V._dual(_volume_errors(Volume.__dict__["_class_get_info"]),  # type: ignore
                           _volume_errors(_V.VolumeSync.__dict__["_instance_get_info"]))
Volume.list = _V._dual(_volume_errors(Volume.__dict__["_class_list"]),  # type: ignore
                       _volume_errors(_V.VolumeSync.__dict__["_instance_list"]))


class AsyncVolume(_V.Volume):
    """E2B's ``AsyncVolume``: :class:`Volume`'s methods, awaited (the
    control-plane calls through ``e2b.api``'s volumes endpoints'
    ``asyncio_detailed``); ``AsyncVolume(volume_id, name, token)`` as
    :class:`Volume`'s."""

    _sync = Volume

    def __init__(self, volume_id: Any, name: Optional[str] = None, token: Optional[str] = None,
                 domain: Optional[str] = None, debug: Optional[bool] = None,
                 proxy: Any = None) -> None:
        if isinstance(volume_id, str):
            volume_id = Volume(volume_id, name, token, domain, debug, proxy)
        super().__init__(volume_id)

    _domain = property(lambda self: self._s._domain)
    _proxy = property(lambda self: self._s._proxy)
    _debug = property(lambda self: self._s._debug)

    def _get_volume_config(self, **opts: Any) -> VolumeConnectionConfig:
        return self._s._get_volume_config(**opts)

    @classmethod
    def _client(cls, opts: Dict[str, Any]) -> Tuple[ConnectionConfig, Any]:
        config = ConnectionConfig(**opts)
        return config, _api_async_client(config)

    @classmethod
    async def create(cls, name: str, *, size_mb: Optional[int] = None,
                     **opts: Any) -> "AsyncVolume":
        config, client = cls._client(opts)
        res = await _post_volumes.asyncio_detailed(client=client, body=_NewVolume(
            name=name, size_mb=_UNSET if size_mb is None else int(size_mb)))
        return cls(Volume._from_answer(_vol_model(res), config, opts))

    @classmethod
    async def connect(cls, volume_id: str, **opts: Any) -> "AsyncVolume":
        config, client = cls._client(opts)
        res = await _get_volume.asyncio_detailed(volume_id, client=client)
        return cls(Volume._from_answer(_vol_model(res, volume_id), config, opts))

    @classmethod
    async def destroy(cls, volume_id: str, **opts: Any) -> bool:
        config, client = cls._client(opts)
        return _vol_destroyed(await _delete_volume.asyncio_detailed(volume_id, client=client))

    async def _class_get_info(cls, volume_id: str, **opts: Any) -> VolumeAndToken:
        config, client = cls._client(opts)
        return _vol_info(_vol_model(await _get_volume.asyncio_detailed(volume_id, client=client),
                                    volume_id))

    async def _class_list(cls, **opts: Any) -> List[VolumeInfo]:
        config, client = cls._client(opts)
        return _vol_list(await _get_volumes.asyncio_detailed(client=client))

    get_info = _V._dual(_class_get_info, _V.Volume.__dict__["_instance_get_info"])
    list = _V._dual(_class_list, _V.Volume.__dict__["_instance_list"])


# ---- secrets (E2B's e2b.secret, over e2b.api's endpoints: compat/secret.py) -----------

from .secret import (  # noqa: E402
    AsyncSecret,
    AsyncSecretPaginator,
    SandboxIamToken,
    Secret,
    SecretInfo,
    SecretPaginator,
)
from .iam import (  # noqa: E402,F401 (E2B's e2b.sandbox.sandbox_api helpers)
    build_iam_config,
    build_network_config,
    build_network_update_body,
    from_client_network_config,
)

# ---- E2B's Template builder (after _conn, which it uses) ------------------------------

from ..exceptions import FileUploadException  # noqa: E402
from .template import (  # noqa: E402
    BuildInfo,
    BuildStatusReason,
    CopyItem,
    InstructionType,
    LogEntry,
    LogEntryEnd,
    LogEntryLevel,
    LogEntryStart,
    ReadyCmd,
    TemplateBase,
    TemplateBuilder,
    TemplateBuildStatus,
    TemplateBuildStatusResponse,
    TemplateClass,
    TemplateFinal,
    TemplateTag,
    TemplateTagInfo,
    default_build_logger,
    wait_for_file,
    wait_for_port,
    wait_for_process,
    wait_for_timeout,
    wait_for_url,
)
from .template_async import AsyncTemplate  # noqa: E402
from .template_sync import Template  # noqa: E402
