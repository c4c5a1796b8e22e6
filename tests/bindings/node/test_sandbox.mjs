// node.sandbox: create, connect, list (pages), kill, setTimeout, getInfo,
// isRunning, pause, resume, getMetrics, hosts and URLs, the static calls by
// id, `await using`, and the errors of the control plane.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { engine as startEngine } from './helpers.mjs'

let engine, lib

before(async () => {
  engine = await startEngine('sandbox')
  lib = await import('agent-sandbox')
})

after(async () => {
  await engine.stop()
})

test('create, info, list, connect, timeout, kill', async () => {
  const sbx = await lib.Sandbox.create({ timeoutMs: 60_000, metadata: { suite: 'node', n: '1' }, envs: { GREETING: 'hi' } })
  assert.match(sbx.sandboxId, /^[a-z0-9]{20}$/)
  assert.equal(sbx.id, sbx.sandboxId)
  assert.equal((await sbx.commands.run('echo $GREETING')).stdout, 'hi\n')
  const info = await sbx.getInfo()
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.templateId, 'base')
  assert.equal(info.state, 'running')
  assert.deepEqual(info.metadata, { suite: 'node', n: '1' })
  assert.ok(info.startedAt instanceof Date && info.endAt > info.startedAt)
  assert.ok(info.cpuCount > 0 && info.memoryMB > 0)
  const other = await lib.Sandbox.create({ metadata: { suite: 'other' } })
  const listed = await lib.Sandbox.list({ metadata: { suite: 'node' } })
  assert.deepEqual(listed.map((s) => s.sandboxId), [sbx.sandboxId])
  const page = await lib.Sandbox.listPage({ limit: 1 })
  assert.equal(page.items.length, 1)
  assert.ok(page.nextToken, 'a second page')
  const all = await lib.Sandbox.list({ state: ['running'] })
  assert.ok(all.some((s) => s.sandboxId === other.sandboxId))
  await sbx.setTimeout(120_000)
  const later = await sbx.getInfo()
  assert.ok(later.endAt > info.endAt)
  assert.equal((await lib.Sandbox.getInfo(sbx.sandboxId)).sandboxId, sbx.sandboxId)
  await lib.Sandbox.setTimeout(sbx.sandboxId, 90_000)
  const again = await lib.Sandbox.connect(sbx.sandboxId)
  assert.equal((await again.commands.run('echo again')).stdout, 'again\n')
  again.close()
  assert.equal(sbx.getHost(3000), `3000-${sbx.sandboxId}.localhost:${engine.port}`)
  assert.equal(sbx.getUrl(8080), `http://8080-${sbx.sandboxId}.localhost:${engine.port}`)
  assert.throws(() => sbx.getHost(70000), RangeError)
  // a loopback URL: no *.localhost name, so the stock fetch opens it
  const loop = await sbx.loopbackUrl(49983)
  assert.match(loop, /^http:\/\/127\.0\.0\.1:\d+$/)
  assert.equal(await sbx.loopbackUrl(49983), loop)
  assert.equal((await fetch(`${loop}/health`)).status, 204)
  await assert.rejects(sbx.loopbackUrl(70000), (e) => e.code === 'ASB_EINVAL')
  const metrics = await sbx.getMetrics()
  assert.ok(Array.isArray(metrics))
  for (const m of metrics) assert.ok(m.timestamp instanceof Date && typeof m.cpuUsedPct === 'number')
  assert.equal(await sbx.isRunning(), true)
  assert.equal(await sbx.kill(), true)
  assert.equal(await sbx.isRunning(), false)
  assert.equal(await sbx.kill(), false)
  assert.equal(await lib.Sandbox.kill(other.sandboxId), true)
  assert.equal(await lib.Sandbox.kill(other.sandboxId), false)
  await assert.rejects(lib.Sandbox.connect(sbx.sandboxId), (e) => e instanceof lib.SandboxNotFoundError &&
    e instanceof lib.NotFoundError && e instanceof lib.SandboxError && /^ASB_ESANDBOX(NOTFOUND|GONE)$/.test(e.code) && e.status === 404)
  sbx.close()
  other.close()
})

test('pause and resume keep processes and files', async () => {
  const sbx = await lib.Sandbox.create({ timeoutMs: 60_000 })
  await sbx.files.write('/home/user/state.txt', 'kept')
  const bg = await sbx.commands.run('sleep 120', { background: true })
  assert.equal(await sbx.pause(), true)
  assert.equal(await sbx.pause(), false)
  assert.equal((await sbx.getInfo()).state, 'paused')
  assert.equal(await sbx.isRunning(), false)
  await sbx.resume({ timeoutMs: 60_000 })
  assert.equal(await sbx.files.read('/home/user/state.txt'), 'kept')
  assert.ok((await sbx.commands.list()).some((p) => p.pid === bg.pid))
  assert.equal(await lib.Sandbox.pause(sbx.sandboxId), true)
  const back = await lib.Sandbox.connect(sbx.sandboxId)
  assert.equal((await back.commands.run('echo back')).stdout, 'back\n')
  await back.kill()
  await bg.disconnect()
  sbx.close()
  back.close()
})

test('pause({keepMemory: false}) boots again; lifecycle autoResume is kept', async () => {
  const sbx = await lib.Sandbox.create({ timeoutMs: 60_000 })
  await sbx.files.write('/home/user/state.txt', 'files only')
  const boot0 = (await sbx.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout
  const bg = await sbx.commands.run('sleep 120', { background: true })
  assert.equal(await sbx.pause({ keepMemory: false }), true)
  assert.equal((await sbx.getInfo()).pauseMode, 'filesystem')
  await sbx.resume({ timeoutMs: 60_000 })
  assert.equal(await sbx.files.read('/home/user/state.txt'), 'files only')
  assert.ok(!(await sbx.commands.list()).some((p) => p.pid === bg.pid))
  assert.notEqual((await sbx.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout, boot0)
  await sbx.kill()
  await bg.disconnect()
  sbx.close()
  const sleepy = await lib.Sandbox.create({ timeoutMs: 60_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  assert.equal((await sleepy.getInfo()).autoResume, true)
  assert.equal(await sleepy.pause(), true)
  assert.equal((await sleepy.getInfo()).pauseMode, 'memory')
  await sleepy.kill()
  sleepy.close()
})

test('await using kills the sandbox at the end of the scope', async () => {
  let id
  {
    const sbx = await lib.Sandbox.create()
    id = sbx.sandboxId
    await sbx[Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose')]()
  }
  assert.equal(await lib.Sandbox.kill(id), false)
})

test('errors: authentication, unknown template, bad arguments', async () => {
  await assert.rejects(lib.Sandbox.create({ apiKey: 'e2b_0000000000000000000000000000000000000000' }), (e) =>
    e instanceof lib.AuthenticationError && !(e instanceof lib.SandboxError) && e.code === 'ASB_EAUTH' && e.status === 401)
  await assert.rejects(lib.Sandbox.create({ template: 'no-such-template' }), (e) => e instanceof lib.NotFoundError && e.code === 'ASB_ENOTFOUND')
  await assert.rejects(lib.Sandbox.connect('NOT AN ID'), (e) => e instanceof lib.InvalidArgumentError && e.code === 'ASB_EINVAL')
  await assert.rejects(lib.Sandbox.create({ timeoutMs: 'soon' }), TypeError)
  // the local engine's rate limit is far away; the class is exported
  assert.ok(new lib.RateLimitError('x', { code: 'ASB_ERATELIMIT', status: 429, retryAfter: 3 }).retryAfter === 3)
})
