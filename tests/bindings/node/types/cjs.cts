// CommonJS consumers: require() and its types (type-checked only).
// SPDX-License-Identifier: Apache-2.0
import asb = require('agent-sandbox')
import compat = require('agent-sandbox/compat')

async function main(): Promise<void> {
  const s: asb.Sandbox = await asb.Sandbox.create()
  const viaDefault: asb.Sandbox = await asb.default.create()
  const c: compat.Sandbox = await compat.default.create()
  const r: asb.CommandResult = await s.commands.run('true')
  void [viaDefault, c, r]
}
void main
