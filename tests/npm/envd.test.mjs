// The stock E2B JS SDK (npm "e2b", pinned) in debug mode against a real envd.
// Run: node --test envd.test.mjs   (ENVD_BIN points at the built envd)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, chownSync, chmodSync, writeFileSync } from 'node:fs'
import { execSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const ENVD = process.env.ENVD_BIN || path.join(here, '../../build/core/envd/envd')

// Waits for a condition, polling; the deadline only ends a test that
// would otherwise hang (a slow machine never decides a result).
const DEADLINE_MS = 120_000
async function until(cond, ms = DEADLINE_MS) {
  const end = Date.now() + ms
  while (!(await cond()) && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
  return cond()
}

let envd
let sbx
let e2b
let dir
// Files in /root that only root may read or create: named per run, since
// other runs of this suite on the machine use /root at the same time.
const secret = `/root/asb-npm-secret-${process.pid}`
const hasUser = (() => {
  try { execSync('id user', { stdio: 'ignore' }); return true } catch { return false }
})()

function startEnvd() {
  return new Promise((resolve, reject) => {
    // Like an E2B sandbox: commands run as the unprivileged "user" unless a
    // call names another user.
    const args = ['--port', '0', ...(hasUser ? ['--default-user', 'user'] : [])]
    const p = spawn(ENVD, args, { stdio: ['ignore', 'pipe', 'inherit'] })
    let buf = ''
    p.stdout.on('data', (d) => {
      buf += d.toString()
      const nl = buf.indexOf('\n')
      if (nl >= 0) resolve({ proc: p, port: parseInt(buf.slice(0, nl), 10) })
    })
    p.on('error', reject)
    p.on('exit', (code) => reject(new Error(`envd exited with ${code}`)))
  })
}

before(async () => {
  const { proc, port } = await startEnvd()
  envd = proc
  process.env.E2B_DEBUG = 'true'
  process.env.E2B_SANDBOX_URL = `http://127.0.0.1:${port}`
  e2b = await import('e2b')
  sbx = await e2b.Sandbox.create({ debug: true, sandboxUrl: process.env.E2B_SANDBOX_URL })
  dir = mkdtempSync('/tmp/asb-npm-')
  writeFileSync(secret, 'secret', { mode: 0o600 })
  if (hasUser) chownSync(dir, parseInt(execSync('id -u user').toString()), parseInt(execSync('id -g user').toString()))
})

after(async () => {
  // envd must shut down cleanly (the sanitizer build reports leaks and
  // errors through its exit status).
  const exited = new Promise((resolve) => envd.once('exit', (code, sig) => resolve({ code, sig })))
  envd.kill('SIGTERM')
  const { code, sig } = await exited
  assert.equal(code, 0, `envd exited with ${code} ${sig}`)
  if (dir) rmSync(dir, { recursive: true, force: true })
  rmSync(secret, { force: true })
})

test('commands.run: stdout, stderr, exit code', async () => {
  const r = await sbx.commands.run('echo hello; echo oops >&2')
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'hello\n')
  assert.equal(r.stderr, 'oops\n')
  await assert.rejects(sbx.commands.run('echo out; exit 3'), (err) => {
    assert.ok(err instanceof e2b.CommandExitError)
    assert.equal(err.exitCode, 3)
    assert.equal(err.stdout, 'out\n')
    assert.match(err.error, /exit status 3/)
    return true
  })
})

test('commands.run: envs, cwd, user', async () => {
  const r = await sbx.commands.run('echo $FOO; pwd', { envs: { FOO: 'bar baz' }, cwd: '/tmp' })
  assert.equal(r.stdout, 'bar baz\n/tmp\n')
  if (hasUser) {
    const u = await sbx.commands.run('whoami; echo $HOME; pwd')
    assert.equal(u.stdout, 'user\n/home/user\n/home/user\n')
  }
  await assert.rejects(sbx.commands.run('true', { cwd: '/does/not/exist' }))
})

test('commands: background, list, connect, kill', async () => {
  const h = await sbx.commands.run('sleep 30', { background: true })
  assert.ok(h.pid > 0)
  const list = await sbx.commands.list()
  assert.ok(list.some((p) => p.pid === h.pid && p.cmd === '/bin/bash'))
  const h2 = await sbx.commands.connect(h.pid)
  assert.equal(await sbx.commands.kill(h.pid), true)
  await assert.rejects(h2.wait(), (err) => {
    assert.ok(err instanceof e2b.CommandExitError)
    assert.match(err.error, /signal: killed/)
    return true
  })
  assert.equal(await sbx.commands.kill(999999), false)
  await assert.rejects(sbx.commands.connect(999999))
})

test('commands: background survives disconnect and streams output', async () => {
  // it prints once told to (stdin), after the reconnect, however slow we are
  const h = await sbx.commands.run('read go; for i in 1 2 3; do echo line$i; done',
    { background: true, stdin: true })
  await h.disconnect()
  const again = await sbx.commands.connect(h.pid)
  await sbx.commands.sendStdin(h.pid, 'go\n')
  const r = await again.wait()
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'line1\nline2\nline3\n')
})

