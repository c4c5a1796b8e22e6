// https on the engine's port through the stock E2B JS SDK, Node's fetch and
// Debian's python3 urllib, trusting the engine's CA the documented way
// (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE): tls_client.mjs does the calls in a
// process started with the CA. Run: ENGINE_BIN=... node --test tls.test.mjs
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEngine } from '../support/engine.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
let engine

before(async () => {
  engine = await startEngine('npm-tls')
})

after(async () => {
  await engine.stop()
})

function client (env) {
  return execFileSync(process.execPath, [path.join(here, 'tls_client.mjs')], {
    env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 240_000
  }).toString()
}

test('the stock SDK, fetch, https and python urllib over https with the engine CA', () => {
  const ca = execFileSync(engine.proc.spawnargs[0], ['--state-dir', engine.state, '--print-ca-path']).toString().trim()
  assert.equal(ca, `${engine.state}/tls/ca.pem`)
  const url = `https://127.0.0.1:${engine.port}`
  const out = JSON.parse(client({ NODE_EXTRA_CA_CERTS: ca, E2B_API_URL: url, E2B_SANDBOX_URL: url }).trim().split('\n').pop())
  assert.equal(out.run, 'over tls\n')
  assert.equal(out.read, 'served over tls')
  assert.equal(out.fetch, 'served over tls')
  assert.equal(out.getHost.status, 200)
  assert.equal(out.getHost.body, 'served over tls')
  assert.match(out.getHost.cn, /^8000-[a-z0-9]{20}\.localhost$/)
  assert.deepEqual(out.python, { urllib: 'served over tls', sni: 'served over tls' })
  assert.equal(out.running, false)
})

test('without the CA the SDK refuses the engine\'s certificate', () => {
  const url = `https://127.0.0.1:${engine.port}`
  assert.throws(() => client({ NODE_EXTRA_CA_CERTS: '', E2B_API_URL: url, E2B_SANDBOX_URL: url }),
    (e) => /self[- ]signed|unable to (get|verify)|certificate/i.test(String(e.stderr)))
})
