// E2B's Template builder on agent-sandbox: an E2B JS program whose only
// change is the import specifier (was: from 'e2b'). The steps are built by
// the local engine; COPY sources come from the template's file context
// (by default the directory of the file that calls Template()), packed and
// uploaded by the library. docs/node-compat.md, "Template builder".
// Run: node examples/node/template_builder.mjs
// SPDX-License-Identifier: Apache-2.0
import { Template, Sandbox, BuildError, waitForFile, defaultBuildLogger } from 'agent-sandbox/compat'

const template = Template() // file context: this file's directory
  .fromBaseImage() // E2B's e2bdev/base, which here is the `base` template
  .copy('template_builder.mjs', '/home/user/app/')
  .setEnvs({ GREETING: 'Hello' })
  .runCmd('echo "$GREETING from the build" > /home/user/built.txt')
  .setWorkdir('/home/user')
  .setStartCmd('touch /tmp/ready && exec sleep infinity', waitForFile('/tmp/ready')) // a server, in real life

console.log(Template.toDockerfile(template))

const info = await Template.build(template, 'example-builder:v1', {
  cpuCount: 1,
  memoryMB: 512,
  onBuildLogs: defaultBuildLogger() // one line per log entry
})
console.log('built', info.name, 'tags', info.tags.join(','))

const sandbox = await Sandbox.create('example-builder')
try {
  const r = await sandbox.commands.run('cat built.txt; ls app; test -f /tmp/ready && echo ready')
  console.log(r.stdout.trim())
} finally {
  await sandbox.kill()
}

// A step that fails rejects with BuildError; its stack points at the line
// of the builder call that added the step.
const broken = Template().fromTemplate('example-builder').runCmd('echo oops; exit 3')
try {
  await Template.build(broken, 'example-broken')
} catch (e) {
  console.log('failed:', e instanceof BuildError, e.message.split('\n')[0])
  console.log('at:', e.stack.split('\n').find((l) => l.trim().startsWith('at ')).trim())
}
