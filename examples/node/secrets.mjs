// Secrets: a named value the control plane keeps for the egress proxy,
// which puts it into requests whose network.rules header values name it
// (Secrets.fill(name), "${e2b.secrets.<name>}"). The value goes in and
// never comes out: every result is its id, name, version, times and
// metadata (docs/reference/secret.md, docs/egress.md).
// SPDX-License-Identifier: Apache-2.0
import { Secrets } from 'agent-sandbox'

const name = `example-key-${process.pid}`
const s = await Secrets.create(name, 'sk-not-a-real-key', { metadata: { env: 'example' } })
try {
  console.log('created', s.name, 'version', s.version, s.id.startsWith('sec_'))
  const u = await Secrets.update(name, 'sk-rotated')
  console.log('updated version', u.version, JSON.stringify(u.metadata))
  console.log('listed', (await Secrets.list()).some((x) => x.id === s.id))
  console.log('header value', `Bearer ${Secrets.fill(name)}`)
} finally {
  console.log('deleted', await Secrets.delete(s.id))
}
