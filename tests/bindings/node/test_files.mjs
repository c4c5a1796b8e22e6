// node.files: read (text, bytes, blob, web stream), write (string, bytes,
// Blob, ReadableStream, many), list, exists, getInfo, remove, rename,
// makeDir, watchDir (callback and async iteration), signed URLs, errors.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { engine as startEngine, eventually } from './helpers.mjs'

let engine, lib, sbx

before(async () => {
  engine = await startEngine('files')
  lib = await import('agent-sandbox')
  sbx = await lib.Sandbox.create({ timeoutMs: 300_000 })
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
  await engine.stop()
})

test('write and read: text, bytes, blob, gzip', async () => {
  const e = await sbx.files.write('/home/user/d/a.txt', 'h\u00e9llo')
  assert.equal(e.name, 'a.txt')
  assert.equal(e.path, '/home/user/d/a.txt')
  assert.equal(e.type, lib.FileType.FILE)
  assert.equal(await sbx.files.read('/home/user/d/a.txt'), 'h\u00e9llo')
  const bin = new Uint8Array(256).map((_, i) => i)
  await sbx.files.write('bin.dat', bin) // relative: the user's home
  const back = await sbx.files.read('/home/user/bin.dat', { format: 'bytes' })
  assert.ok(back instanceof Uint8Array)
  assert.deepEqual(Buffer.from(back), Buffer.from(bin))
  const blob = await sbx.files.read('bin.dat', { format: 'blob' })
  assert.equal(blob.size, 256)
  await sbx.files.write('/tmp/b.txt', new Blob(['from ', 'a blob']))
  assert.equal(await sbx.files.read('/tmp/b.txt', { gzip: true }), 'from a blob')
  await sbx.files.write('/tmp/ab.txt', new TextEncoder().encode('array buffer').buffer)
  assert.equal(await sbx.files.read('/tmp/ab.txt'), 'array buffer')
})

test('streams: a ReadableStream in, a web ReadableStream out', async () => {
  const chunk = Buffer.alloc(64 * 1024, 'x')
  let i = 0
  const src = new ReadableStream({
    pull(c) {
      if (i++ < 40) c.enqueue(new Uint8Array(chunk))
      else c.close()
    }
  })
  const e = await sbx.files.write('/tmp/big.bin', src)
  assert.equal(e.name, 'big.bin')
  assert.equal((await sbx.files.getInfo('/tmp/big.bin')).size, 40 * chunk.length)
  const stream = await sbx.files.read('/tmp/big.bin', { format: 'stream' })
  assert.ok(stream instanceof ReadableStream)
  let total = 0
  for await (const c of stream) {
    assert.ok(c instanceof Uint8Array)
    total += c.length
  }
  assert.equal(total, 40 * chunk.length)
  // a stream cancelled half-way ends the transfer
  const s2 = await sbx.files.read('/tmp/big.bin', { format: 'stream' })
  const r = s2.getReader()
  await r.read()
  await r.cancel()
  await assert.rejects(sbx.files.read('/tmp/missing', { format: 'stream' }), lib.FileNotFoundError)
})

test('write many, list, exists, getInfo, rename, makeDir, remove', async () => {
  const es = await sbx.files.write([{ path: '/tmp/m/one', data: '1' }, { path: '/tmp/m/two', data: new Uint8Array([50]) }])
  assert.deepEqual(es.map((x) => x.name).sort(), ['one', 'two'])
  assert.deepEqual((await sbx.files.writeFiles([{ path: '/tmp/m/three', data: '3' }])).map((x) => x.path), ['/tmp/m/three'])
  assert.deepEqual((await sbx.files.list('/tmp/m')).map((x) => x.name).sort(), ['one', 'three', 'two'])
  assert.equal(await sbx.files.exists('/tmp/m/one'), true)
  assert.equal(await sbx.files.exists('/tmp/m/nope'), false)
  const info = await sbx.files.getInfo('/tmp/m/two')
  assert.equal(info.size, 1)
  assert.ok(info.modifiedTime instanceof Date)
  assert.match(info.permissions, /^-rw/)
  assert.equal((await sbx.files.rename('/tmp/m/one', '/tmp/m/uno')).path, '/tmp/m/uno')
  assert.equal(await sbx.files.makeDir('/tmp/m/sub/deep'), true)
  assert.equal(await sbx.files.makeDir('/tmp/m/sub/deep'), false)
  const deep = await sbx.files.list('/tmp/m', { depth: 3 })
  assert.ok(deep.some((x) => x.path === '/tmp/m/sub/deep' && x.type === lib.FileType.DIR))
  await sbx.files.remove('/tmp/m')
  assert.equal(await sbx.files.exists('/tmp/m'), false)
  await assert.rejects(sbx.files.read('/tmp/m/uno'), (e) => e instanceof lib.FileNotFoundError && e instanceof lib.NotFoundError && e.code === 'ASB_ENOTFOUND')
  // E2B's envd writes as root and gives what it made to the user
  await sbx.files.write('/etc/e2b-like/new.txt', 'x')
  assert.equal((await sbx.files.getInfo('/etc/e2b-like/new.txt')).owner, 'user')
  assert.equal((await sbx.files.getInfo('/etc/e2b-like')).owner, 'user')
  await sbx.files.write('/tmp/own', 'x', { user: 'root' })
  assert.equal((await sbx.files.getInfo('/tmp/own')).owner, 'root')
})

