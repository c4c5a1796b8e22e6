#!/bin/sh
# Runs an npm SDK test file (default envd.test.mjs) against $ENVD_BIN or
# $ENGINE_BIN; skips (77) without node_modules.
# SPDX-License-Identifier: Apache-2.0
dir="$1"
file="${2:-envd.test.mjs}"
if [ ! -d "$dir/node_modules/e2b" ]; then
  echo "SKIP: $dir/node_modules is missing (run: npm ci --prefix tests/npm)"
  exit 77
fi
cd "$dir" && exec node --test "$file"
