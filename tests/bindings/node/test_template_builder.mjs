// node.template_builder: E2B's Template builder steps through the addon's
// asb_templates_build_steps (Template.buildSteps): a COPY from a local
// context directory and a RUN whose output is in the log and in a sandbox
// of the result; the status of the build from an offset; exists; a failing
// step's BuildError.
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
  const b = await lib.Template.buildSteps(`${name}:v1`, {
    fromTemplate: 'base',
    steps: [
      { type: 'COPY', args: ['hello.txt', '/home/user/hello.txt', '', ''] },
      { type: 'RUN', args: ['cat /home/user/hello.txt'] }
    ]
  }, { contextDir: ctx, cpuCount: 1, memoryMB: 256, tags: ['extra'] })
  assert.equal(b.status, 'ready')
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
})

test('buildSteps: a failing step is a BuildError with the engine reason', async () => {
  await assert.rejects(
    lib.Template.buildSteps(`${name}-bad`, '{"fromTemplate": "base", "steps": [{"type": "RUN", "args": ["echo nope; exit 5"]}]}'),
    (e) => e instanceof lib.BuildError && /exit code 5/.test(e.message) && /nope/.test(e.message))
  await assert.rejects(
    lib.Template.buildSteps(`${name}-bad`, { steps: [{ type: 'COPY', args: ['../x', '/x'] }] }, { contextDir: ctx }),
    (e) => e instanceof lib.InvalidArgumentError && /without '\.\.'/.test(e.message))
})