test('watchDir polling: each getNewEvents has every change made before it, and only new ones', async () => {
  await sbx.files.makeDir('/tmp/pw')
  const h = await sbx.files.watchDir('/tmp/pw', { polling: true, recursive: true })
  assert.ok(h instanceof lib.PollingWatchHandle)
  assert.deepEqual(await h.getNewEvents(), [])
  for (let i = 0; i < 5; i++) {
    await sbx.files.write(`/tmp/pw/f${i}`, 'x')
    const kinds = new Set((await h.getNewEvents()).map((e) => `${e.type} ${e.name}`))
    assert.ok(kinds.has(`${lib.FilesystemEventType.CREATE} f${i}`) && kinds.has(`${lib.FilesystemEventType.WRITE} f${i}`), [...kinds].join())
  }
  await sbx.commands.run('mkdir /tmp/pw/d && echo 2 > /tmp/pw/d/two')
  const names = (await h.getNewEvents()).map((e) => e.name)
  assert.ok(names.includes('d') && names.includes('d/two'), names.join())
  assert.deepEqual(await h.getNewEvents(), [])
  await h.stop()
  assert.deepEqual(await h.getNewEvents(), [])
})

test('watchDir: callback, async iteration, entries, stop', async () => {
  await sbx.files.makeDir('/tmp/w')
  const events = []
  const h = await sbx.files.watchDir('/tmp/w', (e) => events.push(e), { recursive: true, includeEntry: true })
  assert.ok(h instanceof lib.WatchHandle)
  await sbx.files.write('/tmp/w/new.txt', 'x')
  await eventually(() => events.some((e) => e.name === 'new.txt' && e.type === lib.FilesystemEventType.WRITE))
  const withEntry = events.find((e) => e.name === 'new.txt' && e.entry)
  assert.ok(withEntry && withEntry.entry.path === '/tmp/w/new.txt')
  const seen = []
  const iterating = (async () => {
    for await (const e of h) {
      seen.push(e.name)
      if (e.name === 'last') break
    }
  })()
  await sbx.files.write('/tmp/w/last', 'x')
  await iterating
  assert.ok(seen.includes('new.txt') && seen.includes('last'))
  let exited = 0
  const h2 = await sbx.files.watchDir('/tmp/w', undefined, { onExit: () => { exited++ } })
  await h.stop()
  await h2.stop()
  assert.equal(exited, 1)
  await assert.rejects(sbx.files.watchDir('/tmp/none', () => {}), lib.NotFoundError)
  const boom = new Error('watch boom')
  let thrown = 0
  const h3 = await sbx.files.watchDir('/tmp/w', () => { thrown++; throw boom }, { onExit: (err) => { exited += err === boom ? 10 : 100 } })
  await sbx.files.write('/tmp/w/trigger', 'x')
  await eventually(() => exited === 11)
  assert.equal(exited, 11, 'onExit got the callback\'s error')
  assert.equal(thrown, 1)
  await h3.stop()
})

// The public URL names the sandbox's host (<port>-<id>.localhost:<engine
// port>); send it to the engine's loopback address with that Host.
function viaEngine(url, method, body, type) {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: engine.port, path: u.pathname + u.search, method,
      headers: Object.assign({ host: u.host }, type ? { 'content-type': type } : {}) }, (res) => {
      let data = ''
      res.on('data', (d) => { data += d })
      res.on('end', () => resolve({ status: res.statusCode, body: data }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

test('signed URLs', async () => {
  await sbx.files.write('/home/user/dl.txt', 'download me')
  const url = await sbx.downloadUrl('/home/user/dl.txt')
  assert.match(url, new RegExp(`^http://49983-${sbx.sandboxId}\\.`))
  assert.deepEqual(await viaEngine(url, 'GET'), { status: 200, body: 'download me' })
  const up = await sbx.uploadUrl('/home/user/up.txt')
  const r = await viaEngine(up, 'POST', 'uploaded', 'application/octet-stream')
  assert.equal(r.status, 200, r.body)
  assert.equal(await sbx.files.read('/home/user/up.txt'), 'uploaded')
})
