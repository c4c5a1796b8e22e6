// node.volumes: volumeMounts of Sandbox.create (the addon's
// asb_sandbox_options.volume_mounts) on a volume made with E2B's /volumes
// API: two sandboxes share it; bad mounts are refused (locally: not a
// name; by the engine: a path of the sandbox's system). The Volume class
// (the addon's asb_volume* calls): the control plane and every file call
// with its errors, natively and through agent-sandbox/compat with E2B's
// error classes (an unknown volume, a missing path, a delete while a
// sandbox mounts it). A volume from its token (E2B's new Volume(volumeId,
// name, token)), and a sandbox info's lifecycle and volumeMounts (E2B's
// SandboxInfo), from getInfo and the list.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { engine as startEngine } from './helpers.mjs'

let engine, lib, compat
const name = `nd-vol-${process.pid}`

async function api(method, path, body) {
  const r = await fetch(`${process.env.E2B_API_URL}${path}`, {
    method,
    headers: { 'X-API-Key': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined
  })
  return r.status
}

before(async () => {
  engine = await startEngine('volumes')
  lib = await import('agent-sandbox')
  compat = await import('agent-sandbox/compat')
  assert.equal(await api('POST', '/volumes', { name, sizeMB: 32 }), 201)
})

after(async () => {
  for (const n of [name, `${name}-n`, `${name}-c`]) await api('DELETE', `/volumes/${n}`).catch(() => {})
  await engine.stop()
})

test('two sandboxes share a volume', async () => {
  const a = await lib.Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/mnt/v': name } })
  const b = await lib.Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/home/user/v': { name } } })
  try {
    await a.commands.run('echo from-a > /mnt/v/f')
    assert.equal((await b.commands.run('cat /home/user/v/f; stat -c %U /home/user/v/f')).stdout, 'from-a\nuser\n')
    assert.equal(await api('DELETE', `/volumes/${name}`), 409)
    // E2B's SandboxInfo.volumeMounts and lifecycle (a list's items: no lifecycle)
    const info = await b.getInfo()
    assert.deepEqual(info.volumeMounts, [{ name, path: '/home/user/v' }])
    assert.deepEqual(info.lifecycle, { onTimeout: 'kill', autoResume: false })
    const listed = (await lib.Sandbox.list()).filter((i) => i.sandboxId === a.sandboxId)
    assert.deepEqual(listed.map((i) => i.volumeMounts), [[{ name, path: '/mnt/v' }]])
    assert.equal(listed[0].lifecycle, undefined)
    const ci = await compat.Sandbox.getInfo(b.sandboxId)
    assert.deepEqual([ci.volumeMounts, ci.lifecycle], [info.volumeMounts, info.lifecycle])
  } finally {
    await a.kill()
    await b.kill()
  }
  const p = await compat.Sandbox.create({ timeoutMs: 60_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  try {
    const pi = await p.getInfo()
    assert.deepEqual([pi.lifecycle, pi.volumeMounts], [{ onTimeout: 'pause', autoResume: true }, []])
  } finally {
    await p.kill()
  }
})

test('a Volume from its token (E2B\'s new Volume(volumeId, name, token))', async () => {
  const got = await lib.Volume.connect(name)
  try {
    // no API call, no API key: the content API takes the token
    const v = new lib.Volume(got.volumeId, name, got.token, { apiKey: 'not-the-key', apiUrl: process.env.E2B_API_URL })
    assert.deepEqual([v.volumeId, v.name, v.token], [got.volumeId, name, got.token])
    await v.writeFile('/tok.txt', 'by-token', { force: true })
    assert.equal(await got.readFile('/tok.txt'), 'by-token')
    assert.equal(await v.exists('/tok.txt'), true)
    await v.remove('/tok.txt')
    v.close()
    await assert.rejects(new lib.Volume(got.volumeId, name, 'wrong-token').exists('/'), (e) => e.code === 'ASB_EAUTH')
    assert.throws(() => new lib.Volume(got.volumeId, name), TypeError)
    // compat: E2B's constructor (domain 4th) and its error classes
    const cv = new compat.Volume(got.volumeId, name, got.token)
    assert.equal(await cv.exists('/'), true)
    await assert.rejects(cv.readFile('/missing'), compat.VolumePathNotFoundError)
    const bound = new (new compat.E2B().Volume)(got.volumeId, name, got.token)
    assert.equal(await bound.exists('/'), true)
  } finally {
    got.close()
  }
})

test('bad mounts are refused', async () => {
  await assert.rejects(lib.Sandbox.create({ volumeMounts: { '/x': 3 } }), TypeError)
  await assert.rejects(lib.Sandbox.create({ volumeMounts: { '/proc/x': name } }), /volume mount path/)
  await assert.rejects(lib.Sandbox.create({ volumeMounts: { '/x': 'no-such-volume' } }), /not found/)
})

test('Volume: the control plane and the file calls', async () => {
  const { Volume, NotFoundError, InvalidArgumentError, SandboxError } = lib
  const v = await Volume.create(`${name}-n`, { sizeMB: 16 })
  try {
    assert.equal(v.name, `${name}-n`)
    assert.equal(v.sizeMB, 16)
    assert.ok(v.volumeId && v.token)
    assert.ok((await Volume.list()).some((i) => i.volumeId === v.volumeId && i.name === v.name && i.sizeMB === 16))
    const info = await Volume.getInfo(v.name)
    assert.deepEqual([info.volumeId, info.token], [v.volumeId, v.token])
    await assert.rejects(Volume.create(`${name}-n`), (e) => e instanceof SandboxError && e.code === 'ASB_EEXISTS')
    await assert.rejects(Volume.create('bad name!'), InvalidArgumentError)
    // arguments the addon refuses before any call (freed, under ASan too)
    await assert.rejects(Volume.create(`${name}-x`, { sizeMB: -1 }), RangeError)
    await assert.rejects(v.readFile(42), TypeError)
    await assert.rejects(v.writeFile('/x', 'x', { mode: 2 ** 40 }), RangeError)
    await assert.rejects(v.writeFile('/x', 42), TypeError)

    // files: a parent must exist, an existing file needs force
    await assert.rejects(v.writeFile('/d/f.txt', 'x'), NotFoundError)
    const d = await v.makeDir('/d', { uid: 1000, gid: 1000 })
    assert.deepEqual([d.type, d.path, d.uid, d.gid, d.mode], ['directory', '/d', 1000, 1000, 0o755])
    await assert.rejects(v.makeDir('/d'), (e) => e.code === 'ASB_EEXISTS')
    assert.equal((await v.makeDir('/d', { force: true })).type, 'directory')
    const f = await v.writeFile('/d/f.txt', 'hello', { uid: 1000, mode: 0o600 })
    assert.deepEqual([f.name, f.type, f.size, f.uid, f.gid, f.mode], ['f.txt', 'file', 5, 1000, 0, 0o600])
    assert.ok(f.mtime instanceof Date && f.mtime.getTime() > 0)
    await assert.rejects(v.writeFile('/d/f.txt', 'again'), (e) => e.code === 'ASB_EEXISTS')
    await v.writeFile('/d/f.txt', new Blob([Buffer.from('héllo')]), { force: true, uid: 1000 })
    assert.equal(await v.readFile('/d/f.txt'), 'héllo')
    const bytes = await v.readFile('/d/f.txt', { format: 'bytes' })
    assert.ok(bytes instanceof Uint8Array)
    assert.equal(Buffer.from(bytes).toString(), 'héllo')
    assert.equal(await (await v.readFile('/d/f.txt', { format: 'blob' })).text(), 'héllo')
    assert.equal(await new Response(await v.readFile('/d/f.txt', { format: 'stream' })).text(), 'héllo')
    await v.writeFile('/bin.dat', new Uint8Array([0, 1, 2, 255]))
    assert.deepEqual([...await v.readFile('/bin.dat', { format: 'bytes' })], [0, 1, 2, 255])

    const all = await v.list('/', { depth: 2 })
    assert.deepEqual(all.map((e) => e.path).sort(), ['/bin.dat', '/d', '/d/f.txt'])
    assert.deepEqual((await v.list('/')).map((e) => e.path).sort(), ['/bin.dat', '/d'])
    assert.equal((await v.getInfo('/d/f.txt')).size, 6)
    assert.equal(await v.exists('/d/f.txt'), true)
    assert.equal(await v.exists('/nope'), false)
    const m = await v.updateMetadata('/d/f.txt', { mode: 0o640 })
    assert.deepEqual([m.mode, m.uid], [0o640, 1000])
    await assert.rejects(v.readFile('/nope'), NotFoundError)
    await assert.rejects(v.getInfo('/nope'), NotFoundError)
    await assert.rejects(v.readFile('/../etc/passwd'), InvalidArgumentError)
    await v.remove('/d')
    assert.equal(await v.exists('/d/f.txt'), false)
    await assert.rejects(v.remove('/d'), NotFoundError)
    await assert.rejects(v.updateMetadata('/d', { mode: 0o700 }), NotFoundError)

    // an aborted signal rejects with its reason (also one fired while the
    // data of a write is still being read)
    await assert.rejects(v.readFile('/bin.dat', { signal: AbortSignal.abort() }), { name: 'AbortError' })
    await assert.rejects(Volume.list({ signal: AbortSignal.abort() }), { name: 'AbortError' })
    const ac = new AbortController()
    const big = v.writeFile('/big.dat', new Blob(['x']), { signal: ac.signal })
    ac.abort()
    await assert.rejects(big, { name: 'AbortError' })
    const again = await Volume.connect(v.name)
    assert.equal(again.volumeId, v.volumeId)
    assert.deepEqual([...await again.readFile('/bin.dat', { format: 'bytes' })], [0, 1, 2, 255])
    again.close()
    await assert.rejects(again.readFile('/bin.dat'), /closed/)
  } finally {
    v.close()
  }
  assert.equal(await Volume.destroy(`${name}-n`), true)
  assert.equal(await Volume.destroy(`${name}-n`), false)
  await assert.rejects(Volume.connect(`${name}-n`), NotFoundError)
})

test('compat Volume: E2B\'s errors, mounted in a sandbox', async () => {
  const { Volume, VolumeError, VolumeNotFoundError, VolumePathNotFoundError, SandboxError, Sandbox, E2B } = compat
  await assert.rejects(Volume.connect('no-such-volume'), (e) =>
    e instanceof VolumeNotFoundError && e instanceof VolumeError && !(e instanceof SandboxError) &&
    e.message === 'Volume no-such-volume not found' && e.name === 'VolumeNotFoundError')
  await assert.rejects(Volume.getInfo('no-such-volume'), VolumeNotFoundError)
  assert.equal(await Volume.destroy('no-such-volume'), false)
  const vol = await Volume.create(`${name}-c`)
  assert.ok(vol instanceof Volume)
  assert.ok((await new E2B().Volume.list()).some((i) => i.volumeId === vol.volumeId))
  await assert.rejects(vol.readFile('/missing.txt'), (e) =>
    e instanceof VolumePathNotFoundError && e.message === 'Path /missing.txt not found')
  await assert.rejects(vol.list('/missing'), VolumePathNotFoundError)
  await assert.rejects(vol.remove('/missing'), VolumePathNotFoundError)
  assert.equal(await vol.exists('/missing.txt'), false)
  await vol.writeFile('/hello.txt', 'hi\n', { uid: 1000, gid: 1000 })
  await assert.rejects(vol.writeFile('/hello.txt', 'x'), (e) => e instanceof VolumeError && e.status === 409)
  const sb = await Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/mnt/data': vol } })
  try {
    await sb.commands.run('echo from-sandbox >> /mnt/data/hello.txt')
    assert.equal(await vol.readFile('/hello.txt'), 'hi\nfrom-sandbox\n')
    await assert.rejects(Volume.destroy(vol.volumeId), (e) =>
      e instanceof VolumeError && e.status === 409 && /^409: .*mounted by 1 running sandbox.*kill it first/.test(e.message) &&
      e.message.includes(sb.sandboxId))
  } finally {
    await sb.kill()
  }
  assert.equal(await Volume.destroy(vol.volumeId), true)
  await assert.rejects(vol.readFile('/hello.txt'))
})
