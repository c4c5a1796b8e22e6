"""Glue between the SWIG module (:mod:`agent_sandbox.lowlevel`) and the API.

- status codes -> exceptions (read on the thread that made the call);
- cancel tokens, and the token "in scope" on the current thread that every
  blocking call made there uses (the async layer puts one in scope for each
  call it runs on a worker thread, and requests it when the awaiting task is
  cancelled);
- clients, one per configuration, shared (a client is thread-safe and owns
  the connection pool);
- the worker threads the async API runs blocking calls on, and the bridge
  that runs user callbacks on the event loop.
"""

from __future__ import annotations

import asyncio
import codecs
import concurrent.futures
import contextlib
import inspect
import os
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Tuple, Type

from . import exceptions as E
from . import lowlevel as ll

OK = ll.ASB_OK
ECOMMANDEXIT = ll.ASB_ECOMMANDEXIT
ECANCELED = ll.ASB_ECANCELED
EUSER = ll.ASB_EUSER

_MAP: Dict[int, Type[BaseException]] = {
    ll.ASB_ERROR: E.SandboxException,
    ll.ASB_EINVAL: E.InvalidArgumentException,
    ll.ASB_ENOTFOUND: E.NotFoundException,
    ll.ASB_ETIMEOUT: E.TimeoutException,
    ll.ASB_EAUTH: E.AuthenticationException,
    ll.ASB_ERATELIMIT: E.RateLimitException,
    ll.ASB_ENOSPACE: E.NotEnoughSpaceException,
    ll.ASB_ECOMMANDEXIT: E.CommandExitException,
    ll.ASB_ETEMPLATE: E.TemplateException,
    ll.ASB_ESANDBOXNOTFOUND: E.SandboxNotFoundException,
    ll.ASB_ESANDBOXGONE: E.SandboxGoneException,
    ll.ASB_EEXISTS: E.SandboxException,
    ll.ASB_ECANCELED: E.OperationCancelledError,
    ll.ASB_EUSER: E.SandboxException,
    ll.ASB_ECONNECTION: E.SandboxException,
    ll.ASB_EPROTOCOL: E.SandboxException,
    ll.ASB_EVERSION: E.SandboxException,
    ll.ASB_EUNSUPPORTED: E.SandboxException,
    ll.ASB_EBUILD: E.BuildException,
    ll.ASB_ECOMMANDNOTFOUND: E.CommandNotFoundError,
    ll.ASB_ECOMMANDFAILED: E.CommandFailedError,
    ll.ASB_EPERM: E.PermissionDeniedException,
    ll.ASB_EGITAUTH: E.GitAuthException,
    ll.ASB_EGITUPSTREAM: E.GitUpstreamException,
}


def make_error(rc: int, not_found: Optional[Type[BaseException]] = None) -> BaseException:
    """The exception for status rc, with the calling thread's last error."""
    code, http, message, remote, retry_after, reason = ll.asbpy_error_last()
    if code != rc:  # no detail recorded for this failure
        message, http, remote, retry_after, reason = ll.asb_strerror(rc), 0, "", -1, ""
    if rc == ll.ASB_ENOMEM:
        return MemoryError(message)
    cls = _MAP.get(rc, E.SandboxException)
    if not_found is not None and rc == ll.ASB_ENOTFOUND:
        cls = not_found
    return cls(
        message,
        code=rc,
        status=ll.asb_status_name(rc),
        http_status=http,
        remote_code=remote or "",
        retry_after=retry_after,
        reason=reason or "",
    )


def fail(rc: int, cb: Any = None, not_found: Optional[Type[BaseException]] = None) -> None:
    """Raise for status rc: a callback's own exception first, else the mapped one."""
    if cb is not None:
        exc = cb.take_error()
        if exc is not None:
            raise exc
    raise make_error(rc, not_found)


def call(fn: Callable[..., Any], *args: Any, cb: Any = None,
         not_found: Optional[Type[BaseException]] = None) -> Any:
    """Call a SWIG function; raise on a negative status, else return its outputs.

    A function with one output returns it, with several a list of them,
    with none its (non-negative) status.
    """
    r = fn(*args)
    if type(r) is list:
        rc = r[0]
        if rc < 0:
            fail(rc, cb, not_found)
        return r[1] if len(r) == 2 else r[1:]
    if r < 0:
        fail(r, cb, not_found)
    return r


