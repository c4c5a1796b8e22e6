#!/usr/bin/env bash
# Sandbox networking through E2B's HTTP API (docs/networking.md), with curl
# against the local engine's unix socket: a sandbox whose internet is off
# but for one network, GET of its effective policy, a live update, kill.
# (The SDKs' own network options are in docs/python.md, docs/node.md and
# the C API's docs once they carry them.) Needs root and a running engine:
#   sudo agent-sandboxd &   then   sudo examples/network.sh
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
STATE=${ASB_STATE_DIR:-/var/lib/agent-sandbox}
KEY=$(cat "$STATE/api_key")
api() { # METHOD PATH [JSON]
  curl -sS --unix-socket "$STATE/engine.sock" -X "$1" -H "X-API-Key: $KEY" \
    -H 'Content-Type: application/json' ${3:+--data "$3"} "http://engine$2"
}

# internet off, one network allowed; denyOut loses to allowOut
id=$(api POST /sandboxes '{"templateID": "base", "timeout": 120,
  "allowInternetAccess": false,
  "network": {"allowOut": ["198.51.100.0/24", "203.0.113.7"], "denyOut": ["198.51.100.9"]}}' |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["sandboxID"])')
echo "sandbox $id"
api GET "/sandboxes/$id" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("allowInternetAccess:", d["allowInternetAccess"]); print("network:", d["network"])'

# live update: internet on, but never 203.0.113.0/24 (atomic; connections
# already open to it are cut)
api PUT "/sandboxes/$id/network" '{"denyOut": ["203.0.113.0/24"]}'
api GET "/sandboxes/$id" | python3 -c 'import json, sys; print("now:", json.load(sys.stdin)["network"])'

# a secret injected at egress: the sandbox never sees its value, only the
# placeholder; HTTPS to the rule's domain is intercepted by the engine's
# egress CA, which every networked sandbox trusts (its CA bundle, and
# SSL_CERT_FILE / NODE_EXTRA_CA_CERTS / REQUESTS_CA_BUNDLE naming it)
api POST /secrets '{"name": "example-key", "value": "s3cr3t"}' >/dev/null || true
sid=$(api POST /sandboxes '{"templateID": "base", "timeout": 120, "network": {"rules":
  {"api.example.com": [{"transform": {"headers": {"Authorization": "Bearer ${e2b.secrets.example-key}"}}}]}}}' |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["sandboxID"])')
if command -v asb >/dev/null; then
  E2B_API_KEY=$KEY E2B_API_URL=$(cat "$STATE/engine.url") asb exec "$sid" -- \
    'echo "SSL_CERT_FILE=$SSL_CERT_FILE"; openssl crl2pkcs7 -nocrl -certfile /etc/ssl/certs/ca-certificates.crt | openssl pkcs7 -print_certs -noout | grep "subject=.*agent-sandbox egress CA"'
  # curl https://api.example.com/ inside it would arrive with
  # "Authorization: Bearer s3cr3t"; the sandbox's own bytes hold only the placeholder
fi
api DELETE "/sandboxes/$sid"
api DELETE /secrets/example-key >/dev/null || true

# a bad value is a 400 that says which entry
api POST /sandboxes '{"templateID": "base", "network": {"allowOut": ["10.0.0.0/33"]}}'
echo
api DELETE "/sandboxes/$id"
