// node.secrets: the native Secrets API (asb_secrets_*, secret.h) against
// the engine's /secrets store: create, get by id and by name, update (new
// version; metadata kept unless given), list page by page, delete; a taken
// name, a bad name and an unknown secret are errors; no result carries a
// value.
// SPDX-License-Identifier: Apache-2.0
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { engine as startEngine } from './helpers.mjs'

let engine, lib

before(async () => {
  engine = await startEngine('secrets')
  lib = await import('agent-sandbox')
})

after(async () => {
  await engine.stop()
})

test('Secrets: create, get, update, list, delete; values never come back', async () => {
  const { Secrets } = lib
  const tag = `nd-sec-${process.pid}`
  const made = []
  try {
    const a = await Secrets.create(`${tag}-a`, 'sk-value-a', { metadata: { env: 'test' } })
    made.push(a.id)
    assert.match(a.id, /^sec_/)
    assert.equal(a.name, `${tag}-a`)
    assert.equal(a.version, 1)
    assert.deepEqual(a.metadata, { env: 'test' })
    assert.ok(a.createdAt instanceof Date && a.createdAt.getUTCFullYear() >= 2026)
    assert.equal((await Secrets.get(a.name)).id, a.id) // by name and by id
    assert.equal((await Secrets.get(a.id)).name, a.name)
    const u = await Secrets.update(a.id, 'sk-value-a2')
    assert.equal(u.version, 2)
    assert.deepEqual(u.metadata, { env: 'test' }) // kept
    assert.deepEqual((await Secrets.update(a.name, 'sk-value-a3', { metadata: { k: 'v' } })).metadata, { k: 'v' })
    for (const n of 'bc') made.push((await Secrets.create(`${tag}-${n}`, 'sk-value-x')).id)
    await assert.rejects(Secrets.create(`${tag}-b`, 'v'), (e) => e.code === 'ASB_EEXISTS')
    await assert.rejects(Secrets.create('bad name{', 'v'), lib.InvalidArgumentError)
    await assert.rejects(Secrets.update('no-such-secret', 'v'), lib.NotFoundError)
    await assert.rejects(Secrets.get('no-such-secret'), lib.NotFoundError)
    // page by page (limit 2: two pages for three), then all at once
    const ids = []
    let nextToken
    let pages = 0
    do {
      const p = await Secrets.listPage({ limit: 2, nextToken })
      assert.ok(p.items.length <= 2)
      ids.push(...p.items.map((s) => s.id))
      nextToken = p.nextToken
      pages++
    } while (nextToken)
    assert.deepEqual(ids, made)
    assert.equal(pages, 2)
    const all = await Secrets.list()
    assert.deepEqual(all.map((s) => s.id), made)
    assert.ok(!JSON.stringify(all).includes('sk-value'))
    assert.ok(!JSON.stringify(await Secrets.get(a.id)).includes('sk-value'))
    assert.equal(await Secrets.delete(made[1]), true)
    assert.equal(await Secrets.delete(made[1]), false)
    assert.deepEqual((await Secrets.list()).map((s) => s.id), [made[0], made[2]])
    assert.equal(Secrets.fill(a.name), '${e2b.secrets.' + a.name + '}')
  } finally {
    for (const id of made) await Secrets.delete(id)
  }
})
