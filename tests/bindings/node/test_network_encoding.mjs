// node.network_encoding: what the Node binding and agent-sandbox/compat send
// for E2B's allowInternetAccess, network and updateNetwork, and how they read
// getInfo's network back. The server is a canned responder on loopback
// standing for the control plane (the engine's side is tested end to end in
// test_network.mjs); no engine is needed here.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'

const SID = 'n0net0test'
const DETAIL = {
  sandboxID: SID, templateID: 'base', envdVersion: '0.6.13', allowInternetAccess: false,
  network: {
    allowOut: ['198.18.0.10', '*.example.test'], denyOut: ['0.0.0.0/0'],
    rules: { 'api.example.test': [{ transform: { headers: { 'X-A': 'b' } } }] },
    egressProxy: { address: '198.18.0.20:1080', username: 'u', password: 'never shown' },
    allowPublicTraffic: false, maskRequestHost: '${PORT}-x.example.test'
  }
}

let srv, conn, lib, compat
const reqs = []
const last = () => reqs[reqs.length - 1]

before(async () => {
  srv = http.createServer((req, res) => {
    let body = ''
    req.on('data', (d) => { body += d })
    req.on('end', () => {
      reqs.push({ method: req.method, path: req.url, body: body ? JSON.parse(body) : undefined })
      const reply = (status, obj) => {
        const data = obj === undefined ? '' : JSON.stringify(obj)
        res.writeHead(status, obj === undefined ? {} : { 'Content-Type': 'application/json' })
        res.end(data)
      }
      if (req.method === 'POST') {
        reply(201, { sandboxID: SID, templateID: 'base', envdVersion: '0.6.13', envdAccessToken: 'tok', domain: 'localhost' })
      } else if (req.method === 'PUT') reply(204)
      else reply(200, DETAIL)
    })
  })
  await new Promise((r) => srv.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${srv.address().port}`
  conn = { apiUrl: url, sandboxUrl: url, apiKey: 'k', maxRetries: -1 }
  lib = await import('agent-sandbox')
  compat = await import('agent-sandbox/compat')
})

after(() => new Promise((r) => srv.close(r)))

test('create sends E2B\'s wire body, callbacks resolved', async () => {
  const rules = new Map([['api.example.test', [{ transform: ({ iam }) => ({ headers: { Authorization: `Bearer ${iam.tokens.aws}` } }) }]]])
  const sb = await lib.Sandbox.create({
    ...conn,
    allowInternetAccess: false,
    network: {
      allowOut: ({ rules }) => [...rules.keys(), '198.18.0.10'],
      denyOut: ({ allTraffic }) => [allTraffic],
      rules,
      egressProxy: { address: '198.18.0.20:1080', username: 'u', password: null },
      allowPublicTraffic: false,
      maskRequestHost: '${PORT}-x.example.test'
    }
  })
  assert.equal(last().method, 'POST')
  assert.equal(last().path, '/v2/sandboxes')
  assert.equal(last().body.allow_internet_access, false)
  assert.deepEqual(last().body.network, {
    allowOut: ['api.example.test', '198.18.0.10'],
    denyOut: ['0.0.0.0/0'],
    rules: { 'api.example.test': [{ transform: { headers: { Authorization: 'Bearer ${e2b.identity.tokens.aws}' } } }] },
    egressProxy: { address: '198.18.0.20:1080', username: 'u' },
    allowPublicTraffic: false,
    maskRequestHost: '${PORT}-x.example.test'
  })
  sb.close()
  const plain = await lib.Sandbox.create(conn)
  assert.equal(last().body.allow_internet_access, undefined)
  assert.equal(last().body.network, undefined)
  plain.close()
})

test('mistakes are refused before anything is sent', async () => {
  const n = reqs.length
  await assert.rejects(lib.Sandbox.create({ ...conn, network: { allowout: [] } }),
    (e) => e instanceof lib.InvalidArgumentError && /allowout/.test(e.message))
  await assert.rejects(lib.Sandbox.create({ ...conn, network: { allowOut: '198.18.0.1' } }), lib.InvalidArgumentError)
  await assert.rejects(lib.Sandbox.create({ ...conn, network: { egressProxy: {} } }), /address/)
  await assert.rejects(lib.Sandbox.create({ ...conn, network: { allowPublicTraffic: 'no' } }), /allowPublicTraffic/)
  assert.equal(reqs.length, n)
})

test('updateNetwork puts the update config; getInfo reads it back', async () => {
  const sb = await lib.Sandbox.create(conn)
  await sb.updateNetwork({ allowOut: ['198.18.0.10'], allowInternetAccess: false })
  assert.deepEqual(last(), { method: 'PUT', path: `/sandboxes/${SID}/network`, body: { allowOut: ['198.18.0.10'], allow_internet_access: false } })
  await sb.updateNetwork({})
  assert.deepEqual(last().body, {})
  await assert.rejects(sb.updateNetwork({ maskRequestHost: 'x' }), /maskRequestHost/)
  await lib.Sandbox.updateNetwork(SID, { denyOut: ['198.18.0.66'] }, conn)
  assert.deepEqual(last(), { method: 'PUT', path: `/sandboxes/${SID}/network`, body: { denyOut: ['198.18.0.66'] } })
  const info = await sb.getInfo()
  assert.equal(info.allowInternetAccess, false)
  assert.deepEqual(info.network, {
    allowOut: ['198.18.0.10', '*.example.test'], denyOut: ['0.0.0.0/0'],
    rules: { 'api.example.test': [{ transform: { headers: { 'X-A': 'b' } } }] },
    egressProxy: { address: '198.18.0.20:1080', username: 'u' },
    allowPublicTraffic: false, maskRequestHost: '${PORT}-x.example.test'
  })
  sb.close()
})

test('compat: E2B\'s names and calls', async () => {
  assert.equal(compat.ALL_TRAFFIC, '0.0.0.0/0')
  const sb = await compat.Sandbox.create({ ...conn, allowInternetAccess: true, network: { denyOut: [compat.ALL_TRAFFIC], allowOut: ['198.18.0.10'] } })
  assert.equal(last().body.allow_internet_access, true)
  assert.deepEqual(last().body.network, { denyOut: ['0.0.0.0/0'], allowOut: ['198.18.0.10'] })
  await sb.updateNetwork({ allowOut: ['198.18.0.11'] })
  assert.deepEqual(last().body, { allowOut: ['198.18.0.11'] })
  await compat.Sandbox.updateNetwork(SID, { allowInternetAccess: true }, conn)
  assert.deepEqual(last().body, { allow_internet_access: true })
  assert.deepEqual((await compat.Sandbox.getInfo(SID, conn)).network.denyOut, ['0.0.0.0/0'])
  sb.close()
})
