// Code: runCode in a kernel, callbacks, rich results, errors, contexts,
// other languages, an interrupt by AbortSignal.
// SPDX-License-Identifier: Apache-2.0
import { Sandbox } from 'agent-sandbox'

const sandbox = await Sandbox.create()
try {
  const e = await sandbox.runCode('import math\nx = math.factorial(20)\nprint("computing")\nx', {
    onStdout: (m) => console.log('stdout:', m.line.trim()),
    onResult: (r) => console.log('result formats:', r.formats())
  })
  console.log(e.text, e.executionCount)
  const err = await sandbox.runCode('1/0')
  console.log(err.error.name, err.error.value)
  const ctx = await sandbox.createCodeContext({ cwd: '/tmp' })
  await sandbox.runCode('y = 41', { context: ctx })
  console.log((await sandbox.runCode('y + 1', { context: ctx })).text)
  console.log((await sandbox.runCode('[1, 2, 3].map(v => v * v)', { language: 'javascript' })).text)
  const ac = new AbortController()
  setTimeout(() => ac.abort(), 300)
  await sandbox.runCode('import time; time.sleep(60)', { signal: ac.signal }).catch((x) => console.log('interrupted:', x.name))
  console.log((await sandbox.runCode('"the kernel lives on"')).text)
} finally {
  await sandbox.kill()
}
