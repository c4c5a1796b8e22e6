"""Coding-agent sessions in a sandbox: ``sandbox.agents``.

A sandbox whose server serves the agents service (the ``python-base`` and
``agents`` templates; docs/agents.md) runs coding-agent CLIs — Codex, Qwen
Code, Claude Code, OpenCode — as sessions: each turn sends a prompt, the
agent works inside the sandbox (running tools, editing files), and its
events stream back in one schema (``message``, ``tool.started``,
``tool.completed``, ``file.changed``, ``usage``, ``turn.completed``, ...,
each with the CLI's own event under ``"native"``)::

    async with await Sandbox.create(template="agents") as sandbox:
        print(await sandbox.agents.list())
        session = await sandbox.agents.session(
            "codex", model="qwen-plus", api_key_env="DASHSCOPE_API_KEY",
            base_url="https://dashscope.aliyuncs.com/compatible-mode/v1",
            env={"DASHSCOPE_API_KEY": key})
        turn = await session.send("fix the failing test", on_event=print)
        print(turn.final_message, turn.commands, turn.files_changed)
        async for event in session.stream("now explain the fix"):
            print(event["type"])
        await session.close()

Blocking twins: :class:`Agents` / :class:`AgentSession` (``sandbox.agents``
of :class:`agent_sandbox.SandboxSync`), and every async method ``m`` has
``m_sync``. A session lives in the sandbox, not in this object: it survives
the client going away, and :meth:`Agents.connect` attaches to it again; its
events are numbered (``seq``) so :meth:`AgentSession.events` reads after any
of them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json as _json
from typing import Any, AsyncIterator, Callable, Dict, List, Mapping, Optional, Sequence

from . import _native as N
from . import exceptions as E
from . import lowlevel as ll

__all__ = ["AgentInfo", "AgentTurn", "Agents", "AgentSession", "AsyncAgents",
           "AsyncAgentSession"]

Event = Dict[str, Any]
EventHandler = Optional[Callable[[Event], Any]]


@dataclasses.dataclass(frozen=True)
class AgentInfo:
    """An agent the sandbox's server knows (``sandbox.agents.list()``)."""

    name: str
    package: str
    installed: bool
    version: Optional[str]
    path: Optional[str]


@dataclasses.dataclass(frozen=True)
class AgentTurn:
    """The result of one turn (its ``turn.completed`` event)."""

    status: str                 # "completed", "failed" or "cancelled"
    turn: int
    final_message: Optional[str]
    error: Optional[str]
    files_changed: List[str]
    commands: List[Dict[str, Any]]  # [{"command": ..., "exit_code": ...}]
    usage: Dict[str, Any]       # input_tokens, output_tokens, cached_input_tokens, total_tokens
    exit_code: Optional[int]
    last_seq: int               # read the session's events after this one
    event: Event                # the whole turn.completed event

    @classmethod
    def _from(cls, ev: Event) -> "AgentTurn":
        return cls(status=ev.get("status", ""), turn=int(ev.get("turn") or 0),
                   final_message=ev.get("final_message"), error=ev.get("error"),
                   files_changed=list(ev.get("files_changed") or []),
                   commands=list(ev.get("commands") or []), usage=dict(ev.get("usage") or {}),
                   exit_code=ev.get("exit_code"), last_seq=int(ev.get("seq") or 0), event=ev)


def _callbacks(on_event: EventHandler) -> Any:
    if on_event is None:
        return None
    fn = N.sync_only(on_event)

    def deliver(text: str) -> None:
        fn(_json.loads(text))

    return ll.asbpy_callbacks(None, None, None, None, deliver, None, 0)


def _opts(port: Optional[int], timeout: Optional[float], cb: Any = None, **more: Any) -> Any:
    o = ll.asb_agents_options()
    if port is not None:
        o.port = int(port)
    if timeout is not None:
        o.timeout_ms = N.ms(timeout) if timeout > 0 else -1
    o.cancel = N.current_cancel()
    for k, v in more.items():
        if v is not None:
            setattr(o, k, v)
    if cb is not None:
        o.bind(cb)
    return o


