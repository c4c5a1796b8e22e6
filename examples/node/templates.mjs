// Templates: build node-hello (examples/templates/node-hello, staged by the
// node-binding target into build/examples/templates/node-hello), create a
// sandbox from it and call the commands its commands.mjs serves.
// Run: node examples/node/templates.mjs [template dir]
// SPDX-License-Identifier: Apache-2.0
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox, Template, CommandFailedError } from 'agent-sandbox'

const here = path.dirname(fileURLToPath(import.meta.url))
const dir = process.argv[2] || path.join(here, '..', '..', 'build', 'examples', 'templates', 'node-hello')
const info = await Template.build(dir) // returns once ready; cached by its inputs
console.log(info.name, info.cached ? 'cached' : 'built')
const sandbox = await Sandbox.create({ template: info.name })
try {
  console.log(await sandbox.run('hello', { name: 'Bob' }))
  console.log(await sandbox.run('add', { a: 40, b: 2 }))
  console.log((await sandbox.listCommands()).map((c) => c.name))
  await sandbox.run('stats', { values: [] }).catch((e) => console.log(e instanceof CommandFailedError, e.type, e.message))
} finally {
  await sandbox.kill()
}
console.log((await Template.list()).map((t) => t.name))
