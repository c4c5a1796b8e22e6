// Quickstart: a sandbox, a command, code, a named command, files, a URL.
// Run: node examples/node/quickstart.mjs  (the local engine is started on
// demand as root; or set E2B_API_KEY + E2B_DOMAIN for a remote one)
// SPDX-License-Identifier: Apache-2.0
import { Sandbox } from 'agent-sandbox'

const sandbox = await Sandbox.create({ template: 'python-base' })
try {
  const proc = await sandbox.commands.run("echo 'Hello from sandbox!'")
  console.log(proc.stdout.trim()) // Hello from sandbox!
  console.log(proc.exitCode) // 0
  const result = await sandbox.runCode('print(2 ** 10)')
  console.log(result.logs.stdout.join('').trim()) // 1024
  console.log(await sandbox.run('hello', { name: 'Alice' })) // Hello, Alice! (python-base's commands.py)
  await sandbox.files.write('/tmp/data.txt', 'content')
  console.log(await sandbox.files.read('/tmp/data.txt')) // content
  console.log(sandbox.getUrl(3000))
} finally {
  await sandbox.kill() // (with TypeScript or Node >= 22: `await using sandbox = ...` does this)
}
