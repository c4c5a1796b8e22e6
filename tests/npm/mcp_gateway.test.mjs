// E2B's `mcp` create option with the stock E2B JS SDK (npm "e2b", pinned)
// and the official MCP client (@modelcontextprotocol/sdk, pinned) against a
// real agent-sandboxd: Sandbox.create({mcp}) starts our mcp-gateway in a
// sandbox of the bundled mcp-gateway template; a stdio MCP server shipped
// here (mcp/echo_server.py, started from runCmd after installCmd, with
// envs) is served at port 50005 /mcp behind the token; tools/list and
// tools/call through it, a crashed server restarted, 401 without the
// token, and bad configs as the SDK's "Failed to start MCP gateway".
// Run: ENGINE_BIN=... node --test mcp_gateway.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { startEngine } from '../support/engine.mjs'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

let engine
let e2b
const src = readFileSync(new URL('./mcp/echo_server.py', import.meta.url), 'utf8')
assert.ok(!src.includes("'"), 'echo_server.py goes inside single quotes')
const config = {
  'github/asb-tests/echo': {
    installCmd: 'echo installed > marker',
    runCmd: `python3 -c '${src}'`,
    envs: { GREETING: 'hello' }
  }
}

before(async () => {
  engine = await startEngine('npm-mcpgw')
  e2b = await import('e2b')
})

after(async () => {
  await engine?.stop() // --kill-on-exit: the sandboxes go with it
})

// The gateway through the engine's router: E2B's getMcpUrl() is
// https://50005-<id>.<domain>/mcp; until the engine serves https on
// *.localhost the test names the sandbox and port in the router's headers
// on the plain sandbox URL (the same route).
function gatewayUrl() {
  return new URL(`${process.env.E2B_SANDBOX_URL}/mcp`)
}
function routeHeaders(sbx) {
  return { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '50005' }
}

async function connect(sbx, token) {
  const client = new Client({ name: 'asb-test', version: '1' })
  const transport = new StreamableHTTPClientTransport(gatewayUrl(), {
    requestInit: { headers: { ...routeHeaders(sbx), Authorization: `Bearer ${token}` } }
  })
  await client.connect(transport)
  return client
}

function textOf(r) {
  return r.content.map((c) => c.text).join('')
}

