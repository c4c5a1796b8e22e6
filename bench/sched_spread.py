#!/usr/bin/python3
"""Where a run's threads ran and what their wake-ups cost (issue 23).

Reads `perf script -F comm,pid,tid,cpu,time,event,trace` of a trace made
with `perf record -a -e sched:sched_switch,sched:sched_waking`, e.g.

  perf record -q -a -e sched:sched_switch,sched:sched_waking -o t.data -- \
      build/bench/cmd_bench --phases 150
  perf script -i t.data -F comm,pid,tid,cpu,time,event,trace | bench/sched_spread.py

and prints, for the second half of the trace (the measured loop of
cmd_bench --phases, after the engine's start and the sandbox's creation),
every busy thread's switch-ins per CPU, and the wake-ups (sched_waking →
the wakee switched in) split by whether the wakee ran on the waker's CPU
or on another one, with their mean latency. docs/envd.md, "Why a whole
engine run is fast or slow", reads them.

usage: ... | bench/sched_spread.py [--all] [MIN]   (MIN switch-ins, default 40)
SPDX-License-Identifier: Apache-2.0
"""
import collections
import re
import sys

WAKING = re.compile(r'^\s*.*?\s+\d+/\d+\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_waking: '
                    r'comm=(.*) pid=(\d+) prio=\d+ target_cpu=\d+')
SWITCH = re.compile(r'^\s*.*?\s+\d+/\d+\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch: '
                    r'.*next_comm=(.*) next_pid=(\d+)')
# the kernel's own threads and the idle task are not the chain
KERNEL = ('swapper', 'rcu_', 'kworker', 'ksoftirqd', 'migration', 'perf')


def main():
    args = [a for a in sys.argv[1:] if a != '--all']
    whole = '--all' in sys.argv[1:]
    least = int(args[0]) if args else 40
    lines = sys.stdin.readlines()
    if not whole:
        lines = lines[len(lines) // 2:]
    cpus = collections.defaultdict(collections.Counter)
    name = {}
    pending = {}
    wake = collections.defaultdict(lambda: [0, 0.0, 0, 0.0])
    for line in lines:
        m = WAKING.match(line)
        if m:
            pending[int(m.group(4))] = (float(m.group(2)), int(m.group(1)))
            continue
        m = SWITCH.match(line)
        if not m:
            continue
        cpu, t, comm, pid = int(m.group(1)), float(m.group(2)), m.group(3), int(m.group(4))
        if comm.startswith(KERNEL):
            pending.pop(pid, None)
            continue
        cpus[pid][cpu] += 1
        name[pid] = comm
        if pid in pending:
            t0, wcpu = pending.pop(pid)
            w = wake[pid]
            if wcpu != cpu:
                w[0] += 1
                w[1] += t - t0
            else:
                w[2] += 1
                w[3] += t - t0
    ncpu = 1 + max((c for v in cpus.values() for c in v), default=0)
    tot = [0, 0.0, 0, 0.0]
    print('%7s %-18s %s | wake-ups: other CPU (n, mean) | same CPU (n, mean)' %
          ('tid', 'comm', ' '.join('cpu%-4d' % c for c in range(ncpu))))
    for pid, v in sorted(cpus.items(), key=lambda kv: -sum(kv[1].values())):
        if sum(v.values()) < least:
            continue
        w = wake[pid]
        for i in range(4):
            tot[i] += w[i]
        print('%7d %-18s %s | %5d %7.1f us | %5d %7.1f us' %
              (pid, name[pid][:18], ' '.join('%-7d' % v[c] for c in range(ncpu)),
               w[0], w[1] / max(w[0], 1) * 1e6, w[2], w[3] / max(w[2], 1) * 1e6))
    print('these threads: %d wake-ups onto another CPU, mean %.1f us; %d on the same CPU, '
          'mean %.1f us' % (tot[0], tot[1] / max(tot[0], 1) * 1e6, tot[2],
                            tot[3] / max(tot[2], 1) * 1e6))


if __name__ == '__main__':
    main()
