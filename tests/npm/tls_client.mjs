// The client half of tls.test.mjs, run as its own process because Node
// reads NODE_EXTRA_CA_CERTS (the engine's CA) only at start: the stock E2B
// SDK with https:// E2B_API_URL and E2B_SANDBOX_URL, Node's fetch and
// https module, and Debian's python3 urllib against a sandbox port over
// TLS. Prints one JSON line of what it saw; tls.test.mjs checks it.
// SPDX-License-Identifier: Apache-2.0
import https from 'node:https'
import { execFileSync } from 'node:child_process'
import { Sandbox } from 'e2b'

const out = {}
const sbx = await Sandbox.create({ timeoutMs: 120_000 })
try {
  out.run = (await sbx.commands.run('echo over tls')).stdout
  await sbx.files.write('/home/user/www/index.txt', 'served over tls')
  out.read = await sbx.files.read('/home/user/www/index.txt')
  await sbx.commands.run('cd /home/user/www && python3 -m http.server 8000 --bind 127.0.0.1',
    { background: true })
  const host = sbx.getHost(8000) // 8000-<id>.localhost:<engine port>
  const [name, port] = host.split(':')
  const routed = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000' }
  const engine = new URL(process.env.E2B_SANDBOX_URL)
  // stock fetch, the port picked by the E2B routing headers
  for (let i = 0; i < 1200; i++) {
    const r = await fetch(`${engine.origin}/index.txt`, { headers: routed })
    if (r.status === 200) { out.fetch = await r.text(); break }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  // https://<getHost> with its own name checked (the certificate issued
  // for 8000-<id>.localhost); only the name lookup is given, as glibc
  // without nss-myhostname has none for *.localhost
  out.getHost = await new Promise((resolve, reject) => {
    const req = https.get({
      host: name, port, path: '/index.txt',
      lookup: (h, o, cb) => o && o.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)
    }, (res) => {
      const cn = res.socket.getPeerCertificate().subject.CN
      let b = ''
      res.on('data', (d) => { b += d })
      res.on('end', () => resolve({ status: res.statusCode, body: b, cn }))
    })
    req.on('error', reject)
  })
  // Debian's python3: urllib with SSL_CERT_FILE, and ssl with the sandbox
  // host's name as SNI and the name checked
  const py = `
import json, os, socket, ssl, sys, urllib.request
host, port, sid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
req = urllib.request.Request('https://127.0.0.1:%d/index.txt' % port,
                             headers={'E2b-Sandbox-Id': sid, 'E2b-Sandbox-Port': '8000'})
body = urllib.request.urlopen(req, timeout=60).read().decode()
ctx = ssl.create_default_context()
with socket.create_connection(('127.0.0.1', port)) as raw:
    with ctx.wrap_socket(raw, server_hostname=host) as s:
        s.sendall(('GET /index.txt HTTP/1.1\\r\\nHost: %s:%d\\r\\nConnection: close\\r\\n\\r\\n' % (host, port)).encode())
        resp = b''
        while True:
            d = s.recv(65536)
            if not d: break
            resp += d
print(json.dumps({'urllib': body, 'sni': resp.decode().split('\\r\\n\\r\\n', 1)[1]}))
`
  out.python = JSON.parse(execFileSync('/usr/bin/python3', ['-c', py, name, port, sbx.sandboxId], {
    env: { ...process.env, SSL_CERT_FILE: process.env.NODE_EXTRA_CA_CERTS }
  }).toString())
} finally {
  await sbx.kill()
}
out.running = await sbx.isRunning()
console.log(JSON.stringify(out))
