#!/usr/bin/env node
// E2B's mcp option through the stock E2B JS SDK (npm e2b, tests/npm):
//   create   Sandbox.create({mcp}) with one stdio server (tests/npm/mcp/
//            echo_server.py) -> the gateway serving, against
//            Sandbox.create('mcp-gateway') -> first commands.run('true'),
//            interleaved round by round;
//   call     tools/call echo.echo through the gateway (HTTP via the
//            engine's router, the gateway, the server's stdio) and the
//            gateway's own sandbox.run_command('true'), against the SDK's
//            commands.run('true') (envd) in the same sandbox, one of each
//            per round, the order rotating.
// Percentiles and ratios to the baseline of the same run.
// usage: node bench/mcp_gateway_bench.mjs [create rounds] [call rounds]
//   (as root; needs ninja -C build agent-sandboxd, npm ci --prefix tests/npm)
// SPDX-License-Identifier: Apache-2.0
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEngine } from '../tests/support/engine.mjs'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const createRounds = Number(process.argv[2] || 10)
const callRounds = Number(process.argv[3] || 200)
const engine = await startEngine('mcpgwbench', [], {})
const { Sandbox } = await import(path.join(repo, 'tests/npm/node_modules/e2b/dist/index.mjs'))
const src = readFileSync(path.join(repo, 'tests/npm/mcp/echo_server.py'), 'utf8')
const mcp = { 'github/bench/echo': { installCmd: 'echo installed > marker', runCmd: `python3 -c '${src}'` } }
const now = () => Number(process.hrtime.bigint()) / 1e6 // ms

const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const line = (name, v, base) =>
  console.log(`${name.padEnd(44)} p50 ${pct(v, 50).toFixed(2).padStart(8)} ms  p99 ${pct(v, 99).toFixed(2).padStart(8)} ms` +
    (base ? `  ${(pct(v, 50) / pct(base, 50)).toFixed(2)}x / ${(pct(v, 99) / pct(base, 99)).toFixed(2)}x` : ''))

let id = 0
async function call(sbx, token, name, args) {
  const res = await fetch(`${process.env.E2B_SANDBOX_URL}/mcp`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${token}`, 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '50005'
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args } })
  })
  const j = await res.json()
  if (!j.result || j.result.isError) throw new Error(JSON.stringify(j))
}

const r = { plain: [], mcp: [], sdk: [], echo: [], own: [] }
try {
  // warm the template build once, outside the figures
  await (await Sandbox.create('mcp-gateway')).kill()
  for (let i = 0; i < createRounds; i++) {
    let t = now()
    const a = await Sandbox.create('mcp-gateway')
    await a.commands.run('true')
    r.plain.push(now() - t)
    await a.kill()
    t = now()
    const b = await Sandbox.create({ mcp })
    r.mcp.push(now() - t)
    await b.kill()
  }
  const sbx = await Sandbox.create({ mcp, timeoutMs: 600_000 })
  const token = await sbx.getMcpToken()
  const variants = [
    ['sdk', () => sbx.commands.run('true')],
    ['echo', () => call(sbx, token, 'echo.echo', { text: 'x' })],
    ['own', () => call(sbx, token, 'sandbox.run_command', { command: 'true' })]
  ]
  for (let i = 0; i < 10; i++) for (const [, f] of variants) await f() // warm up
  for (let i = 0; i < callRounds; i++) {
    for (let j = 0; j < variants.length; j++) {
      const [k, f] = variants[(i + j) % variants.length]
      const t = now()
      await f()
      r[k].push(now() - t)
    }
  }
  await sbx.kill()
  console.log(`create rounds ${createRounds}, call rounds ${callRounds}`)
  line("create('mcp-gateway') -> commands.run(true)", r.plain)
  line('create({mcp}) -> gateway serving', r.mcp, r.plain)
  line('commands.run(true) (envd)', r.sdk)
  line('tools/call echo.echo (gateway + stdio server)', r.echo, r.sdk)
  line('tools/call sandbox.run_command(true)', r.own, r.sdk)
} finally {
  await engine.stop()
}