test('create with mcp: tools of a stdio server through the gateway, token, restart', async () => {
  const sbx = await e2b.Sandbox.create({ mcp: config, timeoutMs: 120_000 })
  try {
    const port = new URL(process.env.E2B_API_URL).port
    assert.equal(sbx.getMcpUrl(), `https://50005-${sbx.sandboxId}.localhost:${port}/mcp`)
    const token = await sbx.getMcpToken()
    assert.match(token, /^[0-9a-f-]{36}$/)
    // the token file E2B's getMcpToken reads (as root) when the object did
    // not make the sandbox: the same token, root's only
    assert.equal(await sbx.files.read('/etc/mcp-gateway/.token', { user: 'root' }), token)
    const st = await sbx.commands.run('stat -c %a:%U /etc/mcp-gateway/.token', { user: 'root' })
    assert.equal(st.stdout.trim(), '600:root')
    const other = await e2b.Sandbox.connect(sbx.sandboxId)
    assert.equal(await other.getMcpToken(), token)

    const client = await connect(sbx, token)
    try {
      const { tools } = await client.listTools()
      assert.deepEqual(tools.map((t) => t.name).sort(), ['echo.crash', 'echo.echo', 'echo.env',
        'sandbox.list_files', 'sandbox.read_file', 'sandbox.run_command', 'sandbox.write_file'])
      assert.equal(tools.find((t) => t.name === 'echo.echo').inputSchema.required[0], 'text')
      // envs, installCmd's marker in the working directory it shares with runCmd
      const r = await client.callTool({ name: 'echo.echo', arguments: { text: 'world' } })
      assert.equal(textOf(r), 'hello world installed')
      // the servers do not get the gateway's token
      assert.equal(textOf(await client.callTool({ name: 'echo.env', arguments: {} })), 'token:none')
      // a server that dies mid-call: a tool error saying so, restarted next time
      const c = await client.callTool({ name: 'echo.crash', arguments: {} })
      assert.equal(c.isError, true)
      assert.match(textOf(c), /echo.*exited with status 3/)
      const again = await client.callTool({ name: 'echo.echo', arguments: { text: 'again' } })
      assert.equal(textOf(again), 'hello again installed')
      // the gateway's own tools act on this sandbox, as its user
      const w = await client.callTool({ name: 'sandbox.write_file',
        arguments: { path: '/home/user/gw/note.txt', content: 'from mcp' } })
      assert.equal(w.isError, false, textOf(w))
      assert.equal(textOf(await client.callTool({ name: 'sandbox.read_file',
        arguments: { path: '/home/user/gw/note.txt' } })), 'from mcp')
      const rc = await client.callTool({ name: 'sandbox.run_command',
        arguments: { command: 'id -un; pwd; cat gw/note.txt; exit 4' } })
      assert.deepEqual(rc.structuredContent, { stdout: 'user\n/home/user\nfrom mcp', stderr: '', exit_code: 4 })
      assert.match(textOf(await client.callTool({ name: 'sandbox.list_files',
        arguments: { path: '/home/user/gw' } })), /note\.txt/)
      // ...so not the gateway's token (root's, 0600) through them
      const tok = await client.callTool({ name: 'sandbox.read_file',
        arguments: { path: '/etc/mcp-gateway/.token' } })
      assert.equal(tok.isError, true)
      assert.match(textOf(tok), /Permission denied/)
      assert.equal(await sbx.files.read('/home/user/gw/note.txt'), 'from mcp')
      await assert.rejects(client.callTool({ name: 'echo.nope', arguments: {} }), /no such tool/)
      await assert.rejects(client.callTool({ name: 'sandbox.nope', arguments: {} }), /unknown tool/)
      await assert.rejects(client.callTool({ name: 'nosuch.tool', arguments: {} }), /unknown tool/)
    } finally {
      await client.close()
    }

    // no token, a wrong one: 401 with WWW-Authenticate, before anything else
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
    for (const auth of [undefined, `Bearer ${token}x`, 'Bearer ', token]) {
      const headers = { ...routeHeaders(sbx), 'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream' }
      if (auth !== undefined) headers.Authorization = auth
      const res = await fetch(gatewayUrl(), { method: 'POST', headers, body })
      assert.equal(res.status, 401, `Authorization: ${auth}`)
      assert.equal(res.headers.get('www-authenticate'), 'Bearer')
      await res.text()
    }
    await assert.rejects(connect(sbx, 'wrong'), /401/)
  } finally {
    await sbx.kill()
  }
})

test('bad mcp configs: the SDK\'s "Failed to start MCP gateway: <reason>", sandbox killed', async () => {
  const running = async () => (await e2b.Sandbox.list().nextItems()).length
  const before = await running()
  const cases = [
    // E2B's catalog servers run from Docker images: none here
    [{ exa: { apiKey: 'k' } }, /Failed to start MCP gateway: .*'exa' is one of E2B's catalog servers/],
    [{ 'github/a/b': { installCmd: 'true' } }, /Failed to start MCP gateway: .*runCmd must be a non-empty string/],
    // a server that cannot start: its exit and its stderr
    [{ 'github/a/b': { runCmd: 'echo boom >&2; exit 5' } },
      /Failed to start MCP gateway: .*'github\/a\/b'.*exited with status 5: boom/],
    [{ 'github/a/b': { runCmd: 'true', installCmd: 'echo nope >&2; exit 7' } },
      /Failed to start MCP gateway: .*installCmd of .*exited with status 7: nope/]
  ]
  for (const [mcp, want] of cases) {
    await assert.rejects(e2b.Sandbox.create({ mcp, timeoutMs: 60_000 }),
      (e) => e instanceof e2b.SandboxError && want.test(e.message) || assert.fail(e.message))
  }
  assert.equal(await running(), before)
})
