// agent-sandbox-mcp over stdio, driven by the official MCP TypeScript SDK
// client (pinned in package.json) and, for what the SDK never sends, a raw
// line driver; against a real agent-sandboxd. Proves: version negotiation
// (the SDK's latest and older revisions, batches only in 2025-03-26), the
// schemas (valid JSON Schema 2020-12; the SDK itself validates every
// structuredContent against its tool's outputSchema), every tool, images
// from run_code, progress, log streaming and cancellation (the cancelled
// command is gone), JSON-RPC errors, malformed and oversized messages,
// concurrent calls, a client that disappears, the default sandbox.
// Run: ENGINE_BIN=... MCP_BIN=... node --test stdio.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Ajv2020 from 'ajv/dist/2020.js'
import { LoggingMessageNotificationSchema, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS }
  from '@modelcontextprotocol/sdk/types.js'
import { startEngine } from '../support/engine.mjs'
import { stdioClient, RawStdio, call, waitFor, sandboxExists, killSandbox, hostFetch, serverEnv, MCP_BIN } from './harness.mjs'

const TOOLS = ['create_sandbox', 'kill_sandbox', 'list_sandboxes', 'sandbox_info', 'set_timeout',
  'pause_sandbox', 'resume_sandbox', 'run_command', 'command_output', 'kill_command',
  'list_commands', 'run_code', 'read_file', 'write_file', 'list_files', 'make_dir', 'remove',
  'rename', 'upload_url', 'download_url', 'get_url', 'list_named_commands', 'run_named_command',
  'build_template', 'list_templates']

let engine
let mcp // one SDK session shared by the tool tests
let sbx // a sandbox made with create_sandbox for them
const logs = []
const called = new Set()

before(async () => {
  engine = await startEngine('mcp-stdio')
  mcp = await stdioClient()
  // Which tools the tests called with success: the last test wants all.
  const callTool = mcp.client.callTool.bind(mcp.client)
  mcp.client.callTool = async (params, ...rest) => {
    const r = await callTool(params, ...rest)
    if (!r.isError) called.add(params.name)
    return r
  }
  mcp.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params))
  sbx = (await call(mcp.client, 'create_sandbox', { timeout_s: 600, metadata: { suite: 'mcp' } })).sandbox_id
})

after(async () => {
  await mcp?.client.close()
  await engine?.stop()
})

test('initialize: the SDK gets its latest revision, our capabilities and instructions', async () => {
  assert.equal(LATEST_PROTOCOL_VERSION, '2025-11-25')
  const info = mcp.client.getServerVersion()
  assert.equal(info.name, 'agent-sandbox-mcp')
  const caps = mcp.client.getServerCapabilities()
  assert.ok(caps.tools && caps.resources && caps.logging)
  assert.match(mcp.client.getInstructions(), /default sandbox/)
  await mcp.client.ping()
})

test('initialize: every revision the SDK offers is spoken, unknown ones get the latest', async () => {
  for (const rev of SUPPORTED_PROTOCOL_VERSIONS) {
    const raw = new RawStdio()
    const r = await raw.initialize(rev)
    assert.equal(r.result.protocolVersion, rev, rev)
    const tools = (await raw.request('tools/list')).result.tools
    assert.equal(tools.length, TOOLS.length)
    const run = tools.find((t) => t.name === 'run_command')
    // Fields a revision does not define are left out.
    assert.equal('outputSchema' in run, rev >= '2025-06-18', `${rev} outputSchema`)
    assert.equal('title' in run, rev >= '2025-06-18', `${rev} title`)
    assert.equal('annotations' in run, rev >= '2025-03-26', `${rev} annotations`)
    const res = await raw.request('tools/call', { name: 'get_url', arguments: { port: 8080, sandbox_id: sbx } })
    assert.equal('structuredContent' in res.result, rev >= '2025-06-18', `${rev} structuredContent`)
    assert.match(JSON.parse(res.result.content[0].text).url, /8080/)
    assert.equal((await raw.close()).code, 0)
  }
  const raw = new RawStdio()
  const r = await raw.initialize('2099-01-01')
  assert.equal(r.result.protocolVersion, '2025-11-25')
  await raw.close()
})

