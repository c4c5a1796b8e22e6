// E2B's Template builder against the local engine: the stock `e2b` npm
// package, pointed at agent-sandboxd by E2B_API_URL / E2B_SANDBOX_URL /
// E2B_API_KEY only (docs/templates.md, "E2B's Template builder").
//
// Builds a template from `base` with a file copied in, an env var, a workdir
// and a start command with a ready check, then starts a sandbox of it and
// asks the server the start command runs.
//
//   npm install --prefix examples/e2b-template
//   export E2B_API_URL=http://127.0.0.1:49982 E2B_SANDBOX_URL=http://127.0.0.1:49982
//   export E2B_API_KEY=$(cat <state dir>/api_key)
//   node examples/e2b-template/build.mjs
// SPDX-License-Identifier: Apache-2.0
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Template, Sandbox, defaultBuildLogger, waitForURL } from 'e2b'

const here = path.dirname(fileURLToPath(import.meta.url))

const template = Template({ fileContextPath: here })
  .fromTemplate('base') // our templates: base, code-interpreter-v1, busybox, or one built before
  .copy('app/server.py', '/opt/app/server.py', { user: 'root', mode: 0o644 })
  .setEnvs({ GREETING: 'hello from a template built with E2B\'s builder' })
  .runCmd('python3 -c "import http.server"') // steps run as `user` unless told otherwise
  .setWorkdir('/opt/app')
  .setStartCmd('python3 server.py', waitForURL('http://127.0.0.1:8000/'))

const info = await Template.build(template, 'e2b-builder-example', {
  cpuCount: 1,
  memoryMB: 512,
  onBuildLogs: defaultBuildLogger(),
})
console.log(`built ${info.name}: template ${info.templateId}, build ${info.buildId}`)

const sbx = await Sandbox.create('e2b-builder-example', { timeoutMs: 60_000 })
try {
  const r = await sbx.commands.run('curl -s http://127.0.0.1:8000/ || python3 -c "import urllib.request as u; print(u.urlopen(\'http://127.0.0.1:8000/\').read().decode(), end=\'\')"')
  process.stdout.write(`the start command's server says: ${r.stdout}`)
} finally {
  await sbx.kill()
}
