"""E2B's ``NewVolume`` (POST /volumes): the volume's name; ``size_mb``
(agent-sandbox's quota, MiB; unset: the engine's default) is an extension.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Union

from ..types import UNSET, Unset


@dataclass
class NewVolume:
    name: str
    size_mb: Union[Unset, int] = UNSET

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"name": self.name}
        if not isinstance(self.size_mb, Unset):
            d["sizeMB"] = self.size_mb
        return d

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "NewVolume":
        return cls(name=src["name"], size_mb=src.get("sizeMB", UNSET))
