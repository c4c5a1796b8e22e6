#!/bin/sh
# Issue 23's bimodal engine path: commands.run("true") with the scheduler's
# own placement against everything on one CPU, in turns, in one run. The
# same build's `cmd_bench --phases N` (its own engine, sandbox, envd and
# client each turn) runs ROUNDS times unpinned and ROUNDS times under
# `taskset -c CPU` (the engine, the sandbox's processes and the client all
# inherit it), so the machine's load falls on both alike; then every turn's
# p50 of the command and of the client's request → response head, their
# medians, and the ratio pinned/unpinned. Where a wake-up of a thread on
# the other CPU is expensive (a VM whose idle vCPU halts: docs/envd.md,
# "Why a whole engine run is fast or slow"), the unpinned turns are slower
# and spread; on a host with cheap cross-CPU wake-ups both are alike.
# usage: bench/cmd_bench_cpus.sh BUILD [N] [ROUNDS] [CPU]   (as root)
# SPDX-License-Identifier: Apache-2.0
set -eu
B=$1
N=${2:-150}
ROUNDS=${3:-4}
CPU=${4:-0}
[ -x "$B/bench/cmd_bench" ] || { echo "no $B/bench/cmd_bench (ninja -C $B cmd_bench)" >&2; exit 2; }
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
field() { # FILE LABEL-REGEX: the p50 (us) of that line of a --phases output
  sed -n "s/^$2 *p50 *\([0-9.]*\) us.*/\1/p" "$1"
}
i=0
while [ "$i" -lt "$ROUNDS" ]; do
  for v in free pinned; do
    if [ "$v" = free ]; then
      "$B/bench/cmd_bench" --phases "$N" >"$tmp/$v.$i" 2>/dev/null
    else
      taskset -c "$CPU" "$B/bench/cmd_bench" --phases "$N" >"$tmp/$v.$i" 2>/dev/null
    fi
    printf 'round %d %-6s: commands.run("true") p50 %8s us, to_head p50 %8s us (load %s)\n' "$i" "$v" \
      "$(field "$tmp/$v.$i" 'commands.run("true") (timers on)')" \
      "$(field "$tmp/$v.$i" 'asb-timing to_head_us')" "$(cut -d' ' -f1 /proc/loadavg)"
  done
  i=$((i + 1))
done
med() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
meds() { # VARIANT LABEL: the median over that variant's turns
  for f in "$tmp"/"$1".*; do field "$f" "$2"; done | med
}
RUN='commands.run("true") (timers on)'
HEAD='asb-timing to_head_us'
run_free=$(meds free "$RUN")
head_free=$(meds free "$HEAD")
run_pinned=$(meds pinned "$RUN")
head_pinned=$(meds pinned "$HEAD")
echo "median of the rounds' p50: unpinned $run_free us (head $head_free), on CPU $CPU $run_pinned us (head $head_pinned), pinned/unpinned $(awk "BEGIN {printf \"%.2f\", $run_pinned / $run_free}")x"
