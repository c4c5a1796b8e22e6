#!/usr/bin/env node
// Snapshots and fork through the stock E2B JS SDK (npm e2b, tests/npm):
// per size of data the parent wrote (0, 10, 100, 500 MiB of random bytes
// in /home/user), interleaved round by round with a fresh create of the
// same template (load drift hits all alike):
//   fresh    Sandbox.create('base') -> first commands.run('true') result
//   snapshot parent.createSnapshot() (freeze, copy, thaw)
//   from     Sandbox.create(snapshotId) -> first commands.run('true')
//   fork     parent.fork() (snapshot + create) -> first commands.run('true')
// and the host disk a snapshot takes (du of its template dir) against what
// was written. Percentiles and ratios to fresh.
// usage: node bench/snapshot_bench.mjs [rounds]   (as root; needs
//   ninja -C build agent-sandboxd, npm ci --prefix tests/npm)
// SPDX-License-Identifier: Apache-2.0
import { execFileSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEngine } from '../tests/support/engine.mjs'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const rounds = Number(process.argv[2] || 7)
const SIZES = [0, 10, 100, 500] // MiB
const engine = await startEngine('snapbench', [], {})
const { Sandbox } = await import(path.join(repo, 'tests/npm/node_modules/e2b/dist/index.mjs'))
const now = () => Number(process.hrtime.bigint()) / 1e6 // ms
const T = { timeoutMs: 600_000 }

const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const fmt = (v) => `p50 ${pct(v, 50).toFixed(0).padStart(6)} ms  p90 ${pct(v, 90).toFixed(0).padStart(6)} ms`

async function firstCommand (s) {
  await s.commands.run('true')
}

const res = { fresh: [] }
for (const mb of SIZES) res[mb] = { snapshot: [], from: [], fork: [], du: [] }
try {
  for (let r = 0; r < rounds; r++) {
    let t = now()
    const f = await Sandbox.create('base', T)
    await firstCommand(f)
    res.fresh.push(now() - t)
    await f.kill()
    for (const mb of SIZES) {
      const parent = await Sandbox.create('base', T)
      if (mb) await parent.commands.run(`head -c ${mb}M /dev/urandom > /home/user/data`, { timeoutMs: 600_000 })
      t = now()
      const snap = await parent.createSnapshot()
      res[mb].snapshot.push(now() - t)
      const id = snap.snapshotId.replace(/:default$/, '')
      res[mb].du.push(Number(execFileSync('du', ['-sm', `${engine.state}/templates/${id}`]).toString().split('\t')[0]))
      t = now()
      const c = await Sandbox.create(snap.snapshotId, T)
      await firstCommand(c)
      res[mb].from.push(now() - t)
      t = now()
      const [k] = await parent.fork(T)
      if (k instanceof Error) throw k
      await firstCommand(k)
      res[mb].fork.push(now() - t)
      await Promise.all([c.kill(), k.kill(), parent.kill()])
      await Sandbox.deleteSnapshot(snap.snapshotId)
    }
  }
  const base = pct(res.fresh, 50)
  console.log(`rounds ${rounds}; fresh create -> first command: ${fmt(res.fresh)}`)
  for (const mb of SIZES) {
    const x = res[mb]
    console.log(`written ${String(mb).padStart(3)} MiB (snapshot on host ${pct(x.du, 50)} MiB):`)
    for (const k of ['snapshot', 'from', 'fork'])
      console.log(`  ${k.padEnd(8)} ${fmt(x[k])}  = ${(pct(x[k], 50) / base).toFixed(2)}x fresh`)
  }
} finally {
  await engine.stop()
}