# ---- blocking ----------------------------------------------------------------------------


class AgentSession:
    """A session with a coding agent (blocking). Use :meth:`Agents.session`."""

    def __init__(self, handle: Any, port: Optional[int]) -> None:
        self._h = handle
        self._port = port
        self.id: str = ll.asb_agent_session_id(handle)
        self.agent: str = ll.asb_agent_session_agent(handle)

    def __repr__(self) -> str:
        return f"AgentSession(id={self.id!r}, agent={self.agent!r})"

    def send(self, prompt: str, *, on_event: EventHandler = None,
             timeout: Optional[float] = None, check: bool = True) -> AgentTurn:
        """One turn: send ``prompt``, hand each event (a dict) to
        ``on_event`` as it arrives, and return the turn's result once it
        ends. A broken stream is resumed after the last event received, so
        no event is lost or repeated.

        ``check``: raise :class:`AgentTurnError` when the turn failed (a
        cancelled turn is returned). ``timeout``: seconds for the whole turn
        (None = no limit; cancelling the call leaves the turn running: use
        :meth:`cancel`)."""
        cb = _callbacks(on_event)
        h = N.call(ll.asb_agent_session_send, self._h, prompt,
                   _opts(self._port, timeout, cb), cb=cb)
        turn = AgentTurn._from(_json.loads(ll.asb_agent_turn_json(h)))
        if check and turn.status == "failed":
            err = E.AgentTurnError(f"agent {self.agent}: turn {turn.turn} failed: {turn.error}",
                                   code=ll.ASB_ERROR, status="ASB_ERROR")
            err.turn = turn
            raise err
        return turn

    def events(self, after: int = 0, *, follow: bool = False, on_event: EventHandler = None,
               timeout: Optional[float] = None) -> List[Event]:
        """The events after ``seq`` ``after``, in order; with ``follow``,
        also those of the turn in progress until it ends (what a client that
        went away reads to catch up)."""
        cb = _callbacks(on_event)
        lst = N.call(ll.asb_agent_session_events, self._h, int(after),
                     _opts(self._port, timeout, cb, follow=1 if follow else 0), cb=cb)
        return [_json.loads(t) for t in ll.asbpy_agent_event_list_json(lst)]

    def cancel(self) -> None:
        """Stop the turn in progress (the agent and every process it
        started); its stream ends with ``turn.completed``, status
        ``cancelled``."""
        N.call(ll.asb_agent_session_cancel, self._h, _opts(self._port, None))

    def info(self) -> Dict[str, Any]:
        """Status (``idle``, ``running``, ``closed``) and the transcript:
        ``{"id", "agent", "status", "native_session_id", "turns": [...],
        "last_seq", ...}``."""
        return _json.loads(N.call(ll.asb_agent_session_info, self._h, _opts(self._port, None)))

    def close(self) -> None:
        """End the session in the sandbox (cancelling a turn in progress)."""
        N.call(ll.asb_agent_session_close, self._h, _opts(self._port, None))

    def __enter__(self) -> "AgentSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        with N.no_cancel():
            try:
                self.close()
            except E.NotFoundException:
                pass


def _session_options(port: Optional[int], request_timeout: Optional[float],
                     cwd: Optional[str], model: Optional[str], base_url: Optional[str],
                     api_key_env: Optional[str], wire_api: Optional[str],
                     approval: Optional[str], sandbox: Optional[str],
                     args: Optional[Sequence[str]], env: Optional[Mapping[str, str]],
                     install: Optional[bool]) -> Any:
    o = ll.asb_agent_session_options()
    if port is not None:
        o.port = int(port)
    if request_timeout is not None:
        o.timeout_ms = N.ms(request_timeout)
    o.cancel = N.current_cancel()
    for k, v in (("cwd", cwd), ("model", model), ("base_url", base_url),
                 ("api_key_env", api_key_env), ("wire_api", wire_api), ("approval", approval),
                 ("sandbox", sandbox)):
        if v is not None:
            setattr(o, k, str(v))
    if args is not None:
        o.args = [str(a) for a in args]
    if env is not None:
        o.env = [f"{k}={v}" for k, v in env.items()]
    if install is not None:
        o.install = 1 if install else -1
    return o


