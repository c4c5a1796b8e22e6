"""``e2b.template``: E2B's template builder over agent-sandbox (the
builder, its types, ready checks and logger). ``Template`` and
``AsyncTemplate`` are in ``template_sync`` and ``template_async``.
SPDX-License-Identifier: Apache-2.0"""

from .logger import LogEntry, LogEntryEnd, LogEntryLevel, LogEntryStart, default_build_logger
from .main import TemplateBase, TemplateBuilder, TemplateClass, TemplateFinal
from .readycmd import (ReadyCmd, wait_for_file, wait_for_port, wait_for_process,
                       wait_for_timeout, wait_for_url)
from .types import (BuildInfo, BuildStatusReason, CopyItem, InstructionType,
                    TemplateBuildStatus, TemplateBuildStatusResponse, TemplateTag,
                    TemplateTagInfo)

__all__ = ["LogEntry", "LogEntryEnd", "LogEntryLevel", "LogEntryStart", "default_build_logger",
           "TemplateBase", "TemplateBuilder", "TemplateClass", "TemplateFinal", "ReadyCmd",
           "wait_for_file", "wait_for_port", "wait_for_process", "wait_for_timeout",
           "wait_for_url", "BuildInfo", "BuildStatusReason", "CopyItem", "InstructionType",
           "TemplateBuildStatus", "TemplateBuildStatusResponse", "TemplateTag",
           "TemplateTagInfo"]
