// Sessions: remember a sandbox under a name and reconnect from any process
// or binding (the same store as Python's agent_sandbox.sessions).
// SPDX-License-Identifier: Apache-2.0
import { Sandbox, Session } from 'agent-sandbox'

const sandbox = await Sandbox.create()
await Session.save('example-triage', sandbox, { ticket: '42' })
const info = await Session.get('example-triage')
console.log(info.sandboxId === sandbox.sandboxId, info.metadata.get('ticket'))
console.log((await Session.list()).map((s) => s.name))
const back = await Session.load('example-triage') // in another process, too
console.log((await back.commands.run('echo back')).stdout.trim())
await Session.delete('example-triage')
await back.kill()