class Agents:
    """The coding agents of a sandbox (``sandbox.agents``, blocking)."""

    def __init__(self, sandbox: Any) -> None:
        self._sandbox = sandbox

    def list(self, *, port: Optional[int] = None,
             request_timeout: Optional[float] = None) -> List[AgentInfo]:
        """Every agent the server knows, installed or not."""
        lst = N.call(ll.asb_agents_list, self._sandbox._h, _opts(port, request_timeout))
        return [AgentInfo(name=n, package=p, installed=bool(i), version=v, path=pa)
                for n, p, i, v, pa in ll.asbpy_agent_list_tuples(lst)]

    def install(self, agent: str, *, version: Optional[str] = None,
                registry: Optional[str] = None, source: Optional[str] = None,
                on_event: EventHandler = None, port: Optional[int] = None,
                timeout: Optional[float] = None) -> Optional[str]:
        """Install the agent's CLI in the sandbox (``npm install -g`` into
        the server's prefix) from ``registry`` (an npm registry URL the
        sandbox reaches) or ``source`` (a tarball path in the sandbox);
        ``install.*`` events go to ``on_event``. Returns the installed
        version. Raises :class:`CommandFailedError` naming the package and
        why when the install fails."""
        cb = _callbacks(on_event)
        return N.call(ll.asb_agents_install, self._sandbox._h, agent,
                      _opts(port, timeout, cb, install_version=version, registry=registry,
                            source=source), cb=cb)

    def session(self, agent: str, *, cwd: Optional[str] = None, model: Optional[str] = None,
                base_url: Optional[str] = None, api_key_env: Optional[str] = None,
                wire_api: Optional[str] = None, approval: Optional[str] = None,
                sandbox: Optional[str] = None, args: Optional[Sequence[str]] = None,
                env: Optional[Mapping[str, str]] = None, install: Optional[bool] = None,
                port: Optional[int] = None,
                request_timeout: Optional[float] = None) -> AgentSession:
        """A new session with ``agent`` (``"codex"``, ``"qwen"``,
        ``"claude"``, ``"opencode"``).

        ``base_url`` and ``api_key_env``: any OpenAI-compatible endpoint
        (Anthropic's Messages API for claude) and the variable holding its
        key (give the value with ``env``); ``approval``: ``"never"`` (the
        default: tools run without asking), ``"edits"``, ``"plan"``;
        ``sandbox``: the agent's own sandbox, ``"none"`` by default (the
        sandbox is the boundary); ``args``: more CLI arguments; ``install``:
        install a missing CLI at the first turn (None: the server's
        default, which does), False: refuse (:class:`NotFoundException`)."""
        o = _session_options(port, request_timeout, cwd, model, base_url, api_key_env,
                             wire_api, approval, sandbox, args, env, install)
        h = N.call(ll.asb_agent_session_new, self._sandbox._h, agent, o)
        return AgentSession(h, port)

    def connect(self, session_id: str, *, port: Optional[int] = None,
                request_timeout: Optional[float] = None) -> AgentSession:
        """Attach to an existing session by its id."""
        h = N.call(ll.asb_agent_session_connect, self._sandbox._h, session_id,
                   _opts(port, request_timeout))
        return AgentSession(h, port)


# ---- async --------------------------------------------------------------------------------


def _twin(name: str) -> Callable[..., Any]:
    def sync(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._sync, name)(*args, **kwargs)

    sync.__name__ = name + "_sync"
    sync.__doc__ = f"Blocking twin of :meth:`{name}`."
    return sync


