// E2B's Template builder (the stock npm "e2b" package's Template,
// Template.build) against a real agent-sandboxd: the build API
// (POST /v3/templates, file uploads, POST /v2/templates/{id}/builds/{b},
// the status polling), then sandboxes of the built template.
// Run: ENGINE_BIN=... node --test builder.test.mjs   (as root)
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startEngine } from '../support/engine.mjs'

let engine
let e2b
let ctx

before(async () => {
  ctx = fs.mkdtempSync(path.join(os.tmpdir(), 'asb-builder-'))
  engine = await startEngine('npm-builder', ['--image-dir', ctx])
  e2b = await import('e2b')
  fs.mkdirSync(path.join(ctx, 'folder'))
  fs.writeFileSync(path.join(ctx, 'folder', 'a.txt'), 'file a\n')
  fs.writeFileSync(path.join(ctx, 'folder', 'b.txt'), 'file b\n')
  fs.symlinkSync('a.txt', path.join(ctx, 'folder', 'link.txt'))
  fs.writeFileSync(path.join(ctx, 'app.sh'), '#!/bin/sh\necho app\n')
})

after(async () => {
  await engine.stop()
  if (ctx) fs.rmSync(ctx, { recursive: true, force: true })
})

test('Template.build, then Sandbox.create from its name', async () => {
  const logs = []
  const t = e2b.Template({ fileContextPath: ctx })
    .fromTemplate('base')
    .runCmd('echo hi > /home/user/hello')
    .runCmd('test "$(id -un)" = root && echo root-ok > /opt/root-was-here', { user: 'root' })
    .copy('folder/*', 'folder')
    .copy('app.sh', '/opt/app/app.sh', { user: 'root', mode: 0o755 })
    .setEnvs({ GREETING: "it's a test", OTHER: 'two words' })
    .runCmd('echo "$GREETING" > /home/user/env-at-build')
    .makeDir('/home/user/made')
    .makeSymlink('/home/user/hello', '/home/user/hello.link')
    .setWorkdir('/srv/app')
    .runCmd('pwd > /srv/app/where')
    .setStartCmd('echo started > /srv/app/started; sleep infinity', 'test -f /srv/app/started')
  const info = await e2b.Template.build(t, 'npm-built', {
    cpuCount: 1,
    memoryMB: 256,
    onBuildLogs: (l) => logs.push(l),
  })
  assert.equal(info.name, 'npm-built')
  assert.match(info.templateId, /^[A-Za-z0-9]{20}$/)
  assert.ok(logs.some((l) => /ready in/.test(l.message)), 'the build log came through the status')
  assert.equal(await e2b.Template.exists('npm-built'), true)
  assert.equal(await e2b.Template.exists('npm-never-built'), false)

  const sbx = await e2b.Sandbox.create('npm-built', { timeoutMs: 120_000 })
  try {
    const run = async (cmd, opts) => (await sbx.commands.run(cmd, opts)).stdout
    assert.equal(await run('cat /home/user/hello'), 'hi\n')
    assert.equal(await run('cat /opt/root-was-here'), 'root-ok\n')
    // copy 'folder/*' -> 'folder' (relative to the workdir, /home/user), owned by user
    assert.equal(await run('cat /home/user/folder/a.txt /home/user/folder/b.txt'), 'file a\nfile b\n')
    assert.equal(await run('readlink /home/user/folder/link.txt'), 'a.txt\n')
    assert.equal(await run('stat -c %U /home/user/folder/a.txt'), 'user\n')
    assert.equal(await run('stat -c "%U %a" /opt/app/app.sh'), 'root 755\n')
    assert.equal(await run('/opt/app/app.sh'), 'app\n')
    // ENV: in later build steps and in the sandbox's commands
    assert.equal(await run('cat /home/user/env-at-build'), "it's a test\n")
    assert.equal(await run('echo "$GREETING|$OTHER"'), "it's a test|two words\n")
    assert.equal(await run('test -d /home/user/made && readlink /home/user/hello.link'), '/home/user/hello\n')
    // WORKDIR: later steps and the start command run there
    assert.equal(await run('cat /srv/app/where'), '/srv/app\n')
    // the start command ran (as user, in the workdir) before create returned
    assert.equal(await run('cat /srv/app/started && stat -c %U /srv/app/started'), 'started\nuser\n')
  } finally {
    await sbx.kill()
  }
  // the same template again: the files are there already, the build is cached
  const again = []
  const info2 = await e2b.Template.build(t, 'npm-built', { cpuCount: 1, memoryMB: 256, onBuildLogs: (l) => again.push(l.message) })
  assert.equal(info2.templateId, info.templateId)
  assert.ok(again.some((m) => /Skipping upload of 'folder\/\*', already cached/.test(m)), again.join('\n'))
  assert.ok(again.some((m) => /^cached: the inputs are those of build/.test(m)), again.join('\n'))
})

test('a failing step fails Template.build with the step\'s output', async () => {
  const t = e2b.Template().fromTemplate('base').runCmd('echo boom >&2; exit 7')
  await assert.rejects(e2b.Template.build(t, 'npm-fails'), (e) => {
    assert.ok(e instanceof e2b.BuildError, String(e))
    assert.match(e.message, /exit code 7/)
    assert.match(e.message, /boom/)
    return true
  })
  assert.equal(await e2b.Template.exists('npm-fails'), false)
})

test('fromImage with a registry name is refused with the way out', async () => {
  const t = e2b.Template().fromImage('ubuntu:22.04').runCmd('true')
  await assert.rejects(e2b.Template.build(t, 'npm-image'), (e) => {
    assert.match(e.message, /reaches no container registry/)
    assert.match(e.message, /fromTemplate/)
    return true
  })
})

