// node.server: the node-hello example template (commands.mjs on
// agent-sandbox/server, started by the template's start command) built with
// Template.build, and its commands called through sandbox.run: results,
// argument checks and coercion, errors and their classes, hidden commands,
// calls served concurrently by one event loop. Also Template.get, list,
// delete and the build errors. And the server SDK on this host (so the
// ASan tree, which stages no template, drives its addon too): calls
// answered from the event loop, many at once, errors and their statuses.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { engine as startEngine, buildDir } from './helpers.mjs'

const dir = path.join(buildDir, 'examples', 'templates', 'node-hello')
let engine, lib, sbx, built

before(async () => {
  engine = await startEngine('server')
  lib = await import('agent-sandbox')
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
  await engine.stop()
})

test('Template.build the node-hello template', { skip: !existsSync(path.join(dir, 'template.yaml')) && 'node-hello is not staged (node-binding target)' }, async () => {
  built = await lib.Template.build(dir)
  assert.equal(built.name, 'node-hello')
  assert.ok(built.templateId)
  assert.equal(typeof built.cached, 'boolean')
  assert.equal((await lib.Template.build(dir)).cached, true)
  assert.equal((await lib.Template.get('node-hello')).templateId, built.templateId)
  const names = (await lib.Template.list()).map((t) => t.name)
  assert.ok(names.includes('node-hello') && names.includes('base'))
})

test('named commands served by agent-sandbox/server', async (t) => {
  if (!built) return t.skip('node-hello was not built')
  sbx = await lib.Sandbox.create({ template: 'node-hello', timeoutMs: 120_000 })
  assert.equal(await sbx.run('hello', { name: 'Alice' }), 'Hello, Alice!')
  assert.equal(await sbx.run('hello'), 'Hello, world!')
  assert.equal(await sbx.run('add', { a: '40', b: 2 }), 42)
  assert.equal(await sbx.run('add', { a: 1 }), 1.5)
  assert.deepEqual(await sbx.run('stats', { values: [1, 2, 3] }), { label: null, count: 3, sum: 6, mean: 2 })
  assert.equal(await sbx.run('secret'), 'hidden but callable')
  const listed = await sbx.listCommands()
  assert.deepEqual(listed.map((c) => c.name), ['hello', 'add', 'stats', 'slow'])
  const hello = listed.find((c) => c.name === 'hello')
  assert.equal(hello.description, 'Greets someone.')
  assert.deepEqual(hello.args, [{ name: 'name', type: 'string', required: false, default: 'world', description: 'who to greet' }])
  await assert.rejects(sbx.run('nope'), (e) => e instanceof lib.CommandNotFoundError && /available: hello, add, stats, slow/.test(e.message))
  await assert.rejects(sbx.run('add', {}), (e) => e instanceof lib.InvalidArgumentError && /missing required argument 'a'/.test(e.message))
  await assert.rejects(sbx.run('add', { a: 'x' }), lib.InvalidArgumentError)
  await assert.rejects(sbx.run('stats', { values: [] }), (e) => e instanceof lib.CommandFailedError && e.type === 'RangeError' && /non-empty/.test(e.message))
  await assert.rejects(sbx.run('hello', [1]), lib.InvalidArgumentError)
  // one event loop in the sandbox serves these at once: all ten answer
  // although each waits on a timer
  const many = await Promise.all(Array.from({ length: 10 }, (_, i) => sbx.run('slow', { ms: 300 + i })))
  assert.deepEqual(many, Array.from({ length: 10 }, (_, i) => 300 + i))
})

test('template errors and delete', async (t) => {
  const empty = mkdtempSync(path.join(os.tmpdir(), 'asb-node-tpl-'))
  try {
    await assert.rejects(lib.Template.build(empty), (e) => e instanceof lib.InvalidArgumentError && /template\.yaml/.test(e.message))
  } finally {
    rmSync(empty, { recursive: true, force: true })
  }
  await assert.rejects(lib.Template.get('no-such-template'), lib.NotFoundError)
  if (!built) return t.skip('node-hello was not built')
  await assert.rejects(lib.Template.delete('node-hello'), lib.SandboxError) // a sandbox uses it
  await sbx.kill()
  sbx = null
  await lib.Template.delete('node-hello')
  await assert.rejects(lib.Template.get('node-hello'), lib.NotFoundError)
})

test('agent-sandbox/server on this host: pull mode answers from the event loop, concurrently', async () => {
  const { Server } = await import('agent-sandbox/server')
  const srv = new Server({ host: '127.0.0.1', token: 'tok' })
  let release
  const gate = new Promise((r) => { release = r })
  let waiting = 0
  srv.command('add', { args: { a: 'integer', b: { type: 'float', default: 0.5 } } }, ({ a, b }) => a + b)
  srv.command('gate', { args: { i: 'integer' } }, async ({ i }) => { waiting++; await gate; return i })
  srv.command('boom', {}, () => { throw new RangeError('no') })
  await srv.start(0)
  try {
    const url = `http://127.0.0.1:${srv.port}/commands`
    const post = async (name, body, token = 'tok') => {
      const r = await fetch(`${url}/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-access-token': token }, body: JSON.stringify(body) })
      return { status: r.status, body: await r.json() }
    }
    assert.deepEqual(await post('add', { a: '41', b: 1 }), { status: 200, body: { result: 42 } })
    assert.equal((await post('add', {})).status, 400)
    assert.deepEqual(await post('boom', {}), { status: 500, body: { error: 'no', type: 'RangeError' } })
    assert.equal((await post('nope', {})).status, 404)
    assert.equal((await post('add', { a: 1 }, 'wrong')).status, 401)
    // 20 calls held open at once by one loop: none answers until released
    const calls = Array.from({ length: 20 }, (_, i) => post('gate', { i }))
    for (let k = 0; k < 3000 && waiting < 20; k++) await new Promise((r) => setTimeout(r, 10))
    assert.equal(waiting, 20, 'every call reached its handler while the others waited')
    release()
    assert.deepEqual((await Promise.all(calls)).map((r) => r.body.result), Array.from({ length: 20 }, (_, i) => i))
  } finally {
    await srv.stop()
  }
  assert.equal(srv.port, 0)
})
