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
GITDIR=$REPO
[ -n "$REPO" ] && [ -d "$REPO/.git" ] && GITDIR=$REPO/.git
if [ -z "$REPO" ] || ! git --git-dir="$GITDIR" cat-file -e "$REV:packages/js-sdk/tests/template" 2>/dev/null; then
  echo "SKIP: set E2B_REPO to a git copy of e2b-dev/E2B that has $REV"
  exit 77
fi
if [ ! -f "$BUILD/bindings/node/agentsandbox.node" ]; then
  echo "SKIP: no Node addon in $BUILD (cmake --build $BUILD --target node-binding)"
  exit 77
fi
WORK=${ASB_E2B_JS_WORK:-/tmp/asb-e2b-js}
mkdir -p "$WORK" || exit 1
RUN=$(mktemp -d "$WORK/tpl-XXXXXX") || exit 1
CG=asbe2btpl-$$
EP=
cleanup() {
  if [ -n "$EP" ]; then kill "$EP" 2>/dev/null; wait "$EP" 2>/dev/null; fi
  rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# E2B's test dependencies, installed once per revision (as run.sh does it)
JS=$WORK/js-$REV
if [ ! -f "$JS/.asb-ready" ]; then
  rm -rf "$JS" && mkdir -p "$JS" &&
    git --git-dir="$GITDIR" archive "$REV" packages/js-sdk | tar -x -C "$JS" --strip-components=2 || exit 1
  (cd "$JS" && node -e '
    const fs = require("fs"), p = JSON.parse(fs.readFileSync("package.json"));
    const keep = ["vitest", "@vitest/browser-playwright", "dotenv", "msw", "error-stack-parser-es"];
    const d = {};
    for (const k of keep) d[k] = p.devDependencies[k];
    p.devDependencies = d;
    delete p.scripts;
    fs.writeFileSync("package.json", JSON.stringify(p, null, 2));' &&
    npm install --no-audit --no-fund --loglevel=error) || exit 1
  touch "$JS/.asb-ready"
fi

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

# Our engine, as run.sh starts it (own state dir, free port, own cgroup
# name, --kill-on-exit, --no-network: nothing leaves the machine)
mkfifo "$RUN/engine.out" || exit 1
"$ENGINE" --state-dir "$RUN/state" --listen 127.0.0.1:0 --cgroup-name "$CG" \
  --pool 2 --kill-on-exit --no-network > "$RUN/engine.out" 2> "$RUN/engine.log" &
EP=$!
PORT=
while read -r line; do
  case "$line" in
    "listening on "*) PORT=${line##*:}; break ;;
  esac
done < "$RUN/engine.out"
if [ -z "$PORT" ]; then
  echo "the engine did not start:"; cat "$RUN/engine.log"; exit 1
fi
cat "$RUN/engine.out" > /dev/null &
export E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT ASB_BUILD_DIR=$BUILD
E2B_API_KEY=$(cat "$RUN/state/api_key") || exit 1
export E2B_API_KEY
unset E2B_DEBUG E2B_DOMAIN E2B_ACCESS_TOKEN ASB_STATE_DIR

(cd "$S" && timeout 1500 npx vitest run --reporter=json --outputFile="$RUN/tpl.json" \
    --maxWorkers=2 "$@" > "$RUN/js.log" 2>&1)
RESULTS=$RUN/results.txt   # "<pass|fail|skip> <file> > <full name>" lines
node -e '
  let r;
  try { r = require(process.argv[1]); } catch (e) { process.exit(0); }
  for (const f of r.testResults) {
    const file = f.name.replace(/.*\/tests\//, "tests/");
    if (!f.assertionResults.length && f.status === "failed")
      console.log(`fail ${file} > (file did not load)`);
    for (const t of f.assertionResults) {
      const st = t.status === "passed" ? "pass" : t.status === "failed" ? "fail" : "skip";
      console.log(`${st} ${file} > ${t.fullName}`);
    }
  }' "$RUN/tpl.json" > "$RESULTS"
if [ ! -s "$RESULTS" ]; then sed 's/\x1b\[[0-9;]*m//g' "$RUN/js.log" | tail -100; exit 1; fi

status=0
EXP=$HERE/template-expected-failures.txt
p=$(grep -c "^pass " "$RESULTS")
f=$(grep -c "^fail " "$RESULTS")
s=$(grep -c "^skip " "$RESULTS")
echo "E2B JS template tests through agent-sandbox/compat ($REV): $p passed, $f failed, $s skipped (of $((p + f + s)))"
LISTED=$RUN/listed.txt
sed -E -e '/^#/d' -e '/^[[:space:]]*$/d' -e 's/[[:space:]]+#.*$//' "$EXP" > "$LISTED"
while read -r st id; do
  listed=0
  grep -qxF "$id" "$LISTED" && listed=1
  if [ "$st" = fail ] && [ $listed = 0 ]; then
    echo "  UNEXPECTED FAILURE: $id"; status=1
  elif [ "$st" = pass ] && [ $listed = 1 ]; then
    echo "  PASSES BUT LISTED AS EXPECTED FAILURE: $id"; status=1
  elif [ "$st" = fail ]; then
    echo "  expected failure: $id"
  fi
done < "$RESULTS"
if [ $# = 0 ]; then
  while read -r id; do
    awk -v id="$id" 'substr($0, index($0, " ") + 1) == id { f = 1 } END { exit !f }' "$RESULTS" ||
      { echo "  LISTED BUT NOT RUN: $id"; status=1; }
  done < "$LISTED"
fi
[ -n "${ASB_E2B_JS_KEEP:-}" ] && cp "$RESULTS" "$RUN"/tpl.json "$RUN/js.log" "$ASB_E2B_JS_KEEP"/ 2>/dev/null
if [ $status != 0 ]; then
  echo "--- vitest log (tail)"; sed 's/\x1b\[[0-9;]*m//g' "$RUN/js.log" | tail -150
fi
exit $status
