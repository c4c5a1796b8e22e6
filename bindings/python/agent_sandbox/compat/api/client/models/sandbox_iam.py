"""E2B's ``SandboxIam``, ``SandboxIamTokens`` and ``SandboxIamToken``
models (the create body's ``iam``). SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, Union

from ..types import UNSET, Unset


@dataclass
class SandboxIamToken:
    audience: str
    token_type: str

    def to_dict(self) -> Dict[str, Any]:
        return {"audience": self.audience, "tokenType": self.token_type}

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "SandboxIamToken":
        return cls(audience=src["audience"], token_type=src["tokenType"])


@dataclass
class SandboxIamTokens:
    additional_properties: Dict[str, SandboxIamToken] = field(default_factory=dict)

    def __setitem__(self, key: str, value: SandboxIamToken) -> None:
        self.additional_properties[key] = value

    def __getitem__(self, key: str) -> SandboxIamToken:
        return self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties

    def __iter__(self) -> Iterator[str]:
        return iter(self.additional_properties)

    def keys(self) -> Any:
        return self.additional_properties.keys()

    def to_dict(self) -> Dict[str, Any]:
        return {k: v.to_dict() for k, v in self.additional_properties.items()}

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "SandboxIamTokens":
        return cls({k: SandboxIamToken.from_dict(v) for k, v in src.items()})


@dataclass
class SandboxIam:
    tokens: Union[Unset, SandboxIamTokens] = UNSET

    def to_dict(self) -> Dict[str, Any]:
        return {} if isinstance(self.tokens, Unset) else {"tokens": self.tokens.to_dict()}

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "SandboxIam":
        t = src.get("tokens")
        return cls(tokens=UNSET if t is None else SandboxIamTokens.from_dict(t))
