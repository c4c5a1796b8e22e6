"""E2B's ``NewSecret`` (POST /secrets). SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Union

from ..types import UNSET, Unset
from .secret_metadata import SecretMetadata


@dataclass
class NewSecret:
    name: str
    value: str
    metadata: Union[Unset, SecretMetadata] = UNSET

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"name": self.name, "value": self.value}
        if not isinstance(self.metadata, Unset):
            d["metadata"] = self.metadata.to_dict()
        return d

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "NewSecret":
        md = src.get("metadata", UNSET)
        return cls(name=src["name"], value=src["value"],
                   metadata=UNSET if md is UNSET else SecretMetadata.from_dict(md))

    def __repr__(self) -> str:  # the value stays out of logs and tracebacks
        return f"NewSecret(name={self.name!r}, value=..., metadata={self.metadata!r})"
