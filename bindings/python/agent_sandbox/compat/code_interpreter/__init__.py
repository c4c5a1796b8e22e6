"""``e2b_code_interpreter``'s names: ``Sandbox`` and ``AsyncSandbox`` whose
default template is ``code-interpreter-v1`` (the kernel is warm at create).

    from agent_sandbox.compat.code_interpreter import Sandbox
    with Sandbox.create() as sbx:
        print(sbx.run_code("1 + 1").text)
"""

from .. import *  # noqa: F401,F403
from .. import AsyncSandbox as _AsyncSandbox
from .. import Sandbox as _Sandbox
from .. import __all__ as _all

CODE_INTERPRETER_TEMPLATE = "code-interpreter-v1"


class Sandbox(_Sandbox):
    """E2B code interpreter's ``Sandbox`` (sync)."""

    default_template = CODE_INTERPRETER_TEMPLATE


class AsyncSandbox(_AsyncSandbox):
    """E2B code interpreter's ``AsyncSandbox``."""

    default_template = CODE_INTERPRETER_TEMPLATE


__all__ = list(_all)
