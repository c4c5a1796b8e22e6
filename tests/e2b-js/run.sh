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
# shellcheck source=lib.sh
. "$HERE/lib.sh"
e2bjs_prepare packages/js-sdk/tests run asbe2bjs

# Our engine (lib.sh: --no-network; the tests that need the public
# internet are expected failures)
e2bjs_start_engine --no-network
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
e2bjs_results "$RUN/live.json" "$RUN/offline.json"
# a listed test that did not run at all (renamed, or a pass that died) fails too
e2bjs_compare "$HERE/expected-failures.txt" "E2B JS SDK suite" 1
