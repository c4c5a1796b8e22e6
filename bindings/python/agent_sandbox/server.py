"""Serve named commands from inside a template (the Python server SDK).

A template's ``commands.py``::

    from agent_sandbox.server import command, start

    @command
    def hello(name: str = "world") -> str:
        \"\"\"Greets someone.\"\"\"
        return f"Hello, {name}!"

    if __name__ == "__main__":
        start(9000)

and a client calls it with ``await sandbox.run("hello", name="Alice")``.

This module is pure Python: it drives ``libagentsandbox-server`` (the C
server SDK, ``asb_server_*``) through :mod:`ctypes`, so a template needs only
``python3``, this package's ``.py`` files and ``libagentsandbox-server.so.1``
(with libmicrohttpd and cJSON) - not the client library or its SWIG module.
The C library does HTTP, routing, the access token, argument checking and
coercion; this module turns functions into commands:

- the argument types come from the annotations (``str``, ``int``, ``float``,
  ``bool``; ``dict``, ``list``, anything else = ``json``) or, without one,
  from the default's type (no annotation and no default = ``json``: any
  value); ``Optional[X]`` is ``X``; a parameter without a default is
  required;
- the return value is the command's result, as JSON (dataclasses, tuples,
  sets, paths and datetimes are converted; anything else must be
  JSON-serializable);
- an exception becomes the error reply: HTTP 500 with its type name and
  message (the client raises ``CommandFailedError``);
- coroutine functions are run to completion with :func:`asyncio.run`.

Handlers run on the server's threads, several at once when calls arrive
together.

The library is found at ``$ASB_SERVER_LIB``, else next to this package in an
SDK layout (``<sdk>/python/agent_sandbox`` -> ``<sdk>/lib``), else under
``$ASB_BUILD_DIR/core/server``, else by the system's loader, else in the
``build/`` of a checkout.
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import datetime as _dt
import enum
import inspect
import json
import os
import re
import signal
import threading
import typing
from pathlib import Path, PurePath
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = [
    "command",
    "start",
    "CommandRegistry",
    "Server",
    "ServerError",
    "default_registry",
    "ARG_STRING",
    "ARG_INTEGER",
    "ARG_FLOAT",
    "ARG_BOOLEAN",
    "ARG_JSON",
]

# asb_server_arg_type (include/agentsandbox/server.h)
ARG_STRING = 1
ARG_INTEGER = 2
ARG_FLOAT = 3
ARG_BOOLEAN = 4
ARG_JSON = 5
_ARG_REQUIRED = 1
_TYPE_NAMES = {ARG_STRING: "string", ARG_INTEGER: "integer", ARG_FLOAT: "float",
               ARG_BOOLEAN: "boolean", ARG_JSON: "json"}
_SERVER_OPTIONS_VERSION = 1
_LIB_NAME = "libagentsandbox-server.so.1"


class ServerError(Exception):
    """The server SDK refused something (a bad name, a port in use, ...).

    ``code`` is the ``asb_status`` (negative int) of the failing call.
    """

    def __init__(self, message: str, code: int = -1) -> None:
        super().__init__(message)
        self.code = code


# ---- the C library ---------------------------------------------------------------------

class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("http_status", ctypes.c_int),
                ("message", ctypes.c_char_p), ("remote_code", ctypes.c_char_p),
                ("retry_after", ctypes.c_int), ("reason", ctypes.c_char_p)]


class _Options(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("host", ctypes.c_char_p),
                ("token", ctypes.c_char_p), ("max_body_bytes", ctypes.c_size_t),
                ("max_connections", ctypes.c_uint), ("shutdown_grace_ms", ctypes.c_long)]


class _AgentsOptions(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("prefix", ctypes.c_char_p),
                ("search_path", ctypes.c_char_p), ("npm", ctypes.c_char_p),
                ("registry", ctypes.c_char_p), ("max_prompt_bytes", ctypes.c_size_t),
                ("max_sessions", ctypes.c_uint), ("max_log_bytes", ctypes.c_size_t),
                ("no_install_on_demand", ctypes.c_int)]


_AGENTS_OPTIONS_VERSION = 1
_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_lib: Optional[ctypes.CDLL] = None
_lib_lock = threading.Lock()


def _candidates() -> List[str]:
    here = Path(__file__).resolve().parent
    out = []
    if os.environ.get("ASB_SERVER_LIB"):
        out.append(os.environ["ASB_SERVER_LIB"])
    out.append(str(here.parent.parent / "lib" / _LIB_NAME))  # an SDK layout
    if os.environ.get("ASB_BUILD_DIR"):
        out.append(str(Path(os.environ["ASB_BUILD_DIR"]) / "core" / "server" / _LIB_NAME))
    out.append(_LIB_NAME)  # the system's loader (an installed library)
    out.append(str(here.parent.parent.parent / "build" / "core" / "server" / _LIB_NAME))
    return out


def _load() -> ctypes.CDLL:
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append(f"{path}: no such file")
                continue
            try:
                lib = ctypes.CDLL(path)
                break
            except OSError as exc:
                tried.append(str(exc))
        else:
            raise ServerError("agent_sandbox.server: cannot load libagentsandbox-server "
                              "(set ASB_SERVER_LIB to its path); tried: " + "; ".join(tried))
        vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        sig = {
            "asb_server_options_init": (i, [ctypes.POINTER(_Options), ctypes.c_uint]),
            "asb_server_new": (i, [ctypes.POINTER(vp), ctypes.POINTER(_Options)]),
            "asb_server_free": (None, [vp]),
            "asb_server_register": (i, [ctypes.POINTER(vp), vp, cp, cp, _HANDLER, vp, vp]),
            "asb_server_command_add_arg": (i, [vp, cp, i, i, cp, cp]),
            "asb_server_command_set_hidden": (i, [vp, i]),
            "asb_server_start_background": (i, [vp, i]),
            "asb_server_agents_options_init": (i, [ctypes.POINTER(_AgentsOptions), ctypes.c_uint]),
            "asb_server_enable_agents": (i, [vp, ctypes.POINTER(_AgentsOptions)]),
            "asb_server_port": (i, [vp]),
            "asb_server_stop": (i, [vp]),
            "asb_server_wait": (i, [vp]),
            "asb_server_call_args_json": (cp, [vp]),
            "asb_server_call_set_result_json": (i, [vp, cp]),
            "asb_server_call_error": (i, [vp, cp, cp]),
            "asb_server_error_last": (ctypes.POINTER(_Error), []),
        }
        for name, (res, args) in sig.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        _lib = lib
        return lib


def _check(rc: int, what: str) -> None:
    if rc < 0:
        lib = _load()
        e = lib.asb_server_error_last().contents
        msg = e.message.decode("utf-8", "replace") if e.message else ""
        raise ServerError(f"{what}: {msg}" if msg else f"{what} failed ({rc})", rc)


# ---- from a Python function to a command --------------------------------------------------

def _arg_type(annotation: Any, default: Any) -> int:
    if annotation is inspect.Parameter.empty or annotation is None:
        if default is inspect.Parameter.empty or default is None:
            return ARG_JSON
        annotation = type(default)
    origin = typing.get_origin(annotation)
    if origin is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _arg_type(args[0], inspect.Parameter.empty) if len(args) == 1 else ARG_JSON
    if annotation is bool:
        return ARG_BOOLEAN
    if annotation is int:
        return ARG_INTEGER
    if annotation is float:
        return ARG_FLOAT
    if annotation is str:
        return ARG_STRING
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return ARG_STRING
    return ARG_JSON


def _default_text(kind: int, default: Any) -> Optional[str]:
    """The default as the C SDK wants it, or None (then the argument is
    optional without one and the Python default applies)."""
    if default is inspect.Parameter.empty or default is None:
        return None
    try:
        if kind == ARG_BOOLEAN and isinstance(default, bool):
            return "true" if default else "false"
        if kind == ARG_INTEGER and isinstance(default, int) and not isinstance(default, bool):
            return str(default)
        if kind == ARG_FLOAT and isinstance(default, (int, float)) and not isinstance(default, bool):
            return repr(float(default))
        if kind == ARG_STRING and isinstance(default, str):
            return default
        if kind == ARG_STRING and isinstance(default, enum.Enum):
            return str(default.value)
        if kind == ARG_JSON:
            return json.dumps(default, allow_nan=False)
    except (TypeError, ValueError):
        pass
    return None


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(.*)$")


def _doc_parts(fn: Callable[..., Any]) -> Tuple[str, Dict[str, str]]:
    """(the first paragraph of the docstring, {argument: description} from a
    Google-style ``Args:`` section)."""
    doc = inspect.getdoc(fn) or ""
    lines = doc.splitlines()
    summary: List[str] = []
    for line in lines:
        if not line.strip() or _ARGS_HEADER.match(line):
            break
        summary.append(line.strip())
    args: Dict[str, str] = {}
    in_args, current, base = False, None, -1
    for line in lines:
        if _ARGS_HEADER.match(line):
            in_args = True
            continue
        if not in_args:
            continue
        if not line.strip():
            current = None
            continue
        if not line.startswith((" ", "\t")):
            break  # the next section
        indent = len(line) - len(line.lstrip())
        m = _ARG_LINE.match(line)
        if m and (base < 0 or indent <= base):
            current, base = m.group(1), indent
            args[current] = m.group(3).strip()
        elif current:
            args[current] = (args[current] + " " + line.strip()).strip()
    return " ".join(summary), args


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset)):
        return list(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    raise TypeError(f"{type(value).__name__} is not JSON-serializable")


class _Arg:
    __slots__ = ("name", "kind", "required", "default", "description", "convert")

    def __init__(self, p: inspect.Parameter, annotation: Any, description: str) -> None:
        self.name = p.name
        self.kind = _arg_type(annotation, p.default)
        self.required = p.default is inspect.Parameter.empty
        self.default = None if self.required else _default_text(self.kind, p.default)
        self.description = description
        target = annotation
        if typing.get_origin(target) is typing.Union:
            rest = [a for a in typing.get_args(target) if a is not type(None)]
            target = rest[0] if len(rest) == 1 else None
        self.convert: Optional[Callable[[Any], Any]] = None
        if self.kind == ARG_FLOAT:
            self.convert = float
        elif self.kind == ARG_INTEGER:
            self.convert = int
        elif self.kind == ARG_STRING and isinstance(target, type) and issubclass(target, enum.Enum):
            self.convert = target
        elif target is tuple or typing.get_origin(target) is tuple:
            self.convert = tuple


class _Command:
    """A registered function and what the C SDK needs to know of it."""

    def __init__(self, fn: Callable[..., Any], name: str, description: Optional[str],
                 hidden: bool) -> None:
        self.fn = fn
        self.name = name
        self.hidden = hidden
        self.is_async = inspect.iscoroutinefunction(fn)
        summary, arg_docs = _doc_parts(fn)
        self.description = summary if description is None else description
        try:
            hints = typing.get_type_hints(fn)
        except Exception:  # unresolvable forward references: use what is there
            hints = getattr(fn, "__annotations__", {})
        self.args: List[_Arg] = []
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.kind is p.POSITIONAL_ONLY:
                raise ServerError(f"command {name!r}: parameter {p.name!r} is positional-only; "
                                  "commands take keyword arguments")
            self.args.append(_Arg(p, hints.get(p.name, p.annotation), arg_docs.get(p.name, "")))

    def call(self, args_json: Optional[bytes]) -> Any:
        kwargs = json.loads(args_json) if args_json else {}
        for a in self.args:
            if a.convert is not None and kwargs.get(a.name) is not None:
                kwargs[a.name] = a.convert(kwargs[a.name])
        if self.is_async:
            return asyncio.run(self.fn(**kwargs))
        result = self.fn(**kwargs)
        if inspect.isawaitable(result):
            async def await_it() -> Any:
                return await result

            return asyncio.run(await_it())
        return result

    def info(self) -> Dict[str, Any]:
        """What ``GET /commands`` says of it."""
        return {"name": self.name, "description": self.description,
                "args": [{"name": a.name, "type": _TYPE_NAMES[a.kind], "required": a.required,
                          "default": a.default, "description": a.description}
                         for a in self.args]}


def _handler(cmd: _Command) -> Any:
    def handle(call: int, _userdata: int) -> int:
        lib = _load()
        try:
            result = cmd.call(lib.asb_server_call_args_json(call))
            try:
                text = json.dumps(result, default=_jsonable, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"the result of {cmd.name} cannot be sent as JSON: {exc}") \
                    from None
            rc = lib.asb_server_call_set_result_json(call, text.encode("utf-8"))
            if rc < 0:
                raise RuntimeError(f"the result of {cmd.name} was refused ({rc})")
            return 0
        except BaseException as exc:  # every failure is the caller's error reply
            message = str(exc) or type(exc).__name__
            lib.asb_server_call_error(call, type(exc).__name__.encode("utf-8"),
                                      message.encode("utf-8", "replace"))
            return 1

    return _HANDLER(handle)


# ---- the registry and the server -------------------------------------------------------------

class Server:
    """A running command server (from :meth:`CommandRegistry.start` with
    ``background=True``). ``with`` stops it on exit."""

    def __init__(self, handle: int, keep: List[Any]) -> None:
        self._h: Optional[int] = handle
        self._keep = keep  # the ctypes callbacks must outlive the server
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        """The port it listens on (0 once stopped)."""
        h = self._h
        return _load().asb_server_port(h) if h else 0

    def stop(self) -> None:
        """Stop accepting calls, let calls in progress finish, release everything."""
        with self._lock:
            h, self._h = self._h, None
        if h:
            lib = _load()
            lib.asb_server_stop(h)
            lib.asb_server_wait(h)
            lib.asb_server_free(h)
        self._keep = []

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            self.stop()
        except Exception:
            pass


class CommandRegistry:
    """A set of commands, served by :meth:`start`.

    The module's :func:`command` and :func:`start` use :data:`default_registry`;
    make your own to serve different sets on different ports.
    """

    def __init__(self) -> None:
        self._commands: Dict[str, _Command] = {}

    def command(self, fn: Optional[Callable[..., Any]] = None, *, name: Optional[str] = None,
                description: Optional[str] = None, hidden: bool = False) -> Any:
        """Register ``fn`` as a command: ``@command``, or
        ``@command(name="greet", description="...", hidden=True)``.

        The name defaults to the function's, the description to the
        docstring's first paragraph; argument descriptions come from a
        Google-style ``Args:`` section. The function is returned unchanged.
        """
        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self.register(f, name=name, description=description, hidden=hidden)
            return f

        return register(fn) if fn is not None else register

    def register(self, fn: Callable[..., Any], *, name: Optional[str] = None,
                 description: Optional[str] = None, hidden: bool = False) -> None:
        """Register ``fn`` (see :meth:`command`). A name registered again is replaced."""
        if not callable(fn):
            raise TypeError("a command must be callable")
        cname = name or fn.__name__
        self._commands[cname] = _Command(fn, cname, description, hidden)

    def unregister(self, name: str) -> None:
        self._commands.pop(name, None)

    @property
    def names(self) -> List[str]:
        return list(self._commands)

    def describe(self) -> List[Dict[str, Any]]:
        """The commands as ``GET /commands`` lists them (hidden ones included)."""
        return [c.info() for c in self._commands.values()]

    def call(self, name: str, /, **kwargs: Any) -> Any:
        """Call a registered command in this process (for tests), as the server would."""
        cmd = self._commands[name]
        return cmd.call(json.dumps(kwargs).encode())

    def start(self, port: int = 9000, *, host: Optional[str] = None,
              token: Optional[str] = None, background: bool = False,
              max_body_bytes: int = 0, max_connections: int = 0,
              shutdown_grace: Optional[float] = None,
              agents: Any = False) -> Optional[Server]:
        """Serve the registered commands on ``port`` (0 = a free one).

        ``agents``: also serve the agents service (coding-agent sessions
        under ``/agents``, docs/agents.md): ``True`` with its defaults, or a
        dict of its options (``prefix``, ``search_path``, ``npm``,
        ``registry``, ``max_prompt_bytes``, ``max_sessions``,
        ``max_log_bytes``, ``install_on_demand``).

        ``host``: the address to listen on (default ``0.0.0.0``); ``token``:
        the ``X-Access-Token`` every call must carry (default
        ``$ASB_SERVER_TOKEN``; else the token whose SHA-256 is
        ``$ASB_SERVER_TOKEN_SHA256``, which the engine sets from the
        sandbox's access token; ``""`` = none).

        Blocks until SIGTERM or SIGINT (or :class:`KeyboardInterrupt`),
        then stops gracefully. With ``background=True`` it returns a
        :class:`Server` at once, listening.
        """
        lib = _load()
        opts = _Options()
        _check(lib.asb_server_options_init(ctypes.byref(opts), _SERVER_OPTIONS_VERSION),
               "asb_server_options_init")
        keep: List[Any] = []
        if host is not None:
            keep.append(host.encode())
            opts.host = keep[-1]
        if token is not None:
            keep.append(token.encode())
            opts.token = keep[-1]
        opts.max_body_bytes = int(max_body_bytes)
        opts.max_connections = int(max_connections)
        if shutdown_grace is not None:
            opts.shutdown_grace_ms = -1 if shutdown_grace < 0 else max(1, int(shutdown_grace * 1000))
        h = ctypes.c_void_p()
        _check(lib.asb_server_new(ctypes.byref(h), ctypes.byref(opts)), "asb_server_new")
        server = Server(h.value, keep)
        try:
            for cmd in self._commands.values():
                cb = _handler(cmd)
                keep.append(cb)
                out = ctypes.c_void_p()
                desc = cmd.description.encode() if cmd.description else None
                _check(lib.asb_server_register(ctypes.byref(out), h, cmd.name.encode(), desc,
                                               cb, None, None),
                       f"command {cmd.name!r}")
                for a in cmd.args:
                    _check(lib.asb_server_command_add_arg(
                        out, a.name.encode(), a.kind, _ARG_REQUIRED if a.required else 0,
                        a.default.encode() if a.default is not None else None,
                        a.description.encode() if a.description else None),
                        f"command {cmd.name!r}, argument {a.name!r}")
                if cmd.hidden:
                    _check(lib.asb_server_command_set_hidden(out, 1), f"command {cmd.name!r}")
            if agents:
                _enable_agents(lib, h, agents if isinstance(agents, dict) else {}, keep)
            _check(lib.asb_server_start_background(h, int(port)), f"listening on port {port}")
        except BaseException:
            server.stop()
            raise
        if background:
            return server
        _serve_until_signal(server)
        return None


def _enable_agents(lib: ctypes.CDLL, h: Any, o: Dict[str, Any], keep: List[Any]) -> None:
    opts = _AgentsOptions()
    _check(lib.asb_server_agents_options_init(ctypes.byref(opts), _AGENTS_OPTIONS_VERSION),
           "asb_server_agents_options_init")
    known = {"prefix", "search_path", "npm", "registry", "max_prompt_bytes", "max_sessions",
             "max_log_bytes", "install_on_demand"}
    unknown = set(o) - known
    if unknown:
        raise ServerError("agents: unknown option(s) " + ", ".join(sorted(unknown)))
    for key in ("prefix", "search_path", "npm", "registry"):
        if o.get(key) is not None:
            keep.append(str(o[key]).encode())
            setattr(opts, key, keep[-1])
    for key in ("max_prompt_bytes", "max_sessions", "max_log_bytes"):
        if o.get(key):
            setattr(opts, key, int(o[key]))
    if o.get("install_on_demand") is False:
        opts.no_install_on_demand = 1
    _check(lib.asb_server_enable_agents(h, ctypes.byref(opts)), "asb_server_enable_agents")


def _serve_until_signal(server: Server) -> None:
    done = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: done.set())
    try:
        while not done.is_set() and server.port:
            done.wait(1.0)  # wakes for signals too
    except KeyboardInterrupt:
        pass
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)
        server.stop()


default_registry = CommandRegistry()
"""The registry of the module-level :func:`command` and :func:`start`."""


def command(fn: Optional[Callable[..., Any]] = None, *, name: Optional[str] = None,
            description: Optional[str] = None, hidden: bool = False) -> Any:
    """Register a function as a named command in :data:`default_registry`
    (see :meth:`CommandRegistry.command`)."""
    return default_registry.command(fn, name=name, description=description, hidden=hidden)


def start(port: int = 9000, **kw: Any) -> Optional[Server]:
    """Serve :data:`default_registry`'s commands (see :meth:`CommandRegistry.start`)."""
    return default_registry.start(port, **kw)
