#!/usr/bin/env bash
# Volumes through E2B's HTTP API (docs/volumes.md), with curl against the
# local engine's unix socket: a 64 MiB volume, a file put through the
# volume content API, two sandboxes that mount it at once and share what
# they write, a third after both are killed, the volume deleted. (The stock
# E2B SDKs' Volume class and volumeMounts do the same: docs/volumes.md.)
# Needs root and a running engine:
#   sudo agent-sandboxd &   then   sudo examples/volumes.sh
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
STATE=${ASB_STATE_DIR:-/var/lib/agent-sandbox}
KEY=$(cat "$STATE/api_key")
api() { # METHOD PATH [JSON]
  curl -sS --fail-with-body --unix-socket "$STATE/engine.sock" -X "$1" -H "X-API-Key: $KEY" \
    -H 'Content-Type: application/json' ${3:+--data "$3"} "http://engine$2"
}
field() { python3 -c "import json, sys; print(json.load(sys.stdin)[\"$1\"])"; }

name="example-$$"
vol=$(api POST /volumes "{\"name\": \"$name\", \"sizeMB\": 64}")
id=$(field volumeID <<<"$vol")
token=$(field token <<<"$vol")
echo "volume $name: $id"
trap 'api DELETE "/volumes/$id" >/dev/null 2>&1 || true' EXIT

# the content API takes the volume's own token, not the API key
content() { # METHOD OP QUERY [curl args...]
  local m=$1 op=$2 q=$3
  shift 3
  curl -sS --fail-with-body --unix-socket "$STATE/engine.sock" -X "$m" \
    -H "Authorization: Bearer $token" "$@" "http://engine/volumecontent/$id/$op?$q"
}
content PUT file 'path=/greeting.txt&uid=1000&gid=1000&mode=420' \
  -H 'Content-Type: application/octet-stream' --data-binary 'hello from the host' >/dev/null
content POST dir 'path=/logs&uid=1000&gid=1000' >/dev/null

# two sandboxes with the volume at once, at different paths
a=$(api POST /sandboxes "{\"templateID\": \"base\", \"timeout\": 120,
  \"volumeMounts\": [{\"name\": \"$name\", \"path\": \"/mnt/shared\"}]}" | field sandboxID)
b=$(api POST /sandboxes "{\"templateID\": \"base\", \"timeout\": 120,
  \"volumeMounts\": [{\"name\": \"$name\", \"path\": \"/home/user/data\"}]}" | field sandboxID)
echo "sandboxes $a and $b mount it"
# commands in them with the CLI (as the default user, uid 1000 in both)
asb() { "${ASB_CLI:-asb}" "$@"; }
asb exec "$a" -- 'cat /mnt/shared/greeting.txt; echo; echo "a was here" > /mnt/shared/logs/a.log'
asb exec "$b" -- 'cat /home/user/data/logs/a.log; stat -c "owner: %U" /home/user/data/logs/a.log'

echo "while mounted, DELETE says:"
curl -sS --unix-socket "$STATE/engine.sock" -X DELETE -H "X-API-Key: $KEY" "http://engine/volumes/$id"
echo
api DELETE "/sandboxes/$a"
api DELETE "/sandboxes/$b"
echo "files after both sandboxes are gone:"
content GET dir 'path=/&depth=2' | python3 -c '
import json, sys
for e in json.load(sys.stdin): print(" ", e["type"], e["path"], e["size"], "bytes, uid", e["uid"])'
api DELETE "/volumes/$id"
trap - EXIT
echo "volume deleted"
