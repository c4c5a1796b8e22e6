"""The blocking implementation of the API (``agent_sandbox.sync``).

Every method calls the C library on the calling thread and returns when the
call is done. The async API (:mod:`agent_sandbox`) runs these same methods
on worker threads. Callbacks given here are called on the calling thread.
"""

from __future__ import annotations

import datetime as _dt
import io
import json as _json
import os
import queue
import threading
import time
import weakref
from typing import (
    IO,
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _native as N
from . import _netconf
from . import exceptions as E
from . import lowlevel as ll
from .git import Git
from .models import (
    _EVENT_TYPES,
    CommandArg,
    CommandInfo,
    CommandResult,
    Context,
    EntryInfo,
    Execution,
    ExecutionError,
    FilesystemEvent,
    OutputMessage,
    ProcessInfo,
    PtySize,
    Result,
    SandboxInfo,
    SandboxMetrics,
    SandboxState,
)

__all__ = [
    "Sandbox",
    "Commands",
    "CommandHandle",
    "Pty",
    "Files",
    "FileStream",
    "WatchHandle",
    "Network",
    "Code",
]

Data = Union[str, bytes, bytearray, memoryview]
Envs = Optional[Mapping[str, str]]


def _not_found_false(fn: Callable[[], Any]) -> bool:
    try:
        fn()
        return True
    except E.NotFoundException:
        return False


def _result(res: Any) -> CommandResult:
    return CommandResult(
        stderr=N.text(ll.asb_command_result_stderr(res)),
        stdout=N.text(ll.asb_command_result_stdout(res)),
        exit_code=ll.asb_command_result_exit_code(res),
        error=ll.asb_command_result_error(res),
    )


def _exit_exception(r: CommandResult) -> E.CommandExitException:
    why = f": {r.error}" if r.error else ""
    return E.CommandExitException(
        f"command exited with code {r.exit_code}{why}",
        stdout=r.stdout,
        stderr=r.stderr,
        exit_code=r.exit_code,
        error=r.error,
        code=ll.ASB_ECOMMANDEXIT,
        status="ASB_ECOMMANDEXIT",
    )


def _call_options(timeout: Optional[float] = None) -> Any:
    o = ll.asb_call_options()
    if timeout is not None:
        o.timeout_ms = N.ms(timeout)
    o.cancel = N.current_cancel()
    return o


# ---- commands -------------------------------------------------------------------------



def _process_options(o: Any, envs: "Envs", cwd: Optional[str], user: Optional[str],
                     timeout: Optional[float], request_timeout: Optional[float]) -> Any:
    """Fills what asb_command_options and asb_pty_options share."""
    if envs:
        o.envs = dict(envs)
    if cwd:
        o.cwd = cwd
    if user:
        o.user = user
    o.timeout_ms = N.ms(timeout)
    if request_timeout is not None:
        o.request_timeout_ms = N.ms(request_timeout)
    return o

class _Sink:
    """Receives a process's output from the trampolines (holds no reference to
    the handle, so handles can be collected)."""

    __slots__ = ("out", "err", "pty", "is_pty")

    def __init__(self, on_stdout: Any, on_stderr: Any, on_pty: Any, is_pty: bool) -> None:
        self.out = N.Decoder(on_stdout)
        self.err = N.Decoder(on_stderr)
        self.pty = on_pty
        self.is_pty = is_pty

    def feed_out(self, data: bytes) -> None:
        if self.is_pty:
            if self.pty is not None:
                self.pty(data)
        else:
            self.out.feed(data)

    def feed_err(self, data: bytes) -> None:
        self.err.feed(data)

    def flush(self) -> None:
        if not self.is_pty:
            self.out.flush()
            self.err.flush()


def _free_process(p: Any, token: Any, cb: Any) -> None:
    ll.asb_process_free(p)


class CommandHandle:
    """A command (or pty) running in the background.

    Output reaches the callbacks given when it was started (or to
    :meth:`wait`) while you wait for it; the command runs on whether or not
    anyone waits, until it ends, its timeout kills it, or :meth:`kill`.
    """

    def __init__(self, sandbox: "Sandbox", sink: _Sink, token: N.CancelToken) -> None:
        self._sandbox = sandbox
        self._sink = sink
        self._token = token
        self._cb = ll.asbpy_callbacks(sink.feed_out, sink.feed_err, None, None, None, None, 0)
        self._p: Any = None
        self._pid = 0
        self._result: Optional[CommandResult] = None
        self._exit_rc = 0

    def _attach(self, p: Any) -> None:
        self._p = p
        self._pid = ll.asb_process_pid(p)
        self._finalizer = weakref.finalize(self, _free_process, p, self._token, self._cb)

    @property
    def pid(self) -> int:
        """The process id inside the sandbox."""
        return self._pid

    @property
    def sandbox(self) -> "Sandbox":
        return self._sandbox

    def wait(
        self,
        on_stdout: Optional[Callable[[str], Any]] = None,
        on_stderr: Optional[Callable[[str], Any]] = None,
        on_pty: Optional[Callable[[bytes], Any]] = None,
        *,
        timeout: Optional[float] = None,
        check: bool = False,
    ) -> CommandResult:
        """Wait for the command to end, delivering its output to the callbacks.

        ``timeout`` (seconds) bounds this wait only: on
        :class:`TimeoutException` the command runs on and you may wait again.
        A non-zero exit code raises :class:`CommandExitException` when
        ``check`` is true; otherwise the result carries it.
        """
        if self._result is not None:
            return self._finish(self._result, check)
        if on_stdout is not None:
            self._sink.out.fn = on_stdout
        if on_stderr is not None:
            self._sink.err.fn = on_stderr
        if on_pty is not None:
            self._sink.pty = on_pty
        if self._p is None:
            raise E.SandboxException("the command handle is disconnected")
        call = ll.asb_call_options()
        call.timeout_ms = N.ms(timeout) if timeout else 0
        call.cancel = N.current_cancel()
        rc, res = ll.asb_process_wait(self._p, call)
        self._sink.flush()
        if rc != N.OK and not (rc == N.ECOMMANDEXIT and res is not None):
            N.fail(rc, self._cb)
        self._result = _result(res)
        return self._finish(self._result, check)

    @staticmethod
    def _finish(result: CommandResult, check: bool) -> CommandResult:
        if check and result.exit_code != 0:
            raise _exit_exception(result)
        return result

    def kill(self) -> bool:
        """Kill the command (SIGKILL to its process group). False if it already ended."""
        if self._p is not None:
            return _not_found_false(lambda: N.call(ll.asb_process_kill, self._p, _call_options()))
        return _not_found_false(lambda: N.call(ll.asb_commands_kill, self._sandbox._h,
                                               self._pid, _call_options()))

    def send_stdin(self, data: Data, request_timeout: Optional[float] = None) -> None:
        """Write to its stdin (start it with ``stdin=True``); keystrokes for a pty."""
        if self._p is None:
            raise E.SandboxException("the command handle is disconnected")
        N.call(ll.asb_process_send_stdin, self._p, data, _call_options(request_timeout))

    def close_stdin(self, request_timeout: Optional[float] = None) -> None:
        """Close its stdin (the command reads end-of-file)."""
        if self._p is not None:
            N.call(ll.asb_process_close_stdin, self._p, _call_options(request_timeout))
        else:
            N.call(ll.asb_commands_close_stdin, self._sandbox._h, self._pid,
                   _call_options(request_timeout))

    def disconnect(self) -> None:
        """Stop receiving its output; the command keeps running
        (``sandbox.commands.connect(pid)`` attaches again)."""
        if self._p is not None:
            ll.asb_process_disconnect(self._p)

    def __iter__(self) -> Iterator[Tuple[Optional[str], Optional[str], Optional[bytes]]]:
        """Iterate over the output as (stdout, stderr, pty) tuples until the command ends.

        The result is available afterwards from :meth:`wait`. Each chunk is
        pulled with asb_process_read on the iterating thread (the callbacks
        given at start see it too).
        """
        items: List[Tuple[Any, Any, Any]] = []
        out_fn, err_fn, pty_fn = self._sink.out.fn, self._sink.err.fn, self._sink.pty

        def tee(kind: int, fn: Any) -> Callable[[Any], None]:
            def f(chunk: Any) -> None:
                if fn is not None:
                    fn(chunk)
                item: List[Any] = [None, None, None]
                item[kind] = chunk
                items.append((item[0], item[1], item[2]))

            return f

        self._sink.out.fn, self._sink.err.fn, self._sink.pty = tee(0, out_fn), tee(1, err_fn), tee(2, pty_fn)
        error: Optional[BaseException] = None
        try:
            if self._result is None and self._p is not None:
                while True:
                    rc, _kind, _data = ll.asb_process_read(self._p, _call_options())
                    while items:
                        yield items.pop(0)
                    if rc > 0:
                        continue
                    if rc < 0:
                        try:
                            N.fail(rc, self._cb)
                        except BaseException as e:  # noqa: BLE001 - raised after the output
                            error = e
                    break
            if error is None:
                try:
                    self.wait()  # the process ended: returns (and flushes) at once
                except BaseException as e:  # noqa: BLE001
                    error = e
            while items:
                yield items.pop(0)
        finally:
            self._sink.out.fn, self._sink.err.fn, self._sink.pty = out_fn, err_fn, pty_fn
        if error is not None:
            raise error


class Commands:
    """Run commands in the sandbox (``sandbox.commands``)."""

    def __init__(self, sandbox: "Sandbox") -> None:
        self._sandbox = sandbox

    def _options(self, envs: Envs, cwd: Optional[str], user: Optional[str],
                 timeout: Optional[float], request_timeout: Optional[float],
                 stdin: bool, tag: Optional[str]) -> Any:
        o = _process_options(ll.asb_command_options(), envs, cwd, user, timeout,
                             request_timeout)
        if stdin:
            o.stdin_enabled = 1
        if tag:
            o.tag = tag
        return o

    def run(
        self,
        cmd: str,
        *,
        background: bool = False,
        envs: Envs = None,
        cwd: Optional[str] = None,
        user: Optional[str] = None,
        timeout: Optional[float] = 60,
        request_timeout: Optional[float] = None,
        stdin: Union[bool, Data, None] = None,
        on_stdout: Optional[Callable[[str], Any]] = None,
        on_stderr: Optional[Callable[[str], Any]] = None,
        tag: Optional[str] = None,
        check: bool = False,
    ) -> Any:
        """Run ``cmd`` with ``/bin/bash -l -c`` and return its :class:`CommandResult`.

        :param background: return a :class:`CommandHandle` as soon as the
            command runs instead of waiting for it.
        :param envs: environment variables for this command.
        :param cwd: working directory (default: the user's home).
        :param user: the user to run as (default: the sandbox's default user).
        :param timeout: the command's lifetime in seconds, enforced inside
            the sandbox (0 = no limit); it is killed then and
            :class:`TimeoutException` raised.
        :param request_timeout: how long starting may take, in seconds.
        :param stdin: ``True`` keeps stdin open for ``send_stdin``; a str or
            bytes is written to stdin, which is then closed.
        :param on_stdout: called with each piece of stdout as it arrives.
        :param on_stderr: the same for stderr.
        :param tag: a tag to find the process by in :meth:`list`.
        :param check: raise :class:`CommandExitException` for a non-zero
            exit code (otherwise the result's ``exit_code`` says it).

        Cancelling the call (a cancelled task, a :class:`CancelToken`) kills
        the command too.
        """
        if background:
            return self._start(cmd, envs, cwd, user, timeout, request_timeout,
                               stdin, on_stdout, on_stderr, tag)
        feed = None
        if stdin is not None and not isinstance(stdin, bool):
            feed = stdin
        o = self._options(envs, cwd, user, timeout, request_timeout, stdin is True, tag)
        o.cancel = N.current_cancel()
        o.kill_on_cancel = 1  # a cancelled foreground run stops
        if feed is not None:
            o.set_stdin_data(feed)
        on_stdout, on_stderr = N.sync_only(on_stdout), N.sync_only(on_stderr)
        out = N.Decoder(on_stdout) if on_stdout else None
        err = N.Decoder(on_stderr) if on_stderr else None
        cb = None
        if out or err:
            cb = ll.asbpy_callbacks(out.feed if out else None, err.feed if err else None,
                                    None, None, None, None, 0)
            o.bind(cb)
        rc, res = ll.asb_commands_run(self._sandbox._h, cmd, o)
        if rc != N.OK and not (rc == N.ECOMMANDEXIT and res is not None):
            N.fail(rc, cb)
        if out:
            out.flush()
        if err:
            err.flush()
        result = _result(res)
        if check and result.exit_code != 0:
            raise _exit_exception(result)
        return result

    def _start(self, cmd: str, envs: Envs, cwd: Optional[str], user: Optional[str],
               timeout: Optional[float], request_timeout: Optional[float],
               stdin: Union[bool, Data, None], on_stdout: Any, on_stderr: Any,
               tag: Optional[str]) -> CommandHandle:
        feed = stdin if stdin is not None and not isinstance(stdin, bool) else None
        o = self._options(envs, cwd, user, timeout, request_timeout,
                          stdin is True or feed is not None, tag)
        sink = _Sink(N.sync_only(on_stdout), N.sync_only(on_stderr), None, False)
        return _open(self._sandbox, sink, o, lambda opts: ll.asb_commands_start(
            self._sandbox._h, cmd, opts), feed)

    def connect(
        self,
        pid: int,
        *,
        on_stdout: Optional[Callable[[str], Any]] = None,
        on_stderr: Optional[Callable[[str], Any]] = None,
        timeout: Optional[float] = None,
        request_timeout: Optional[float] = None,
    ) -> CommandHandle:
        """Attach to a running command by pid (its output from now on)."""
        o = self._options(None, None, None, None, request_timeout, False, None)
        if timeout:
            o.timeout_ms = N.ms(timeout)
        sink = _Sink(N.sync_only(on_stdout), N.sync_only(on_stderr), None, False)
        return _open(self._sandbox, sink, o,
                     lambda opts: ll.asb_commands_connect(self._sandbox._h, pid, opts), None,
                     not_found=E.NotFoundException)

    def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        """The commands and ptys running in the sandbox."""
        lst = N.call(ll.asb_commands_list, self._sandbox._h, _call_options(request_timeout))
        out = []
        for pid, tag, cmd, args, envs, cwd in ll.asbpy_process_list_tuples(lst):
            env: Dict[str, str] = {}
            for kv in envs:
                k, _, v = kv.partition("=")
                env[k] = v
            out.append(ProcessInfo(pid=pid, tag=tag, cmd=cmd or "", args=args, envs=env, cwd=cwd))
        return out

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """Kill a command (SIGKILL). False if there is no such process."""
        return _not_found_false(lambda: N.call(ll.asb_commands_kill, self._sandbox._h, pid,
                                               _call_options(request_timeout)))

    def signal(self, pid: int, signal: int = 15, request_timeout: Optional[float] = None) -> None:
        """Send SIGTERM (15) or SIGKILL (9) to a command."""
        N.call(ll.asb_commands_signal, self._sandbox._h, pid, signal,
               _call_options(request_timeout))

    def send_stdin(self, pid: int, data: Data, request_timeout: Optional[float] = None) -> None:
        """Write to a command's stdin (it was started with ``stdin=True``)."""
        N.call(ll.asb_commands_send_stdin, self._sandbox._h, pid, data,
               _call_options(request_timeout))

    def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        """Close a command's stdin."""
        N.call(ll.asb_commands_close_stdin, self._sandbox._h, pid, _call_options(request_timeout))


def _open(sandbox: "Sandbox", sink: _Sink, opts: Any, start: Callable[[Any], Any],
          feed: Optional[Data], not_found: Any = None) -> CommandHandle:
    """Open a process and bind its callbacks. The C call does the rest: it
    writes ``feed`` to stdin and closes it, and (kill_on_cancel) a
    cancellation during the start kills the command right after it runs
    instead of cutting the start short."""
    h = CommandHandle(sandbox, sink, N.CancelToken())
    opts.bind(h._cb)
    opts.cancel = N.current_cancel()
    opts.kill_on_cancel = 1
    if feed is not None:
        opts.set_stdin_data(feed)
    rc, p = start(opts)
    if rc != N.OK:
        N.fail(rc, h._cb, not_found)
    h._attach(p)
    return h


class Pty:
    """Interactive terminals (``sandbox.pty``): ``/bin/bash -i -l`` on a pseudo-terminal."""

    def __init__(self, sandbox: "Sandbox") -> None:
        self._sandbox = sandbox

    def create(
        self,
        size: Optional[PtySize] = None,
        on_data: Optional[Callable[[bytes], Any]] = None,
        *,
        user: Optional[str] = None,
        cwd: Optional[str] = None,
        envs: Envs = None,
        timeout: Optional[float] = 60,
        request_timeout: Optional[float] = None,
    ) -> CommandHandle:
        """Start a shell on a new terminal; ``on_data`` gets its output (bytes,
        escapes included) while you :meth:`CommandHandle.wait`."""
        size = size or PtySize()
        o = _process_options(ll.asb_pty_options(), envs, cwd, user, timeout, request_timeout)
        o.cols, o.rows = size.cols, size.rows
        sink = _Sink(None, None, N.sync_only(on_data), True)
        return _open(self._sandbox, sink, o,
                     lambda opts: ll.asb_pty_create(self._sandbox._h, opts), None)

    def connect(self, pid: int, on_data: Optional[Callable[[bytes], Any]] = None, *,
                timeout: Optional[float] = None,
                request_timeout: Optional[float] = None) -> CommandHandle:
        """Attach to a running terminal by pid."""
        o = ll.asb_command_options()
        if timeout:
            o.timeout_ms = N.ms(timeout)
        if request_timeout is not None:
            o.request_timeout_ms = N.ms(request_timeout)
        sink = _Sink(None, None, N.sync_only(on_data), True)
        return _open(self._sandbox, sink, o,
                     lambda opts: ll.asb_commands_connect(self._sandbox._h, pid, opts), None,
                     not_found=E.NotFoundException)

    def send_stdin(self, pid: int, data: Data, request_timeout: Optional[float] = None) -> None:
        """Type into the terminal (keystrokes, control characters included)."""
        N.call(ll.asb_pty_send_input, self._sandbox._h, pid, data, _call_options(request_timeout))

    send_input = send_stdin

    def resize(self, pid: int, size: PtySize, request_timeout: Optional[float] = None) -> None:
        """Change the terminal's size."""
        N.call(ll.asb_pty_resize, self._sandbox._h, pid, size.cols, size.rows,
               _call_options(request_timeout))

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """Kill the terminal. False if it already ended."""
        return _not_found_false(lambda: N.call(ll.asb_pty_kill, self._sandbox._h, pid,
                                               _call_options(request_timeout)))


# ---- files --------------------------------------------------------------------------------


def _files_options(user: Optional[str], request_timeout: Optional[float], gzip: bool = False,
                   metadata: Optional[Mapping[str, str]] = None) -> Any:
    o = ll.asb_files_options()
    if metadata:
        o.metadata = dict(metadata)
    if user:
        o.user = user
    if request_timeout is not None:
        o.timeout_ms = N.ms(request_timeout)
    if gzip:
        o.gzip = 1
    o.cancel = N.current_cancel()
    return o


class FileStream:
    """A file being read in chunks (``files.read(path, format="stream")``).

    Iterate over it for ``bytes`` chunks; close it (or use ``with``) to stop
    early. Each chunk is pulled from the C reader (asb_file_reader_read),
    which reads ahead about 1 MiB.
    """

    def __init__(self, sandbox: "Sandbox", path: str, opts: Any) -> None:
        self._r: Any = None
        self._error: Optional[BaseException] = None
        opts.cancel = N.current_cancel()
        try:
            self._r = N.call(ll.asb_files_open_read, sandbox._h, path, opts,
                             not_found=E.FileNotFoundException)
        except E.AgentSandboxError as e:  # raised by the first read, as before
            self._error = e
        self._lock = threading.Lock()

    def __iter__(self) -> "FileStream":
        return self

    def __next__(self) -> bytes:
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        r = self._r
        if r is None:
            raise StopIteration
        rc, chunk = ll.asb_file_reader_read(r, _call_options())
        if rc > 0:
            return chunk
        closed = self._r is None  # closed meanwhile: the read was stopped
        self.close()
        if rc < 0 and not closed:
            N.fail(rc, None, E.FileNotFoundException)
        raise StopIteration

    def read(self) -> bytes:
        """The rest of the file."""
        return b"".join(self)

    def close(self) -> None:
        """Stop the transfer (a read in progress on another thread ends)."""
        with self._lock:
            r, self._r = self._r, None
        if r is not None:
            ll.asb_file_reader_stop(r)
            # The wrapper frees it once no call holds it (asb_file_reader_free).

    def __enter__(self) -> "FileStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _StreamClosed(Exception):
    pass


def _free_watch(w: Any, token: Any, cb: Any) -> None:
    ll.asb_watch_free(w)


class WatchHandle:
    """A watch on a directory (``files.watch_dir``).

    Events reach ``on_event`` while you :meth:`wait`, or come back from
    :meth:`get_new_events`; iterate over the handle to get them one by one.
    """

    def __init__(self, sandbox: "Sandbox", on_event: Optional[Callable[[FilesystemEvent], Any]]) -> None:
        self._sandbox = sandbox
        self._on_event = on_event
        self._pending: List[FilesystemEvent] = []
        self._token = N.CancelToken()
        box = self._pending
        holder = {"fn": on_event}
        self._holder = holder

        def deliver(type_: int, name: str, entry: Optional[tuple]) -> None:
            ev = FilesystemEvent(name=name, type=_EVENT_TYPES[type_],
                                 entry=EntryInfo._from_tuple(entry) if entry else None)
            fn = holder["fn"]
            if fn is None:
                box.append(ev)
            else:
                fn(ev)

        self._cb = ll.asbpy_callbacks(None, None, None, None, deliver, None, 0)
        self._w: Any = None
        self._stopped = False
        self._polling = False

    def _attach(self, w: Any) -> None:
        self._w = w
        self._finalizer = weakref.finalize(self, _free_watch, w, self._token, self._cb)

    def wait(self, timeout: Optional[float] = None) -> int:
        """Deliver events to ``on_event`` for ``timeout`` seconds (None: until
        :meth:`stop` or the watch ends). Returns how many were delivered."""
        if self._w is None:
            return 0
        t = -1 if timeout is None else max(0, int(timeout * 1000))
        scope = N.current_token()
        if scope is not None:  # a cancelled caller stops the wait
            scope.link(_WatchStopper(self._w))
        return N.call(ll.asb_watch_wait, self._w, t, cb=self._cb)

    def poll(self, request_timeout: Optional[float] = None) -> int:
        """A polling watch (``watch_dir(..., polling=True)``): deliver every
        event since the last poll, without waiting; every change made
        before the call is in it. Returns how many were delivered."""
        if self._w is None:
            return 0
        co = None
        if request_timeout is not None:
            co = ll.asb_call_options()
            co.timeout_ms = N.ms(request_timeout)
        return N.call(ll.asb_watch_poll, self._w, co, cb=self._cb)

    def get_new_events(self, timeout: float = 0.05,
                       request_timeout: Optional[float] = None) -> List[FilesystemEvent]:
        """The events that happened since the last call: a polling watch's
        are all the changes made before the call (``timeout`` unused);
        a streaming watch waits up to ``timeout`` seconds for ones in
        flight."""
        prev = self._holder["fn"]
        self._holder["fn"] = None
        try:
            if self._polling:
                self.poll(request_timeout)
            else:
                self.wait(timeout)
        finally:
            self._holder["fn"] = prev
        events, self._pending[:] = list(self._pending), []
        return events

    def __iter__(self) -> Iterator[FilesystemEvent]:
        """Events one at a time, until :meth:`stop` (from another thread)."""
        while self._w is not None and not self._stopped:
            for ev in self.get_new_events(timeout=0.5):
                yield ev

    def stop(self) -> None:
        """Stop watching and release the watch."""
        self._stopped = True
        if self._w is not None:
            ll.asb_watch_stop(self._w)
            self._finalizer()
            self._w = None


class _WatchStopper:
    """Lets a CancelToken link stop a watch wait."""

    def __init__(self, w: Any) -> None:
        self._w = w

    def cancel(self) -> None:
        ll.asb_watch_stop(self._w)


class Files:
    """The sandbox's filesystem (``sandbox.files``).

    Paths are absolute or relative to the user's home; every call acts as
    ``user`` (default: the sandbox's default user).
    """

    def __init__(self, sandbox: "Sandbox") -> None:
        self._sandbox = sandbox

    def read(self, path: str, format: str = "text", *, user: Optional[str] = None,
             request_timeout: Optional[float] = None, gzip: bool = False) -> Any:
        """Read a file: ``format="text"`` (str), ``"bytes"`` or ``"stream"``
        (a :class:`FileStream` of bytes chunks)."""
        o = _files_options(user, request_timeout, gzip)
        if format == "stream":
            return FileStream(self._sandbox, path, o)
        data = N.call(ll.asb_files_read, self._sandbox._h, path, o,
                      not_found=E.FileNotFoundException)
        if format == "bytes":
            return data
        if format == "text":
            return data.decode("utf-8", "replace")
        raise E.InvalidArgumentException(f"unknown format {format!r}: text, bytes or stream")

    def read_text(self, path: str, **kw: Any) -> str:
        return self.read(path, "text", **kw)

    def read_bytes(self, path: str, **kw: Any) -> bytes:
        return self.read(path, "bytes", **kw)

    def write(self, path: str, data: Union[Data, IO[Any]], *, user: Optional[str] = None,
              request_timeout: Optional[float] = None, gzip: bool = False,
              metadata: Optional[Mapping[str, str]] = None) -> EntryInfo:
        """Create or replace a file (parent directories are made) with
        ``data``: str (UTF-8), bytes-like, or a file object read in chunks;
        ``metadata`` is stored on it (``EntryInfo.metadata``)."""
        o = _files_options(user, request_timeout, gzip, metadata)
        if isinstance(data, (str, bytes, bytearray, memoryview)):
            entry = N.call(ll.asb_files_write, self._sandbox._h, path, data, o)
        elif hasattr(data, "read"):
            entry = self._write_stream(path, data, o)
        else:
            raise TypeError("data must be str, bytes-like or a readable file object")
        return EntryInfo._from_tuple(ll.asbpy_entry_as_tuple(entry))

    def _write_stream(self, path: str, f: IO[Any], o: Any) -> Any:
        size = -1
        try:
            size = os.fstat(f.fileno()).st_size - f.tell()
            if isinstance(f, io.TextIOBase):
                size = -1
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            size = -1

        def reader(cap: int) -> bytes:
            chunk = f.read(cap)
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8")
                if len(chunk) > cap:  # a text file: hand over the surplus next time
                    raise E.InvalidArgumentException(
                        "text file objects are read as UTF-8; open the file in binary mode")
            return chunk or b""

        cb = ll.asbpy_callbacks(None, None, None, None, None, reader, 0)
        return N.call(ll.asb_files_write_stream, self._sandbox._h, path, cb, size, o, cb=cb)

    def write_files(self, files: Sequence[Any], *, user: Optional[str] = None,
                    request_timeout: Optional[float] = None, gzip: bool = False,
                    metadata: Optional[Mapping[str, str]] = None) -> List[EntryInfo]:
        """Write several files in one request: ``[{"path": p, "data": d}, ...]``
        or ``[(path, data), ...]``."""
        pairs = []
        for f in files:
            if isinstance(f, Mapping):
                p, d = f["path"], f["data"]
            else:
                p, d = f
            if hasattr(d, "read"):
                d = d.read()
            pairs.append((p, d))
        o = _files_options(user, request_timeout, gzip, metadata)
        lst = N.call(ll.asb_files_write_many, self._sandbox._h, pairs, o)
        return [EntryInfo._from_tuple(t) for t in ll.asbpy_entry_list_tuples(lst)]

    write_many = write_files

    def list(self, path: str, depth: int = 1, *, user: Optional[str] = None,
             request_timeout: Optional[float] = None) -> List[EntryInfo]:
        """The entries of a directory, ``depth`` levels deep."""
        lst = N.call(ll.asb_files_list, self._sandbox._h, path, depth,
                     _files_options(user, request_timeout), not_found=E.FileNotFoundException)
        return [EntryInfo._from_tuple(t) for t in ll.asbpy_entry_list_tuples(lst)]

    def exists(self, path: str, *, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> bool:
        return bool(N.call(ll.asb_files_exists, self._sandbox._h, path,
                           _files_options(user, request_timeout)))

    def get_info(self, path: str, *, user: Optional[str] = None,
                 request_timeout: Optional[float] = None) -> EntryInfo:
        """Information about a file or directory."""
        entry = N.call(ll.asb_files_stat, self._sandbox._h, path,
                       _files_options(user, request_timeout), not_found=E.FileNotFoundException)
        return EntryInfo._from_tuple(ll.asbpy_entry_as_tuple(entry))

    def remove(self, path: str, *, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> None:
        """Remove a file or a directory tree."""
        N.call(ll.asb_files_remove, self._sandbox._h, path, _files_options(user, request_timeout),
               not_found=E.FileNotFoundException)

    def rename(self, old_path: str, new_path: str, *, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> EntryInfo:
        """Move or rename; returns the entry at its new path."""
        entry = N.call(ll.asb_files_rename, self._sandbox._h, old_path, new_path,
                       _files_options(user, request_timeout), not_found=E.FileNotFoundException)
        return EntryInfo._from_tuple(ll.asbpy_entry_as_tuple(entry))

    def make_dir(self, path: str, *, user: Optional[str] = None,
                 request_timeout: Optional[float] = None) -> bool:
        """Create a directory and its parents: True if created, False if it existed."""
        return bool(N.call(ll.asb_files_make_dir, self._sandbox._h, path,
                           _files_options(user, request_timeout)))

    def watch_dir(self, path: str, on_event: Optional[Callable[[FilesystemEvent], Any]] = None, *,
                  recursive: bool = False, include_entry: bool = False,
                  user: Optional[str] = None, polling: bool = False,
                  request_timeout: Optional[float] = None) -> WatchHandle:
        """Watch a directory; returns once the watch is in place, so every
        change made after it returns is reported. ``polling``: the sandbox
        keeps the events until :meth:`WatchHandle.poll` (or
        ``get_new_events``) fetches them, and a poll holds every change made
        before it (E2B's sync watcher)."""
        h = WatchHandle(self._sandbox, N.sync_only(on_event))
        h._polling = polling
        o = ll.asb_watch_options()
        if user:
            o.user = user
        o.recursive = 1 if recursive else 0
        o.include_entry = 1 if include_entry else 0
        o.polling = 1 if polling else 0
        if request_timeout is not None:
            o.request_timeout_ms = N.ms(request_timeout)
        o.bind(h._cb)
        o.cancel = h._token._h
        scope = N.current_token()
        if scope is not None:
            scope.link(h._token)
        try:
            w = N.call(ll.asb_files_watch_dir, self._sandbox._h, path, o, cb=h._cb,
                       not_found=E.FileNotFoundException)
        finally:
            if scope is not None:
                scope.unlink(h._token)
        h._attach(w)
        return h


# ---- code -------------------------------------------------------------------------------


class Code:
    """Code contexts and runs (``sandbox.code``); the same as the ``*_code*``
    methods of the sandbox."""

    def __init__(self, sandbox: "Sandbox") -> None:
        self._sandbox = sandbox

    def run(self, code: str, language: Optional[str] = None, context: Any = None, *,
            envs: Envs = None, timeout: Optional[float] = None,
            request_timeout: Optional[float] = None,
            on_stdout: Optional[Callable[[Any], Any]] = None,
            on_stderr: Optional[Callable[[Any], Any]] = None,
            on_result: Optional[Callable[[Result], Any]] = None,
            on_error: Optional[Callable[[ExecutionError], Any]] = None,
            _messages: bool = False) -> Execution:
        o = ll.asb_code_options()
        if language:
            o.language = language
        if context is not None:
            o.context_id = context.id if isinstance(context, Context) else str(context)
        if envs:
            o.envs = dict(envs)
        o.timeout_ms = N.ms(timeout)
        if request_timeout is not None:
            o.request_timeout_ms = N.ms(request_timeout)
        o.cancel = N.current_cancel()
        on_stdout, on_stderr = N.sync_only(on_stdout), N.sync_only(on_stderr)
        on_result, on_error = N.sync_only(on_result), N.sync_only(on_error)
        if _messages:  # E2B's OutputMessage objects
            def wrap(fn: Any, is_err: bool) -> Any:
                if fn is None:
                    return None
                return lambda s: fn(OutputMessage(line=s, timestamp=time.time_ns(), error=is_err))

            out_fn, err_fn = wrap(on_stdout, False), wrap(on_stderr, True)
        else:
            out_fn, err_fn = on_stdout, on_stderr
        res_fn = (lambda d: on_result(Result._from_dict(d))) if on_result else None
        err_cb = (lambda n, v, t: on_error(ExecutionError(n, v, t))) if on_error else None
        cb = None
        if out_fn or err_fn or res_fn or err_cb:
            cb = ll.asbpy_callbacks(out_fn, err_fn, res_fn, err_cb, None, None, 1)
            o.bind(cb)
        ex = N.call(ll.asb_code_run, self._sandbox._h, code, o, cb=cb)
        return Execution._from_tuple(ll.asbpy_execution_tuple(ex))

    def create_context(self, language: Optional[str] = None, cwd: Optional[str] = None, *,
                       request_timeout: Optional[float] = None) -> Context:
        c = N.call(ll.asb_code_context_create, self._sandbox._h, language, cwd,
                   _call_options(request_timeout))
        return Context(id=ll.asb_code_context_id(c), language=ll.asb_code_context_language(c) or "",
                       cwd=ll.asb_code_context_cwd(c) or "")

    def list_contexts(self, request_timeout: Optional[float] = None) -> List[Context]:
        lst = N.call(ll.asb_code_contexts_list, self._sandbox._h, _call_options(request_timeout))
        out = []
        for i in range(ll.asb_code_context_list_count(lst)):
            c = ll.asb_code_context_list_get(lst, i)
            out.append(Context(id=ll.asb_code_context_id(c),
                               language=ll.asb_code_context_language(c) or "",
                               cwd=ll.asb_code_context_cwd(c) or ""))
        return out

    def restart_context(self, context: Union[Context, str],
                        request_timeout: Optional[float] = None) -> None:
        cid = context.id if isinstance(context, Context) else context
        N.call(ll.asb_code_context_restart, self._sandbox._h, cid, _call_options(request_timeout))

    def remove_context(self, context: Union[Context, str],
                       request_timeout: Optional[float] = None) -> None:
        cid = context.id if isinstance(context, Context) else context
        N.call(ll.asb_code_context_remove, self._sandbox._h, cid, _call_options(request_timeout))


def _named_options(port: Optional[int], timeout: Optional[float]) -> Any:
    o = ll.asb_named_command_options()
    if port is not None:
        o.port = int(port)
    if timeout is not None:
        o.timeout_ms = N.ms(timeout)
    o.cancel = N.current_cancel()
    return o


# ---- network ---------------------------------------------------------------------------------


class Network:
    """Where the sandbox's ports are reachable (``sandbox.network``; no I/O)."""

    def __init__(self, sandbox: "Sandbox") -> None:
        self._sandbox = sandbox

    def get_host(self, port: int) -> str:
        """``<port>-<sandbox id>.<domain>``."""
        return N.call(ll.asb_sandbox_get_host, self._sandbox._h, port)

    def get_url(self, port: int) -> str:
        """The port's public URL (``http`` for the local engine's loopback domain)."""
        return N.call(ll.asb_sandbox_get_url, self._sandbox._h, port)

    def get_access_headers(self) -> Dict[str, str]:
        """Headers that authenticate a request to the sandbox's agent."""
        token = ll.asb_sandbox_envd_access_token(self._sandbox._h)
        return {"X-Access-Token": token} if token else {}


# ---- sandboxes --------------------------------------------------------------------------------


def _volume_mounts(mounts: Optional[Mapping[str, Any]]) -> List[str]:
    """E2B's volume_mounts ({path: name, or an object with .name}) as the
    library's "PATH=VOLUME" strings."""
    if not mounts:
        return []
    out = []
    for path, vol in mounts.items():
        name = vol if isinstance(vol, str) else getattr(vol, "name", None)
        if not isinstance(path, str) or not isinstance(name, str):
            raise TypeError("volume_mounts maps a mount path to a volume name (or a Volume)")
        out.append(f"{path}={name}")
    return out


def _metadata_list(metadata: Optional[Mapping[str, str]]) -> Optional[Dict[str, str]]:
    return {str(k): str(v) for k, v in metadata.items()} if metadata else None


def _state_flags(o: Any, state: Any) -> None:
    if state is None:
        return
    states = [state] if isinstance(state, (str, SandboxState)) else list(state)
    names = {s.value if isinstance(s, SandboxState) else str(s) for s in states}
    o.running = 1 if "running" in names else 0
    o.paused = 1 if "paused" in names else 0


def _rfc3339(t: Any) -> str:
    """A datetime (naive = local time) or an RFC 3339 string, in UTC."""
    if isinstance(t, str):
        return t
    if t.tzinfo is None:
        t = t.astimezone()
    return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(t: Any) -> int:
    if t is None:
        return 0
    if isinstance(t, _dt.datetime):
        return int(t.timestamp())
    return int(t)


class Sandbox:
    """A sandbox (blocking API). Use :meth:`create` or :meth:`connect`.

    ``with Sandbox.create() as sandbox:`` kills it at the end of the block.
    """

    def __init__(self, handle: Any, client: Any, conn: Optional[Dict[str, Any]] = None) -> None:
        self._h = handle
        self._client = client
        self._conn = dict(conn or {})
        self.sandbox_id: str = ll.asb_sandbox_id(handle)
        self.commands = Commands(self)
        self.pty = Pty(self)
        self.files = Files(self)
        self.network = Network(self)
        self.code = Code(self)
        self.git = Git(self)
        from .agents import Agents
        self.agents = Agents(self)

    # ---- identity --------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.sandbox_id

    @property
    def envd_version(self) -> str:
        return ll.asb_sandbox_envd_version(self._h) or ""

    @property
    def sandbox_domain(self) -> str:
        return ll.asb_sandbox_domain(self._h) or ""

    @property
    def fork_mode(self) -> Optional[str]:
        """What a fork got of its parent, as the engine said when this
        handle was made (:meth:`fork`, :meth:`connect`): ``"processes"`` (the
        parent's running processes and memory, an engine with
        ``--pause-criu``) or ``"files"`` (booted fresh on its files); None
        when it is not a fork (docs/snapshots.md)."""
        return ll.asb_sandbox_fork_mode(self._h)

    @property
    def envd_access_token(self) -> Optional[str]:
        return ll.asb_sandbox_envd_access_token(self._h)

    @property
    def traffic_access_token(self) -> Optional[str]:
        """The ``e2b-traffic-access-token`` from the create/connect reply,
        None if the control plane gave none. The local engine gives every
        sandbox one: its ports require it only with network
        ``allow_public_traffic=False``, its code interpreter accepts it in
        place of the envd token (E2B's cloud gives one only with
        ``allow_public_traffic=False``)."""
        return ll.asb_sandbox_traffic_access_token(self._h)

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} {self.sandbox_id}>"

    # ---- the control plane --------------------------------------------------------
    @classmethod
    def create(cls, template: Optional[str] = None, *, timeout: Optional[float] = 300,
               metadata: Optional[Mapping[str, str]] = None, envs: Envs = None,
               auto_pause: bool = False, request_timeout: Optional[float] = None,
               allow_internet_access: Optional[bool] = None,
               network: Optional[Mapping[str, Any]] = None,
               keep_memory: bool = True, auto_resume: bool = False,
               volume_mounts: Optional[Mapping[str, Any]] = None,
               mcp: Optional[Mapping[str, Any]] = None,
               **conn: Any) -> "Sandbox":
        """Create a sandbox from ``template`` (default ``base``) that lives
        ``timeout`` seconds.

        ``mcp`` is E2B's: MCP servers for the sandbox's ``mcp-gateway``
        (template ``mcp-gateway`` unless one is named; a gateway that does
        not start kills the sandbox and raises ``SandboxException``
        "Failed to start MCP gateway: ..."); then :meth:`get_mcp_url` and
        :meth:`get_mcp_token` (docs/mcp.md, "The gateway").

        ``volume_mounts`` is E2B's: ``{"/mnt/data": "my-volume"}``, mount
        path to a volume's name or id (or an object with a ``name``), the
        volumes made with E2B's ``/volumes`` API (docs/volumes.md).

        With ``auto_pause`` it pauses instead of ending; ``keep_memory=False``
        makes that a pause without memory (files kept, resume boots it),
        ``auto_resume=True`` lets traffic to its ports resume it (E2B's
        lifecycle; not with ``keep_memory=False``: docs/lifecycle.md).

        ``allow_internet_access`` (default: allowed) and ``network`` are
        E2B's: ``network={"allow_out": [...], "deny_out": [...], "rules":
        {...}, "egress_proxy": {...}, "allow_public_traffic": False,
        "mask_request_host": "..."}`` (E2B's wire names work too).

        Connection options (``api_key``, ``api_url``, ``domain``,
        ``sandbox_url``, ``debug``, ``headers``, ...) default to the
        environment (``ASB_*`` then ``E2B_*``) and, with nothing set, to the
        local engine, which is started if needed.
        """
        c = N.client(**conn)
        o = ll.asb_sandbox_options()
        if template:
            o.template_id = template
        o.timeout_ms = N.ms(timeout) if timeout else 0
        md = _metadata_list(metadata)
        if md:
            o.metadata = md
        if envs:
            o.envs = dict(envs)
        o.auto_pause = 1 if auto_pause else 0
        o.auto_pause_files_only = 0 if keep_memory else 1
        o.auto_resume = 1 if auto_resume else 0
        if request_timeout is not None:
            o.request_timeout_ms = N.ms(request_timeout)
        o.allow_internet_access = _netconf.internet(allow_internet_access)
        nj = _netconf.to_json(network)
        if nj is not None:
            o.network_json = nj
        vm = _volume_mounts(volume_mounts)
        if vm:
            o.volume_mounts = vm
        if mcp is not None:
            o.mcp_json = _json.dumps(mcp)
        o.cancel = N.current_cancel()
        h = N.call(ll.asb_sandbox_create, c, o)
        return cls(h, c, conn)

    @classmethod
    def connect(cls, sandbox_id: str, *, timeout: Optional[float] = None,
                request_timeout: Optional[float] = None, **conn: Any) -> "Sandbox":
        """Connect to a running or paused sandbox (a paused one is resumed);
        its lifetime is extended to at least ``timeout`` seconds from now."""
        c = N.client(**conn)
        h = N.call(ll.asb_sandbox_connect, c, sandbox_id, N.ms(timeout) if timeout else 0,
                   _call_options(request_timeout))
        return cls(h, c, conn)

    @classmethod
    def list(cls, *, metadata: Optional[Mapping[str, str]] = None, state: Any = None,
             template: Optional[str] = None, limit: Optional[int] = None,
             request_timeout: Optional[float] = None, **conn: Any) -> List[SandboxInfo]:
        """The sandboxes, newest first, filtered by metadata, state
        (``"running"``, ``"paused"``, or a list) and template; at most
        ``limit`` of them (all by default)."""
        return list(cls._iter_pages(metadata=metadata, state=state, template=template,
                                    limit=limit, request_timeout=request_timeout, **conn))

    @classmethod
    def _list_page(cls, *, metadata: Any = None, state: Any = None, template: Optional[str] = None,
                   limit: Optional[int] = None, next_token: Optional[str] = None,
                   request_timeout: Optional[float] = None, started_after: Any = None,
                   **conn: Any) -> Tuple[List[SandboxInfo], Optional[str]]:
        c = N.client(**conn)
        o = ll.asb_sandbox_list_options()
        md = _metadata_list(metadata)
        if md:
            o.metadata = md
        _state_flags(o, state)
        if template:
            o.template_id = template
        if limit:
            o.limit = min(int(limit), 100)
        if next_token:
            o.next_token = next_token
        if started_after is not None:
            o.started_after = _rfc3339(started_after)
        if request_timeout is not None:
            o.request_timeout_ms = N.ms(request_timeout)
        o.cancel = N.current_cancel()
        page = N.call(ll.asb_sandbox_list, c, o)
        items = [SandboxInfo._from_dict(d) for d in ll.asbpy_sandbox_page_dicts(page)]
        return items, ll.asb_sandbox_page_next_token(page)

    @classmethod
    def _iter_pages(cls, *, limit: Optional[int] = None, **kw: Any) -> Iterator[SandboxInfo]:
        token = None
        left = limit
        while True:
            items, token = cls._list_page(limit=left if left and left < 100 else None,
                                          next_token=token, **kw)
            for it in items:
                if left is not None:
                    if left <= 0:
                        return
                    left -= 1
                yield it
            if not token or (left is not None and left <= 0):
                return

    @classmethod
    def kill_by_id(cls, sandbox_id: str, *, request_timeout: Optional[float] = None,
                   **conn: Any) -> bool:
        """Kill a sandbox by id: True if it was killed, False if it did not exist."""
        c = N.client(**conn)
        try:
            N.call(ll.asb_sandbox_kill_id, c, sandbox_id, _call_options(request_timeout))
            return True
        except E.SandboxNotFoundException:
            return False

    def kill(self, *, request_timeout: Optional[float] = None) -> bool:
        """Kill the sandbox: True if killed, False if it was already gone."""
        try:
            N.call(ll.asb_sandbox_kill, self._h, _call_options(request_timeout))
            return True
        except E.SandboxNotFoundException:
            return False

    def set_timeout(self, timeout: float, *, request_timeout: Optional[float] = None) -> None:
        """Make the sandbox live ``timeout`` seconds from now (shorter or longer);
        0 ends its lifetime now (it is killed, or paused with auto-pause), as in E2B."""
        ms = 0 if timeout <= 0 else N.ms(timeout)
        N.call(ll.asb_sandbox_set_timeout, self._h, ms, _call_options(request_timeout))

    def get_info(self, *, request_timeout: Optional[float] = None) -> SandboxInfo:
        info = N.call(ll.asb_sandbox_get_info, self._h, _call_options(request_timeout))
        return SandboxInfo._from_dict(ll.asbpy_sandbox_info_dict(info), self.sandbox_domain)

    @classmethod
    def get_info_by_id(cls, sandbox_id: str, *, request_timeout: Optional[float] = None,
                       **conn: Any) -> SandboxInfo:
        """:meth:`get_info` of a sandbox by id, without connecting to it (a
        paused sandbox stays paused)."""
        c = N.client(**conn)
        h = N.call(ll.asb_sandbox_attach, c, sandbox_id, None)
        return cls(h, c, conn).get_info(request_timeout=request_timeout)

    @classmethod
    def update_network_by_id(cls, sandbox_id: str, network: Optional[Mapping[str, Any]] = None,
                             *, allow_internet_access: Optional[bool] = None,
                             request_timeout: Optional[float] = None, **conn: Any) -> None:
        """:meth:`update_network` of a sandbox by id, without connecting to it
        (a paused sandbox stays paused)."""
        c = N.client(**conn)
        h = N.call(ll.asb_sandbox_attach, c, sandbox_id, None)
        cls(h, c, conn).update_network(network, allow_internet_access=allow_internet_access,
                                       request_timeout=request_timeout)

    def update_network(self, network: Optional[Mapping[str, Any]] = None, *,
                       allow_internet_access: Optional[bool] = None,
                       request_timeout: Optional[float] = None) -> None:
        """Replace the sandbox's egress rules, live (E2B's ``update_network``):
        ``allow_out``, ``deny_out``, ``rules``, ``egress_proxy``; whatever is
        left out is cleared. ``allow_internet_access`` may also be given in
        ``network``, as E2B's ``SandboxNetworkUpdate`` does."""
        if network is not None and allow_internet_access is None:
            allow_internet_access = network.get("allow_internet_access",
                                                network.get("allowInternetAccess"))
        N.call(ll.asb_sandbox_update_network, self._h, _netconf.internet(allow_internet_access),
               _netconf.to_json(network, update=True), _call_options(request_timeout))

    # ---- snapshots and fork (docs/snapshots.md) ----

    @classmethod
    def _attach(cls, sandbox_id: str, **conn: Any) -> "Sandbox":
        """A handle to a sandbox by id made without a request (nothing resumed)."""
        c = N.client(**conn)
        return cls(N.call(ll.asb_sandbox_attach, c, sandbox_id, None), c, conn)

    def create_snapshot(self, name: Optional[str] = None, *,
                        request_timeout: Optional[float] = None) -> str:
        """Snapshot the sandbox's files at this instant (it runs on): the
        snapshot's id, ``"<name>:default"``, which :meth:`create` takes as a
        template. Sandboxes from it boot fresh (files, not processes)."""
        return N.call(ll.asb_sandbox_snapshot, self._h, name, _call_options(request_timeout))

    @staticmethod
    def _fork_options(timeout: Optional[float], keep_processes: Optional[bool],
                      count: int) -> Any:
        o = ll.asb_fork_options()
        if timeout:
            o.timeout_ms = N.ms(timeout)
        if keep_processes is not None:
            o.keep_processes = 1 if keep_processes else 0
        o.count = int(count)
        return o

    def fork(self, *, timeout: Optional[float] = None, keep_processes: Optional[bool] = None,
             request_timeout: Optional[float] = None) -> "Sandbox":
        """A new sandbox with this one's files at this instant, its metadata,
        env vars and network policy (``timeout``: its lifetime, default 15 s
        as E2B's); this one runs on. On an engine with ``--pause-criu`` the
        fork of a running sandbox keeps its processes too, unless
        ``keep_processes=False`` (boot fresh on the files); the new one's
        :attr:`fork_mode` says which it got."""
        h = N.call(ll.asb_sandbox_fork_ex, self._h,
                   self._fork_options(timeout, keep_processes, 1),
                   _call_options(request_timeout))
        return type(self)(h, self._client, self._conn)

    def fork_many(self, count: int, *, timeout: Optional[float] = None,
                  keep_processes: Optional[bool] = None,
                  request_timeout: Optional[float] = None) -> List[Any]:
        """``count`` forks (1..100) in one call (E2B's fork with count: one
        snapshot, then ``count`` sandboxes from it): one entry per fork, a
        :class:`Sandbox` or the :class:`~agent_sandbox.exceptions.AgentSandboxError`
        that kept that fork from starting. Options as :meth:`fork`."""
        if not 1 <= int(count) <= 100:
            raise E.InvalidArgumentException(f"count must be in 1..100, not {count}")
        lst = N.call(ll.asb_sandbox_fork_many, self._h,
                     self._fork_options(timeout, keep_processes, count),
                     _call_options(request_timeout))
        out: List[Any] = []
        for i in range(ll.asb_fork_list_count(lst)):
            try:
                out.append(type(self)(N.call(ll.asb_fork_list_take, lst, i), self._client,
                                      self._conn))
            except E.AgentSandboxError as exc:  # this fork's failure, in its entry
                out.append(exc)
        return out

    @classmethod
    def list_snapshots(cls, *, sandbox_id: Optional[str] = None, name: Optional[str] = None,
                       request_timeout: Optional[float] = None, **conn: Any) -> List[str]:
        """The ids of the snapshots (of ``sandbox_id``, matching ``name``), every page."""
        c = N.client(**conn)
        lst = N.call(ll.asb_snapshots_list, c, sandbox_id, name, _call_options(request_timeout))
        return [ll.asb_snapshot_list_get(lst, i) for i in range(ll.asb_snapshot_list_count(lst))]

    @classmethod
    def delete_snapshot(cls, snapshot_id: str, *, request_timeout: Optional[float] = None,
                        **conn: Any) -> bool:
        """Delete a snapshot: True, or False if there is none of that id.
        Sandboxes running on it keep their files."""
        c = N.client(**conn)
        try:
            N.call(ll.asb_templates_delete, c, snapshot_id, _call_options(request_timeout))
            return True
        except E.NotFoundException:
            return False

    def is_running(self, *, request_timeout: Optional[float] = None) -> bool:
        """True if the sandbox runs and its agent answers."""
        return bool(N.call(ll.asb_sandbox_is_running, self._h, _call_options(request_timeout)))

    def pause(self, *, keep_memory: bool = True,
              request_timeout: Optional[float] = None) -> bool:
        """Pause: True if it is paused now, False if it already was. With
        memory (the default) every process is frozen; ``keep_memory=False``
        stops them and keeps only the files (resume boots it again)."""
        return bool(N.call(ll.asb_sandbox_pause_memory, self._h, 1 if keep_memory else 0,
                           _call_options(request_timeout)))

    def resume(self, *, timeout: Optional[float] = None,
               request_timeout: Optional[float] = None) -> None:
        """Resume a paused sandbox, extending its lifetime to at least ``timeout`` seconds."""
        N.call(ll.asb_sandbox_resume, self._h, N.ms(timeout) if timeout else 0,
               _call_options(request_timeout))

    def get_metrics(self, start: Any = None, end: Any = None, *,
                    request_timeout: Optional[float] = None) -> List[SandboxMetrics]:
        """Resource-usage samples between start and end (datetimes or Unix seconds)."""
        m = N.call(ll.asb_sandbox_get_metrics, self._h, _epoch(start), _epoch(end),
                   _call_options(request_timeout))
        return [SandboxMetrics._from_tuple(t) for t in ll.asbpy_metrics_tuples(m)]

    def get_host(self, port: int) -> str:
        return self.network.get_host(port)

    def get_url(self, port: int) -> str:
        return self.network.get_url(port)

    def loopback_url(self, port: int, *, request_timeout: Optional[float] = None) -> str:
        """``http://127.0.0.1:<n>`` for the port (local engine only): a URL with no
        ``*.localhost`` name to resolve, so urllib and requests open it on a
        stock Debian; closed when the sandbox ends (docs/engine.md, Loopback URLs)."""
        return N.call(ll.asb_sandbox_loopback_url, self._h, port, _call_options(request_timeout))
    def get_mcp_url(self) -> str:
        """The MCP gateway's URL (port 50005, ``/mcp``; E2B's get_mcp_url)."""
        return N.call(ll.asb_sandbox_mcp_url, self._h)

    def get_mcp_token(self, *, request_timeout: Optional[float] = None) -> str:
        """The gateway's bearer token: the one made at create with ``mcp``,
        else read as root from /etc/mcp-gateway/.token (NotFoundException
        when the sandbox runs no gateway)."""
        return N.call(ll.asb_sandbox_mcp_token, self._h, _call_options(request_timeout))

    def download_url(self, path: str, *, user: Optional[str] = None,
                     expires_in: Optional[int] = None) -> str:
        """A signed URL that downloads the file (no other credentials needed)."""
        return N.call(ll.asb_files_download_url, self._h, path, user, int(expires_in or 0))

    def upload_url(self, path: Optional[str] = None, *, user: Optional[str] = None,
                   expires_in: Optional[int] = None) -> str:
        """A signed URL that uploads to path (POST multipart ``file`` or octet-stream)."""
        return N.call(ll.asb_files_upload_url, self._h, path or "", user, int(expires_in or 0))

    # ---- code ----------------------------------------------------------------------
    def run_code(self, code: str, language: Optional[str] = None, context: Any = None,
                 **kw: Any) -> Execution:
        """Run code in a stateful kernel (Python by default) and return its
        :class:`Execution`: results, logs, error; ``execution.text`` is the
        value or, when there is none, what it printed.

        Keywords: ``envs``, ``timeout`` (seconds; 0 = none; the cell is
        interrupted then), ``request_timeout``, ``on_stdout``,
        ``on_stderr`` (str chunks), ``on_result`` (:class:`Result`),
        ``on_error`` (:class:`ExecutionError`). A cancelled call interrupts
        the cell.
        """
        return self.code.run(code, language, context, **kw)

    def create_code_context(self, cwd: Optional[str] = None, language: Optional[str] = None,
                            request_timeout: Optional[float] = None) -> Context:
        return self.code.create_context(language, cwd, request_timeout=request_timeout)

    def list_code_contexts(self, request_timeout: Optional[float] = None) -> List[Context]:
        return self.code.list_contexts(request_timeout)

    def restart_code_context(self, context: Union[Context, str],
                             request_timeout: Optional[float] = None) -> None:
        self.code.restart_context(context, request_timeout)

    def remove_code_context(self, context: Union[Context, str],
                            request_timeout: Optional[float] = None) -> None:
        self.code.remove_context(context, request_timeout)

    # ---- named commands ------------------------------------------------------------------
    def run(self, command: str, /, **kwargs: Any) -> Any:
        """Run the named command ``command`` that the sandbox serves (a
        template's ``commands.py`` made with :mod:`agent_sandbox.server`,
        a C server, or ``custom_commands``) with ``kwargs`` as its keyword
        arguments, and return its result (the JSON value, decoded).

        ``sandbox.run("hello", name="Alice")``. The command name is
        positional-only, so any argument name can be passed. For a port
        other than 9000 or a timeout, use :meth:`run_command`.

        Raises :class:`CommandNotFoundError` (no such command; the message
        lists the available ones), :class:`InvalidArgumentException` (bad
        or missing arguments), :class:`CommandFailedError` (the command
        raised: ``.type`` is its exception type, the message its message).
        """
        return self.run_command(command, kwargs)

    def run_command(self, command: str, args: Optional[Mapping[str, Any]] = None, *,
                    port: Optional[int] = None, timeout: Optional[float] = None) -> Any:
        """:meth:`run` with the arguments as a mapping and the call's options:
        ``port`` (the command server's, default 9000) and ``timeout``
        (seconds; None = the client's default, 0 = none)."""
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise E.InvalidArgumentException(
                f"run({command!r}): the arguments must be a mapping, not {type(args).__name__}",
                code=ll.ASB_EINVAL, status="ASB_EINVAL")
        try:
            body = _json.dumps(dict(args), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise E.InvalidArgumentException(
                f"run({command!r}): the arguments are not JSON-serializable: {exc}",
                code=ll.ASB_EINVAL, status="ASB_EINVAL") from None
        o = _named_options(port, timeout)
        out = N.call(ll.asb_sandbox_run_command, self._h, command, body, o)
        return _json.loads(out) if out else None

    def list_commands(self, *, port: Optional[int] = None,
                      request_timeout: Optional[float] = None) -> List[CommandInfo]:
        """The named commands the sandbox serves (hidden ones are not listed)."""
        lst = N.call(ll.asb_sandbox_commands_list, self._h, _named_options(port, request_timeout))
        return [CommandInfo(name=n, description=d or "",
                            args=[CommandArg(name=an, type=at, required=bool(rq), default=df,
                                             description=ad or "")
                                  for an, at, rq, df, ad in args])
                for n, d, args in ll.asbpy_named_command_list_tuples(lst)]

    # ---- sessions ---------------------------------------------------------------------
    def save_session(self, name: str, metadata: Optional[Mapping[str, str]] = None) -> None:
        """Remember this sandbox under ``name`` (see :mod:`agent_sandbox.sessions`)."""
        N.call(ll.asb_session_save, name, self._h, _metadata_list(metadata))

    @classmethod
    def from_session(cls, name: str, *, timeout: Optional[float] = None,
                     request_timeout: Optional[float] = None, **conn: Any) -> "Sandbox":
        """Reconnect to the sandbox saved as ``name`` (resumed if paused)."""
        if "api_url" not in conn:
            s = N.call(ll.asb_session_get, name)
            url = ll.asb_session_api_url(s)
            default = ll.asb_client_api_url(N.client(**conn))
            if url and url != default:
                conn["api_url"] = url
        c = N.client(**conn)
        h = N.call(ll.asb_session_load, c, name, N.ms(timeout) if timeout else 0,
                   _call_options(request_timeout))
        return cls(h, c, conn)

    # ---- context manager -----------------------------------------------------------------
    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kill()
