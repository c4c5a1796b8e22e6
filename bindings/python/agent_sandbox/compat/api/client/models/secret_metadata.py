"""E2B's ``SecretMetadata``: string keys and values.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict


@dataclass
class SecretMetadata:
    additional_properties: Dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.additional_properties)

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "SecretMetadata":
        return cls(additional_properties={str(k): str(v) for k, v in dict(src).items()})

    def __getitem__(self, key: str) -> str:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: str) -> None:
        self.additional_properties[key] = value

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
