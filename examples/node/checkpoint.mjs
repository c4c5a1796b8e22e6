// A pause with memory to disk (the engine's --pause-criu, docs/lifecycle.md):
// a process counts in the sandbox; the pause writes its memory to the
// sandbox's disk (pauseMode 'checkpoint', the RAM freed), the resume
// restores it and the same process counts on from where it was. Against an
// engine without --pause-criu the pause keeps the RAM (pauseMode 'memory')
// and the process goes on just the same.
// SPDX-License-Identifier: Apache-2.0
import { Sandbox } from 'agent-sandbox'

const COUNTER = `python3 -c "import os, time
i = 0
while True:
    i += 1
    open('/tmp/count.new', 'w').write('%d %d' % (os.getpid(), i))
    os.rename('/tmp/count.new', '/tmp/count')
    time.sleep(0.1)"`

// The counter's [pid, count] once its count is past `after`.
async function count (sandbox, after = 0) {
  for (const end = Date.now() + 60_000; Date.now() < end;) {
    if (await sandbox.files.exists('/tmp/count')) {
      const [pid, n] = (await sandbox.files.read('/tmp/count')).split(' ').map(Number)
      if (n > after) return [pid, n]
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error('the counter does not count')
}

const sandbox = await Sandbox.create({ timeoutMs: 300_000 })
try {
  const counter = await sandbox.commands.run(COUNTER, { background: true })
  // Stop streaming its output: under --pause-criu a stream still open into
  // the sandbox fails the dump (docs/lifecycle.md). The process runs on.
  await counter.disconnect()
  const [pid, before] = await count(sandbox, 2)
  console.log('counting: pid', pid, 'at', before)
  await sandbox.pause()
  const info = await sandbox.getInfo()
  console.log('paused:', info.state, 'pause mode', info.pauseMode)
  await sandbox.resume({ timeoutMs: 120_000 })
  const [pid2, at] = await count(sandbox) // where it stopped: not started again
  const [pid3, later] = await count(sandbox, at) // and it runs again
  const same = pid2 === pid && pid3 === pid && at >= before && later > at
  console.log('resumed: pid', pid3, 'at', at, 'then', later + ':',
    same ? 'the same process counts on' : 'NOT the same process going on')
  if (!same) process.exitCode = 1
} finally {
  await sandbox.kill()
}