test('batches: answered in 2025-03-26, refused in the revisions without them', async () => {
  const old = new RawStdio()
  await old.initialize('2025-03-26')
  old.send([{ jsonrpc: '2.0', id: 'a', method: 'ping' },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 'b', method: 'tools/list' },
    { jsonrpc: '2.0', id: 'c', method: 'nope' }])
  const batch = await old.next((m) => Array.isArray(m))
  assert.deepEqual(batch.map((m) => m.id).sort(), ['a', 'b', 'c'])
  assert.equal(batch.find((m) => m.id === 'c').error.code, -32601)
  assert.equal(batch.find((m) => m.id === 'b').result.tools.length, TOOLS.length)
  await old.close()
  const cur = new RawStdio()
  await cur.initialize()
  cur.send([{ jsonrpc: '2.0', id: 1, method: 'ping' }])
  const e = await cur.next((m) => m.error)
  assert.equal(e.error.code, -32600)
  assert.match(e.error.message, /no JSON-RPC batches/)
  await cur.close()
})

test('tools/list: every tool, each schema a valid JSON Schema 2020-12', async () => {
  const { tools } = await mcp.client.listTools()
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort())
  const ajv = new Ajv2020({ strict: true, allErrors: true })
  for (const t of tools) {
    assert.ok(t.description.length > 60, `${t.name}: a description a model can use`)
    assert.match(t.name, /^[a-z_]{1,64}$/)
    assert.equal(t.inputSchema.type, 'object')
    assert.equal(t.inputSchema.additionalProperties, false, t.name)
    ajv.compile(t.inputSchema)
    if (t.outputSchema) ajv.compile(t.outputSchema)
    for (const [name, p] of Object.entries(t.inputSchema.properties)) {
      assert.ok(p.type, `${t.name}.${name} has a type`)
      if ('default' in p) assert.ok(ajv.validate(p, p.default), `${t.name}.${name} default`)
    }
  }
  // Only read_file has no structured result (its content is the file).
  assert.deepEqual(tools.filter((t) => !t.outputSchema).map((t) => t.name), ['read_file'])
})

test('JSON-RPC errors: parse, invalid request, unknown method, invalid params; the session survives', async () => {
  const raw = new RawStdio()
  raw.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
  assert.equal((await raw.next((m) => m.id === 1)).error.code, -32600) // before initialize
  await raw.initialize()
  raw.write('{"jsonrpc": "2.0", "id": 2, "method": "ping"\n') // cut short
  const parse = await raw.next((m) => m.error && m.error.code === -32700)
  assert.equal(parse.id, undefined)
  raw.write('\xff\xfe not even UTF-8\n')
  assert.equal((await raw.next((m) => m.error)).error.code, -32700)
  raw.send({ id: 3, method: 'ping' })
  assert.equal((await raw.next((m) => m.id === 3)).error.code, -32600) // no "jsonrpc"
  raw.send({ jsonrpc: '2.0', id: null, method: 'ping' })
  assert.equal((await raw.next((m) => m.error)).error.code, -32600)
  raw.send({ jsonrpc: '2.0', id: 4, method: 'ping', params: [1] })
  assert.equal((await raw.next((m) => m.id === 4)).error.code, -32602)
  assert.equal((await raw.request('no/such/method')).error.code, -32601)
  assert.equal((await raw.request('tools/call', {})).error.code, -32602)
  const unknown = await raw.request('tools/call', { name: 'no_such_tool', arguments: {} })
  assert.equal(unknown.error.code, -32602)
  assert.match(unknown.error.message, /Unknown tool/)
  assert.equal((await raw.request('logging/setLevel', { level: 'loud' })).error.code, -32602)
  assert.equal((await raw.request('initialize', {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' }
  })).error.code, -32600) // twice
  assert.equal((await raw.request('resources/read', { uri: 'file:///etc/passwd' })).error.code, -32602)
  raw.send({ jsonrpc: '2.0', method: 'notifications/whatever' }) // ignored, not answered
  raw.send({ jsonrpc: '2.0', id: 5, result: {} }) // a response to nothing: ignored
  assert.deepEqual((await raw.request('ping')).result, {})
  assert.equal((await raw.close()).code, 0)
})

