"""``e2b.template.types``: the builder's data types, with E2B's names.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from .logger import LogEntry

try:
    from typing import TypedDict
except ImportError:  # pragma: no cover
    from typing_extensions import TypedDict  # type: ignore

__all__ = ["TemplateBuildStatus", "BuildStatusReason", "TemplateBuildStatusResponse",
           "TemplateTagInfo", "TemplateTag", "InstructionType", "CopyItem", "Instruction",
           "TemplateType", "BuildInfo", "RegistryConfig"]


class TemplateBuildStatus(str, Enum):
    BUILDING = "building"
    WAITING = "waiting"
    READY = "ready"
    ERROR = "error"


@dataclass
class BuildStatusReason:
    """Why a build is in its state (a failed one: the message, E2B's step)."""

    message: str
    step: Optional[str] = None
    log_entries: List[LogEntry] = field(default_factory=list)


@dataclass
class TemplateBuildStatusResponse:
    """``Template.get_build_status``: the state and the log from an offset."""

    build_id: str
    template_id: str
    status: TemplateBuildStatus
    log_entries: List[LogEntry]
    logs: List[str]
    reason: Optional[BuildStatusReason] = None


@dataclass
class TemplateTagInfo:
    """``Template.assign_tags``: the build the tags now name."""

    build_id: str
    tags: List[str]


@dataclass
class TemplateTag:
    """One tag of ``Template.get_tags``."""

    tag: str
    build_id: str
    created_at: datetime


class InstructionType(str, Enum):
    COPY = "COPY"
    ENV = "ENV"
    RUN = "RUN"
    WORKDIR = "WORKDIR"
    USER = "USER"


class CopyItem(TypedDict, total=False):
    """One item of ``copy_items``: ``src``, ``dest`` and copy()'s options."""

    src: Union[str, Path, List[Union[str, Path]]]
    dest: Union[str, Path]
    forceUpload: Optional[bool]
    user: Optional[str]
    mode: Optional[int]
    resolveSymlinks: Optional[bool]
    gzip: Optional[bool]


Instruction = Dict[str, Any]
"""A step: ``type``, ``args``, ``force`` and for COPY ``forceUpload``,
``resolveSymlinks``, ``filesHash``."""

TemplateType = Dict[str, Any]
"""What ``to_json`` gives: ``fromTemplate``/``fromImage``, ``steps``,
``startCmd``, ``readyCmd``, ``force``."""

RegistryConfig = Dict[str, Any]


@dataclass
class BuildInfo:
    """What ``build``/``build_in_background`` return."""

    template_id: str
    build_id: str
    name: str
    alias: str
    tags: List[str] = field(default_factory=list)
