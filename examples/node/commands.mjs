// Commands: results and exit codes, streaming, stdin, background handles,
// async iteration over output, cancellation with AbortSignal, ptys.
// SPDX-License-Identifier: Apache-2.0
import { Sandbox, CommandExitError } from 'agent-sandbox'

const sandbox = await Sandbox.create()
try {
  const r = await sandbox.commands.run('ls /; exit 3')
  console.log('exit code', r.exitCode) // a non-zero exit code is in the result
  try {
    await sandbox.commands.run('exit 4', { check: true })
  } catch (e) {
    if (e instanceof CommandExitError) console.log('check: exit', e.exitCode)
  }
  await sandbox.commands.run('for i in 1 2 3; do echo line $i; sleep 0.1; done', {
    onStdout: (data) => process.stdout.write(`[stdout] ${data}`),
    envs: { LANG: 'C.UTF-8' },
    cwd: '/tmp'
  })
  console.log((await sandbox.commands.run('tr a-z A-Z', { stdin: 'shout\n' })).stdout.trim())

  const server = await sandbox.commands.run('python3 -m http.server 8000', { background: true })
  console.log('listening', server.pid, sandbox.getUrl(8000))
  await server.kill()

  const counter = await sandbox.commands.run('for i in 1 2 3; do echo $i; done; echo done >&2', { background: true })
  for await (const chunk of counter) console.log(chunk.type, JSON.stringify(chunk.data))

  const ac = new AbortController()
  setTimeout(() => ac.abort(), 500)
  await sandbox.commands.run('sleep 60', { signal: ac.signal }).catch((e) => console.log('aborted:', e.name)) // and killed

  const out = []
  const pty = await sandbox.pty.create({ cols: 80, rows: 24, onData: (d) => out.push(Buffer.from(d)) })
  await sandbox.pty.sendInput(pty.pid, 'echo $TERM; exit\n')
  await pty.wait()
  console.log(Buffer.concat(out).toString().includes('xterm-256color'))
} finally {
  await sandbox.kill()
}
