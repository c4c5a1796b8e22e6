// node.git: sandbox.git (asb_git_*) through the Node binding, native and
// through agent-sandbox/compat with E2B's JS names: a repository from init
// to push, pull and clone against a bare repository inside the sandbox (no
// network), status and branches, reset and restore, and the errors
// (CommandExitError, GitUpstreamError, InvalidArgumentError) carrying git's
// result.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { engine as startEngine } from './helpers.mjs'

let engine, lib, compat, sbx
const base = `/tmp/nodegit-${process.pid}`

before(async () => {
  engine = await startEngine('git')
  lib = await import('agent-sandbox')
  compat = await import('agent-sandbox/compat')
  sbx = await lib.Sandbox.create({ timeoutMs: 600_000 })
  await sbx.commands.run(`mkdir -p ${base}`)
})

after(async () => {
  if (sbx) await sbx.kill()
  await engine.stop()
})

test('init, commit, push, pull, clone and branches', async () => {
  const git = sbx.git
  await git.init(`${base}/remote.git`, { bare: true, initialBranch: 'main' })
  const repo = `${base}/repo`
  await git.init(repo, { initialBranch: 'main' })
  await git.configureUser('Node Bot', 'node@example.com', { scope: 'local', path: repo })
  assert.equal(await git.getConfig('user.name', { scope: 'local', path: repo }), 'Node Bot')
  assert.equal(await git.getConfig('asbtest.unset', { scope: 'local', path: repo }), undefined)
  await sbx.files.write(`${repo}/a.txt`, 'one\n')

  let st = await git.status(repo)
  assert.equal(st.currentBranch, 'main')
  assert.equal(st.detached, false)
  assert.equal(st.upstream, undefined)
  assert.deepEqual(st.fileStatus.map((f) => [f.name, f.status, f.staged]), [['a.txt', 'untracked', false]])
  assert.ok(st.hasUntracked && !st.isClean && st.untrackedCount === 1)

  await git.add(repo, { all: true })
  st = await git.status(repo)
  assert.ok(st.hasStaged && st.fileStatus[0].status === 'added' && st.stagedCount === 1)
  const r = await git.commit(repo, 'first', { authorName: 'A U', authorEmail: 'au@example.com' })
  assert.equal(r.exitCode, 0)
  assert.ok((await git.status(repo)).isClean)
  const log = await sbx.commands.run(`git -C ${repo} log -1 --format=%an/%s`)
  assert.equal(log.stdout, 'A U/first\n')

  await assert.rejects(git.commit(repo, 'nothing to commit'), (e) => {
    assert.ok(e instanceof lib.CommandExitError, e.name)
    assert.notEqual(e.exitCode, 0)
    assert.match(e.stdout + e.stderr, /nothing/)
    return true
  })

  await git.remoteAdd(repo, 'origin', `${base}/remote.git`)
  assert.equal(await git.remoteGet(repo, 'origin'), `${base}/remote.git`)
  assert.equal(await git.remoteGet(repo, 'nope'), undefined)
  await assert.rejects(git.push(repo), (e) => {
    assert.ok(e instanceof lib.GitUpstreamError, e.name)
    assert.equal(e.code, 'ASB_EGITUPSTREAM')
    assert.equal(typeof e.result.stderr, 'string')
    return true
  })
  await git.push(repo, { remote: 'origin', branch: 'main' })
  st = await git.status(repo)
  assert.deepEqual([st.upstream, st.ahead, st.behind], ['origin/main', 0, 0])

  const clone = `${base}/clone`
  await git.clone(`${base}/remote.git`, { path: clone })
  await sbx.files.write(`${clone}/b.txt`, 'two\n')
  await git.add(clone, { files: ['b.txt'] })
  await git.commit(clone, 'second', { authorName: 'B U', authorEmail: 'bu@example.com' })
  await git.push(clone)
  await git.pull(repo)
  assert.equal(await sbx.files.read(`${repo}/b.txt`), 'two\n')

  await git.createBranch(repo, 'topic')
  assert.deepEqual(await git.branches(repo), { branches: ['main', 'topic'], currentBranch: 'topic' })
  await git.checkoutBranch(repo, 'main')
  await git.deleteBranch(repo, 'topic', { force: true })
  assert.deepEqual((await git.branches(repo)).branches, ['main'])
})

test('reset and restore', async () => {
  const git = sbx.git
  const repo = `${base}/rr`
  await git.init(repo, { initialBranch: 'main' })
  await git.configureUser('R', 'r@example.com', { scope: 'local', path: repo })
  await sbx.files.write(`${repo}/f.txt`, 'v1\n')
  await git.add(repo)
  await git.commit(repo, 'v1')
  await sbx.files.write(`${repo}/f.txt`, 'v2\n')
  await git.restore(repo, { paths: ['f.txt'] })
  assert.equal(await sbx.files.read(`${repo}/f.txt`), 'v1\n')
  await sbx.files.write(`${repo}/f.txt`, 'v3\n')
  await git.add(repo, { files: ['f.txt'] })
  await git.restore(repo, { paths: ['f.txt'], staged: true })
  assert.equal((await git.status(repo)).fileStatus[0].staged, false)
  await git.reset(repo, { mode: 'hard' })
  assert.equal(await sbx.files.read(`${repo}/f.txt`), 'v1\n')
  await assert.rejects(git.reset(repo, { mode: 'sideways' }), lib.InvalidArgumentError)
})

test('bad arguments are refused before anything runs', async () => {
  await assert.rejects(sbx.git.clone('https://example.invalid/r.git', { path: `${base}/x`, password: 'p' }),
    lib.InvalidArgumentError)
  await assert.rejects(sbx.git.clone(`${base}/remote.git`, { path: `${base}/x`, username: 'u', password: 'p' }),
    lib.InvalidArgumentError)
  assert.ok(lib.GitAuthError.prototype instanceof lib.AuthenticationError)
})

test('compat: E2B JS names on a compat sandbox', async () => {
  const sb = await compat.Sandbox.connect(sbx.sandboxId)
  const repo = `${base}/compat`
  const r = await sb.git.init(repo, { initialBranch: 'trunk' })
  assert.equal(r.exitCode, 0)
  await sb.git.setConfig('user.name', 'Compat', { scope: 'local', path: repo })
  assert.equal(await sb.git.getConfig('user.name', { scope: 'local', path: repo }), 'Compat')
  const st = await sb.git.status(repo)
  assert.ok(st.isClean && st.totalCount === 0)
  assert.equal(compat.GitUpstreamError, lib.GitUpstreamError)
  assert.equal(compat.GitAuthError, lib.GitAuthError)
})