class AsyncAgentSession:
    """A session with a coding agent (async). Use :meth:`AsyncAgents.session`."""

    def __init__(self, sync: AgentSession) -> None:
        self._sync = sync
        self.id = sync.id
        self.agent = sync.agent

    def __repr__(self) -> str:
        return f"AsyncAgentSession(id={self.id!r}, agent={self.agent!r})"

    async def send(self, prompt: str, *, on_event: EventHandler = None,
                   timeout: Optional[float] = None, check: bool = True) -> AgentTurn:
        """:meth:`AgentSession.send`; ``on_event`` (plain or async) runs on
        the event loop. Cancelling the awaiting task stops waiting (the turn
        goes on in the sandbox: :meth:`cancel` stops it)."""
        loop = asyncio.get_running_loop()
        return await N.run(self._sync.send, prompt, on_event=N.on_loop(loop, on_event),
                           timeout=timeout, check=check)

    async def stream(self, prompt: str, *, timeout: Optional[float] = None
                     ) -> AsyncIterator[Event]:
        """One turn as an async iterator of its events, ending with its
        ``turn.completed`` (a failed turn too: look at its ``status``)."""
        async for ev in self._pump(lambda cb: self._sync.send(prompt, on_event=cb,
                                                              timeout=timeout, check=False)):
            yield ev

    async def follow(self, after: int = 0) -> AsyncIterator[Event]:
        """The events after ``after`` and those of the turn in progress,
        until it ends, as an async iterator (catching up after a
        disconnect)."""
        async for ev in self._pump(lambda cb: self._sync.events(after, follow=True,
                                                                on_event=cb)):
            yield ev

    async def _pump(self, call: Callable[[Callable[[Event], None]], Any]) -> AsyncIterator[Event]:
        loop = asyncio.get_running_loop()
        q: "asyncio.Queue[Any]" = asyncio.Queue()
        done = object()

        def put(ev: Event) -> None:
            loop.call_soon_threadsafe(q.put_nowait, ev)

        fut = asyncio.ensure_future(N.run(call, put))
        fut.add_done_callback(lambda _f: q.put_nowait(done))
        try:
            while True:
                item = await q.get()
                if item is done:
                    break
                yield item
            fut.result()  # raises what the call raised
        finally:
            if not fut.done():
                fut.cancel()
                try:
                    await fut
                except BaseException:  # noqa: BLE001 - the cancellation is what counts
                    pass

    async def events(self, after: int = 0, *, follow: bool = False,
                     on_event: EventHandler = None) -> List[Event]:
        """:meth:`AgentSession.events`."""
        loop = asyncio.get_running_loop()
        return await N.run(self._sync.events, after, follow=follow,
                           on_event=N.on_loop(loop, on_event))

    async def cancel(self) -> None:
        await N.run(self._sync.cancel)

    async def info(self) -> Dict[str, Any]:
        return await N.run(self._sync.info)

    async def close(self) -> None:
        await N.run(self._sync.close)

    async def __aenter__(self) -> "AsyncAgentSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await N.run(self._sync.__exit__, None, None, None)

    send_sync = _twin("send")
    events_sync = _twin("events")
    cancel_sync = _twin("cancel")
    info_sync = _twin("info")
    close_sync = _twin("close")


class AsyncAgents:
    """The coding agents of a sandbox (``sandbox.agents``, async)."""

    def __init__(self, sync: Agents) -> None:
        self._sync = sync

    async def list(self, **kw: Any) -> List[AgentInfo]:
        """:meth:`Agents.list`."""
        return await N.run(self._sync.list, **kw)

    async def install(self, agent: str, *, on_event: EventHandler = None,
                      **kw: Any) -> Optional[str]:
        """:meth:`Agents.install`; ``on_event`` runs on the event loop."""
        loop = asyncio.get_running_loop()
        return await N.run(self._sync.install, agent, on_event=N.on_loop(loop, on_event), **kw)

    async def session(self, agent: str, **kw: Any) -> AsyncAgentSession:
        """:meth:`Agents.session`."""
        return AsyncAgentSession(await N.run(self._sync.session, agent, **kw))

    async def connect(self, session_id: str, **kw: Any) -> AsyncAgentSession:
        """:meth:`Agents.connect`."""
        return AsyncAgentSession(await N.run(self._sync.connect, session_id, **kw))

    list_sync = _twin("list")
    install_sync = _twin("install")

    def session_sync(self, agent: str, **kw: Any) -> AgentSession:
        """Blocking twin of :meth:`session` (a blocking session)."""
        return self._sync.session(agent, **kw)
