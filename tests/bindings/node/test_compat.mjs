// node.compat: E2B programs written for the stock SDKs (e2b_programs/,
// after E2B's README and docs) run unchanged but for the import specifier
// through agent-sandbox/compat, and print exactly what the stock SDKs
// print against the same engine; plus the E2B semantics the programs do
// not show.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, symlinkSync, existsSync, rmSync, readdirSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { engine as startEngine, here, repo, pkgDir } from './helpers.mjs'

let engine, dir
const stockE2b = path.join(repo, 'tests', 'npm', 'node_modules', 'e2b')
const stockCodei = path.join(repo, 'tests', 'npm-codei', 'node_modules', '@e2b', 'code-interpreter')
const haveStock = existsSync(stockE2b) && existsSync(stockCodei)

before(async () => {
  engine = await startEngine('compat')
  // the stock SDK's volume content calls go to https://api.<domain> otherwise
  process.env.E2B_VOLUME_API_URL = process.env.E2B_API_URL
  dir = mkdtempSync(path.join(os.tmpdir(), 'asb-node-compat-'))
  mkdirSync(path.join(dir, 'node_modules', '@e2b'), { recursive: true })
  symlinkSync(pkgDir, path.join(dir, 'node_modules', 'agent-sandbox'))
  if (haveStock) {
    symlinkSync(stockE2b, path.join(dir, 'node_modules', 'e2b'))
    symlinkSync(stockCodei, path.join(dir, 'node_modules', '@e2b', 'code-interpreter'))
  }
})

after(async () => {
  await engine.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

function run(file) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [file], { cwd: dir, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    p.stdout.on('data', (d) => { out += d })
    p.stderr.on('data', (d) => { err += d })
    p.on('exit', (code) => resolve({ code, out, err }))
  })
}

/** The program with only its import specifiers changed. */
function ported(src) {
  return src.replace(/from '@e2b\/code-interpreter'/g, "from 'agent-sandbox/compat/code-interpreter'")
    .replace(/from 'e2b'/g, "from 'agent-sandbox/compat'")
}

for (const name of readdirSync(path.join(here, 'e2b_programs')).filter((f) => f.endsWith('.mjs')).sort()) {
  test(`${name}: the same output through agent-sandbox/compat`, { skip: !haveStock && 'the stock SDKs are not installed (npm ci --prefix tests/npm, tests/npm-codei)' }, async () => {
    const src = readFileSync(path.join(here, 'e2b_programs', name), 'utf8')
    const changed = src.split('\n').filter((l, i) => l !== ported(src).split('\n')[i])
    assert.ok(changed.length > 0 && changed.every((l) => /^import /.test(l)), 'only import lines differ')
    writeFileSync(path.join(dir, `stock-${name}`), src)
    writeFileSync(path.join(dir, `ours-${name}`), ported(src))
    const stock = await run(`stock-${name}`)
    assert.equal(stock.code, 0, `stock SDK:\n${stock.out}\n${stock.err}`)
    const ours = await run(`ours-${name}`)
    assert.equal(ours.code, 0, `agent-sandbox/compat:\n${ours.out}\n${ours.err}`)
    assert.equal(ours.out, stock.out)
    assert.ok(stock.out.trim().split('\n').length >= 3)
  })
}

test('E2B semantics: exit codes throw, list is a paginator, CommonJS require works', async () => {
  const { Sandbox, CommandExitError, SandboxPaginator } = await import('agent-sandbox/compat')
  const sbx = await Sandbox.create()
  await assert.rejects(sbx.commands.run('exit 7'), (e) => e instanceof CommandExitError && e.exitCode === 7)
  const p = Sandbox.list()
  assert.ok(p instanceof SandboxPaginator)
  assert.ok((await p.nextItems()).some((s) => s.sandboxId === sbx.sandboxId))
  assert.equal(p.hasNext, false)
  await assert.rejects(p.nextItems(), /No more items/)
  const again = await sbx.connect()
  assert.equal(again.sandboxId, sbx.sandboxId)
  assert.equal(await sbx.betaPause(), true)
  await Sandbox.connect(sbx.sandboxId)
  await sbx.kill()
  const cjs = await run(path.join(here, 'cjs_smoke.cjs'))
  assert.equal(cjs.code, 0, cjs.err)
  assert.equal(cjs.out, 'function true true\n')
})
