// Volumes with the stock E2B JS SDK (npm "e2b", pinned): its Volume class
// (the /volumes API and the volume content API) and Sandbox.create's
// volumeMounts, against a real agent-sandboxd. Persistence across sandbox
// kill and engine restart, sharing between two live sandboxes, the quota,
// and the attacks: symlinks a sandbox plants in a volume must never lead the
// engine out of it, mount paths must not cover the sandbox's system.
// Run: ENGINE_BIN=... node --test volume.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEngine } from '../support/engine.mjs'

let engine
let e2b
const made = [] // volume ids, destroyed in after() whatever happened
const canary = `/tmp/asb-volume-canary-${process.pid}`

before(async () => {
  engine = await startEngine('npm-volume')
  process.env.E2B_VOLUME_API_URL = process.env.E2B_API_URL
  e2b = await import('e2b')
  mkdirSync(canary, { recursive: true })
  writeFileSync(`${canary}/keep`, 'host file')
})

after(async () => {
  // sandboxes go with the engine (--kill-on-exit), and with them every
  // mount of a volume; the engine's own mounts are fds: nothing is left
  for (const id of made) await e2b.Volume.destroy(id).catch(() => {})
  await engine.stop()
  rmSync(canary, { recursive: true, force: true })
})

async function newVolume(name, sizeMB) {
  const v = sizeMB
    ? await createSized(name, sizeMB)
    : await e2b.Volume.create(name)
  made.push(v.volumeId)
  return v
}

// sizeMB is ours (E2B's NewVolume has only the name): through the REST API
async function createSized(name, sizeMB) {
  const res = await fetch(`${process.env.E2B_API_URL}/volumes`, {
    method: 'POST',
    headers: { 'X-API-Key': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name, sizeMB })
  })
  assert.equal(res.status, 201)
  const j = await res.json()
  assert.equal(j.sizeMB, sizeMB)
  return e2b.Volume.connect(j.volumeID)
}

async function sh(sbx, cmd, opts = {}) {
  try {
    return await sbx.commands.run(cmd, opts)
  } catch (e) {
    if (e instanceof e2b.CommandExitError) return e
    throw e
  }
}

test('create, list, get, destroy; names validated; unknown is 404', async () => {
  const v = await newVolume('vol-crud')
  assert.match(v.volumeId, /^[a-z0-9]{20}$/)
  assert.equal(v.name, 'vol-crud')
  assert.ok(v.token.length >= 32)
  const info = await e2b.Volume.getInfo(v.volumeId)
  assert.equal(info.name, 'vol-crud')
  assert.equal(info.token, v.token)
  assert.ok((await e2b.Volume.list()).some((x) => x.volumeId === v.volumeId && x.name === 'vol-crud'))
  await assert.rejects(e2b.Volume.create('bad name/../x'), e2b.VolumeError)
  await assert.rejects(e2b.Volume.create('vol-crud'), /exists/)
  await assert.rejects(e2b.Volume.getInfo('nosuchvolume000000000'), e2b.VolumeNotFoundError)
  assert.equal(await e2b.Volume.destroy(v.volumeId), true)
  assert.equal(await e2b.Volume.destroy(v.volumeId), false)
  assert.ok(!(await e2b.Volume.list()).some((x) => x.volumeId === v.volumeId))
  // the content API takes the volume's token only
  const res = await fetch(`${process.env.E2B_API_URL}/volumecontent/${v.volumeId}/dir?path=/`, {
    headers: { Authorization: `Bearer ${process.env.E2B_API_KEY}` }
  })
  assert.equal(res.status, 404) // gone
})

test('file operations of the Volume class', async () => {
  const v = await newVolume('vol-files')
  const w = await v.writeFile('/hello.txt', 'hi there', { uid: 1000, gid: 1000, mode: 0o640 })
  assert.equal(w.type, 'file')
  assert.equal(w.size, 8)
  assert.equal(w.uid, 1000)
  assert.equal(w.mode, 0o640)
  assert.equal(await v.readFile('/hello.txt'), 'hi there')
  assert.deepEqual(await v.readFile('/hello.txt', { format: 'bytes' }), new TextEncoder().encode('hi there'))
  await assert.rejects(v.writeFile('/hello.txt', 'again'), /exists/)
  await v.writeFile('/hello.txt', 'again', { force: true })
  assert.equal(await v.readFile('/hello.txt'), 'again')
  await assert.rejects(v.makeDir('/a/b/c'), e2b.VolumePathNotFoundError)
  const d = await v.makeDir('/a/b/c', { force: true, uid: 1000, gid: 1000 })
  assert.equal(d.type, 'directory')
  assert.equal(d.path, '/a/b/c')
  await v.writeFile('/a/b/c/deep.txt', 'deep')
  const top = await v.list('/')
  assert.deepEqual(top.map((e) => e.name).sort(), ['a', 'hello.txt'])
  const all = await v.list('/', { depth: 4 })
  assert.ok(all.some((e) => e.path === '/a/b/c/deep.txt' && e.type === 'file'))
  const st = await v.getInfo('/a/b/c/deep.txt')
  assert.equal(st.size, 4)
  assert.ok(st.mtime instanceof Date && !isNaN(st.mtime))
  assert.equal(await v.exists('/a/b'), true)
  assert.equal(await v.exists('/nope'), false)
  const up = await v.updateMetadata('/hello.txt', { uid: 1001, mode: 0o600 })
  assert.equal(up.uid, 1001)
  assert.equal(up.mode, 0o600)
  await v.remove('/a')
  assert.equal(await v.exists('/a/b/c/deep.txt'), false)
  await assert.rejects(v.remove('/a'), e2b.VolumePathNotFoundError)
  await assert.rejects(v.readFile('/nope'), e2b.VolumePathNotFoundError)
  // a wrong token is refused
  const other = new e2b.Volume(v.volumeId, v.name, 'f'.repeat(40))
  await assert.rejects(other.readFile('/hello.txt'), e2b.AuthenticationError)
})

