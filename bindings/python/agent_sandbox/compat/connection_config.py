"""``e2b.connection_config``: E2B's ``ConnectionConfig``.

The connection settings E2B's SDK resolves from its arguments and the
``E2B_*`` variables (``E2B_API_KEY``, ``E2B_DOMAIN``, ``E2B_API_URL``,
``E2B_SANDBOX_URL``, ``E2B_DEBUG``). agent-sandbox's own client reads the
same variables (and their ``ASB_*`` twins) itself; this class is for E2B
programs that build one, e.g. to hand its values on as keyword arguments::

    cfg = ConnectionConfig(request_timeout=30)
    Sandbox.create(**cfg.get_api_params())
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, TypedDict

__all__ = ["ApiParams", "ConnectionConfig", "VolumeApiParams", "VolumeConnectionConfig",
           "REQUEST_TIMEOUT", "KEEPALIVE_PING_INTERVAL_SEC", "KEEPALIVE_PING_HEADER",
           "merge_api_params"]

REQUEST_TIMEOUT: float = 60.0
KEEPALIVE_PING_INTERVAL_SEC = 50
KEEPALIVE_PING_HEADER = "Keepalive-Ping-Interval"


class ApiParams(TypedDict, total=False):
    """E2B's connection options of a call (its ``**opts``)."""

    request_timeout: Optional[float]
    headers: Optional[Dict[str, str]]
    api_headers: Optional[Dict[str, str]]
    api_key: Optional[str]
    validate_api_key: Optional[bool]
    domain: Optional[str]
    api_url: Optional[str]
    debug: Optional[bool]
    sandbox_url: Optional[str]
    proxy: Any


def merge_api_params(bound: Optional[Mapping[str, Any]],
                     params: Mapping[str, Any]) -> Dict[str, Any]:
    """The options a class has bound (E2B's ``_bound_api_params``) under
    the call's own: a call's option wins unless it is None (then the bound
    one stays), and the environment comes after both (ConnectionConfig)."""
    merged = dict(bound or {})
    merged.update({k: v for k, v in params.items() if v is not None})
    return merged


def _env(name: str) -> Optional[str]:
    return os.environ.get(f"ASB_{name}") or os.environ.get(f"E2B_{name}") or None


