// The stock E2B JS SDK (npm "e2b", pinned) against a real agent-sandboxd,
// configured only by E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY — the way a
// user points an existing E2B program at the local engine.
// Run: ENGINE_BIN=... node --test engine.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine } from '../support/engine.mjs'

let engine
let e2b

before(async () => {
  engine = await startEngine('npm-engine')
  e2b = await import('e2b')
})

after(async () => {
  await engine.stop()
})

test('create, run, files, info, kill', async () => {
  const sbx = await e2b.Sandbox.create({ timeoutMs: 60_000, metadata: { suite: 'npm' } })
  assert.match(sbx.sandboxId, /^[a-z0-9]{20}$/)
  const r = await sbx.commands.run('echo hello; id -un; pwd')
  assert.equal(r.stdout, 'hello\nuser\n/home/user\n')
  assert.equal(r.exitCode, 0)
  await assert.rejects(sbx.commands.run('exit 3'), (e) => e instanceof e2b.CommandExitError && e.exitCode === 3)
  await sbx.files.write('/home/user/hello.txt', 'hi there')
  assert.equal(await sbx.files.read('/home/user/hello.txt'), 'hi there')
  assert.ok((await sbx.files.list('/home/user')).some((e) => e.name === 'hello.txt'))
  assert.equal(await sbx.files.exists('/home/user/nope'), false)
  const info = await sbx.getInfo()
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.state, 'running')
  assert.equal(info.metadata.suite, 'npm')
  assert.ok(info.endAt > info.startedAt)
  assert.equal(sbx.getHost(3000), `3000-${sbx.sandboxId}.localhost:${new URL(process.env.E2B_API_URL).port}`)
  assert.equal(await sbx.isRunning(), true)
  await sbx.kill()
  assert.equal(await sbx.isRunning(), false)
  assert.equal(await e2b.Sandbox.kill(sbx.sandboxId), false)
})

test('a create without timeoutMs lives the SDKs\' default 5 minutes', async () => {
  // e2b@2.51 sends no timeout then: the engine applies E2B's 300 s
  const sbx = await e2b.Sandbox.create()
  try {
    const info = await sbx.getInfo()
    const lifetime = (info.endAt - info.startedAt) / 1000
    assert.ok(lifetime >= 299 && lifetime <= 301, `lifetime ${lifetime} s`)
  } finally {
    await sbx.kill()
  }
})

test('background commands, stdin and kill', async () => {
  const sbx = await e2b.Sandbox.create({ timeoutMs: 60_000 })
  const h = await sbx.commands.run('cat', { background: true, stdin: true })
  await sbx.commands.sendStdin(h.pid, 'from stdin\n')
  await sbx.commands.closeStdin(h.pid)
  const res = await h.wait()
  assert.equal(res.stdout, 'from stdin\n')
  const sleeper = await sbx.commands.run('sleep 60', { background: true })
  assert.ok((await sbx.commands.list()).some((p) => p.pid === sleeper.pid))
  assert.equal(await sbx.commands.kill(sleeper.pid), true)
  assert.equal(await sbx.commands.kill(999999), false)
  await sbx.kill()
})

test('list, connect, setTimeout, pause and resume', async () => {
  const sbx = await e2b.Sandbox.create({ timeoutMs: 60_000, metadata: { group: 'listing' } })
  const page = e2b.Sandbox.list({ query: { metadata: { group: 'listing' } } })
  const items = await page.nextItems()
  assert.deepEqual(items.map((s) => s.sandboxId), [sbx.sandboxId])
  await sbx.setTimeout(120_000)
  await sbx.files.write('/home/user/state.txt', 'kept across pause')
  assert.equal(await sbx.pause(), true)
  assert.equal(await sbx.isRunning(), false)
  const again = await e2b.Sandbox.connect(sbx.sandboxId)
  assert.equal(await again.files.read('/home/user/state.txt'), 'kept across pause')
  assert.equal((await again.commands.run('echo back')).stdout, 'back\n')
  await again.kill()
  await assert.rejects(e2b.Sandbox.connect(sbx.sandboxId), (e) => e instanceof e2b.SandboxNotFoundError || e instanceof e2b.NotFoundError)
})

test('wrong API key is refused', async () => {
  await assert.rejects(e2b.Sandbox.create({ apiKey: 'e2b_0000000000000000000000000000000000000000' }),
    (e) => e instanceof e2b.AuthenticationError)
})
