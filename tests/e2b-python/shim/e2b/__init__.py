"""A stand-in ``e2b`` package for running E2B's own Python SDK tests
through :mod:`agent_sandbox.compat` (tests/e2b-python/run.sh; a manual
check, not a ctest). It only switches the import: every name comes from
``agent_sandbox.compat``.

- ``import e2b`` is ``agent_sandbox.compat``'s namespace.
- The module paths of E2B's public API that programs import names from
  (``e2b.exceptions``, ``e2b.sandbox.filesystem.filesystem``,
  ``e2b.sandbox_async.git``, ...) resolve their names in that same
  namespace; under a ``*_async`` path ``X`` is compat's ``AsyncX`` when
  there is one (``e2b.sandbox_async.git.Git`` is ``AsyncGit``). Patching
  a name there (monkeypatch.setattr) patches compat's.
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


class _Names(types.ModuleType):
    """One of E2B's public module paths: its names are compat's (under a
    ``*_async`` path ``X`` is ``AsyncX`` when there is one). Setting or
    deleting a name sets or deletes compat's, so a test that patches
    ``e2b.sandbox_sync.main.Filesystem`` patches what compat's Sandbox
    uses, as patching E2B's module does for E2B's."""

    def _target(self, name: str) -> str:
        if "_async" in self.__name__ and hasattr(_compat, "Async" + name):
            return "Async" + name
        return name

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        target = self._target(name)
        if hasattr(_compat, target):
            return getattr(_compat, target)
        raise AttributeError(f"agent_sandbox.compat has no {name!r} (wanted from {self.__name__})")

    def __setattr__(self, name: str, value) -> None:
        # the import system's own attributes, and its child modules, stay here
        if name.startswith("__") or isinstance(value, types.ModuleType):
            super().__setattr__(name, value)
        else:
            setattr(_compat, self._target(name), value)

    def __delattr__(self, name: str) -> None:
        if name.startswith("__") or name in self.__dict__:
            super().__delattr__(name)
        else:
            delattr(_compat, self._target(name))


def _names_of(fullname: str) -> types.ModuleType:
    mod = _Names(fullname)
    mod.__path__ = []  # a package: its public children resolve too
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
