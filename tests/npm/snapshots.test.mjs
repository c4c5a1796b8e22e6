// Named snapshots and fork through the stock npm "e2b" SDK (2.51:
// Sandbox.createSnapshot, listSnapshots, deleteSnapshot, fork) against a
// real agent-sandboxd: files at the instant, the parent untouched, forks'
// writes invisible to the parent and to each other, deletes (whiteouts)
// carried, snapshots of sandboxes made from snapshots, 404s, names,
// pagination, symlinks copied as links (never followed on the host), and a
// snapshot surviving its source's kill and an engine restart.
// Run: ENGINE_BIN=... node --test snapshots.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { startEngine } from '../support/engine.mjs'

let engine
let e2b
const made = []
const secret = `/tmp/asb-snap-secret-${process.pid}`

before(async () => {
  engine = await startEngine('npm-snap')
  e2b = await import('e2b')
  fs.writeFileSync(secret, 'host-secret\n')
})

after(async () => {
  for (const s of made) await s.kill().catch(() => {})
  if (engine) await engine.stop()
  fs.rmSync(secret, { force: true })
})

async function create(tmpl) {
  const s = await e2b.Sandbox.create(tmpl, { timeoutMs: 300_000 })
  made.push(s)
  return s
}
const run = async (s, cmd) => (await s.commands.run(cmd)).stdout

async function listAll(opts) {
  const p = e2b.Sandbox.listSnapshots(opts)
  const out = []
  while (p.hasNext) out.push(...(await p.nextItems()))
  return out
}

test('createSnapshot: the files of that instant; the parent keeps running untouched', async () => {
  const parent = await create('base')
  await run(parent, 'echo before > /home/user/f.txt && mkdir -p /home/user/d && echo x > /home/user/d/y')
  await run(parent, `ln -s ${secret} /home/user/link && ln -s /etc /home/user/dirlink`)
  const snap = await parent.createSnapshot({ name: 'npm-snap-one' })
  assert.equal(snap.snapshotId, 'npm-snap-one:default')
  assert.deepEqual(snap.names, ['npm-snap-one:default'])
  await run(parent, 'echo after > /home/user/f.txt')
  assert.equal(await run(parent, 'cat /home/user/f.txt'), 'after\n')

  const child = await create(snap.snapshotId)
  assert.equal(await run(child, 'cat /home/user/f.txt /home/user/d/y'), 'before\nx\n')
  assert.equal(await run(child, 'stat -c %U /home/user/f.txt'), 'user\n')
  // links are copied as links: the host file they name never comes in
  assert.equal(await run(child, 'readlink /home/user/link; readlink /home/user/dirlink'),
    `${secret}\n/etc\n`)
  const r = await child.commands.run('cat /home/user/link', { }).catch((e) => e)
  assert.ok(!String(r.stdout ?? '').includes('host-secret'))
  // by name too
  const byName = await create('npm-snap-one')
  assert.equal(await run(byName, 'cat /home/user/f.txt'), 'before\n')

  const mine = await listAll({ sandboxId: parent.sandboxId })
  assert.deepEqual(mine.map((s) => s.snapshotId), ['npm-snap-one:default'])
  assert.equal((await listAll({ name: 'npm-snap-one' })).length, 1)
  assert.equal((await listAll({ name: 'npm-snap-one:default' })).length, 1)
  assert.equal((await listAll({ name: 'no-such-snapshot' })).length, 0)
  // listed as a template as well
  const tl = await (await fetch(`${process.env.E2B_API_URL}/templates`,
    { headers: { 'X-API-Key': process.env.E2B_API_KEY } })).json()
  assert.ok(tl.some((t) => t.aliases.includes('npm-snap-one')))
})

test('snapshot of a sandbox made from a snapshot carries deletes; pagination', async () => {
  const a = await create('base')
  await run(a, 'echo k > /home/user/k.txt && echo keep > /home/user/keep.txt')
  const s1 = await a.createSnapshot()
  assert.match(s1.snapshotId, /^[A-Za-z0-9]{20}:default$/)
  const b = await create(s1.snapshotId)
  await run(b, 'rm /home/user/k.txt && echo b > /home/user/b.txt')
  const s2 = await b.createSnapshot({ name: 'npm-snap-two' })
  const c = await create(s2.snapshotId)
  assert.equal(await run(c, 'test -e /home/user/k.txt || echo gone; cat /home/user/keep.txt /home/user/b.txt'),
    'gone\nkeep\nb\n')
  // pages of one, followed to the end, each snapshot once
  const all = await listAll({ limit: 1 })
  const ids = all.map((s) => s.snapshotId)
  assert.equal(new Set(ids).size, ids.length)
  for (const want of ['npm-snap-one:default', s1.snapshotId, 'npm-snap-two:default'])
    assert.ok(ids.includes(want), want)
  // a snapshot others build on can go first: theirs keep its files
  assert.equal(await e2b.Sandbox.deleteSnapshot(s1.snapshotId), true)
  const d = await create(s2.snapshotId)
  assert.equal(await run(d, 'cat /home/user/keep.txt /home/user/b.txt'), 'keep\nb\n')
})

