// node.install: `npm pack` gives a tarball that installs offline into a
// project (its install script compiles the addons against the installed
// Node headers and this tree's libagentsandbox, found through
// ASB_BUILD_DIR), and the installed package runs a program with its own
// addon, CommonJS and ESM.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync, existsSync, readdirSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { engine as startEngine, pkgDir, buildDir } from './helpers.mjs'

let engine, dir

before(async () => {
  engine = await startEngine('install')
  dir = mkdtempSync(path.join(os.tmpdir(), 'asb-node-install-'))
})

after(async () => {
  await engine.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

test('npm pack, npm install of the tarball, a program on the installed package', () => {
  const npmEnv = Object.assign({}, process.env, { ASB_BUILD_DIR: buildDir, npm_config_cache: path.join(dir, 'cache') })
  execFileSync('npm', ['pack', '--pack-destination', dir], { cwd: pkgDir, env: npmEnv, stdio: 'pipe' })
  const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'))
  assert.ok(tgz, 'a tarball')
  const proj = path.join(dir, 'proj')
  execFileSync('npm', ['init', '-y'], { cwd: dir, env: npmEnv, stdio: 'pipe' })
  execFileSync('mkdir', ['-p', proj])
  writeFileSync(path.join(proj, 'package.json'), '{"name": "proj", "private": true}\n')
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(dir, tgz)], { cwd: proj, env: npmEnv, stdio: 'pipe' })
  const installed = path.join(proj, 'node_modules', 'agent-sandbox')
  assert.ok(existsSync(path.join(installed, 'build', 'agentsandbox.node')), 'the addon was built at install')
  assert.ok(existsSync(path.join(installed, 'build', 'agentsandbox_server.node')), 'the server addon too')
  writeFileSync(path.join(proj, 'main.mjs'), `
import { Sandbox } from 'agent-sandbox'
import { Server } from 'agent-sandbox/server'
import { createRequire } from 'node:module'
const require = createRequire(import.meta.url)
const cjs = require('agent-sandbox')
const s = await Sandbox.create()
console.log((await s.commands.run('echo installed')).stdout.trim(), cjs.Sandbox === Sandbox, typeof Server)
await s.kill()
`)
  const env = Object.assign({}, process.env)
  delete env.ASB_BUILD_DIR
  delete env.ASB_NODE_ADDON
  const r = spawnSync(process.execPath, ['main.mjs'], { cwd: proj, env, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stdout + r.stderr)
  assert.equal(r.stdout, 'installed true function\n')
})
