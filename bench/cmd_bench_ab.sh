#!/bin/sh
# Two builds' commands.run("true") side by side (issue 23): the cmd_bench of
# build A and of build B (each with its own engine, envd and client library)
# run in turns, ROUNDS times each, `cmd_bench --phases N` (N commands with
# think time, the phase timers on in both), so that the shared machine's
# load falls on both alike; then the p50 of every turn and their medians,
# and the ratio B/A. A baseline build is e.g. `main` exported and built
# beside this one:
#   mkdir -p build-base/src && git archive main | tar -x -C build-base/src
#   cmake -S build-base/src -B build-base/b -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   ninja -C build-base/b cmd_bench asb-init code-interpreter
# usage: bench/cmd_bench_ab.sh BUILD_A BUILD_B [N] [ROUNDS]   (as root)
# SPDX-License-Identifier: Apache-2.0
set -eu
A=$1
B=$2
N=${3:-200}
ROUNDS=${4:-4}
for b in "$A" "$B"; do
  [ -x "$b/bench/cmd_bench" ] || { echo "no $b/bench/cmd_bench (ninja -C $b cmd_bench)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
p50() { # the p50 (us) of commands.run("true") in a --phases output
  sed -n 's/^commands.run("true") (timers on) *p50 *\([0-9.]*\) us.*/\1/p' "$1"
}
i=0
while [ "$i" -lt "$ROUNDS" ]; do
  for v in A B; do
    eval "dir=\$$v"
    "$dir/bench/cmd_bench" --phases "$N" >"$tmp/$v.$i" 2>/dev/null
    echo "round $i $v: commands.run(\"true\") p50 $(p50 "$tmp/$v.$i") us (load $(cut -d' ' -f1 /proc/loadavg))"
  done
  i=$((i + 1))
done
med() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
ma=$(for f in "$tmp"/A.*; do p50 "$f"; done | med)
mb=$(for f in "$tmp"/B.*; do p50 "$f"; done | med)
echo "median of the rounds' p50: A $ma us, B $mb us, B/A $(awk "BEGIN {printf \"%.2f\", $mb / $ma}")x"
