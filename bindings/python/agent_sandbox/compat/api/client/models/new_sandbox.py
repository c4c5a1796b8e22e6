"""E2B's ``NewSandbox`` (the POST /sandboxes body) with its wire names.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Union

from ..types import UNSET, Unset
from .sandbox_auto_resume_config import SandboxAutoResumeConfig
from .sandbox_iam import SandboxIam

# python name -> wire name, in the order E2B's body has them
_WIRE = (("template_id", "templateID"), ("timeout", "timeout"), ("auto_pause", "autoPause"),
         ("auto_pause_memory", "autoPauseMemory"), ("auto_resume", "autoResume"),
         ("secure", "secure"), ("allow_internet_access", "allowInternetAccess"),
         ("network", "network"), ("metadata", "metadata"), ("env_vars", "envVars"),
         ("mcp", "mcp"), ("iam", "iam"), ("volume_mounts", "volumeMounts"))


def _plain(v: Any) -> Any:
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


@dataclass
class NewSandbox:
    template_id: str
    timeout: Union[Unset, int] = 15
    auto_pause: Union[Unset, bool] = False
    auto_pause_memory: Union[Unset, bool] = True
    auto_resume: Union[Unset, SandboxAutoResumeConfig] = UNSET
    secure: Union[Unset, bool] = UNSET
    allow_internet_access: Union[Unset, bool] = UNSET
    network: Any = UNSET
    metadata: Any = UNSET
    env_vars: Any = UNSET
    mcp: Any = UNSET
    iam: Union[Unset, SandboxIam] = UNSET
    volume_mounts: Any = UNSET
    additional_properties: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = dict(self.additional_properties)
        for name, wire in _WIRE:
            v = getattr(self, name)
            if not isinstance(v, Unset):
                out[wire] = _plain(v)
        return out

    @classmethod
    def from_dict(cls, src: Dict[str, Any]) -> "NewSandbox":
        d = dict(src)
        kw: Dict[str, Any] = {}
        for name, wire in _WIRE:
            if wire in d:
                kw[name] = d.pop(wire)
        if isinstance(kw.get("auto_resume"), dict):
            kw["auto_resume"] = SandboxAutoResumeConfig.from_dict(kw["auto_resume"])
        if isinstance(kw.get("iam"), dict):
            kw["iam"] = SandboxIam.from_dict(kw["iam"])
        out = cls(**kw)
        out.additional_properties = d
        return out
