// node.sandboxed: sandboxed(fn) runs a JS function in a sandbox (source and
// JSON arguments shipped, result back), a remote throw rejects with the
// remote stack, keepAlive reuses one sandbox, a given sandbox is used and
// left alive.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { engine as startEngine } from './helpers.mjs'

let engine, lib

before(async () => {
  engine = await startEngine('sandboxed')
  lib = await import('agent-sandbox')
})

after(async () => {
  await engine.stop()
})

test('a function runs in a fresh sandbox, which is killed after', async () => {
  const where = lib.sandboxed(async (a, b) => {
    const os = await import('node:os')
    return { sum: a + b, host: os.hostname(), nested: [a, { b }] }
  }, { streamOutput: false })
  const before = (await lib.Sandbox.list()).length
  const r = await where(2, 40)
  assert.equal(r.sum, 42)
  assert.match(r.host, /^[a-z0-9]{20}$/)
  assert.deepEqual(r.nested, [2, { b: 40 }])
  assert.equal((await lib.Sandbox.list()).length, before, 'the sandbox was killed')
  assert.equal(await lib.sandboxed(() => undefined, { streamOutput: false })(), undefined)
  function methodLike(x) { return x * 2 }
  assert.equal(await lib.sandboxed(methodLike, { streamOutput: false })(21), 42)
  await assert.rejects(lib.sandboxed((x) => x)(10n), TypeError)
  assert.throws(() => lib.sandboxed(Math.max), TypeError)
})

test('a throw in the sandbox rejects with the remote stack', async () => {
  const f = lib.sandboxed(function explode(n) {
    if (n > 1) throw new RangeError(`too big: ${n}`)
    return n
  }, { streamOutput: false })
  await assert.rejects(f(5), (e) => e instanceof lib.RemoteError && e.remoteName === 'RangeError' &&
    e.message === 'too big: 5' && /explode/.test(e.remoteStack) && /in the sandbox/.test(e.stack))
})

test('keepAlive and a given sandbox', async () => {
  const count = lib.sandboxed(async () => {
    const fs = await import('node:fs')
    const n = fs.existsSync('/tmp/n') ? Number(fs.readFileSync('/tmp/n', 'utf8')) + 1 : 1
    fs.writeFileSync('/tmp/n', String(n))
    return n
  }, { keepAlive: true, streamOutput: false })
  assert.equal(await count(), 1)
  assert.equal(await count(), 2)
  const kept = count.currentSandbox()
  assert.ok(kept instanceof lib.Sandbox)
  await count.close()
  assert.equal(await lib.Sandbox.kill(kept.sandboxId), false)
  const mine = await lib.Sandbox.create()
  await mine.files.write('/tmp/given', 'yes')
  const read = lib.sandboxed(async () => (await import('node:fs')).readFileSync('/tmp/given', 'utf8'), { sandbox: mine, streamOutput: false })
  assert.equal(await read(), 'yes')
  await read.close()
  assert.equal(await mine.isRunning(), true, 'a given sandbox is left alive')
  await mine.kill()
})
