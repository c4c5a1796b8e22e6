"""A sandbox's network config (E2B's ``allow_internet_access`` and
``network``) between Python and the C library's JSON (``network_json``).

Python callers write E2B's Python names (``allow_out``, ``deny_out``,
``rules``, ``egress_proxy``, ``allow_public_traffic``,
``mask_request_host``) or its wire names (``allowOut``, ...); the library
takes E2B's ``SandboxNetworkConfig`` JSON and checks its shape (a mistake
is an :class:`InvalidArgumentException` naming the member). As in E2B's
SDKs, ``allow_out``/``deny_out`` may be callables given a
:class:`SelectorContext` and a rule's ``transform`` a callable given a
:class:`TransformContext`. What the engine reports comes back with the
Python names.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, TypedDict, Union

from . import exceptions as E

ALL_TRAFFIC = "0.0.0.0/0"
"""E2B's "all traffic" sentinel: ``deny_out=[ALL_TRAFFIC]`` is internet off."""

_WIRE = {
    "allow_out": "allowOut",
    "deny_out": "denyOut",
    "rules": "rules",
    "egress_proxy": "egressProxy",
    "allow_public_traffic": "allowPublicTraffic",
    "mask_request_host": "maskRequestHost",
    # the local engine's own limits (not E2B's)
    "egress_bytes_per_second": "egressBytesPerSecond",
    "max_connections": "maxConnections",
}
_PY = {v: k for k, v in _WIRE.items()}


@dataclass(frozen=True)
class SelectorContext:
    """What an ``allow_out``/``deny_out`` callable is given (E2B's
    ``SandboxNetworkSelectorContext``)."""

    all_traffic: str
    rules: Mapping[str, List[Any]]


def _token_name_ok(name: Any) -> None:
    if (not isinstance(name, str) or not name or any(c in name for c in "{}")
            or any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f for c in name)):
        raise E.InvalidArgumentException(
            f"iam token name {name!r} is not usable: a token name must be a non-empty string "
            "and cannot contain '{', '}' or control characters, because it is interpolated "
            "into the '${e2b.identity.tokens.<name>}' placeholder the egress proxy resolves.")


class _Placeholders(Mapping):  # type: ignore[type-arg]
    """``ctx.iam.tokens``: a registered token's name gives E2B's placeholder
    for it (``${e2b.identity.tokens.<name>}``), which the egress proxy
    replaces. Every lookup (``[name]``, ``.get(name)``) goes through
    ``__getitem__``, so an unregistered name is an error, never ``None``;
    ``in`` and iteration see the registered names only. ``names=None``
    (an update, whose body has no iam): any usable name resolves."""

    def __init__(self, names: Optional[Any] = None) -> None:
        self._names = None if names is None else tuple(dict.fromkeys(names))

    def __getitem__(self, name: str) -> str:
        if self._names is not None and name not in self._names:
            hint = (f"Registered tokens: {', '.join(repr(n) for n in self._names)}."
                    if self._names else
                    f"Pass it to Sandbox.create as iam={{'tokens': {{{name!r}: "
                    "Secret.iam_token(audience=..., token_type=...)}}.")
            raise E.InvalidArgumentException(
                f"Network transform references iam token {name!r}, which is not registered. "
                + hint)
        _token_name_ok(name)
        return "${e2b.identity.tokens." + name + "}"

    def __contains__(self, name: object) -> bool:
        return self._names is not None and name in self._names

    def __iter__(self) -> Any:
        return iter(self._names or ())

    def __len__(self) -> int:
        return len(self._names or ())

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]


@dataclass(frozen=True)
class _Iam:
    tokens: Mapping[str, str]


@dataclass(frozen=True)
class TransformContext:
    """What a rule's ``transform`` callable is given (E2B's
    ``SandboxNetworkTransformContext``): ``ctx.iam.tokens[name]`` is a
    placeholder string, never a value."""

    iam: _Iam


def _selector(v: Any, rules: Mapping[str, Any], name: str) -> Any:
    if callable(v):
        v = v(SelectorContext(all_traffic=ALL_TRAFFIC, rules=rules))
    if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)):
        raise E.InvalidArgumentException(f"network {name} must be a list of strings")
    return list(v)


def _rules(v: Any, tokens: Optional[Any] = None) -> Dict[str, Any]:
    if not isinstance(v, Mapping):
        raise E.InvalidArgumentException("network rules must map a domain to a list of rules")
    ctx = TransformContext(iam=_Iam(tokens=_Placeholders(tokens)))
    out: Dict[str, Any] = {}
    for host, rules in v.items():
        if not isinstance(rules, (list, tuple)):
            raise E.InvalidArgumentException(f"network rules for {host!r} must be a list")
        lst = []
        for r in rules:
            t = r.get("transform") if isinstance(r, Mapping) else None
            if callable(t):
                if inspect.iscoroutinefunction(t):
                    raise E.InvalidArgumentException(
                        f"network transform callable for {host!r} must be synchronous")
                t = t(ctx)
                if not isinstance(t, Mapping):
                    raise E.InvalidArgumentException(
                        f"network transform callable for {host!r} must return a transform "
                        f"dict, got {type(t).__name__}")
            lst.append({} if t is None else {"transform": dict(t)})
        out[str(host)] = lst
    return out