test('mounted in two live sandboxes: shared, owned alike, kept after kill', async () => {
  const v = await newVolume('vol-shared')
  const a = await e2b.Sandbox.create({ timeoutMs: 120_000, volumeMounts: { '/mnt/data': v } })
  const b = await e2b.Sandbox.create({ timeoutMs: 120_000, volumeMounts: { '/home/user/shared': 'vol-shared' } })
  try {
    assert.deepEqual((await a.getInfo()).volumeMounts, [{ name: 'vol-shared', path: '/mnt/data' }])
    // A's user writes; B's user (another host uid range) reads and appends
    let r = await a.commands.run('echo from-a > /mnt/data/note && mkdir /mnt/data/dir && stat -c "%u:%g" /mnt/data/note')
    assert.equal(r.stdout, '1000:1000\n')
    r = await b.commands.run('cat /home/user/shared/note && echo from-b >> /home/user/shared/note && touch /home/user/shared/dir/b && stat -c "%u:%g %U" /home/user/shared/note')
    assert.equal(r.stdout, 'from-a\n1000:1000 user\n')
    assert.equal((await a.commands.run('cat /mnt/data/note; ls /mnt/data/dir')).stdout, 'from-a\nfrom-b\nb\n')
    // root in one sandbox is root's in the other
    await a.commands.run('echo root > /mnt/data/rootfile', { user: 'root' })
    assert.equal((await b.commands.run('stat -c %U /home/user/shared/rootfile')).stdout, 'root\n')
    // and the content API sees the same files
    assert.equal(await v.readFile('/note'), 'from-a\nfrom-b\n')
    // deleting a mounted volume is refused, naming the sandboxes
    await assert.rejects(e2b.Volume.destroy(v.volumeId), (e) => e instanceof e2b.VolumeError && e.message.includes(a.sandboxId))
    await a.kill()
    await b.kill()
    // a new sandbox finds what the killed ones wrote
    const c = await e2b.Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/data': 'vol-shared' } })
    assert.equal((await c.commands.run('cat /data/note')).stdout, 'from-a\nfrom-b\n')
    await c.kill()
    assert.equal(await e2b.Volume.destroy(v.volumeId), true)
  } finally {
    await a.kill().catch(() => {})
    await b.kill().catch(() => {})
  }
})

test('the size is a quota: in a sandbox and through the content API', async () => {
  const v = await newVolume('vol-small', 16)
  const s = await e2b.Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/mnt/v': v } })
  try {
    const r = await sh(s, 'dd if=/dev/zero of=/mnt/v/big bs=1M count=64 2>&1; echo rc=$?; df -m /mnt/v | tail -1')
    assert.match(r.stdout, /No space left on device/)
    assert.match(r.stdout, /rc=1/)
    await s.commands.run('rm /mnt/v/big')
    const big = new Uint8Array(32 << 20)
    await assert.rejects(v.writeFile('/big', big.buffer), (e) => e instanceof e2b.VolumeError && /full/.test(e.message))
    assert.equal(await v.exists('/big'), false) // nothing half-written left
  } finally {
    await s.kill()
  }
})

