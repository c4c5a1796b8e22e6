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
from typing import Any, Dict, Optional

__all__ = ["ConnectionConfig", "REQUEST_TIMEOUT", "KEEPALIVE_PING_INTERVAL_SEC",
           "KEEPALIVE_PING_HEADER"]

REQUEST_TIMEOUT: float = 60.0
KEEPALIVE_PING_INTERVAL_SEC = 50
KEEPALIVE_PING_HEADER = "Keepalive-Ping-Interval"


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
        ``Sandbox.create``/``connect``; what was not given is left to the
        client's own defaults (the local engine)."""
        params: Dict[str, Any] = dict(self._given)
        params.update({k: v for k, v in overrides.items() if v is not None})
        return params

    @property
    def sandbox_url(self) -> Optional[str]:
        return self._sandbox_url
