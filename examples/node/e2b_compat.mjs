// An E2B program on agent-sandbox: only the import changed
// (was: import { Sandbox } from '@e2b/code-interpreter').
// SPDX-License-Identifier: Apache-2.0
import { Sandbox } from 'agent-sandbox/compat/code-interpreter'

const sandbox = await Sandbox.create()
const execution = await sandbox.runCode('x = 1; x += 1; x')
console.log(execution.text) // outputs 2
const result = await sandbox.commands.run('echo "Hello from E2B!"')
console.log(result.stdout)
await sandbox.kill()
