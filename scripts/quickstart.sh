#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs what it needs, builds,
# and runs the quickstart against the local engine — the C one
# (examples/quickstart.c), then the Python one (examples/python/quickstart.py,
# the program the Python binding promises to run unchanged). With nothing
# configured the library starts the local engine itself (as root).
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
cmake --build build --target python-binding
echo "== C quickstart (examples/quickstart.c)"
build/examples/quickstart
echo "== Python quickstart (examples/python/quickstart.py)"
exec build/py-venv/bin/python examples/python/quickstart.py
