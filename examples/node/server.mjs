// agent-sandbox/server in a running sandbox: ship a commands file and the
// server SDK into a base sandbox, start it on port 9001 and call it (a
// template does the same from its start command: examples/templates/node-hello).
// Run: node examples/node/server.mjs [staged node-hello dir]   (after the
// node-binding target)
// SPDX-License-Identifier: Apache-2.0
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox } from 'agent-sandbox'

const here = path.dirname(fileURLToPath(import.meta.url))
const staged = process.argv[2] || path.join(here, '..', '..', 'build', 'examples', 'templates', 'node-hello')
const sandbox = await Sandbox.create()
try {
  const pkg = '/home/user/app/node_modules/agent-sandbox'
  for (const f of ['package.json', 'lib/server.js', 'lib/server.mjs', 'build/agentsandbox_server.node'])
    await sandbox.files.write(`${pkg}/${f}`, readFileSync(path.join(staged, 'node_modules', 'agent-sandbox', f)))
  await sandbox.files.write('/home/user/app/lib/libagentsandbox-server.so.1', readFileSync(path.join(staged, 'sdk', 'lib', 'libagentsandbox-server.so.1')))
  await sandbox.files.write('/home/user/app/commands.mjs', `
import { command, start } from 'agent-sandbox/server'
command('shout', { args: { text: 'string' } }, ({ text }) => text.toUpperCase())
await start(9001)
`)
  const server = await sandbox.commands.run('cd /home/user/app && LD_LIBRARY_PATH=lib exec node commands.mjs', { background: true, envs: { ASB_SERVER_TOKEN: '' } })
  for (let i = 0; i < 100; i++) {
    if ((await sandbox.commands.run('ss -ltn | grep -q :9001')).exitCode === 0) break
    await new Promise((r) => setTimeout(r, 100))
  }
  console.log(await sandbox.run('shout', { text: 'hello' }, { port: 9001 }))
  await server.kill()
} finally {
  await sandbox.kill()
}
