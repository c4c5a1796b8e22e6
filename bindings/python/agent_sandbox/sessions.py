"""Named sessions: remember a sandbox under a name, reconnect to it later
from any process or binding (the C core's ``asb_session_*``, one on-disk
format for every binding).

Sessions live in ``$ASB_SESSION_DIR``, else
``$XDG_STATE_HOME/agent-sandbox/sessions``, else
``~/.local/state/agent-sandbox/sessions``; a record holds the sandbox id,
template, engine API URL, creation time and your metadata, no credentials.

Every function is async with a ``*_sync`` twin::

    await sessions.save("triage", sandbox, {"task": "42"})
    sandbox = await sessions.load("triage")          # in another process
    for s in await sessions.list_all(): ...
    await sessions.delete("triage")
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Iterator, List, Mapping, Optional

from . import _native as N
from . import _sync as S
from . import lowlevel as ll
from ._async import Sandbox
from .exceptions import NotFoundException
from .models import SessionInfo

__all__ = ["save", "load", "get", "list_all", "delete", "save_sync", "load_sync", "get_sync",
           "list_all_sync", "delete_sync", "SessionMetadata"]


class SessionMetadata(Mapping[str, str]):
    """A session's metadata. Lookup by key; iterating lists the keys given
    when this process saved it (the C record is read by key only)."""

    def __init__(self, record: Any, keys: Optional[List[str]] = None) -> None:
        self._r = record
        self._keys = keys or []

    def __getitem__(self, key: str) -> str:
        v = ll.asb_session_metadata(self._r, key)
        if v is None:
            raise KeyError(key)
        return v

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and ll.asb_session_metadata(self._r, key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter([k for k in self._keys if k in self])

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __repr__(self) -> str:
        return f"SessionMetadata({dict(self)!r})"


def _info(record: Any) -> SessionInfo:
    return SessionInfo(
        name=ll.asb_session_name(record),
        sandbox_id=ll.asb_session_sandbox_id(record),
        template=ll.asb_session_template_id(record) or "",
        api_url=ll.asb_session_api_url(record) or "",
        created_at=_dt.datetime.fromtimestamp(ll.asb_session_created_at(record),
                                              tz=_dt.timezone.utc),
        metadata=SessionMetadata(record),  # type: ignore[arg-type]
    )


def _sync_sandbox(sandbox: Any) -> S.Sandbox:
    return sandbox._sync if isinstance(sandbox, Sandbox) else sandbox


def save_sync(name: str, sandbox: Any, metadata: Optional[Mapping[str, str]] = None) -> None:
    """Save ``sandbox`` (async or sync flavour) under ``name``, replacing an
    existing session of that name. Names: letters, digits, ``.``, ``_``, ``-``."""
    _sync_sandbox(sandbox).save_session(name, metadata)


def load_sync(name: str, **kw: Any) -> Sandbox:
    """Reconnect to the session's sandbox (resumed if paused). Raises
    :class:`NotFoundException` without such a session, and
    :class:`SandboxNotFoundException` when its sandbox is gone (the session
    is kept). Keywords: ``timeout``, ``request_timeout``, connection options."""
    return Sandbox(S.Sandbox.from_session(name, **kw))


def get_sync(name: str) -> SessionInfo:
    """A session's record, without connecting."""
    return _info(N.call(ll.asb_session_get, name, not_found=NotFoundException))


def list_all_sync() -> List[SessionInfo]:
    """Every session, by name."""
    lst = N.call(ll.asb_sessions_list)
    out = []
    for i in range(ll.asb_session_list_count(lst)):
        # Records are owned by the list: read each one's own copy.
        name = ll.asb_session_name(ll.asb_session_list_get(lst, i))
        try:
            out.append(get_sync(name))
        except NotFoundException:  # deleted meanwhile
            pass
    return out


def delete_sync(name: str) -> None:
    """Delete a session (its sandbox is not touched)."""
    N.call(ll.asb_session_delete, name, not_found=NotFoundException)


async def save(name: str, sandbox: Any, metadata: Optional[Mapping[str, str]] = None) -> None:
    await N.run(save_sync, name, sandbox, metadata)


async def load(name: str, **kw: Any) -> Sandbox:
    return await N.run(load_sync, name, **kw)


async def get(name: str) -> SessionInfo:
    return await N.run(get_sync, name)


async def list_all() -> List[SessionInfo]:
    return await N.run(list_all_sync)


async def delete(name: str) -> None:
    await N.run(delete_sync, name)


save.__doc__ = save_sync.__doc__
load.__doc__ = load_sync.__doc__
get.__doc__ = get_sync.__doc__
list_all.__doc__ = list_all_sync.__doc__
delete.__doc__ = delete_sync.__doc__
