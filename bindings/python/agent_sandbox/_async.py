"""The async API (``agent_sandbox.Sandbox``), async first with ``*_sync`` twins.

Each async method runs the blocking call on a worker thread and awaits it;
cancelling the awaiting task cancels the call in the C library (and, for
``commands.run``, kills the command; for ``run_code``, interrupts the cell).
Callbacks (plain functions or coroutines) run on the event loop.

Every async method ``m`` has a blocking twin ``m_sync`` with the same
parameters (the Alibaba/easy-sandbox convention): ``Sandbox.create_sync()``,
``sandbox.commands.run_sync(...)``, ``sandbox.files.read_sync(...)``. A twin
calls its callbacks on the calling thread and returns the blocking flavour
of handles (:class:`agent_sandbox.sync.CommandHandle`, ...).
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Union

from . import _native as N
from . import _sync as S
from .git import AsyncGit
from .models import (
    CommandInfo,
    CommandResult,
    Context,
    EntryInfo,
    Execution,
    ProcessInfo,
    PtySize,
    SandboxInfo,
    SandboxMetrics,
)

__all__ = [
    "Sandbox",
    "Commands",
    "CommandHandle",
    "Pty",
    "Files",
    "FileStream",
    "WatchHandle",
    "Code",
]

Handler = Optional[Callable[[Any], Union[Any, Awaitable[Any]]]]


def _twin(name: str) -> Callable[..., Any]:
    def twin(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._sync, name)(*args, **kwargs)

    twin.__name__ = twin.__qualname__ = name + "_sync"
    twin.__doc__ = f"The blocking twin of :meth:`{name}` (same parameters)."
    return twin


class _Part:
    def __init__(self, sync: Any) -> None:
        self._sync = sync


# ---- commands ---------------------------------------------------------------------------


class CommandHandle:
    """A command (or pty) running in the background (async).

    Its output is received from the start and handed to the callbacks as it
    arrives; ``stdout``/``stderr`` hold what arrived so far.
    """

    def __init__(self, handle: S.CommandHandle, out: List[str], err: List[str]) -> None:
        self._h = handle
        self._out = out
        self._err = err
        self._pump: "asyncio.Future[CommandResult]" = asyncio.ensure_future(N.run(handle.wait))
        self._pump.add_done_callback(_retrieve)

    @property
    def pid(self) -> int:
        return self._h.pid

    @property
    def stdout(self) -> str:
        return "".join(self._out)

    @property
    def stderr(self) -> str:
        return "".join(self._err)

    @property
    def exit_code(self) -> Optional[int]:
        """The exit code once the command ended, else None."""
        if self._pump.done() and not self._pump.cancelled() and self._pump.exception() is None:
            return self._pump.result().exit_code
        return None

    @property
    def error(self) -> Optional[str]:
        if self._pump.done() and not self._pump.cancelled() and self._pump.exception() is None:
            return self._pump.result().error
        return None

    async def wait(self, *, check: bool = False) -> CommandResult:
        """Wait for the command to end. Cancelling this wait does not stop the command."""
        result = await asyncio.shield(self._pump)
        if check and result.exit_code != 0:
            raise S._exit_exception(result)
        return result

    async def kill(self) -> bool:
        """Kill the command (SIGKILL). False if it already ended.

        Returns once its output stream has ended too (so the handle holds no
        work on a closing loop)."""
        killed = await N.run(self._h.kill)
        if not self._pump.done():
            await asyncio.wait([self._pump], timeout=10)
        return killed

    async def send_stdin(self, data: S.Data, request_timeout: Optional[float] = None) -> None:
        await N.run(self._h.send_stdin, data, request_timeout)

    async def close_stdin(self, request_timeout: Optional[float] = None) -> None:
        await N.run(self._h.close_stdin, request_timeout)

    async def disconnect(self) -> None:
        """Stop receiving output; the command keeps running."""
        if not self._pump.done():
            self._pump.cancel()
            try:
                await self._pump
            except (asyncio.CancelledError, Exception):
                pass
        await N.run(self._h.disconnect)


def _retrieve(fut: "asyncio.Future[Any]") -> None:
    if not fut.cancelled():
        fut.exception()


def _collect(loop: asyncio.AbstractEventLoop, fn: Handler, into: List[str]) -> Callable[[str], Any]:
    async def both(chunk: str) -> None:
        into.append(chunk)
        if fn is not None:
            r = fn(chunk)
            if asyncio.iscoroutine(r):
                await r

    return N.on_loop(loop, both)  # type: ignore[return-value]


class Commands(_Part):
    """Run commands in the sandbox (``sandbox.commands``)."""

    _sync: S.Commands

    async def run(
        self,
        cmd: str,
        *,
        background: bool = False,
        envs: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        user: Optional[str] = None,
        timeout: Optional[float] = 60,
        request_timeout: Optional[float] = None,
        stdin: Union[bool, S.Data, None] = None,
        on_stdout: Handler = None,
        on_stderr: Handler = None,
        tag: Optional[str] = None,
        check: bool = False,
    ) -> Any:
        """Run ``cmd`` and return its :class:`CommandResult` (see
        :meth:`agent_sandbox.sync.Commands.run` for every parameter);
        ``background=True`` returns a :class:`CommandHandle` once it runs.

        Cancelling the awaiting task kills the command.
        """
        loop = asyncio.get_running_loop()
        if background:
            out: List[str] = []
            err: List[str] = []
            h = await N.run(self._sync._start, cmd, envs, cwd, user, timeout, request_timeout,
                            stdin, _collect(loop, on_stdout, out), _collect(loop, on_stderr, err),
                            tag)
            return CommandHandle(h, out, err)
        return await N.run(self._sync.run, cmd, envs=envs, cwd=cwd, user=user, timeout=timeout,
                           request_timeout=request_timeout, stdin=stdin,
                           on_stdout=N.on_loop(loop, on_stdout),
                           on_stderr=N.on_loop(loop, on_stderr), tag=tag, check=check)

    async def connect(self, pid: int, *, on_stdout: Handler = None, on_stderr: Handler = None,
                      timeout: Optional[float] = None,
                      request_timeout: Optional[float] = None) -> CommandHandle:
        """Attach to a running command by pid (its output from now on)."""
        loop = asyncio.get_running_loop()
        out: List[str] = []
        err: List[str] = []
        h = await N.run(self._sync.connect, pid, on_stdout=_collect(loop, on_stdout, out),
                        on_stderr=_collect(loop, on_stderr, err), timeout=timeout,
                        request_timeout=request_timeout)
        return CommandHandle(h, out, err)

    async def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        return await N.run(self._sync.list, request_timeout)

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        return await N.run(self._sync.kill, pid, request_timeout)

    async def signal(self, pid: int, signal: int = 15,
                     request_timeout: Optional[float] = None) -> None:
        await N.run(self._sync.signal, pid, signal, request_timeout)

    async def send_stdin(self, pid: int, data: S.Data,
                         request_timeout: Optional[float] = None) -> None:
        await N.run(self._sync.send_stdin, pid, data, request_timeout)

    async def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        await N.run(self._sync.close_stdin, pid, request_timeout)

    run_sync = _twin("run")
    connect_sync = _twin("connect")
    list_sync = _twin("list")
    kill_sync = _twin("kill")
    signal_sync = _twin("signal")
    send_stdin_sync = _twin("send_stdin")
    close_stdin_sync = _twin("close_stdin")


class Pty(_Part):
    """Interactive terminals (``sandbox.pty``)."""

    _sync: S.Pty

    async def create(self, size: Optional[PtySize] = None, on_data: Handler = None, *,
                     user: Optional[str] = None, cwd: Optional[str] = None,
                     envs: Optional[Mapping[str, str]] = None, timeout: Optional[float] = 60,
                     request_timeout: Optional[float] = None) -> CommandHandle:
        """Start ``bash -i -l`` on a new terminal; ``on_data`` gets its output (bytes)."""
        loop = asyncio.get_running_loop()
        h = await N.run(self._sync.create, size, N.on_loop(loop, on_data), user=user, cwd=cwd,
                        envs=envs, timeout=timeout, request_timeout=request_timeout)
        return CommandHandle(h, [], [])

    async def connect(self, pid: int, on_data: Handler = None, *,
                      timeout: Optional[float] = None,
                      request_timeout: Optional[float] = None) -> CommandHandle:
        loop = asyncio.get_running_loop()
        h = await N.run(self._sync.connect, pid, N.on_loop(loop, on_data), timeout=timeout,
                        request_timeout=request_timeout)
        return CommandHandle(h, [], [])

    async def send_stdin(self, pid: int, data: S.Data,
                         request_timeout: Optional[float] = None) -> None:
        await N.run(self._sync.send_stdin, pid, data, request_timeout)

    send_input = send_stdin

    async def resize(self, pid: int, size: PtySize,
                     request_timeout: Optional[float] = None) -> None:
        await N.run(self._sync.resize, pid, size, request_timeout)

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        return await N.run(self._sync.kill, pid, request_timeout)

    create_sync = _twin("create")
    connect_sync = _twin("connect")
    send_stdin_sync = _twin("send_stdin")
    send_input_sync = _twin("send_input")
    resize_sync = _twin("resize")
    kill_sync = _twin("kill")


# ---- files ------------------------------------------------------------------------------


class FileStream:
    """A file being read in chunks (async iterator of bytes)."""

    def __init__(self, stream: S.FileStream) -> None:
        self._s = stream

    def __aiter__(self) -> "FileStream":
        return self

    async def __anext__(self) -> bytes:
        def step() -> Optional[bytes]:
            try:
                return next(self._s)
            except StopIteration:
                return None

        chunk = await N.run(step)
        if chunk is None:
            raise StopAsyncIteration
        return chunk

    async def read(self) -> bytes:
        """The rest of the file."""
        return b"".join([c async for c in self])

    async def aclose(self) -> None:
        await N.run(self._s.close)

    async def __aenter__(self) -> "FileStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class WatchHandle:
    """A watch on a directory (async): events reach ``on_event`` on the loop
    as they happen, until :meth:`stop`."""

    def __init__(self, handle: S.WatchHandle, on_exit: Handler) -> None:
        self._h = handle
        self._on_exit = on_exit
        self._pump = asyncio.ensure_future(N.run(handle.wait, None))
        self._pump.add_done_callback(self._ended)

    def _ended(self, fut: "asyncio.Future[Any]") -> None:
        err = None if fut.cancelled() else fut.exception()
        if self._on_exit is not None:
            r = self._on_exit(err)
            if asyncio.iscoroutine(r):
                asyncio.ensure_future(r)

    async def stop(self) -> None:
        """Stop watching."""
        S.ll.asb_watch_stop(self._h._w) if self._h._w is not None else None
        try:
            await asyncio.shield(self._pump)
        except Exception:
            pass
        await N.run(self._h.stop)


class Files(_Part):
    """The sandbox's filesystem (``sandbox.files``)."""

    _sync: S.Files

    async def read(self, path: str, format: str = "text", *, user: Optional[str] = None,
                   request_timeout: Optional[float] = None, gzip: bool = False) -> Any:
        """Read a file: ``format="text"`` (str), ``"bytes"`` or ``"stream"``
        (a :class:`FileStream`: ``async for chunk in stream``)."""
        r = await N.run(self._sync.read, path, format, user=user,
                        request_timeout=request_timeout, gzip=gzip)
        return FileStream(r) if format == "stream" else r

    async def read_text(self, path: str, **kw: Any) -> str:
        return await self.read(path, "text", **kw)

    async def read_bytes(self, path: str, **kw: Any) -> bytes:
        return await self.read(path, "bytes", **kw)

    async def write(self, path: str, data: Any, *, user: Optional[str] = None,
                    request_timeout: Optional[float] = None, gzip: bool = False,
                    metadata: Optional[Dict[str, str]] = None) -> EntryInfo:
        """Create or replace a file with str, bytes or a (binary) file object;
        ``metadata`` is stored on it."""
        return await N.run(self._sync.write, path, data, user=user,
                           request_timeout=request_timeout, gzip=gzip, metadata=metadata)

    async def write_files(self, files: List[Any], *, user: Optional[str] = None,
                          request_timeout: Optional[float] = None,
                          gzip: bool = False,
                          metadata: Optional[Dict[str, str]] = None) -> List[EntryInfo]:
        """Write several files in one request (``metadata`` on every one)."""
        return await N.run(self._sync.write_files, files, user=user,
                           request_timeout=request_timeout, gzip=gzip, metadata=metadata)

    write_many = write_files

    async def list(self, path: str, depth: int = 1, *, user: Optional[str] = None,
                   request_timeout: Optional[float] = None) -> List[EntryInfo]:
        return await N.run(self._sync.list, path, depth, user=user,
                           request_timeout=request_timeout)

    async def exists(self, path: str, *, user: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> bool:
        return await N.run(self._sync.exists, path, user=user, request_timeout=request_timeout)

    async def get_info(self, path: str, *, user: Optional[str] = None,
                       request_timeout: Optional[float] = None) -> EntryInfo:
        return await N.run(self._sync.get_info, path, user=user,
                           request_timeout=request_timeout)

    async def remove(self, path: str, *, user: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> None:
        await N.run(self._sync.remove, path, user=user, request_timeout=request_timeout)

    async def rename(self, old_path: str, new_path: str, *, user: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> EntryInfo:
        return await N.run(self._sync.rename, old_path, new_path, user=user,
                           request_timeout=request_timeout)

    async def make_dir(self, path: str, *, user: Optional[str] = None,
                       request_timeout: Optional[float] = None) -> bool:
        return await N.run(self._sync.make_dir, path, user=user,
                           request_timeout=request_timeout)

    async def watch_dir(self, path: str, on_event: Handler = None, *, on_exit: Handler = None,
                        recursive: bool = False, include_entry: bool = False,
                        user: Optional[str] = None,
                        request_timeout: Optional[float] = None) -> WatchHandle:
        """Watch a directory: ``on_event`` (plain or async) gets each
        :class:`FilesystemEvent` on the loop; returns once the watch is in
        place. ``on_exit`` is called with None or the error when it ends."""
        loop = asyncio.get_running_loop()
        h = await N.run(self._sync.watch_dir, path, N.on_loop(loop, on_event),
                        recursive=recursive, include_entry=include_entry, user=user,
                        request_timeout=request_timeout)
        return WatchHandle(h, on_exit)

    read_sync = _twin("read")
    read_text_sync = _twin("read_text")
    read_bytes_sync = _twin("read_bytes")
    write_sync = _twin("write")
    write_files_sync = _twin("write_files")
    write_many_sync = _twin("write_files")
    list_sync = _twin("list")
    exists_sync = _twin("exists")
    get_info_sync = _twin("get_info")
    remove_sync = _twin("remove")
    rename_sync = _twin("rename")
    make_dir_sync = _twin("make_dir")
    watch_dir_sync = _twin("watch_dir")


# ---- code ---------------------------------------------------------------------------------


class Code(_Part):
    """Code contexts and runs (``sandbox.code``)."""

    _sync: S.Code

    async def run(self, code: str, language: Optional[str] = None, context: Any = None,
                  **kw: Any) -> Execution:
        loop = asyncio.get_running_loop()
        for name in ("on_stdout", "on_stderr", "on_result", "on_error"):
            if kw.get(name) is not None:
                kw[name] = N.on_loop(loop, kw[name])
        return await N.run(self._sync.run, code, language, context, **kw)

    async def create_context(self, language: Optional[str] = None, cwd: Optional[str] = None,
                             *, request_timeout: Optional[float] = None) -> Context:
        return await N.run(self._sync.create_context, language, cwd,
                           request_timeout=request_timeout)

    async def list_contexts(self, request_timeout: Optional[float] = None) -> List[Context]:
        return await N.run(self._sync.list_contexts, request_timeout)

    async def restart_context(self, context: Union[Context, str],
                              request_timeout: Optional[float] = None) -> None:
        await N.run(self._sync.restart_context, context, request_timeout)

    async def remove_context(self, context: Union[Context, str],
                             request_timeout: Optional[float] = None) -> None:
        await N.run(self._sync.remove_context, context, request_timeout)

    run_sync = _twin("run")
    create_context_sync = _twin("create_context")
    list_contexts_sync = _twin("list_contexts")
    restart_context_sync = _twin("restart_context")
    remove_context_sync = _twin("remove_context")


# ---- sandboxes -------------------------------------------------------------------------------


class Sandbox:
    """A sandbox (async API).

    Create one with ``await Sandbox.create(...)`` (or ``Sandbox.create_sync``)
    and use ``sandbox.commands``, ``sandbox.files``, ``sandbox.pty``,
    ``sandbox.network``, ``sandbox.run_code``, ``sandbox.run``.
    ``async with await Sandbox.create() as sandbox:`` kills it on exit.
    """

    def __init__(self, sync: S.Sandbox) -> None:
        self._sync = sync
        self.sandbox_id: str = sync.sandbox_id
        self.commands = Commands(sync.commands)
        self.pty = Pty(sync.pty)
        self.files = Files(sync.files)
        self.code = Code(sync.code)
        self.network = sync.network
        self.git = AsyncGit(sync.git)
        from .agents import AsyncAgents
        self.agents = AsyncAgents(sync.agents)

    @property
    def id(self) -> str:
        return self.sandbox_id

    @property
    def envd_version(self) -> str:
        return self._sync.envd_version

    @property
    def sandbox_domain(self) -> str:
        return self._sync.sandbox_domain

    @property
    def fork_mode(self) -> Optional[str]:
        """See :attr:`agent_sandbox.sync.Sandbox.fork_mode`."""
        return self._sync.fork_mode

    @property
    def sync(self) -> S.Sandbox:
        """The blocking flavour of this sandbox (:class:`agent_sandbox.sync.Sandbox`)."""
        return self._sync

    def __repr__(self) -> str:
        return f"<agent_sandbox.Sandbox {self.sandbox_id}>"

    # ---- the control plane ----------------------------------------------------------
    @classmethod
    async def create(cls, template: Optional[str] = None, *, timeout: Optional[float] = 300,
                     metadata: Optional[Mapping[str, str]] = None,
                     envs: Optional[Mapping[str, str]] = None, auto_pause: bool = False,
                     request_timeout: Optional[float] = None,
                     allow_internet_access: Optional[bool] = None,
                     network: Optional[Mapping[str, Any]] = None,
                     keep_memory: bool = True, auto_resume: bool = False,
                     volume_mounts: Optional[Mapping[str, Any]] = None,
                     mcp: Optional[Mapping[str, Any]] = None, **conn: Any) -> "Sandbox":
        """Create a sandbox from ``template`` that lives ``timeout`` seconds.

        ``metadata`` is yours to filter :meth:`list` by; ``envs`` are set for
        every command; ``auto_pause`` pauses instead of killing at the
        timeout (``keep_memory=False``: without memory; ``auto_resume``:
        traffic resumes it); ``allow_internet_access``, ``network`` and ``mcp`` are E2B's (see
        :meth:`agent_sandbox.sync.Sandbox.create`). Connection options (``api_key``, ``api_url``, ``domain``,
        ``sandbox_url``, ``debug``, ``headers``, ``request_timeout``) default
        to ``ASB_*`` / ``E2B_*`` variables and, with nothing set, to the
        local engine (started if needed).
        """
        s = await N.run(S.Sandbox.create, template, timeout=timeout, metadata=metadata,
                        envs=envs, auto_pause=auto_pause, request_timeout=request_timeout,
                        allow_internet_access=allow_internet_access, network=network,
                        keep_memory=keep_memory, auto_resume=auto_resume,
                        volume_mounts=volume_mounts, mcp=mcp, **conn)
        return cls(s)

    @classmethod
    def create_sync(cls, template: Optional[str] = "base", **kw: Any) -> "Sandbox":
        """The blocking twin of :meth:`create`."""
        return cls(S.Sandbox.create(template, **kw))

    @classmethod
    async def connect(cls, sandbox_id: str, *, timeout: Optional[float] = None,
                      request_timeout: Optional[float] = None, **conn: Any) -> "Sandbox":
        """Connect to a sandbox by id (a paused one is resumed)."""
        s = await N.run(S.Sandbox.connect, sandbox_id, timeout=timeout,
                        request_timeout=request_timeout, **conn)
        return cls(s)

    @classmethod
    def connect_sync(cls, sandbox_id: str, **kw: Any) -> "Sandbox":
        """The blocking twin of :meth:`connect`."""
        return cls(S.Sandbox.connect(sandbox_id, **kw))

    @classmethod
    async def list(cls, *, metadata: Optional[Mapping[str, str]] = None, state: Any = None,
                   template: Optional[str] = None, limit: Optional[int] = None,
                   request_timeout: Optional[float] = None, **conn: Any) -> List[SandboxInfo]:
        """The sandboxes, newest first, filtered by metadata, state and template."""
        return await N.run(S.Sandbox.list, metadata=metadata, state=state, template=template,
                           limit=limit, request_timeout=request_timeout, **conn)

    @classmethod
    def list_sync(cls, **kw: Any) -> List[SandboxInfo]:
        """The blocking twin of :meth:`list`."""
        return S.Sandbox.list(**kw)

    @classmethod
    async def kill_by_id(cls, sandbox_id: str, **conn: Any) -> bool:
        """Kill a sandbox by id: False if it did not exist."""
        return await N.run(S.Sandbox.kill_by_id, sandbox_id, **conn)

    @classmethod
    def kill_by_id_sync(cls, sandbox_id: str, **conn: Any) -> bool:
        return S.Sandbox.kill_by_id(sandbox_id, **conn)

    async def kill(self, *, request_timeout: Optional[float] = None) -> bool:
        """Kill the sandbox: True if killed, False if it was already gone."""
        return await N.run(self._sync.kill, request_timeout=request_timeout)

    async def set_timeout(self, timeout: float, *,
                          request_timeout: Optional[float] = None) -> None:
        """Make the sandbox live ``timeout`` seconds from now."""
        await N.run(self._sync.set_timeout, timeout, request_timeout=request_timeout)

    async def loopback_url(self, port: int, *, request_timeout: Optional[float] = None) -> str:
        """``http://127.0.0.1:<n>`` for the port (local engine only)."""
        return await N.run(self._sync.loopback_url, port, request_timeout=request_timeout)

    async def get_info(self, *, request_timeout: Optional[float] = None) -> SandboxInfo:
        return await N.run(self._sync.get_info, request_timeout=request_timeout)

    @classmethod
    async def update_network_by_id(cls, sandbox_id: str,
                                   network: Optional[Mapping[str, Any]] = None, *,
                                   allow_internet_access: Optional[bool] = None,
                                   request_timeout: Optional[float] = None, **conn: Any) -> None:
        """:meth:`update_network` of a sandbox by id, without connecting to it."""
        await N.run(S.Sandbox.update_network_by_id, sandbox_id, network,
                    allow_internet_access=allow_internet_access,
                    request_timeout=request_timeout, **conn)

    async def update_network(self, network: Optional[Mapping[str, Any]] = None, *,
                             allow_internet_access: Optional[bool] = None,
                             request_timeout: Optional[float] = None) -> None:
        """Replace the sandbox's egress rules, live (see
        :meth:`agent_sandbox.sync.Sandbox.update_network`)."""
        await N.run(self._sync.update_network, network,
                    allow_internet_access=allow_internet_access, request_timeout=request_timeout)

    async def create_snapshot(self, name: Optional[str] = None, *,
                              request_timeout: Optional[float] = None) -> str:
        """Snapshot the sandbox's files now (see
        :meth:`agent_sandbox.sync.Sandbox.create_snapshot`): the snapshot's id."""
        return await N.run(self._sync.create_snapshot, name, request_timeout=request_timeout)

    async def fork(self, *, timeout: Optional[float] = None,
                   keep_processes: Optional[bool] = None,
                   request_timeout: Optional[float] = None) -> "Sandbox":
        """A new sandbox with this one's files now (see
        :meth:`agent_sandbox.sync.Sandbox.fork`)."""
        return type(self)(await N.run(self._sync.fork, timeout=timeout,
                                      keep_processes=keep_processes,
                                      request_timeout=request_timeout))

    async def fork_many(self, count: int, *, timeout: Optional[float] = None,
                        keep_processes: Optional[bool] = None,
                        request_timeout: Optional[float] = None) -> List[Any]:
        """``count`` forks in one call (see
        :meth:`agent_sandbox.sync.Sandbox.fork_many`): a sandbox or the error
        of each."""
        got = await N.run(self._sync.fork_many, count, timeout=timeout,
                          keep_processes=keep_processes, request_timeout=request_timeout)
        return [f if isinstance(f, Exception) else type(self)(f) for f in got]

    @classmethod
    async def list_snapshots(cls, **kw: Any) -> List[str]:
        """The ids of the snapshots (``sandbox_id=``, ``name=`` filters), every page."""
        return await N.run(S.Sandbox.list_snapshots, **kw)

    @classmethod
    async def delete_snapshot(cls, snapshot_id: str, **kw: Any) -> bool:
        """Delete a snapshot: True, or False if there is none of that id."""
        return await N.run(S.Sandbox.delete_snapshot, snapshot_id, **kw)

    async def is_running(self, *, request_timeout: Optional[float] = None) -> bool:
        return await N.run(self._sync.is_running, request_timeout=request_timeout)

    async def pause(self, *, keep_memory: bool = True,
                    request_timeout: Optional[float] = None) -> bool:
        """Pause: True if paused now, False if it already was
        (``keep_memory=False``: files only, resume boots it)."""
        return await N.run(self._sync.pause, keep_memory=keep_memory,
                           request_timeout=request_timeout)

    async def resume(self, *, timeout: Optional[float] = None,
                     request_timeout: Optional[float] = None) -> None:
        await N.run(self._sync.resume, timeout=timeout, request_timeout=request_timeout)

    async def get_metrics(self, start: Any = None, end: Any = None, *,
                          request_timeout: Optional[float] = None) -> List[SandboxMetrics]:
        return await N.run(self._sync.get_metrics, start, end, request_timeout=request_timeout)

    def get_host(self, port: int) -> str:
        return self.network.get_host(port)

    def get_url(self, port: int) -> str:
        return self.network.get_url(port)

    def get_mcp_url(self) -> str:
        return self._sync.get_mcp_url()

    async def get_mcp_token(self, *, request_timeout: Optional[float] = None) -> str:
        return await N.run(self._sync.get_mcp_token, request_timeout=request_timeout)

    async def download_url(self, path: str, **kw: Any) -> str:
        return await N.run(self._sync.download_url, path, **kw)

    async def upload_url(self, path: Optional[str] = None, **kw: Any) -> str:
        return await N.run(self._sync.upload_url, path, **kw)

    kill_sync = _twin("kill")
    set_timeout_sync = _twin("set_timeout")
    loopback_url_sync = _twin("loopback_url")
    get_info_sync = _twin("get_info")
    is_running_sync = _twin("is_running")
    update_network_sync = _twin("update_network")
    create_snapshot_sync = _twin("create_snapshot")
    pause_sync = _twin("pause")
    resume_sync = _twin("resume")
    get_metrics_sync = _twin("get_metrics")
    download_url_sync = _twin("download_url")
    upload_url_sync = _twin("upload_url")

    # ---- code --------------------------------------------------------------------------
    async def run_code(self, code: str, language: Optional[str] = None, context: Any = None,
                       **kw: Any) -> Execution:
        """Run code in a stateful kernel (Python by default).

        ``(await sandbox.run_code("print(2 ** 10)")).text == "1024"``: the
        value, or the printed output when there is none. Keywords:
        ``envs``, ``timeout``, ``request_timeout``, ``on_stdout``,
        ``on_stderr``, ``on_result``, ``on_error``. Cancelling the awaiting
        task interrupts the cell.
        """
        return await self.code.run(code, language, context, **kw)

    async def create_code_context(self, cwd: Optional[str] = None,
                                  language: Optional[str] = None,
                                  request_timeout: Optional[float] = None) -> Context:
        return await self.code.create_context(language, cwd, request_timeout=request_timeout)

    async def list_code_contexts(self, request_timeout: Optional[float] = None) -> List[Context]:
        return await self.code.list_contexts(request_timeout)

    async def restart_code_context(self, context: Union[Context, str],
                                   request_timeout: Optional[float] = None) -> None:
        await self.code.restart_context(context, request_timeout)

    async def remove_code_context(self, context: Union[Context, str],
                                  request_timeout: Optional[float] = None) -> None:
        await self.code.remove_context(context, request_timeout)

    run_code_sync = _twin("run_code")
    create_code_context_sync = _twin("create_code_context")
    list_code_contexts_sync = _twin("list_code_contexts")
    restart_code_context_sync = _twin("restart_code_context")
    remove_code_context_sync = _twin("remove_code_context")

    # ---- named commands -------------------------------------------------------------------
    async def run(self, command: str, /, **kwargs: Any) -> Any:
        """Run the named command ``command`` with ``kwargs`` and return its
        result: ``await sandbox.run("hello", name="Alice")``. Errors:
        :class:`CommandNotFoundError`, :class:`InvalidArgumentException`,
        :class:`CommandFailedError` (see :meth:`agent_sandbox.sync.Sandbox.run`)."""
        return await N.run(self._sync.run_command, command, kwargs)

    def run_sync(self, command: str, /, **kwargs: Any) -> Any:
        """The blocking twin of :meth:`run`."""
        return self._sync.run_command(command, kwargs)

    async def run_command(self, command: str, args: Optional[Mapping[str, Any]] = None, *,
                          port: Optional[int] = None, timeout: Optional[float] = None) -> Any:
        """:meth:`run` with the arguments as a mapping, a ``port`` (default
        9000) and a ``timeout`` in seconds."""
        return await N.run(self._sync.run_command, command, args, port=port, timeout=timeout)

    async def list_commands(self, *, port: Optional[int] = None,
                            request_timeout: Optional[float] = None) -> List[CommandInfo]:
        """The named commands the sandbox serves."""
        return await N.run(self._sync.list_commands, port=port, request_timeout=request_timeout)

    run_command_sync = _twin("run_command")
    list_commands_sync = _twin("list_commands")

    # ---- sessions ---------------------------------------------------------------------------
    async def save_session(self, name: str, metadata: Optional[Mapping[str, str]] = None) -> None:
        """Remember this sandbox under ``name``: any process (any binding) can
        reconnect with :meth:`from_session`."""
        await N.run(self._sync.save_session, name, metadata)

    @classmethod
    async def from_session(cls, name: str, **kw: Any) -> "Sandbox":
        """Reconnect to the sandbox saved under ``name`` (resumed if paused)."""
        return cls(await N.run(S.Sandbox.from_session, name, **kw))

    @classmethod
    def from_session_sync(cls, name: str, **kw: Any) -> "Sandbox":
        return cls(S.Sandbox.from_session(name, **kw))

    save_session_sync = _twin("save_session")

    # ---- context managers ----------------------------------------------------------------------
    async def __aenter__(self) -> "Sandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.kill()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kill_sync()
