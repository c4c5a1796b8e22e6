// Files: read and write (text, bytes, streams), many at once, list, info,
// rename, remove, watch a directory, signed URLs.
// SPDX-License-Identifier: Apache-2.0
import { Sandbox, FileNotFoundError } from 'agent-sandbox'

const sandbox = await Sandbox.create()
try {
  await sandbox.files.write('/home/user/notes/a.txt', 'hello') // parents are made
  console.log(await sandbox.files.read('/home/user/notes/a.txt'))
  const bytes = await sandbox.files.read('/home/user/notes/a.txt', { format: 'bytes' })
  console.log(bytes.length, 'bytes')
  // upload a stream (back-pressured), download one as a web ReadableStream
  const big = new Blob([new Uint8Array(1 << 20)])
  await sandbox.files.write('/tmp/big.bin', big.stream())
  let total = 0
  for await (const chunk of await sandbox.files.read('/tmp/big.bin', { format: 'stream' })) total += chunk.length
  console.log('streamed', total)
  await sandbox.files.write([{ path: '/home/user/notes/b.txt', data: 'b' }, { path: '/home/user/notes/c.txt', data: 'c' }])
  console.log((await sandbox.files.list('/home/user/notes')).map((e) => `${e.name} ${e.size}`))
  console.log(await sandbox.files.exists('/home/user/notes/b.txt'), (await sandbox.files.getInfo('/home/user/notes')).type)
  await sandbox.files.rename('/home/user/notes/c.txt', '/home/user/notes/d.txt')
  await sandbox.files.remove('/home/user/notes/d.txt')
  await sandbox.files.read('/home/user/notes/d.txt').catch((e) => console.log(e instanceof FileNotFoundError))

  const watcher = await sandbox.files.watchDir('/home/user/notes', (ev) => console.log('event', ev.type, ev.name))
  await sandbox.files.write('/home/user/notes/e.txt', 'e')
  await new Promise((r) => setTimeout(r, 500))
  await watcher.stop()
  // A polling watch: each getNewEvents() has every change made before it.
  const polled = await sandbox.files.watchDir('/home/user/notes', { polling: true })
  await sandbox.files.write('/home/user/notes/f.txt', 'f')
  console.log('polled', (await polled.getNewEvents()).map((ev) => `${ev.type} ${ev.name}`))
  await polled.stop()
  console.log(await sandbox.downloadUrl('/home/user/notes/a.txt'))
} finally {
  await sandbox.kill()
}
