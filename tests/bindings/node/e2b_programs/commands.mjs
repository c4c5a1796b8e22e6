// E2B docs, commands: run, stream output, run in the background, send
// stdin, exit codes as CommandExitError, connect, list, kill; pty.
import { Sandbox, CommandExitError } from 'e2b'

const sandbox = await Sandbox.create()
const result = await sandbox.commands.run('ls -l /home/user | wc -l')
console.log('exit', result.exitCode, typeof result.stdout)

const lines = []
await sandbox.commands.run('echo hello; sleep 0.1; echo world', {
  onStdout: (data) => lines.push(data.trim())
})
console.log(lines.join(' '))

try {
  await sandbox.commands.run('echo bad >&2; exit 3')
} catch (err) {
  console.log(err instanceof CommandExitError, err.exitCode, err.stderr.trim())
}

const command = await sandbox.commands.run('echo start; sleep 30; echo never', {
  background: true,
  onStdout: (data) => console.log('background:', data.trim())
})
await new Promise((r) => setTimeout(r, 500))
const procs = await sandbox.commands.list()
console.log('listed', procs.some((p) => p.pid === command.pid))
console.log('killed', await command.kill())
// once it has ended (a second kill right after the first races the end)
await command.wait().catch(() => {})
console.log('again', await sandbox.commands.kill(command.pid))

const cat = await sandbox.commands.run('cat', { background: true, stdin: true })
await sandbox.commands.sendStdin(cat.pid, 'from stdin\n')
await cat.closeStdin()
const done = await cat.wait()
console.log(done.stdout.trim(), cat.exitCode)

// ends when told to (a 1 s sleep could end before the connect under load)
const bg = await sandbox.commands.run('while [ ! -e /tmp/reconnect-go ]; do sleep 0.05; done; echo reconnected', { background: true })
await bg.disconnect()
const again = await sandbox.commands.connect(bg.pid)
await sandbox.files.write('/tmp/reconnect-go', '')
console.log((await again.wait()).stdout.trim())

const failing = await sandbox.commands.run('exit 5', { background: true })
await failing.wait().catch((e) => console.log('wait', e instanceof CommandExitError, e.exitCode))

const out = []
const terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: (data) => out.push(...data) })
await sandbox.pty.sendInput(terminal.pid, new TextEncoder().encode('echo pty-$((40+2)); exit\n'))
await terminal.wait()
console.log(Buffer.from(out).toString().includes('pty-42'))
await sandbox.kill()
