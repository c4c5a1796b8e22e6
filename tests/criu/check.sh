#!/usr/bin/env bash
# criu.check: the criu that scripts/build-criu.sh put in the cache works on
# this machine: `criu check` says "Looks good.", and a process of its own
# session holding 8 MiB of random bytes and a counter is dumped (which ends
# it) and restored with the same pid, its counter going on and its bytes'
# SHA-256 unchanged; and it is a criu of our current patches (it knows
# --userns-owner, which the engine's restore passes: a cache built before
# scripts/criu/restore-userns-owner.patch would fail every restore). Needs
# root.
#
# No criu in the cache fails the test (run scripts/build-criu.sh), unless
# ASB_SKIP_CRIU=1 says the run chose to go without it: then it skips (77).
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

test_name=criu.check
. "$(dirname "$0")/lib.sh"

dir="$(mktemp -d /tmp/asb-criu-check.XXXXXX)"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

echo "== criu check ($criu, $("$criu" --version | awk '/^Version/ {print $2}'))"
"$criu" check > "$dir/check.log" 2>&1 || { cat "$dir/check.log"; fail "criu check failed"; }
cat "$dir/check.log"
grep -qx "Looks good." "$dir/check.log" || fail "criu check did not say 'Looks good.'"
"$criu" --help > "$dir/help.txt" 2>&1 || true # (a pipe into grep -q: SIGPIPE, pipefail)
grep -q -- '--userns-owner' "$dir/help.txt" ||
  fail "$criu has no --userns-owner (scripts/criu/restore-userns-owner.patch), which the engine's restore needs: a criu of older patches, run scripts/build-criu.sh"

echo "== dump and restore a process"
# The process: its bytes' hash in hash.before at start; a counter in count;
# on SIGUSR1 it hashes its bytes again into hash.after. Its own session, no
# terminal, so criu needs no --shell-job.
cat > "$dir/proc.py" <<'PY'
import hashlib, os, signal, sys, time
d = sys.argv[1]
data = bytearray(os.urandom(8 << 20))
def put(name, text):
    with open(os.path.join(d, name + ".tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(d, name + ".tmp"), os.path.join(d, name))
def again(*_):
    put("hash.after", hashlib.sha256(data).hexdigest())
signal.signal(signal.SIGUSR1, again)
put("hash.before", hashlib.sha256(data).hexdigest())
n = 0
while True:
    n += 1
    put("count", str(n))
    time.sleep(0.02)
PY
setsid /usr/bin/python3 "$dir/proc.py" "$dir" < /dev/null > /dev/null 2>&1 &
pid=$!
until_ok 20 test -s "$dir/count" || fail "the process did not start"
mkdir "$dir/img"
"$criu" dump -t "$pid" -D "$dir/img" -o dump.log ||
  { cat "$dir/img/dump.log" 2>/dev/null; fail "criu dump failed"; }
until_ok 10 sh -c "! kill -0 $pid 2>/dev/null" || fail "the process outlived its dump"
before="$(cat "$dir/count")"
"$criu" restore -D "$dir/img" -d -o restore.log ||
  { cat "$dir/img/restore.log" 2>/dev/null; fail "criu restore failed"; }
kill -0 "$pid" 2>/dev/null || fail "no process $pid after the restore"
grep -q proc.py "/proc/$pid/cmdline" || fail "pid $pid is not the restored process"
until_ok 20 sh -c "[ \"\$(cat '$dir/count')\" -gt $before ]" ||
  fail "the restored process's counter did not go on from $before"
kill -USR1 "$pid"
until_ok 20 test -s "$dir/hash.after" || fail "the restored process did not answer SIGUSR1"
[ "$(cat "$dir/hash.before")" = "$(cat "$dir/hash.after")" ] ||
  fail "the restored process's bytes changed"
echo "restored pid $pid: counter $before -> $(cat "$dir/count"), sha256 $(cut -c1-16 "$dir/hash.after")... unchanged"
echo "criu.check: ok"
