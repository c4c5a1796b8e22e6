"""``python -m agent_sandbox.mcp``: the MCP server, started from Python.

It is not a second implementation: it finds the ``agent-sandbox-mcp``
binary (the C server, docs/mcp.md) and replaces this process with it,
passing every argument through and the environment as it is, which is
the binding's configuration (ASB_* / E2B_* variables, ASB_STATE_DIR, or
nothing: the local engine). So an MCP client configured with
``python3 -m agent_sandbox.mcp`` gets exactly what ``agent-sandbox-mcp``
gives.

The binary, first match wins (the rule every binding's launcher follows):
  1. $ASB_MCP_BIN;
  2. next to the libagentsandbox this binding loaded: a build tree's
     core/mcp/ (from core/client/), then the install prefix's bin/;
  3. agent-sandbox-mcp on PATH.

``--which`` prints the binary instead of running it.
SPDX-License-Identifier: Apache-2.0
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import List, Optional

NAME = "agent-sandbox-mcp"


def _loaded_library() -> Optional[Path]:
    """The libagentsandbox.so this process mapped (Linux: /proc/self/maps)."""
    try:
        from . import lowlevel  # noqa: F401  (maps libagentsandbox)
    except ImportError:
        return None
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.split(None, 5)[-1].strip()
                if "/libagentsandbox.so" in path:
                    return Path(path)
    except OSError:
        pass
    return None


def candidates() -> List[Path]:
    """Where the binary may be, in the order they are tried."""
    out: List[Path] = []
    env = os.environ.get("ASB_MCP_BIN")
    if env:
        return [Path(env)]
    lib = _loaded_library()
    if lib is not None:
        libdir = lib.resolve().parent
        out.append(libdir.parent / "mcp" / NAME)  # build/core/client -> build/core/mcp
        # <prefix>/lib, <prefix>/lib64 or <prefix>/lib/<multiarch>
        prefix = libdir.parent if libdir.name.startswith("lib") else libdir.parent.parent
        out.append(prefix / "bin" / NAME)
    found = shutil.which(NAME)
    if found:
        out.append(Path(found))
    return out


def find() -> Optional[Path]:
    env = os.environ.get("ASB_MCP_BIN")
    for c in candidates():
        if c.is_file() and os.access(c, os.X_OK):
            return c
        if env:  # an explicit choice that is not there is an error, not a fallback
            break
    return None


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    binary = find()
    if binary is None:
        tried = ", ".join(str(c) for c in candidates()) or "nothing"
        print(f"agent_sandbox.mcp: cannot find {NAME} (tried {tried}); build or install it "
              f"(cmake --install build), or set ASB_MCP_BIN", file=sys.stderr)
        return 127
    if args == ["--which"]:
        print(binary)
        return 0
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(str(binary), [str(binary), *args])
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
