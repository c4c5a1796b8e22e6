#!/usr/bin/env bash
# net.secrets: header rules with a secret, from inside a sandbox of a real
# engine, in the closed topology of topo.sh (nothing can leave the two test
# namespaces). The test internet runs egress_servers.py (HTTP :80, HTTPS
# :443 with a test CA; each logs what arrived, and answers with digests of
# the header values only, so nothing of a secret comes back).
#   - HTTP and HTTPS to a domain with a rule get the secret in the named
#     header at the server; the sandbox's plain curl, Python and Node
#     verify the intercepted HTTPS (the engine's egress CA is in the
#     sandbox's trust store: its CA bundle, SSL_CERT_FILE,
#     NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE), once in the bundle, also
#     when the template's bundle has it already
#   - a domain without rules is not intercepted: the sandbox sees the
#     server's own certificate (the test CA's), not the egress CA's
#   - the secret's value is nowhere in the sandbox: its files (the
#     writable parts: /usr is the host's, read-only), the environment,
#     command lines and memory of every process in it (a planted canary
#     is found by the same scan: the scan works); nor in GET's reply
# Usage: secrets.sh AGENT_SANDBOXD ASB_CLI   (root)
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

[ "$(id -u)" = 0 ] || { echo "net.secrets needs root" >&2; exit 77; }
for c in openssl dnsmasq nsenter curl; do
  command -v "$c" >/dev/null 2>&1 || { echo "net.secrets: no $c: skipped"; exit 77; }
done
SRV=$(mktemp -d /tmp/asbt-sec.XXXXXX) || exit 1
trap 'topo_down; rm -rf "$SRV"' EXIT
trap 'exit 130' INT TERM

# the test internet's CA and server certificate (example.test, other.test)
o() { openssl "$@" >/dev/null 2>&1 || { echo "openssl $1 failed" >&2; exit 1; }; }
o req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj '/CN=net.secrets test CA' \
  -keyout "$SRV/ca.key" -out "$SRV/ca.pem" -addext basicConstraints=critical,CA:TRUE \
  -addext keyUsage=critical,keyCertSign
o req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=example.test \
  -keyout "$SRV/srv.key" -out "$SRV/srv.csr"
echo 'subjectAltName=DNS:example.test,DNS:other.test' >"$SRV/ext"
o x509 -req -in "$SRV/srv.csr" -CA "$SRV/ca.pem" -CAkey "$SRV/ca.key" -CAcreateserial -days 2 \
  -extfile "$SRV/ext" -out "$SRV/srv.pem"
TOPO_HTTP_CMD=("$TOPO_PY" "$HERE/egress_servers.py" "$SRV" "$SRV/srv.pem" "$SRV/srv.key" u p)
topo_up || exit 1
topo_wait 60 test -e "$SRV/servers.ready" || { echo "the test servers did not start" >&2; exit 1; }

STATE="$TOPO_DIR/state"
mkdir -m 0700 "$STATE"
CG="asbt-sec-$$"
topo_bg "$TOPO_ENG" "$ENGINE" --state-dir "$STATE" --listen 127.0.0.1:0 --cgroup-name "$CG" \
  --kill-on-exit --dns-upstream 198.18.0.1 --egress-upstream-ca "$SRV/ca.pem"
ENGINE_PID=$TOPO_LAST_PID
topo_wait 120 sh -c "test -s '$STATE/engine.url' || ! kill -0 $ENGINE_PID"
test -s "$STATE/engine.url" || { echo "the engine did not start" >&2; exit 1; }
URL=$(cat "$STATE/engine.url")
KEY=$(cat "$STATE/api_key")
API="http://127.0.0.1:${URL##*:}"

