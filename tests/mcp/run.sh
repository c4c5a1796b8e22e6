#!/bin/sh
# Runs one MCP test file (node:test) with the official SDK client against
# $MCP_BIN and a real engine ($ENGINE_BIN); skips (77) without
# node_modules (npm ci --prefix tests/mcp) or without root.
# SPDX-License-Identifier: Apache-2.0
dir="$(dirname "$0")"
if [ ! -d "$dir/node_modules/@modelcontextprotocol/sdk" ]; then
  echo "SKIP: $dir/node_modules is missing (run: npm ci --prefix tests/mcp)"
  exit 77
fi
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: the engine needs root"
  exit 77
fi
cd "$dir" && exec node --test "$1"
