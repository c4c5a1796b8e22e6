// Coding agents in a sandbox: a Codex (or Qwen Code, Claude Code, OpenCode)
// session in a sandbox of the built-in `agents` template, driven with
// `sandbox.agents` (docs/agents.md).
//
// 1. List the agents the sandbox's server knows.
// 2. Open a session pointed at an OpenAI-compatible endpoint, send a prompt,
//    print the events as they come (a tool call, its exit code, the answer)
//    and the turn's result; the file the agent's tool wrote is in the sandbox.
// 3. A second turn in the same session, read with `for await`: the agent
//    keeps its context.
//
// The model endpoint runs inside the sandbox, on its own loopback, so the
// example needs no network (sandboxes have one: docs/networking.md): by default this example starts the
// repository's scripted model there (tests/agents/scripted_model.py, an
// OpenAI-compatible server that plays a fixed script). With egress, point
// --base-url at any OpenAI-compatible endpoint instead and give its key in
// the environment variable --api-key-env names.
//
//   node examples/node/agents.mjs [--agent codex] [--base-url URL --model M --api-key-env NAME]
//                                 [--scripted-model path/to/scripted_model.py]
//
// The agents template needs the CLIs on the host: scripts/agents-cache.sh.
// SPDX-License-Identifier: Apache-2.0
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Sandbox } from 'agent-sandbox'

const { values: a } = parseArgs({
  options: {
    agent: { type: 'string', default: 'codex' },
    'base-url': { type: 'string' },
    model: { type: 'string', default: 'scripted' },
    'api-key-env': { type: 'string', default: 'ASB_EXAMPLE_KEY' },
    'scripted-model': { type: 'string', default: fileURLToPath(new URL('../../tests/agents/scripted_model.py', import.meta.url)) }
  }
})

/** Start the scripted model in the sandbox; its base URL once it listens. */
async function startScriptedModel(sandbox) {
  await sandbox.files.write('/home/user/scripted_model.py', readFileSync(a['scripted-model']))
  await sandbox.commands.run('python3 /home/user/scripted_model.py --ready-file /tmp/model.port', { background: true })
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    const port = (await sandbox.commands.run('cat /tmp/model.port 2>/dev/null || true')).stdout.trim()
    if (/^\d+$/.test(port)) return `http://127.0.0.1:${port}/v1`
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error('the scripted model did not start')
}

function show(ev) {
  if (ev.type === 'tool.started') console.log(`  [${ev.seq}] ${ev.type}: ${ev.command || ev.tool}`)
  else if (ev.type === 'tool.completed') console.log(`  [${ev.seq}] ${ev.type}: exit code ${ev.exit_code}`)
  else if (ev.type === 'message') console.log(`  [${ev.seq}] ${ev.type}: ${ev.text}`)
  else if (ev.type === 'error') console.log(`  [${ev.seq}] ${ev.type}${ev.fatal ? ' (fatal)' : ''}: ${ev.message}`)
  else if (ev.type === 'turn.started' || ev.type === 'turn.completed') console.log(`  [${ev.seq}] ${ev.type}`)
}

const sandbox = await Sandbox.create('agents', { timeoutMs: 900_000 })
try {
  for (const info of await sandbox.agents.list()) {
    console.log(`${info.name}: ${info.package} ${info.version || '-'} (${info.installed ? 'installed' : 'installable'})`)
  }
  const baseUrl = a['base-url'] || await startScriptedModel(sandbox)
  const keyEnv = a['api-key-env']
  const key = process.env[keyEnv] || 'sk-not-needed-by-the-scripted-model'
  const session = await sandbox.agents.session(a.agent, {
    cwd: '/home/user', model: a.model, baseUrl, apiKeyEnv: keyEnv, env: { [keyEnv]: key }
  })
  try {
    console.log(`session ${session.id} (${session.agent})`)
    const turn = await session.send('please WRITE the file', { onEvent: show })
    console.log(`turn ${turn.turn}: ${turn.status}, final message ${JSON.stringify(turn.finalMessage)}`)
    console.log(`commands: ${JSON.stringify(turn.commands.map((c) => c.command))}`)
    console.log(`tokens: ${turn.usage.inputTokens} in, ${turn.usage.outputTokens} out`)
    console.log('/tmp/x:', (await sandbox.files.read('/tmp/x')).trim())
    for await (const ev of session.stream('RECALL what you did')) {
      if (ev.type === 'turn.completed') console.log(`turn ${ev.turn}: ${ev.final_message}`)
    }
  } finally {
    await session.close() // or `await using session = ...` where Node has it
  }
} finally {
  await sandbox.kill()
}
