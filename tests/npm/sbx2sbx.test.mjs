// A sandbox opening another sandbox's public URL (https://<port>-<id>.
// localhost:<engine port>, what getHost gives) through its portal
// (core/engine/portal.c), as E2B's httpbin sidecar tests do, with the stock
// E2B JS SDK against a real agent-sandboxd with --no-network (loopback
// only: nothing leaves the machine): the sending sandbox's network.rules
// headers arrive, and the portal is only the router — never the control
// plane, a loopback URL or the host's loopback services, and the target's
// envd token and traffic token still apply.
// Run: ENGINE_BIN=... node --test sbx2sbx.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEngine } from '../support/engine.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
let engine
let e2b
let httpbin
let hostSrv
let hostPort
const opened = []

before(async () => {
  engine = await startEngine('npm-sbx2sbx')
  e2b = await import('e2b')
  httpbin = await e2b.Sandbox.create('httpbin', { timeoutMs: 300_000 })
  // a service on the host's loopback, which no sandbox may reach
  hostSrv = http.createServer((req, res) => res.end('host secret'))
  await new Promise((resolve) => hostSrv.listen(0, '127.0.0.1', resolve))
  hostPort = hostSrv.address().port
})

after(async () => {
  await Promise.allSettled([httpbin?.kill(), ...opened.map((s) => s.kill())])
  hostSrv?.close()
  await engine.stop()
})

async function sandbox (opts = {}) {
  const s = await e2b.Sandbox.create({ timeoutMs: 120_000, ...opts })
  opened.push(s)
  return s
}

// curl in the sandbox: { code: HTTP status or 0, body, exit }
async function curl (sbx, args) {
  const r = await sbx.commands.run(
    `curl -sS --max-time 20 -o /tmp/out -w '%{http_code}' ${args}; echo " $?"; cat /tmp/out 2>/dev/null`,
    { timeoutMs: 60_000 })
  const m = r.stdout.match(/^(\d+) (\d+)\n?([\s\S]*)$/)
  assert.ok(m, `curl output: ${r.stdout} ${r.stderr}`)
  return { code: parseInt(m[1], 10), exit: parseInt(m[2], 10), body: m[3] }
}

test('network.rules headers reach another sandbox over https and http', async () => {
  const host = httpbin.getHost(8080)
  assert.equal(host, `8080-${httpbin.sandboxId}.localhost:${engine.port}`)
  const sbx = await sandbox({
    network: { rules: { [host]: [{ transform: { headers: { 'X-Test-Token': 'injected-1' } } }] } }
  })
  for (const scheme of ['https', 'http']) {
    // no -k, no --cacert: the engine's CA is in the sandbox's trust store
    const r = await curl(sbx, `-H 'X-Test-Token: mine' ${scheme}://${host}/headers`)
    assert.equal(r.code, 200, r.body)
    const h = JSON.parse(r.body).headers
    assert.deepEqual(h['X-Test-Token'], ['injected-1'], JSON.stringify(h)) // replaced, not added
  }
  // paused without memory and booted again: a new network namespace, a new portal
  const key = process.env.E2B_API_KEY
  const pause = await fetch(`http://127.0.0.1:${engine.port}/sandboxes/${sbx.sandboxId}/pause`, {
    method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: '{"memory": false}'
  })
  assert.equal(pause.status, 204)
  const again = await e2b.Sandbox.connect(sbx.sandboxId)
  const r2 = await curl(again, `https://${host}/headers`)
  assert.equal(r2.code, 200, r2.body)
  assert.deepEqual(JSON.parse(r2.body).headers['X-Test-Token'], ['injected-1'])
  // many connections in a row: each is known as this sandbox's (its portal's
  // tag, not whatever the engine's memory held before)
  const loop = await sbx.commands.run(`python3 -c '
import socket, sys
for i in range(300):
    s = socket.create_connection(("127.0.0.1", ${engine.port}))
    s.sendall(b"GET /headers HTTP/1.1\\r\\nHost: ${host}\\r\\nConnection: close\\r\\n\\r\\n")
    r = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        r += d
    s.close()
    if not r.startswith(b"HTTP/1.1 200") or b"injected-1" not in r:
        sys.exit("request %d: %r" % (i, r[:400]))
print("ok")'`, { timeoutMs: 120_000 })
  assert.equal(loop.stdout.trim(), 'ok')
  // without a rule the request arrives as sent
  const plain = await sandbox()
  const r = await curl(plain, `-H 'X-Test-Token: mine' https://${host}/get?a=1`)
  assert.equal(r.code, 200, r.body)
  const j = JSON.parse(r.body)
  assert.deepEqual(j.headers['X-Test-Token'], ['mine'])
  assert.deepEqual(j.args, { a: ['1'] })
  assert.equal(j.method, 'GET')
})

