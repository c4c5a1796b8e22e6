// node.template_builder: E2B's Template builder steps through the addon's
// asb_templates_build_steps (Template.buildSteps): a COPY from a local
// context directory and a RUN whose output is in the log and in a sandbox
// of the result; the status of the build from an offset; exists; a failing
// step's BuildError with the build's state (the step, its log); onLog
// streaming each line as it comes; tags assigned, listed and removed.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { engine as startEngine } from './helpers.mjs'

let engine, lib, ctx
const name = `nd-steps-${process.pid}`

before(async () => {
  engine = await startEngine('tbuild')
  lib = await import('agent-sandbox')
  ctx = fs.mkdtempSync(path.join(os.tmpdir(), 'nd-steps-'))
  fs.writeFileSync(path.join(ctx, 'hello.txt'), 'from the node context\n')
})

after(async () => {
  await lib.Template.delete(name).catch(() => {})
  fs.rmSync(ctx, { recursive: true, force: true })
  await engine.stop()
})

test('buildSteps: COPY and RUN, status, exists, a sandbox of it', async () => {
  const streamed = []
  const b = await lib.Template.buildSteps(`${name}:v1`, {
    fromTemplate: 'base',
    steps: [
      { type: 'COPY', args: ['hello.txt', '/home/user/hello.txt', '', ''] },
      { type: 'RUN', args: ['cat /home/user/hello.txt'] }
    ]
  }, { contextDir: ctx, cpuCount: 1, memoryMB: 256, tags: ['extra'], onLog: (l) => { streamed.push(l) } })
  assert.equal(b.status, 'ready')
  // onLog: the library's progress first, then every line the build holds, in order
  assert.match(streamed[0].message, /^Template created with ID: /)
  const tail = streamed.slice(streamed.length - b.logs.length)
  assert.deepEqual(tail.map((l) => l.message), b.logs.map((l) => l.message))
  assert.ok(streamed.every((l) => typeof l.timestampMs === 'number' && ['debug', 'info', 'warn', 'error'].includes(l.level)))
  assert.equal(b.errorStep, -1)
  assert.equal(b.error, undefined)
  assert.ok(b.logs.some((l) => l.message === 'from the node context'), JSON.stringify(b.logs))
  assert.ok(b.logs.every((l) => l.timestampMs > 1700000000000))
  const st = await lib.Template.buildStatus(b.templateId, b.buildId, { logsOffset: 1 })
  assert.equal(st.status, 'ready')
  assert.equal(st.logs.length, b.logs.length - 1)
  assert.equal(await lib.Template.exists(name), true)
  assert.equal(await lib.Template.exists(`${name}-none`), false)
  const sb = await lib.Sandbox.create({ template: name, timeoutMs: 60_000 })
  try {
    assert.equal((await sb.commands.run('cat /home/user/hello.txt')).stdout, 'from the node context\n')
  } finally {
    await sb.kill()
  }
  // tags: v1 and extra name this build; assign, list, remove
  await lib.Template.assignTags(`${name}:v1`, ['prod'])
  let tags = await lib.Template.getTags(b.templateId)
  assert.deepEqual(tags.filter((t) => t.buildId === b.buildId).map((t) => t.tag).sort(), ['extra', 'prod', 'v1'])
  assert.ok(tags.every((t) => t.createdAt instanceof Date && !isNaN(t.createdAt)))
  await lib.Template.removeTags(name, ['prod', 'extra'])
  tags = await lib.Template.getTags(b.templateId)
  assert.deepEqual(tags.map((t) => t.tag).filter((t) => t !== 'default' && t !== 'latest'), ['v1'])
  await assert.rejects(lib.Template.getTags(`${name}-none`), lib.NotFoundError)
  // an onLog that throws stops following: the call rejects with its error
  await assert.rejects(lib.Template.buildSteps(`${name}:v1`, { fromTemplate: 'base', steps: [{ type: 'RUN', args: ['true'] }] },
    { onLog: () => { throw new Error('stop here') } }), /stop here/)
})

