#!/usr/bin/env node
// Fork latency with the parent's processes (--pause-criu, docs/snapshots.md)
// against a fork booted fresh on its files, on one engine started with
// --pause-criu, side by side round by round (load drift hits both alike):
//   processes  POST /sandboxes/{id}/fork {}                      (forkMode processes)
//   files      POST /sandboxes/{id}/fork {"keepProcesses":false} (forkMode files)
// each -> the fork's first commands.run('true') result (stock E2B JS SDK,
// Sandbox.connect), for a small parent (a shell counter) and one whose
// process holds ~256 MiB of written memory. Percentiles, and the ratio.
// usage: node bench/fork_criu_bench.mjs [rounds]   (as root; needs
//   ninja -C build agent-sandboxd, npm ci --prefix tests/npm, criu at
//   $ASB_CRIU or /var/cache/agent-sandbox/criu/bin/criu)
// SPDX-License-Identifier: Apache-2.0
import { accessSync, constants } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEngine } from '../tests/support/engine.mjs'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const rounds = Number(process.argv[2] || 5)
const criu = process.env.ASB_CRIU || '/var/cache/agent-sandbox/criu/bin/criu'
accessSync(criu, constants.X_OK)
const engine = await startEngine('forkbench', ['--pause-criu', '--criu', criu], {})
const { Sandbox } = await import(path.join(repo, 'tests/npm/node_modules/e2b/dist/index.mjs'))
const now = () => Number(process.hrtime.bigint()) / 1e6 // ms
const T = { timeoutMs: 600_000 }
const SIZES = { small: 0, '256MiB': 256 }

const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const fmt = (v) => `p50 ${pct(v, 50).toFixed(0).padStart(6)} ms  p90 ${pct(v, 90).toFixed(0).padStart(6)} ms  max ${Math.max(...v).toFixed(0).padStart(6)} ms`

async function fork (id, body) {
  const r = await fetch(`${process.env.E2B_API_URL}/sandboxes/${id}/fork`, {
    method: 'POST',
    headers: { 'X-API-Key': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify(body)
  })
  const j = await r.json()
  if (r.status !== 201 || !j[0].sandbox) throw new Error(`fork: ${r.status} ${JSON.stringify(j)}`)
  return j[0].sandbox
}

async function parentOf (mb) {
  const p = await Sandbox.create('base', T)
  const hold = mb
    ? `python3 -c "import time; b = bytearray(${mb} << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nopen('/tmp/ready', 'w').close()\nwhile True: time.sleep(0.1)"`
    : 'touch /tmp/ready; i=0; while :; do i=$((i+1)); sleep 0.1; done'
  const h = await p.commands.run(hold, { background: true })
  await h.disconnect()
  for (let i = 0; i < 600 && !(await p.files.exists('/tmp/ready')); i++) await new Promise(r => setTimeout(r, 100))
  return p
}

const res = {}
for (const k of Object.keys(SIZES)) res[k] = { processes: [], files: [], modes: new Set() }
try {
  for (let r = 0; r < rounds; r++) {
    for (const [name, mb] of Object.entries(SIZES)) {
      const parent = await parentOf(mb)
      const order = r % 2 ? ['files', 'processes'] : ['processes', 'files']
      for (const kind of order) {
        const t = now()
        const s = await fork(parent.sandboxId, kind === 'files' ? { keepProcesses: false } : {})
        const k = await Sandbox.connect(s.sandboxID, T)
        await k.commands.run('true')
        res[name][kind].push(now() - t)
        res[name].modes.add(`${kind}->${s.forkMode}`)
        await k.kill()
      }
      await parent.kill()
    }
  }
  console.log(`rounds ${rounds}; fork -> the fork's first command, on an engine with --pause-criu`)
  for (const name of Object.keys(SIZES)) {
    const x = res[name]
    console.log(`parent ${name} (${[...x.modes].join(', ')}):`)
    for (const k of ['processes', 'files'])
      console.log(`  ${k.padEnd(9)} ${fmt(x[k])}`)
    console.log(`  processes / files at p50: ${(pct(x.processes, 50) / pct(x.files, 50)).toFixed(2)}x`)
  }
} finally {
  await engine.stop()
}
