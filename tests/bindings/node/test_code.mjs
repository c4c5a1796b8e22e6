// node.code: runCode (results, logs, errors, callbacks in order, rich
// results), contexts, languages, timeouts and cancellation (the cell is
// interrupted, the context stays usable).
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { engine as startEngine } from './helpers.mjs'

let engine, lib, sbx

before(async () => {
  engine = await startEngine('code')
  lib = await import('agent-sandbox')
  sbx = await lib.Sandbox.create({ timeoutMs: 300_000 })
  await sbx.runCode('1', { timeoutMs: 120_000 }) // the interpreter starts on first use
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
  await engine.stop()
})

test('runCode: value, logs, state, errors', async () => {
  const out = []
  const results = []
  const e = await sbx.runCode('x = 2 ** 10\nprint("hi")\nx', { onStdout: (m) => out.push(m.line), onResult: (r) => results.push(r) })
  assert.ok(e instanceof lib.Execution)
  assert.equal(e.text, '1024')
  assert.deepEqual(e.logs.stdout, ['hi\n'])
  assert.deepEqual(out, ['hi\n'])
  assert.equal(results.length, 1)
  assert.ok(results[0] instanceof lib.Result && results[0].isMainResult)
  assert.equal(e.error, undefined)
  assert.equal((await sbx.runCode('x + 1')).text, '1025')
  const errs = []
  const bad = await sbx.runCode('1/0', { onError: (er) => errs.push(er) })
  assert.ok(bad.error instanceof lib.ExecutionError)
  assert.equal(bad.error.name, 'ZeroDivisionError')
  assert.match(bad.error.traceback, /ZeroDivisionError/)
  assert.equal(errs[0].name, 'ZeroDivisionError')
  const stderr = []
  await sbx.runCode('import sys; print("warn", file=sys.stderr)', { onStderr: (m) => stderr.push(m) })
  assert.equal(stderr[0].error, true)
  assert.equal(stderr[0].line, 'warn\n')
  const html = await sbx.runCode("from IPython.display import HTML, display\ndisplay(HTML('<b>x</b>'))\n42")
  const disp = html.results.find((r) => !r.isMainResult)
  assert.equal(disp.html, '<b>x</b>')
  assert.ok(disp.formats().includes('html'))
  assert.equal(html.text, '42')
  assert.equal(JSON.stringify(html.results[0].toJSON()).includes('<b>x</b>'), true)
})

test('contexts and languages', async () => {
  const ctx = await sbx.createCodeContext({ cwd: '/tmp' })
  assert.ok(ctx.id)
  assert.equal(ctx.language, 'python')
  assert.equal((await sbx.runCode('import os; os.getcwd()', { context: ctx })).text, '/tmp') // the text drops one pair of quotes, as E2B's
  await sbx.runCode('y = 5', { context: ctx })
  assert.equal((await sbx.runCode('y', { context: ctx })).text, '5')
  await sbx.restartCodeContext(ctx)
  assert.equal((await sbx.runCode('y', { context: ctx })).error.name, 'NameError')
  assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  await sbx.removeCodeContext(ctx.id)
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  await assert.rejects(sbx.runCode('1', { context: ctx }), lib.NotFoundError)
  const js = await sbx.runCode('[1, 2, 3].map((v) => v * 2).join(",")', { language: 'javascript' })
  assert.match(js.text, /2,4,6/)
})

test('timeouts and cancellation interrupt the cell, the context lives on', async () => {
  await assert.rejects(sbx.runCode('import time; time.sleep(30)', { timeoutMs: 500 }), lib.TimeoutError)
  const ac = new AbortController()
  const p = sbx.runCode('import time\nprint("go", flush=True)\ntime.sleep(30)', { signal: ac.signal, onStdout: () => ac.abort() })
  await assert.rejects(p, (e) => e.name === 'AbortError')
  assert.equal((await sbx.runCode('"still here"')).text, 'still here')
  const boom = new Error('result boom')
  await assert.rejects(sbx.runCode('print(1, flush=True)\nimport time; time.sleep(30)', { onStdout: () => { throw boom } }), (e) => e === boom)
  assert.equal((await sbx.runCode('2')).text, '2')
})
