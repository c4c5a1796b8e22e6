#!/usr/bin/env bash
# Sandbox to sandbox through the portal (docs/networking.md, "Sandbox to
# sandbox") against the same requests from the host: one engine
# (--no-network: loopback only), a sandbox A of the bundled httpbin
# template, a sandbox B of base; bench/sbx2sbx_client.py sends N GET
# /headers to A's port 8080 by its URL's host, from B (through B's portal)
# and from the host (the engine's port), in ROUNDS alternating rounds so
# the shared machine's load spreads over both. Modes: a new TCP connection
# per request, one keep-alive connection, a new TLS connection per request.
# Prints ms p50 / p90 of each, and the portal's p50 over the host's.
# usage: sudo bench/sbx2sbx_bench.sh build/core/engine/agent-sandboxd build/core/cli/asb [N]
# SPDX-License-Identifier: Apache-2.0
set -u
ENGINE=$(realpath "$1")
ASB=$(realpath "$2")
N=${3:-200}
ROUNDS=${ROUNDS:-4}
HERE=$(cd "$(dirname "$0")" && pwd)
ST=$(mktemp -d /tmp/asb-sbx2sbx-bench.XXXXXX)
EP=
cleanup() {
  if [ -n "$EP" ]; then kill "$EP" 2>/dev/null; wait "$EP" 2>/dev/null; fi
  rm -rf "$ST"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
"$ENGINE" --state-dir "$ST/state" --listen 127.0.0.1:0 --cgroup-name "asbb2b-$$" \
  --kill-on-exit --no-network > "$ST/out" 2> "$ST/log" &
EP=$!
until grep -q '^listening' "$ST/out" 2>/dev/null; do
  kill -0 "$EP" 2>/dev/null || { cat "$ST/log"; exit 1; }
  sleep 0.1
done
PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$ST/out")
KEY=$(cat "$ST/state/api_key")
export E2B_API_URL=http://127.0.0.1:$PORT E2B_API_KEY=$KEY
api() {
  curl -sS -X "$1" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \
    ${3:+--data "$3"} "http://127.0.0.1:$PORT$2"
}
sid() { python3 -c 'import json, sys; print(json.load(sys.stdin)["sandboxID"])'; }
A=$(api POST /sandboxes '{"templateID": "httpbin", "timeout": 1800}' | sid)
B=$(api POST /sandboxes '{"templateID": "base", "timeout": 1800}' | sid)
HOST="8080-$A.localhost:$PORT"
"$ASB" cp "$HERE/sbx2sbx_client.py" "$B:/tmp/client.py" >/dev/null
MODES="new keep tls"
for r in $(seq "$ROUNDS"); do
  /usr/bin/python3 "$HERE/sbx2sbx_client.py" "$PORT" "$HOST" "$N" "$ST/state/tls/ca.pem" $MODES \
    >> "$ST/host.jsonl" || exit 1
  "$ASB" exec "$B" -- python3 /tmp/client.py "$PORT" "$HOST" "$N" \
    /etc/ssl/certs/ca-certificates.crt $MODES >> "$ST/portal.jsonl" || exit 1
done
/usr/bin/python3 - "$ST/host.jsonl" "$ST/portal.jsonl" "$N" "$ROUNDS" <<'PY'
import json, sys
def load(p):
    out = {}
    for line in open(p):
        for k, v in json.loads(line).items():
            out.setdefault(k, []).extend(v)
    return out
def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]
h, p = load(sys.argv[1]), load(sys.argv[2])
print("GET /headers to a sandbox, n=%s x %s rounds, ms" % (sys.argv[3], sys.argv[4]))
print("| mode | from the host p50 / p90 | from a sandbox (portal) p50 / p90 | ratio (p50) |")
print("|---|---|---|---|")
for m in h:
    print("| %s | %.3f / %.3f | %.3f / %.3f | %.2f |" % (m, pct(h[m], .5), pct(h[m], .9),
          pct(p[m], .5), pct(p[m], .9), pct(p[m], .5) / pct(h[m], .5)))
PY
