"""POST /sandboxes/{sandboxID}/connect (E2B's
``post_sandboxes_sandbox_id_connect``): connect, resuming a paused
sandbox, through the library (asb_sandbox_connect). The answer's model
keeps the library's handle for ``agent_sandbox.compat``'s ``connect``.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any

from ..... import _conn
from ...... import _sync as S
from ......exceptions import AgentSandboxError
from ...._call import in_thread, ok
from ...models.connect_sandbox import ConnectSandbox
from ...models.sandbox import Sandbox as SandboxModel
from ...types import Response
from ._errors import error_response


def model(s: S.Sandbox) -> SandboxModel:
    return SandboxModel(client_id="local", envd_version=s.envd_version,
                        sandbox_id=s.sandbox_id, template_id="",
                        domain=s.sandbox_domain or None,
                        envd_access_token=s.envd_access_token,
                        traffic_access_token=s.traffic_access_token, _native=s)


def sync_detailed(sandbox_id: str, *, client: Any, body: ConnectSandbox) -> Response:
    try:
        s = S.Sandbox.connect(sandbox_id, timeout=body.timeout, **_conn(client.conn))
    except AgentSandboxError as exc:  # a status from the control plane is the answer
        if not exc.http_status:
            raise
        res = error_response(exc.http_status, exc.message)
        res._exc = exc  # type: ignore[attr-defined]  (compat raises the library's class)
        return res
    return ok(200, model(s))


async def asyncio_detailed(sandbox_id: str, *, client: Any, body: ConnectSandbox) -> Response:
    return await in_thread(sync_detailed, sandbox_id, client=client, body=body)


__all__ = ["asyncio_detailed", "model", "sync_detailed"]
