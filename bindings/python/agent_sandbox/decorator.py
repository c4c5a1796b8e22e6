"""``@sandbox``: calling the function runs it in a sandbox.

    from agent_sandbox import sandbox

    @sandbox(template="base", timeout=120)
    def fib(n: int) -> int:
        a, b = 0, 1
        for _ in range(n):
            a, b = b, a + b
        return a

    fib(50)            # runs in a fresh sandbox, which is killed afterwards

How it works: the function's source (``inspect.getsource``, decorators
dropped) is written into the sandbox with the call's arguments, run there by
``python3``, and its return value read back. Arguments and results cross as
JSON (``serializer="json"``, the default: anything ``json.dumps`` takes) or
pickle (``serializer="pickle"``: any picklable object; the sandbox needs the
classes involved). The function must be self-contained: import what it uses
inside it; closures and lambdas cannot be shipped.

- ``async def`` functions give an async wrapper (``await f(...)``) and run
  with ``asyncio.run`` inside the sandbox; plain functions a blocking one.
- What the function prints is forwarded to this process's stdout/stderr
  (``stream_output=False`` keeps it quiet).
- An exception raised remotely is raised here with the same type when it
  can be rebuilt (a builtin exception, or any picklable one with
  ``serializer="pickle"``), else as :class:`RemoteError`; either way its
  ``__cause__`` is a :class:`RemoteTraceback` holding the remote traceback,
  so printing it shows both.
- ``keep_alive=True`` makes one sandbox on the first call and reuses it for
  later ones (``f.close()`` kills it); ``sandbox=`` (a Sandbox, or an id)
  reuses yours, which is never killed.
"""

from __future__ import annotations

import ast
import base64
import builtins
import functools
import inspect
import json
import pickle
import sys
import textwrap
import threading
import uuid
from typing import Any, Callable, Dict, Optional, Tuple, Union

from . import _native as N
from . import _sync as S
from ._async import Sandbox as AsyncSandbox
from .exceptions import AgentSandboxError

__all__ = ["sandbox", "RemoteError", "RemoteTraceback"]

_RUNNER = r'''
import asyncio, base64, inspect, json, pickle, sys, traceback

def _asb_main(fn_name, payload_path, result_path, serializer):
    with open(payload_path, "rb") as f:
        payload = f.read()
    if serializer == "pickle":
        args, kwargs = pickle.loads(base64.b64decode(payload))
    else:
        d = json.loads(payload)
        args, kwargs = d["args"], d["kwargs"]
    try:
        r = globals()[fn_name](*args, **kwargs)
        if inspect.isawaitable(r):
            r = asyncio.run(r) if inspect.iscoroutine(r) else r
        if serializer == "pickle":
            out = {"ok": True, "result": base64.b64encode(pickle.dumps(r)).decode()}
        else:
            out = {"ok": True, "result": r}
        data = json.dumps(out, default=str)
    except BaseException as e:
        err = {"ok": False, "type": type(e).__name__, "module": type(e).__module__,
               "message": str(e), "traceback": traceback.format_exc()}
        if serializer == "pickle":
            try:
                err["pickled"] = base64.b64encode(pickle.dumps(e)).decode()
            except Exception:
                pass
        data = json.dumps(err, default=str)
    with open(result_path, "w") as f:
        f.write(data)

_asb_main(*sys.argv[1:5])
'''


