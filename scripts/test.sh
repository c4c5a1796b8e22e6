#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs what it needs,
# builds the normal and the sanitizer (ASan+UBSan) trees, runs every test in
# both, runs the threaded C tests in a ThreadSanitizer tree, and the ABI check
# against abi/. Run as root (the engine tests need it).
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc)

scripts/deps.sh

# Each step's heading says how long the run has taken so far (CI's budget is
# 30 minutes: see where it goes).
T0=$(date +%s)
step() { printf '\n==== %s (at %d s) ====\n' "$*" $(($(date +%s) - T0)); }

step "test prerequisites"
# The stock E2B npm SDK used by the npm.envd test (pinned in tests/npm).
npm ci --prefix tests/npm --no-audit --no-fund
# envd's tests act as E2B's default unprivileged sandbox user.
id user >/dev/null 2>&1 || useradd -m -s /bin/bash user
# The stock E2B code interpreter npm SDK used by the npm.codei test (pinned
# in tests/npm-codei).
npm ci --prefix tests/npm-codei --no-audit --no-fund
# The TypeScript compiler the node.types test checks the Node binding's
# declarations with (pinned in tests/npm-ts).
npm ci --prefix tests/npm-ts --no-audit --no-fund
# The official MCP TypeScript SDK client used by the mcp.* tests (pinned in
# tests/mcp).
npm ci --prefix tests/mcp --no-audit --no-fund
# The coding-agent CLIs e2e.agents and python.agents drive (pinned), once
# into the host-wide prefix the agents template sees: a later run finds
# them and downloads nothing (0.5 s).
scripts/agents-cache.sh

# criu 4.1.1 with our patches (scripts/build-criu.sh: Debian trixie's orig
# tarball and bookworm's build dependencies through apt, 40 s to 2.5 min on 2
# cores the first time, nothing once cached) for the pause with memory to disk and
# the criu.* tests. A criu that cannot be had fails the run (the script says
# what it needs); ASB_SKIP_CRIU=1 goes on without it, the criu tests skip.
step "criu (scripts/build-criu.sh)"
if [ "${ASB_SKIP_CRIU:-}" = 1 ]; then
  echo "ASB_SKIP_CRIU=1: no criu build; the criu tests skip"
else
  scripts/build-criu.sh
fi

step "build (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$JOBS"

step "Python binding (venv in build/py-venv, pip offline)"
cmake --build build --target python-binding

step "Node binding (the addon against the installed Node headers, node-hello)"
cmake --build build --target node-binding

step "build (ASan + UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DASB_SANITIZE=ON
cmake --build build-asan -j "$JOBS"
# the addons against the sanitized library (a subset of node.* runs there)
cmake --build build-asan --target node-binding

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

step "tests (normal build)"
(cd build && ctest --output-on-failure -j "$JOBS" --timeout 600)

step "tests (sanitizer build)"
(cd build-asan && ctest --output-on-failure -j "$JOBS" --timeout 900 -E '^abi\.abidiff$')

# ThreadSanitizer cannot share a tree with ASan. This tree checks the client
# library, the server SDK and their callers: the C tests whose threads meet
# in them (unit, api, server.sdk, e2e.envd_client, e2e.free_during_calls).
# Not here: the engine (ASB_BUILD_ENGINE=OFF: it clones into namespaces,
# which TSan does not follow) and with it every engine.*, security.* and
# engine-backed e2e.* test; envd and the code interpreter are built without
# TSan in this tree (core/CMakeLists.txt: envd's clone(CLONE_VM) spawn, the
# uninstrumented libzmq), so envd.*, codei.* and the npm tests gain nothing
# here; fuzz.* and abi.* are single-threaded or static checks.
step "build (ThreadSanitizer)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DASB_SANITIZE=thread \
  -DASB_BUILD_ENGINE=OFF
cmake --build build-tsan -j "$JOBS"

step "tests (ThreadSanitizer build)"
(cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --output-on-failure -j "$JOBS" --timeout 900 \
    -R '^(unit|api|server)\.|^e2e\.(envd_client|free_during_calls)$')

step "ABI: abidiff against abi/"
cmake --build build --target abi-check
step "done"

echo
echo "all tests passed"
