// An E2B-typed program against agent-sandbox/compat (type-checked only).
// SPDX-License-Identifier: Apache-2.0
import { Sandbox, CommandExitError, SandboxPaginator, E2B, type SandboxInfo } from 'agent-sandbox/compat'
import { Sandbox as CodeSandbox, type Execution } from 'agent-sandbox/compat/code-interpreter'

async function main(): Promise<void> {
  const sbx = await Sandbox.create({ timeoutMs: 60_000 })
  const p: SandboxPaginator = Sandbox.list({ query: { metadata: { a: 'b' } } })
  while (p.hasNext) {
    const items: SandboxInfo[] = await p.nextItems()
    void items
  }
  const again: Sandbox = await sbx.connect()
  await again.betaPause()
  const client = new E2B({ apiKey: 'x' })
  const viaClient: Sandbox = await client.Sandbox.create()
  const ci = await CodeSandbox.create()
  const ex: Execution = await ci.runCode('x = 1; x += 1; x')
  const t: string | undefined = ex.text
  try { await sbx.commands.run('exit 1') } catch (e) { if (e instanceof CommandExitError) void e.stderr }
  void [viaClient, t]
}
void main
