# Sourced by the criu.* tests (check.sh, sandbox.sh) after they set $test_name
# (their ctest name): $criu, the cached criu ($ASB_CRIU overrides it; the
# cache is $ASB_CRIU_CACHE, else /var/cache/agent-sandbox/criu); fail MSG;
# until_ok SECONDS CMD... (waits for a condition, with a deadline). Fails
# when not root; no criu fails too, unless ASB_SKIP_CRIU=1 says the run
# chose to go without it: then the test skips (77).
# SPDX-License-Identifier: Apache-2.0

criu="${ASB_CRIU:-${ASB_CRIU_CACHE:-/var/cache/agent-sandbox/criu}/bin/criu}"
fail() { echo "$test_name: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root"
if ! [ -x "$criu" ]; then
  if [ "${ASB_SKIP_CRIU:-}" = 1 ]; then
    echo "$test_name: SKIP: no $criu and ASB_SKIP_CRIU=1"
    exit 77
  fi
  fail "no criu at $criu: run scripts/build-criu.sh (as root), or set ASB_SKIP_CRIU=1 to skip the criu tests"
fi

until_ok() { # SECONDS CMD...: waits for a condition (a deadline, not a sleep)
  local end=$((SECONDS + $1)); shift
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.05
  done
}
