"""``e2b.template.logger``: build log entries and a default logger.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Literal, Optional

from .utils import strip_ansi_escape_codes

__all__ = ["LogEntry", "LogEntryStart", "LogEntryEnd", "LogEntryLevel", "default_build_logger"]

LogEntryLevel = Literal["debug", "info", "warn", "error"]
_LEVELS = {"debug": 0, "info": 1, "warn": 2, "error": 3}


@dataclass
class LogEntry:
    """One line of a build's log (``level``: debug, info, warn or error)."""

    timestamp: datetime
    level: LogEntryLevel
    message: str

    def __post_init__(self) -> None:
        self.message = strip_ansi_escape_codes(self.message)

    def __str__(self) -> str:
        return f"[{self.timestamp.isoformat()}] {self.level}: {self.message}"


@dataclass
class LogEntryStart(LogEntry):
    """The first entry a build's ``on_build_logs`` gets."""

    def __init__(self, timestamp: datetime, message: str):
        super().__init__(timestamp=timestamp, level="debug", message=message)


@dataclass
class LogEntryEnd(LogEntry):
    """The last entry a build's ``on_build_logs`` gets (also after an error)."""

    def __init__(self, timestamp: datetime, message: str):
        super().__init__(timestamp=timestamp, level="debug", message=message)


def default_build_logger(min_level: Optional[LogEntryLevel] = None) -> Callable[[LogEntry], None]:
    """An ``on_build_logs`` that prints entries of ``min_level`` (default
    ``info``) and above to stderr, with the time since the build started."""
    floor = _LEVELS.get(min_level or "info", 1)
    start: list = []

    def log(entry: LogEntry) -> None:
        if isinstance(entry, LogEntryStart) or not start:
            start[:] = [entry.timestamp]
        if _LEVELS.get(entry.level, 1) < floor and not isinstance(entry, (LogEntryStart,
                                                                           LogEntryEnd)):
            return
        t0 = start[0]
        try:
            secs = (entry.timestamp - t0).total_seconds()
        except TypeError:  # one aware, one naive
            secs = 0.0
        print(f"{secs:7.1f}s {entry.level:5} {entry.message}", file=sys.stderr)

    return log