api() { # METHOD PATH [BODY]: body, then the status on a line of its own
  curl -s --unix-socket "$STATE/engine.sock" -X "$1" -H "X-API-Key: $KEY" \
    -H 'Content-Type: application/json' ${3:+--data "$3"} -w '\n%{http_code}' "http://engine$2"
}
json() { "$TOPO_PY" -c "import json,sys; d=json.loads(sys.stdin.read().rsplit('\n',1)[0]); print($1)"; }
sx() { # ID CMD...: as root in the sandbox
  local id=$1
  shift
  topo_eng env E2B_API_URL="$API" E2B_SANDBOX_URL="$API" E2B_API_KEY="$KEY" \
    "$ASB" exec "$id" --user root --timeout 120 -- "$@"
}
sxpy() { # ID CODE: Python in the sandbox (asb exec hands a shell one line)
  sx "$1" "echo $(printf '%s' "$2" | base64 -w0) | base64 -d > /tmp/.t.py && $TOPO_PY /tmp/.t.py"
}

# the secret: random, so that finding it anywhere means it leaked
VALUE="asbt-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
st=$(api POST /secrets "{\"name\":\"test-key\",\"value\":\"$VALUE\"}" | tail -n1)
[ "$st" = 201 ] || { echo "POST /secrets: $st" >&2; exit 1; }
RULES='"rules":{"example.test":[{"transform":{"headers":{"X-Api-Key":"${e2b.secrets.test-key}"}}}]}'
A=$(api POST /sandboxes "{\"templateID\":\"base\",\"timeout\":900,\"network\":{$RULES}}" | json 'd["sandboxID"]')
[ -n "$A" ] || { echo "create failed" >&2; exit 1; }

# server_saw PATH: the X-Api-Key of the request for PATH as the server got it
server_saw() {
  "$TOPO_PY" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["path"] == sys.argv[2]: print(r["headers"].get("x-api-key", "")); break' \
    "$SRV/requests.log" "$1" 2>/dev/null
}
injected() { # WHAT PATH: the server got the secret for PATH
  if [ "$(server_saw "$2")" = "$VALUE" ]; then ok "$1: the server got the secret"; else
    fail "$1: the server got '$(server_saw "$2")'"; fi
}

# ---- HTTP: the header set at egress, the sandbox's own value replaced ----
got=$(sx "$A" "curl -s -m 60 -o /dev/null -w '%{http_code}' -H 'X-Api-Key: mine' http://example.test/h1")
[ "$got" = 200 ] || fail "HTTP with a rule: $got"
injected "HTTP" /h1

# ---- HTTPS: intercepted, and verified by the sandbox's own trust store ----
got=$(sx "$A" "curl -s -m 60 -o /dev/null -w '%{http_code}' https://example.test/h2")
[ "$got" = 200 ] && ok "curl verifies the intercepted HTTPS" || fail "HTTPS with a rule (curl): '$got'"
injected "HTTPS (curl)" /h2
got=$(sxpy "$A" '
import urllib.request
print(urllib.request.urlopen("https://example.test/h3", timeout=60).status)' 2>&1)
[ "$got" = 200 ] && ok "Python verifies the intercepted HTTPS" || fail "HTTPS with a rule (Python): $got"
injected "HTTPS (Python)" /h3
if sx "$A" test -x /usr/bin/node; then
  js='require("https").get("https://example.test/h4", r => { console.log(r.statusCode); r.resume(); })
  .on("error", e => console.log(e.code || e.message))'
  got=$(sx "$A" "echo $(printf '%s' "$js" | base64 -w0) | base64 -d > /tmp/.t.js && /usr/bin/node /tmp/.t.js" 2>&1)
  [ "$got" = 200 ] && ok "Node verifies the intercepted HTTPS" || fail "HTTPS with a rule (Node): $got"
  injected "HTTPS (Node)" /h4
fi
# who signed what the sandbox saw: the egress CA for example.test; the
# server's own (test CA) for other.test, which has no rule
issuer() { sx "$A" "echo | openssl s_client -connect $1:443 -servername $1 2>/dev/null | openssl x509 -noout -issuer"; }
ca_subj=$(openssl x509 -noout -subject -in "$STATE/egress-ca.pem" | sed 's/^subject=//')
got=$(issuer example.test)
case "$got" in *"$ca_subj"*) ok "example.test is intercepted ($got)" ;; *) fail "example.test issuer: '$got', want '$ca_subj'" ;; esac
got=$(issuer other.test)
case "$got" in *"net.secrets test CA"*) ok "other.test (no rule) is not intercepted ($got)" ;; *) fail "other.test issuer: '$got'" ;; esac
n=$(sx "$A" "grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt")
m=$(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt)
# the egress CA and the engine's own (its https port: sandbox-to-sandbox
# URLs), once each, after the base's (counted by their first lines: a
# Python start-up hook of the host may append its own CA to the bundle,
# which a count of all certificates would take for ours)
once() { sx "$A" "grep -c -F -x '$(sed -n 2p "$1")' /etc/ssl/certs/ca-certificates.crt"; }
[ "$n" -ge $((m + 2)) ] && [ "$(once "$STATE/egress-ca.pem")" = 1 ] &&
  [ "$(once "$STATE/tls/ca.pem")" = 1 ] &&
  ok "the sandbox's bundle: the base's $m, the egress CA and the engine's once each" ||
  fail "the sandbox's bundle has $n certificates (the host's $m), the egress CA $(once "$STATE/egress-ca.pem") and the engine's $(once "$STATE/tls/ca.pem") times"
