#!/usr/bin/env node
// The Node binding (agent-sandbox) next to the stock E2B JS SDK (npm e2b
// and @e2b/code-interpreter, tests/npm*) and the C library
// (bench/node_bench_c.c), in one run against one local engine, interleaved
// round by round so load drift hits all three alike:
//   commands.run("true"), a 4 KiB files.write + files.read round trip,
//   runCode("1+1"), create -> first command -> kill.
// The three share one sandbox (template code-interpreter-v1) for the
// calls, and create fresh ones of the same template for create -> kill. Prints p50/p99 and the ratios ours/e2b and ours/C,
// and the binding's fixed cost per call (a call that does nothing on a
// worker thread: the hand-off there and back to the event loop).
// usage: node bench/node_bench.mjs [rounds]   (as root; needs
//   ninja -C build agent-sandboxd node-binding node_bench_c,
//   npm ci --prefix tests/npm, --prefix tests/npm-codei)
// SPDX-License-Identifier: Apache-2.0
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEngine } from '../tests/support/engine.mjs'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const build = process.env.ASB_BUILD_DIR || path.join(repo, 'build')
process.env.ASB_BUILD_DIR = build
const rounds = Number(process.argv[2] || 10)
const TEMPLATE = 'code-interpreter-v1'
const LIFE = 3_600_000 // the long-lived sandboxes outlast a slow run
const PER_ROUND = Object.fromEntries(Object.entries({ run: 20, files: 20, code: 10, create: 2 }).filter(([k]) => !process.env.NODE_BENCH_OPS || process.env.NODE_BENCH_OPS.split(',').includes(k)))

const engine = await startEngine('nodebench')
const ours = await import(path.join(repo, 'bindings/node/lib/index.mjs'))
const native = (await import('node:module')).createRequire(import.meta.url)(path.join(repo, 'bindings/node/lib/native.js'))
const e2b = await import(path.join(repo, 'tests/npm/node_modules/e2b/dist/index.mjs'))
const codei = await import(path.join(repo, 'tests/npm-codei/node_modules/@e2b/code-interpreter/dist/index.mjs'))

const payload = new Uint8Array(4096).fill(120)
const now = () => Number(process.hrtime.bigint()) / 1000 // µs

function jsClient(name, { create, run, write, read, code, kill }) {
  return { name, create, run, write, read, code, kill }
}

const oursC = jsClient('agent-sandbox', {
  create: (life) => ours.Sandbox.create({ template: TEMPLATE, timeoutMs: life }),
  run: (s) => s.commands.run('true'),
  write: (s) => s.files.write('/tmp/node-bench', payload),
  read: (s) => s.files.read('/tmp/node-bench', { format: 'bytes' }),
  code: (s) => s.runCode('1+1'),
  kill: (s) => s.kill().then(() => s.close())
})
const stockC = jsClient('e2b', {
  create: (life) => codei.Sandbox.create(TEMPLATE, { timeoutMs: life }),
  connect: (id) => codei.Sandbox.connect(id),
  run: (s) => s.commands.run('true'),
  write: (s) => s.files.write('/tmp/node-bench', payload.buffer.slice(0)),
  read: (s) => s.files.read('/tmp/node-bench', { format: 'bytes' }),
  code: (s) => s.runCode('1+1'),
  kill: (s) => s.kill()
})

async function jsOp(cl, sbx, op, n) {
  const out = []
  for (let i = 0; i < n; i++) {
    const t0 = now()
    if (op === 'run') await cl.run(sbx)
    else if (op === 'files') {
      await cl.write(sbx)
      const b = await cl.read(sbx)
      if (b.length !== 4096) throw new Error(`${cl.name}: read ${b.length} bytes`)
    } else if (op === 'code') {
      const x = await cl.code(sbx)
      if (x.text !== '2') throw new Error(`${cl.name}: runCode gave ${x.text}`)
    } else {
      const s = await cl.create()
      await cl.run(s)
      await cl.kill(s)
    }
    out.push(now() - t0)
  }
  return out
}