# ---- cancellation ------------------------------------------------------------------

_tls = threading.local()


class CancelToken:
    """Cancels blocking calls from another thread.

    Calls made on a thread while a token is in scope (``with token:``) use
    it; ``token.cancel()`` from any thread makes them stop promptly
    (:class:`~agent_sandbox.OperationCancelledError`). The async API does
    this by itself when an awaiting task is cancelled.
    """

    __slots__ = ("_h", "_prev", "_links", "__weakref__")

    def __init__(self) -> None:
        self._h = call(ll.asb_cancel_new)
        self._prev: list = []
        self._links: list = []

    def cancel(self) -> None:
        """Request cancellation (thread-safe, idempotent); linked tokens too."""
        ll.asb_cancel_request(self._h)
        for other in list(self._links):
            other.cancel()

    def link(self, other: "CancelToken") -> None:
        """Cancelling this token also cancels other (now if already cancelled).

        Used for calls that open something living longer than the call (a
        process, a watch): it gets a token of its own, linked to the caller's.
        """
        self._links.append(other)
        if self.cancelled:
            other.cancel()

    def unlink(self, other: "CancelToken") -> None:
        try:
            self._links.remove(other)
        except ValueError:
            pass

    @property
    def cancelled(self) -> bool:
        return bool(ll.asb_cancel_is_requested(self._h))

    def reset(self) -> None:
        """Make the token usable again."""
        ll.asb_cancel_reset(self._h)

    def __enter__(self) -> "CancelToken":
        self._prev.append(getattr(_tls, "cancel", None))
        _tls.cancel = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _tls.cancel = self._prev.pop()


def current_cancel() -> Any:
    """The low-level token in scope on this thread, or None."""
    t = getattr(_tls, "cancel", None)
    return t._h if t is not None else None


def current_token() -> Optional[CancelToken]:
    return getattr(_tls, "cancel", None)


# ---- units ---------------------------------------------------------------------------


def ms(seconds: Optional[float]) -> int:
    """Seconds -> the library's milliseconds: None = its default (0), 0 = no limit (-1)."""
    if seconds is None:
        return 0
    if seconds <= 0:
        return -1
    return max(1, int(round(seconds * 1000)))


# ---- clients ---------------------------------------------------------------------------