got=$(sx "$A" 'echo $SSL_CERT_FILE $NODE_EXTRA_CA_CERTS $REQUESTS_CA_BUNDLE')
want="/etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt"
[ "$got" = "$want" ] && ok "the CA variables name the bundle" || fail "CA variables: '$got'"
[ -z "$(grep -c 'BEGIN' /etc/ssl/certs/ca-certificates.crt | grep -v "^$m$")" ] || fail "the host's bundle changed"
# a template whose bundle already holds the egress CA (as a sandbox made
# from a snapshot of one would): it is not added twice
d="$TOPO_DIR/tmpl-ca"
mkdir -p "$d" && cp "$STATE/egress-ca.pem" "$d/ca.pem" && printf '%s\n' 'name: withca' 'steps:' \
  '  - copy: {src: ca.pem, dest: /opt/ca.pem}' \
  '  - run: cat /opt/ca.pem >> /etc/ssl/certs/ca-certificates.crt' >"$d/template.yaml" &&
  tar -C "$d" -cf "$d.tar" template.yaml ca.pem
st=$(curl -s --unix-socket "$STATE/engine.sock" -H "X-API-Key: $KEY" -H 'Content-Type: application/x-tar' \
  --data-binary "@$d.tar" -o "$d.reply" -w '%{http_code}' "http://engine/templates/builds")
[ "$st" = 201 ] || fail "build of a template with the CA: $st $(head -c 400 "$d.reply")"
T=$(api POST /sandboxes '{"templateID":"withca","timeout":300}' | json 'd["sandboxID"]')
ca_lines=$(sx "$T" "grep -c -F -x '$(sed -n 2p "$STATE/egress-ca.pem")' /etc/ssl/certs/ca-certificates.crt")
[ "$ca_lines" = 1 ] && ok "a bundle that holds the egress CA already keeps it once" ||
  fail "the egress CA is $ca_lines times in a bundle that had it"
api DELETE "/sandboxes/$T" >/dev/null
# a template without the bundle: no CA variables (they would name a file
# it does not have: requests would fail with REQUESTS_CA_BUNDLE set)
d="$TOPO_DIR/tmpl-noca"
mkdir -p "$d" && printf '%s\n' 'name: nobundle' 'steps:' '  - run: rm /etc/ssl/certs/ca-certificates.crt' \
  >"$d/template.yaml" && tar -C "$d" -cf "$d.tar" template.yaml
st=$(curl -s --unix-socket "$STATE/engine.sock" -H "X-API-Key: $KEY" -H 'Content-Type: application/x-tar' \
  --data-binary "@$d.tar" -o "$d.reply" -w '%{http_code}' "http://engine/templates/builds")
[ "$st" = 201 ] || fail "build of a template without a bundle: $st $(head -c 400 "$d.reply")"
T=$(api POST /sandboxes '{"templateID":"nobundle","timeout":300}' | json 'd["sandboxID"]')
got=$(sx "$T" 'echo "[$SSL_CERT_FILE$NODE_EXTRA_CA_CERTS$REQUESTS_CA_BUNDLE]"; test -e /etc/ssl/certs/ca-certificates.crt && echo has-bundle')
[ "$got" = "[]" ] && ok "a template without a bundle gets no CA variables" || fail "no bundle: '$got'"
api DELETE "/sandboxes/$T" >/dev/null