class ConnectionConfig:
    """Domain, API key, URLs, debug mode, request timeout and headers."""

    envd_port = 49983

    def __init__(self, domain: Optional[str] = None, debug: Optional[bool] = None,
                 api_key: Optional[str] = None, validate_api_key: Optional[bool] = None,
                 api_url: Optional[str] = None, sandbox_url: Optional[str] = None,
                 request_timeout: Optional[float] = None,
                 headers: Optional[Dict[str, str]] = None,
                 api_headers: Optional[Dict[str, str]] = None,
                 extra_sandbox_headers: Optional[Dict[str, str]] = None,
                 proxy: Any = None, logger: Any = None) -> None:
        self.logger = logger
        # what was given or set in the environment (not E2B's cloud defaults,
        # which would point agent-sandbox's client away from the local engine)
        self._given = {k: v for k, v in dict(
            api_key=api_key or _env("API_KEY"), domain=domain or _env("DOMAIN"),
            api_url=api_url or _env("API_URL"), sandbox_url=sandbox_url or _env("SANDBOX_URL"),
            debug=debug, request_timeout=request_timeout,
            headers={**(headers or {}), **(api_headers or {})} or None).items() if v is not None}
        self.domain = domain or _env("DOMAIN") or "e2b.app"
        self.debug = debug if debug is not None else (_env("DEBUG") or "").lower() == "true"
        self.api_key = api_key or _env("API_KEY")
        self.validate_api_key = True if validate_api_key is None else validate_api_key
        self.headers = {**(headers or {}), **(api_headers or {})}
        self.extra_sandbox_headers = dict(extra_sandbox_headers or {})
        self.proxy = proxy
        self.request_timeout = REQUEST_TIMEOUT if request_timeout is None else request_timeout
        self._sandbox_url = sandbox_url or _env("SANDBOX_URL")
        self.api_url = (api_url or _env("API_URL") or
                        ("http://localhost:3000" if self.debug else f"https://api.{self.domain}"))

    def get_request_timeout(self, request_timeout: Optional[float] = None) -> Optional[float]:
        """The per-call timeout if given, else the configured one (0 = none)."""
        t = self.request_timeout if request_timeout is None else request_timeout
        return t or None

    def get_sandbox_url(self, sandbox_id: str, sandbox_domain: Optional[str] = None) -> str:
        """Where a sandbox's envd is reached (E2B_SANDBOX_URL when set)."""
        if self._sandbox_url:
            return self._sandbox_url
        return self.get_host(sandbox_id, sandbox_domain, self.envd_port)

    def get_host(self, sandbox_id: str, sandbox_domain: Optional[str], port: int) -> str:
        """The URL of a sandbox's port."""
        if self.debug:
            return f"http://localhost:{port}"
        return f"https://{port}-{sandbox_id}.{sandbox_domain or self.domain}"

    def get_api_params(self, **overrides: Any) -> Dict[str, Any]:
        """The settings given (arguments, variables) as keyword arguments of
        ``Sandbox.create``/``connect``, a call's ``overrides`` over them
        (its ``headers``/``api_headers`` added to the configured headers, as
        in E2B); what was not given is left to the client's own defaults
        (the local engine)."""
        params: Dict[str, Any] = dict(self._given)
        headers = {**self.headers, **(overrides.pop("headers", None) or {}),
                   **(overrides.pop("api_headers", None) or {})}
        params.update({k: v for k, v in overrides.items() if v is not None})
        if headers:
            params["headers"] = headers
        return params

    @property
    def sandbox_url(self) -> Optional[str]:
        return self._sandbox_url


class VolumeApiParams(TypedDict, total=False):
    """E2B's options of a volume's content calls (``VolumeConnectionConfig``'s)."""

    domain: Optional[str]
    debug: Optional[bool]
    token: Optional[str]
    api_url: Optional[str]
    request_timeout: Optional[float]
    headers: Optional[Dict[str, str]]
    logger: Any
    proxy: Any


class VolumeConnectionConfig:
    """E2B's ``VolumeConnectionConfig`` (``e2b.volume.connection_config``):
    where a volume's content API is, as E2B resolves it: ``domain`` (the
    volume's, else ``E2B_DOMAIN``, else E2B's), ``api_url`` (given, else
    ``E2B_VOLUME_API_URL``, else ``https://api.<domain>``), the volume's
    ``token``, ``debug``, ``request_timeout``, ``headers``, ``proxy``.
    ≈ A description only: agent-sandbox's volume file calls go through the
    library's client, to the engine the volume came from."""

    def __init__(self, domain: Optional[str] = None, debug: Optional[bool] = None,
                 token: Optional[str] = None, api_url: Optional[str] = None,
                 request_timeout: Optional[float] = None,
                 headers: Optional[Dict[str, str]] = None, logger: Any = None,
                 proxy: Any = None) -> None:
        self.domain = domain or _env("DOMAIN") or "e2b.app"
        self.debug = debug if debug is not None else (_env("DEBUG") or "").lower() == "true"
        self.token = token
        self.api_url = (api_url or _env("VOLUME_API_URL") or
                        ("http://localhost:8080" if self.debug else f"https://api.{self.domain}"))
        self.request_timeout = REQUEST_TIMEOUT if request_timeout is None else request_timeout
        self.headers = dict(headers or {})
        self.logger = logger
        self.proxy = proxy

    def get_request_timeout(self, request_timeout: Optional[float] = None) -> Optional[float]:
        t = self.request_timeout if request_timeout is None else request_timeout
        return t or None
