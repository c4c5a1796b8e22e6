"""E2B's ``Secret`` model (what the API answers; never a value).
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Dict

from .secret_metadata import SecretMetadata


def _iso(t: _dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _parse(s: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))


@dataclass
class Secret:
    secret_id: str
    name: str
    current_version: int
    metadata: SecretMetadata
    created_at: _dt.datetime
    updated_at: _dt.datetime
    additional_properties: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {**self.additional_properties, "secretID": self.secret_id, "name": self.name,
                "currentVersion": self.current_version, "metadata": self.metadata.to_dict(),
                "createdAt": _iso(self.created_at), "updatedAt": _iso(self.updated_at)}

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "Secret":
        d = dict(src)
        out = cls(secret_id=d.pop("secretID"), name=d.pop("name"),
                  current_version=int(d.pop("currentVersion")),
                  metadata=SecretMetadata.from_dict(d.pop("metadata", {}) or {}),
                  created_at=_parse(d.pop("createdAt")), updated_at=_parse(d.pop("updatedAt")))
        out.additional_properties = d
        return out