test('symlinks planted in a volume never lead the engine out of it', async () => {
  const v = await newVolume('vol-attack')
  const s = await e2b.Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/mnt/v': v } })
  try {
    await s.commands.run(
      `ln -s / /mnt/v/root && ln -s ../../../../../../etc/passwd /mnt/v/pw && ln -s ${canary} /mnt/v/canary && ` +
        `mkdir /mnt/v/d && ln -s ${canary} /mnt/v/d/c`
    )
    // reads through them stay in the volume: nothing of the host
    await assert.rejects(v.readFile('/pw'), e2b.VolumePathNotFoundError)
    await assert.rejects(v.readFile('/root/etc/passwd'), e2b.VolumePathNotFoundError)
    await assert.rejects(v.readFile('/canary/keep'), e2b.VolumePathNotFoundError)
    await assert.rejects(v.readFile('/../../../../etc/passwd'), e2b.VolumeError)
    // writes neither
    await assert.rejects(v.writeFile('/canary/pwned', 'x'), e2b.VolumePathNotFoundError)
    assert.equal(existsSync(`${canary}/pwned`), false)
    await assert.rejects(v.makeDir('/canary/newdir', { force: true }), e2b.VolumeError)
    assert.equal(existsSync(`${canary}/newdir`), false)
    await assert.rejects(v.updateMetadata('/canary/keep', { mode: 0o777 }), e2b.VolumePathNotFoundError)
    // removing the link or a dir holding one removes the link, not its target
    await v.remove('/d')
    await v.remove('/canary')
    assert.equal(readFileSync(`${canary}/keep`, 'utf8'), 'host file')
    // a write over a symlink replaces the link (a new file renamed into
    // place), it never writes where the link points
    await s.commands.run(`ln -s ${canary}/keep /mnt/v/k`)
    await v.writeFile('/k', 'replaced', { force: true })
    assert.equal(readFileSync(`${canary}/keep`, 'utf8'), 'host file')
    assert.equal((await v.getInfo('/k')).type, 'file')
    // a symlink is listed as one
    const l = await v.list('/')
    assert.ok(l.some((e) => e.name === 'root' && e.type === 'symlink' && e.target === '/'))
  } finally {
    await s.kill()
  }
})

test('mount paths: the sandbox\'s system, symlinks and unknown volumes are refused', async () => {
  await newVolume('vol-paths')
  for (const p of ['/proc', '/proc/x', '/run/asb', '/dev/shm', '/.asb', '/', '/etc', '/usr/local', '/a/../b']) {
    await assert.rejects(e2b.Sandbox.create({ timeoutMs: 30_000, volumeMounts: { [p]: 'vol-paths' } }),
      (e) => /volume mount path/.test(e.message), `mount at ${p}`)
  }
  await assert.rejects(e2b.Sandbox.create({ timeoutMs: 30_000, volumeMounts: { '/x': 'no-such-volume' } }), /not found/)
  // the base template's /lib32 is a symlink (to usr/lib32): not followed
  await assert.rejects(e2b.Sandbox.create({ timeoutMs: 30_000, volumeMounts: { '/lib32/v': 'vol-paths' } }), /symlink/)
  await assert.rejects(e2b.Sandbox.create({
    timeoutMs: 30_000, volumeMounts: { '/data': 'vol-paths', '/data/x': 'vol-paths' }
  }), /overlap/)
})

async function restart(signal) {
  const state = engine.state
  await engine.stop({ keepState: true, signal })
  engine = await startEngine('npm-volume', [], { state })
  process.env.E2B_VOLUME_API_URL = process.env.E2B_API_URL
}

test('volumes survive an engine restart', async () => {
  const v = await newVolume('vol-restart')
  await v.writeFile('/kept.txt', 'across restarts', { uid: 1000, gid: 1000 })
  const s = await e2b.Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/data': v } })
  await s.commands.run('echo from-sandbox > /data/s.txt')
  // a crash: the sandbox lives on with the volume mounted, the next engine
  // adopts it and mounts the volume from the same loop device (one
  // superblock: what either writes, the other sees at once)
  await restart('SIGKILL')
  const vv = await e2b.Volume.connect(v.volumeId) // the new engine's port
  const ss = await e2b.Sandbox.connect(s.sandboxId)
  await vv.writeFile('/after-crash.txt', 'written by the new engine')
  assert.equal((await ss.commands.run('cat /data/after-crash.txt')).stdout, 'written by the new engine')
  await ss.commands.run('echo again-from-sandbox > /data/s2.txt')
  assert.equal(await vv.readFile('/s2.txt'), 'again-from-sandbox\n')
  await assert.rejects(e2b.Volume.destroy(v.volumeId), (e) => e.message.includes(s.sandboxId))
  // a stop (--kill-on-exit kills the sandbox) and a start
  await restart('SIGTERM')
  const again = await e2b.Volume.connect(v.volumeId)
  assert.equal(again.token, v.token)
  assert.equal(await again.readFile('/kept.txt'), 'across restarts')
  assert.equal(await again.readFile('/s.txt'), 'from-sandbox\n')
  const t = await e2b.Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/data': 'vol-restart' } })
  assert.equal((await t.commands.run('cat /data/kept.txt; id -u')).stdout, 'across restarts1000\n')
  await t.commands.run('echo more >> /data/kept.txt')
  await t.kill()
  assert.equal(await again.readFile('/kept.txt'), 'across restartsmore\n')
})

test('examples/volumes.sh runs', () => {
  const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '../..')
  const cli = process.env.ASB_CLI || path.join(path.dirname(process.env.ENGINE_BIN), '../cli/asb')
  const out = execFileSync('bash', [path.join(root, 'examples/volumes.sh')], {
    env: { ...process.env, ASB_STATE_DIR: engine.state, ASB_CLI: cli },
    encoding: 'utf8'
  })
  assert.match(out, /hello from the host\n/)
  assert.match(out, /a was here\nowner: user\n/)
  assert.match(out, /is mounted by 2 running sandboxes/)
  assert.match(out, /file \/logs\/a\.log 11 bytes, uid 1000/)
  assert.match(out, /volume deleted/)
})
