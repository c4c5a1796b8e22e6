#!/bin/bash
# E2B's own code-interpreter test suites, run against our engine as outside
# checks: the JS suite (vitest) on E2B's own SDK source, and the Python suite
# through agent_sandbox.compat with only its imports switched
# (e2b_code_interpreter -> agent_sandbox.compat.code_interpreter,
# e2b -> agent_sandbox.compat). E2B's tests are not copied into this
# repository: they are read from a checkout of e2b-dev/code-interpreter.
#
# usage: run.sh ENGINE_BIN PYTHON [js|python|all]
#   E2B_CODE_INTERPRETER_SRC  the checkout (without it: skipped, exit 77)
#   ASB_E2B_SUITES_WORK       where the JS suite's copy and its node_modules
#                             live (default /tmp/asb-e2b-suites); `npm install`
#                             runs there once (vitest, E2B's dev dependencies)
#
# Every test must pass except those listed in expected-failures.txt (each
# with its reason); a listed test that passes fails the run too, so the list
# stays true. Prints the counts per suite.
# SPDX-License-Identifier: Apache-2.0
set -u
ENGINE=$(realpath "$1")
PY=$(realpath -s "$2")
WHICH=${3:-all}
SRC=${E2B_CODE_INTERPRETER_SRC:-}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "$SRC" ] || [ ! -d "$SRC/js/tests" ] || [ ! -d "$SRC/python/tests" ]; then
  echo "SKIP: set E2B_CODE_INTERPRETER_SRC to a checkout of e2b-dev/code-interpreter"
  exit 77
fi
WORK=${ASB_E2B_SUITES_WORK:-/tmp/asb-e2b-suites}
mkdir -p "$WORK" || exit 1
RUN=$(mktemp -d "$WORK/run-XXXXXX") || exit 1
CG=asbe2b-$$
EP=
# shellcheck source=../e2b-js/lib.sh
. "$HERE/../e2b-js/lib.sh"
trap e2bjs_cleanup EXIT
trap 'exit 1' INT TERM HUP

# Our engine (lib.sh: own state dir, free port, own cgroup name,
# --kill-on-exit so its sandboxes go with it); --no-network: nothing a test
# runs in a sandbox sends a packet off this machine
e2bjs_start_engine --no-network

status=0
RESULTS=$RUN/results.txt   # "<suite> <pass|fail> <test id>" lines
: > "$RESULTS"

run_js() {
  local js=$WORK/js
  # a fresh copy of E2B's JS package when the checkout changed
  local rev
  rev=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)
  if [ "$(cat "$js/.asb-rev" 2>/dev/null)" != "$rev" ]; then
    rm -rf "$js" && mkdir -p "$js" &&
      (cd "$SRC/js" && tar cf - --exclude=node_modules .) | (cd "$js" && tar xf -) || return 1
    (cd "$js" && npm install --no-audit --no-fund --loglevel=error) || return 1
    echo "$rev" > "$js/.asb-rev"
  fi
  (cd "$js" && timeout 1500 npx vitest run --reporter=json \
      --outputFile="$RUN/js.json" --maxWorkers=2 > "$RUN/js.log" 2>&1)
  node -e '
    const r = require(process.argv[1]);
    for (const f of r.testResults) for (const t of f.assertionResults) {
      const file = f.name.replace(/.*\/tests\//, "tests/");
      const st = t.status === "passed" ? "pass" : t.status === "failed" ? "fail" : "skip";
      console.log(`js ${st} ${file} > ${t.fullName}`);
    }' "$RUN/js.json" >> "$RESULTS" || { cat "$RUN/js.log"; return 1; }
}

run_python() {
  local py=$RUN/py
  mkdir -p "$py" && cp -r "$SRC/python/tests" "$py/tests" || return 1
  # the import switch, nothing else
  find "$py/tests" -name '*.py' -exec sed -i -E \
    -e 's/\be2b_code_interpreter\b/agent_sandbox.compat.code_interpreter/g' \
    -e 's/^from e2b import /from agent_sandbox.compat import /' \
    -e 's/^from e2b\.connection_config import /from agent_sandbox.compat.connection_config import /' {} +
  # E2B's pytest.ini less --numprocesses (pytest-xdist is not in Debian 12's
  # python3 packages we use); the rest as E2B has it
  cat > "$py/pytest.ini" <<'EOF'
[pytest]
markers =
    skip_debug: skip test if E2B_DEBUG is set.
asyncio_mode = auto
addopts = "--import-mode=importlib"
EOF
  (cd "$py" && timeout 1500 "$PY" -m pytest -q -p no:cacheprovider --continue-on-collection-errors \
      --junitxml="$RUN/py.xml" tests > "$RUN/py.log" 2>&1)
  "$PY" - "$RUN/py.xml" >> "$RESULTS" <<'EOF' || { cat "$RUN/py.log"; return 1; }
import sys, xml.etree.ElementTree as ET
for tc in ET.parse(sys.argv[1]).iter("testcase"):
    kinds = {c.tag for c in tc}
    st = "fail" if kinds & {"failure", "error"} else "skip" if "skipped" in kinds else "pass"
    name = tc.get("classname", "").replace(".", "/") + "::" + tc.get("name", "")
    print(f"python {st} {name}")
EOF
}

case "$WHICH" in
  js) run_js || status=1 ;;
  python) run_python || status=1 ;;
  *) run_js || status=1; run_python || status=1 ;;
esac

# compare with the expected failures (lines "<suite> <test id>  # reason")
EXP=$HERE/expected-failures.txt
for suite in js python; do
  grep -q "^$suite " "$RESULTS" || continue
  p=$(grep -c "^$suite pass " "$RESULTS")
  f=$(grep -c "^$suite fail " "$RESULTS")
  s=$(grep -c "^$suite skip " "$RESULTS")
  echo "E2B $suite suite: $p passed, $f failed, $s skipped (of $((p + f + s)))"
  while read -r _ st id; do
    listed=0
    grep -qxF "$suite $id" <(sed -E 's/[[:space:]]+#.*$//' "$EXP") && listed=1
    if [ "$st" = fail ] && [ $listed = 0 ]; then
      echo "  UNEXPECTED FAILURE: $id"; status=1
    elif [ "$st" = pass ] && [ $listed = 1 ]; then
      echo "  PASSES BUT LISTED AS EXPECTED FAILURE: $id"; status=1
    elif [ "$st" = fail ]; then
      echo "  expected failure: $id"
    fi
  done < <(grep "^$suite " "$RESULTS")
done
if [ $status != 0 ]; then
  for f in "$RUN/js.log" "$RUN/py.log"; do
    [ -f "$f" ] && { echo "--- $f (tail)"; sed 's/\x1b\[[0-9;]*m//g' "$f" | tail -150; }
  done
fi
exit $status
