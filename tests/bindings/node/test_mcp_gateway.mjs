// node.mcp_gateway: E2B's `mcp` create option through agent-sandbox/compat:
// Sandbox.create({mcp}) makes a sandbox of the bundled mcp-gateway template
// and starts our mcp-gateway in it, as E2B's SDK does; getMcpUrl() has
// E2B's form, getMcpToken() the token (also read back from the gateway's
// token file by a connected object); the stdio server of
// tests/npm/mcp/echo_server.py answers tools/list and tools/call through
// the engine's router; a bad config is E2B's SandboxError "Failed to start
// MCP gateway: ..." and no sandbox is left. The same through the native
// API (asb_sandbox_options.mcp_json, asb_sandbox_mcp_url/_token): its
// create starts the gateway in C; a sandbox without one answers
// getMcpToken() with NotFoundError, and its trafficAccessToken is the one
// allowPublicTraffic false made (asb_sandbox_traffic_access_token), also
// on a compat object from connect (E2B's sandbox.trafficAccessToken).
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { engine as startEngine, repo } from './helpers.mjs'

let engine, compat, lib
const src = readFileSync(path.join(repo, 'tests', 'npm', 'mcp', 'echo_server.py'), 'utf8')
const mcp = {
  'github/asb-tests/echo': { installCmd: 'echo installed > marker', runCmd: `python3 -c '${src}'`, envs: { GREETING: 'yo' } }
}

before(async () => {
  engine = await startEngine('mcpgw')
  compat = await import('agent-sandbox/compat')
  lib = await import('agent-sandbox')
})

after(async () => {
  await engine.stop()
})

async function rpc(sbx, token, method, params = {}) {
  const res = await fetch(`${process.env.E2B_API_URL}/mcp`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${token}`,
      'E2b-Sandbox-Id': sbx.sandboxId,
      'E2b-Sandbox-Port': '50005'
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params })
  })
  return { status: res.status, body: res.status === 200 ? await res.json() : await res.text() }
}

test('compat create with mcp: the gateway, its URL and token, tools through it', async () => {
  const sbx = await compat.Sandbox.create({ mcp, timeoutMs: 120_000 })
  try {
    assert.equal(sbx.getMcpUrl(), `https://${sbx.getHost(50005)}/mcp`)
    assert.ok(sbx.getHost(50005).startsWith(`50005-${sbx.sandboxId}.`))
    const token = await sbx.getMcpToken()
    assert.match(token, /^[0-9a-f-]{36}$/)
    const other = await compat.Sandbox.connect(sbx.sandboxId)
    assert.equal(await other.getMcpToken(), token)
    const list = await rpc(sbx, token, 'tools/list')
    assert.equal(list.status, 200)
    assert.ok(list.body.result.tools.some((t) => t.name === 'echo.echo'))
    const r = await rpc(sbx, token, 'tools/call', { name: 'echo.echo', arguments: { text: 'node' } })
    assert.equal(r.body.result.content[0].text, 'yo node installed')
    assert.equal((await rpc(sbx, `${token}x`, 'tools/list')).status, 401)
  } finally {
    await sbx.kill()
  }
})

test('compat create with a bad mcp config: SandboxError, no sandbox left', async () => {
  const before = (await compat.Sandbox.list().nextItems()).length
  await assert.rejects(compat.Sandbox.create({ mcp: { exa: { apiKey: 'k' } }, timeoutMs: 60_000 }),
    (e) => e instanceof compat.SandboxError && /^Failed to start MCP gateway: .*catalog servers/.test(e.message))
  await assert.rejects(compat.Sandbox.create({ mcp: { 'github/a/b': { runCmd: 'echo no >&2; exit 6' } } }),
    (e) => e instanceof compat.SandboxError && /exited with status 6: no/.test(e.message))
  assert.equal((await compat.Sandbox.list().nextItems()).length, before)
})

test('native create with mcp: the C library starts the gateway; URL, token, tools/list', async () => {
  const sbx = await lib.Sandbox.create({ mcp, timeoutMs: 120_000 })
  try {
    assert.equal(sbx.getMcpUrl(), `${sbx.getUrl(50005)}/mcp`)
    const token = await sbx.getMcpToken()
    assert.match(token, /^[0-9a-f-]{36}$/)
    const other = await lib.Sandbox.connect(sbx.sandboxId)
    try {
      assert.equal(await other.getMcpToken(), token) // read back from the gateway's file
    } finally {
      other.close()
    }
    const list = await rpc(sbx, token, 'tools/list')
    assert.equal(list.status, 200)
    assert.ok(list.body.result.tools.some((t) => t.name === 'echo.echo'))
    assert.equal((await rpc(sbx, `${token}x`, 'tools/list')).status, 401)
  } finally {
    await sbx.kill()
    sbx.close()
  }
})

test('native: a bad mcp config rejects with SandboxError and leaves no sandbox', async () => {
  const before = (await lib.Sandbox.list()).length
  await assert.rejects(lib.Sandbox.create({ mcp: { 'github/a/b': { runCmd: 'echo no >&2; exit 6' } } }),
    (e) => e instanceof lib.SandboxError && /^Failed to start MCP gateway: .*exited with status 6: no/s.test(e.message))
  assert.equal((await lib.Sandbox.list()).length, before)
})

test('native: no gateway is NotFoundError; trafficAccessToken of allowPublicTraffic false', async () => {
  const sbx = await lib.Sandbox.create({ network: { allowPublicTraffic: false }, timeoutMs: 60_000 })
  try {
    await assert.rejects(sbx.getMcpToken(), lib.NotFoundError)
    assert.equal(typeof sbx.trafficAccessToken, 'string')
    assert.ok(sbx.trafficAccessToken.length > 0)
    const other = await compat.Sandbox.connect(sbx.sandboxId) // E2B's, through compat
    assert.equal(other.trafficAccessToken, sbx.trafficAccessToken)
    other.close()
  } finally {
    await sbx.kill()
    sbx.close()
  }
})
