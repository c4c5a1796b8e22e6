"""E2B's generated ``types``: ``UNSET`` and ``Response``.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Generic, Literal, MutableMapping, Optional, TypeVar


class Unset:
    """An argument or field that was not given (not the same as None)."""

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Unset = Unset()

T = TypeVar("T")


@dataclass
class Response(Generic[T]):
    """A call's answer: its status, body, headers and parsed model."""

    status_code: HTTPStatus
    content: bytes
    headers: MutableMapping[str, str] = field(default_factory=dict)
    parsed: Optional[T] = None
