"""``e2b.template.utils``: the helpers of E2B's builder that programs and
its tests use (path checks, build arguments, octal modes, ANSI stripping,
the caller's directory). Packing, hashing and uploading the files of COPY
steps is done by the C library (asb_templates_files_hash, _files_upload),
not here.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import inspect
import os
import posixpath
import re
from types import FrameType, TracebackType
from typing import Optional

from ...exceptions import TemplateException

__all__ = ["validate_relative_path", "normalize_build_arguments", "pad_octal",
           "strip_ansi_escape_codes", "get_caller_frame", "get_caller_directory",
           "make_traceback", "get_build_step_index", "normalize_path"]

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # agent_sandbox/compat
# CSI (ESC [ params final), OSC (ESC ] ... BEL or ST), DCS, SOS, PM and
# APC strings (ESC P / X / ^ / _ ... ST or BEL) and the two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-9;:?<=>]*[ -/]*[@-~]"
                   r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
                   r"|\x1b[PX^_].*?(?:\x07|\x1b\\)"
                   r"|\x1b[@-Z\\-_]", re.S)


def strip_ansi_escape_codes(text: str) -> str:
    """``text`` without terminal colour and cursor escape sequences."""
    return _ANSI.sub("", text)


def normalize_path(path: str) -> str:
    """Forward slashes (as globs want) in place of backslashes."""
    return path.replace("\\", "/")


def validate_relative_path(src: str, stack_trace: Optional[TracebackType] = None) -> str:
    """Check that a COPY source is relative and stays inside the context
    directory (``a/../b`` is fine, ``../b`` is not); returns it normalised.
    :class:`TemplateException` otherwise."""
    p = normalize_path(str(src))
    if p.startswith("/") or re.match(r"^[A-Za-z]:", p):
        err = TemplateException(
            f"Invalid source path \"{src}\": absolute paths are not allowed; use a path "
            "relative to the template's file context directory")
        raise err.with_traceback(stack_trace) if stack_trace else err
    norm = posixpath.normpath(p)
    if norm == ".." or norm.startswith("../"):
        err = TemplateException(
            f"Invalid source path \"{src}\": path escapes the context directory")
        raise err.with_traceback(stack_trace) if stack_trace else err
    return norm


def normalize_build_arguments(name: Optional[str] = None, alias: Optional[str] = None) -> str:
    """The template's name from ``build(template, name)`` or the older
    ``alias=`` (``name`` wins). :class:`TemplateException` when neither."""
    out = name or alias
    if not out:
        raise TemplateException("Name must be provided")
    return out


def pad_octal(mode: int) -> str:
    """0o755 → ``"0755"``."""
    return f"{int(mode):04o}"


def get_build_step_index(step: str, stack_traces_length: int) -> int:
    """E2B's ``reason.step`` as an index into the recorded call sites:
    ``"base"`` → 0, ``"finalize"`` → the last, a number → itself."""
    if step == "base":
        return 0
    if step == "finalize":
        return stack_traces_length - 1
    return int(step)


def _outside(filename: str) -> bool:
    f = os.path.abspath(filename)
    return not (f == _PKG or f.startswith(_PKG + os.sep))


def get_caller_frame() -> Optional[FrameType]:
    """The first frame of the caller outside agent_sandbox.compat."""
    f = inspect.currentframe()
    while f is not None and not _outside(f.f_code.co_filename):
        f = f.f_back
    return f


def get_caller_directory() -> Optional[str]:
    """The directory of the caller's source file (a template's default file
    context), or None (an interactive session)."""
    f = get_caller_frame()
    if f is None:
        return None
    name = f.f_code.co_filename
    if name.startswith("<"):
        return None
    return os.path.dirname(os.path.abspath(name))


def make_traceback(frame: Optional[FrameType]) -> Optional[TracebackType]:
    """A traceback pointing at ``frame`` (the line of the builder call), so a
    failed step's exception shows where the step was written."""
    if frame is None:
        return None
    return TracebackType(None, frame, frame.f_lasti, frame.f_lineno)
