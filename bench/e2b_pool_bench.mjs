#!/usr/bin/env node
// What a user of the stock E2B JS SDK (npm e2b, tests/npm) sees against the
// engine: Sandbox.create() -> the first commands.run('true') result, from a
// warm pool and from an empty one, interleaved round by round (load drift
// hits both alike). One engine with --pool-template base=POOL: a create
// without env vars claims a pooled sandbox; a create with env vars is made
// fresh (the code interpreter's environment is fixed when it starts:
// docs/engine.md "Warm pools"), so both run on the same template.
// usage: node bench/e2b_pool_bench.mjs [rounds]   (as root; needs
//   ninja -C build agent-sandboxd, npm ci --prefix tests/npm)
// SPDX-License-Identifier: Apache-2.0
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEngine } from '../tests/support/engine.mjs'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const rounds = Number(process.argv[2] || 50)
const POOL = 20
const engine = await startEngine('e2bpool', ['--pool-template', `base=${POOL}`,
  '--pool-min-available', '0'])
const { Sandbox } = await import(path.join(repo, 'tests/npm/node_modules/e2b/dist/index.mjs'))
const now = () => Number(process.hrtime.bigint()) / 1e6 // ms

async function pool () {
  const r = await fetch(`${process.env.E2B_API_URL}/templates/base`,
    { headers: { 'X-API-Key': process.env.E2B_API_KEY } })
  return (await r.json()).pool
}

async function poolReady () {
  return (await pool()).ready
}

async function waitPool (want) {
  for (const end = Date.now() + 600_000; Date.now() < end;) {
    if (await poolReady() >= want) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`the pool did not fill to ${want}`)
}

async function once (opts) {
  const t = now()
  const sb = await Sandbox.create('base', { timeoutMs: 600_000, ...opts })
  const r = await sb.commands.run('true')
  const took = now() - t
  if (r.exitCode !== 0) throw new Error('true failed')
  await sb.kill()
  return took
}

function report (name, v) {
  v.sort((a, b) => a - b)
  const p50 = v[Math.floor(v.length / 2)], p99 = v[Math.floor((v.length - 1) * 0.99)]
  console.log(`${name.padEnd(48)} p50 ${p50.toFixed(1).padStart(7)} ms   p99 ${p99.toFixed(1).padStart(7)} ms   (n=${v.length})`)
  return p50
}

try {
  await waitPool(POOL)
  for (let i = 0; i < 5; i++) await once({ envs: { WARMUP: '1' } }) // caches hot
  const warm = [], empty = []
  for (let i = 0; i < rounds; i++) {
    warm.push(await once({}))
    empty.push(await once({ envs: { FRESH: '1' } }))
  }
  console.log(`== stock e2b JS SDK: Sandbox.create('base') -> commands.run('true') (${rounds} rounds) ==`)
  const p = await pool()
  console.log(`(base's pool: ${p.claims} claims, ${p.misses} misses: the fresh ones)`)
  const w = report('warm pool', warm)
  const e = report('empty pool (env vars: a fresh create)', empty)
  console.log(`${'ratio warm / empty'.padEnd(48)} ${(w / e).toFixed(2)}`)
} finally {
  await engine.stop()
}
