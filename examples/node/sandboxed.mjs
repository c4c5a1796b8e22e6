// sandboxed(): run a JS function in a sandbox (its source and JSON
// arguments shipped, the result returned; a throw there rejects here with
// the remote stack).
// SPDX-License-Identifier: Apache-2.0
import { sandboxed, RemoteError } from 'agent-sandbox'

const primes = sandboxed((n) => {
  const out = []
  for (let i = 2; out.length < n; i++) if (out.every((p) => i % p)) out.push(i)
  return out
})
console.log((await primes(10)).join(', ')) // made, run, killed

const risky = sandboxed(function risky(x) {
  if (x < 0) throw new RangeError('negative')
  return Math.sqrt(x)
})
await risky(-1).catch((e) => console.log(e instanceof RemoteError, e.remoteName, e.message))

const counter = sandboxed(async () => {
  const fs = await import('node:fs')
  const n = fs.existsSync('/tmp/count') ? Number(fs.readFileSync('/tmp/count', 'utf8')) + 1 : 1
  fs.writeFileSync('/tmp/count', String(n))
  return n
}, { keepAlive: true }) // one sandbox for every call
console.log(await counter(), await counter())
await counter.close()