# ---- the secret is nowhere in the sandbox ----
# Scanned from the host (so the needle never enters the sandbox): every
# process in the engine's sandbox cgroups (not the engine, which holds the
# secret), its environment, command line and readable memory, and the
# files of the sandbox's writable directories through /proc/<pid>/root
# (opened without following symlinks). A canary planted in a file, an
# environment and a process's memory must be found by the same scan, or
# the scan proves nothing.
CANARY="canary-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
sx "$A" "echo $CANARY > /tmp/canary.txt; CANARY_ENV=$CANARY setsid sleep 600 </dev/null >/dev/null 2>&1 &"
scan() {
  "$TOPO_PY" - "$1" "$CG" "$ENGINE_PID" <<'PY'
import os, sys
needle, cg, engine = sys.argv[1].encode(), sys.argv[2], sys.argv[3]
where, roots, skipped = set(), set(), 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if pid == engine or f"/{cg}" not in open(f"/proc/{pid}/cgroup").read():
            continue
        roots.add(pid)
    except OSError:
        continue
    for what in ("environ", "cmdline"):
        try:
            if needle in open(f"/proc/{pid}/{what}", "rb").read():
                where.add(what)
        except OSError:
            pass
    try:
        with open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for l in open(f"/proc/{pid}/maps"):
                f = l.split()
                a, b = (int(x, 16) for x in f[0].split("-"))
                if f[1][0] != "r" or l.rstrip().endswith("[vvar]"):
                    continue
                if b - a > 4 << 30:  # a sanitizer's shadow/allocator reservation (ASan tree)
                    skipped += 1
                    continue
                try:  # in chunks, overlapping by the needle's length
                    mem.seek(a)
                    tail = b""
                    while a < b:
                        chunk = mem.read(min(b - a, 16 << 20))
                        if not chunk:
                            break
                        if needle in tail + chunk:
                            where.add("memory")
                            break
                        tail = chunk[-len(needle):]
                        a += len(chunk)
                except (OSError, ValueError, OverflowError):
                    pass
    except OSError:
        pass
pid = min(roots, key=int)  # every process of it has the sandbox's root
for top in ("etc", "home", "root", "tmp", "var", "run", "opt", "srv", "mnt", "dev/shm"):
    base = f"/proc/{pid}/root/{top}"
    for d, _, fs in os.walk(base):
        for f in fs:
            try:
                fd = os.open(os.path.join(d, f), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                if os.path.isfile(f"/proc/self/fd/{fd}") and needle in os.read(fd, 64 << 20):
                    where.add("file /" + os.path.relpath(os.path.join(d, f), f"/proc/{pid}/root"))
            except OSError:
                pass
            finally:
                os.close(fd)
print(sorted(where), len(roots), "processes", skipped, "mappings over 4 GiB skipped")
PY
}
got=$(scan "$CANARY")
case "$got" in "['environ', 'file /tmp/canary.txt', 'memory'] "*) ok "the scan finds a planted canary: $got" ;;
  *) fail "the scan does not find the canary: $got" ;; esac
got=$(scan "$VALUE")
case "$got" in "[] "*) ok "the secret is in no file, environment, command line or memory of the sandbox ($got)" ;;
  *) fail "the secret is in the sandbox: $got" ;; esac
got=$(api GET "/sandboxes/$A")
case "$got" in
  *"$VALUE"*) fail "GET shows the secret" ;;
  *'${e2b.secrets.test-key}'*) ok "GET shows the placeholder only" ;;
  *) fail "GET: no rule shown: $got" ;;
esac

kill -TERM "$ENGINE_PID"
topo_wait 120 sh -c "! kill -0 $ENGINE_PID" || fail "the engine did not stop"
[ "$FAILS" = 0 ] && echo "net.secrets: all passed" || echo "net.secrets: $FAILS failed"
[ "$FAILS" = 0 ]
