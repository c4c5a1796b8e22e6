#!/usr/bin/env bash
# The sandboxes' network, side by side in one run (docs/networking.md), in
# the closed topology of tests/net/topo.sh (nothing leaves the two test
# namespaces):
#   create:     POST /sandboxes (base) on an engine with network vs one
#               with --no-network in the same netns, alternated; ms p50/p90
#               and the ratio (target <= 1.2x)
#   throughput: a bulk TCP upload to a sink in the test internet from a
#               sandbox (forwarded, filtered, masqueraded) vs from the
#               engine's netns itself (the host's view), alternated;
#               MiB/s median and the ratio (target >= 0.8x)
# usage: sudo bench/net_bench.sh build/core/engine/agent-sandboxd build/core/cli/asb [N] [MiB]
# NET_BENCH_BASELINE=ANOTHER_AGENT_SANDBOXD: the create baseline is that
# binary with network on (an A/B of two builds) instead of --no-network.
# TOPO_V6=1: the topology (and so the sandboxes) with IPv6.
# SPDX-License-Identifier: Apache-2.0
set -u
ENGINE=$1
ASB=$2
N=${3:-20}
MIB=${4:-256}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../tests/net/topo.sh"
trap topo_down EXIT
topo_up || exit 1

start() { # DIR CGNAME ARGS... -> sets URL_<dir>
  local st="$TOPO_DIR/$1"
  mkdir -m 0700 "$st"
  topo_bg "$TOPO_ENG" "${BIN:-$ENGINE}" --state-dir "$st" --listen 127.0.0.1:0 --cgroup-name "$2" \
    --pool 8 --kill-on-exit "${@:3}"
  topo_wait 120 test -s "$st/engine.url" || { echo "engine $1 did not start" >&2; exit 1; }
}
start net "asbb-net-$$" --dns-upstream 198.18.0.1
BASELINE=${NET_BENCH_BASELINE:-}
if [ -n "$BASELINE" ]; then
  BIN=$BASELINE start off "asbb-off-$$" --dns-upstream 198.18.0.1
  OFF_LABEL="baseline build"
else
  start off "asbb-off-$$" --no-network
  OFF_LABEL="--no-network"
fi

create_ms() { # DIR -> ms of one create (the sandbox is killed after)
  local st="$TOPO_DIR/$1" key out id
  key=$(cat "$st/api_key")
  out=$(curl -s --unix-socket "$st/engine.sock" -H "X-API-Key: $key" -H 'Content-Type: application/json' \
    --data '{"templateID":"base","timeout":120}' -w '\n%{time_total}' http://engine/sandboxes)
  id=$(printf '%s' "$out" | head -n1 | "$TOPO_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])')
  curl -s --unix-socket "$st/engine.sock" -H "X-API-Key: $key" -X DELETE "http://engine/sandboxes/$id" >/dev/null
  printf '%s' "$out" | tail -n1 | awk '{printf "%.1f\n", $1 * 1000}'
}
pct() { sort -n | awk -v p="$1" '{v[NR]=$1} END {i=int((NR-1)*p/100)+1; print v[i]}'; }

create_ms net >/dev/null # warm both (the base template, the pools)
create_ms off >/dev/null
: >"$TOPO_DIR/c_net"
: >"$TOPO_DIR/c_off"
for ((i = 0; i < N; i++)); do
  create_ms net >>"$TOPO_DIR/c_net"
  create_ms off >>"$TOPO_DIR/c_off"
done
for k in net off; do
  eval "p50_$k=\$(pct 50 <\"\$TOPO_DIR/c_$k\")"
  eval "p90_$k=\$(pct 90 <\"\$TOPO_DIR/c_$k\")"
done
echo "create (n=$N each, alternated)"
printf '  with network     p50 %7.1f ms  p90 %7.1f ms\n' "$p50_net" "$p90_net"
printf '  %-16s p50 %7.1f ms  p90 %7.1f ms\n' "$OFF_LABEL" "$p50_off" "$p90_off"
awk -v a="$p50_net" -v b="$p50_off" 'BEGIN {printf "  ratio p50        %.2fx (target <= 1.2x)\n", a / b}'

# ---- throughput ----
SINK='
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.18.0.1", 5001)); s.listen(8)
while True:
    c, _ = s.accept()
    while c.recv(1 << 20): pass
    c.close()'
topo_bg "$TOPO_INET" "$TOPO_PY" -c "$SINK"
SEND="
import socket, time
buf = b'x' * (1 << 20)
s = socket.create_connection(('198.18.0.1', 5001), timeout=60)
t = time.monotonic()
for _ in range($MIB): s.sendall(buf)
s.shutdown(socket.SHUT_WR); s.recv(1)
print('%.1f' % ($MIB / (time.monotonic() - t)))"
topo_wait 30 topo_eng "$TOPO_PY" -c "import socket; socket.create_connection(('198.18.0.1', 5001), 5)"
st="$TOPO_DIR/net"
key=$(cat "$st/api_key")
api="http://127.0.0.1:$(sed 's/.*://' "$st/engine.url")"
id=$(curl -s --unix-socket "$st/engine.sock" -H "X-API-Key: $key" -H 'Content-Type: application/json' \
  --data '{"templateID":"base","timeout":600}' http://engine/sandboxes |
  "$TOPO_PY" -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])')
code=$(printf '%s' "$SEND" | base64 -w0)
: >"$TOPO_DIR/t_sbx"
: >"$TOPO_DIR/t_host"
for ((i = 0; i < 5; i++)); do
  topo_eng env E2B_API_URL="$api" E2B_SANDBOX_URL="$api" E2B_API_KEY="$key" "$ASB" exec "$id" \
    --timeout 300 -- "echo $code | base64 -d | $TOPO_PY -" >>"$TOPO_DIR/t_sbx"
  topo_eng "$TOPO_PY" -c "$SEND" >>"$TOPO_DIR/t_host"
done
ts=$(pct 50 <"$TOPO_DIR/t_sbx")
th=$(pct 50 <"$TOPO_DIR/t_host")
echo "throughput ($MIB MiB upload, median of 5, alternated)"
printf '  sandbox -> test internet  %8.1f MiB/s\n' "$ts"
printf '  host    -> test internet  %8.1f MiB/s\n' "$th"
awk -v a="$ts" -v b="$th" 'BEGIN {printf "  ratio                     %.2fx (target >= 0.8x)\n", a / b}'
