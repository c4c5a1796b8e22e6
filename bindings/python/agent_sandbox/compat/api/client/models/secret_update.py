"""E2B's ``SecretUpdate`` (POST /secrets/{id}). SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Union

from ..types import UNSET, Unset
from .secret_metadata import SecretMetadata


@dataclass
class SecretUpdate:
    value: str
    metadata: Union[Unset, SecretMetadata] = UNSET

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"value": self.value}
        if not isinstance(self.metadata, Unset):
            d["metadata"] = self.metadata.to_dict()
        return d

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "SecretUpdate":
        md = src.get("metadata", UNSET)
        return cls(value=src["value"],
                   metadata=UNSET if md is UNSET else SecretMetadata.from_dict(md))

    def __repr__(self) -> str:
        return f"SecretUpdate(value=..., metadata={self.metadata!r})"