class RemoteTraceback(Exception):
    """The traceback of an exception raised inside the sandbox."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return "\n\nRemote traceback (in the sandbox):\n" + self.tb


class RemoteError(AgentSandboxError):
    """An exception raised inside the sandbox that cannot be rebuilt here.

    ``type_name`` is its type, ``remote_traceback`` its traceback.
    """

    def __init__(self, type_name: str, message: str, remote_traceback: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.remote_traceback = remote_traceback


def _source(fn: Callable[..., Any]) -> str:
    if fn.__name__ == "<lambda>":
        raise TypeError("@sandbox cannot ship a lambda: use a def")
    if fn.__code__.co_freevars:
        raise TypeError(f"@sandbox cannot ship {fn.__name__}: it is a closure over "
                        f"{', '.join(fn.__code__.co_freevars)}")
    src = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(src)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__name__:
            node.decorator_list = []
            return ast.unparse(node)
    raise TypeError(f"@sandbox: cannot find the source of {fn.__name__}")


def _encode(serializer: str, args: tuple, kwargs: dict) -> bytes:
    if serializer == "pickle":
        return base64.b64encode(pickle.dumps((args, kwargs)))
    return json.dumps({"args": list(args), "kwargs": kwargs}, default=str).encode()


def _decode(serializer: str, raw: str) -> Any:
    out = json.loads(raw)
    if out.get("ok"):
        if serializer == "pickle":
            return pickle.loads(base64.b64decode(out["result"]))
        return out["result"]
    tb = out.get("traceback", "")
    exc: Optional[BaseException] = None
    if out.get("pickled"):
        try:
            exc = pickle.loads(base64.b64decode(out["pickled"]))
        except Exception:
            exc = None
    if exc is None and out.get("module") == "builtins":
        cls = getattr(builtins, out.get("type", ""), None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            try:
                exc = cls(out.get("message", ""))
            except Exception:
                exc = None
    if exc is None:
        exc = RemoteError(out.get("type", "Exception"), out.get("message", ""), tb)
    setattr(exc, "remote_traceback", tb)
    raise exc from RemoteTraceback(tb)


class _Plan:
    """Where a call runs and what to clean up."""

    def __init__(self, fn: Callable[..., Any], template: str, timeout: float,
                 envs: Optional[Dict[str, str]], serializer: str, keep_alive: bool,
                 given: Any, stream_output: bool, python: str, conn: Dict[str, Any]) -> None:
        if serializer not in ("json", "pickle"):
            raise ValueError("serializer must be 'json' or 'pickle'")
        self.name = fn.__name__
        self.script = _source(fn) + "\n" + _RUNNER
        self.template = template
        self.timeout = timeout
        self.envs = envs
        self.serializer = serializer
        self.keep_alive = keep_alive
        self.given = given
        self.stream_output = stream_output
        self.python = python
        self.conn = conn
        self.kept: Optional[S.Sandbox] = None
        self.lock = threading.Lock()

    # -- which sandbox --------------------------------------------------------------
    def acquire(self) -> Tuple[S.Sandbox, bool]:
        """(sandbox, kill it afterwards)."""
        g = self.given
        if g is not None:
            if isinstance(g, AsyncSandbox):
                return g.sync, False
            if isinstance(g, S.Sandbox):
                return g, False
            return S.Sandbox.connect(str(g), **self.conn), False
        if self.keep_alive:
            with self.lock:
                if self.kept is None:
                    self.kept = S.Sandbox.create(self.template, timeout=self.timeout,
                                                 envs=self.envs, **self.conn)
                return self.kept, False
        return S.Sandbox.create(self.template, timeout=self.timeout, envs=self.envs,
                                **self.conn), True

    # -- one call -----------------------------------------------------------------------
    def call(self, args: tuple, kwargs: dict) -> Any:
        sb, kill = self.acquire()
        try:
            tag = uuid.uuid4().hex[:12]
            base = f"/tmp/asb-fn-{tag}"
            sb.files.write_files([(base + ".py", self.script),
                                  (base + ".in", _encode(self.serializer, args, kwargs))])
            out = sys.stdout.write if self.stream_output else None
            err = sys.stderr.write if self.stream_output else None
            r = sb.commands.run(
                f"{self.python} {base}.py {self.name} {base}.in {base}.out {self.serializer}",
                timeout=0, envs=self.envs, on_stdout=out, on_stderr=err)
            try:
                raw = sb.files.read(base + ".out")
            except Exception:
                raise RemoteError("SandboxFunctionError",
                                  f"{self.name} did not finish (exit code {r.exit_code})",
                                  r.stderr) from None
            finally:
                if not kill:
                    with N.no_cancel():
                        sb.commands.run(f"rm -f {base}.py {base}.in {base}.out", timeout=30)
            return _decode(self.serializer, raw)
        finally:
            if kill:
                with N.no_cancel():
                    sb.kill()

    def close(self) -> None:
        with self.lock:
            kept, self.kept = self.kept, None
        if kept is not None:
            kept.kill()


def sandbox(fn: Optional[Callable[..., Any]] = None, *, template: str = "base",
            timeout: float = 300, envs: Optional[Dict[str, str]] = None,
            serializer: str = "json", keep_alive: bool = False,
            sandbox: Union[None, str, S.Sandbox, AsyncSandbox] = None,
            sandbox_id: Optional[str] = None, stream_output: bool = True,
            python: str = "python3", **conn: Any) -> Any:
    """Make calling the decorated function run it in a sandbox.

    :param template: the template of the sandboxes made for calls.
    :param timeout: their lifetime in seconds.
    :param envs: environment variables of the call.
    :param serializer: ``"json"`` or ``"pickle"`` for arguments, results
        and (pickle) exceptions.
    :param keep_alive: reuse one sandbox for every call (``f.close()``
        kills it).
    :param sandbox: run in this sandbox (a Sandbox or an id); it is not killed.
    :param sandbox_id: the same as ``sandbox=`` with an id.
    :param stream_output: forward what the function prints.
    :param python: the interpreter inside the sandbox.
    :param conn: connection options (``api_key``, ``api_url``, ...).

    The wrapper has ``.close()`` and ``.current_sandbox()`` (the kept
    sandbox, if any, as :class:`agent_sandbox.sync.Sandbox`).
    Use it bare (``@sandbox``) or with options (``@sandbox(...)``).
    """
    given = sandbox if sandbox is not None else sandbox_id

    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        plan = _Plan(f, template, timeout, envs, serializer, keep_alive, given, stream_output,
                     python, conn)
        if inspect.iscoroutinefunction(f):

            @functools.wraps(f)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                return await N.run(plan.call, args, kwargs)

            wrapper: Any = async_wrapper
        else:

            @functools.wraps(f)
            def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
                return plan.call(args, kwargs)

            wrapper = sync_wrapper
        wrapper.close = plan.close
        wrapper.current_sandbox = lambda: plan.kept
        wrapper._plan = plan
        return wrapper

    if fn is not None:
        return wrap(fn)
    return wrap
