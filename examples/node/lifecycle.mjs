// Sandbox lifecycle: create with metadata, list, info, timeouts, pause (its
// mode and swap figures) and resume, connect by id, metrics, kill; errors are classes.
// SPDX-License-Identifier: Apache-2.0
import { Sandbox, SandboxNotFoundError } from 'agent-sandbox'

const sandbox = await Sandbox.create({ timeoutMs: 60_000, metadata: { owner: 'examples' }, envs: { STAGE: 'demo' } })
console.log(sandbox.sandboxId, (await sandbox.commands.run('echo $STAGE')).stdout.trim())
console.log((await Sandbox.list({ metadata: { owner: 'examples' } })).map((s) => s.sandboxId))
await sandbox.setTimeout(120_000)
const info = await sandbox.getInfo()
console.log(info.state, info.endAt.toISOString(), info.cpuCount, info.memoryMB)
console.log('paused', await sandbox.pause())
const paused = await sandbox.getInfo() // under the engine's --pause-swap: where the RAM went
console.log(paused.pauseMode, paused.swap ?? 'RAM kept (no --pause-swap)')
const again = await Sandbox.connect(sandbox.sandboxId) // resumed
console.log('running', await again.isRunning())
console.log((await again.getMetrics()).length, 'metric samples')
console.log('killed', await Sandbox.kill(sandbox.sandboxId))
await Sandbox.connect(sandbox.sandboxId).catch((e) => console.log(e instanceof SandboxNotFoundError, e.code))
