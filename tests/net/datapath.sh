#!/usr/bin/env bash
# net.datapath: the sandboxes' datapath end to end (core/net/datapath.c
# through the engine), in the closed topology of topo.sh: nothing can leave
# the two test namespaces. One engine, many checks:
#   internet on / off; allowOut CIDR and IP (internet off); denyOut with
#   allowOut precedence; live update (PUT /sandboxes/{id}/network) opening
#   and closing, and cutting an open connection; the always-blocked ranges
#   (a private network, 169.254.169.254) refused unless allowOut names
#   them; sandbox -> sandbox refused; sandbox -> the engine's host (its API,
#   a host service on every address) refused; DNS to any address redirected
#   to the engine (no bypass to another server); source spoofing refused;
#   400 for bad policies, GET shows the policy, byte counters in metrics;
#   while a sandbox floods the test internet, the API answers and another
#   sandbox's command completes;
#   after kill the sandbox's rules are gone and its pair is back in the
#   pool; after a crash the next engine adopts them with their policies
#   (one paused with memory too: network again when connected); after the
#   engine stops, no table and no link of it are left.
#   IPv6 (TOPO_V6: the test internet on 2001:2::/48): a ULA per sandbox,
#   NAT66 out, the same rules (private ULA, the host, other sandboxes,
#   spoofed sources refused; allowOut/denyOut v6 CIDRs; 0.0.0.0/0 denied
#   means IPv6 too; a domain allowance over AAAA through the proxy).
#   The sysctls the engine turns on (forwarding, accept_ra) go back at
#   stop, also after a crash and a restart.
# Usage: datapath.sh AGENT_SANDBOXD ASB_CLI   (root)
# SPDX-License-Identifier: Apache-2.0
set -u
ENGINE=$1
ASB=$2
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/topo.sh"

FAILS=0
fail() {
  echo "FAIL: $*" >&2
  FAILS=$((FAILS + 1))
}
ok() { echo "ok   $*"; }

[ "$(id -u)" = 0 ] || { echo "net.datapath needs root" >&2; exit 77; }
trap topo_down EXIT
TOPO_V6=1
topo_up || exit 1
# what the engine must give back: forwarding off, the uplink taking RAs
topo_eng sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0 net.ipv6.conf.up0.accept_ra=1
sysctls() {
  topo_eng cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv6/conf/all/forwarding \
    /proc/sys/net/ipv6/conf/up0/accept_ra | tr '\n' ' '
}

