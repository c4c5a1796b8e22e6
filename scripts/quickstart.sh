#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs what it needs, builds,
# and runs the C quickstart against the local engine.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
exec build/examples/quickstart
