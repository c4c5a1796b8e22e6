// node.snapshots: createSnapshot, a create from it, fork, listSnapshots,
// deleteSnapshot through the Node binding (docs/snapshots.md).
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { engine as startEngine } from './helpers.mjs'

let engine, lib

before(async () => {
  engine = await startEngine('snapshots')
  lib = await import('agent-sandbox')
})

after(async () => {
  await engine.stop()
})

test('the files of that instant; a fork writes its own; list; delete', async () => {
  const sbx = await lib.Sandbox.create({ timeoutMs: 120_000 })
  const made = []
  try {
    await sbx.commands.run('echo one > /home/user/f')
    const id = await sbx.createSnapshot({ name: 'node-snap' })
    assert.equal(id, 'node-snap:default')
    await sbx.commands.run('echo two > /home/user/f')
    const from = await lib.Sandbox.create({ template: id, timeoutMs: 120_000 })
    made.push(from)
    assert.equal((await from.commands.run('cat /home/user/f')).stdout, 'one\n')
    const fork = await sbx.fork({ timeoutMs: 120_000, keepProcesses: false })
    made.push(fork)
    assert.ok(fork instanceof lib.Sandbox)
    assert.notEqual(fork.sandboxId, sbx.sandboxId)
    // the fork options (issue 20): no --pause-criu, booted fresh on the files
    assert.equal(fork.forkMode, 'files')
    assert.equal(sbx.forkMode, undefined)
    assert.equal((await fork.getInfo()).forkMode, 'files')
    assert.equal((await lib.Sandbox.connect(fork.sandboxId)).forkMode, 'files')
    await assert.rejects(sbx.forkMany(101), lib.InvalidArgumentError)
    assert.equal((await fork.commands.run('cat /home/user/f; echo f > /home/user/f')).stdout, 'two\n')
    assert.equal((await sbx.commands.run('cat /home/user/f')).stdout, 'two\n')
    assert.deepEqual(await lib.Sandbox.listSnapshots({ sandboxId: sbx.sandboxId }), [id])
    assert.equal(await lib.Sandbox.deleteSnapshot(id), true)
    assert.equal(await lib.Sandbox.deleteSnapshot(id), false)
    assert.deepEqual(await lib.Sandbox.listSnapshots({ name: 'node-snap' }), [])
    await assert.rejects(sbx.createSnapshot({ name: 'Bad/Name' }), lib.InvalidArgumentError)
  } finally {
    for (const s of made) await s.kill().catch(() => {})
    await sbx.kill()
  }
})

test('agent-sandbox/compat: E2B\'s names and shapes', async () => {
  const compat = await import('agent-sandbox/compat')
  const sbx = await compat.Sandbox.create({ timeoutMs: 120_000 })
  try {
    await sbx.commands.run('echo c > /home/user/c')
    const info = await sbx.createSnapshot({ name: 'node-compat-snap' })
    assert.deepEqual(info, { snapshotId: 'node-compat-snap:default', names: ['node-compat-snap:default'] })
    const byId = await compat.Sandbox.createSnapshot(sbx.sandboxId)
    const p = sbx.listSnapshots()
    const got = []
    while (p.hasNext) got.push(...(await p.nextItems()))
    assert.deepEqual(got.map((s) => s.snapshotId).sort(), [info.snapshotId, byId.snapshotId].sort())
    const forks = await sbx.fork({ count: 2, timeoutMs: 120_000, keepProcesses: true })
    assert.equal(forks.length, 2)
    assert.notEqual(forks[0].sandboxId, forks[1].sandboxId)
    for (const f of forks) {
      assert.ok(f instanceof compat.Sandbox, String(f))
      assert.equal(f.forkMode, 'files') // no --pause-criu: files, whatever was asked
      assert.equal((await f.commands.run('cat /home/user/c')).stdout, 'c\n')
      await f.kill()
    }
    assert.equal(await compat.Sandbox.deleteSnapshot(info.snapshotId), true)
    assert.equal(await compat.Sandbox.deleteSnapshot(byId.snapshotId), true)
    assert.equal(await compat.Sandbox.deleteSnapshot(info.snapshotId), false)
  } finally {
    await sbx.kill()
  }
})
