"""E2B's ``ConnectSandbox`` ({timeout}). SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict


@dataclass
class ConnectSandbox:
    timeout: int

    def to_dict(self) -> Dict[str, Any]:
        return {"timeout": self.timeout}

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "ConnectSandbox":
        return cls(timeout=int(src["timeout"]))
