#!/bin/sh
# node.types: tsc (pinned in tests/npm-ts) type-checks programs against the
# package's declarations, strict. Skips (77) without tests/npm-ts/node_modules
# (npm ci --prefix tests/npm-ts).
# SPDX-License-Identifier: Apache-2.0
cd "$(dirname "$0")/.." || exit 1
tsc=../../npm-ts/node_modules/.bin/tsc
if [ ! -x "$tsc" ]; then
  echo "SKIP: tests/npm-ts/node_modules is missing (run: npm ci --prefix tests/npm-ts)"
  exit 77
fi
if [ ! -e node_modules/agent-sandbox ]; then
  mkdir -p node_modules && ln -sfn ../../../../bindings/node node_modules/agent-sandbox
fi
"$tsc" -p types/tsconfig.json && echo "node.types: the declarations type-check (strict)"