STATE="$TOPO_DIR/state"
mkdir -m 0700 "$STATE"
CG="asbt-net-$$"
# --listen 0.0.0.0: the API on every address of the engine's netns, so that
# only the datapath's input rules keep sandboxes from it
start_engine() {
  rm -f "$STATE/engine.url"
  topo_bg "$TOPO_ENG" "$ENGINE" --state-dir "$STATE" --listen 0.0.0.0:0 --cgroup-name "$CG" \
    --pool 2 --kill-on-exit --dns-upstream 198.18.0.1
  ENGINE_PID=$TOPO_LAST_PID
  topo_wait 120 sh -c "test -s '$STATE/engine.url' || ! kill -0 $ENGINE_PID"
  test -s "$STATE/engine.url" || { echo "the engine did not start" >&2; exit 1; }
  URL=$(cat "$STATE/engine.url")
  PORT=${URL##*:}
  KEY=$(cat "$STATE/api_key")
  API="http://127.0.0.1:$PORT"
}
start_engine
got=$(sysctls)
[ "$got" = "1 1 2 " ] && ok "the engine turned forwarding on, RAs kept on the uplink ($got)" ||
  fail "sysctls while running: '$got'"
TABLE=$(topo_eng nft -j list tables | "$TOPO_PY" -c '
import json, sys
print(" ".join(t["table"]["name"] for t in json.load(sys.stdin)["nftables"]
               if "table" in t and t["table"]["name"].startswith("asb_")))')
[ -n "$TABLE" ] || fail "the engine made no nftables table"
PREFIX="as${TABLE:4:7}"

# api METHOD PATH [BODY]: the control plane over the engine's unix socket;
# prints the body, then the status on a line of its own
api() {
  curl -s --unix-socket "$STATE/engine.sock" -X "$1" -H "X-API-Key: $KEY" \
    -H 'Content-Type: application/json' ${3:+--data "$3"} -w '\n%{http_code}' "http://engine$2"
}
status() { api "$@" | tail -n1; }
json() { "$TOPO_PY" -c "import json,sys; d=json.loads(sys.stdin.read().rsplit('\n',1)[0]); print($1)"; }

create() { # create NETWORK_JSON_FIELDS -> sandbox id
  api POST /sandboxes "{\"templateID\":\"base\",\"timeout\":900${1:+,$1}}" | json 'd["sandboxID"]'
}
# sx ID CMD...: runs CMD in the sandbox (the client inside the engine's netns)
sx() {
  local id=$1
  shift
  topo_eng env E2B_API_URL="$API" E2B_SANDBOX_URL="$API" E2B_API_KEY="$KEY" \
    "$ASB" exec "$id" --user root --timeout 60 -- "$@"
}
# sxpy ID CODE [ARGS]: Python in the sandbox (root). asb exec hands its
# words to a shell as one command line, so the code goes base64'd.
sxpy() {
  local id=$1 code
  code=$(printf '%s' "$2" | base64 -w0)
  shift 2
  sx "$id" "echo $code | base64 -d > /tmp/.t.py && $TOPO_PY /tmp/.t.py $*"
}
# reach ID URL / refused ID URL: an HTTP GET from the sandbox answers 200,
# or gets no HTTP answer at all (curl's 000). Generous deadlines: a refusal is a reject (at once);
# if it ever were a silent drop the check still holds, only slower.
reach() {
  local got
  got=$(sx "$1" curl -g -s -m 30 -o /dev/null -w '%{http_code}' "$2" 2>/dev/null)
  if [ "$got" = 200 ]; then ok "$1 reaches $2"; else fail "$1 cannot reach $2 (got '$got')"; fi
}
refused() { # any HTTP answer at all (the engine's /health is a 204) is a reach
  local got
  got=$(sx "$1" curl -g -s -m 30 -o /dev/null -w '%{http_code}' "$2" 2>/dev/null)
  if [ "$got" = 000 ]; then ok "$1 is refused $2"; else fail "$1 reached $2 ($got)"; fi
}

I1=http://198.18.0.1/hello # the internet
I2=http://198.18.1.1/hello
I3=http://198.18.2.1/hello
PRIV=http://10.200.0.1/hello
META=http://169.254.169.254/hello

# ---- bad input: 400 and nothing made ----
for body in '"allowInternetAccess":1' '"network":{"allowOut":["1.2.3.4/33"]}' \
  '"network":{"denyOut":["example.com"]}' '"network":[]'; do
  st=$(status POST /sandboxes "{\"templateID\":\"base\",$body}")
  [ "$st" = 400 ] && ok "400 for $body" || fail "create with $body: $st, want 400"
done

# ---- internet on (the default) ----
A=$(create)
[ -n "$A" ] || { fail "create"; exit 1; }
reach "$A" "$I1"
reach "$A" "$I2"
# the always-blocked: a private network, the metadata address, other
# sandboxes (below), the engine's host (below)
refused "$A" "$PRIV"
refused "$A" "$META"
# the host: its API on every address of its netns, and a host service
refused "$A" "http://198.18.0.2:$PORT/health"
refused "$A" "http://10.88.0.1:$PORT/health"
topo_bg "$TOPO_ENG" "$TOPO_PY" -m http.server 8081 --bind 0.0.0.0 --directory "$TOPO_DIR/www"
topo_wait 60 topo_eng curl -sf -m 5 http://198.18.0.2:8081/hello || fail "host service did not start"
refused "$A" http://198.18.0.2:8081/hello
refused "$A" http://10.88.0.1:8081/hello
# resolv.conf names the engine's resolver (which asks the test internet's
# dnsmasq); DNS to any other address is redirected to it too: a query to an
# address with no DNS server (198.18.2.1) is answered
got=$(sx "$A" cat /etc/resolv.conf)
[ "$got" = "nameserver 10.88.0.1" ] && ok "resolv.conf: $got" || fail "resolv.conf: '$got'"
got=$(sx "$A" getent hosts example.test | awk '{print $1}')
[ "$got" = 198.18.1.1 ] && ok "example.test resolves to $got" || fail "example.test: '$got'"
reach "$A" http://example.test/hello
dns=$(sxpy "$A" '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(20)
s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x04test\x00\x00\x01\x00\x01",
         ("198.18.2.1", 53))
try:
    d = s.recv(512); print("answered", d[:2] == b"\x12\x34" and d[-4:] == socket.inet_aton("198.18.1.1"))
except OSError as e:
    print("no answer", type(e).__name__)' 2>&1)
[ "$dns" = "answered True" ] && ok "DNS to 198.18.2.1:53 answered by the engine" ||
  fail "DNS to another address: $dns"
# source spoofing: root inside (CAP_NET_RAW) sends UDP from another
# sandbox's address with a raw socket; the test internet gets only the
# genuine datagram
topo_bg "$TOPO_INET" "$TOPO_PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("198.18.0.1", 9999))
out = open(sys.argv[1], "a")
while True:
    d, a = s.recvfrom(100); out.write(d.decode() + "\n"); out.flush()' "$TOPO_DIR/udp"
topo_wait 30 topo_inet sh -c "ss -uln | grep -q 198.18.0.1:9999" || fail "UDP listener"
sxpy "$A" '
import socket, struct
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
def send(src, data):
    r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    udp = struct.pack("!HHHH", 40000, 9999, 8 + len(data), 0) + data
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton("198.18.0.1"))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    r.sendto(ip + udp, ("198.18.0.1", 0))
send("10.88.0.66", b"spoofed")
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b"genuine", ("198.18.0.1", 9999))'
topo_wait 60 grep -q genuine "$TOPO_DIR/udp" || fail "the genuine datagram did not arrive"
# the spoofed one was sent first: had it passed, it would be there by now
# (one path, in order); it is not
grep -q spoofed "$TOPO_DIR/udp" && fail "a spoofed source reached the internet" ||
  ok "spoofed source refused, genuine one arrived"