test('commands: timeoutMs kills the process inside the sandbox', async () => {
  const t0 = Date.now()
  await assert.rejects(sbx.commands.run('sleep 600', { timeoutMs: 500 }), (err) => {
    assert.ok(err instanceof e2b.TimeoutError, String(err))
    return true
  })
  assert.ok(Date.now() - t0 < DEADLINE_MS) // the timeout, not the command's end
  const h = await sbx.commands.run('sleep 600', { background: true, timeoutMs: 300 })
  await h.disconnect()
  const gone = await until(async () => !(await sbx.commands.list()).some((p) => p.pid === h.pid))
  assert.ok(gone, 'timed-out process still listed')
})

test('commands: stdin (sendStdin, closeStdin)', async () => {
  const h = await sbx.commands.run('cat', { background: true, stdin: true })
  await sbx.commands.sendStdin(h.pid, 'hello stdin\n')
  await sbx.commands.closeStdin(h.pid)
  const r = await h.wait()
  assert.equal(r.stdout, 'hello stdin\n')
})

test('pty: create, sendInput, resize, output, kill', async () => {
  let out = ''
  const dec = new TextDecoder()
  const t = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += dec.decode(d) } })
  await sbx.pty.resize(t.pid, { cols: 100, rows: 30 })
  await sbx.pty.sendInput(t.pid, new TextEncoder().encode('stty size; echo pty-$((40+2))\n'))
  await until(() => out.includes('pty-42') && out.includes('30 100'))
  assert.ok(out.includes('pty-42'), out)
  assert.ok(out.includes('30 100'), out)
  assert.equal(await sbx.pty.kill(t.pid), true)
  await assert.rejects(t.wait())
})

test('files: write/read text and bytes, big, list, exists, getInfo', async () => {
  const p = `${dir}/a/b/hello.txt`
  const w = await sbx.files.write(p, 'hello world')
  assert.equal(w.path, p)
  assert.equal(w.name, 'hello.txt')
  assert.equal(await sbx.files.read(p), 'hello world')
  const bytes = new Uint8Array(256).map((_, i) => i)
  await sbx.files.write(`${dir}/bin`, bytes)
  const back = await sbx.files.read(`${dir}/bin`, { format: 'bytes' })
  assert.deepEqual(Buffer.from(back), Buffer.from(bytes))
  const big = Buffer.alloc(24 * 1024 * 1024, 'x')
  await sbx.files.write(`${dir}/big`, big)
  const bigBack = await sbx.files.read(`${dir}/big`, { format: 'bytes' })
  assert.equal(bigBack.length, big.length)
  const gz = await sbx.files.read(p, { gzip: true })
  assert.equal(gz, 'hello world')
  const entries = await sbx.files.list(dir)
  assert.deepEqual(entries.map((e) => e.name).sort(), ['a', 'big', 'bin'])
  assert.equal(entries.find((e) => e.name === 'a').type, 'dir')
  const deep = await sbx.files.list(dir, { depth: 3 })
  assert.ok(deep.some((e) => e.path === p))
  assert.equal(await sbx.files.exists(p), true)
  assert.equal(await sbx.files.exists(`${dir}/nope`), false)
  const info = await sbx.files.getInfo(p)
  assert.equal(info.type, 'file')
  assert.equal(info.size, 11)
  assert.equal(info.permissions, '-rw-r--r--')
  assert.ok(info.modifiedTime instanceof Date)
  await assert.rejects(sbx.files.read(`${dir}/nope`), (err) => err instanceof e2b.NotFoundError)
})

test('files: octet-stream, gzip and multi-file uploads', async () => {
  await sbx.files.write(`${dir}/gz.txt`, 'zipped', { gzip: true })
  assert.equal(await sbx.files.read(`${dir}/gz.txt`), 'zipped')
  await sbx.files.write(`${dir}/oct.txt`, 'octet', { useOctetStream: true })
  assert.equal(await sbx.files.read(`${dir}/oct.txt`), 'octet')
  const infos = await sbx.files.write([
    { path: `${dir}/m1.txt`, data: 'one' },
    { path: `${dir}/m2.txt`, data: 'two' },
  ])
  assert.equal(infos.length, 2)
  assert.equal(await sbx.files.read(`${dir}/m2.txt`), 'two')
})

