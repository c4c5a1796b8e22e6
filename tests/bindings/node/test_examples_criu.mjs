// node.examples_criu: examples/node/checkpoint.mjs against an engine of its
// own with --pause-criu (docs/lifecycle.md): pauseMode 'checkpoint', and
// the restored process counts on (node.examples runs it without the
// option). Skips only when no criu binary is found ($ASB_CRIU, else
// scripts/build-criu.sh's).
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { accessSync, constants, cpSync, mkdtempSync, mkdirSync, symlinkSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { engine as startEngine, repo, pkgDir } from './helpers.mjs'

const criu = process.env.ASB_CRIU || '/var/cache/agent-sandbox/criu/bin/criu'
let noCriu = false
try { accessSync(criu, constants.X_OK) } catch { noCriu = `no criu at ${criu} (scripts/build-criu.sh builds it)` }

let engine, dir

before(async () => {
  if (noCriu) return
  engine = await startEngine('excriu', ['--pause-criu', '--criu', criu])
  dir = mkdtempSync(path.join(os.tmpdir(), 'asb-node-excriu-'))
  cpSync(path.join(repo, 'examples', 'node', 'checkpoint.mjs'), path.join(dir, 'checkpoint.mjs'))
  mkdirSync(path.join(dir, 'node_modules'))
  symlinkSync(pkgDir, path.join(dir, 'node_modules', 'agent-sandbox'))
})

after(async () => {
  if (engine) await engine.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

test('checkpoint.mjs with --pause-criu', { skip: noCriu }, async () => {
  const r = await new Promise((resolve) => {
    const p = spawn(process.execPath, [path.join(dir, 'checkpoint.mjs')], { cwd: dir, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    p.stdout.on('data', (d) => { out += d })
    p.stderr.on('data', (d) => { err += d })
    p.on('exit', (code) => resolve({ code, out, err }))
  })
  assert.equal(r.code, 0, `${r.out}\n${r.err}`)
  assert.match(r.out, /^paused: paused pause mode checkpoint$/m)
  assert.match(r.out, /: the same process counts on$/m)
})
