// node.examples: every program under examples/node runs to the end against
// the engine, as a user runs it (import 'agent-sandbox'), and prints what
// it says it prints.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, mkdirSync, symlinkSync, rmSync, existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { engine as startEngine, repo, pkgDir, buildDir } from './helpers.mjs'

let engine, dir

before(async () => {
  engine = await startEngine('examples')
  dir = mkdtempSync(path.join(os.tmpdir(), 'asb-node-examples-'))
  cpSync(path.join(repo, 'examples', 'node'), path.join(dir, 'examples', 'node'), { recursive: true })
  mkdirSync(path.join(dir, 'node_modules'))
  symlinkSync(pkgDir, path.join(dir, 'node_modules', 'agent-sandbox'))
})

after(async () => {
  await engine.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

function run(name, args = []) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [path.join(dir, 'examples', 'node', name), ...args], { cwd: dir, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    p.stdout.on('data', (d) => { out += d })
    p.stderr.on('data', (d) => { err += d })
    p.on('exit', (code) => resolve({ code, out, err }))
  })
}

const expect = {
  'quickstart.mjs': [/^Hello from sandbox!$/m, /^1024$/m, /^Hello, Alice!$/m, /^content$/m],
  'commands.mjs': [/^exit code 3$/m, /^check: exit 4$/m, /\[stdout\] line 3/, /^SHOUT$/m, /^stderr "done\\n"$/m, /^aborted: AbortError$/m, /^true$/m],
  'files.mjs': [/^hello$/m, /^streamed 1048576$/m, /^true dir$/m, /^true$/m, /^http:\/\/49983-/m],
  'code.mjs': [/^stdout: computing$/m, /^2432902008176640000 \d+$/m, /^ZeroDivisionError division by zero$/m, /^42$/m, /interrupted: AbortError/, /the kernel lives on/],
  'lifecycle.mjs': [/^paused true$/m, /^memory RAM kept \(no --pause-swap\)$/m, /^running true$/m, /^killed true$/m, /^true ASB_ESANDBOX/m],
  // no --pause-criu here: the RAM kept (test_examples_criu.mjs: with it)
  'checkpoint.mjs': [/^paused: paused pause mode memory$/m, /: the same process counts on$/m],
  'sessions.mjs': [/^true 42$/m, /example-triage/, /^back$/m],
  'sandboxed.mjs': [/2, 3, 5, 7, 11, 13, 17, 19, 23, 29/, /^true RangeError negative$/m, /^1 2$/m],
  'e2b_compat.mjs': [/^2$/m, /^Hello from E2B!$/m],
  // no --pause-criu here: every fork is booted fresh on the files
  'fork.mjs': [/^parent fork mode undefined$/m, /^fork files at the fork$/m, /^one of two files files\none of two files files$/m],
  'git.mjs': [/^untracked README$/m, /^push without upstream true$/m, /^pulled news$/m, /^branches main,topic on topic$/m, /^clean true$/m],
  'template_builder.mjs': [/^FROM e2bdev\/base\nCOPY template_builder\.mjs \/home\/user\/app\/\n/m, /\| .* INFO  Template created with ID: /,
    /^built example-builder:v1 tags v1$/m, /^Hello from the build\ntemplate_builder\.mjs\nready$/m,
    /^failed: true .*exit code 3/m, /^at: at .*template_builder\.mjs:37:/m],
  'templates.mjs': [/^node-hello (built|cached)$/m, /^Hello, Bob!$/m, /^42$/m, /^true RangeError/m],
  'server.mjs': [/^HELLO$/m],
  'volumes.mjs': [/^hello from the host\nfrom sandbox a$/m, /^in use: .*mounted by 2 running sandboxes/m, /^file \/notes\/hello\.txt 35 uid 1000 644$/m,
    /^missing: true$/m, /^destroyed true$/m],
  'mcp_gateway.mjs': [/^url http:\/\/50005-\w+\.localhost:\d+\/mcp$/m, /^tools hello\.hello,/m, /^refused true Failed to start MCP gateway$/m],
  'secrets.mjs': [/^created example-key-\d+ version 1 true$/m, /^updated version 2 \{"env":"example"\}$/m, /^listed true$/m,
    /^header value Bearer \$\{e2b\.secrets\.example-key-\d+\}$/m, /^deleted true$/m],
  'agents.mjs': [/^codex: @openai\/codex .*\(installed\)$/m, /tool\.started: .*echo hi > \/tmp\/x/, /^turn 1: completed, final message "done"$/m,
    /^\/tmp\/x: hi$/m, /turn 2: recall: yes\n$/]
}

const codex = existsSync('/usr/local/lib/agent-sandbox/agents/bin/codex')
const staged = existsSync(path.join(buildDir, 'examples', 'templates', 'node-hello', 'template.yaml'))
for (const [name, patterns] of Object.entries(expect)) {
  const needsHello = name === 'templates.mjs' || name === 'server.mjs'
  const skip = (needsHello && !staged && 'node-hello is not staged (node-binding target)') ||
    (name === 'agents.mjs' && !codex && 'no codex in the host-wide prefix (scripts/agents-cache.sh)')
  const args = needsHello ? [path.join(buildDir, 'examples', 'templates', 'node-hello')]
    : name === 'agents.mjs' ? ['--scripted-model', path.join(repo, 'tests', 'agents', 'scripted_model.py')] : []
  test(name, { skip }, async () => {
    const r = await run(name, args)
    assert.equal(r.code, 0, `${r.out}\n${r.err}`)
    for (const p of patterns) assert.match(r.out, p)
  })
}
