// agent-sandbox-mcp over Streamable HTTP, driven by the official MCP
// TypeScript SDK client and by plain fetch for what the SDK never sends;
// against a real agent-sandboxd. Proves: the SDK connects with a bearer
// token and calls tools (SSE answers with progress), sessions are isolated
// (own default sandbox, own cancellations; DELETE ends one and kills its
// sandbox, the other goes on), a missing or wrong token gets 401 and a
// foreign Origin 403, malformed and oversized bodies and session misuse
// get the right status, the GET stream carries session messages,
// cancellation kills the command, a server stop kills default sandboxes.
// Run: ENGINE_BIN=... MCP_BIN=... node --test http.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { startEngine } from '../support/engine.mjs'
import { startHttp, httpClient, call, waitFor, sandboxExists } from './harness.mjs'

let engine
let srv

const INIT = (rev = '2025-11-25') => ({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: rev, capabilities: {}, clientInfo: { name: 'fetch', version: '1' } }
})

function post (body, headers = {}, token = srv.token) {
  return fetch(srv.url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...headers
    },
    body: typeof body === 'string' ? body : JSON.stringify(body)
  })
}

async function rawSession (rev) {
  const r = await post(INIT(rev))
  assert.equal(r.status, 200)
  const sid = r.headers.get('mcp-session-id')
  assert.match(sid, /^[0-9a-f]{32}$/)
  await r.json()
  const n = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'Mcp-Session-Id': sid })
  assert.equal(n.status, 202)
  return sid
}

before(async () => {
  engine = await startEngine('mcp-http')
  srv = await startHttp()
  assert.match(srv.token, /^[0-9a-f]{64}$/) // generated, printed once
})

after(async () => {
  await srv?.stop()
  await engine?.stop()
})

test('the SDK client over Streamable HTTP: tools, SSE answers with progress and logs', async () => {
  const { client, transport } = await httpClient(srv.url, srv.token)
  assert.match(transport.sessionId, /^[0-9a-f]{32}$/)
  const { tools } = await client.listTools()
  assert.ok(tools.some((t) => t.name === 'run_command'))
  const progress = []
  // Waits for the test to see progress (see stdio.test.mjs: the SDK drops
  // progress that arrives with its answer).
  const pending = call(client, 'run_command', { command: 'echo over http; while [ ! -e /tmp/seen ]; do sleep 0.05; done' },
    { onprogress: (p) => progress.push(p) })
  await waitFor('progress', () => progress.length >= 1)
  await call(client, 'write_file', { path: '/tmp/seen', content: '' })
  const r = await pending
  assert.equal(r.stdout, 'over http\n')
  assert.equal((await call(client, 'read_file', {}).catch((e) => e.message)).includes('"path" is required'), true)
  await client.ping()
  await transport.terminateSession()
  await waitFor('the session\'s default sandbox to be killed', async () => !(await sandboxExists(r.sandbox_id)))
  await client.close()
})

test('two sessions are isolated: own default sandbox, files, cancellations; ending one leaves the other', async () => {
  const a = await httpClient(srv.url, srv.token, 'a')
  const b = await httpClient(srv.url, srv.token, 'b')
  assert.notEqual(a.transport.sessionId, b.transport.sessionId)
  const [ra, rb] = await Promise.all([
    call(a.client, 'write_file', { path: '/home/user/who', content: 'a' }),
    call(b.client, 'write_file', { path: '/home/user/who', content: 'b' })
  ])
  assert.notEqual(ra.sandbox_id, rb.sandbox_id)
  assert.equal((await a.client.callTool({ name: 'read_file', arguments: { path: '/home/user/who' } })).content[0].text, 'a')
  assert.equal((await b.client.callTool({ name: 'read_file', arguments: { path: '/home/user/who' } })).content[0].text, 'b')
  // Same request id in both sessions: cancelling it in one leaves the other.
  const sidA = a.transport.sessionId
  const sidB = b.transport.sessionId
  const hdr = (sid) => ({ 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' })
  const slow = (sid, tag) => post({
    jsonrpc: '2.0', id: 77, method: 'tools/call',
    params: { name: 'run_command', arguments: { command: `while [ ! -e /tmp/go ]; do sleep 0.05; done; echo ${tag}` } }
  }, { ...hdr(sid), Accept: 'application/json' })
  const pa = slow(sidA, 'A')
  const pb = slow(sidB, 'B')
  const running = (client, tag) => call(client, 'list_commands').then((l) => l.commands.some((c) => c.args.join(' ').includes(`echo ${tag}`)))
  await waitFor('both to run', async () => (await running(a.client, 'A')) && (await running(b.client, 'B')))
  const c = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 77 } }, hdr(sidA))
  assert.equal(c.status, 202)
  assert.equal((await pa).status, 202) // cancelled: no answer
  await waitFor('A\'s command to be killed', async () => !(await running(a.client, 'A')))
  assert.equal(await running(b.client, 'B'), true)
  await call(b.client, 'write_file', { path: '/tmp/go', content: '' })
  const answer = await (await pb).json()
  assert.equal(answer.id, 77)
  assert.equal(answer.result.structuredContent.stdout, 'B\n')
  // DELETE ends A (and kills its default sandbox); B goes on.
  await a.transport.terminateSession()
  const gone = await post({ jsonrpc: '2.0', id: 2, method: 'ping' }, hdr(sidA))
  assert.equal(gone.status, 404)
  await waitFor('A\'s sandbox to be killed', async () => !(await sandboxExists(ra.sandbox_id)))
  assert.equal(await sandboxExists(rb.sandbox_id), true)
  assert.equal((await call(b.client, 'run_command', { command: 'cat who' })).stdout, 'b')
  await a.client.close()
  await b.transport.terminateSession()
  await b.client.close()
})

