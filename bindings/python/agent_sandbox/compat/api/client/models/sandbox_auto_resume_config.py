"""E2B's ``SandboxAutoResumeConfig`` ({enabled}). SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict


@dataclass
class SandboxAutoResumeConfig:
    enabled: bool

    def to_dict(self) -> Dict[str, Any]:
        return {"enabled": self.enabled}

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "SandboxAutoResumeConfig":
        return cls(enabled=bool(src["enabled"]))
