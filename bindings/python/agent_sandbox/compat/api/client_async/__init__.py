"""E2B's ``e2b.api.client_async``: ``get_api_client(config)``.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any

from ..client.client import AuthenticatedClient


def get_api_client(config: Any, **kwargs: Any) -> AuthenticatedClient:
    """A client for a ``ConnectionConfig`` (its given options) or a dict."""
    conn = config.get_api_params() if hasattr(config, "get_api_params") else dict(config)
    return AuthenticatedClient(**conn)
