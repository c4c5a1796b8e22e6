"""E2B's ``Error`` model ({code, message}). SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict


@dataclass
class Error:
    code: int
    message: str

    def to_dict(self) -> Dict[str, Any]:
        return {"code": self.code, "message": self.message}

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "Error":
        return cls(code=int(src.get("code", 0)), message=str(src.get("message", "")))
