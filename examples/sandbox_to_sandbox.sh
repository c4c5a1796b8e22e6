#!/usr/bin/env bash
# One sandbox calling another's public URL (docs/networking.md, "Sandbox to
# sandbox"): a sandbox of the built-in httpbin template serves go-httpbin's
# echo endpoints on port 8080; a second sandbox, whose network.rules put a
# header on requests to that host, fetches https://8080-<id>.localhost:<port>
# /headers with curl (the engine's CA is in every sandbox's trust store, and
# *.localhost is the sandbox's own loopback, where the engine's portal
# listens). The reply shows the header the rule set. Works with and without
# --no-network. Needs root and a running engine:
#   sudo agent-sandboxd &   then   sudo examples/sandbox_to_sandbox.sh
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
STATE=${ASB_STATE_DIR:-/var/lib/agent-sandbox}
KEY=$(cat "$STATE/api_key")
URL=$(cat "$STATE/engine.url") # http://127.0.0.1:<port>
PORT=${URL##*:}
api() { # METHOD PATH [JSON]
  curl -sS --unix-socket "$STATE/engine.sock" -X "$1" -H "X-API-Key: $KEY" \
    -H 'Content-Type: application/json' ${3:+--data "$3"} "http://engine$2"
}
json() { python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }
ASB=${ASB:-asb} # the CLI (build/core/cli/asb in a build tree)
export E2B_API_URL=$URL E2B_API_KEY=$KEY

# the echo server: create returns once its ready check (/status/200) passed
server=$(api POST /sandboxes '{"templateID": "httpbin", "timeout": 120}' | json sandboxID)
client=
trap 'api DELETE "/sandboxes/$server" >/dev/null; [ -z "$client" ] || api DELETE "/sandboxes/$client" >/dev/null' EXIT
host="8080-$server.localhost:$PORT" # what getHost(8080) gives
echo "httpbin at https://$host"

# the client: its egress rule for that host sets X-Demo-Token
client=$(api POST /sandboxes "{\"templateID\": \"base\", \"timeout\": 120, \"network\": {\"rules\":
  {\"$host\": [{\"transform\": {\"headers\": {\"X-Demo-Token\": \"from-the-rule\"}}}]}}}" | json sandboxID)
"$ASB" exec "$client" -- curl -sS "https://$host/headers" |
  python3 -c 'import json, sys; print("X-Demo-Token:", json.load(sys.stdin)["headers"]["X-Demo-Token"])'

# the control plane is not reachable from a sandbox, even with the key
# (asb exec runs its words as one shell command line: quote it whole)
"$ASB" exec "$client" -- "curl -s -o /dev/null -w 'control plane from a sandbox: %{http_code}\n' \
  -H 'X-API-Key: $KEY' http://127.0.0.1:$PORT/sandboxes"