# ---- IPv6: a ULA, NAT66 out, the same isolation ----
J6=http://[2001:2::1]/hello # the internet over IPv6
K6=http://[2001:2:1::1]/hello
A6=$(sx "$A" ip -6 -o addr show dev eth0 scope global | awk '{print $4}' | cut -d/ -f1)
case "$A6" in fd*) ok "A has IPv6 $A6" ;; *) fail "A has no IPv6 address: '$A6'" ;; esac
HOST6=$("$TOPO_PY" -c "import ipaddress,sys; print(ipaddress.ip_address(sys.argv[1]) - 1)" "$A6")
reach "$A" "$J6"
reach "$A" "$K6"
reach "$A" http://six.test/hello # an AAAA answer only
refused "$A" "http://[fd00:200::1]/hello" # a private (ULA) network
topo_bg "$TOPO_ENG" "$TOPO_PY" -m http.server 8082 --bind :: --directory "$TOPO_DIR/www"
topo_wait 60 topo_eng curl -gsf -m 5 "http://[2001:2::2]:8082/hello" || fail "host IPv6 service did not start"
refused "$A" "http://[2001:2::2]:8082/hello" # the host, on its uplink's and its host end's address
refused "$A" "http://[$HOST6]:8082/hello"
# a spoofed IPv6 source (the next slot's address, raw socket as the IPv4
# check above): only the genuine datagram arrives
SPOOF=$("$TOPO_PY" -c "import ipaddress,sys; print(ipaddress.ip_address(sys.argv[1]) + 4)" "$A6")
topo_bg "$TOPO_INET" "$TOPO_PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(("2001:2::1", 9998))
out = open(sys.argv[1], "a")
while True:
    d, a = s.recvfrom(100); out.write(d.decode() + "\n"); out.flush()' "$TOPO_DIR/udp6"
