"""A stand-in ``e2b`` package for running E2B's own Python SDK tests
through :mod:`agent_sandbox.compat` (tests/e2b-python/run.sh; a manual
check, not a ctest). It only switches the import: every name comes from
``agent_sandbox.compat``.

- ``import e2b`` is ``agent_sandbox.compat``'s namespace.
- The module paths of E2B's public API that programs import names from
  (``e2b.exceptions``, ``e2b.sandbox.filesystem.filesystem``,
  ``e2b.sandbox_async.git``, ...) resolve their names in that same
  namespace; under a ``*_async`` path ``X`` is compat's ``AsyncX`` when
  there is one (``e2b.sandbox_async.git.Git`` is ``AsyncGit``).
- A real submodule of compat (``agent_sandbox.compat.connection_config``,
  ``.secret``, ``.api``: the parts of E2B's generated API client it has)
  is used as it is.
- Anything else (the rest of E2B's generated API client, its envd
  transport, volume internals, ...) is not there: importing it fails, and
  the test that needs it is counted as failing for that reason.
SPDX-License-Identifier: Apache-2.0
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from agent_sandbox import compat as _compat
from agent_sandbox.compat import *  # noqa: F401,F403

# E2B's public module paths (what its docs and programs import from).
_PUBLIC = {
    "e2b.exceptions",
    "e2b.connection_config",
    "e2b.sandbox",
    "e2b.sandbox.main",
    "e2b.sandbox.commands",
    "e2b.sandbox.commands.command_handle",
    "e2b.sandbox.commands.main",
    "e2b.sandbox.filesystem",
    "e2b.sandbox.filesystem.filesystem",
    "e2b.sandbox.filesystem.watch_handle",
    "e2b.sandbox.sandbox_api",
    "e2b.sandbox.signature",
    "e2b.sandbox.network",
    "e2b.sandbox._git",
    "e2b.sandbox_sync",
    "e2b.sandbox_sync.main",
    "e2b.sandbox_sync.git",
    "e2b.sandbox_sync.paginator",
    "e2b.sandbox_sync.commands",
    "e2b.sandbox_sync.commands.command",
    "e2b.sandbox_sync.commands.command_handle",
    "e2b.sandbox_sync.filesystem",
    "e2b.sandbox_sync.filesystem.filesystem",
    "e2b.sandbox_sync.filesystem.watch_handle",
    "e2b.sandbox_async",
    "e2b.sandbox_async.main",
    "e2b.sandbox_async.git",
    "e2b.sandbox_async.paginator",
    "e2b.sandbox_async.commands",
    "e2b.sandbox_async.commands.command",
    "e2b.sandbox_async.commands.command_handle",
    "e2b.sandbox_async.filesystem",
    "e2b.sandbox_async.filesystem.filesystem",
    "e2b.sandbox_async.filesystem.watch_handle",
    "e2b.paginator",
}


def _names_of(fullname: str) -> types.ModuleType:
    mod = types.ModuleType(fullname)
    is_async = "_async" in fullname
    mod.__path__ = []  # a package: its public children resolve too

    def __getattr__(name: str):
        if is_async and hasattr(_compat, "Async" + name):
            return getattr(_compat, "Async" + name)
        if hasattr(_compat, name):
            return getattr(_compat, name)
        raise AttributeError(f"agent_sandbox.compat has no {name!r} (wanted from {fullname})")

    mod.__getattr__ = __getattr__  # type: ignore[attr-defined]
    return mod


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith("e2b."):
            return None
        real = "agent_sandbox.compat." + fullname[len("e2b."):]
        try:
            importlib.util.find_spec(real)
            has_real = importlib.util.find_spec(real) is not None
        except (ImportError, ValueError):
            has_real = False
        if has_real or fullname in _PUBLIC:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        real = "agent_sandbox.compat." + spec.name[len("e2b."):]
        try:
            return importlib.import_module(real)
        except ImportError:
            return _names_of(spec.name)

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
