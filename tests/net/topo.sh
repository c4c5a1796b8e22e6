# The closed test topology of the network tests (NET.md "Tests"), sourced
# by them (bash). Two network namespaces with names unique to the test:
#
#   $TOPO_ENG   the engine runs here ("the host"); its only interface
#               besides lo is up0 198.18.0.2/24, default route via
#               198.18.0.1
#   $TOPO_INET  "the internet": dn0 198.18.0.1/24, and on lo 198.18.1.1,
#               198.18.2.1 (more internet hosts), 10.200.0.1 (a private
#               network) and 169.254.169.254 (the metadata address); an
#               HTTP server on port 80 of all of them (GET /hello answers
#               "internet"), dnsmasq on 198.18.0.1:53 with static records
#               only (example.test, *.example.test -> 198.18.1.1,
#               other.test -> 198.18.2.1)
#
# TOPO_V6=1 (set before topo_up) adds IPv6 on the benchmarking range
# 2001:2::/48 (RFC 5180, the IPv6 twin of 198.18.0.0/15): up0 2001:2::2/64
# with a default route via dn0 2001:2::1/64; on the internet's lo
# 2001:2:1::1 and 2001:2:2::1 (more hosts) and fd00:200::1 (a private
# ULA network); the HTTP server on both families; dnsmasq's six.test ->
# AAAA 2001:2:1::1 (no A record).
#
# Neither namespace has any link to the host's namespace or anything else:
# no packet of a test can leave them, whatever a rule under test does. The
# control plane is reached through the engine's unix socket (a file), and
# clients run inside $TOPO_ENG (topo_eng CMD...). Processes enter the
# namespaces with nsenter --net only (their mounts stay the host's).
#
#   . tests/net/topo.sh
#   topo_up                 # makes it all (calls topo_down on failure)
#   trap topo_down EXIT     # the caller's trap: runs on every exit path
#
# topo_down kills what topo_up and topo_bg started, and deletes both
# namespaces (which takes their veths with them).
# SPDX-License-Identifier: Apache-2.0

TOPO_PY=/usr/bin/python3 # Debian's, not a pyenv one first on PATH
TOPO_ID="asbt$$"
TOPO_ENG="$TOPO_ID-eng"
TOPO_INET="$TOPO_ID-inet"
TOPO_DIR=""
TOPO_PIDS=()

topo_log() { echo "topo: $*" >&2; }

# nsenter, not `ip netns exec`: that one also remounts /sys in a mount
# namespace of its own, which hides /sys/fs/cgroup from the engine
topo_eng() { nsenter --net="/run/netns/$TOPO_ENG" "$@"; }
topo_inet() { nsenter --net="/run/netns/$TOPO_INET" "$@"; }

# topo_bg NETNS CMD...: starts CMD in NETNS in the background, remembered
# for topo_down; its pid in TOPO_LAST_PID.
topo_bg() {
  local ns="$1"
  shift
  nsenter --net="/run/netns/$ns" "$@" &
  TOPO_LAST_PID=$!
  TOPO_PIDS+=("$TOPO_LAST_PID")
}

# topo_wait DEADLINE_S CMD...: until CMD succeeds (a condition, never a
# fixed sleep), at most DEADLINE_S seconds.
topo_wait() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

topo_up() {
  TOPO_DIR=$(mktemp -d /tmp/asbt-net.XXXXXX) || return 1
  ip netns add "$TOPO_ENG" && ip netns add "$TOPO_INET" || { topo_down; return 1; }
  topo_eng ip link set lo up && topo_inet ip link set lo up &&
    topo_eng ip link add up0 type veth peer name dn0 netns "$TOPO_INET" &&
    topo_eng ip addr add 198.18.0.2/24 dev up0 && topo_eng ip link set up0 up &&
    topo_inet ip addr add 198.18.0.1/24 dev dn0 && topo_inet ip link set dn0 up &&
    topo_eng ip route add default via 198.18.0.1 &&
    for a in 198.18.1.1 198.18.2.1 10.200.0.1 169.254.169.254; do
      topo_inet ip addr add "$a/32" dev lo || return 1
    done || { topo_log "cannot make the namespaces"; topo_down; return 1; }
  local six=()
  if [ "${TOPO_V6:-0}" = 1 ]; then
    topo_eng ip -6 addr add 2001:2::2/64 dev up0 nodad &&
      topo_inet ip -6 addr add 2001:2::1/64 dev dn0 nodad &&
      topo_eng ip -6 route add default via 2001:2::1 &&
      for a in 2001:2:1::1 2001:2:2::1 fd00:200::1; do
        topo_inet ip -6 addr add "$a/128" dev lo || return 1
      done || { topo_log "cannot give the namespaces IPv6"; topo_down; return 1; }
    six=(--address=/six.test/2001:2:1::1)
  fi
  mkdir -p "$TOPO_DIR/www" && echo internet >"$TOPO_DIR/www/hello"
  # TOPO_HTTP_CMD: the caller's own server for port 80 (and more) instead,
  # run in $TOPO_INET; it must answer GET http://198.18.0.1/hello with 200
  if [ -n "${TOPO_HTTP_CMD:-}" ]; then
    topo_bg "$TOPO_INET" "${TOPO_HTTP_CMD[@]}"
  else
    # "::" is both families (http.server's dual-stack socket)
    local bind=0.0.0.0
    [ "${TOPO_V6:-0}" = 1 ] && bind=::
    topo_bg "$TOPO_INET" "$TOPO_PY" -m http.server 80 --bind "$bind" --directory "$TOPO_DIR/www"
  fi
  topo_bg "$TOPO_INET" dnsmasq -k --no-resolv --no-hosts --user=root --bind-interfaces \
    --listen-address=198.18.0.1 --port=53 --pid-file="$TOPO_DIR/dnsmasq.pid" \
    --address=/example.test/198.18.1.1 --address=/other.test/198.18.2.1 "${six[@]}"
  if ! topo_wait 60 topo_eng curl -sf -m 5 http://198.18.0.1/hello; then
    topo_log "the test internet's HTTP server did not come up"
    topo_down
    return 1
  fi
}

topo_down() {
  local p i
  # newest first: an engine stops (and cleans up) while its netns is whole
  for ((i = ${#TOPO_PIDS[@]} - 1; i >= 0; i--)); do
    p=${TOPO_PIDS[$i]}
    kill -TERM "$p" 2>/dev/null
    # a process that ignores TERM gets KILL after 20 s
    local deadline=$((SECONDS + 20))
    while kill -0 "$p" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  TOPO_PIDS=()
  ip netns del "$TOPO_ENG" 2>/dev/null
  ip netns del "$TOPO_INET" 2>/dev/null
  [ -n "$TOPO_DIR" ] && rm -rf "$TOPO_DIR"
  TOPO_DIR=""
  return 0
}