// Every client in a sandbox reaches the URL by name, not only curl (which
// resolves *.localhost itself): glibc's resolver through the base
// template's nss-myhostname (::1 and 127.0.0.1, no DNS needed, so with
// --no-network too), a client on ::1 through the portal's IPv6 listener,
// and for clients without nss-myhostname (musl, busybox, Go) DNS: the
// engine's resolver with the network on, the portal's loopback DNS with
// --no-network, both answering localhost names with loopback themselves.
test('*.localhost resolves for glibc clients; the portal listens on 127.0.0.1 and ::1', async () => {
  const host = httpbin.getHost(8080)
  const name = host.replace(/:\d+$/, '')
  const sbx = await sandbox()
  const run = async (cmd, opts = {}) => {
    const r = await sbx.commands.run(cmd, { timeoutMs: 60_000, ...opts }).catch((e) => e)
    return { exit: r.exitCode ?? -1, out: `${r.stdout ?? ''}`, err: `${r.stderr ?? ''}${r.error ?? ''}` }
  }
  // glibc (getaddrinfo through NSS): both loopback addresses
  let r = await run(`getent ahosts ${name}`)
  assert.equal(r.exit, 0, `getent ahosts ${name}: ${r.out} ${r.err}`)
  assert.match(r.out, /^::1\s+STREAM/m, r.out)
  assert.match(r.out, /^127\.0\.0\.1\s+STREAM/m, r.out)
  // Python's urllib (glibc's resolver, the system trust store with the
  // engine's CA), over https and http
  r = await run(`python3 -c '
import json, urllib.request
for scheme in ("https", "http"):
    with urllib.request.urlopen(scheme + "://${host}/get?via=urllib", timeout=20) as resp:
        j = json.load(resp)
        print(scheme, resp.status, j["args"]["via"][0])
'`)
  assert.equal(r.exit, 0, r.out + r.err)
  assert.equal(r.out.trim(), 'https 200 urllib\nhttp 200 urllib')
  // an IPv6-only client: ::1 is the portal too (TLS with the URL's name)
  r = await run(`python3 -c '
import socket, ssl
ai = socket.getaddrinfo("${name}", ${engine.port}, socket.AF_INET6, socket.SOCK_STREAM)
s = socket.create_connection(ai[0][4][:2], timeout=20)
print(s.getpeername()[0])
s = ssl.create_default_context().wrap_socket(s, server_hostname="${name}")
s.sendall(b"GET /get HTTP/1.1\\r\\nHost: ${host}\\r\\nConnection: close\\r\\n\\r\\n")
print(s.recv(12).decode())
'`)
  assert.equal(r.exit, 0, r.out + r.err)
  assert.equal(r.out.trim(), '::1\nHTTP/1.1 200')
  let c = await curl(sbx, `-6 https://${host}/headers`)
  assert.equal(c.code, 200, c.body)
  c = await curl(sbx, `-6 http://${host}/headers`)
  assert.equal(c.code, 200, c.body)
  // Node's fetch (its own lookup: getaddrinfo, ::1 first; NODE_EXTRA_CA_CERTS)
  // (the base's /usr is the host's: node is there when the host has it)
  if (existsSync('/usr/bin/node')) {
    r = await run(`node -e '
const dns = require("node:dns")
;(async () => {
  const all = await dns.promises.lookup("${name}", { all: true })
  console.log(all.map((a) => a.address).sort().join(","))
  for (const scheme of ["https", "http"]) {
    const res = await fetch(scheme + "://${host}/get?via=fetch")
    console.log(scheme, res.status, (await res.json()).args.via[0])
  }
})().catch((e) => { console.error(e, e.cause); process.exit(1) })
'`)
    assert.equal(r.exit, 0, r.out + r.err)
    assert.equal(r.out.trim(), '127.0.0.1,::1\nhttps 200 fetch\nhttp 200 fetch')
  }
  // Without nss-myhostname (an image of its own, musl, busybox): DNS. With
  // the network on that is the engine's resolver, with --no-network the
  // portal's DNS socket on 127.0.0.1:53; both answer localhost names
  // with loopback themselves.
  r = await run(`sed -i "s/ myhostname//" /etc/nsswitch.conf && grep ^hosts: /etc/nsswitch.conf && getent ahosts ${name}`, { user: 'root' })
  assert.match(r.out, /^hosts:\s+files dns$/m, r.out + r.err)
  assert.equal(r.exit, 0, r.out + r.err)
  assert.match(r.out, /^::1\s+STREAM/m, r.out)
  assert.match(r.out, /^127\.0\.0\.1\s+STREAM/m, r.out)
  r = await run(`python3 -c 'import urllib.request; print(urllib.request.urlopen("https://${host}/get", timeout=20).status)'`)
  assert.equal(r.out.trim(), '200', r.out + r.err)
  // other names are not resolved by it (no network: REFUSED; with the
  // network the topology's DNS has no such name either)
  r = await run('getent ahosts no-such-name.test')
  assert.equal(r.exit, 2, r.out + r.err)
  // the busybox template: static glibc, no nss-myhostname, only DNS
  const bb = await e2b.Sandbox.create('busybox', { timeoutMs: 120_000 }).catch((e) => e)
  if (!(bb instanceof Error)) {
    opened.push(bb)
    const w = await bb.commands.run(`wget -q -O - http://${host}/get?via=busybox`, { timeoutMs: 60_000 }).catch((e) => e)
    assert.equal(w.exitCode, 0, `${w.stdout} ${w.stderr}`)
    assert.deepEqual(JSON.parse(w.stdout).args.via, ['busybox'])
  } else {
    assert.ok(!existsSync('/bin/busybox'), `busybox sandbox: ${bb}`)
  }
})

