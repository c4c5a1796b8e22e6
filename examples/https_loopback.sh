#!/usr/bin/env bash
# https on the engine's port with its CA, and a loopback URL for a sandbox
# port (docs/engine.md, "https on the same port", "Loopback URLs"): a
# sandbox serving a file on port 8000, fetched over
# https://8000-<id>.localhost:<port> with the engine's CA, then through
# http://127.0.0.1:<n> by Python's urllib, which cannot resolve *.localhost.
# Needs root and a running engine:
#   sudo agent-sandboxd &   then   sudo examples/https_loopback.sh
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
STATE=${ASB_STATE_DIR:-/var/lib/agent-sandbox}
KEY=$(cat "$STATE/api_key")
CA="$STATE/tls/ca.pem" # what agent-sandboxd --print-ca-path prints
URL=$(cat "$STATE/engine.url") # http://127.0.0.1:<port>
PORT=${URL##*:}
api() { # METHOD PATH [JSON]
  curl -sS -X "$1" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \
    ${3:+--data "$3"} --cacert "$CA" "https://127.0.0.1:$PORT$2"
}
json() { python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }

ASB=${ASB:-asb} # the CLI (build/core/cli/asb in a build tree)
export E2B_API_URL=$URL E2B_API_KEY=$KEY
id=$(api POST /sandboxes '{"templateID": "base", "timeout": 120}' | json sandboxID)
trap 'kill $server 2>/dev/null; api DELETE "/sandboxes/$id" >/dev/null' EXIT
echo "sandbox $id"
# a file, and a server for it on port 8000 (asb exec streams: leave it running)
echo "hello over https" | "$ASB" cp - "$id:/home/user/www/index.txt"
"$ASB" exec "$id" --cwd /home/user/www -- python3 -m http.server 8000 --bind 127.0.0.1 \
  >/dev/null 2>&1 &
server=$!

# https://<getHost(8000)>, verified with the engine's CA
for _ in $(seq 100); do
  curl -sSf --cacert "$CA" "https://8000-$id.localhost:$PORT/index.txt" 2>/dev/null && break
  sleep 0.2
done

# a loopback URL: no name to resolve, so urllib opens it
loop=$(api POST "/sandboxes/$id/ports/8000/loopback" | json url)
echo "loopback URL $loop"
/usr/bin/python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1] + "/index.txt").read().decode(), end="")' "$loop"