test('fromImage with a local OCI image layout (busybox, two layers, a whiteout)', async () => {
  const spec = path.join(ctx, 'image.json')
  const dir = path.join(ctx, 'oci')
  fs.writeFileSync(spec, JSON.stringify({
    format: 'oci', out: dir, name: 'v1',
    config: { Env: ['PATH=/bin', 'GREETING=hi from the image'] },
    layers: [
      [{ name: 'bin', type: 'dir' }, { name: 'bin/busybox', host: fs.existsSync('/bin/busybox') ? '/bin/busybox' : '/usr/bin/busybox' },
        { name: 'bin/sh', type: 'symlink', link: 'busybox' }, { name: 'gone.txt', data: 'x' }],
      [{ name: 'two.txt', data: 'layer 2\n' }, { name: '.wh.gone.txt' }]]
  }))
  execFileSync('/usr/bin/python3', [path.join(import.meta.dirname, '../support/mkimage.py'), spec])
  const t = e2b.Template().fromImage(`oci:${dir}:v1`).runCmd('echo "built: $GREETING" > /home/user/built.txt')
  await e2b.Template.build(t, 'npm-oci')
  const sbx = await e2b.Sandbox.create('npm-oci')
  try {
    const r = await sbx.commands.run('cat /two.txt /home/user/built.txt; test -e /gone.txt || echo gone; echo "$GREETING"')
    assert.equal(r.stdout, 'layer 2\nbuilt: hi from the image\ngone\nhi from the image\n')
  } finally {
    await sbx.kill()
  }
})

test('runCmd as a user the templates do not have is refused', async () => {
  const t = e2b.Template().fromTemplate('base').runCmd('whoami', { user: 'root123' })
  await assert.rejects(e2b.Template.build(t, 'npm-user'), /unknown user 'root123'/)
})

test('tags: the build\'s, assigned, listed, removed; a rebuild keeps the id', async () => {
  const t = e2b.Template().fromTemplate('base').runCmd('echo v1 > /home/user/v')
  const first = await e2b.Template.build(t, 'npm-tags:v1', { tags: ['stable'] })
  assert.deepEqual([...first.tags].sort(), ['stable', 'v1'])
  const assigned = await e2b.Template.assignTags('npm-tags:v1', ['prod'])
  assert.deepEqual(assigned.tags, ['prod'])
  let tags = await e2b.Template.getTags(first.templateId)
  assert.deepEqual(tags.map((x) => x.tag).sort(), ['prod', 'stable', 'v1'])
  assert.ok(tags.every((x) => x.buildId === first.buildId))
  await e2b.Template.removeTags('npm-tags', ['stable'])
  tags = await e2b.Template.getTags(first.templateId)
  assert.deepEqual(tags.map((x) => x.tag).sort(), ['prod', 'v1'])
  await assert.rejects(e2b.Template.assignTags('npm-tags:nope', ['x']), /not found/)
  const t2 = e2b.Template().fromTemplate('base').runCmd('echo v2 > /home/user/v')
  const second = await e2b.Template.build(t2, 'npm-tags:v2')
  assert.equal(second.templateId, first.templateId)
  assert.notEqual(second.buildId, first.buildId)
  const sbx = await e2b.Sandbox.create('npm-tags:v2', { timeoutMs: 60_000 })
  try {
    assert.equal((await sbx.commands.run('cat /home/user/v')).stdout, 'v2\n')
  } finally {
    await sbx.kill()
  }
  // v1 names the replaced build: not started in its place
  await assert.rejects(e2b.Sandbox.create('npm-tags:v1', { timeoutMs: 60_000 }), /not found/i)
  await assert.rejects(e2b.Sandbox.create('npm-tags:nope', { timeoutMs: 60_000 }), /not found/i)
})

test('an upload without the URL\'s token (or the API key) is refused', async () => {
  const base = process.env.E2B_API_URL
  const res = await fetch(`${base}/v3/templates`, {
    method: 'POST',
    headers: { 'X-API-Key': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'npm-upload' }),
  })
  assert.equal(res.status, 202)
  const { templateID } = await res.json()
  const hash = 'ab'.repeat(32)
  const link = await (await fetch(`${base}/templates/${templateID}/files/${hash}`, {
    headers: { 'X-API-Key': process.env.E2B_API_KEY },
  })).json()
  assert.equal(link.present, false)
  const bare = link.url.replace(/\?.*$/, '')
  assert.equal((await fetch(bare, { method: 'PUT', body: 'x' })).status, 401)
  assert.equal((await fetch(`${bare}?token=${'0'.repeat(64)}`, { method: 'PUT', body: 'x' })).status, 401)
  // with the token, a body that is no tar is refused and nothing is stored
  assert.equal((await fetch(link.url, { method: 'PUT', body: 'not a tar' })).status, 400)
})

test('the same files in two steps: both uploads (in parallel) succeed', async () => {
  const t = e2b.Template({ fileContextPath: ctx })
    .fromTemplate('base')
    .copy('app.sh', '/opt/twice/app.sh', { user: 'root' })
    .copy('app.sh', '/opt/twice/app.sh', { user: 'root' })
  await e2b.Template.build(t, 'npm-twice')
  const sbx = await e2b.Sandbox.create('npm-twice', { timeoutMs: 60_000 })
  try {
    assert.equal((await sbx.commands.run('cat /opt/twice/app.sh')).stdout, '#!/bin/sh\necho app\n')
  } finally {
    await sbx.kill()
  }
})
