"""``e2b_code_interpreter.code_interpreter_sync``: its ``Sandbox``."""

from . import Sandbox

__all__ = ["Sandbox"]
