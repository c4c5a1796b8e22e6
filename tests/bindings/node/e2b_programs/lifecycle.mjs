// E2B docs, sandbox lifecycle: timeout, info, metadata and listing,
// connect, pause and resume, isRunning, kill by id, errors.
import { Sandbox, SandboxNotFoundError, NotFoundError } from 'e2b'

const sandbox = await Sandbox.create({ timeoutMs: 60_000, metadata: { userId: '123' } })
await sandbox.setTimeout(120_000)
const info = await sandbox.getInfo()
console.log(info.templateId, info.metadata.userId, info.state, info.endAt > info.startedAt)
const paginator = Sandbox.list({ query: { metadata: { userId: '123' }, state: ['running'] } })
const running = await paginator.nextItems()
console.log(running.length, running[0].sandboxId === sandbox.sandboxId, paginator.hasNext)
console.log(sandbox.getHost(3000) === `3000-${sandbox.sandboxId}.${sandbox.sandboxDomain}`)
const same = await Sandbox.connect(sandbox.sandboxId)
console.log((await same.commands.run('echo connected')).stdout.trim())
await sandbox.files.write('/home/user/state', 'kept')
console.log('paused', await sandbox.pause())
console.log('running', await sandbox.isRunning())
const resumed = await Sandbox.connect(sandbox.sandboxId)
console.log(await resumed.files.read('/home/user/state'))
console.log((await Sandbox.getInfo(sandbox.sandboxId)).state)
console.log('killed', await Sandbox.kill(sandbox.sandboxId), await Sandbox.kill(sandbox.sandboxId))
try {
  await Sandbox.connect(sandbox.sandboxId)
} catch (err) {
  console.log('gone', err instanceof SandboxNotFoundError || err instanceof NotFoundError)
}
