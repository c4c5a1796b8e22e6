#!/bin/sh
# Runs one busted spec of the Lua binding against a real agent-sandboxd of
# its own (own state dir, free loopback port, own cgroup name,
# --kill-on-exit), configured the way users' programs find it: only
# ASB_STATE_DIR (and ASB_SESSION_DIR) are set. The engine is stopped and
# its state removed on every exit, a failing or interrupted one too.
#
# usage: run.sh <agent-sandboxd> <lua tree (build/lua)> <spec file> [busted args]
# Exits 77 (skipped) when the binding is not built, busted or Lua 5.4 is
# missing, or not root (the engine needs it).
#
# busted runs under Lua 5.4 as `lua5.4 /usr/bin/busted`: Debian's
# /usr/bin/busted starts with `#!/usr/bin/env lua`, and `lua` is whatever
# the lua-interpreter alternative points at (lua5.1 once lua-busted pulls it
# in), while the package installs busted's modules for 5.1 to 5.4.
# SPDX-License-Identifier: Apache-2.0
ENGINE=$1
TREE=$(cd "$2" 2>/dev/null && pwd)
SPEC=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
shift 3
skip() {
  echo "$1: skipped"
  exit 77
}
[ -f "$TREE/agent_sandbox/core.so" ] || skip "lua binding not built (cmake --build build)"
command -v lua5.4 >/dev/null 2>&1 || skip "no lua5.4 (apt-get install lua5.4)"
[ -f /usr/bin/busted ] || skip "no busted (apt-get install lua-busted)"
[ "$(id -u)" = 0 ] || skip "the engine needs root"
[ -x "$ENGINE" ] || skip "no engine at $ENGINE"

# A sanitizer build's module needs its runtime loaded first: lua5.4 is not
# instrumented, so busted's lua5.4 (and the lua5.4 the specs start, H.LUA
# in helper.lua) is started by the dynamic loader with the module's own
# libasan and libubsan preloaded: `ld.so --preload`, which puts them in
# that process only. Lua closes its state at exit, so LeakSanitizer sees
# what the module left.
#
# Not LD_PRELOAD: a preload in the environment reaches every program
# these lua5.4s start (curl through io.popen in an example, python3, sh),
# and the ASan runtime in a program not built with it hangs many of them
# for good before main gets anywhere (curl, wget, ...): the runtime
# initialises itself lazily, in the first malloc; for curl that is inside
# newlocale() in libp11-kit's constructor, which holds glibc's locale lock
# for writing; the runtime's init calls dlerror(), whose dcgettext asks
# for that lock as a reader (refused: this thread is its writer) and then
# unlocks it, releasing newlocale's write lock; newlocale's own unlock
# then drops a reader that never was, and curl's setlocale() in main
# waits on the unbalanced lock forever (no other thread exists).
# That was the host curl to a loopback URL that hung lua.examples.
san=$(ldd "$TREE/agent_sandbox/core.so" 2>/dev/null | awk '/lib(asan|ubsan)\.so/ {print $3}' |
      tr '\n' ' ')
lua=$(command -v lua5.4)
ldso=
if [ -n "$san" ]; then
  ldso=$(ldd "$lua" | awk '$1 ~ /^\// && $1 ~ /ld-linux/ {print $1; exit}')
  [ -x "$ldso" ] || skip "no dynamic loader found for $lua"
fi
export ASB_LUA_PRELOAD="$san" ASB_LUA_LDSO="$ldso" ASB_LUA_BIN="$lua"

HERE=$(cd "$(dirname "$0")" && pwd)
if [ -n "$san" ]; then
  LSAN_OPTIONS="suppressions=$HERE/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
  export LSAN_OPTIONS
fi
name=$(basename "$SPEC" _spec.lua)
state=$(mktemp -d "${TMPDIR:-/tmp}/asb-lua-$name-XXXXXX") || exit 1
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    wait "$pid"
  fi
  if [ -n "$ASB_TEST_KEEP_LOGS" ]; then
    echo "engine log: $state/engine.log"
  else
    rm -rf "$state"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A spec may want more engine options: a line "-- engine-args: ARGS" in it
# (words split at blanks, e.g. "-- engine-args: --pause-swap 64M").
extra=$(sed -n 's/^-- engine-args: //p' "$SPEC" | head -n 1)
# "-- engine-criu" in it: the engine runs with --pause-criu and the criu
# binary ($ASB_CRIU, else scripts/build-criu.sh's); skipped without one.
if grep -q '^-- engine-criu$' "$SPEC"; then
  criu=${ASB_CRIU:-/var/cache/agent-sandbox/criu/bin/criu}
  [ -x "$criu" ] || skip "no criu at $criu (scripts/build-criu.sh builds it)"
  extra="$extra --pause-criu --criu $criu"
fi
# shellcheck disable=SC2086 # $extra: one word per option
"$ENGINE" --state-dir "$state/engine" --listen 127.0.0.1:0 --cgroup-name "asblua-$name-$$" \
  --pool 2 --kill-on-exit $extra >"$state/engine.out" 2>"$state/engine.log" &
pid=$!
# Wait for its "listening on" line (the deadline only stops a hung start).
n=0
until grep -q '^listening on' "$state/engine.out" 2>/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null || [ $n -ge 1200 ]; then
    echo "the engine did not start:"
    cat "$state/engine.log"
    exit 1
  fi
  n=$((n + 1))
  sleep 0.05
done

for v in API_KEY API_URL DOMAIN SANDBOX_URL DEBUG; do
  unset "ASB_$v" "E2B_$v"
done
export ASB_STATE_DIR="$state/engine" ASB_SESSION_DIR="$state/sessions"
export ASB_TEST_STATE="$state"
export LUA_PATH="$TREE/?.lua;$TREE/?/init.lua;$HERE/?.lua;;"
export LUA_CPATH="$TREE/?.so;;"
cd "$HERE" || exit 1
if [ -n "$san" ]; then
  "$ldso" --preload "$san" "$lua" /usr/bin/busted --no-auto-insulate "$@" "$SPEC"
else
  "$lua" /usr/bin/busted --no-auto-insulate "$@" "$SPEC"
fi