def _proxy(v: Any) -> Any:
    if not isinstance(v, Mapping) or not isinstance(v.get("address"), str):
        raise E.InvalidArgumentException(
            "network egress_proxy must be a mapping with a string 'address' (host:port)")
    return {k: v[k] for k in ("address", "username", "password") if v.get(k) is not None}


def to_json(network: Optional[Mapping[str, Any]], *, update: bool = False) -> Optional[str]:
    """E2B's network option as the library's ``network_json`` (None: none).
    Unknown members are passed on for the library to name in its error."""
    body = to_wire(network, update=update)
    return None if body is None else json.dumps(body)


def to_wire(network: Optional[Mapping[str, Any]], *, update: bool = False,
            tokens: Optional[Any] = None) -> Optional[Dict[str, Any]]:
    """The wire body (E2B's names) of the network option: callables
    resolved, ``tokens`` the registered iam token names a transform may
    reference (None: any)."""
    if network is None:
        return None
    if not isinstance(network, Mapping):
        raise E.InvalidArgumentException("network must be a mapping (E2B's SandboxNetworkOpts)")
    body: Dict[str, Any] = {}
    rules = network.get("rules") or {}
    for key, v in network.items():
        wire = _WIRE.get(key, key)
        if update and wire in ("allow_internet_access", "allowInternetAccess"):
            continue  # the caller passes it on as its own parameter
        if v is None:
            continue  # E2B: None is "not set"
        if wire in ("allowOut", "denyOut"):
            v = _selector(v, rules, _PY[wire])
        elif wire == "rules":
            v = _rules(v, tokens)
        elif wire == "egressProxy":
            v = _proxy(v)
        if wire in body:
            raise E.InvalidArgumentException(f"network {key!r} is given twice")
        body[wire] = v
    return body


def internet(allow: Optional[bool]) -> int:
    """The library's tri-state: None the default (allowed), True 1, False -1."""
    return 0 if allow is None else (1 if allow else -1)


def from_json(text: Optional[str]) -> Optional[Dict[str, Any]]:
    """The engine's ``network`` (JSON) with E2B's Python names, or None."""
    if not text:
        return None
    try:
        d = json.loads(text)
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None
    out = {_PY.get(k, k): v for k, v in d.items()}
    proxy = out.get("egress_proxy")
    if isinstance(proxy, dict):
        proxy.pop("password", None)  # E2B's info never has it
    elif "egress_proxy" in out:
        del out["egress_proxy"]
    return out


# ---- E2B's option types (agent_sandbox.compat exports them by E2B's names) ----

Selector = Union[List[str], Callable[[SelectorContext], List[str]]]


class Transform(TypedDict, total=False):
    """Headers set on a matching egress request (E2B's SandboxNetworkTransform)."""

    headers: Dict[str, str]


class Rule(TypedDict, total=False):
    """One rule of a domain (E2B's SandboxNetworkRule): a static transform or
    a callable given a :class:`TransformContext`."""

    transform: Union[Transform, Callable[[TransformContext], Transform]]


Rules = Dict[str, List[Rule]]


class EgressProxy(TypedDict, total=False):
    """A SOCKS5 upstream for all egress (E2B's SandboxEgressProxyOpts)."""

    address: str
    username: str
    password: str


class EgressProxyInfo(TypedDict, total=False):
    """The egress proxy as reported: never its password."""

    address: str
    username: str


class NetworkOpts(TypedDict, total=False):
    """``network=`` at create (E2B's SandboxNetworkOpts)."""

    allow_out: Selector
    deny_out: Selector
    rules: Rules
    egress_proxy: EgressProxy
    allow_public_traffic: bool
    mask_request_host: str
    egress_bytes_per_second: int
    max_connections: int



class NetworkUpdate(TypedDict, total=False):
    """``update_network(...)`` (E2B's SandboxNetworkUpdate): what is left out
    is cleared."""

    allow_out: Selector
    deny_out: Selector
    rules: Rules
    egress_proxy: EgressProxy
    allow_internet_access: bool
    egress_bytes_per_second: int
    max_connections: int



class NetworkInfo(TypedDict, total=False):
    """``SandboxInfo.network`` (E2B's SandboxNetworkInfo)."""

    allow_out: List[str]
    deny_out: List[str]
    rules: Dict[str, List[Dict[str, Any]]]
    egress_proxy: EgressProxyInfo
    allow_public_traffic: bool
    mask_request_host: str
    egress_bytes_per_second: int
    max_connections: int
