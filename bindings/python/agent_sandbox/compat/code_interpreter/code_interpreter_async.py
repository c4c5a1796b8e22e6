"""``e2b_code_interpreter.code_interpreter_async``: its ``AsyncSandbox``."""

from . import AsyncSandbox

__all__ = ["AsyncSandbox"]