topo_wait 30 topo_inet sh -c "ss -uln | grep -q '2001:2::1\]:9998'" || fail "UDP6 listener"
sxpy "$A" '
import socket, struct, sys
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
src, dst = socket.inet_pton(socket.AF_INET6, "'"$SPOOF"'"), socket.inet_pton(socket.AF_INET6, "2001:2::1")
data = b"spoofed6"
udp = struct.pack("!HHHH", 40000, 9998, 8 + len(data), 0) + data
ck = csum(src + dst + struct.pack("!IxxxB", len(udp), 17) + udp)
udp = udp[:6] + struct.pack("!H", ck) + udp[8:]
ip = struct.pack("!IHBB", 6 << 28, len(udp), 17, 64) + src + dst
r = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW)
r.sendto(ip + udp, ("2001:2::1", 0))
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.sendto(b"genuine6", ("2001:2::1", 9998))'
topo_wait 60 grep -q genuine6 "$TOPO_DIR/udp6" || fail "the genuine IPv6 datagram did not arrive"
grep -q spoofed6 "$TOPO_DIR/udp6" && fail "a spoofed IPv6 source reached the internet" ||
  ok "spoofed IPv6 source refused, genuine one arrived"

# ---- sandbox -> sandbox ----
B=$(create)
BADDR=$(sx "$B" ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1)
[ -n "$BADDR" ] || fail "no address of $B"
sx "$B" "setsid $TOPO_PY -m http.server 8000 --bind 0.0.0.0 --directory /etc </dev/null >/dev/null 2>&1 &"
topo_wait 60 sx "$B" curl -sf -m 5 http://127.0.0.1:8000/hostname || fail "server in $B did not start"
refused "$A" "http://$BADDR:8000/hostname"
B6=$(sx "$B" ip -6 -o addr show dev eth0 scope global | awk '{print $4}' | cut -d/ -f1)
sx "$B" "setsid $TOPO_PY -m http.server 8001 --bind :: --directory /etc </dev/null >/dev/null 2>&1 &"
topo_wait 60 sx "$B" curl -gsf -m 5 "http://[::1]:8001/hostname" || fail "IPv6 server in $B did not start"
refused "$A" "http://[$B6]:8001/hostname"
# not even when A's policy names B's address: sandboxes never reach each other
st=$(status PUT "/sandboxes/$A/network" "{\"allowOut\":[\"$BADDR\"]}")
[ "$st" = 204 ] || fail "PUT network: $st"
refused "$A" "http://$BADDR:8000/hostname"

# ---- allowOut names a private network / the metadata address ----
st=$(status PUT "/sandboxes/$A/network" '{"allowOut":["10.200.0.0/24","169.254.169.254"]}')
[ "$st" = 204 ] || fail "PUT network: $st"
reach "$A" "$PRIV"
reach "$A" "$META"

# ---- internet off, allowOut CIDR and IP ----
C=$(create '"allowInternetAccess":false,"network":{"allowOut":["198.18.1.0/24","198.18.2.1"]}')
refused "$C" "$I1"
reach "$C" "$I2"
reach "$C" "$I3"
got=$(api GET "/sandboxes/$C" | json 'd["allowInternetAccess"], d["network"]["allowOut"]')
[ "$got" = "False ['198.18.1.0/24', '198.18.2.1']" ] && ok "GET shows $got" || fail "GET: $got"
D=$(create '"allowInternetAccess":false')
refused "$D" "$I1"
refused "$D" "$I2"

refused "$D" "$J6"

