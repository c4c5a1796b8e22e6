#!/usr/bin/env bash
# Does a sandbox flooding the network starve the engine's control plane?
# (issue 17, docs/networking.md "Limits"). In the closed topology of
# tests/net/topo.sh (nothing leaves the two test namespaces), one engine,
# one run, four phases side by side:
#   idle      nothing else going on
#   flood     sandbox F sends to a sink in the test internet as fast as it
#             can over 2 TCP connections (no cap)
#   capped    the same flood from a sandbox created with
#             network.egressBytesPerSecond (CAP_BPS, default 1 MiB/s)
#   conns     a sandbox with network.maxConnections (CONNS, default 1024)
#             holds that many connections to the test internet and keeps
#             opening more (each one refused by the cap) in a tight loop
# The phases take turns, ROUNDS (4) rounds of each, so that the shared
# machine's own load spreads over them alike.
# Measured in each phase, from the engine's netns (a client of the API):
#   GET /sandboxes/{B} over the engine's TCP listener (N_GET times),
#   create + kill of a base sandbox (N_CREATE), and commands.run("true") in
#   another sandbox B through the CLI (N_RUN); ms p50 / p99, and each
#   phase's p50 over idle's.
# usage: sudo bench/netflood_bench.sh build/core/engine/agent-sandboxd build/core/cli/asb
#        [N_GET] [N_CREATE] [N_RUN]
# SPDX-License-Identifier: Apache-2.0
set -u
ENGINE=$1
ASB=$2
N_GET=${3:-200}
N_CREATE=${4:-20}
N_RUN=${5:-40}
ROUNDS=${ROUNDS:-4}
CAP_BPS=${CAP_BPS:-1048576}
CONNS=${CONNS:-1024}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../tests/net/topo.sh"
[ "$(id -u)" = 0 ] || { echo "netflood_bench needs root" >&2; exit 1; }
trap topo_down EXIT
topo_up || exit 1

ST="$TOPO_DIR/state"
mkdir -m 0700 "$ST"
topo_bg "$TOPO_ENG" "$ENGINE" --state-dir "$ST" --listen 127.0.0.1:0 --cgroup-name "asbb-flood-$$" \
  --pool 4 --kill-on-exit --dns-upstream 198.18.0.1 >"$TOPO_DIR/engine.log" 2>&1
topo_wait 120 test -s "$ST/engine.url" || { echo "the engine did not start" >&2; exit 1; }
KEY=$(cat "$ST/api_key")
API="http://127.0.0.1:$(sed 's/.*://' "$ST/engine.url")"

api() { # METHOD PATH [BODY] -> body
  topo_eng curl -s -X "$1" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \
    ${3:+--data "$3"} "$API$2"
}
create() { # [NETWORK_FIELDS] -> id
  api POST /sandboxes "{\"templateID\":\"base\",\"timeout\":1800${1:+,$1}}" |
    "$TOPO_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])'
}
run_py_bg() { # ID CODE: Python in the sandbox, in the background (pid in TOPO_LAST_PID)
  local code
  code=$(printf '%s' "$2" | base64 -w0)
  topo_bg "$TOPO_ENG" env E2B_API_URL="$API" E2B_SANDBOX_URL="$API" E2B_API_KEY="$KEY" \
    "$ASB" exec "$1" --user root --timeout 1800 -- "echo $code | base64 -d > /tmp/.f.py && $TOPO_PY /tmp/.f.py" \
    >/dev/null 2>&1
}

# the test internet: a sink that discards (it marks a port's first byte),
# and a holder that accepts and keeps every connection (it counts them)
topo_bg "$TOPO_INET" "$TOPO_PY" -c '
import socket, sys, threading
def sink(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("198.18.0.1", port)); s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=drain, args=(c, port), daemon=True).start()
def drain(c, port):
    first = True
    while True:
        b = c.recv(1 << 20)
        if not b: break
        if first:
            open("%s/got%d" % (sys.argv[1], port), "w").write("1"); first = False
    c.close()
for p in (5001, 5002): threading.Thread(target=sink, args=(p,), daemon=True).start()
import time
while True: time.sleep(3600)' "$TOPO_DIR"
# a holder per conns phase (its own port): accepts and keeps every
# connection, counts them in $TOPO_DIR/held
HOLD='
import os, socket, sys
h = socket.socket(); h.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
h.bind(("198.18.0.1", int(sys.argv[2]))); h.listen(4096)
held = []
while True:
    c, _ = h.accept(); held.append(c)
    open(sys.argv[1] + "/held.tmp", "w").write(str(len(held)))
    os.replace(sys.argv[1] + "/held.tmp", sys.argv[1] + "/held")'
topo_wait 30 topo_inet sh -c "ss -tln | grep -q 198.18.0.1:5002" || { echo "sinks did not start" >&2; exit 1; }

FLOOD='
import socket, threading
buf = b"x" * (1 << 20)
def go():
    s = socket.create_connection(("198.18.0.1", PORT), timeout=60)
    while True: s.sendall(buf)
