// node.lowlevel (run with --expose-gc): the addon agrees with abi/api.json
// (through bindings/gen/api_table.h); 10 000 client-side handles made and
// dropped (collected, or closed) leave memory flat; a closed handle refuses
// calls and closing one during a call cancels it; no call is left in
// flight; the error classes and their fields.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { engine as startEngine, pkgDir } from './helpers.mjs'

const require = createRequire(import.meta.url)
let engine, lib, native

before(async () => {
  engine = await startEngine('lowlevel')
  lib = await import('agent-sandbox')
  native = require(`${pkgDir}/lib/native.js`)
})

after(async () => {
  await engine.stop()
})

test('the addon agrees with the ABI description', () => {
  assert.deepEqual(native.N.abiCheck(), [])
  assert.match(lib.libraryVersion(), /^\d+\.\d+\.\d+$/)
})

test('10 000 handles made and dropped: memory stays flat', async () => {
  assert.equal(typeof global.gc, 'function', 'run with --expose-gc')
  const c = await native.client({})
  const cycle = (n) => {
    for (let i = 0; i < n; i++) {
      const s = native.N.sandboxAttach(c.handle, `sbx${i % 97}abcdefghij`, { envdAccessToken: 'tok' })
      assert.equal(s.sandboxId, `sbx${i % 97}abcdefghij`)
      if (i % 2) native.N.close(s.handle, 2) // half closed, half left to the GC
    }
  }
  const settle = async () => {
    for (let i = 0; i < 5; i++) {
      global.gc()
      await new Promise((r) => setImmediate(r))
    }
  }
  cycle(2000)
  await settle()
  const before = process.memoryUsage().rss
  for (let k = 0; k < 5; k++) {
    cycle(2000)
    await settle()
  }
  const grew = process.memoryUsage().rss - before
  assert.ok(grew < 16 * 1024 * 1024, `RSS grew by ${(grew / 1048576).toFixed(1)} MiB over 10 000 handles`)
})

test('closed handles refuse calls; closing one during a call cancels it', async () => {
  const sbx = await lib.Sandbox.create({ timeoutMs: 60_000 })
  const id = sbx.sandboxId
  const running = sbx.commands.run('sleep 30')
  await new Promise((r) => setTimeout(r, 200))
  sbx.close()
  await assert.rejects(running, (e) => e instanceof lib.OperationCancelledError && e.name === 'AbortError' && e.code === 'ASB_ECANCELED')
  await assert.rejects(sbx.commands.run('true'), /closed/)
  sbx.close() // idempotent
  const again = await lib.Sandbox.connect(id)
  assert.equal((await again.commands.run('echo alive')).stdout, 'alive\n', 'closing a handle leaves the sandbox running')
  const bg = await again.commands.run('sleep 30', { background: true })
  await bg.disconnect() // the wait in flight ends, the handle goes
  assert.ok((await again.commands.list()).some((p) => p.pid === bg.pid), 'the command runs on')
  await again.kill()
  again.close()
  for (let i = 0; i < 50 && native.N.stats().inflight; i++) await new Promise((r) => setTimeout(r, 20))
  assert.equal(native.N.stats().inflight, 0, 'no call left in flight')
  assert.ok(native.N.stats().threads <= native.N.stats().maxThreads)
})

test('error classes: hierarchy and fields', () => {
  const e = new lib.CommandExitError({ exitCode: 2, stdout: 'o', stderr: 'e', error: 'exit status 2' })
  assert.ok(e instanceof lib.SandboxError && e instanceof Error)
  assert.equal(e.exitCode, 2)
  assert.equal(e.code, 'ASB_ECOMMANDEXIT')
  assert.ok(new lib.FileNotFoundError('x') instanceof lib.NotFoundError)
  assert.ok(new lib.SandboxGoneError('x') instanceof lib.SandboxNotFoundError)
  assert.ok(new lib.CommandNotFoundError('x') instanceof lib.NotFoundError)
  assert.ok(!(new lib.AuthenticationError('x') instanceof lib.SandboxError))
  assert.ok(!(new lib.BuildError('x') instanceof lib.SandboxError))
  const f = new lib.CommandFailedError('boom', { code: 'ASB_ECOMMANDFAILED', status: 500, remoteCode: 'ValueError' })
  assert.equal(f.type, 'ValueError')
  assert.equal(f.status, 500)
  assert.equal(f.statusCode, 500)
  for (const cls of [lib.TimeoutError, lib.InvalidArgumentError, lib.NotEnoughSpaceError, lib.TemplateError, lib.RateLimitError, lib.PermissionDeniedError]) {
    const x = new cls('m')
    assert.ok(x instanceof lib.SandboxError)
    assert.equal(x.name, cls.name)
  }
})
