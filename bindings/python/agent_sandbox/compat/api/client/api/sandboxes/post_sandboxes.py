"""POST /sandboxes (E2B's ``post_sandboxes``): create a sandbox from E2B's
``NewSandbox`` body, through the library (asb_sandbox_create), which
sends the same fields. ``agent_sandbox.compat``'s ``Sandbox.create``
builds the body as E2B's SDK does and calls this; the answer's model
keeps the library's handle.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ..... import _conn
from ...... import _sync as S
from ......exceptions import AgentSandboxError
from ...._call import in_thread, ok
from ...models.new_sandbox import NewSandbox
from ...types import Response, Unset
from ._errors import error_response
from .post_sandboxes_sandbox_id_connect import model


def _given(v: Any, default: Any = None) -> Any:
    return default if isinstance(v, Unset) else v


def _plain(v: Any) -> Any:
    return v.to_dict() if hasattr(v, "to_dict") else v


def _mounts(v: Any) -> Optional[Dict[str, str]]:
    """E2B's volumeMounts list ([{name, path}]) as the library's {path: name}."""
    if not v:
        return None
    out: Dict[str, str] = {}
    for m in v:
        m = _plain(m)
        out[m["path"]] = m["name"]
    return out


def create_options(body: NewSandbox) -> Dict[str, Any]:
    """The body's fields as the native ``Sandbox.create``'s arguments (what
    E2B's API does when a field is left out: no auto-pause, a pause keeps
    memory, no auto-resume). ``secure`` and ``iam`` are not options here:
    the engine gives every sandbox its tokens and mints no IAM tokens."""
    auto_resume = _given(body.auto_resume)
    mcp = _given(body.mcp)
    return dict(template=body.template_id, timeout=_given(body.timeout, 300),
                metadata=_given(body.metadata), envs=_given(body.env_vars),
                auto_pause=bool(_given(body.auto_pause, False)),
                keep_memory=bool(_given(body.auto_pause_memory, True)),
                auto_resume=bool(auto_resume.enabled) if auto_resume is not None else False,
                allow_internet_access=_given(body.allow_internet_access),
                network=_plain(_given(body.network)),
                volume_mounts=_mounts(_given(body.volume_mounts)),
                mcp=_plain(mcp) if mcp else None)


def sync_detailed(*, client: Any, body: NewSandbox) -> Response:
    try:
        s = S.Sandbox.create(**create_options(body), **_conn(client.conn))
    except AgentSandboxError as exc:  # a status from the control plane is the answer
        if not exc.http_status:
            raise
        res = error_response(exc.http_status, exc.message)
        res._exc = exc  # type: ignore[attr-defined]  (compat raises the library's class)
        return res
    return ok(201, model(s))


async def asyncio_detailed(*, client: Any, body: NewSandbox) -> Response:
    return await in_thread(sync_detailed, client=client, body=body)


__all__ = ["asyncio_detailed", "create_options", "sync_detailed"]
