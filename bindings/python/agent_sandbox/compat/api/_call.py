"""How the endpoint functions call the C library and answer E2B's
``Response``: a call that got an HTTP status from the control plane
answers it (with E2B's ``Error`` model and body), as E2B's generated
client does, so callers check ``status_code``; a call that got none (no
connection, a cancel) raises the library's exception.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any, Callable, Dict, Optional, Tuple

from ... import _native as N
from ... import lowlevel as ll
from .client.models.error import Error
from .client.types import Response


def call_options(client: Any) -> Any:
    o = ll.asb_call_options()
    t = client.conn.get("request_timeout")
    if t:
        o.timeout_ms = N.ms(t)
    o.cancel = N.current_cancel()
    return o


def invoke(fn: Callable[..., Any], *args: Any) -> Tuple[Optional[Response], Any]:
    """(None, outputs) on success, (an error Response, None) for a status."""
    r = fn(*args)
    rc, out = (r[0], r[1] if len(r) == 2 else r[1:]) if type(r) is list else (r, None)
    if rc >= 0:
        return None, out
    code, http, message, *_ = ll.asbpy_error_last()
    if code != rc or not http:
        raise N.make_error(rc)
    body = json.dumps({"code": http, "message": message}).encode()
    return Response(status_code=HTTPStatus(http), content=body, headers={},
                    parsed=Error(code=http, message=message)), None


def ok(status: int, parsed: Any = None, headers: Optional[Dict[str, str]] = None) -> Response:
    return Response(status_code=HTTPStatus(status), content=b"", headers=headers or {},
                    parsed=parsed)


async def in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The sync function on the library's threads (cancellable, as every
    async call of agent_sandbox)."""
    return await N.run(fn, *args, **kwargs)


__all__ = ["call_options", "in_thread", "invoke", "ok"]