test('a rule\'s secret is resolved at the portal; an unknown one sends nothing', async () => {
  const key = process.env.E2B_API_KEY
  const made = await fetch(`http://127.0.0.1:${engine.port}/secrets`, {
    method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'sbx2sbx-key', value: 's3cr3t-value' })
  })
  assert.equal(made.status, 201)
  const host = httpbin.getHost(8080)
  const sbx = await sandbox({
    network: {
      rules: {
        [host]: [{ transform: { headers: { Authorization: 'Bearer ${e2b.secrets.sbx2sbx-key}' } } }],
        [httpbin.getHost(8081)]: [{ transform: { headers: { 'X-K': '${e2b.secrets.no-such}' } } }]
      }
    }
  })
  let r = await curl(sbx, `https://${host}/bearer`)
  assert.equal(r.code, 200, r.body)
  assert.equal(JSON.parse(r.body).token, 's3cr3t-value')
  r = await curl(sbx, `https://${httpbin.getHost(8081)}/`)
  assert.equal(r.code, 502, r.body)
  assert.match(r.body, /secret that does not exist/)
})

test('the portal is the router only: no control plane, loopback URL or host service', async () => {
  const sbx = await sandbox()
  const key = process.env.E2B_API_KEY
  const p = engine.port
  // the control plane, even with the engine's key
  let r = await curl(sbx, `-H 'X-API-Key: ${key}' http://127.0.0.1:${p}/sandboxes`)
  assert.equal(r.code, 403, r.body)
  r = await curl(sbx, `-H 'X-API-Key: ${key}' https://localhost:${p}/sandboxes`)
  assert.equal(r.code, 403, r.body)
  r = await curl(sbx, `http://127.0.0.1:${p}/health`)
  assert.equal(r.code, 403, r.body)
  // the host's loopback service: the sandbox's loopback is its own
  r = await curl(sbx, `http://127.0.0.1:${hostPort}/`)
  assert.equal(r.code, 0)
  assert.notEqual(r.exit, 0)
  // nor by a crafted Host through the portal
  r = await curl(sbx, `-H 'Host: 127.0.0.1:${hostPort}' http://127.0.0.1:${p}/`)
  assert.equal(r.code, 403, r.body)
  assert.doesNotMatch(r.body, /host secret/)
  // a loopback URL the host opened for the httpbin sandbox's port
  const lb = await fetch(`http://127.0.0.1:${p}/sandboxes/${httpbin.sandboxId}/ports/8080/loopback`,
    { method: 'POST', headers: { 'X-API-Key': key } })
  assert.equal(lb.status, 200)
  const lport = (await lb.json()).loopbackPort
  r = await curl(sbx, `http://127.0.0.1:${lport}/headers`)
  assert.equal(r.code, 0)
  r = await curl(sbx, `-H 'Host: 127.0.0.1:${lport}' http://127.0.0.1:${p}/headers`)
  assert.equal(r.code, 403, r.body)
  // another sandbox's envd needs its access token, as from anywhere
  r = await curl(sbx, `'https://49983-${httpbin.sandboxId}.localhost:${p}/files?path=/etc/hostname'`)
  assert.equal(r.code, 401, r.body)
  // an unknown sandbox: E2B's 502
  r = await curl(sbx, `https://8080-nosuchsandbox000000.localhost:${p}/`)
  assert.equal(r.code, 502, r.body)
})

