// Loopback URLs (core/engine/loopurl.c): POST /sandboxes/{id}/ports/{port}/loopback
// gives http://127.0.0.1:<n> for one sandbox port, which Node's stock fetch
// and Debian's python3 urllib open without any resolver for *.localhost;
// the same access rules as the router (allowPublicTraffic: false needs the
// traffic token); the listener is gone once the sandbox is killed.
// Run: ENGINE_BIN=... node --test loopback.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEngine } from '../support/engine.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
let engine
let e2b

before(async () => {
  engine = await startEngine('npm-loopback')
  e2b = await import('e2b')
})

after(async () => {
  await engine.stop()
})

async function loopback (id, port, key = process.env.E2B_API_KEY) {
  const r = await fetch(`${process.env.E2B_API_URL}/sandboxes/${id}/ports/${port}/loopback`, {
    method: 'POST', headers: { 'X-API-Key': key }
  })
  return { status: r.status, body: await r.json() }
}

async function serve (sbx, port) {
  await sbx.files.write('/home/user/www/index.txt', `port ${port}`)
  await sbx.commands.run(`cd /home/user/www && python3 -m http.server ${port} --bind 127.0.0.1`,
    { background: true })
}

// until the server in the sandbox answers (the router's 502 port_closed before)
async function untilUp (url, headers = {}) {
  for (let i = 0; i < 1200; i++) {
    const r = await fetch(url, { headers })
    if (r.status !== 502) return r
    await r.arrayBuffer()
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`${url} never came up`)
}

test('a loopback URL opens in fetch and urllib, and closes with its sandbox', async () => {
  const sbx = await e2b.Sandbox.create({ timeoutMs: 120_000 })
  await serve(sbx, 8000)
  const a = await loopback(sbx.sandboxId, 8000)
  assert.equal(a.status, 200)
  assert.match(a.body.url, /^http:\/\/127\.0\.0\.1:\d+$/)
  assert.equal(a.body.port, 8000)
  assert.equal(a.body.sandboxID, sbx.sandboxId)
  // the same pair, the same URL
  assert.equal((await loopback(sbx.sandboxId, 8000)).body.url, a.body.url)
  const r = await untilUp(`${a.body.url}/index.txt`)
  assert.equal(r.status, 200)
  assert.equal(await r.text(), 'port 8000')
  const py = execFileSync('/usr/bin/python3', ['-c',
    'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1] + "/index.txt", timeout=60).read().decode())',
    a.body.url]).toString()
  assert.equal(py, 'port 8000\n')
  // envd's port too, with its own rules (its /health is open)
  const envd = await loopback(sbx.sandboxId, 49983)
  assert.equal((await fetch(`${envd.body.url}/health`)).status, 204)
  // the API key is needed to open one; bad ports and sandboxes are refused
  assert.equal((await loopback(sbx.sandboxId, 8000, 'nope')).status, 401)
  assert.equal((await loopback(sbx.sandboxId, 0)).status, 400)
  assert.equal((await loopback(sbx.sandboxId, 70000)).status, 400)
  assert.equal((await loopback('nosuchsandbox0000000', 8000)).status, 404)
  await sbx.kill()
  // gone with the sandbox: a new connection is refused ...
  for (const u of [a.body.url, envd.body.url]) {
    const { port } = new URL(u)
    await assert.rejects(new Promise((resolve, reject) => {
      const c = net.connect({ host: '127.0.0.1', port }, () => { c.destroy(); resolve() })
      c.on('error', reject)
    }), (e) => e.code === 'ECONNREFUSED')
  }
  // ... and one fetch kept alive from before gets the router's 502
  const late = await fetch(`${a.body.url}/index.txt`).catch((e) => e)
  if (!(late instanceof Error)) {
    assert.equal(late.status, 502)
    assert.equal((await late.json()).error, 'sandbox_not_found')
  } else {
    assert.equal(late.cause.code, 'ECONNREFUSED')
  }
  assert.equal((await loopback(sbx.sandboxId, 8000)).status, 404)
})

test('allowPublicTraffic: false still needs the traffic token on a loopback URL', async () => {
  const sbx = await e2b.Sandbox.create({ timeoutMs: 120_000, network: { allowPublicTraffic: false } })
  try {
    await serve(sbx, 8001)
    const { body } = await loopback(sbx.sandboxId, 8001)
    const url = `${body.url}/index.txt`
    const tok = { 'E2B-Traffic-Access-Token': sbx.trafficAccessToken }
    assert.equal((await untilUp(url, tok)).status, 200)
    const r = await fetch(url)
    assert.equal(r.status, 403)
    assert.equal((await r.json()).error, 'traffic_token_required')
    assert.equal((await fetch(url, { headers: { 'E2B-Traffic-Access-Token': 'wrong' } })).status, 403)
  } finally {
    await sbx.kill()
  }
})

test('examples/https_loopback.sh runs as documented', () => {
  const asb = path.join(path.dirname(engine.proc.spawnargs[0]), '../cli/asb')
  const out = execFileSync('bash', [path.join(here, '../../examples/https_loopback.sh')], {
    env: { ...process.env, ASB_STATE_DIR: engine.state, ASB: asb }, timeout: 240_000
  }).toString()
  assert.match(out, /^sandbox [a-z0-9]{20}\nhello over https\nloopback URL http:\/\/127\.0\.0\.1:\d+\nhello over https\n$/)
})