// The C side: one process, one request per line.
let cproc, nextLine
async function startC(sandboxId) {
  cproc = spawn(path.join(build, 'bench', 'node_bench_c'), [], {
    env: Object.assign({}, process.env, { NODE_BENCH_TEMPLATE: TEMPLATE, NODE_BENCH_SANDBOX: sandboxId }),
    stdio: ['pipe', 'pipe', 'inherit']
  })
  const lines = createInterface({ input: cproc.stdout })[Symbol.asyncIterator]()
  nextLine = async () => {
    const { value, done } = await lines.next()
    if (done) throw new Error('node_bench_c ended')
    return value
  }
  if ((await nextLine()) !== 'ready') throw new Error('node_bench_c did not start')
}
async function cOp(op, n) {
  cproc.stdin.write(`${op} ${n}\n`)
  return (await nextLine()).split(' ').map(Number)
}

function pct(v, p) {
  const s = [...v].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((s.length - 1) * p))]
}

try {
  // run, files and code: the three clients in one sandbox (the same envd and
  // kernel); create: fresh sandboxes of the same template each
  const sOurs = await oursC.create(LIFE)
  const sStock = await codei.Sandbox.connect(sOurs.sandboxId)
  await startC(sOurs.sandboxId)
  const samples = {}
  for (const op of Object.keys(PER_ROUND)) samples[op] = { ours: [], e2b: [], c: [] }
  // warm-up: connections, the code interpreter's first start
  for (const op of ['run', 'files', 'code']) {
    await jsOp(oursC, sOurs, op, 3)
    await jsOp(stockC, sStock, op, 3)
    await cOp(op, 3)
  }
  for (let r = 0; r < rounds; r++) {
    for (const [op, n] of Object.entries(PER_ROUND)) {
      const order = (r + op.length) % 3
      const steps = [
        async () => samples[op].ours.push(...await jsOp(oursC, sOurs, op, n)),
        async () => samples[op].e2b.push(...await jsOp(stockC, sStock, op, n)),
        async () => samples[op].c.push(...await cOp(op, n))
      ]
      for (let k = 0; k < 3; k++) await steps[(order + k) % 3]()
    }
  }
  const nop = []
  for (let i = 0; i < 2000; i++) {
    const t0 = now()
    await native.invoke(native.N.nop, [])
    nop.push(now() - t0)
  }
  await oursC.kill(sOurs)
  const names = { run: 'commands.run("true")', files: '4 KiB files.write + read', code: 'runCode("1+1")', create: 'create -> first command -> kill' }
  const ms = (v) => (v / 1000).toFixed(2).padStart(7)
  console.log(`node ${process.version}; ${rounds} rounds; p50 / p99 in ms (n per client)`)
  console.log(`${'operation'.padEnd(34)} ${'agent-sandbox'.padStart(17)} ${'e2b (stock)'.padStart(17)} ${'C library'.padStart(17)}   ours/e2b  ours/C`)
  for (const [op, s] of Object.entries(samples)) {
    const p = (v) => `${ms(pct(v, 0.5))} /${ms(pct(v, 0.99))}`
    const r1 = pct(s.ours, 0.5) / pct(s.e2b, 0.5)
    const r2 = pct(s.ours, 0.5) / pct(s.c, 0.5)
    console.log(`${(names[op] + ` (${s.ours.length})`).padEnd(34)} ${p(s.ours)} ${p(s.e2b)} ${p(s.c)}   ${r1.toFixed(2).padStart(7)}x ${r2.toFixed(2).padStart(6)}x`)
  }
  console.log(`the binding's fixed cost per call (a call doing nothing on a worker, n=${nop.length}): p50 ${pct(nop, 0.5).toFixed(1)} us, p99 ${pct(nop, 0.99).toFixed(1)} us`)
} finally {
  if (cproc) {
    cproc.stdin.end()
    await new Promise((r) => cproc.once('exit', r))
  }
  await engine.stop()
}
