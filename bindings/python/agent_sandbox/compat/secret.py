"""E2B's ``Secret`` and ``AsyncSecret`` (``e2b.secret``) over agent-sandbox.

A secret's value goes to the control plane (create, update) and never
comes back; a sandbox's egress header rules use it as
``Secret.fill(name)`` = ``${e2b.secrets.<name>}``, which the engine's
egress proxy replaces with the value in the request it sends on
(docs/egress.md). The calls go through ``e2b.api``'s secrets endpoints
(:mod:`agent_sandbox.compat.api`), over the C library's asb_secrets_*, as
E2B's go through its generated client.
SPDX-License-Identifier: Apache-2.0
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, TypedDict

from ..exceptions import InvalidArgumentException, SecretException, SecretNotFoundException
from .api import handle_api_exception
from .api.client.api.secrets import (
    delete_secrets_secret_id,
    get_secrets,
    get_secrets_secret_id,
    post_secrets,
    post_secrets_secret_id,
)
from .api.client.models import Error, NewSecret, SecretMetadata, SecretUpdate
from .api.client.types import UNSET
from .api.client_async import get_api_client as _async_client
from .api.client_sync import get_api_client as _sync_client
from .connection_config import ConnectionConfig

__all__ = ["Secret", "AsyncSecret", "SecretInfo", "SecretPaginator", "AsyncSecretPaginator",
           "SandboxIamToken"]

_BAD_NAME = re.compile(r"[{}\x00-\x1f\x7f-\x9f]")


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name or _BAD_NAME.search(name):
        raise InvalidArgumentException(
            f"secret name {name!r} is not usable: a secret name must be a non-empty string and "
            "cannot contain '{', '}' or control characters, because it is interpolated into the "
            "'${e2b.secrets.<name>}' placeholder the runtime resolves.")


@dataclass
class SecretInfo:
    """A secret's metadata (E2B's ``SecretInfo``); never its value."""

    secret_id: str
    name: str
    version: int
    metadata: Dict[str, str]
    created_at: _dt.datetime
    updated_at: _dt.datetime

    @classmethod
    def _from_model(cls, m: Any) -> "SecretInfo":
        return cls(secret_id=m.secret_id, name=m.name, version=m.current_version,
                   metadata=dict(m.metadata.additional_properties), created_at=m.created_at,
                   updated_at=m.updated_at)


class SandboxIamToken(TypedDict):
    """A workload identity token definition (E2B's ``SandboxIamToken``,
    from ``Secret.iam_token``; a dict). agent-sandbox mints no identity
    tokens: passing ``iam`` to ``create`` warns and is ignored."""

    audience: str
    token_type: str


def _md(metadata: Optional[Mapping[str, str]]) -> Any:
    return UNSET if metadata is None else SecretMetadata(additional_properties=dict(metadata))


def _info(res: Any, missing: Optional[str] = None) -> SecretInfo:
    if missing is not None and int(res.status_code) == 404:
        raise SecretNotFoundException(f"Secret {missing} not found")
    if int(res.status_code) >= 300:
        raise handle_api_exception(res, SecretException)
    if res.parsed is None:
        raise SecretException("Body of the request is None")
    if isinstance(res.parsed, Error):
        raise SecretException(f"{res.parsed.message}: Request failed")
    return SecretInfo._from_model(res.parsed)


class _PaginatorBase:
    def __init__(self, limit: Optional[int] = None, next_token: Optional[str] = None,
                 **opts: Any) -> None:
        self.limit = limit
        self._next_token = next_token
        self._has_next = True
        self._opts = opts

    @property
    def has_next(self) -> bool:
        return self._has_next

    @property
    def next_token(self) -> Optional[str]:
        return self._next_token

    def _args(self, opts: Dict[str, Any]) -> Dict[str, Any]:
        if not self._has_next:
            raise Exception("No more items to fetch")
        return dict(limit=self.limit if self.limit else UNSET,
                    next_token=self._next_token if self._next_token else UNSET)

    def _page(self, res: Any) -> List[SecretInfo]:
        if int(res.status_code) >= 300:
            raise handle_api_exception(res, SecretException)
        self._next_token = res.headers.get("x-next-token") or None
        self._has_next = self._next_token is not None
        if res.parsed is None:
            return []
        if isinstance(res.parsed, Error):
            raise SecretException(f"{res.parsed.message}: Request failed")
        return [SecretInfo._from_model(s) for s in res.parsed]

    def _config(self, opts: Dict[str, Any]) -> ConnectionConfig:
        return ConnectionConfig(**{**self._opts, **opts})


class SecretPaginator(_PaginatorBase):
    """``Secret.list()``: ``has_next``, ``next_token``, ``next_items()``."""

    def next_items(self, **opts: Any) -> List[SecretInfo]:
        args = self._args(opts)
        return self._page(get_secrets.sync_detailed(client=_sync_client(self._config(opts)),
                                                    **args))


class AsyncSecretPaginator(_PaginatorBase):
    """``AsyncSecret.list()``: ``await next_items()``."""

    async def next_items(self, **opts: Any) -> List[SecretInfo]:
        args = self._args(opts)
        return self._page(await get_secrets.asyncio_detailed(
            client=_async_client(self._config(opts)), **args))


class _SecretBase:
    @staticmethod
    def fill(secret: str) -> str:
        """The placeholder ``${e2b.secrets.<secret>}`` for a header rule's
        value (no call: an unknown name fails at egress, with 502)."""
        _check_name(secret)
        return f"${{e2b.secrets.{secret}}}"

    @staticmethod
    def iam_token(*, audience: str, token_type: str) -> SandboxIamToken:
        return SandboxIamToken(audience=audience, token_type=token_type)


class Secret(_SecretBase):
    """E2B's ``Secret`` (sync): ``create``, ``update``, ``get_info``,
    ``list``, ``exists``, ``destroy``, ``fill``; E2B's connection options
    (``api_key``, ``domain``, ``api_url``, ``request_timeout``, ...)."""

    @classmethod
    def create(cls, name: str, value: str, metadata: Optional[Dict[str, str]] = None,
               **opts: Any) -> SecretInfo:
        res = post_secrets.sync_detailed(client=_sync_client(ConnectionConfig(**opts)),
                                         body=NewSecret(name=name, value=value,
                                                        metadata=_md(metadata)))
        return _info(res)

    @classmethod
    def update(cls, secret: str, value: str, metadata: Optional[Dict[str, str]] = None,
               **opts: Any) -> SecretInfo:
        res = post_secrets_secret_id.sync_detailed(
            secret, client=_sync_client(ConnectionConfig(**opts)),
            body=SecretUpdate(value=value, metadata=_md(metadata)))
        return _info(res, secret)

    @classmethod
    def get_info(cls, secret: str, **opts: Any) -> SecretInfo:
        res = get_secrets_secret_id.sync_detailed(secret,
                                                  client=_sync_client(ConnectionConfig(**opts)))
        return _info(res, secret)

    @classmethod
    def list(cls, limit: Optional[int] = None, next_token: Optional[str] = None,
             **opts: Any) -> SecretPaginator:
        return SecretPaginator(limit=limit, next_token=next_token, **opts)

    @classmethod
    def exists(cls, secret: str, **opts: Any) -> bool:
        try:
            cls.get_info(secret, **opts)
            return True
        except SecretNotFoundException:
            return False

    @classmethod
    def destroy(cls, secret: str, **opts: Any) -> bool:
        res = delete_secrets_secret_id.sync_detailed(
            secret, client=_sync_client(ConnectionConfig(**opts)))
        if int(res.status_code) == 404:
            return False
        if int(res.status_code) >= 300:
            raise handle_api_exception(res, SecretException)
        return True


class AsyncSecret(_SecretBase):
    """E2B's ``AsyncSecret``: :class:`Secret`'s calls, awaited."""

    @classmethod
    async def create(cls, name: str, value: str, metadata: Optional[Dict[str, str]] = None,
                     **opts: Any) -> SecretInfo:
        res = await post_secrets.asyncio_detailed(
            client=_async_client(ConnectionConfig(**opts)),
            body=NewSecret(name=name, value=value, metadata=_md(metadata)))
        return _info(res)

    @classmethod
    async def update(cls, secret: str, value: str, metadata: Optional[Dict[str, str]] = None,
                     **opts: Any) -> SecretInfo:
        res = await post_secrets_secret_id.asyncio_detailed(
            secret, client=_async_client(ConnectionConfig(**opts)),
            body=SecretUpdate(value=value, metadata=_md(metadata)))
        return _info(res, secret)

    @classmethod
    async def get_info(cls, secret: str, **opts: Any) -> SecretInfo:
        res = await get_secrets_secret_id.asyncio_detailed(
            secret, client=_async_client(ConnectionConfig(**opts)))
        return _info(res, secret)

    @classmethod
    def list(cls, limit: Optional[int] = None, next_token: Optional[str] = None,
             **opts: Any) -> AsyncSecretPaginator:
        return AsyncSecretPaginator(limit=limit, next_token=next_token, **opts)

    @classmethod
    async def exists(cls, secret: str, **opts: Any) -> bool:
        try:
            await cls.get_info(secret, **opts)
            return True
        except SecretNotFoundException:
            return False

    @classmethod
    async def destroy(cls, secret: str, **opts: Any) -> bool:
        res = await delete_secrets_secret_id.asyncio_detailed(
            secret, client=_async_client(ConnectionConfig(**opts)))
        if int(res.status_code) == 404:
            return False
        if int(res.status_code) >= 300:
            raise handle_api_exception(res, SecretException)
        return True
