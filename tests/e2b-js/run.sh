#!/bin/bash
# E2B's own JS SDK test suite (packages/js-sdk/tests of e2b-dev/E2B, vitest's
# "unit" project, which holds every live-sandbox test) run on E2B's own SDK
# source, unchanged, against our engine: an outside check of the protocol as
# the stock `e2b` package speaks it. E2B's tests are not copied into this
# repository: they are read from a git copy of e2b-dev/E2B at one pinned
# revision.
#
# usage: run.sh ENGINE_BIN [vitest filters...]
#   E2B_REPO          a checkout of e2b-dev/E2B or its bare git dir (without
#                     it: skipped, exit 77)
#   E2B_JS_REV        the revision (default: the pin below)
#   ASB_E2B_JS_WORK   where the copy and its node_modules live (default
#                     /tmp/asb-e2b-js); `npm install` runs there once per
#                     revision, from npm only
#
# The copy's package.json keeps E2B's dependencies and, of its dev
# dependencies, only those the Node projects load (vitest and its browser
# provider that vitest.config.mts imports, dotenv, msw,
# error-stack-parser-es), at E2B's version ranges: wrangler, playwright's
# browsers, the Cloudflare pool and the doc/codegen tools are not needed to
# run the Node tests. Nothing else of E2B's is changed.
#
# Every test must pass except those in expected-failures.txt, one per line
# "<file> > <full test name>  # why"; a listed test that passes fails the run
# too, and so does a listed test that did not run, so the list stays true.
# Prints the counts. Takes 3-6 min on 2 cores.
# SPDX-License-Identifier: Apache-2.0
set -u
ENGINE=$(realpath "$1")
shift
REV=${E2B_JS_REV:-b8029973aa7da5f741f7bb1a9f833b38a0885438}  # e2b js-sdk 2.45.0
REPO=${E2B_REPO:-}
HERE=$(cd "$(dirname "$0")" && pwd)
GITDIR=$REPO
[ -n "$REPO" ] && [ -d "$REPO/.git" ] && GITDIR=$REPO/.git
if [ -z "$REPO" ] || ! git --git-dir="$GITDIR" cat-file -e "$REV:packages/js-sdk/tests" 2>/dev/null; then
  echo "SKIP: set E2B_REPO to a git copy of e2b-dev/E2B that has $REV"
  exit 77
fi
WORK=${ASB_E2B_JS_WORK:-/tmp/asb-e2b-js}
mkdir -p "$WORK" || exit 1
RUN=$(mktemp -d "$WORK/run-XXXXXX") || exit 1
CG=asbe2bjs-$$
EP=
cleanup() {
  if [ -n "$EP" ]; then kill "$EP" 2>/dev/null; wait "$EP" 2>/dev/null; fi
  rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# E2B's package at REV, its dependencies installed once
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

# Our engine: own state dir, free port, own cgroup name; --kill-on-exit so
# its sandboxes go with it; --no-network: nothing a test runs in a sandbox
# sends a packet off this machine (the tests that need the public internet
# are expected failures).
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
export E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT
E2B_API_KEY=$(cat "$RUN/state/api_key") || exit 1
export E2B_API_KEY
unset E2B_DEBUG E2B_DOMAIN E2B_ACCESS_TOKEN
# The tests that fetch https://<port>-<id>.localhost:<port> (getHost, as E2B
# builds it) trust the engine's CA as a user would (docs/engine.md), and
# get a *.localhost resolver a stock Debian lacks (localhost-dns.cjs:
# 127.0.0.1, as systemd-resolved and nss-myhostname answer).
LIVE_ENV=(NODE_EXTRA_CA_CERTS="$RUN/state/tls/ca.pem"
  NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--require $HERE/localhost-dns.cjs")

# Two passes. The SDK's own unit tests that mock E2B's API with msw, or
# read how the SDK builds URLs with no sandbox_url configured, are about
# E2B's SDK and reach no server (msw's onUnhandledRequest is "error": nothing
# leaves the process); pointed at our engine through E2B_API_URL and
# E2B_SANDBOX_URL their requests escape the mock. They run as E2B runs
# them, without those variables and with a dummy key. Everything else runs
# live against our engine.
OFFLINE=$(cd "$JS" && { grep -rl "from 'msw" tests --include='*.test.ts' | grep -v '^tests/template/';
  echo tests/connectionConfig.browser.test.ts; echo tests/sandbox/urls.test.ts; } | sort -u)
# the unit project's files (vitest.config.mts) less those; vitest takes
# them as path filters (its --exclude does not reach a project's files)
LIVE=$(cd "$JS" && find tests -name '*.test.ts' -not -path 'tests/runtimes/*' \
  -not -path 'tests/template/*' -not -name connectionConfig.test.ts | sort | grep -vxF "$OFFLINE")
[ $# -gt 0 ] && LIVE=
# shellcheck disable=SC2086
(cd "$JS" && env "${LIVE_ENV[@]}" timeout 3000 npx vitest run --project unit --reporter=json \
    --outputFile="$RUN/live.json" --maxWorkers=2 $LIVE "$@" > "$RUN/js.log" 2>&1)
if [ $# = 0 ]; then
  # shellcheck disable=SC2086
  (cd "$JS" && env -u E2B_API_URL -u E2B_SANDBOX_URL \
      E2B_API_KEY=e2b_0000000000000000000000000000000000000000 \
      timeout 1500 npx vitest run --project unit --reporter=json \
      --outputFile="$RUN/offline.json" --maxWorkers=2 $OFFLINE >> "$RUN/js.log" 2>&1)
fi
RESULTS=$RUN/results.txt   # "<pass|fail|skip> <file> > <full name>" lines
node -e '
  for (const j of process.argv.slice(1)) {
    let r;
    try { r = require(j); } catch (e) { continue; }
    for (const f of r.testResults) {
      const file = f.name.replace(/.*\/tests\//, "tests/");
      if (!f.assertionResults.length && f.status === "failed")
        console.log(`fail ${file} > (file did not load)`);
      for (const t of f.assertionResults) {
        const st = t.status === "passed" ? "pass" : t.status === "failed" ? "fail" : "skip";
        console.log(`${st} ${file} > ${t.fullName}`);
      }
    }
  }' "$RUN/live.json" "$RUN/offline.json" > "$RESULTS"
if [ ! -s "$RESULTS" ]; then sed 's/\x1b\[[0-9;]*m//g' "$RUN/js.log" | tail -100; exit 1; fi

status=0
EXP=$HERE/expected-failures.txt
p=$(grep -c "^pass " "$RESULTS")
f=$(grep -c "^fail " "$RESULTS")
s=$(grep -c "^skip " "$RESULTS")
echo "E2B JS SDK suite ($REV): $p passed, $f failed, $s skipped (of $((p + f + s)))"
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
# a listed test that did not run at all (renamed, or a pass that died)
while read -r id; do
  awk -v id="$id" 'substr($0, index($0, " ") + 1) == id { f = 1 } END { exit !f }' "$RESULTS" ||
    { echo "  LISTED BUT NOT RUN: $id"; status=1; }
done < "$LISTED"
[ -n "${ASB_E2B_JS_KEEP:-}" ] && cp "$RESULTS" "$RUN"/*.json "$RUN/js.log" "$ASB_E2B_JS_KEEP"/ 2>/dev/null
if [ $status != 0 ]; then
  echo "--- vitest log (tail)"; sed 's/\x1b\[[0-9;]*m//g' "$RUN/js.log" | tail -150
fi
exit $status
