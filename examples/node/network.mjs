// Sandbox networking (E2B's allowInternetAccess and network): egress off
// except for an allow-list, read back, then changed live. No traffic is
// sent (198.18.0.0/15 is the benchmarking range, RFC 2544).
// SPDX-License-Identifier: Apache-2.0
import { Sandbox, InvalidArgumentError } from 'agent-sandbox'

const sandbox = await Sandbox.create({
  timeoutMs: 120_000,
  allowInternetAccess: false,
  network: { allowOut: ['198.18.0.0/24', 'example.test', '*.example.test'], denyOut: ['198.18.0.66'] }
})
try {
  let info = await sandbox.getInfo()
  console.log('created: internet', info.allowInternetAccess, 'network', JSON.stringify(info.network))
  // live: a new allow-list replaces the old one; denyOut, left out, is cleared
  await sandbox.updateNetwork({ allowOut: ['198.18.1.0/24'], allowInternetAccess: false })
  info = await sandbox.getInfo()
  console.log('updated: network', JSON.stringify(info.network))
  try {
    await sandbox.updateNetwork({ allowout: [] })
  } catch (e) {
    if (!(e instanceof InvalidArgumentError)) throw e
    console.log('refused:', e.message)
  }
} finally {
  await sandbox.kill()
}
