// node.sessions: save, load, get, list, delete on the C library's store,
// and a session saved from the Python binding loads here (and one saved
// here loads in Python).
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { engine as startEngine, buildDir, repo } from './helpers.mjs'

let engine, lib

before(async () => {
  engine = await startEngine('sessions')
  lib = await import('agent-sandbox')
})

after(async () => {
  await engine.stop()
})

test('save, get, list, load, delete', async () => {
  const sbx = await lib.Sandbox.create({ timeoutMs: 60_000 })
  await lib.Session.save('node-one', sbx, { ticket: '42' })
  await sbx.saveSession('node-two')
  const info = await lib.Session.get('node-one')
  assert.ok(info instanceof lib.SessionInfo)
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.templateId, 'base')
  assert.equal(info.apiUrl, process.env.E2B_API_URL)
  assert.equal(info.metadata.get('ticket'), '42')
  assert.equal(info.metadata.has('nope'), false)
  assert.ok(info.createdAt instanceof Date)
  assert.deepEqual((await lib.Session.list()).map((s) => s.name).sort(), ['node-one', 'node-two'])
  await sbx.files.write('/tmp/mark', 'session')
  const back = await lib.Session.load('node-one')
  assert.equal(back.sandboxId, sbx.sandboxId)
  assert.equal(await back.files.read('/tmp/mark'), 'session')
  assert.equal((await lib.Sandbox.fromSession('node-two')).sandboxId, sbx.sandboxId)
  assert.equal(await lib.Session.delete('node-two'), true)
  assert.equal(await lib.Session.delete('node-two'), false)
  await assert.rejects(lib.Session.get('node-two'), lib.NotFoundError)
  await assert.rejects(lib.Session.load('node-two'), lib.NotFoundError)
  await sbx.kill()
  await assert.rejects(lib.Session.load('node-one'), lib.SandboxNotFoundError)
  await lib.Session.delete('node-one')
  await assert.rejects(lib.Session.save('bad name!', back), lib.InvalidArgumentError)
})

const py = process.env.ASB_PY_VENV ? path.join(process.env.ASB_PY_VENV, 'bin', 'python') : path.join(buildDir, 'py-venv', 'bin', 'python')

test('sessions are shared with the Python binding', { skip: !existsSync(py) && 'the Python binding is not built (python-binding target)' }, async () => {
  const env = Object.assign({}, process.env, { PYTHONPATH: '' })
  const runPy = (code) => {
    const r = spawnSync(py, ['-c', code], { env, encoding: 'utf8', cwd: repo, timeout: 120_000 })
    assert.equal(r.status, 0, r.stdout + r.stderr)
    return r.stdout.trim()
  }
  // saved in Python, loaded here
  const id = runPy(`
from agent_sandbox import sync, sessions
s = sync.Sandbox.create(timeout=60)
s.files.write("/tmp/from-python", "hello from python")
sessions.save_sync("from-python", s, {"lang": "python"})
print(s.sandbox_id)`)
  const info = await lib.Session.get('from-python')
  assert.equal(info.sandboxId, id)
  assert.equal(info.metadata.get('lang'), 'python')
  const sbx = await lib.Session.load('from-python')
  assert.equal(await sbx.files.read('/tmp/from-python'), 'hello from python')
  // saved here, loaded in Python
  await lib.Session.save('from-node', sbx, { lang: 'node' })
  assert.equal(runPy(`
from agent_sandbox import sessions
s = sessions.load_sync("from-node")
print(s.sandbox_id, sessions.get_sync("from-node").metadata["lang"])`), `${id} node`)
  await sbx.kill()
  await lib.Session.delete('from-python')
  await lib.Session.delete('from-node')
})