# ---- IPv6 CIDRs: allowOut beats denyOut; a denied 0.0.0.0/0 is IPv6 too ----
V=$(create '"network":{"denyOut":["2001:2::/32"],"allowOut":["2001:2:1::1","fd00:200::1"]}')
reach "$V" "$K6"
refused "$V" "$J6"
reach "$V" "http://[fd00:200::1]/hello" # a private ULA, named by allowOut
reach "$V" "$I1"
W=$(create '"network":{"denyOut":["0.0.0.0/0"]}')
refused "$W" "$J6"
refused "$W" "$I1"
# a domain allowance over IPv6 (the AAAA answer) through the proxy
G6=$(create '"allowInternetAccess":false,"network":{"allowOut":["six.test"]}')
reach "$G6" http://six.test/hello
refused "$G6" "$K6" # its address, by raw IP
api DELETE "/sandboxes/$V" >/dev/null
api DELETE "/sandboxes/$W" >/dev/null
api DELETE "/sandboxes/$G6" >/dev/null

# ---- a domain allowance, internet off: through the engine's proxy ----
G=$(create '"allowInternetAccess":false,"network":{"allowOut":["example.test"]}')
reach "$G" http://example.test/hello
refused "$G" "$I2"                        # its address, by raw IP
refused "$G" http://other.test/hello      # another name (REFUSED by the resolver)
got=$(sx "$G" "curl -s -m 30 -o /dev/null -w '%{http_code}' -H 'Host: example.test' $I3")
[ "$got" = 000 ] && ok "allowed name on another address refused" || fail "Host on another address: $got"

# ---- denyOut, allowOut wins ----
E=$(create '"network":{"denyOut":["198.18.0.0/15"],"allowOut":["198.18.1.1"]}')
refused "$E" "$I1"
reach "$E" "$I2"
refused "$E" "$I3"

# ---- live update: open, close, and an open connection is cut ----
st=$(status PUT "/sandboxes/$D/network" '{"allowOut":["198.18.0.1"],"allow_internet_access":false}')
[ "$st" = 204 ] || fail "PUT network: $st"
reach "$D" "$I1"
refused "$D" "$I2"
st=$(status PUT "/sandboxes/$D/network" '{}') # everything cleared: internet on
reach "$D" "$I2"
# a connection opened while allowed, then its destination denied: its
# next bytes go nowhere
LONG=$(printf '%s' '
import os, socket, time
s = socket.create_connection(("198.18.0.1", 80), timeout=30)
open("/tmp/conn", "w").write("open")
while not os.path.exists("/tmp/go"): time.sleep(0.05)
try:
    s.sendall(b"GET /hello HTTP/1.0\r\n\r\n"); s.settimeout(10); d = s.recv(100)
    open("/tmp/res", "w").write("got" if d else "closed")
except OSError as e:
    open("/tmp/res", "w").write("cut " + type(e).__name__)
' | base64 -w0)
sx "$D" "echo $LONG | base64 -d > /tmp/long.py && setsid $TOPO_PY /tmp/long.py </dev/null >/dev/null 2>&1 &"
topo_wait 60 sx "$D" test -s /tmp/conn || fail "the long connection did not open"
st=$(status PUT "/sandboxes/$D/network" '{"denyOut":["198.18.0.1"]}')
sx "$D" touch /tmp/go
topo_wait 60 sx "$D" test -s /tmp/res || fail "the long connection did not finish"
got=$(sx "$D" cat /tmp/res)
case "$got" in cut*) ok "open connection cut by the update ($got)" ;; *) fail "open connection after deny: $got" ;; esac
refused "$D" "$I1"
st=$(status PUT "/sandboxes/$D/network" '{"allowOut":[1]}')
[ "$st" = 400 ] && ok "PUT with a bad body: 400" || fail "PUT with a bad body: $st"
refused "$D" "$I1" # the bad update changed nothing

