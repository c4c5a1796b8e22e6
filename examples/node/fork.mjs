// Forks (docs/snapshots.md): a new sandbox with this one's files now, and
// on an engine with --pause-criu its running processes too. The fork
// options: keepProcesses false boots a fork fresh on the files, forkMany
// makes count forks in one call (a sandbox or the Error of each), and each
// fork's forkMode says what it got: 'processes' or 'files'.
// SPDX-License-Identifier: Apache-2.0
import { Sandbox } from 'agent-sandbox'

const sbx = await Sandbox.create({ timeoutMs: 120_000 })
try {
  await sbx.commands.run('echo at the fork > /home/user/state.txt')
  console.log('parent fork mode', sbx.forkMode) // undefined: not a fork
  const fresh = await sbx.fork({ timeoutMs: 60_000, keepProcesses: false })
  console.log('fork', fresh.forkMode, (await fresh.commands.run('cat /home/user/state.txt')).stdout.trim())
  await fresh.kill()
  // the engine's choice: with --pause-criu, 'processes' (the parent's
  // processes run on in each), else 'files'
  for (const f of await sbx.forkMany(2, { timeoutMs: 60_000 })) {
    if (f instanceof Error) {
      console.log('a fork failed to start:', f.message)
      continue
    }
    console.log('one of two', f.forkMode, (await f.getInfo()).forkMode)
    await f.kill()
  }
} finally {
  await sbx.kill()
}
