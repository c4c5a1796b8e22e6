# shellcheck shell=bash
# Shared by run.sh (E2B's JS SDK suite on E2B's source) and run-template.sh
# (E2B's template tests through our compat): finding E2B's tests at the
# pinned revision, E2B's test dependencies installed once per revision,
# our engine, the vitest results read into one line per test, and the
# comparison with an expected-failures list. Sourced, not run.
# Callers set REV, REPO, HERE and ENGINE first. tests/e2b-suites/run.sh
# (E2B's code-interpreter suites) uses only e2bjs_start_engine and
# e2bjs_cleanup (it sets ENGINE, RUN, CG and EP itself).
# SPDX-License-Identifier: Apache-2.0

# e2bjs_prepare SUBPATH PREFIX CGPREFIX: skips (exit 77) without E2B's
# SUBPATH at REV; sets GITDIR, WORK, RUN (a fresh dir, removed on exit with
# the engine), CG and JS (E2B's js-sdk with its test dependencies).
e2bjs_prepare() {
  GITDIR=$REPO
  [ -n "$REPO" ] && [ -d "$REPO/.git" ] && GITDIR=$REPO/.git
  if [ -z "$REPO" ] || ! git --git-dir="$GITDIR" cat-file -e "$REV:$1" 2>/dev/null; then
    echo "SKIP: set E2B_REPO to a git copy of e2b-dev/E2B that has $REV"
    exit 77
  fi
  WORK=${ASB_E2B_JS_WORK:-/tmp/asb-e2b-js}
  mkdir -p "$WORK" || exit 1
  RUN=$(mktemp -d "$WORK/$2-XXXXXX") || exit 1
  CG=$3-$$
  EP=
  trap e2bjs_cleanup EXIT
  trap 'exit 1' INT TERM HUP
  # E2B's package at REV, its dependencies installed once: its own
  # dependencies and, of its dev dependencies, those the Node projects load
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
}

e2bjs_cleanup() {
  if [ -n "$EP" ]; then kill "$EP" 2>/dev/null; wait "$EP" 2>/dev/null; fi
  rm -rf "$RUN"
}

# e2bjs_start_engine [FLAG...]: our engine ($ENGINE) in $RUN with its own
# state dir, a free port, its own cgroup name ($CG); --kill-on-exit so its
# sandboxes go with it; the FLAGs added (the E2B JS suites pass
# --no-network: nothing a test runs in a sandbox sends a packet off this
# machine). ASB_E2B_ENGINE_FLAGS adds more, split on blanks (say
# ASB_E2B_ENGINE_FLAGS=--pause-criu: E2B's suites against a CRIU pause).
# Exports E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY; sets PORT, EP
# (e2bjs_cleanup stops it).
e2bjs_start_engine() {
  mkfifo "$RUN/engine.out" || exit 1
  # shellcheck disable=SC2086 # ASB_E2B_ENGINE_FLAGS: split on blanks
  "$ENGINE" --state-dir "$RUN/state" --listen 127.0.0.1:0 --cgroup-name "$CG" \
    --pool 2 --kill-on-exit "$@" ${ASB_E2B_ENGINE_FLAGS:-} > "$RUN/engine.out" 2> "$RUN/engine.log" &
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
}

# e2bjs_results JSON...: vitest's JSON reports → $RESULTS, one
# "<pass|fail|skip> <file> > <full name>" line per test (a file that did
# not load is one failure); exits with the log's tail if there is none.
e2bjs_results() {
  RESULTS=$RUN/results.txt
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
    }' "$@" > "$RESULTS"
  if [ ! -s "$RESULTS" ]; then sed 's/\x1b\[[0-9;]*m//g' "$RUN/js.log" | tail -100; exit 1; fi
}

# e2bjs_compare EXPECTED LABEL CHECK_NOT_RUN: every test passes except
# those listed in EXPECTED ("<file> > <full test name>  # why"); a listed
# test that passes fails the run, and (CHECK_NOT_RUN = 1) so does one that
# did not run, so the list stays true. Prints the counts; exits.
e2bjs_compare() {
  local status=0 p f s listed
  p=$(grep -c "^pass " "$RESULTS")
  f=$(grep -c "^fail " "$RESULTS")
  s=$(grep -c "^skip " "$RESULTS")
  echo "$2 ($REV): $p passed, $f failed, $s skipped (of $((p + f + s)))"
  LISTED=$RUN/listed.txt
  sed -E -e '/^#/d' -e '/^[[:space:]]*$/d' -e 's/[[:space:]]+#.*$//' "$1" > "$LISTED"
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
  if [ "$3" = 1 ]; then
    while read -r id; do
      awk -v id="$id" 'substr($0, index($0, " ") + 1) == id { f = 1 } END { exit !f }' "$RESULTS" ||
        { echo "  LISTED BUT NOT RUN: $id"; status=1; }
    done < "$LISTED"
  fi
  [ -n "${ASB_E2B_JS_KEEP:-}" ] && cp "$RESULTS" "$RUN"/*.json "$RUN/js.log" "$ASB_E2B_JS_KEEP"/ 2>/dev/null
  if [ $status != 0 ]; then
    echo "--- vitest log (tail)"; sed 's/\x1b\[[0-9;]*m//g' "$RUN/js.log" | tail -150
  fi
  exit $status
}
