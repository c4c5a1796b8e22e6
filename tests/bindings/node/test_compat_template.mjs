// node.compat_template: E2B's Template builder through agent-sandbox/compat
// (import { Template, ... } from 'e2b' with only the specifier switched):
// a builder chain built for real from `base` (COPY from the file context
// less fileIgnorePatterns, RUN, ENV, WORKDIR, a start command with a ready
// check) whose sandbox sees the file; the build's log entries in order; a failing step rejects with
// BuildError whose stack points at the runCmd line that added it; the
// background build and its status; tags; the toJSON / toDockerfile shapes
// and E2B's argument checks.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { engine as startEngine } from './helpers.mjs'

let engine, e2b, ctx
const name = `nd-ctpl-${process.pid}`
const self = fileURLToPath(import.meta.url)
const lineOf = (marker) => fs.readFileSync(self, 'utf8').split('\n').findIndex((l) => l.includes(marker) && !l.includes('lineOf(')) + 1

before(async () => {
  engine = await startEngine('ctpl')
  e2b = await import('agent-sandbox/compat')
  ctx = fs.mkdtempSync(path.join(os.tmpdir(), 'nd-ctpl-'))
  fs.mkdirSync(path.join(ctx, 'folder'))
  fs.writeFileSync(path.join(ctx, 'folder', 'hello.txt'), 'from the compat context\n')
  fs.writeFileSync(path.join(ctx, 'folder', 'skip.log'), 'left out by fileIgnorePatterns\n')
})

// The templates go with the engine's own state directory; its stop also
// ends the build the last test leaves running.
after(async () => {
  fs.rmSync(ctx, { recursive: true, force: true })
  await engine.stop()
})

test('a builder chain builds; its sandbox has the file; logs start, stream and end', async () => {
  const { Template, waitForFile, LogEntry, LogEntryStart, LogEntryEnd } = e2b
  const t = Template({ fileContextPath: ctx, fileIgnorePatterns: ['**/*.log'] })
    .fromBaseImage()
    .copy('folder/*', '/home/user/folder/', { mode: 0o644 })
    .setEnvs({ GREETING: 'hi' })
    .runCmd('cat /home/user/folder/hello.txt && echo "env $GREETING"')
    .makeDir('/home/user/made')
    .setWorkdir('/home/user')
    .setStartCmd('touch /tmp/started && exec sleep infinity', waitForFile('/tmp/started'))
  const logs = []
  const info = await Template.build(t, `${name}:v1`, { cpuCount: 1, memoryMB: 256, onBuildLogs: (l) => logs.push(l) })
  assert.equal(info.name, `${name}:v1`)
  assert.equal(info.alias, `${name}:v1`)
  assert.ok(info.templateId && info.buildId)
  assert.ok(info.tags.includes('v1'), JSON.stringify(info))
  assert.ok(logs[0] instanceof LogEntryStart && logs.at(-1) instanceof LogEntryEnd)
  assert.ok(logs.every((l) => l instanceof LogEntry && l.timestamp instanceof Date))
  const msgs = logs.map((l) => l.message)
  assert.ok(msgs.some((m) => /^Template created with ID: [^,]+, Build ID: /.test(m)), msgs.join('\n'))
  assert.ok(msgs.includes('from the compat context'), msgs.join('\n'))
  assert.ok(msgs.includes('env hi'), msgs.join('\n'))
  assert.equal(await Template.exists(name), true)
  assert.equal(await Template.exists(`${name}-none`), false)

  const sb = await e2b.Sandbox.create(name, { timeoutMs: 60_000 })
  try {
    assert.equal((await sb.commands.run('cat folder/hello.txt; ls folder; test -d made && test -f /tmp/started && echo ok')).stdout, 'from the compat context\nhello.txt\nok\n')
  } finally {
    await sb.kill()
  }

  // tags of that build
  const tagInfo = await Template.assignTags(`${name}:v1`, ['stable', 'prod'])
  assert.deepEqual(tagInfo.tags, ['stable', 'prod'])
  assert.equal(tagInfo.buildId, info.buildId)
  let tags = await Template.getTags(info.templateId)
  assert.ok(['v1', 'stable', 'prod'].every((x) => tags.some((g) => g.tag === x && g.buildId === info.buildId && g.createdAt instanceof Date)), JSON.stringify(tags))
  await Template.removeTags(name, 'prod')
  tags = await Template.getTags(info.templateId)
  assert.ok(!tags.some((g) => g.tag === 'prod') && tags.some((g) => g.tag === 'stable'))
  await assert.rejects(Template.getTags(`${name}-none`), (e) => e instanceof e2b.TemplateError)
})

test('a failing step rejects with BuildError pointing at its line; background build and status', async () => {
  const { Template, BuildError } = e2b
  const t = Template()
    .fromTemplate('base')
    .runCmd('echo before')
    .runCmd('echo nope; exit 7') // FAILING-STEP
  const logs = []
  await assert.rejects(Template.build(t, `${name}-bad`, { onBuildLogs: (l) => logs.push(l) }), (e) => {
    assert.ok(e instanceof BuildError, String(e))
    assert.match(e.message, /exit code 7/)
    // E2B's form: the stack is the call site's frames, the first the runCmd
    assert.ok(e.stack.split('\n')[0].endsWith(`${import.meta.url}:${lineOf('// FAILING-STEP')}:6)`), e.stack)
    return true
  })
  assert.equal(logs.at(-1).message, 'Build finished')
  assert.ok(logs.some((l) => l.message === 'nope'))
  // a COPY source that matches nothing: refused before the build, at its copy()
  const nothing = Template({ fileContextPath: ctx }).fromTemplate('base').runCmd('true')
    .copy('no-such-file', '/x') // NOTHING-MATCHES
  await assert.rejects(Template.build(nothing, `${name}-bad`), (e) =>
    e instanceof BuildError && /no-such-file/.test(e.message) &&
    e.stack.split('\n')[0].endsWith(`${import.meta.url}:${lineOf('// NOTHING-MATCHES')}:6)`))

  // in the background: resolves once started; the status follows it
  const bg = Template().fromTemplate(name).runCmd('echo background')
  const info = await Template.buildInBackground(bg, `${name}-bg`, { cpuCount: 1, memoryMB: 256 })
  assert.ok(info.templateId && info.buildId)
  let st
  const seen = []
  for (let i = 0; i < 1200; i++) {
    st = await Template.getBuildStatus(info, { logsOffset: seen.length })
    seen.push(...st.logs)
    if (st.status === 'ready' || st.status === 'error') break
    await new Promise((r) => setTimeout(r, 100))
  }
  assert.equal(st.status, 'ready', JSON.stringify(st))
  assert.equal(st.buildID, info.buildId)
  assert.equal(st.templateID, info.templateId)
  assert.ok(seen.includes('background'), seen.join('\n'))
})

