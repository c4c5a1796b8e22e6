"""E2B's ``AuthenticatedClient``: here it holds the connection options
(``api_key``, ``domain``, ``api_url``, ``request_timeout``, ``headers``,
...) the endpoint functions give the C library's client.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any, Dict


class AuthenticatedClient:
    # As E2B's (httpx's default): redirects are not followed; the C
    # library's transport follows none either (an upload answered 307 fails).
    _follow_redirects = False

    def __init__(self, **conn: Any) -> None:
        self.conn: Dict[str, Any] = {k: v for k, v in conn.items() if v is not None}

    def native(self) -> Any:
        """The C library's client for these options (shared, as all of
        agent_sandbox's are)."""
        from ... import _conn
        from .... import _native as N

        return N.client(**_conn(self.conn))


Client = AuthenticatedClient
