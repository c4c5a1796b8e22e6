// node.pause_swap: getInfo's swap and pauseMode on an engine with a small
// --pause-swap (docs/lifecycle.md): a sandbox holding 32 MiB in a process,
// paused with memory, reports most of them swapped out of the RAM it had
// (also through agent-sandbox/compat); running again, or paused without
// memory, swap is undefined (not zeros), and a list's items never have it.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { engine as startEngine, eventually } from './helpers.mjs'

const MIB = 1 << 20
// A process holding 32 MiB of random bytes; /tmp/held once they are there.
const HOLDER = 'python3 -c "import os, time\n' +
  'b = bytearray(os.urandom(32 << 20))\n' +
  "open('/tmp/held', 'w').write('y')\n" +
  'time.sleep(100000)"'

let engine, lib, compat

before(async () => {
  engine = await startEngine('pswap', ['--pause-swap', '64M'])
  lib = await import('agent-sandbox')
  compat = await import('agent-sandbox/compat')
})

after(async () => {
  await engine.stop()
})

test('a memory pause reports its swap; running or paused without memory: none', async () => {
  const sbx = await lib.Sandbox.create({ timeoutMs: 300_000 })
  try {
    assert.equal((await sbx.getInfo()).swap, undefined) // running
    const h = await sbx.commands.run(HOLDER, { background: true })
    assert.ok(await eventually(() => sbx.files.exists('/tmp/held'), 120_000))
    assert.equal(await sbx.pause(), true)
    const info = await sbx.getInfo()
    assert.equal(info.state, 'paused')
    assert.equal(info.pauseMode, 'memory')
    const sw = info.swap
    assert.ok(sw, 'no swap object')
    assert.deepEqual(Object.keys(sw).sort(), ['residentBeforeBytes', 'residentBytes', 'swappedBytes'])
    assert.ok(sw.residentBeforeBytes > 32 * MIB, `resident before ${sw.residentBeforeBytes}`)
    assert.ok(sw.swappedBytes > 16 * MIB, `swapped ${sw.swappedBytes}`)
    assert.ok(sw.residentBytes >= 0 && sw.residentBytes < sw.residentBeforeBytes - 16 * MIB)
    const c = await compat.Sandbox.getFullInfo(sbx.sandboxId)
    assert.equal(c.pauseMode, 'memory')
    assert.ok(c.swap && c.swap.swappedBytes > 16 * MIB)
    // a list's items never carry it (GET /sandboxes/{id} only)
    const listed = (await lib.Sandbox.list()).filter((i) => i.sandboxId === sbx.sandboxId)
    assert.equal(listed.length, 1)
    assert.equal(listed[0].swap, undefined)

    await sbx.resume({ timeoutMs: 300_000 })
    const back = await sbx.getInfo()
    assert.equal(back.state, 'running')
    assert.equal(back.pauseMode, undefined)
    assert.equal(back.swap, undefined)
    await h.disconnect()

    assert.equal(await sbx.pause({ keepMemory: false }), true)
    const files = await sbx.getInfo()
    assert.equal(files.pauseMode, 'filesystem')
    assert.equal(files.swap, undefined)
  } finally {
    await sbx.kill()
    sbx.close()
  }
})