_clients: Dict[Tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


def _key(cfg: Dict[str, Any]) -> Tuple[Any, ...]:
    items = []
    for k in sorted(cfg):
        v = cfg[k]
        if isinstance(v, dict):
            v = tuple(sorted(v.items()))
        elif isinstance(v, list):
            v = tuple(v)
        items.append((k, v))
    return tuple(items)


CLIENT_KEYS = ("api_key", "api_url", "domain", "sandbox_url", "request_timeout", "debug",
               "headers", "max_retries", "user_agent")


def client(**cfg: Any) -> Any:
    """A (shared) client for this configuration; unset keys come from the environment.

    Keys: api_key, api_url, domain, sandbox_url, request_timeout (seconds),
    debug (bool), headers (dict), max_retries, user_agent.
    """
    cfg = {k: v for k, v in cfg.items() if v is not None}
    unknown = set(cfg) - set(CLIENT_KEYS)
    if unknown:
        raise TypeError(f"unknown connection option(s): {', '.join(sorted(unknown))}")
    key = _key(cfg)
    with _clients_lock:
        c = _clients.get(key)
    if c is not None:
        return c
    o = ll.asb_client_options()
    for name in ("api_key", "api_url", "domain", "sandbox_url", "user_agent"):
        if name in cfg:
            setattr(o, name, str(cfg[name]))
    if "request_timeout" in cfg:
        o.request_timeout_ms = ms(cfg["request_timeout"])
    if "debug" in cfg:
        o.debug = 1 if cfg["debug"] else -1
    if "headers" in cfg:
        h = cfg["headers"]
        o.headers = [f"{k}: {v}" for k, v in h.items()] if isinstance(h, dict) else list(h)
    if "max_retries" in cfg:
        o.max_retries = int(cfg["max_retries"]) if cfg["max_retries"] else -1
    c = call(ll.asb_client_new, o)
    with _clients_lock:
        return _clients.setdefault(key, c)


def split_conn(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Take the connection options out of kwargs."""
    return {k: kwargs.pop(k) for k in CLIENT_KEYS if k in kwargs}


# ---- byte streams -> text ----------------------------------------------------------------


class Decoder:
    """Feeds UTF-8 chunks (split anywhere) to a text callback."""

    __slots__ = ("fn", "_dec")

    def __init__(self, fn: Optional[Callable[[str], Any]]) -> None:
        self.fn = fn
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> None:
        text = self._dec.decode(data)
        if text and self.fn is not None:
            self.fn(text)

    def flush(self) -> None:
        text = self._dec.decode(b"", final=True)
        if text and self.fn is not None:
            self.fn(text)


def text(data: Optional[bytes]) -> str:
    return data.decode("utf-8", "replace") if data else ""


# ---- worker threads (async API) ------------------------------------------------------------

_executor: Optional[concurrent.futures.ThreadPoolExecutor] = None
_executor_lock = threading.Lock()


def executor() -> concurrent.futures.ThreadPoolExecutor:
    """The pool blocking calls run on: idle threads are reused, new ones made
    up to $ASB_PY_MAX_THREADS (default 256), since long waits (a background
    command's output, a watch) each hold one."""
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                n = int(os.environ.get("ASB_PY_MAX_THREADS", "256"))
                _executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=n, thread_name_prefix="agent-sandbox"
                )
    return _executor


def _in_scope(token: CancelToken, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    prev = getattr(_tls, "cancel", None)
    _tls.cancel = token
    try:
        return fn(*args, **kwargs)
    finally:
        _tls.cancel = prev


async def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a blocking call on a worker thread and await it.

    If the awaiting task is cancelled, the call's cancel token is requested,
    the call is awaited until it has really stopped (the C call returns
    promptly), and CancelledError propagates.
    """
    loop = asyncio.get_running_loop()
    token = CancelToken()
    fut = asyncio.wrap_future(executor().submit(_in_scope, token, fn, args, kwargs), loop=loop)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        if fut.done():
            if not fut.cancelled() and fut.exception() is None:
                # It finished just as we were cancelled; the cancellation wins.
                pass
            raise
        token.cancel()
        while not fut.done():
            try:
                await asyncio.wait([fut])
            except asyncio.CancelledError:
                continue
        if not fut.cancelled():
            fut.exception()  # retrieved: the cancellation is what we report
        raise


def on_loop(loop: asyncio.AbstractEventLoop, fn: Optional[Callable[..., Any]]) -> Optional[Callable[..., Any]]:
    """Wrap a user callback (plain or async) so that calling it from a worker
    thread runs it on the event loop and waits for it; its exception comes
    back to the worker (and aborts the C call)."""
    if fn is None:
        return None

    async def runner(args: tuple) -> None:
        r = fn(*args)
        if inspect.isawaitable(r):
            await r

    def call_on_loop(*args: Any) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # already on the loop's thread (should not happen)
            r = fn(*args)
            if inspect.isawaitable(r):
                raise TypeError("an async callback cannot run here")
            return
        asyncio.run_coroutine_threadsafe(runner(args), loop).result()

    return call_on_loop


def sync_only(fn: Optional[Callable[..., Any]]) -> Optional[Callable[..., Any]]:
    """For the blocking API: an async callback is run to completion in place."""
    if fn is None or not inspect.iscoroutinefunction(fn):
        return fn

    def call_blocking(*args: Any) -> None:
        asyncio.run(fn(*args))

    return call_blocking


@contextlib.contextmanager
def no_cancel() -> Iterator[None]:
    """Calls in this block are not cancelled by the token in scope (cleanup)."""
    prev = getattr(_tls, "cancel", None)
    _tls.cancel = None
    try:
        yield
    finally:
        _tls.cancel = prev


@contextlib.contextmanager
def token_scope(token: Optional[CancelToken]) -> Iterator[None]:
    if token is None:
        yield
        return
    with token:
        yield
