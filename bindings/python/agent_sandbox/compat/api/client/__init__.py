"""E2B's generated client package (``e2b.api.client``) over agent-sandbox.
SPDX-License-Identifier: Apache-2.0"""

from .client import AuthenticatedClient, Client

__all__ = ["AuthenticatedClient", "Client"]