test('oversized messages are refused with an error and skipped; the session goes on', async () => {
  const raw = new RawStdio(['--max-message-bytes', '4096'])
  await raw.initialize()
  raw.send({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(10_000) } })
  const e = await raw.next((m) => m.error)
  assert.equal(e.error.code, -32600)
  assert.match(e.error.message, /over the limit of 4096 bytes/)
  // Arriving in pieces, the rest of the long line after the error is dropped.
  raw.write('{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"' + 'y'.repeat(5000))
  await raw.next((m) => m.error)
  raw.write('y'.repeat(5000) + '"}}\n')
  assert.deepEqual((await raw.request('ping')).result, {})
  assert.equal(raw.messages.length, 0)
  await raw.close()
})

test('tool errors are isError results with the library\'s message; bad arguments too', async () => {
  const missing = await mcp.client.callTool({ name: 'read_file', arguments: { path: '/nope/nothing', sandbox_id: sbx } })
  assert.equal(missing.isError, true)
  assert.match(missing.content[0].text, /ASB_ENOTFOUND/)
  const bad = await mcp.client.callTool({ name: 'run_command', arguments: { command: 'true', timeout_s: 'soon' } })
  assert.equal(bad.isError, true)
  assert.match(bad.content[0].text, /arguments\.timeout_s must be an integer/)
  const extra = await mcp.client.callTool({ name: 'list_files', arguments: { path: '/', colour: 'blue' } })
  assert.match(extra.content[0].text, /unknown argument "colour"/)
  const req = await mcp.client.callTool({ name: 'write_file', arguments: { path: '/tmp/x' } })
  assert.match(req.content[0].text, /"content" is required/)
  const gone = await mcp.client.callTool({ name: 'sandbox_info', arguments: { sandbox_id: 'nosuchsandbox00000000' } })
  assert.equal(gone.isError, true)
  assert.match(gone.content[0].text, /ASB_ESANDBOXNOTFOUND/)
})

test('sandbox tools: create, info, list, set_timeout, pause, resume, kill', async () => {
  const info = await call(mcp.client, 'sandbox_info', { sandbox_id: sbx })
  assert.equal(info.sandbox_id, sbx)
  assert.equal(info.state, 'running')
  assert.equal(info.metadata.suite, 'mcp')
  assert.equal(info.is_default, false)
  const listed = await call(mcp.client, 'list_sandboxes', { metadata: { suite: 'mcp' } })
  assert.deepEqual(listed.sandboxes.map((s) => s.sandbox_id), [sbx])
  const t = await call(mcp.client, 'set_timeout', { sandbox_id: sbx, timeout_s: 900 })
  assert.equal(t.timeout_s, 900)
  const other = await call(mcp.client, 'create_sandbox', { envs: { GREETING: 'hej' }, timeout_s: 120 })
  assert.equal((await call(mcp.client, 'run_command', { sandbox_id: other.sandbox_id, command: 'echo $GREETING' })).stdout, 'hej\n')
  await call(mcp.client, 'write_file', { sandbox_id: other.sandbox_id, path: '/home/user/kept', content: 'across pause' })
  assert.equal((await call(mcp.client, 'pause_sandbox', { sandbox_id: other.sandbox_id })).paused, true)
  assert.equal((await call(mcp.client, 'sandbox_info', { sandbox_id: other.sandbox_id })).state, 'paused')
  assert.equal((await call(mcp.client, 'pause_sandbox', { sandbox_id: other.sandbox_id })).paused, false)
  assert.equal((await call(mcp.client, 'resume_sandbox', { sandbox_id: other.sandbox_id })).state, 'running')
  const back = await mcp.client.callTool({ name: 'read_file', arguments: { sandbox_id: other.sandbox_id, path: '/home/user/kept' } })
  assert.equal(back.content[0].text, 'across pause')
  // A paused sandbox is resumed by the next call that reaches into it.
  await call(mcp.client, 'pause_sandbox', { sandbox_id: other.sandbox_id })
  assert.equal((await call(mcp.client, 'run_command', { sandbox_id: other.sandbox_id, command: 'cat kept' })).stdout, 'across pause')
  assert.equal((await call(mcp.client, 'kill_sandbox', { sandbox_id: other.sandbox_id })).killed, true)
  assert.equal(await sandboxExists(other.sandbox_id), false)
  assert.equal((await call(mcp.client, 'kill_sandbox', { sandbox_id: other.sandbox_id })).killed, false)
})

