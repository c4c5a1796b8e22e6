// Shared by the MCP tests: a real engine (tests/support/engine.mjs), the
// agent-sandbox-mcp binary ($MCP_BIN) started the way MCP clients start it,
// the official SDK client over stdio and Streamable HTTP, a raw
// line-by-line stdio driver for what the SDK will not send (older
// revisions, batches, malformed and oversized messages), and condition
// waits with generous deadlines (never fixed sleeps).
// SPDX-License-Identifier: Apache-2.0
import { spawn } from 'node:child_process'
import http from 'node:http'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

const here = path.dirname(fileURLToPath(import.meta.url))
export const MCP_BIN = process.env.MCP_BIN || path.join(here, '../../build/core/mcp/agent-sandbox-mcp')

// The server's environment: only what a user's MCP client config would
// give it (the engine's address and key), plus PATH.
export function serverEnv (extra = {}) {
  return {
    PATH: process.env.PATH,
    E2B_API_URL: process.env.E2B_API_URL,
    E2B_SANDBOX_URL: process.env.E2B_SANDBOX_URL,
    E2B_API_KEY: process.env.E2B_API_KEY,
    ...(process.env.ASAN_OPTIONS ? { ASAN_OPTIONS: process.env.ASAN_OPTIONS } : {}),
    ...(process.env.UBSAN_OPTIONS ? { UBSAN_OPTIONS: process.env.UBSAN_OPTIONS } : {}),
    ...extra
  }
}

export async function stdioClient (args = [], name = 'mcp-test') {
  const transport = new StdioClientTransport({ command: MCP_BIN, args, env: serverEnv(), stderr: 'inherit' })
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} })
  await client.connect(transport)
  return { client, transport }
}

export async function waitFor (what, fn, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs
  let last
  for (;;) {
    last = await fn()
    if (last) return last
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

// Does the engine still have this sandbox?
export async function sandboxExists (id) {
  const r = await fetch(`${process.env.E2B_API_URL}/sandboxes/${id}`, {
    headers: { 'X-API-Key': process.env.E2B_API_KEY }
  })
  await r.arrayBuffer()
  return r.status === 200
}

export async function killSandbox (id) {
  const r = await fetch(`${process.env.E2B_API_URL}/sandboxes/${id}`, {
    method: 'DELETE', headers: { 'X-API-Key': process.env.E2B_API_KEY }
  })
  await r.arrayBuffer()
}

// The structured result of a tool call that must succeed.
export async function call (client, name, args = {}, opts) {
  const r = await client.callTool({ name, arguments: args }, undefined, opts)
  if (r.isError) throw new Error(`${name} failed: ${r.content.map((c) => c.text).join(' ')}`)
  return r.structuredContent
}

// The server over stdio without the SDK: send raw lines, read messages.
export class RawStdio {
  constructor (args = [], env = {}) {
    this.proc = spawn(MCP_BIN, args, { env: serverEnv(env), stdio: ['pipe', 'pipe', 'inherit'] })
    this.buf = ''
    this.messages = []
    this.waiters = []
    this.exited = new Promise((resolve) => this.proc.once('exit', (code, sig) => resolve({ code, sig })))
    this.proc.stdout.on('data', (d) => {
      this.buf += d.toString()
      let nl
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, nl)
        this.buf = this.buf.slice(nl + 1)
        this.messages.push(JSON.parse(line)) // stdout carries only JSON-RPC
        this.wake()
      }
    })
    this.nextId = 1000
  }

  wake () {
    for (const w of this.waiters.splice(0)) w()
  }

  write (text) { this.proc.stdin.write(text) }
  send (obj) { this.write(JSON.stringify(obj) + '\n') }

  // The first unread message matching pred (removed from the queue).
  async next (pred = () => true, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const i = this.messages.findIndex(pred)
      if (i >= 0) return this.messages.splice(i, 1)[0]
      if (Date.now() > deadline) throw new Error('no matching message from the server')
      await new Promise((resolve) => {
        this.waiters.push(resolve)
        setTimeout(resolve, 200)
      })
    }
  }

  async request (method, params) {
    const id = this.nextId++
    this.send({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })
    return this.next((m) => m.id === id)
  }

  async initialize (protocolVersion = '2025-11-25') {
    const r = await this.request('initialize', {
      protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' }
    })
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
    return r
  }

  async close () {
    this.proc.stdin.end()
    return this.exited
  }
}

// The server over Streamable HTTP: started with --listen 127.0.0.1:0; the
// port (and a generated token) come from its stdout.
export async function startHttp (args = []) {
  const proc = spawn(MCP_BIN, ['--listen', '127.0.0.1:0', ...args], {
    env: serverEnv(), stdio: ['ignore', 'pipe', 'inherit']
  })
  const exited = new Promise((resolve) => proc.once('exit', (code, sig) => resolve({ code, sig })))
  const info = await new Promise((resolve, reject) => {
    let buf = ''
    let token
    proc.stdout.on('data', (d) => {
      buf += d.toString()
      const t = buf.match(/^token: (\S+)$/m)
      if (t) token = t[1]
      const m = buf.match(/^listening on (http:\/\/\S+)$/m)
      if (m) resolve({ url: m[1], token })
    })
    proc.once('exit', (code) => reject(new Error(`agent-sandbox-mcp exited with ${code}`)))
  })
  return {
    proc,
    ...info,
    async stop () {
      proc.kill('SIGTERM')
      return exited
    }
  }
}

// The returned `gets` counts the GET streams the server accepted for this
// client (the SDK opens one after initialize, on its own schedule), so a
// test can wait for it instead of probing with a GET of its own: a probe
// that comes first becomes the session's stream itself.
export async function httpClient (url, token, name = 'mcp-http-test') {
  const gets = { opened: 0 }
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: async (u, init) => {
      const r = await fetch(u, init)
      if ((init?.method ?? 'GET') === 'GET' && r.status === 200) gets.opened++
      return r
    }
  })
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} })
  await client.connect(transport)
  return { client, transport, gets }
}

// A request to a sandbox URL ("http://<port>-<id>.localhost:<engine port>/...")
// sent to the engine on 127.0.0.1 with that Host, as a resolver for
// *.localhost would: nothing here resolves names.
export function hostFetch (url, { method = 'GET', headers = {}, body } = {}) {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port: u.port, method, path: u.pathname + u.search,
      headers: { ...headers, Host: u.host }
    }, (res) => {
      let data = ''
      res.on('data', (d) => { data += d })
      res.on('end', () => resolve({ status: res.statusCode, text: data }))
    })
    req.on('error', reject)
    if (body !== undefined) req.write(body)
    req.end()
  })
}
