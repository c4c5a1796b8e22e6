"""E2B's ``Sandbox`` model (what create and connect answer).
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Union

from ..types import UNSET, Unset

_FIELDS = (("template_id", "templateID"), ("sandbox_id", "sandboxID"),
           ("client_id", "clientID"), ("envd_version", "envdVersion"),
           ("alias", "alias"), ("envd_access_token", "envdAccessToken"),
           ("traffic_access_token", "trafficAccessToken"), ("domain", "domain"))


@dataclass
class Sandbox:
    client_id: str
    envd_version: str
    sandbox_id: str
    template_id: str
    alias: Union[Unset, str] = UNSET
    domain: Union[None, Unset, str] = UNSET
    envd_access_token: Union[Unset, str] = UNSET
    traffic_access_token: Union[None, Unset, str] = UNSET
    additional_properties: Dict[str, Any] = field(default_factory=dict)
    # the library's handle when the call was made here (not part of E2B's model)
    _native: Optional[Any] = field(default=None, repr=False, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        out = dict(self.additional_properties)
        for py, wire in _FIELDS:
            v = getattr(self, py)
            if not isinstance(v, Unset):
                out[wire] = v
        return out

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "Sandbox":
        d = dict(src)
        kw = {py: d.pop(wire) for py, wire in _FIELDS if wire in d}
        out = cls(**kw)
        out.additional_properties = d
        return out
