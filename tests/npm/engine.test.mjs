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

// Polls cond (async) until it holds, for up to 120 s.
async function until (cond) {
  for (const end = Date.now() + 120_000; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (await cond()) return true
  }
  return false
}

test('pause({ keepMemory: false }) keeps the files and boots the sandbox again', async () => {
  const sbx = await e2b.Sandbox.create({ timeoutMs: 60_000 })
  await sbx.files.write('/home/user/kept.txt', 'files only')
  const boot0 = (await sbx.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout
  assert.equal(await sbx.pause({ keepMemory: false }), true)
  assert.equal(await sbx.isRunning(), false)
  assert.equal((await sbx.getInfo()).state, 'paused')
  const again = await e2b.Sandbox.connect(sbx.sandboxId)
  assert.equal(await again.files.read('/home/user/kept.txt'), 'files only')
  const boot1 = (await again.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout
  assert.match(boot1, /^[0-9a-f-]{36}\n$/)
  assert.notEqual(boot1, boot0)
  await again.kill()
})

// E2B's "sleep" lifecycle: paused on timeout, woken by traffic to a port
// (and by the SDK's own envd calls).
test('lifecycle onTimeout pause + autoResume: traffic resumes a sleeping sandbox', async () => {
  await assert.rejects(e2b.Sandbox.create({ lifecycle: { onTimeout: { action: 'pause', keepMemory: false }, autoResume: true } }),
    (e) => e instanceof e2b.InvalidArgumentError)
  const sbx = await e2b.Sandbox.create({ timeoutMs: 60_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  assert.deepEqual((await sbx.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: true })
  await sbx.files.write('/home/user/www/index.txt', 'good morning')
  await sbx.commands.run('python3 -m http.server 8000 --bind 127.0.0.1', { cwd: '/home/user/www', background: true })
  const get = () => fetch(process.env.E2B_API_URL + '/index.txt',
    { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000' } })
  assert.ok(await until(async () => (await get()).status === 200))
  await sbx.setTimeout(1_000)
  assert.ok(await until(async () => (await sbx.getInfo()).state === 'paused'))
  const r = await get()
  assert.equal(r.status, 200)
  assert.equal(await r.text(), 'good morning')
  assert.equal((await sbx.getInfo()).state, 'running')
  assert.equal(await sbx.pause(), true)
  assert.equal((await sbx.commands.run('echo awake')).stdout, 'awake\n')
  await sbx.kill()
})

test('wrong API key is refused', async () => {
  await assert.rejects(e2b.Sandbox.create({ apiKey: 'e2b_0000000000000000000000000000000000000000' }),
    (e) => e instanceof e2b.AuthenticationError)
})

// Last: it crashes the engine. A sandbox paused with memory stays frozen
// while no engine runs; the next engine on the same state dir (another port
// here) lists it paused and Sandbox.connect thaws it where it was.
test('a sandbox paused with memory outlives an engine crash', async () => {
  const sbx = await e2b.Sandbox.create({ timeoutMs: 120_000 })
  await sbx.files.write('/home/user/note.txt', 'before the crash')
  const bg = await sbx.commands.run('sleep 1000', { background: true })
  assert.equal(await sbx.pause(), true)
  const state = engine.state
  await engine.stop({ keepState: true, signal: 'SIGKILL' })
  engine = await startEngine('npm-engine', [], { state })
  const info = await e2b.Sandbox.getInfo(sbx.sandboxId)
  assert.equal(info.state, 'paused')
  const again = await e2b.Sandbox.connect(sbx.sandboxId)
  assert.equal((await again.getInfo()).state, 'running')
  assert.equal(await again.files.read('/home/user/note.txt'), 'before the crash')
  // envd's own memory: the process it started before the pause, still there
  assert.ok((await again.commands.list()).some((p) => p.pid === bg.pid))
  assert.equal((await again.commands.run(`kill -0 ${bg.pid} && echo same`)).stdout, 'same\n')
  await again.kill()
})