test('commands: foreground, stdin, envs, cwd, user, exit codes, timeout, background, kill, list', async () => {
  const r = await call(mcp.client, 'run_command', {
    sandbox_id: sbx, command: 'echo out; echo err >&2; id -un; pwd; echo $X; cat; exit 7',
    cwd: '/tmp', envs: { X: 'ex' }, stdin: 'from stdin'
  })
  assert.equal(r.exit_code, 7)
  assert.equal(r.stdout, 'out\nuser\n/tmp\nex\nfrom stdin')
  assert.equal(r.stderr, 'err\n')
  assert.equal((await call(mcp.client, 'run_command', { sandbox_id: sbx, command: 'id -un', user: 'root' })).stdout, 'root\n')
  const slow = await mcp.client.callTool({ name: 'run_command', arguments: { sandbox_id: sbx, command: 'echo started; sleep 30', timeout_s: 1 } })
  assert.equal(slow.isError, true)
  assert.match(slow.structuredContent.error, /timed out after 1 s/)
  assert.equal(slow.structuredContent.stdout, 'started\n')
  const big = await call(mcp.client, 'run_command', { sandbox_id: sbx, command: 'seq 1 100000' })
  assert.equal(big.truncated, true)
  assert.ok(big.stdout.endsWith('99999\n100000\n'))
  assert.ok(big.stdout.length <= 65536)

  const bg = await call(mcp.client, 'run_command', { sandbox_id: sbx, command: 'echo one; read line; echo "got $line"; sleep 600', background: true, stdin: 'two\n' })
  assert.equal(bg.background, true)
  const seen = await waitFor('background output', async () => {
    const o = await call(mcp.client, 'command_output', { sandbox_id: sbx, pid: bg.pid })
    return o.stdout.includes('got two') ? o : null
  })
  assert.equal(seen.running, true)
  const ps = await call(mcp.client, 'list_commands', { sandbox_id: sbx })
  assert.ok(ps.commands.some((p) => p.pid === bg.pid))
  assert.equal((await call(mcp.client, 'kill_command', { sandbox_id: sbx, pid: bg.pid })).killed, true)
  const end = await call(mcp.client, 'command_output', { sandbox_id: sbx, pid: bg.pid, wait_s: 60 })
  assert.equal(end.running, false)
  assert.equal(end.stdout, '')
  assert.equal((await call(mcp.client, 'kill_command', { sandbox_id: sbx, pid: bg.pid })).killed, false)
  const done = await call(mcp.client, 'run_command', { sandbox_id: sbx, command: 'echo quick; exit 3', background: true })
  const fin = await call(mcp.client, 'command_output', { sandbox_id: sbx, pid: done.pid, wait_s: 60 })
  assert.deepEqual([fin.running, fin.exit_code, fin.stdout], [false, 3, 'quick\n'])
})