test('the target\'s traffic token and the sender\'s internet switch apply', async () => {
  const priv = await sandbox({ network: { allowPublicTraffic: false } })
  await priv.commands.run('python3 -m http.server 8000 >/dev/null 2>&1', { background: true })
  const host = priv.getHost(8000)
  const token = (await priv.getInfo()).trafficAccessToken ?? priv.trafficAccessToken
  const sbx = await sandbox()
  let r = await curl(sbx, `https://${host}/`)
  assert.equal(r.code, 403, r.body)
  assert.match(r.body, /traffic_token_required|traffic access token/)
  assert.ok(token, 'the create reply has a traffic access token')
  r = await curl(sbx, `--retry 10 --retry-connrefused --retry-all-errors -H 'E2B-Traffic-Access-Token: ${token}' https://${host}/`)
  assert.equal(r.code, 200, r.body)
  // a sandbox without internet access does not reach public URLs either
  const off = await sandbox({ allowInternetAccess: false })
  r = await curl(off, `https://${httpbin.getHost(8080)}/headers`)
  assert.equal(r.code, 403, r.body)
  assert.match(r.body, /egress_denied/)
})

test('examples/sandbox_to_sandbox.sh runs as documented', () => {
  const asb = path.join(path.dirname(engine.proc.spawnargs[0]), '../cli/asb')
  const out = execFileSync('bash', [path.join(here, '../../examples/sandbox_to_sandbox.sh')], {
    env: { ...process.env, ASB_STATE_DIR: engine.state, ASB: asb }, timeout: 240_000
  }).toString()
  assert.match(out, /^httpbin at https:\/\/8080-[a-z0-9]{20}\.localhost:\d+\nX-Demo-Token: \['from-the-rule'\]\ncontrol plane from a sandbox: 403\n$/)
})
