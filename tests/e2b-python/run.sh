#!/bin/sh
# E2B's own Python SDK tests through agent_sandbox.compat, with only the
# import switched (docs/python-compat.md, "E2B's own test suite"). A manual
# check: it needs a copy of E2B's repository, which CI does not have, so it
# is not a ctest and downloads nothing.
#
# usage: tests/e2b-python/run.sh E2B_REPO [pytest args...]
#   E2B_REPO   a checkout of github.com/e2b-dev/E2B, or its bare git dir
#              (the revision in $E2B_REV, default HEAD, is read with git archive)
#   ASB_BUILD  the build tree (default: build): its engine, and the Python
#              binding's venv (cmake --build build --target python-binding)
#   OUT        where the copy of the tests and the logs go (default: a temp dir)
# Runs as root (the engine needs it); starts its own engine (own state dir,
# free port, own cgroup name, --kill-on-exit) and stops it at the end. The
# engine runs with --no-network: nothing a test runs in a sandbox sends a
# packet off this machine (E2B's tests that curl 1.1.1.1 and 8.8.8.8 need
# the public internet and fail here, as in the JS runner).
#   ASB_E2B_ENGINE_FLAGS  more engine flags, split on blanks (say
#              --pause-criu: the suite against a CRIU pause, docs/lifecycle.md)
# Every test must pass (or be skipped) except those in
# expected-failures.txt ("<pytest node id>  # why", one per line); a listed
# test that passes fails the run, and so, in a run of the whole suite (no
# pytest args), does a listed one that did not run (compare.py).
# Prints pytest's summary and the comparison; the JUnit XML is in
# $OUT/junit.xml, one outcome line per test in $OUT/results.txt.
# SPDX-License-Identifier: Apache-2.0
set -eu
E2B_REPO=${1:?usage: run.sh E2B_REPO [pytest args]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${ASB_BUILD:-$ROOT/build}
PY=${ASB_PY:-$BUILD/py-venv/bin/python}
ENGINE=$BUILD/core/engine/agent-sandboxd
[ -x "$PY" ] || { echo "no Python binding: cmake --build $BUILD --target python-binding" >&2; exit 1; }
[ -x "$ENGINE" ] || { echo "no engine at $ENGINE" >&2; exit 1; }
OUT=${OUT:-$(mktemp -d /tmp/e2b-pysuite.XXXXXX)}
mkdir -p "$OUT"

# Their tests and pytest.ini, at one revision; our conftest in place of
# theirs (see conftest.py next to this script).
GITDIR=$E2B_REPO
[ -d "$E2B_REPO/.git" ] && GITDIR=$E2B_REPO/.git
rm -rf "$OUT/suite"
mkdir -p "$OUT/suite"
git --git-dir="$GITDIR" archive "${E2B_REV:-HEAD}" packages/python-sdk/tests packages/python-sdk/pytest.ini |
  tar -x -C "$OUT/suite" --strip-components=2
cp "$HERE/conftest.py" "$OUT/suite/tests/conftest.py"

STATE=$(mktemp -d /tmp/e2b-pysuite-engine.XXXXXX)
CG=e2bpy-$$
# shellcheck disable=SC2086 # ASB_E2B_ENGINE_FLAGS: split on blanks
"$ENGINE" --state-dir "$STATE" --listen 127.0.0.1:0 --cgroup-name "$CG" --pool 2 --no-network \
  --kill-on-exit ${ASB_E2B_ENGINE_FLAGS:-} >"$OUT/engine.out" 2>"$OUT/engine.log" &
EPID=$!
cleanup() {
  kill -TERM "$EPID" 2>/dev/null || true
  wait "$EPID" 2>/dev/null || true
  rm -rf "$STATE"
}
trap cleanup EXIT INT TERM
i=0
until grep -q '^listening on' "$OUT/engine.out" 2>/dev/null; do
  i=$((i + 1))
  [ $i -lt 600 ] || { echo "the engine did not start (see $OUT/engine.log)" >&2; exit 1; }
  kill -0 "$EPID" 2>/dev/null || { echo "the engine exited (see $OUT/engine.log)" >&2; exit 1; }
  sleep 0.1
done

# The tests that fetch https://<port>-<id>.localhost:<engine port> (get_host,
# download_url, upload_url, as E2B builds them) with urllib and httpx trust
# the engine's CA as a user would (docs/engine.md, https): a bundle of the
# system's CAs and the engine's, for ssl's defaults (SSL_CERT_FILE: urllib,
# httpx) and requests; and they get the *.localhost resolver a stock Debian
# lacks (hosts/sitecustomize.py: loopback, as systemd-resolved and
# nss-myhostname answer).
SYSCA=${ASB_SYSTEM_CA:-/etc/ssl/certs/ca-certificates.crt}
[ -f "$STATE/tls/ca.pem" ] || { echo "the engine made no CA ($STATE/tls/ca.pem)" >&2; exit 1; }
{ [ -f "$SYSCA" ] && cat "$SYSCA"; cat "$STATE/tls/ca.pem"; } >"$OUT/ca-bundle.pem"

cd "$OUT/suite"
# Only ASB_STATE_DIR: the library finds the engine as users' programs do.
set +e
env -u E2B_API_KEY -u E2B_DOMAIN -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_DEBUG \
  SSL_CERT_FILE="$OUT/ca-bundle.pem" REQUESTS_CA_BUNDLE="$OUT/ca-bundle.pem" \
  ASB_STATE_DIR="$STATE" PYTHONPATH="$HERE/hosts:$HERE/shim:$HERE/plugin" \
  ASB_E2B_RESULTS="$OUT/results.txt" \
  "$PY" -m pytest -p no:cacheprovider -p asb_e2b_outcomes -q -rfE --continue-on-collection-errors \
  --junitxml="$OUT/junit.xml" -o asyncio_mode=auto "$@" tests/sync tests/async tests/shared \
  >"$OUT/pytest.log" 2>&1
rc=$?
set -e
tail -n 1 "$OUT/pytest.log"
echo "log: $OUT/pytest.log  junit: $OUT/junit.xml"
# 0: all passed, 1: some failed; anything else (an internal error, an
# interrupted run, no tests collected) fails the run whatever the list says
case $rc in 0 | 1) ;; *) exit "$rc" ;; esac
[ -s "$OUT/results.txt" ] || { echo "no results ($OUT/results.txt)" >&2; exit 1; }
ALL=
[ $# = 0 ] && ALL=--all
"$PY" "$HERE/compare.py" "$OUT/results.txt" "$HERE/expected-failures.txt" $ALL