test('auth: no token or a wrong one is 401, a foreign Origin 403, a loopback Origin is fine', async () => {
  const none = await post(INIT(), {}, null)
  assert.equal(none.status, 401)
  assert.match(none.headers.get('www-authenticate'), /^Bearer/)
  assert.equal((await none.json()).error.code, -32600)
  assert.equal((await post(INIT(), {}, 'f'.repeat(64))).status, 401)
  assert.equal((await post(INIT(), { Authorization: `Basic ${srv.token}` }, null)).status, 401)
  const evil = await post(INIT(), { Origin: 'https://evil.example' })
  assert.equal(evil.status, 403)
  // Refused before the token is even looked at: no oracle for pages.
  assert.equal((await post(INIT(), { Origin: 'http://localhost.evil.example' }, null)).status, 403)
  assert.equal((await post(INIT(), { Origin: 'null' })).status, 403)
  const local = await post(INIT(), { Origin: 'http://localhost:3000' })
  assert.equal(local.status, 200)
  await fetch(srv.url, { method: 'DELETE', headers: { Authorization: `Bearer ${srv.token}`, 'Mcp-Session-Id': local.headers.get('mcp-session-id') } })
  // The SDK client surfaces the 401.
  await assert.rejects(httpClient(srv.url, 'wrong-token-wrong-token'), (e) => e instanceof StreamableHTTPError && e.code === 401)
  // GET and DELETE need the token too.
  assert.equal((await fetch(srv.url, { headers: { Accept: 'text/event-stream' } })).status, 401)
  assert.equal((await fetch(srv.url, { method: 'DELETE' })).status, 401)
})

test('bad input over HTTP: malformed, oversized, wrong session, version, method, Accept', async () => {
  const bad = await post('{"jsonrpc": "2.0", "id": 1,')
  assert.equal(bad.status, 400)
  assert.equal((await bad.json()).error.code, -32700)
  const big = await post({ ...INIT(), pad: 'x'.repeat(5 << 20) })
  assert.equal(big.status, 413)
  const sid = await rawSession()
  assert.equal((await post({ jsonrpc: '2.0', id: 2, method: 'ping' })).status, 400) // no session id
  assert.equal((await post({ jsonrpc: '2.0', id: 2, method: 'ping' }, { 'Mcp-Session-Id': 'f'.repeat(32) })).status, 404)
  assert.equal((await post({ jsonrpc: '2.0', id: 2, method: 'ping' }, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '1999-01-01' })).status, 400)
  const ok = await post({ jsonrpc: '2.0', id: 3, method: 'ping' }, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' })
  assert.equal(ok.status, 200)
  assert.deepEqual(await ok.json(), { jsonrpc: '2.0', id: 3, result: {} })
  const nf = await post({ jsonrpc: '2.0', id: 4, method: 'nope' }, { 'Mcp-Session-Id': sid })
  assert.equal((await nf.json()).error.code, -32601)
  assert.equal((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'Mcp-Session-Id': sid })).status, 202)
  assert.equal((await post({ jsonrpc: '2.0', id: 5, method: 'ping' }, { 'Mcp-Session-Id': sid, Accept: 'text/html' })).status, 406)
  assert.equal((await post(INIT(), { 'Mcp-Session-Id': sid })).status, 400) // initialize on a session
  assert.equal((await post([{ jsonrpc: '2.0', id: 6, method: 'ping' }], { 'Mcp-Session-Id': sid })).status, 200) // answered with an error
  const put = await fetch(srv.url, { method: 'PUT', headers: { Authorization: `Bearer ${srv.token}` } })
  assert.equal(put.status, 405)
  const other = await fetch(srv.url.replace('/mcp', '/other'), { headers: { Authorization: `Bearer ${srv.token}` } })
  assert.equal(other.status, 404)
  const noAccept = await fetch(srv.url, { headers: { Authorization: `Bearer ${srv.token}`, 'Mcp-Session-Id': sid, Accept: 'application/json' } })
  assert.equal(noAccept.status, 406)
  const del = await fetch(srv.url, { method: 'DELETE', headers: { Authorization: `Bearer ${srv.token}`, 'Mcp-Session-Id': sid } })
  assert.equal(del.status, 200)
  assert.equal((await fetch(srv.url, { method: 'DELETE', headers: { Authorization: `Bearer ${srv.token}`, 'Mcp-Session-Id': sid } })).status, 404)
})

