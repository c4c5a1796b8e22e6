// node.agents: sandbox.agents end to end through the Node binding — a real
// coding-agent CLI (Codex, from the host-wide prefix scripts/agents-cache.sh
// fills) in a real sandbox of the built-in agents template, against
// tests/agents/scripted_model.py started inside that sandbox on its own
// loopback (the sandbox's network namespace has nothing else), so no
// request leaves the machine. Mirrors python.agents: the list, onEvent with
// objects (plain and async), for await over a turn and over a resumed log,
// a throwing onEvent rejecting send while the turn goes on, leaving a
// for await early, cancel while a
// send is pending, AgentTurnError, the error classes of bad sessions, a
// missing agent and a failed install. Skipped exactly where python.agents
// is: without codex in the host prefix.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { accessSync, constants, readFileSync } from 'node:fs'
import path from 'node:path'
import { engine as startEngine, eventually, repo } from './helpers.mjs'

const HOST_PREFIX = '/usr/local/lib/agent-sandbox/agents'
const AGENT = 'codex'
const SLOW_RUNNING = "pgrep -f 'tail -f /dev/nul[l]' >/dev/null && echo yes || echo no"

function haveAgent() {
  try {
    accessSync(path.join(HOST_PREFIX, 'bin', AGENT), constants.X_OK)
    return true
  } catch {
    return false
  }
}
const skip = !haveAgent() && `no ${AGENT} in ${HOST_PREFIX} (scripts/agents-cache.sh installs it)`

let engine, lib, sbx, modelPort

/** Upload a tests/agents helper, start it in the background, return its
 * port once its ready file says it listens. */
async function startHelper(sb, script, name) {
  await sb.files.write(`/home/user/${script}`, readFileSync(path.join(repo, 'tests', 'agents', script)))
  await sb.commands.run(`rm -f /tmp/${name}.port; (setsid python3 /home/user/${script} ` +
    `--ready-file /tmp/${name}.port > /tmp/${name}.log 2>&1 < /dev/null &)`)
  const port = await eventually(async () => {
    const r = await sb.commands.run(`cat /tmp/${name}.port 2>/dev/null || true`)
    return /^\d+$/.test(r.stdout.trim()) ? Number(r.stdout.trim()) : 0
  }, 60_000, 100)
  assert.ok(port, `${script} did not start`)
  return port
}

function settings() {
  return {
    cwd: '/home/user',
    model: 'scripted',
    baseUrl: `http://127.0.0.1:${modelPort}/v1`,
    apiKeyEnv: 'ASB_TEST_KEY',
    env: { ASB_TEST_KEY: 'sk-scripted-test' }
  }
}

before(async () => {
  if (skip) return
  engine = await startEngine('agents')
  lib = await import('agent-sandbox')
  sbx = await lib.Sandbox.create({ template: 'agents', timeoutMs: 1_200_000 })
  modelPort = await startHelper(sbx, 'scripted_model.py', 'model')
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
  if (engine) await engine.stop()
})

test('list', { skip }, async () => {
  const agents = Object.fromEntries((await sbx.agents.list()).map((a) => [a.name, a]))
  assert.deepEqual(Object.keys(agents).sort(), ['claude', 'codex', 'opencode', 'qwen'])
  const a = agents[AGENT]
  assert.equal(a.installed, true)
  assert.equal(a.package, '@openai/codex')
  assert.ok(a.version)
  assert.ok(a.path.startsWith(HOST_PREFIX), a.path)
})

test('turns, events and context', { skip }, async () => {
  await sbx.commands.run('rm -f /tmp/x')
  const s = await sbx.agents.session(AGENT, settings())
  assert.ok(s instanceof lib.AgentSession)
  assert.equal(s.agent, AGENT)
  assert.match(s.id, /^ags_/)
  const seen = []
  // an async handler holds the next events back: they still come in order
  const t = await s.send('please WRITE the file', { onEvent: async (ev) => { await null; seen.push(ev) } })
  assert.deepEqual([t.status, t.turn, t.finalMessage, t.error], ['completed', 1, 'done', null])
  assert.ok(t.commands.some((c) => c.command.includes('echo hi > /tmp/x') && c.exitCode === 0), JSON.stringify(t.commands))
  assert.ok(t.usage.inputTokens > 0 && t.usage.outputTokens > 0)
  assert.deepEqual(seen.map((e) => e.seq), seen.map((_, i) => i + 1))
  const types = seen.map((e) => e.type)
  assert.equal(types.at(-1), 'turn.completed')
  assert.equal(t.lastSeq, seen.at(-1).seq)
  for (const k of ['turn.started', 'tool.started', 'message']) assert.ok(types.includes(k), k)
  const done = seen.filter((e) => e.type === 'tool.completed')
  assert.ok(done.length && done[0].exit_code === 0 && 'native' in done[0])
  assert.equal(await sbx.files.read('/tmp/x'), 'hi\n')

  const turn2 = []
  for await (const ev of s.stream('RECALL what you did')) turn2.push(ev)
  assert.equal(turn2[0].seq, t.lastSeq + 1)
  assert.equal(turn2.at(-1).type, 'turn.completed')
  assert.equal(turn2.at(-1).final_message, 'recall: yes')
  assert.ok(turn2.every((e) => e.turn === 2))

  const log = await s.events({ after: t.lastSeq })
  assert.deepEqual(log.map((e) => e.seq), turn2.map((e) => e.seq))
  const all = []
  for await (const ev of s) all.push(ev.seq) // the whole log: no turn in progress
  assert.deepEqual(all, all.map((_, i) => i + 1))
  assert.equal(all.at(-1), turn2.at(-1).seq)
  const info = await s.info()
  assert.equal(info.status, 'idle')
  assert.equal(info.last_seq, turn2.at(-1).seq)
  assert.deepEqual(info.turns.map((x) => x.prompt), ['please WRITE the file', 'RECALL what you did'])
  await s.close()
})

