"""E2B's ``e2b.api`` over agent-sandbox: the module E2B's SDK (and its
tests) import its control-plane client from. Its endpoint functions
(``client.api.<tag>.<endpoint>.sync_detailed`` / ``asyncio_detailed``)
make the call through the C library (``asb_*``), not over HTTP of their
own, and answer E2B's ``Response`` with its generated models, so code
written against E2B's client (or a test that patches one of them) works
unchanged. Only the endpoints listed in docs/python-compat.md are here.
SPDX-License-Identifier: Apache-2.0
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional, Type
from urllib.parse import quote

from ...exceptions import (
    AuthenticationException,
    InvalidArgumentException,
    RateLimitException,
)
from .client.types import Response

__all__ = ["SandboxCreateResponse", "encode_path_param", "handle_api_exception"]


@dataclass
class SandboxCreateResponse:
    """What E2B's ``SandboxApi`` create and connect calls answer: the
    sandbox's id, domain, envd version and tokens."""

    sandbox_id: str
    sandbox_domain: Optional[str]
    envd_version: str
    envd_access_token: Optional[str]
    traffic_access_token: Optional[str]
    # the library's handle when the call was made here (not E2B's)
    _native: Optional[Any] = field(default=None, repr=False, compare=False)


def encode_path_param(value: str) -> str:
    """``value`` as one path segment, as JavaScript's
    ``encodeURIComponent`` encodes it (what E2B sends ids and names as)."""
    return quote(value, safe="-_.~!*'()")


def handle_api_exception(res: Response, default: Type[Exception] = Exception) -> Exception:
    """The exception for a failed call's response, as E2B's SDK picks it:
    401 authentication, 400 invalid argument, 429 rate limit, anything
    else ``default`` with the server's message."""
    message = ""
    try:
        body = json.loads(res.content or b"{}")
        message = body.get("message", "") if isinstance(body, dict) else ""
    except ValueError:
        message = (res.content or b"").decode(errors="replace")
    status = int(res.status_code)
    if status == 401:
        return AuthenticationException(f"{message}: Unauthorized, please check your credentials.")
    if status == 400:
        return InvalidArgumentException(message)
    if status == 429:
        return RateLimitException(f"{message}: Rate limit exceeded, please try again later.")
    return default(f"{status}: {message}")


