// E2B docs, volumes: create, write and read files without a sandbox, mount
// in two sandboxes, list, info, metadata, the error classes, destroy.
import { Sandbox, Volume, VolumeFileType, VolumeError, VolumeNotFoundError, VolumePathNotFoundError } from 'e2b'

const name = `e2b-program-vol-${process.pid}`
const stat = (e) => JSON.stringify([e.name, e.type, e.path, e.size, e.mode, e.uid, e.gid, e.mtime instanceof Date])
const vol = await Volume.create(name)
console.log(vol.name === name, typeof vol.volumeId, vol.token.length > 0)
console.log(stat(await vol.makeDir('/notes', { uid: 1000, gid: 1000 })))
console.log(stat(await vol.writeFile('/notes/hello.txt', 'Hello, volume!\n', { uid: 1000, gid: 1000, mode: 0o640 })))
console.log(await vol.readFile('/notes/hello.txt'))
const bytes = await vol.readFile('/notes/hello.txt', { format: 'bytes' })
console.log(bytes instanceof Uint8Array, bytes.length)
console.log(await (await vol.readFile('/notes/hello.txt', { format: 'blob' })).text())
let n = 0
for await (const chunk of await vol.readFile('/notes/hello.txt', { format: 'stream' })) n += chunk.length
console.log('streamed', n)
try {
  await vol.writeFile('/notes/hello.txt', 'again')
} catch (e) {
  console.log(e.name, e instanceof VolumeError, e.message.startsWith('409: '))
}
await vol.writeFile('/notes/hello.txt', 'Hello again!\n', { uid: 1000, gid: 1000, force: true })

const a = await Sandbox.create({ volumeMounts: { '/mnt/data': vol } })
const b = await Sandbox.create({ volumeMounts: { '/home/user/data': name } })
await a.commands.run('echo from-a >> /mnt/data/notes/hello.txt')
console.log((await b.commands.run('cat /home/user/data/notes/hello.txt; stat -c %U /home/user/data/notes/hello.txt')).stdout)
try {
  await Volume.destroy(vol.volumeId)
} catch (e) {
  console.log(e.name, e instanceof VolumeError, e.message.startsWith('409: ') && e.message.includes('mounted by 2 running sandboxes'))
}
await a.kill()
await b.kill()

console.log((await vol.list('/', { depth: 2 })).map((e) => `${e.path}:${e.type === VolumeFileType.DIRECTORY ? 'dir' : e.type}`).sort().join(' '))
const info = await vol.getInfo('/notes/hello.txt')
console.log(info.size, info.uid, info.mode.toString(8))
console.log(stat(await vol.updateMetadata('/notes/hello.txt', { mode: 0o600 })))
console.log(await vol.exists('/notes/hello.txt'), await vol.exists('/nope'))
for (const call of [() => vol.readFile('/nope'), () => vol.getInfo('/nope'), () => vol.list('/nope'), () => vol.remove('/nope')]) {
  try {
    await call()
  } catch (e) {
    console.log(e.name, e instanceof VolumePathNotFoundError, e instanceof VolumeError, e.message)
  }
}
await vol.remove('/notes')
console.log(await vol.exists('/notes'))
const again = await Volume.connect(vol.volumeId)
console.log(again.name === name, again.token === vol.token)
const listed = (await Volume.list()).filter((v) => v.name === name)
console.log(listed.length, listed[0].volumeId === vol.volumeId)
const got = await Volume.getInfo(vol.volumeId)
console.log(got.name === name, got.token === vol.token)
console.log(await Volume.destroy(vol.volumeId), await Volume.destroy(vol.volumeId))
try {
  await Volume.connect('no-such-volume')
} catch (e) {
  console.log(e.name, e instanceof VolumeNotFoundError, e instanceof VolumeError, e.message)
}