ts = [threading.Thread(target=go) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()'
CONNECT='
import errno, resource, socket
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held, refused = [], 0
while True:
    try:
        held.append(socket.create_connection(("198.18.0.1", PORT), timeout=30))
    except OSError:
        refused += 1'

B=$(create)
[ -n "$B" ] || { echo "create B failed" >&2; exit 1; }
api GET "/sandboxes/$B" >/dev/null
pct() { sort -n | awk -v p="$1" '{v[NR]=$1} END {i=int((NR-1)*p/100)+1; if (i > NR) i = NR; print v[i]}'; }
now_ms() { date +%s%N | awk '{printf "%.3f\n", $1 / 1e6}'; }
measure() { # PHASE: N_GET gets, N_CREATE create+kill, N_RUN commands.run (appended)
  local ph=$1 i id t0 t1 out
  for ((i = 0; i < N_GET; i++)); do
    topo_eng curl -s -o /dev/null -H "X-API-Key: $KEY" -w '%{time_total}\n' "$API/sandboxes/$B" |
      awk '{printf "%.3f\n", $1 * 1000}' >>"$TOPO_DIR/get_$ph"
  done
  for ((i = 0; i < N_CREATE; i++)); do
    t0=$(now_ms)
    id=$(create)
    api DELETE "/sandboxes/$id" >/dev/null
    t1=$(now_ms)
    [ -n "$id" ] || echo "create failed in phase $ph" >&2
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}' >>"$TOPO_DIR/ck_$ph"
  done
  for ((i = 0; i < N_RUN; i++)); do
    t0=$(now_ms)
    out=$(topo_eng env E2B_API_URL="$API" E2B_SANDBOX_URL="$API" E2B_API_KEY="$KEY" \
      "$ASB" exec "$B" --timeout 120 -- true 2>&1) || echo "commands.run failed in phase $ph: $out" >&2
    t1=$(now_ms)
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}' >>"$TOPO_DIR/run_$ph"
  done
}
stop_load() { # ID PID: the load's sandbox killed, its client gone
  api DELETE "/sandboxes/$1" >/dev/null
  topo_wait 120 sh -c "! kill -0 $2" || kill "$2" 2>/dev/null
  wait "$2" 2>/dev/null
}
HELD=0
phase() { # PHASE: starts its load, measures a round's share, stops the load
  local ph=$1 id="" pid="" hpid="" port
  case $ph in
  flood | capped)
    port=5001
    if [ "$ph" = capped ]; then
      port=5002
      id=$(create "\"network\":{\"egressBytesPerSecond\":$CAP_BPS}")
    else
      id=$(create)
    fi
    rm -f "$TOPO_DIR/got$port"
    run_py_bg "$id" "${FLOOD//PORT/$port}"
    pid=$TOPO_LAST_PID
    topo_wait 120 test -s "$TOPO_DIR/got$port" || echo "the $ph flood did not start" >&2
    ;;
  conns)
    id=$(create "\"network\":{\"maxConnections\":$CONNS}")
    rm -f "$TOPO_DIR/held"
    port=$((6000 + r))
    topo_bg "$TOPO_INET" "$TOPO_PY" -c "$HOLD" "$TOPO_DIR" "$port"
    hpid=$TOPO_LAST_PID
    topo_wait 30 topo_inet sh -c "ss -tln | grep -q 198.18.0.1:$port" || echo "no holder" >&2
    run_py_bg "$id" "${CONNECT//PORT/$port}"
    pid=$TOPO_LAST_PID
    topo_wait 300 sh -c "[ \$(cat '$TOPO_DIR/held' 2>/dev/null || echo 0) -ge $CONNS ]" ||
      echo "the connections did not reach the cap ($(cat "$TOPO_DIR/held" 2>/dev/null))" >&2
    ;;
  esac
  N_GET=$((N_GET_ALL / ROUNDS)) N_CREATE=$((N_CREATE_ALL / ROUNDS)) N_RUN=$((N_RUN_ALL / ROUNDS)) measure "$ph"
  if [ -n "$pid" ]; then
    kill -0 "$pid" 2>/dev/null || echo "the $ph load ended before its measurement did" >&2
    [ "$ph" = conns ] && HELD=$(cat "$TOPO_DIR/held" 2>/dev/null || echo 0)
    stop_load "$id" "$pid"
  fi
  if [ -n "$hpid" ]; then
    kill "$hpid" 2>/dev/null
    wait "$hpid" 2>/dev/null
  fi
}

N_GET_ALL=$N_GET N_CREATE_ALL=$N_CREATE N_RUN_ALL=$N_RUN
N_GET=5 N_CREATE=3 N_RUN=3 measure warm # the base template, the pools
for ph in idle flood capped conns; do : >"$TOPO_DIR/get_$ph" >"$TOPO_DIR/ck_$ph" >"$TOPO_DIR/run_$ph"; done
# ROUNDS rounds, each phase once per round, so that the machine's own
# load (shared) spreads over all phases alike
for ((r = 0; r < ROUNDS; r++)); do
  for ph in idle flood capped conns; do phase "$ph"; done
done

echo "control plane under a sandbox's network load (ms; ratio = p50 / idle p50)"
echo "  GET /sandboxes/{id} n=$N_GET, create+kill n=$N_CREATE, commands.run(true) in another sandbox n=$N_RUN;"
echo "  $ROUNDS rounds, each phase once a round"
echo "  capped = egressBytesPerSecond $CAP_BPS; conns = $HELD connections held (last round) (maxConnections $CONNS) + refused retries"
for what in get ck run; do
  case $what in get) label="GET /sandboxes/{id}" ;; ck) label="create+kill" ;; run) label="commands.run" ;; esac
  base=$(pct 50 <"$TOPO_DIR/${what}_idle")
  for ph in idle flood capped conns; do
    p50=$(pct 50 <"$TOPO_DIR/${what}_$ph")
    p99=$(pct 99 <"$TOPO_DIR/${what}_$ph")
    awk -v l="$label" -v ph="$ph" -v a="$p50" -v b="$p99" -v c="$base" \
      'BEGIN {printf "  %-20s %-7s p50 %8.2f  p99 %8.2f  ratio %5.2fx\n", l, ph, a, b, a / c}'
  done
done