test('2025-03-26 over HTTP: batches answered as one JSON array', async () => {
  const sid = await rawSession('2025-03-26')
  const r = await post([{ jsonrpc: '2.0', id: 'x', method: 'ping' }, { jsonrpc: '2.0', id: 'y', method: 'tools/list' }],
    { 'Mcp-Session-Id': sid })
  assert.equal(r.status, 200)
  const arr = await r.json()
  assert.deepEqual(arr.map((m) => m.id).sort(), ['x', 'y'])
  await fetch(srv.url, { method: 'DELETE', headers: { Authorization: `Bearer ${srv.token}`, 'Mcp-Session-Id': sid } })
})

test('the GET stream carries messages not tied to a request; one per session', async () => {
  const { client, transport, gets } = await httpClient(srv.url, srv.token, 'get')
  // The SDK opens the session's GET stream after initialize; once the server
  // has accepted it, a second is refused. (Probing before that would make the
  // probe the session's stream and leave the SDK's refused.)
  await waitFor('the SDK\'s GET stream', async () => gets.opened === 1)
  const sid = transport.sessionId
  const headers = { Authorization: `Bearer ${srv.token}`, 'Mcp-Session-Id': sid, Accept: 'text/event-stream' }
  const second = await fetch(srv.url, { headers })
  await second.body?.cancel()
  assert.equal(second.status, 409)
  const { LoggingMessageNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js')
  const notes = []
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => notes.push(n.params))
  const bg = await call(client, 'run_command', { command: 'exit 4', background: true })
  // Its end is reported on the GET stream (no request is open then).
  await waitFor('the background command\'s end', async () =>
    notes.some((n) => typeof n.data === 'string' && n.data.includes(`background command ${bg.pid}`) && n.data.includes('exited with 4')))
  await transport.terminateSession()
  await client.close()
})

test('cancellation over HTTP: the SDK\'s abort cancels the call and kills the command', async () => {
  const { client, transport } = await httpClient(srv.url, srv.token, 'cancel')
  const ac = new AbortController()
  const p = client.callTool({ name: 'run_command', arguments: { command: 'sleep 600 # http-cancel' } }, undefined, { signal: ac.signal })
  const running = () => call(client, 'list_commands').then((l) => l.commands.some((c) => c.args.join(' ').includes('http-cancel')))
  await waitFor('the command to run', running)
  ac.abort()
  await assert.rejects(p)
  await waitFor('the command to be gone', async () => !(await running()))
  await transport.terminateSession()
  await client.close()
})

test('token from a file (made 0600 if missing); stopping the server kills every default sandbox', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcp-tok-'))
  const file = path.join(dir, 'token')
  const s2 = await startHttp(['--token-file', file])
  try {
    assert.equal(s2.token, undefined) // not printed
    const token = readFileSync(file, 'utf8').trim()
    assert.equal(statSync(file).mode & 0o777, 0o600)
    const { client } = await httpClient(s2.url, token, 'stop')
    const id = (await call(client, 'run_command', { command: 'true' })).sandbox_id
    const { code } = await s2.stop()
    assert.equal(code, 0)
    assert.equal(await sandboxExists(id), false)
    await client.close().catch(() => {})
  } finally {
    await s2.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})