test('files: metadata and watch entries', async () => {
  const w = await sbx.files.write(`${dir}/meta.txt`, 'm', { metadata: { project: 'asb', Owner: 'me' } })
  assert.deepEqual(w.metadata, { project: 'asb', owner: 'me' })
  const info = await sbx.files.getInfo(`${dir}/meta.txt`)
  assert.deepEqual(info.metadata, { project: 'asb', owner: 'me' })
  await sbx.files.makeDir(`${dir}/we`)
  const events = []
  const h = await sbx.files.watchDir(`${dir}/we`, (e) => events.push(e), { includeEntry: true })
  await sbx.files.write(`${dir}/we/x.txt`, 'hello')
  await until(() => events.some((e) => e.name === 'x.txt' && e.entry))
  await h.stop()
  const ev = events.find((e) => e.name === 'x.txt' && e.entry)
  assert.ok(ev, JSON.stringify(events))
  assert.equal(ev.entry.name, 'x.txt')
  assert.equal(ev.entry.type, 'file')
})

test('files: remove, rename, makeDir', async () => {
  assert.equal(await sbx.files.makeDir(`${dir}/d1/d2`), true)
  assert.equal(await sbx.files.makeDir(`${dir}/d1/d2`), false)
  await sbx.files.write(`${dir}/d1/f`, 'x')
  const moved = await sbx.files.rename(`${dir}/d1/f`, `${dir}/d3/g`)
  assert.equal(moved.path, `${dir}/d3/g`)
  assert.equal(await sbx.files.exists(`${dir}/d1/f`), false)
  await sbx.files.remove(`${dir}/d1`)
  assert.equal(await sbx.files.exists(`${dir}/d1`), false)
  await sbx.files.remove(`${dir}/never-existed`)
})

test('files: as user, reads are the user\'s, writes E2B\'s (as root, chowned)', { skip: !hasUser }, async () => {
  await assert.rejects(sbx.files.read(secret))
  assert.equal(await sbx.files.read(secret, { user: 'root' }), 'secret')
  // A root-owned directory standing in for / and /etc: E2B's envd writes as
  // root, makes the missing parents and gives what it made to the user.
  const rootDir = mkdtempSync('/tmp/asb-npm-root-')
  try {
    chmodSync(rootDir, 0o755)
    const w = await sbx.files.write(`${rootDir}/0/multi_test_file0.txt`, 'mine')
    assert.equal((await sbx.files.getInfo(w.path)).owner, 'user')
    assert.equal((await sbx.files.getInfo(`${rootDir}/0`)).owner, 'user')
    assert.equal(await sbx.files.makeDir(`${rootDir}/newdir`), true)
    assert.equal((await sbx.files.getInfo(`${rootDir}/newdir`)).owner, 'user')
    assert.equal((await sbx.files.getInfo(rootDir)).owner, 'root')
    // an existing root-owned file is overwritten and becomes the user's
    writeFileSync(`${rootDir}/conf`, 'old', { mode: 0o644 })
    await sbx.files.write(`${rootDir}/conf`, 'new')
    assert.equal((await sbx.files.getInfo(`${rootDir}/conf`)).owner, 'user')
    assert.equal(await sbx.files.read(`${rootDir}/conf`), 'new')
  } finally {
    rmSync(rootDir, { recursive: true, force: true })
  }
  const w = await sbx.files.write(`${dir}/owned/u.txt`, 'mine')
  const info = await sbx.files.getInfo(w.path)
  assert.equal(info.owner, 'user')
  const dinfo = await sbx.files.getInfo(`${dir}/owned`)
  assert.equal(dinfo.owner, 'user')
})

test('files: watchDir create/write/remove events', async () => {
  await sbx.files.makeDir(`${dir}/w`)
  const events = []
  const h = await sbx.files.watchDir(`${dir}/w`, (e) => events.push(e), { recursive: true })
  await sbx.files.write(`${dir}/w/f.txt`, 'data')
  await sbx.files.makeDir(`${dir}/w/sub`)
  // at once: envd reports what a new directory holds when it adds its watch
  await sbx.files.write(`${dir}/w/sub/g.txt`, 'data')
  await sbx.files.remove(`${dir}/w/f.txt`)
  const has = (name, type) => events.some((e) => e.name === name && e.type === type)
  // create, chmod (the chown to the user, as E2B's envd does) and write
  await until(() => has('f.txt', 'create') && has('f.txt', 'write') && has('f.txt', 'chmod') &&
    has('f.txt', 'remove') &&
    has('sub', 'create') && has('sub/g.txt', 'create'))
  await h.stop()
  assert.ok(has('f.txt', 'create'), JSON.stringify(events))
  assert.ok(has('f.txt', 'write'), JSON.stringify(events))
  assert.ok(has('f.txt', 'chmod'), JSON.stringify(events))
  assert.ok(has('f.txt', 'remove'), JSON.stringify(events))
  assert.ok(has('sub', 'create'), JSON.stringify(events))
  assert.ok(has('sub/g.txt', 'create'), JSON.stringify(events))
})
