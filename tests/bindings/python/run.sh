#!/bin/sh
# Runs one pytest file of the Python binding's tests.
# usage: run.sh <python of the venv> <test file> [pytest args]
# Exits 77 (skipped) when the binding is not built:
#   cmake --build build --target python-binding
# SPDX-License-Identifier: Apache-2.0
PY=$1
shift
if [ ! -x "$PY" ] || ! "$PY" -c "import agent_sandbox.lowlevel" 2>/dev/null; then
  echo "python binding not built (cmake --build build --target python-binding): skipped"
  exit 77
fi
cd "$(dirname "$0")" || exit 1
exec "$PY" -m pytest -q "$@"