test('fork: count sandboxes with the files of that instant; writes stay in each', async () => {
  const parent = await create('base')
  await run(parent, 'echo p > /home/user/p.txt')
  const forks = await parent.fork({ count: 2, timeoutMs: 300_000 })
  assert.equal(forks.length, 2)
  for (const f of forks) {
    assert.ok(f instanceof e2b.Sandbox, String(f))
    made.push(f)
  }
  assert.notEqual(forks[0].sandboxId, forks[1].sandboxId)
  assert.notEqual(forks[0].sandboxId, parent.sandboxId)
  for (const f of forks) assert.equal(await run(f, 'cat /home/user/p.txt'), 'p\n')
  await run(forks[0], 'echo zero > /home/user/p.txt && echo new0 > /home/user/only0')
  await run(forks[1], 'echo one > /home/user/p.txt')
  assert.equal(await run(parent, 'cat /home/user/p.txt; test -e /home/user/only0 || echo none'), 'p\nnone\n')
  assert.equal(await run(forks[1], 'cat /home/user/p.txt; test -e /home/user/only0 || echo none'), 'one\nnone\n')
  assert.equal(await run(forks[0], 'cat /home/user/p.txt'), 'zero\n')
  assert.equal(await parent.isRunning(), true)
  // a fork's snapshot is no named snapshot
  assert.equal((await listAll({ sandboxId: parent.sandboxId })).length, 0)
})

test('a paused sandbox: snapshotted and forked as it is, and left paused', async () => {
  const s = await create('base')
  await run(s, 'echo paused > /home/user/z.txt')
  await s.pause()
  const snap = await e2b.Sandbox.createSnapshot(s.sandboxId)
  assert.equal((await e2b.Sandbox.getInfo(s.sandboxId)).state, 'paused')
  const forks = await e2b.Sandbox.fork(s.sandboxId, { timeoutMs: 300_000 })
  assert.equal(forks.length, 1)
  made.push(forks[0])
  assert.equal(await run(forks[0], 'cat /home/user/z.txt'), 'paused\n')
  assert.equal((await e2b.Sandbox.getInfo(s.sandboxId)).state, 'paused')
  const c = await create(snap.snapshotId)
  assert.equal(await run(c, 'cat /home/user/z.txt'), 'paused\n')
})

test('404s, names, delete', async () => {
  const s = await create('base')
  await s.kill()
  await assert.rejects(e2b.Sandbox.fork(s.sandboxId), e2b.SandboxNotFoundError)
  await assert.rejects(e2b.Sandbox.createSnapshot(s.sandboxId), e2b.SandboxNotFoundError)
  await assert.rejects(e2b.Sandbox.createSnapshot('nosuchsandbox0000000'), e2b.SandboxNotFoundError)
  // a bad count is 400 before an unknown sandbox is 404 (e2b 2.51 calls a
  // 400 a SandboxError; newer SDKs check the count themselves)
  await assert.rejects(e2b.Sandbox.fork('nosuchsandbox0000000', { count: 0 }), /400: 'count'/)
  await assert.rejects(e2b.Sandbox.fork(s.sandboxId, { count: 101 }), /400: 'count'/)
  const live = await create('base')
  for (const bad of ['Upper', '../x', 'a/b', 'x:y', '-x', 'a'.repeat(129)])
    await assert.rejects(live.createSnapshot({ name: bad }), /invalid snapshot name/, bad)
  await assert.rejects(live.createSnapshot({ name: 'base' }), /not a snapshot/)
  const snap = await live.createSnapshot({ name: 'npm-snap-del' })
  assert.equal(await e2b.Sandbox.deleteSnapshot(snap.snapshotId), true)
  assert.equal(await e2b.Sandbox.deleteSnapshot(snap.snapshotId), false)
  await assert.rejects(e2b.Sandbox.create(snap.snapshotId))
})

test('deleting a snapshot in use: its sandboxes keep their files; they go once unused', async () => {
  const src = await create('base')
  await run(src, 'echo used > /home/user/u.txt')
  const snap = await src.createSnapshot()
  const id = snap.snapshotId.replace(/:default$/, '')
  const user = await create(snap.snapshotId)
  assert.equal(await e2b.Sandbox.deleteSnapshot(snap.snapshotId), true)
  assert.equal((await listAll({ name: snap.snapshotId })).length, 0)
  await assert.rejects(e2b.Sandbox.create(snap.snapshotId))
  assert.equal(await run(user, 'cat /home/user/u.txt; ls /home/user | wc -l'), 'used\n1\n')
  assert.ok(fs.existsSync(`${engine.state}/templates/${id}`))
  await user.kill()
  await src.createSnapshot() // a snapshot, fork, build or restart collects them
  assert.equal(fs.existsSync(`${engine.state}/templates/${id}`), false)
})

test('a snapshot survives its source\'s kill and an engine restart', async () => {
  const src = await create('base')
  await run(src, 'echo survived > /home/user/s.txt')
  const snap = await src.createSnapshot({ name: 'npm-snap-restart' })
  await src.kill()
  const state = engine.state
  await engine.stop({ keepState: true })
  engine = await startEngine('npm-snap', [], { state })
  made.length = 0 // the engine killed them on exit (--kill-on-exit)
  const s = await create(snap.snapshotId)
  assert.equal(await run(s, 'cat /home/user/s.txt'), 'survived\n')
  assert.deepEqual((await listAll({ name: 'npm-snap-restart' })).map((x) => x.snapshotId),
    ['npm-snap-restart:default'])
})
