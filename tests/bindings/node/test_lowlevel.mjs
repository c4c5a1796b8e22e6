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

// (ASan keeps freed memory in quarantine, so RSS says nothing in that tree;
// LeakSanitizer checks the addon there instead)
test('10 000 handles made and dropped: memory stays flat', { skip: !!process.env.ASB_NODE_SANITIZED && 'RSS under ASan' }, async () => {
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

// (a regression of the stalled upload hangs: the test's own deadline ends it)
test('every call takes a signal: an aborted one rejects it, one firing mid-call stops it', { timeout: 120_000 }, async () => {
  const sbx = await lib.Sandbox.create({ timeoutMs: 60_000 })
  try {
    const reason = new Error('aborted before the call')
    const ac = new AbortController()
    ac.abort(reason)
    const o = { signal: ac.signal }
    const id = sbx.sandboxId
    const bg = await sbx.commands.run('sleep 30', { background: true })
    const calls = {
      'Sandbox.create': () => lib.Sandbox.create(o),
      'Sandbox.connect': () => lib.Sandbox.connect(id, o),
      'Sandbox.list': () => lib.Sandbox.list(o),
      'Sandbox.listPage': () => lib.Sandbox.listPage(o),
      'Sandbox.kill': () => lib.Sandbox.kill(id, o),
      'Sandbox.getInfo': () => lib.Sandbox.getInfo(id, o),
      'Sandbox.setTimeout': () => lib.Sandbox.setTimeout(id, 60_000, o),
      'Sandbox.getMetrics': () => lib.Sandbox.getMetrics(id, o),
      'Sandbox.pause': () => lib.Sandbox.pause(id, o),
      'Sandbox.fromSession': () => lib.Sandbox.fromSession('s', o),
      kill: () => sbx.kill(o),
      setTimeout: () => sbx.setTimeout(60_000, o),
      getInfo: () => sbx.getInfo(o),
      isRunning: () => sbx.isRunning(o),
      pause: () => sbx.pause(o),
      resume: () => sbx.resume(o),
      getMetrics: () => sbx.getMetrics(o),
      downloadUrl: () => sbx.downloadUrl('/tmp/x', o),
      uploadUrl: () => sbx.uploadUrl('/tmp/x', o),
      runCode: () => sbx.runCode('1', o),
      createCodeContext: () => sbx.createCodeContext(o),
      listCodeContexts: () => sbx.listCodeContexts(o),
      restartCodeContext: () => sbx.restartCodeContext('c', o),
      removeCodeContext: () => sbx.removeCodeContext('c', o),
      run: () => sbx.run('hello', {}, o),
      listCommands: () => sbx.listCommands(o),
      saveSession: () => sbx.saveSession('s', {}, o),
      'commands.run': () => sbx.commands.run('true', o),
      'commands.run background': () => sbx.commands.run('true', { ...o, background: true }),
      'commands.connect': () => sbx.commands.connect(bg.pid, o),
      'commands.list': () => sbx.commands.list(o),
      'commands.kill': () => sbx.commands.kill(bg.pid, o),
      'commands.signal': () => sbx.commands.signal(bg.pid, 15, o),
      'commands.sendStdin': () => sbx.commands.sendStdin(bg.pid, 'x', o),
      'commands.closeStdin': () => sbx.commands.closeStdin(bg.pid, o),
      'handle.wait': () => bg.wait(o),
      'handle.kill': () => bg.kill(o),
      'handle.sendStdin': () => bg.sendStdin('x', o),
      'handle.closeStdin': () => bg.closeStdin(o),
      'pty.create': () => sbx.pty.create(o),
      'pty.connect': () => sbx.pty.connect(bg.pid, o),
      'pty.sendInput': () => sbx.pty.sendInput(bg.pid, 'x', o),
      'pty.resize': () => sbx.pty.resize(bg.pid, { cols: 80, rows: 24 }, o),
      'pty.kill': () => sbx.pty.kill(bg.pid, o),
      'files.read': () => sbx.files.read('/etc/hostname', o),
      'files.read stream': () => sbx.files.read('/etc/hostname', { ...o, format: 'stream' }),
      'files.write': () => sbx.files.write('/tmp/x', 'x', o),
      'files.write stream': () => sbx.files.write('/tmp/x', new Blob(['x']).stream(), o),
      'files.writeFiles': () => sbx.files.writeFiles([{ path: '/tmp/x', data: 'x' }], o),
      'files.list': () => sbx.files.list('/tmp', o),
      'files.exists': () => sbx.files.exists('/tmp', o),
      'files.getInfo': () => sbx.files.getInfo('/tmp', o),
      'files.remove': () => sbx.files.remove('/tmp/x', o),
      'files.rename': () => sbx.files.rename('/tmp/x', '/tmp/y', o),
      'files.makeDir': () => sbx.files.makeDir('/tmp/d', o),
      'files.watchDir': () => sbx.files.watchDir('/tmp', () => {}, o),
      'Session.save': () => lib.Session.save('s', sbx, {}, o),
      'Session.load': () => lib.Session.load('s', o),
      'Session.get': () => lib.Session.get('s', o),
      'Session.list': () => lib.Session.list(o),
      'Session.delete': () => lib.Session.delete('s', o),
      'Template.build': () => lib.Template.build('/nonexistent', o),
      'Template.get': () => lib.Template.get('base', o),
      'Template.list': () => lib.Template.list(o),
      'Template.delete': () => lib.Template.delete('none', o)
    }
    for (const [name, call] of Object.entries(calls)) {
      await assert.rejects(call(), (e) => e === reason, name)
    }
    assert.equal(await sbx.isRunning(), true, 'nothing ran')
    assert.ok((await sbx.commands.list()).some((p) => p.pid === bg.pid), 'nothing ran')

    // mid-call: a background handle's wait stops waiting, the command runs on
    const waiting = new AbortController()
    const w = bg.wait({ signal: waiting.signal })
    waiting.abort()
    await assert.rejects(w, (e) => e.name === 'AbortError')
    assert.ok((await sbx.commands.list()).some((p) => p.pid === bg.pid), 'the command runs on')
    assert.equal(await bg.kill(), true)

    // mid-call: an upload whose source stalls after its first chunk (the C
    // call is reading it) is cancelled, and no call is left behind
    const up = new AbortController()
    let pulls = 0
    const body = new ReadableStream({
      pull(c) {
        if (++pulls === 1) return c.enqueue(new Uint8Array(64 * 1024))
        up.abort()
        return new Promise(() => {})
      }
    }, { highWaterMark: 0 })
    await assert.rejects(sbx.files.write('/tmp/stalled', body, { signal: up.signal }), (e) => e.name === 'AbortError')
    assert.ok(pulls >= 2, 'the upload had started')
    for (let i = 0; i < 250 && native.N.stats().inflight; i++) await new Promise((r) => setTimeout(r, 20))
    assert.equal(native.N.stats().inflight, 0, 'no call left in flight')
  } finally {
    await sbx.kill()
    sbx.close()
  }
})
