// The stock E2B JS SDK (npm "e2b", pinned) passing its network options to a
// real agent-sandboxd, configured only by E2B_* variables: create with
// allowInternetAccess and network, getInfo's network, updateNetwork (on the
// instance and by id). What the rules do to packets is the datapath's tests'
// (closed topology); no packet is sent here.
// Run: ENGINE_BIN=... node --test network.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine } from '../support/engine.mjs'

let engine
let e2b

before(async () => {
  engine = await startEngine('npm-network')
  e2b = await import('e2b')
})

after(async () => {
  await engine.stop()
})

// The SDK sends NewSandbox's allow_internet_access (E2B's create spelling;
// GET replies say allowInternetAccess).
test('allowInternetAccess: false at create', async () => {
  const sbx = await e2b.Sandbox.create({ timeoutMs: 60_000, allowInternetAccess: false })
  try {
    assert.equal((await sbx.getInfo()).allowInternetAccess, false)
  } finally {
    await sbx.kill()
  }
})

test('network options through the stock SDK', async () => {
  const sbx = await e2b.Sandbox.create({
    timeoutMs: 60_000,
    network: {
      allowOut: ({ rules }) => [...rules.keys(), '198.18.0.10'],
      denyOut: ['198.18.0.66'],
      rules: { 'api.example.test': [{ transform: { headers: { 'X-Test': 'yes' } } }] }
    }
  })
  try {
    let info = await sbx.getInfo()
    assert.equal(info.allowInternetAccess, true)
    assert.deepEqual(new Set(info.network.allowOut), new Set(['api.example.test', '198.18.0.10']))
    assert.deepEqual(info.network.denyOut, ['198.18.0.66'])
    assert.deepEqual(info.network.rules['api.example.test'][0].transform.headers, { 'X-Test': 'yes' })

    await sbx.updateNetwork({ denyOut: [e2b.ALL_TRAFFIC], allowOut: ['198.18.0.11'], allowInternetAccess: false })
    info = await sbx.getInfo()
    assert.equal(info.allowInternetAccess, false)
    assert.deepEqual(info.network.allowOut, ['198.18.0.11'])
    assert.deepEqual(info.network.denyOut, ['0.0.0.0/0'])
    assert.ok(!info.network.rules || Object.keys(info.network.rules).length === 0)

    await e2b.Sandbox.updateNetwork(sbx.sandboxId, { allowInternetAccess: true })
    info = await e2b.Sandbox.getInfo(sbx.sandboxId)
    assert.equal(info.allowInternetAccess, true)
    assert.ok(!info.network || !info.network.allowOut || info.network.allowOut.length === 0)

    await assert.rejects(sbx.updateNetwork({ allowOut: ['198.18.0.0/99'] }), (e) => /198\.18\.0\.0\/99/.test(e.message))
  } finally {
    await sbx.kill()
  }
  await assert.rejects(e2b.Sandbox.updateNetwork(sbx.sandboxId, {}), e2b.SandboxNotFoundError)
})

// allowPublicTraffic: false — the sandbox's ports answer only with its
// traffic access token (E2B-Traffic-Access-Token), envd's port keeps its own
// access token. Reached through the engine with E2B's routing headers.
test('allowPublicTraffic: false needs the traffic access token', async () => {
  const sbx = await e2b.Sandbox.create({ timeoutMs: 60_000, network: { allowPublicTraffic: false } })
  try {
    assert.ok(sbx.trafficAccessToken)
    await sbx.files.write('/home/user/www/index.html', 'private page')
    await sbx.commands.run('python3 -m http.server 8000 --bind 127.0.0.1', { background: true, cwd: '/home/user/www' })
    const get = (headers) => fetch(`${process.env.E2B_API_URL}/index.html`, {
      headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000', ...headers },
    })
    let ok
    for (let i = 0; i < 300; i++) { // until the server is up
      ok = await get({ 'E2B-Traffic-Access-Token': sbx.trafficAccessToken })
      if (ok.status === 200) break
      await new Promise((r) => setTimeout(r, 100))
    }
    assert.equal(ok.status, 200)
    assert.equal(await ok.text(), 'private page')
    const none = await get({})
    assert.equal(none.status, 403)
    assert.match((await none.json()).message, /missing traffic access token/)
    const wrong = await get({ 'E2B-Traffic-Access-Token': 'x'.repeat(64) })
    assert.equal(wrong.status, 403)
    // envd's port is behind the access token, not the traffic token
    assert.equal(await sbx.files.read('/home/user/www/index.html'), 'private page')
    // the setting stays across an update that does not name it
    await sbx.updateNetwork({ allowOut: ['198.18.0.11'] })
    assert.equal((await get({})).status, 403)
  } finally {
    await sbx.kill()
  }
})

// maskRequestHost: the Host header a sandbox's service sees, "${PORT}" the
// port (E2B's network.test.ts reads it from a server inside); envd's own
// requests keep theirs. Before, the option was stored and ignored.
test('maskRequestHost sets the Host the service sees', async () => {
  const sbx = await e2b.Sandbox.create({
    timeoutMs: 60_000,
    network: { maskRequestHost: 'custom-host.example.com:${PORT}' },
  })
  try {
    const srv = [
      'import http.server',
      'class H(http.server.BaseHTTPRequestHandler):',
      '    def do_GET(self):',
      '        b = (self.headers.get("Host") or "").encode()',
      '        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)',
      '    def log_message(self, *a): pass',
      'http.server.HTTPServer(("127.0.0.1", 8081), H).serve_forever()',
    ].join('\n')
    await sbx.files.write('/home/user/host.py', srv)
    await sbx.commands.run('python3 /home/user/host.py', { background: true })
    const get = () => fetch(`${process.env.E2B_API_URL}/`, {
      headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8081' },
    })
    let r
    for (let i = 0; i < 300; i++) { // until the server is up
      r = await get()
      if (r.status === 200) break
      await new Promise((res) => setTimeout(res, 100))
    }
    assert.equal(r.status, 200)
    assert.equal(await r.text(), 'custom-host.example.com:8081')
    assert.equal((await sbx.commands.run('echo ok')).stdout, 'ok\n') // envd unaffected
  } finally {
    await sbx.kill()
  }
})
