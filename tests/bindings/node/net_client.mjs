// net.client_node: sandbox networking through the Node binding and
// agent-sandbox/compat against the real engine — create with
// allowInternetAccess:false and network.denyOut/allowOut, read the config
// back, update it live (also by id), the engine's refusals. What the rules
// do to packets is the datapath's tests' (closed topology); no packet is
// sent here. Run with the network on inside the closed topology
// (tests/support/in_net_topo.sh; not a node.* test, those run with it off).
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, mkdirSync, symlinkSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { engine as startEngine, repo, pkgDir } from './helpers.mjs'

let engine, lib, compat

before(async () => {
  engine = await startEngine('network')
  lib = await import('agent-sandbox')
  compat = await import('agent-sandbox/compat')
})

after(async () => {
  await engine.stop()
})

test('create with network, read back, update live', async () => {
  const sb = await lib.Sandbox.create({
    timeoutMs: 120_000,
    allowInternetAccess: false,
    network: { allowOut: ['198.18.0.10', '*.example.test'], denyOut: ['198.18.0.66'] }
  })
  try {
    let info = await sb.getInfo()
    assert.equal(info.allowInternetAccess, false)
    assert.deepEqual(new Set(info.network.allowOut), new Set(['198.18.0.10', '*.example.test']))
    assert.deepEqual(info.network.denyOut, ['198.18.0.66'])
    await sb.updateNetwork({ denyOut: ['198.18.2.0/24'], allowInternetAccess: true })
    info = await sb.getInfo()
    assert.equal(info.allowInternetAccess, true)
    assert.deepEqual(info.network.denyOut, ['198.18.2.0/24'])
    assert.ok(!info.network.allowOut || info.network.allowOut.length === 0)
    await assert.rejects(sb.updateNetwork({ allowOut: ['198.18.0.0/99'] }),
      (e) => e instanceof lib.InvalidArgumentError && /198\.18\.0\.0\/99/.test(e.message))
    await lib.Sandbox.updateNetwork(sb.sandboxId, { denyOut: ['198.18.0.77'] })
    assert.deepEqual((await lib.Sandbox.getInfo(sb.sandboxId)).network.denyOut, ['198.18.0.77'])
  } finally {
    await sb.kill()
  }
  await assert.rejects(sb.updateNetwork({}), lib.SandboxNotFoundError)
  sb.close()
  await assert.rejects(lib.Sandbox.create({ network: { allowOut: ['not a destination'] } }), lib.InvalidArgumentError)
})

test('compat: E2B\'s option names and calls', async () => {
  const sb = await compat.Sandbox.create({ timeoutMs: 120_000, allowInternetAccess: false, network: { allowOut: ['198.18.0.10'] } })
  try {
    assert.equal((await sb.getInfo()).allowInternetAccess, false)
    await sb.updateNetwork({ allowOut: ['198.18.0.11'], denyOut: [compat.ALL_TRAFFIC] })
    const info = await compat.Sandbox.getInfo(sb.sandboxId)
    assert.deepEqual(info.network.allowOut, ['198.18.0.11'])
    assert.deepEqual(info.network.denyOut, ['0.0.0.0/0'])
  } finally {
    await sb.kill()
  }
})

test('examples/node/network.mjs', async () => {
  // as a user runs it: import 'agent-sandbox' from a node_modules of its own
  const dir = mkdtempSync(path.join(os.tmpdir(), 'asb-node-netex-'))
  cpSync(path.join(repo, 'examples', 'node', 'network.mjs'), path.join(dir, 'network.mjs'))
  mkdirSync(path.join(dir, 'node_modules'))
  symlinkSync(pkgDir, path.join(dir, 'node_modules', 'agent-sandbox'))
  const r = await new Promise((resolve) => {
    const p = spawn(process.execPath, [path.join(dir, 'network.mjs')], { cwd: dir, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    p.stdout.on('data', (d) => { out += d })
    p.stderr.on('data', (d) => { out += d })
    p.on('exit', (code) => resolve({ code, out }))
  })
  rmSync(dir, { recursive: true, force: true })
  assert.equal(r.code, 0, r.out)
  assert.match(r.out, /^created: internet false network .*198\.18\.0\.66/m)
  assert.match(r.out, /^updated: network .*198\.18\.1\.0\/24/m)
  assert.match(r.out, /^refused: .*allowout/m)
})
