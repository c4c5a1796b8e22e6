"""E2B's network models: ``SandboxNetworkConfig`` (create's ``network`` and
get_info's), ``SandboxEgressProxyConfigType0``, ``SandboxNetworkRules``
and ``SandboxNetworkUpdate`` (PUT /sandboxes/{id}/network), with E2B's
wire names. SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from ..types import UNSET, Unset


@dataclass
class SandboxEgressProxyConfigType0:
    address: str
    username: Union[Unset, str] = UNSET
    password: Union[Unset, str] = UNSET

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"address": self.address}
        for k in ("username", "password"):
            v = getattr(self, k)
            if not isinstance(v, Unset) and v is not None:
                d[k] = v
        return d

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "SandboxEgressProxyConfigType0":
        return cls(address=src["address"], username=src.get("username", UNSET),
                   password=src.get("password", UNSET))

    def __repr__(self) -> str:  # the password stays out of logs
        return f"SandboxEgressProxyConfigType0(address={self.address!r}, username=...)"


@dataclass
class SandboxNetworkRules:
    """domain -> rules (``[{"transform": {"headers": {...}}}]``), as sent."""

    additional_properties: Dict[str, List[Any]] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {k: list(v) for k, v in self.additional_properties.items()}

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "SandboxNetworkRules":
        return cls(additional_properties={k: list(v) for k, v in src.items()})


_FIELDS = (("allow_out", "allowOut"), ("deny_out", "denyOut"), ("rules", "rules"),
           ("egress_proxy", "egressProxy"), ("allow_public_traffic", "allowPublicTraffic"),
           ("mask_request_host", "maskRequestHost"))


def _plain(v: Any) -> Any:
    return v.to_dict() if hasattr(v, "to_dict") else v


@dataclass
class SandboxNetworkConfig:
    allow_out: Union[Unset, List[str]] = UNSET
    deny_out: Union[Unset, List[str]] = UNSET
    rules: Union[Unset, SandboxNetworkRules] = UNSET
    egress_proxy: Union[Unset, None, SandboxEgressProxyConfigType0] = UNSET
    allow_public_traffic: Union[Unset, bool] = UNSET
    mask_request_host: Union[Unset, str] = UNSET
    # members E2B's model does not name (the local engine's own limits,
    # egressBytesPerSecond and maxConnections), sent as they are
    additional_properties: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        out = dict(self.additional_properties)
        out.update({wire: _plain(getattr(self, py)) for py, wire in _FIELDS
                    if not isinstance(getattr(self, py), Unset)})
        return out

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "SandboxNetworkConfig":
        kw: Dict[str, Any] = {py: src[wire] for py, wire in _FIELDS if wire in src}
        if isinstance(kw.get("egress_proxy"), dict):
            kw["egress_proxy"] = SandboxEgressProxyConfigType0.from_dict(kw["egress_proxy"])
        if isinstance(kw.get("rules"), dict):
            kw["rules"] = SandboxNetworkRules.from_dict(kw["rules"])
        names = {wire for _, wire in _FIELDS}
        return cls(**kw, additional_properties={k: v for k, v in src.items() if k not in names})


@dataclass
class SandboxNetworkUpdate:
    """The PUT /sandboxes/{id}/network body: what it leaves out is cleared."""

    body: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {k: _plain(v) for k, v in self.body.items()}