test('the client goes away and catches up', { skip }, async () => {
  const s = await sbx.agents.session(AGENT, settings())
  const got = []
  class Away extends Error {}
  await assert.rejects(s.send('RECALL what you did', {
    onEvent: (ev) => {
      got.push(ev)
      if (got.length === 2) throw new Away()
    }
  }), Away)
  const again = await sbx.agents.connect(s.id)
  assert.equal(again.agent, AGENT)
  const rest = []
  for await (const ev of again.follow({ after: got.at(-1).seq })) rest.push(ev)
  assert.deepEqual([...got, ...rest].map((e) => e.seq), [...got, ...rest].map((_, i) => i + 1))
  assert.equal(rest.at(-1).type, 'turn.completed')
  // the scripted model answers "recall: no" without an earlier tool call
  assert.equal(rest.at(-1).final_message, 'recall: no')
  await again[Symbol.asyncDispose]() // closes the session in the sandbox
  await assert.rejects(s.send('hello'), lib.NotFoundError)
  await assert.rejects(sbx.agents.connect(s.id), lib.NotFoundError)
  await s[Symbol.asyncDispose]() // already gone: fine
})

test('leaving a for await early stops waiting, not the turn', { skip }, async () => {
  const s = await sbx.agents.session(AGENT, settings())
  const ac = new AbortController()
  let first
  for await (const ev of s.stream('RECALL what you did', { signal: ac.signal })) {
    first = ev
    break
  }
  assert.equal(first.seq, 1)
  const rest = []
  for await (const ev of s.follow({ after: first.seq, signal: ac.signal })) rest.push(ev)
  assert.deepEqual(rest.map((e) => e.seq), rest.map((_, i) => i + 2))
  assert.equal(rest.at(-1).type, 'turn.completed')
  assert.equal(rest.at(-1).status, 'completed')
  ac.abort()
  await assert.rejects(s.events({ signal: ac.signal }), { name: 'AbortError' })
  await s.close()
})

test('cancel while a send is pending', { skip }, async () => {
  const s = await sbx.agents.session(AGENT, settings())
  const turn = s.send('SLEEP a while')
  const running = await eventually(async () => (await sbx.commands.run(SLOW_RUNNING)).stdout.trim() === 'yes', 180_000, 200)
  assert.ok(running, 'the slow tool never started')
  await s.cancel()
  const t = await turn // a cancelled turn resolves
  assert.equal(t.status, 'cancelled')
  assert.ok(t.error)
  const gone = await eventually(async () => (await sbx.commands.run(SLOW_RUNNING)).stdout.trim() === 'no', 60_000, 100)
  assert.ok(gone, "the tool's process outlived the cancelled turn")
  await s.close()
})

test('a failed turn', { skip }, async () => {
  const s = await sbx.agents.session(AGENT, settings())
  const err = await s.send('FAIL now').then(() => null, (e) => e)
  assert.ok(err instanceof lib.AgentTurnError && err instanceof lib.SandboxError, String(err))
  assert.equal(err.turn.status, 'failed')
  assert.ok(err.turn.error.includes('scripted failure') || err.turn.error.includes('400'), err.turn.error)
  assert.ok(err.message.includes(AGENT))
  const t = await s.send('FAIL again', { check: false })
  assert.equal(t.status, 'failed')
  assert.equal(t.turn, 2)
  await s.close()
})

test('bad sessions', { skip }, async () => {
  await assert.rejects(sbx.agents.session('no-such-agent'), (e) => e instanceof lib.NotFoundError &&
    e.message.includes('available: codex, qwen, claude, opencode'))
  await assert.rejects(sbx.agents.session(AGENT, { approval: 'sometimes' }), (e) => e instanceof lib.InvalidArgumentError &&
    e.message.includes('approval'))
  await assert.rejects(sbx.agents.session(AGENT, { cwd: '/no/such/dir' }), (e) => e instanceof lib.InvalidArgumentError &&
    e.message.includes('cwd'))
  await assert.rejects(sbx.agents.connect('ags_nope'), lib.NotFoundError)
})

test('an agent not installed, and a failed install', { skip }, async () => {
  // a server that finds no agent; the registry is a closed port on the
  // sandbox's own loopback
  const sb = await lib.Sandbox.create({
    template: 'agents',
    timeoutMs: 600_000,
    envs: { ASB_AGENTS_PATH: '/nonexistent', npm_config_fetch_retries: '0' }
  })
  try {
    const q = (await sb.agents.list()).find((a) => a.name === 'qwen')
    assert.equal(q.installed, false)
    assert.equal(q.version, undefined)
    assert.equal(q.path, undefined)
    await assert.rejects(sb.agents.session('qwen', { install: false }), (e) => e instanceof lib.NotFoundError &&
      e.message.includes('not installed') && e.message.includes('@qwen-code/qwen-code') &&
      e.remoteCode === 'AgentNotInstalledError')
    const events = []
    await assert.rejects(sb.agents.install('claude', { registry: 'http://127.0.0.1:1', onEvent: (ev) => events.push(ev.type) }),
      (e) => e instanceof lib.CommandFailedError && e.message.includes('@anthropic-ai/claude-code') && e.message.includes('npm install'))
    assert.equal(events[0], 'install.started')
    assert.equal(events.at(-1), 'install.completed')
    await assert.rejects(sb.agents.install('no-such-agent'), lib.NotFoundError)
  } finally {
    await sb.kill().catch(() => {})
  }
})
