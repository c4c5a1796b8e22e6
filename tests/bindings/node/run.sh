#!/bin/sh
# Runs one node:test file of the Node binding's tests.
# usage: run.sh <test file> [node args]
# Exits 77 (skipped) when the addon is not built:
#   cmake --build build --target node-binding
# SPDX-License-Identifier: Apache-2.0
f=$1
shift
if [ ! -f "$ASB_BUILD_DIR/bindings/node/agentsandbox.node" ]; then
  echo "node binding not built (cmake --build build --target node-binding): skipped"
  exit 77
fi
cd "$(dirname "$0")" || exit 1
# The tests import the package by its name, as users do: node_modules/
# agent-sandbox here is a link to bindings/node (git ignores it).
if [ ! -e node_modules/agent-sandbox ]; then
  mkdir -p node_modules && ln -sfn ../../../../bindings/node node_modules/agent-sandbox
fi
# The sanitizer tree's addon and library need their runtimes loaded first
# (node itself is not instrumented).
if [ -n "$ASB_NODE_PRELOAD" ]; then
  LD_PRELOAD="$ASB_NODE_PRELOAD${LD_PRELOAD:+ $LD_PRELOAD}"
  export LD_PRELOAD
fi
exec node "$@" --test --test-concurrency=1 "$f"
