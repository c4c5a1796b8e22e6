#!/bin/bash
# E2B's own JS template tests (packages/js-sdk/tests/template of
# e2b-dev/E2B at the revision run.sh pins) through agent-sandbox/compat,
# with only the `e2b` import switched: their `../../src` (E2B's SDK source)
# is a one-line module that re-exports agent-sandbox/compat, so every name
# they import from the SDK's entry is ours; their deep imports of E2B's
# internals (src/template/utils, src/api, ...) are not there and those
# files fail to load, as listed. The way tests/e2b-python/run.sh runs E2B's
# Python suite (docs/node-compat.md, "Template builder").
#
# usage: run-template.sh ENGINE_BIN BUILD_DIR [vitest filters...]
#   BUILD_DIR         the build tree whose Node addon compat loads
#                     (cmake --build BUILD_DIR --target node-binding)
#   E2B_REPO          a checkout of e2b-dev/E2B or its bare git dir (without
#                     it: skipped, exit 77)
#   E2B_JS_REV, ASB_E2B_JS_WORK  as for run.sh (the same npm install of
#                     E2B's test dependencies is used: vitest, msw, dotenv)
# Every test must pass except those in template-expected-failures.txt, one
# per line "<file> > <full test name>  # why"; a listed test that passes,
# or that did not run, fails the run too. Takes ~1 min on 2 cores.
# SPDX-License-Identifier: Apache-2.0
set -u
ENGINE=$(realpath "$1")
BUILD=$(realpath "$2")
shift 2
REV=${E2B_JS_REV:-b8029973aa7da5f741f7bb1a9f833b38a0885438}  # e2b js-sdk 2.45.0, as run.sh
REPO=${E2B_REPO:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
if [ ! -f "$BUILD/bindings/node/agentsandbox.node" ]; then
  echo "SKIP: no Node addon in $BUILD (cmake --build $BUILD --target node-binding)"
  exit 77
fi
# shellcheck source=lib.sh
. "$HERE/lib.sh"
e2bjs_prepare packages/js-sdk/tests/template tpl asbe2btpl

# The suite: E2B's tests unchanged; src/ is our compat; node_modules holds
# E2B's test dependencies and a copy of our package (a real directory under
# node_modules, so vitest loads it with Node as it loads `e2b` from npm).
S=$RUN/sdk
mkdir -p "$S/src" "$S/node_modules/agent-sandbox" || exit 1
git --git-dir="$GITDIR" archive "$REV" packages/js-sdk/tests packages/js-sdk/package.json |
  tar -x -C "$S" --strip-components=2 || exit 1
for e in "$JS"/node_modules/* "$JS"/node_modules/.bin; do ln -s "$e" "$S/node_modules/"; done
cp -r "$ROOT/bindings/node/lib" "$ROOT/bindings/node/package.json" "$S/node_modules/agent-sandbox/" || exit 1
printf '%s\n' "export * from 'agent-sandbox/compat'" "export { default } from 'agent-sandbox/compat'" > "$S/src/index.ts"
# E2B's module paths its tests import from: the same names, from compat
# (and, for src/template/utils and types, the helpers compat's builder has:
# validateRelativePath, normalizeBuildArguments, getCallerDirectory,
# getCallerFrame, padOctal, InstructionType). Its upload internals
# (getAllFilesInPath, spoolTarArchive, buildApi's uploadFile) are not
# there: the C library packs and uploads.
mkdir -p "$S/src/template" || exit 1
for m in errors template/index template/readycmd template/logger; do
  echo "export * from 'agent-sandbox/compat'" > "$S/src/$m.ts"
done
for m in template/utils template/types; do
  printf '%s\n' "export * from 'agent-sandbox/compat'" \
    "export * from '$S/node_modules/agent-sandbox/lib/compat-template.js'" > "$S/src/$m.ts"
done
# E2B's "template" project (vitest.config.mts), alone: its config also
# loads the browser project's playwright provider, which is not needed.
# Not run: abortSignal.test.ts, whose 8 tests abort once msw has seen the
# SDK's fetch start (server.events 'request:start'); our calls go through
# the C library, not fetch, so each would wait out its 180 s timeout
# (node.compat_template aborts a build through compat's Template.build).
cat > "$S/vitest.config.mts" <<'EOF'
import { defineConfig } from 'vitest/config'
export default defineConfig({
  test: {
    include: ['tests/template/**/*.test.ts'],
    exclude: ['tests/template/abortSignal.test.ts'],
    globals: false,
    testTimeout: 180_000,
    environment: 'node',
    setupFiles: ['tests/globalFetchFallback.setup.ts'],
  },
})
EOF

# Our engine (lib.sh: own state dir, free port, own cgroup
# name, --kill-on-exit, --no-network: nothing leaves the machine)
e2bjs_start_engine --no-network
export ASB_BUILD_DIR=$BUILD
unset ASB_STATE_DIR

(cd "$S" && timeout 1500 npx vitest run --reporter=json --outputFile="$RUN/tpl.json" \
    --maxWorkers=2 "$@" > "$RUN/js.log" 2>&1)
e2bjs_results "$RUN/tpl.json"
notrun=1; [ $# -gt 0 ] && notrun=0
e2bjs_compare "$HERE/template-expected-failures.txt" "E2B JS template tests through agent-sandbox/compat" $notrun