test('toJSON, toDockerfile, fromDockerfile and the argument checks', async () => {
  const { Template, waitForPort, waitForURL, waitForTimeout, waitForProcess, waitForFile, TemplateError, InvalidArgumentError } = e2b
  const t = Template({ fileContextPath: ctx })
    .fromUbuntuImage('24.04')
    .copy('folder/hello.txt', '/app/', { user: 'root', mode: 0o755 })
    .runCmd(['apt-get update', 'true'], { user: 'root' })
    .setEnvs({ A: '1', B: '2' })
    .skipCache()
    .setWorkdir('/app')
  assert.equal(Template.toDockerfile(t), 'FROM ubuntu:24.04\nCOPY folder/hello.txt /app/\nRUN apt-get update && true\nENV A=1 B=2\nWORKDIR /app\n')
  assert.deepEqual(JSON.parse(await Template.toJSON(t)), {
    steps: [
      { type: 'COPY', args: ['folder/hello.txt', '/app/', 'root', '0755'], force: false },
      { type: 'RUN', args: ['apt-get update && true', 'root'], force: false },
      { type: 'ENV', args: ['A', '1', 'B', '2'], force: false },
      { type: 'WORKDIR', args: ['/app'], force: true }
    ],
    force: false,
    fromImage: 'ubuntu:24.04'
  })
  assert.throws(() => Template.toDockerfile(Template().fromTemplate('base')), /Cannot convert template built from another template/)

  const d = Template().fromDockerfile('FROM e2bdev/base\nENV X=1 \\\n  Y="two words"\nRUN echo a \\\n && echo b\nCOPY --chown=user a.txt b.txt /dst/\nCMD ["node", "app.js"]\n')
  const j = JSON.parse(await Template.toJSON(d))
  assert.equal(j.fromImage, 'e2bdev/base')
  assert.deepEqual(j.steps.map((s) => [s.type, ...s.args]), [
    ['USER', 'root'], ['WORKDIR', '/'], ['ENV', 'X', '1', 'Y', 'two words'], ['RUN', 'echo a   && echo b'],
    ['COPY', 'a.txt', '/dst/', 'user', ''], ['COPY', 'b.txt', '/dst/', 'user', ''], ['USER', 'user'], ['WORKDIR', '/home/user']])
  assert.equal(j.startCmd, 'node app.js')
  assert.equal(j.readyCmd, 'sleep 20')

  assert.equal(waitForPort(8000).getCmd(), '[ -n "$(ss -Htuln sport = :8000)" ]')
  assert.equal(waitForURL('http://localhost:3000/h').getCmd(), 'curl -s -o /dev/null -w "%{http_code}" http://localhost:3000/h | grep -q "200"')
  assert.equal(waitForTimeout(500).getCmd(), 'sleep 1')
  assert.equal(waitForProcess('nginx').getCmd(), 'pgrep nginx > /dev/null')
  assert.equal(waitForFile("/tmp/it's here").getCmd(), `[ -f '/tmp/it'"'"'s here' ]`)

  assert.throws(() => Template().fromBaseImage().copy('/etc/passwd', '/x'), (e) => e instanceof TemplateError && /absolute paths are not allowed/.test(e.message))
  assert.throws(() => Template().fromBaseImage().copy('a/../../b', '/x'), (e) => e instanceof TemplateError && /escapes the context directory/.test(e.message))
  assert.throws(() => Template().fromImage('x', { username: 'u' }), InvalidArgumentError)
  await assert.rejects(Template.build(Template().fromBaseImage(), {}), (e) => e instanceof TemplateError && e.message === 'Name must be provided')
  // the default file context is the caller's directory
  assert.equal(Template().fileContextPath, path.dirname(self))
})

test('client.Template carries its options; an AbortSignal stops following a build', async () => {
  const { E2B, Template, AuthenticationError, TemplateBase } = e2b
  const client = new E2B({ apiKey: 'e2b_0000000000000000000000000000000000000000' })
  assert.ok(client.Template() instanceof TemplateBase)
  await assert.rejects(client.Template.exists('base'), AuthenticationError)
  const { exists } = Template // statics stay bound when taken off the class
  assert.equal(await exists('base'), true)

  // aborted once the build has started (last: the engine goes on building,
  // and its stop waits for the step: 20 s is the margin for the cancel)
  const ac = new AbortController()
  const t = Template().fromTemplate('base').skipCache().runCmd('sleep 20')
  await assert.rejects(Template.build(t, `${name}-abort`, {
    signal: ac.signal,
    onBuildLogs: (l) => { if (l.message === 'Starting building...') ac.abort() }
  }), (e) => e.name === 'AbortError')
})
