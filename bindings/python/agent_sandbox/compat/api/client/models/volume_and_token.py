"""E2B's ``VolumeAndToken`` model (POST /volumes, GET /volumes/{id}): the
volume with the token of its content API and, on E2B's BYOC clusters, the
``domain`` that API is under (the local engine sends none).
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Union

from ..types import UNSET, Unset


@dataclass
class VolumeAndToken:
    volume_id: str
    name: str
    token: str
    domain: Union[Unset, None, str] = UNSET
    size_mb: Union[Unset, int] = UNSET
    additional_properties: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        d = {**self.additional_properties, "volumeID": self.volume_id, "name": self.name,
             "token": self.token}
        if not isinstance(self.domain, Unset):
            d["domain"] = self.domain
        if not isinstance(self.size_mb, Unset):
            d["sizeMB"] = self.size_mb
        return d

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "VolumeAndToken":
        d = dict(src)
        out = cls(volume_id=d.pop("volumeID"), name=d.pop("name"), token=d.pop("token"),
                  domain=d.pop("domain", UNSET), size_mb=d.pop("sizeMB", UNSET))
        out.additional_properties = d
        return out
