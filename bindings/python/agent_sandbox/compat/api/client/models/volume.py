"""E2B's ``Volume`` model (GET /volumes lists them): id and name;
``size_mb`` is agent-sandbox's quota (an extension, unset when not known).
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Union

from ..types import UNSET, Unset


@dataclass
class Volume:
    volume_id: str
    name: str
    size_mb: Union[Unset, int] = UNSET
    additional_properties: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        d = {**self.additional_properties, "volumeID": self.volume_id, "name": self.name}
        if not isinstance(self.size_mb, Unset):
            d["sizeMB"] = self.size_mb
        return d

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "Volume":
        d = dict(src)
        out = cls(volume_id=d.pop("volumeID"), name=d.pop("name"),
                  size_mb=d.pop("sizeMB", UNSET))
        out.additional_properties = d
        return out
