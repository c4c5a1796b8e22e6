#!/bin/sh
# Runs the stock code interpreter SDK test against $CODEI_BIN; skips (77)
# without node_modules. SPDX-License-Identifier: Apache-2.0
dir="$1"
if [ ! -d "$dir/node_modules/@e2b/code-interpreter" ]; then
  echo "SKIP: $dir/node_modules is missing (run: npm ci --prefix tests/npm-codei)"
  exit 77
fi
cd "$dir" && exec node --test codei.test.mjs