# ---- connection cap: the 4th of 3 allowed is refused, held ones work ----
H=$(create '"network":{"maxConnections":3}')
got=$(sxpy "$H" '
import socket
held = [socket.create_connection(("198.18.0.1", 80), timeout=30) for _ in range(3)]
try:
    socket.create_connection(("198.18.0.1", 80), timeout=30); print("4th connected")
except OSError as e:
    held[0].sendall(b"GET /hello HTTP/1.0\r\n\r\n")
    print("4th refused" if b"internet" in held[0].recv(4096) + held[0].recv(4096) else "held broken")')
[ "$got" = "4th refused" ] && ok "connection cap: $got" || fail "connection cap: $got"

# ---- bandwidth cap: forwarded and proxied TCP alike ----
# Each sink counts what reaches it. Whatever reached it passed the
# sandbox's limiter first, so it is at most burst + rate x (the time since
# the sender started, measured until the count is read): an upper bound
# that holds however slow the machine is. Without the cap the 4 MiB go
# through in far less than the sender's 5 s.
for port in 9996 9995; do
  topo_bg "$TOPO_INET" "$TOPO_PY" -c '
import socketserver, sys, threading
total, lock = [0], threading.Lock()
class H(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            b = self.request.recv(65536)
            if not b: break
            with lock:
                total[0] += len(b)
                open(sys.argv[2], "w").write(str(total[0]))
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = daemon_threads = True
S(("198.18.0.1", int(sys.argv[1])), H).serve_forever()' "$port" "$TOPO_DIR/sink$port"
done
topo_wait 30 topo_inet sh -c "ss -tln | grep -q 198.18.0.1:9995" || fail "sinks"
capped() { # ID PORT WHAT
  local t0 t1 n
  t0=$(date +%s.%N)
  sxpy "$1" '
import socket
s = socket.create_connection(("198.18.0.1", '"$2"'), timeout=30); s.settimeout(5)
try:
    s.sendall(b"x" * (4 << 20))
except OSError:
    pass' >/dev/null 2>&1
  topo_wait 30 test -s "$TOPO_DIR/sink$2" || fail "$3: nothing arrived"
  n=$(cat "$TOPO_DIR/sink$2")
  t1=$(date +%s.%N)
  got=$("$TOPO_PY" -c "import sys; n, t = int(sys.argv[1]), float(sys.argv[3]) - float(sys.argv[2])
bound = 4096 * (t + 1) + 4096 // 4 + 65536 + 65536
print('ok' if 0 < n <= bound else 'over', n, int(bound))" "$n" "$t0" "$t1")
  case "$got" in ok*) ok "$3: $got (bytes, bound)" ;; *) fail "$3: $got (bytes, bound)" ;; esac
}
R=$(create '"network":{"egressBytesPerSecond":4096}')
capped "$R" 9996 "bandwidth cap, forwarded"
R2=$(create '"network":{"egressBytesPerSecond":4096,"allowOut":["example.test"]}')
capped "$R2" 9995 "bandwidth cap, through the proxy"
api DELETE "/sandboxes/$R" >/dev/null
api DELETE "/sandboxes/$R2" >/dev/null

# ---- a flood does not starve the control plane: while a sandbox sends to
# the test internet as fast as it can (no cap, 2 connections), the API
# answers on both listeners, a create + kill works and another sandbox's
# command completes; the flood is checked to be still running after all
# of it (so the checks overlapped it). Timings: bench/netflood_bench.sh.
topo_bg "$TOPO_INET" "$TOPO_PY" -c '
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.18.0.1", 9994)); s.listen(8)
def drain(c):
    open(sys.argv[1], "w").write("1")
    while c.recv(1 << 20): pass
while True:
    c, _ = s.accept(); threading.Thread(target=drain, args=(c,), daemon=True).start()' "$TOPO_DIR/flood9994"
topo_wait 30 topo_inet sh -c "ss -tln | grep -q 198.18.0.1:9994" || fail "flood sink"
FL=$(create)
code=$(printf '%s' '
import socket, threading
buf = b"x" * (1 << 20)
def go():
    s = socket.create_connection(("198.18.0.1", 9994), timeout=60)
    while True: s.sendall(buf)
ts = [threading.Thread(target=go) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()' | base64 -w0)
topo_bg "$TOPO_ENG" env E2B_API_URL="$API" E2B_SANDBOX_URL="$API" E2B_API_KEY="$KEY" \
  "$ASB" exec "$FL" --user root --timeout 900 -- "echo $code | base64 -d > /tmp/.f.py && $TOPO_PY /tmp/.f.py" \
  >/dev/null 2>&1
FLP=$TOPO_LAST_PID
topo_wait 120 test -s "$TOPO_DIR/flood9994" || fail "the flood did not start"
st=$(status GET "/sandboxes/$A")
[ "$st" = 200 ] && ok "during the flood: GET over the unix socket 200" || fail "during the flood: GET $st"
st=$(topo_eng curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: $KEY" "$API/sandboxes/$A")
[ "$st" = 200 ] && ok "during the flood: GET over TCP 200" || fail "during the flood: GET over TCP $st"
X=$(create)
[ -n "$X" ] && [ "$(status DELETE "/sandboxes/$X")" = 204 ] && ok "during the flood: create + kill" ||
  fail "during the flood: create + kill ('$X')"
got=$(sx "$A" echo alive 2>&1)
[ "$got" = alive ] && ok "during the flood: another sandbox's command completes" ||
  fail "during the flood: command in A: '$got'"
kill -0 "$FLP" 2>/dev/null && ok "the flood was still running after the checks" ||
  fail "the flood ended before the checks did"
api DELETE "/sandboxes/$FL" >/dev/null
topo_wait 120 sh -c "! kill -0 $FLP" || kill "$FLP" 2>/dev/null
wait "$FLP" 2>/dev/null

# ---- template builds have network, as template.yaml's network: says ----
build() { # NAME YAML -> HTTP status of the build
  local d="$TOPO_DIR/tmpl-$1"
  mkdir -p "$d" && printf '%s' "$2" >"$d/template.yaml" && tar -C "$d" -cf "$d.tar" template.yaml
  curl -s --unix-socket "$STATE/engine.sock" -H "X-API-Key: $KEY" -H 'Content-Type: application/x-tar' \
    --data-binary "@$d.tar" -o "$d.reply" -w '%{http_code}' "http://engine/templates/builds"
}
st=$(build netok 'name: netok
steps:
  - run: curl -sf -m 30 http://198.18.0.1/hello > /opt/hello
')
[ "$st" = 201 ] && ok "a build step reaches the test internet" || fail "build with network: $st $(cat "$TOPO_DIR/tmpl-netok.reply")"
st=$(build netoff 'name: netoff
network:
  allowInternetAccess: false
  allowOut: [198.18.1.1]
steps:
  - run: curl -sf -m 30 http://198.18.1.1/hello
  - run: curl -sf -m 30 http://198.18.0.1/hello
')
[ "$st" = 422 ] && grep -q "step 2/2" "$TOPO_DIR/tmpl-netoff.reply" && ok "a build's network: is applied (step 2 refused)" ||
  fail "build with network: off: $st $(head -c 600 "$TOPO_DIR/tmpl-netoff.reply")"
st=$(build netbad 'name: netbad
network: {allowOut: [1.2.3.4/40]}
')
[ "$st" = 400 ] && ok "a bad network: in template.yaml is a 400" || fail "bad network: $st"

# ---- counters ----
got=$(api GET "/sandboxes/$A/metrics" | json 'd[-1]["netBytesOut"] > 0 and d[-1]["netBytesIn"] > 0')
[ "$got" = True ] && ok "metrics count A's bytes" || fail "metrics: $got"

# ---- kill: its rules go, its pair goes with its netns ----
slots_before=$(topo_eng nft list map inet "$TABLE" sbmap | grep -c ': jump')
links_before=$(topo_eng ip -o link | grep -c "$PREFIX")
[ "$(status DELETE "/sandboxes/$E")" = 204 ] || fail "kill"
slots_after=$(topo_eng nft list map inet "$TABLE" sbmap | grep -c ': jump')
[ "$slots_after" = $((slots_before - 1)) ] && ok "kill removed its chain ($slots_before -> $slots_after)" ||
  fail "after kill: $slots_after chains, was $slots_before"
n=$(topo_eng nft list table inet "$TABLE" | grep -c 'chain sb_')
[ "$n" = "$slots_after" ] || fail "$n sandbox chains for $slots_after sandboxes"
# the kernel deletes the pair with the netns, after the kill returned
topo_wait 120 sh -c "[ \$(nsenter --net=/run/netns/$TOPO_ENG ip -o link | grep -c $PREFIX) = $((links_before - 1)) ]" &&
  ok "its pair is gone ($links_before -> $((links_before - 1)) links)" || fail "its pair is still there"
F=$(create)
reach "$F" "$I1" # a new sandbox works after the kill

# ---- an engine crash: the next one reaps its table and links, adopts
# the sandboxes, gives them network and their recorded policies again;
# F paused with memory (frozen) too, on its connect ----
[ "$(status POST "/sandboxes/$F/pause")" = 204 ] || fail "pause $F"
kill -KILL "$ENGINE_PID"
topo_wait 120 sh -c "! kill -0 $ENGINE_PID" || fail "the engine did not die"
n=$(topo_eng nft list tables | grep -c "$TABLE")
[ "$n" = 1 ] || fail "the crashed engine's table is not there ($n): nothing to reap"
start_engine
n=$(topo_eng nft list tables | grep -c "$TABLE")
[ "$n" = 1 ] && ok "one table after the restart" || fail "$n tables after the restart"
got=$(api GET "/sandboxes/$F" | json 'd["state"], d.get("pauseMode")')
[ "$got" = "paused memory" ] && ok "adopted $F paused ($got)" || fail "adopted $F: $got"
[ "$(status POST "/sandboxes/$F/connect" '{"timeout":900}')" = 201 ] || fail "connect $F"
reach "$F" "$I1"
reach "$F" "$J6" # adopted with IPv6 too
refused "$C" "$I1"
reach "$C" "$I2"
got=$(api GET "/sandboxes/$C" | json 'd["allowInternetAccess"], d["network"]["allowOut"]')
[ "$got" = "False ['198.18.1.0/24', '198.18.2.1']" ] && ok "adopted: GET shows $got" || fail "adopted GET: $got"
n=$(topo_eng nft list table inet "$TABLE" | grep -c 'chain sb_')
want=$(api GET /sandboxes | json 'len(d)')
[ "$n" = "$want" ] && ok "$n sandbox chains for $want adopted sandboxes" || fail "$n chains for $want sandboxes"

# ---- engine stop: nothing of it is left ----
kill -TERM "$ENGINE_PID"
topo_wait 120 sh -c "! kill -0 $ENGINE_PID" || fail "the engine did not stop"
left=$(topo_eng nft list tables | grep -c "$TABLE")
[ "$left" = 0 ] && ok "no table after stop" || fail "table $TABLE left after stop"
left=$(topo_eng ip -o link | grep -c "$PREFIX")
[ "$left" = 0 ] && ok "no link after stop" || fail "$left links of $PREFIX left after stop"
# the crashed engine's record of the sysctls' old values was the
# restarted one's: all back
got=$(sysctls)
[ "$got" = "0 0 1 " ] && ok "forwarding and accept_ra back after stop ($got)" || fail "sysctls after stop: '$got'"
[ ! -e "$STATE/net-sysctl" ] || fail "the sysctl record is left after stop"

[ "$FAILS" = 0 ] && echo "net.datapath: all passed" || echo "net.datapath: $FAILS failed"
[ "$FAILS" = 0 ]
