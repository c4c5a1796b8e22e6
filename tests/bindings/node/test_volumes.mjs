// node.volumes: volumeMounts of Sandbox.create (the addon's
// asb_sandbox_options.volume_mounts) on a volume made with E2B's /volumes
// API: two sandboxes share it; bad mounts are refused (locally: not a
// name; by the engine: a path of the sandbox's system).
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { engine as startEngine } from './helpers.mjs'

let engine, lib
const name = `nd-vol-${process.pid}`

async function api(method, path, body) {
  const r = await fetch(`${process.env.E2B_API_URL}${path}`, {
    method,
    headers: { 'X-API-Key': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined
  })
  return r.status
}

before(async () => {
  engine = await startEngine('volumes')
  lib = await import('agent-sandbox')
  assert.equal(await api('POST', '/volumes', { name, sizeMB: 32 }), 201)
})

after(async () => {
  await api('DELETE', `/volumes/${name}`).catch(() => {})
  await engine.stop()
})

test('two sandboxes share a volume', async () => {
  const a = await lib.Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/mnt/v': name } })
  const b = await lib.Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/home/user/v': { name } } })
  try {
    await a.commands.run('echo from-a > /mnt/v/f')
    assert.equal((await b.commands.run('cat /home/user/v/f; stat -c %U /home/user/v/f')).stdout, 'from-a\nuser\n')
    assert.equal(await api('DELETE', `/volumes/${name}`), 409)
  } finally {
    await a.kill()
    await b.kill()
  }
})

test('bad mounts are refused', async () => {
  await assert.rejects(lib.Sandbox.create({ volumeMounts: { '/x': 3 } }), TypeError)
  await assert.rejects(lib.Sandbox.create({ volumeMounts: { '/proc/x': name } }), /volume mount path/)
  await assert.rejects(lib.Sandbox.create({ volumeMounts: { '/x': 'no-such-volume' } }), /not found/)
})
