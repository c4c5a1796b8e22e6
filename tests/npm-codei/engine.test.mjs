// The stock E2B code interpreter SDK (npm "@e2b/code-interpreter", pinned)
// against a real agent-sandboxd, configured only by E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY: an unchanged E2B program on the local
// engine. Sandbox.create uses the SDK's default template, code-interpreter-v1.
// Run: ENGINE_BIN=... node --test engine.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine } from '../support/engine.mjs'

// Where a call must fail: short, as runCode's timer outlives a failed call
// (see codei.test.mjs), but long enough for a loaded sanitizer build.
const failFast = { requestTimeoutMs: 10000 }
let engine, ci, e2b, sbx

before(async () => {
  engine = await startEngine('npm-codei')
  ci = await import('@e2b/code-interpreter')
  e2b = await import('e2b')
  sbx = await ci.Sandbox.create({ timeoutMs: 120_000 })
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
  await engine.stop()
})

test('runCode: results, logs, state, execution count', async () => {
  const info = await sbx.getInfo()
  assert.equal(info.templateId, 'code-interpreter-v1')
  const stdout = []
  const e = await sbx.runCode('x = 2 ** 10\nprint("hi")\nx', { onStdout: (m) => stdout.push(m.line) })
  assert.equal(e.text, '1024')
  assert.deepEqual(e.logs.stdout, ['hi\n'])
  assert.deepEqual(stdout, ['hi\n'])
  assert.equal(e.error, undefined)
  assert.ok(e.executionCount >= 1)
  const again = await sbx.runCode('x + 1')
  assert.equal(again.text, '1025')
  assert.equal(again.executionCount, e.executionCount + 1)
  // the kernel runs inside this sandbox, as root (E2B's kernels are root's)
  const who = await sbx.runCode('import os, socket; (os.getuid(), socket.gethostname())')
  assert.equal(who.text, `(0, '${sbx.sandboxId}')`)
  // and shares its filesystem with commands and files
  await sbx.files.write('/home/user/data.csv', 'a,b\n1,2\n')
  const csv = await sbx.runCode("open('/home/user/data.csv').read().splitlines()[1]")
  assert.equal(csv.text, '1,2') // E2B drops one pair of enclosing quotes
})

test('runCode: errors and rich results', async () => {
  const err = await sbx.runCode('1/0')
  assert.equal(err.error.name, 'ZeroDivisionError')
  assert.equal(err.error.value, 'division by zero')
  assert.match(err.error.traceback, /ZeroDivisionError/)
  const plot = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()')
  assert.equal(plot.error, undefined)
  const png = plot.results.find((r) => r.png)
  assert.ok(png && png.png.startsWith('iVBORw0KGgo'), 'a png result')
  const html = await sbx.runCode("from IPython.display import HTML\nHTML('<b>x</b>')")
  assert.equal(html.results.at(-1).html, '<b>x</b>')
})

test('runCode: other languages, envs', async () => {
  assert.equal((await sbx.runCode('1 + 1', { language: 'javascript' })).text, '2')
  const b = await sbx.runCode('echo "$GREETING"', { language: 'bash', envs: { GREETING: 'hi' } })
  assert.deepEqual(b.logs.stdout, ['hi\n'])
})

test('runCode: java (the JShell driver), started on first use, heap within the sandbox', async () => {
  const java = { language: 'java' }
  const cwd = await sbx.runCode('System.getProperty("user.dir")', java)
  assert.equal(cwd.text, '/home/user')
  await sbx.runCode('int n = 20;\nString twice(String s) { return s + s; }', java)
  const e = await sbx.runCode('System.out.println("Hello, World!");\ntwice("ab") + (n * 2 + 2)', java)
  assert.deepEqual(e.logs.stdout, ['Hello, World!', '\n']) // IJava's split
  assert.equal(e.text, 'abab42')
  const err = await sbx.runCode('Integer.parseInt("x")', java)
  assert.equal(err.error.name, 'java.lang.NumberFormatException')
  assert.equal(err.error.value, 'For input string: "x"')
  const env = await sbx.runCode('System.getProperty("FOO")', { ...java, envs: { FOO: 'bar' } })
  assert.equal(env.text, 'bar')
  assert.equal((await sbx.runCode('System.getProperty("FOO", "default")', java)).text, 'default')
  // the JVM sizes its heap from the workload cgroup's limit (half of it)
  const lim = await sbx.runCode('Files.readString(Files.list(Path.of("/run/asb/cgroup"))' +
    '.flatMap(d -> Stream.of(d.resolve("memory.max"), d.resolve("memory.limit_in_bytes")))' +
    '.filter(Files::exists).findFirst().get()).trim()', java) // cgroup v2 or v1
  const heap = await sbx.runCode('Runtime.getRuntime().maxMemory()', java)
  assert.ok(/^\d+$/.test(lim.text), `memory.max: ${lim.text} ${JSON.stringify(lim.error)}`)
  assert.ok(Number(heap.text) <= Number(lim.text) / 2, `heap ${heap.text} of ${lim.text}`)
})

test('contexts: create, list, run in, restart, remove (the traffic token on these calls)', async () => {
  // the SDK sends no X-Access-Token on context calls, only the sandbox's
  // trafficAccessToken; the sandbox id alone is refused (security.http)
  assert.ok(sbx.trafficAccessToken && sbx.trafficAccessToken !== sbx.envdAccessToken)
  const ctx = await sbx.createCodeContext({ language: 'python', cwd: '/tmp' })
  assert.equal(ctx.cwd, '/tmp')
  await sbx.runCode('y = 5', { context: ctx })
  assert.equal((await sbx.runCode('y', { context: ctx })).text, '5')
  assert.equal((await sbx.runCode("'y' in dir()")).text, 'False')
  assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  await sbx.restartCodeContext(ctx)
  assert.equal((await sbx.runCode('y', { context: ctx })).error.name, 'NameError')
  await sbx.removeCodeContext(ctx.id)
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  await assert.rejects(sbx.runCode('1', { context: ctx, ...failFast }), e2b.NotFoundError)
})

test('runCode: a timeout interrupts the cell, the context lives on', async () => {
  await sbx.runCode("kept = 'yes'")
  await assert.rejects(sbx.runCode('while True: pass', { timeoutMs: 1000 }), e2b.TimeoutError)
  assert.equal((await sbx.runCode('kept')).text, 'yes')
})

test('connect from a second client, then kill: runCode says the sandbox is gone', async () => {
  const other = await ci.Sandbox.connect(sbx.sandboxId)
  assert.equal((await other.runCode('kept')).text, 'yes')
  const wrong = new ci.Sandbox({ sandboxId: sbx.sandboxId, envdVersion: '0.6.4',
    envdAccessToken: 'wrong' })
  await assert.rejects(wrong.runCode('1', failFast), /401|[Uu]nauthori/)
  const victim = await ci.Sandbox.create({ timeoutMs: 60_000 })
  await victim.kill()
  await assert.rejects(victim.runCode('1', failFast))
})
