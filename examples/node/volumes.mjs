// Volumes: a persistent filesystem two sandboxes mount at once, whose files
// are also read and written without a sandbox, and which outlives them
// (docs/volumes.md). E2B code does the same with `Volume` from
// 'agent-sandbox/compat' (errors: VolumeNotFoundError, ...).
// SPDX-License-Identifier: Apache-2.0
import { Sandbox, Volume, NotFoundError } from 'agent-sandbox'

const vol = await Volume.create(`example-data-${process.pid}`, { sizeMB: 64 })
try {
  await vol.makeDir('/notes', { uid: 1000, gid: 1000 })
  await vol.writeFile('/notes/hello.txt', 'hello from the host\n', { uid: 1000, gid: 1000 })
  const a = await Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/mnt/data': vol } })
  const b = await Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/home/user/data': vol.name } })
  try {
    await a.commands.run('echo from sandbox a >> /mnt/data/notes/hello.txt')
    console.log((await b.commands.run('cat /home/user/data/notes/hello.txt')).stdout.trimEnd())
    await Volume.destroy(vol.volumeId).catch((e) => console.log('in use:', e.message))
  } finally {
    await a.kill()
    await b.kill()
  }
  // still there with the sandboxes gone
  for (const e of await vol.list('/', { depth: 2 })) console.log(e.type, e.path, e.size, `uid ${e.uid}`, e.mode.toString(8))
  console.log(await vol.readFile('/notes/hello.txt'))
  await vol.getInfo('/nope').catch((e) => console.log('missing:', e instanceof NotFoundError))
} finally {
  vol.close()
  console.log('destroyed', await Volume.destroy(vol.name))
}
