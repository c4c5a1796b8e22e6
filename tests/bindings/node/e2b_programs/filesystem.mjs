// E2B docs, filesystem: read and write, many files, list, info, exists,
// rename, remove, make a directory, watch a directory.
import { Sandbox, FileType, FilesystemEventType, NotFoundError } from 'e2b'

const sandbox = await Sandbox.create()
await sandbox.files.write('/home/user/hello.txt', 'Hello, world!')
console.log(await sandbox.files.read('/home/user/hello.txt'))
const bytes = await sandbox.files.read('/home/user/hello.txt', { format: 'bytes' })
console.log(bytes instanceof Uint8Array, bytes.length)
const blob = await sandbox.files.read('/home/user/hello.txt', { format: 'blob' })
console.log(await blob.text())
const stream = await sandbox.files.read('/home/user/hello.txt', { format: 'stream' })
let n = 0
for await (const chunk of stream) n += chunk.length
console.log('streamed', n)

const written = await sandbox.files.write([
  { path: '/home/user/a.txt', data: 'A' },
  { path: '/home/user/b.txt', data: new TextEncoder().encode('B').buffer }
])
console.log(written.map((w) => w.name).sort().join(','))
const entries = await sandbox.files.list('/home/user')
console.log(entries.filter((e) => e.name.endsWith('.txt')).map((e) => `${e.name}:${e.type === FileType.FILE}`).sort().join(' '))
const info = await sandbox.files.getInfo('/home/user/a.txt')
console.log(info.name, info.size, info.type, info.modifiedTime instanceof Date)
console.log(await sandbox.files.exists('/home/user/a.txt'), await sandbox.files.exists('/home/user/nope'))
console.log((await sandbox.files.rename('/home/user/a.txt', '/home/user/c.txt')).path)
console.log(await sandbox.files.makeDir('/home/user/dir'), await sandbox.files.makeDir('/home/user/dir'))
await sandbox.files.remove('/home/user/c.txt')
try {
  await sandbox.files.read('/home/user/c.txt')
} catch (err) {
  console.log('missing', err instanceof NotFoundError)
}

const events = []
const handle = await sandbox.files.watchDir('/home/user/dir', (event) => events.push(event), { recursive: true })
await sandbox.files.write('/home/user/dir/watched.txt', 'x')
for (let i = 0; i < 200 && !events.some((e) => e.type === FilesystemEventType.WRITE); i++) await new Promise((r) => setTimeout(r, 50))
await handle.stop()
console.log('watched', events.some((e) => e.name === 'watched.txt' && e.type === FilesystemEventType.WRITE))
await sandbox.kill()