test('buildSteps: a failing step is a BuildError with the engine reason', async () => {
  await assert.rejects(
    lib.Template.buildSteps(`${name}-bad`, '{"fromTemplate": "base", "steps": [{"type": "RUN", "args": ["echo nope; exit 5"]}]}'),
    (e) => e instanceof lib.BuildError && /exit code 5/.test(e.message) && /nope/.test(e.message) &&
      e.build.errorStep === 1 && e.build.status === 'error' && e.build.logs.some((l) => l.message === 'nope'))
  await assert.rejects(
    lib.Template.buildSteps(`${name}-bad`, { steps: [{ type: 'COPY', args: ['../x', '/x'] }] }, { contextDir: ctx }),
    (e) => e instanceof lib.InvalidArgumentError && /without '\.\.'/.test(e.message))
})

test('buildSteps: ignorePatterns and the context\'s .dockerignore leave files out of a COPY', async (t) => {
  const c = fs.mkdtempSync(path.join(os.tmpdir(), 'nd-steps-ign-'))
  try {
    for (const f of ['keep.txt', 'secret.txt', 'junk.log']) fs.writeFileSync(path.join(c, f), f)
    fs.writeFileSync(path.join(c, '.dockerignore'), '# not these\nsecret.txt\n')
    let b
    try {
      b = await lib.Template.buildSteps(`${name}-ign`, {
        fromTemplate: 'base',
        steps: [{ type: 'COPY', args: ['.', '/home/user/ctx/', '', ''] }, { type: 'RUN', args: ['ls -A /home/user/ctx'] }]
      }, { contextDir: c, ignorePatterns: ['*.log'] })
    } catch (e) {
      if (/has no ignore patterns/.test(e.message)) return t.skip('this libagentsandbox has no ignore patterns (asb_template_steps_options version 1)')
      throw e
    }
    const msgs = b.logs.map((l) => l.message)
    assert.ok(msgs.includes('keep.txt'), msgs.join('\n'))
    assert.ok(!msgs.includes('secret.txt') && !msgs.includes('junk.log'), msgs.join('\n'))
  } finally {
    fs.rmSync(c, { recursive: true, force: true })
  }
})

test('the steps one call each: requestBuild, filesHash, filesLink, filesUpload, triggerBuild', async () => {
  const split = `${name}-split`
  fs.mkdirSync(path.join(ctx, 'split'), { recursive: true })
  fs.writeFileSync(path.join(ctx, 'split', 'one.txt'), `split ${process.pid}\n`)
  const hash = await lib.Template.filesHash('split', { contextDir: ctx })
  assert.match(hash, /^[0-9a-f]{64}$/)
  const r = await lib.Template.requestBuild(`${split}:v1`, { tags: ['extra'] })
  assert.equal(r.status, 'waiting')
  assert.ok(r.tags.includes('v1') && r.tags.includes('extra'), JSON.stringify(r.tags))
  const link = await lib.Template.filesLink(r.templateId, hash)
  assert.equal(link.present, false)
  assert.equal(await lib.Template.filesUpload(link.url, 'split', { contextDir: ctx }), hash)
  assert.equal((await lib.Template.filesLink(r.templateId, hash)).present, true)
  await lib.Template.triggerBuild(r.templateId, r.buildId, {
    fromTemplate: 'base',
    steps: [{ type: 'COPY', args: ['split', '/opt/split', '', ''], filesHash: hash },
      { type: 'RUN', args: ['cat /opt/split/one.txt'] }]
  })
  let st
  for (;;) {
    st = await lib.Template.buildStatus(r.templateId, r.buildId)
    if (st.status === 'ready' || st.status === 'error') break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.equal(st.status, 'ready', st.error)
  assert.ok(st.logs.some((l) => l.message === `split ${process.pid}`), JSON.stringify(st.logs))
  await lib.Template.delete(split)
})