test('files: write, read (text, binary, image), list, make_dir, rename, remove, signed URLs, ports', async () => {
  const w = await call(mcp.client, 'write_file', { sandbox_id: sbx, path: 'notes/a.txt', content: 'héllo\n' })
  assert.equal(w.path, '/home/user/notes/a.txt')
  assert.equal(w.size, 7)
  const t = await mcp.client.callTool({ name: 'read_file', arguments: { sandbox_id: sbx, path: 'notes/a.txt' } })
  assert.deepEqual(t.content, [{ type: 'text', text: 'héllo\n' }])
  const bin = Buffer.from([0, 1, 2, 255, 254])
  await call(mcp.client, 'write_file', { sandbox_id: sbx, path: '/tmp/b.bin', content: bin.toString('base64'), encoding: 'base64' })
  const b = await mcp.client.callTool({ name: 'read_file', arguments: { sandbox_id: sbx, path: '/tmp/b.bin' } })
  const res = b.content.find((c) => c.type === 'resource')
  assert.equal(res.resource.uri, `sandbox://${sbx}/tmp/b.bin`)
  assert.deepEqual(Buffer.from(res.resource.blob, 'base64'), bin)
  const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex')
  await call(mcp.client, 'write_file', { sandbox_id: sbx, path: '/tmp/p.png', content: png.toString('base64'), encoding: 'base64' })
  const img = await mcp.client.callTool({ name: 'read_file', arguments: { sandbox_id: sbx, path: '/tmp/p.png' } })
  assert.equal(img.content[0].type, 'image')
  assert.equal(img.content[0].mimeType, 'image/png')
  await call(mcp.client, 'run_command', { sandbox_id: sbx, command: 'head -c 3000 /dev/zero > /tmp/big' })
  const capped = await mcp.client.callTool({ name: 'read_file', arguments: { sandbox_id: sbx, path: '/tmp/big', max_bytes: 1000 } })
  assert.equal(capped.isError, true)
  assert.match(capped.content[0].text, /is 3000 bytes, over the limit of 1000 bytes/)
  assert.equal((await call(mcp.client, 'write_file', { sandbox_id: sbx, path: '/tmp/x', content: 'x', encoding: 'base64' }).catch((e) => e.message)).includes('not valid base64'), true)

  assert.equal((await call(mcp.client, 'make_dir', { sandbox_id: sbx, path: 'notes/sub' })).created, true)
  assert.equal((await call(mcp.client, 'make_dir', { sandbox_id: sbx, path: 'notes/sub' })).created, false)
  const ls = await call(mcp.client, 'list_files', { sandbox_id: sbx, path: 'notes' })
  assert.deepEqual(ls.entries.map((e) => [e.name, e.type]).sort(), [['a.txt', 'file'], ['sub', 'dir']])
  assert.equal(ls.entries.find((e) => e.name === 'a.txt').size, 7)
  const deep = await call(mcp.client, 'list_files', { sandbox_id: sbx, path: '/home/user', depth: 3 })
  assert.ok(deep.entries.some((e) => e.path === '/home/user/notes/sub'))
  assert.equal((await call(mcp.client, 'rename', { sandbox_id: sbx, from: 'notes/a.txt', to: 'notes/sub/b.txt' })).path, '/home/user/notes/sub/b.txt')
  assert.equal((await call(mcp.client, 'remove', { sandbox_id: sbx, path: 'notes' })).removed, true)
  const lsHome = await call(mcp.client, 'list_files', { sandbox_id: sbx })
  assert.ok(!lsHome.entries.some((e) => e.name === 'notes'))

  // Signed URLs work with nothing but the URL (loopback: the local engine).
  const up = await call(mcp.client, 'upload_url', { sandbox_id: sbx, path: '/home/user/up.txt', expires_in_s: 60 })
  const put = await hostFetch(up.url, { method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: 'uploaded!' })
  assert.equal(put.status, 200, put.text)
  const down = await call(mcp.client, 'download_url', { sandbox_id: sbx, path: '/home/user/up.txt' })
  assert.equal((await hostFetch(down.url)).text, 'uploaded!')
  assert.equal((await hostFetch(down.url.replace(/signature=[^&]+/, 'signature=v1_forged'))).status, 401)
  const u = await call(mcp.client, 'get_url', { sandbox_id: sbx, port: 3000 })
  assert.match(u.host, new RegExp(`^3000-${sbx}\\.`))
  assert.match(u.url, /^http:\/\//)
})

test('run_code: text results as text, matplotlib and SVG as images, errors with traceback', async () => {
  const ci = (await call(mcp.client, 'create_sandbox', { template: 'code-interpreter-v1', timeout_s: 300 })).sandbox_id
  const v = await call(mcp.client, 'run_code', { sandbox_id: ci, code: 'x = 2 ** 10\nprint("side")\nx' })
  assert.equal(v.text, '1024')
  assert.equal(v.stdout, 'side\n')
  const again = await call(mcp.client, 'run_code', { sandbox_id: ci, code: 'x + 1' }) // state persists
  assert.equal(again.text, '1025')
  const plot = await mcp.client.callTool({ name: 'run_code', arguments: { sandbox_id: ci, code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()' } })
  const image = plot.content.find((c) => c.type === 'image')
  assert.equal(image.mimeType, 'image/png')
  assert.equal(Buffer.from(image.data, 'base64').subarray(0, 8).toString('hex'), '89504e470d0a1a0a')
  assert.ok(plot.structuredContent.results.some((r) => r.formats.includes('png')))
  const svg = await mcp.client.callTool({ name: 'run_code', arguments: { sandbox_id: ci, code: 'from IPython.display import SVG, display\ndisplay(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>\'))' } })
  const si = svg.content.find((c) => c.type === 'image')
  assert.equal(si.mimeType, 'image/svg+xml')
  assert.match(Buffer.from(si.data, 'base64').toString(), /<svg/)
  const err = await mcp.client.callTool({ name: 'run_code', arguments: { sandbox_id: ci, code: '1 / 0' } })
  assert.equal(err.isError, true)
  assert.equal(err.structuredContent.error.name, 'ZeroDivisionError')
  assert.match(err.structuredContent.error.traceback, /ZeroDivisionError/)
  assert.equal((await call(mcp.client, 'run_code', { sandbox_id: ci, code: 'echo $((6 * 7))', language: 'bash' })).stdout, '42\n')
  await call(mcp.client, 'kill_sandbox', { sandbox_id: ci })
})

test('templates: build_template, list_templates, list_named_commands, run_named_command', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcp-tmpl-'))
  try {
    writeFileSync(path.join(dir, 'template.yaml'), [
      'name: mcp-test-tmpl',
      'base: base',
      'steps:',
      '  - run: echo built > /opt/marker',
      'custom_commands:',
      '  shout:',
      '    cmd: echo {text} | tr a-z A-Z',
      '    description: Upper-cases text',
      '    args:',
      '      - {name: text, description: what to shout}',
      ''].join('\n'))
    const built = await call(mcp.client, 'build_template', { dir })
    assert.equal(built.name, 'mcp-test-tmpl')
    assert.equal(built.cached, false)
    assert.equal((await call(mcp.client, 'build_template', { dir })).cached, true)
    const all = await call(mcp.client, 'list_templates')
    assert.ok(all.templates.some((t) => t.name === 'mcp-test-tmpl'))
    assert.ok(all.templates.some((t) => t.name === 'base'))
    const s = (await call(mcp.client, 'create_sandbox', { template: 'mcp-test-tmpl', timeout_s: 120 })).sandbox_id
    assert.equal((await call(mcp.client, 'run_command', { sandbox_id: s, command: 'cat /opt/marker' })).stdout, 'built\n')
    const named = await call(mcp.client, 'list_named_commands', { sandbox_id: s })
    const shout = named.commands.find((c) => c.name === 'shout')
    assert.equal(shout.description, 'Upper-cases text')
    assert.equal(shout.args[0].name, 'text')
    const out = await call(mcp.client, 'run_named_command', { sandbox_id: s, name: 'shout', args: { text: 'hi' } })
    assert.match(JSON.stringify(out.result), /HI/)
    const nope = await mcp.client.callTool({ name: 'run_named_command', arguments: { sandbox_id: s, name: 'whisper' } })
    assert.match(nope.content[0].text, /ASB_ECOMMANDNOTFOUND/)
    const broken = await mcp.client.callTool({ name: 'build_template', arguments: { dir: path.join(dir, 'missing') } })
    assert.equal(broken.isError, true)
    await call(mcp.client, 'kill_sandbox', { sandbox_id: s })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('progress notifications and output streamed as log messages', async () => {
  logs.length = 0
  const progress = []
  await call(mcp.client, 'remove', { sandbox_id: sbx, path: '/tmp/progressed' })
  // The command waits until the test saw progress: the SDK drops progress
  // that arrives together with its answer (notifications are handled a
  // microtask later than answers).
  const pending = call(mcp.client, 'run_command', {
    sandbox_id: sbx, command: 'for i in 1 2 3; do echo line$i; done; echo oops >&2; while [ ! -e /tmp/progressed ]; do sleep 0.05; done'
  }, { onprogress: (p) => progress.push(p) })
  await waitFor('progress', () => progress.length >= 1)
  await call(mcp.client, 'write_file', { sandbox_id: sbx, path: '/tmp/progressed', content: '' })
  const r = await pending
  assert.equal(r.stdout, 'line1\nline2\nline3\n')
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress)
  // Log messages arrive before the result (one stream, in order).
  const out = logs.filter((l) => l.logger === 'stdout').map((l) => l.data).join('')
  assert.equal(out, 'line1\nline2\nline3\n')
  assert.equal(logs.filter((l) => l.logger === 'stderr').map((l) => l.data).join(''), 'oops\n')
  // A client that turns them down gets none.
  await mcp.client.setLoggingLevel('warning')
  logs.length = 0
  await call(mcp.client, 'run_command', { sandbox_id: sbx, command: 'echo quiet' })
  assert.deepEqual(logs, [])
  await mcp.client.setLoggingLevel('info')
})

test('cancellation: the C call is cancelled and the command killed (kill_on_cancel)', async () => {
  const ac = new AbortController()
  const p = mcp.client.callTool({ name: 'run_command', arguments: { sandbox_id: sbx, command: 'sleep 600 # cancel-me' } },
    undefined, { signal: ac.signal })
  const running = () => call(mcp.client, 'list_commands', { sandbox_id: sbx })
    .then((l) => l.commands.find((c) => c.args.join(' ').includes('cancel-me')))
  await waitFor('the command to run', running)
  ac.abort('enough')
  await assert.rejects(p)
  await waitFor('the command to be gone', async () => !(await running()))
  // kill_on_cancel false: cancelling the call leaves the command running.
  const ac2 = new AbortController()
  const p2 = mcp.client.callTool({ name: 'run_command', arguments: { sandbox_id: sbx, command: 'sleep 600 # keep-me', kill_on_cancel: false } },
    undefined, { signal: ac2.signal })
  const kept = () => call(mcp.client, 'list_commands', { sandbox_id: sbx })
    .then((l) => l.commands.find((c) => c.args.join(' ').includes('keep-me')))
  await waitFor('the command to run', kept)
  ac2.abort()
  await assert.rejects(p2)
  // The call is over once the server says so: a ping after the
  // cancellation is answered after the worker saw it (same session).
  await mcp.client.ping()
  const still = await kept()
  assert.ok(still, 'still running')
  await call(mcp.client, 'kill_command', { sandbox_id: sbx, pid: still.pid })
})

test('calls run concurrently: one waits for what a later one does', async () => {
  await call(mcp.client, 'remove', { sandbox_id: sbx, path: '/tmp/go' }).catch(() => {})
  const waiter = call(mcp.client, 'run_command', {
    sandbox_id: sbx, command: 'while [ ! -e /tmp/go ]; do sleep 0.05; done; echo released', timeout_s: 120
  })
  await call(mcp.client, 'write_file', { sandbox_id: sbx, path: '/tmp/go', content: '' })
  assert.equal((await waiter).stdout, 'released\n')
})

test('resources: sandbox files listed and read as sandbox://<id>/<path>', async () => {
  await call(mcp.client, 'write_file', { sandbox_id: sbx, path: '/home/user/res.txt', content: 'resource text' })
  const { resourceTemplates } = await mcp.client.listResourceTemplates()
  assert.equal(resourceTemplates[0].uriTemplate, 'sandbox://{sandbox_id}/{+path}')
  const { resources } = await mcp.client.listResources()
  const mine = resources.find((r) => r.uri === `sandbox://${sbx}/home/user/res.txt`)
  assert.ok(mine, 'listed')
  assert.equal(mine.mimeType, 'text/plain')
  const { contents } = await mcp.client.readResource({ uri: mine.uri })
  assert.deepEqual(contents, [{ uri: mine.uri, mimeType: 'text/plain', text: 'resource text' }])
  const dir = await mcp.client.readResource({ uri: `sandbox://${sbx}/home/user` })
  assert.match(dir.contents[0].text, /^res\.txt$/m)
  await assert.rejects(mcp.client.readResource({ uri: `sandbox://${sbx}/home/user/missing` }), (e) => e.code === -32002)
  await assert.rejects(mcp.client.readResource({ uri: 'sandbox://nosuchsandbox00000000/x' }), (e) => e.code === -32002)
})

test('the default sandbox: made on first use, reused, killed at exit; --keep keeps it', async () => {
  const s = await stdioClient()
  const first = await call(s.client, 'run_command', { command: 'echo $HOSTNAME > ~/me' })
  const again = await call(s.client, 'read_file', {}).catch(() => null) // bad args: still no second sandbox
  assert.equal(again, null)
  const info = await call(s.client, 'sandbox_info')
  assert.equal(info.sandbox_id, first.sandbox_id)
  assert.equal(info.is_default, true)
  assert.equal(info.metadata.created_by, 'agent-sandbox-mcp')
  assert.equal((await call(s.client, 'list_sandboxes')).sandboxes.find((x) => x.sandbox_id === first.sandbox_id).is_default, true)
  await s.client.close()
  await waitFor('the default sandbox to be killed', async () => !(await sandboxExists(first.sandbox_id)))

  const k = await stdioClient(['--keep'])
  const kept = (await call(k.client, 'run_command', { command: 'true' })).sandbox_id
  await k.client.close()
  assert.equal(await sandboxExists(kept), true)
  await killSandbox(kept)
  // Killing the default makes the next call start a fresh one.
  const d = await stdioClient()
  const a = (await call(d.client, 'run_command', { command: 'true' })).sandbox_id
  assert.equal((await call(d.client, 'kill_sandbox')).killed, true)
  const b = (await call(d.client, 'run_command', { command: 'true' })).sandbox_id
  assert.notEqual(a, b)
  await d.client.close()
  await waitFor('the second default sandbox to be killed', async () => !(await sandboxExists(b)))
})

test('a client that disappears mid-call: its command is cancelled and killed, the server exits', async () => {
  const raw = new RawStdio()
  await raw.initialize()
  raw.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_command', arguments: { sandbox_id: sbx, command: 'sleep 600 # orphan' } } })
  const running = () => call(mcp.client, 'list_commands', { sandbox_id: sbx })
    .then((l) => l.commands.find((c) => c.args.join(' ').includes('orphan')))
  await waitFor('the command to run', running)
  raw.proc.stdout.destroy()
  raw.proc.stdin.destroy()
  const { code } = await raw.exited
  assert.equal(code, 0)
  await waitFor('the orphan to be killed', async () => !(await running()))
})

test('examples/mcp/client.py runs against the server', async () => {
  const script = new URL('../../examples/mcp/client.py', import.meta.url).pathname
  const { stdout } = await promisify(execFile)('/usr/bin/python3', [script], {
    env: serverEnv({ ASB_MCP_BIN: MCP_BIN }), timeout: 120_000
  })
  assert.match(stdout, /server: agent-sandbox-mcp protocol 2025-11-25/)
  assert.match(stdout, /run_command exit 0 stdout 'Linux\\n'/)
  assert.match(stdout, /read_file: 42/)
  assert.match(stdout, /python 3/)
})

test('every tool was called and succeeded at least once', () => {
  assert.deepEqual([...called].sort(), [...TOOLS].sort())
})
