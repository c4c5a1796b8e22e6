// The stock E2B code interpreter SDK (npm "@e2b/code-interpreter", pinned,
// with "e2b") in debug mode against a standalone code-interpreter server.
// Run: CODEI_BIN=... node --test codei.test.mjs
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox } from '@e2b/code-interpreter'
import { NotFoundError, TimeoutError } from 'e2b'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = process.env.CODEI_BIN || path.join(here, '../../build/core/codeinterp/code-interpreter')
const TOKEN = 'npm-codei-token'
const servers = []
// runCode leaves its request timer running when the request fails (the
// SDK clears it only on success): keep it shorter where a call must fail,
// or node waits out the default 60 s before it exits; but long enough that
// a loaded sanitizer build answers in time (it must fail for its reason,
// not by timing out).
const failFast = { requestTimeoutMs: 10000 }

function startServer(args) {
  return new Promise((resolve, reject) => {
    const p = spawn(BIN, ['--port', '0', '--cwd', '/tmp', ...args],
      { stdio: ['ignore', 'pipe', 'inherit'] })
    servers.push(p)
    let buf = ''
    p.stdout.on('data', (d) => {
      buf += d.toString()
      const m = buf.match(/^(\d+)\n/)
      if (m) resolve(`http://127.0.0.1:${m[1]}`)
    })
    p.on('error', reject)
    p.on('exit', (code) => reject(new Error(`code-interpreter exited with ${code}`)))
  })
}

async function healthy(url) {
  for (let i = 0; i < 1200; i++) {
    try {
      if ((await fetch(`${url}/health`)).status === 200) return
    } catch {}
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error('code-interpreter did not become healthy')
}

let url, sbx

before(async () => {
  url = await startServer([])
  await healthy(url)
  sbx = await Sandbox.create({ debug: true, sandboxUrl: url })
})

after(async () => {
  for (const p of servers) {
    const gone = new Promise((r) => p.once('exit', r))
    p.kill('SIGTERM')
    await gone
  }
})

test('runCode: main result, state, execution count', async () => {
  const a = await sbx.runCode('x = 40\nx + 2')
  assert.equal(a.text, '42')
  assert.equal(a.results.length, 1)
  assert.equal(a.results[0].isMainResult, true)
  assert.equal(a.error, undefined)
  const b = await sbx.runCode('x * 2')
  assert.equal(b.text, '80')
  assert.equal(b.executionCount, a.executionCount + 1)
})

test('runCode: logs and callbacks', async () => {
  const seen = []
  const e = await sbx.runCode("import sys\nprint('hello')\nprint('oops', file=sys.stderr)", {
    onStdout: (m) => seen.push(m.line),
  })
  assert.deepEqual(e.logs.stdout, ['hello\n'])
  assert.deepEqual(e.logs.stderr, ['oops\n'])
  assert.deepEqual(seen, ['hello\n'])
})

test('runCode: errors', async () => {
  let cb
  const e = await sbx.runCode("raise ValueError('boom')", { onError: (err) => { cb = err } })
  assert.equal(e.error.name, 'ValueError')
  assert.equal(e.error.value, 'boom')
  assert.match(e.error.traceback, /ValueError/)
  assert.equal(cb.name, 'ValueError')
})

test('runCode: rich results (png, html)', async () => {
  const e = await sbx.runCode(
    'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n' +
    "from IPython.display import HTML\nHTML('<i>hi</i>')")
  const png = e.results.find((r) => r.png)
  assert.ok(png, 'a png result')
  assert.ok(png.png.startsWith('iVBORw0KGgo'))
  assert.ok(png.formats().includes('png'))
  assert.equal(e.text, '<IPython.core.display.HTML object>')
  assert.equal(e.results.at(-1).html, '<i>hi</i>')
  assert.equal(e.results.at(-1).isMainResult, true)
})

test('runCode: other languages and envs', async () => {
  assert.equal((await sbx.runCode('1 + 1', { language: 'javascript' })).text, '2')
  const b = await sbx.runCode('echo "$GREETING"', { language: 'bash', envs: { GREETING: 'hi there' } })
  assert.deepEqual(b.logs.stdout, ['hi there\n'])
  const p = await sbx.runCode("import os; os.environ['GREETING']", { envs: { GREETING: 'py' } })
  assert.equal(p.text, 'py')
})

test('contexts: create, list, run in, restart, remove', async () => {
  const ctx = await sbx.createCodeContext({ language: 'python', cwd: '/tmp' })
  assert.equal(ctx.language, 'python')
  assert.equal(ctx.cwd, '/tmp')
  assert.match(ctx.id, /^[0-9a-f-]{36}$/)
  await sbx.runCode('y = 5', { context: ctx })
  assert.equal((await sbx.runCode('y', { context: ctx })).text, '5')
  assert.equal((await sbx.runCode("'y' in dir()")).text, 'False') // default context
  const list = await sbx.listCodeContexts()
  assert.ok(list.some((c) => c.id === ctx.id && c.cwd === '/tmp'))
  await sbx.restartCodeContext(ctx)
  const after = await sbx.runCode('y', { context: ctx })
  assert.equal(after.error.name, 'NameError')
  await sbx.removeCodeContext(ctx.id)
  await assert.rejects(sbx.runCode('1', { context: ctx, ...failFast }), NotFoundError)
  await assert.rejects(sbx.restartCodeContext(ctx), NotFoundError)
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  await assert.rejects(sbx.runCode('1', { context: ctx, language: 'python', ...failFast }))
})

test('runCode: timeout interrupts, the context lives on', async () => {
  const ctx = await sbx.createCodeContext()
  await sbx.runCode("kept = 'yes'", { context: ctx })
  await assert.rejects(sbx.runCode('while True: pass', { context: ctx, timeoutMs: 1000 }), TimeoutError)
  assert.equal((await sbx.runCode('kept', { context: ctx })).text, 'yes')
  await sbx.removeCodeContext(ctx)
})

test('access token: runCode sends the envd token; context calls the traffic token', async () => {
  const traffic = 'traffic-' + TOKEN
  const turl = await startServer(['--access-token', TOKEN, '--traffic-token', traffic])
  await healthy(turl)
  const opts = { sandboxId: 'debugsandbox', envdVersion: '0.6.0', debug: true, sandboxUrl: turl }
  const good = new Sandbox({ ...opts, envdAccessToken: TOKEN, trafficAccessToken: traffic })
  assert.equal((await good.runCode('6 * 7')).text, '42')
  assert.ok(Array.isArray(await good.listCodeContexts()))
  const bad = new Sandbox({ ...opts, envdAccessToken: 'wrong' })
  await assert.rejects(bad.runCode('1', failFast), /401/)
  // E2B's SDK sends no X-Access-Token on /contexts (docs/code-interpreter.md):
  // without the traffic token those calls are refused
  const envdOnly = new Sandbox({ ...opts, envdAccessToken: TOKEN })
  await assert.rejects(envdOnly.listCodeContexts(), /401/)
  await assert.rejects(envdOnly.createCodeContext(), /401/)
})
