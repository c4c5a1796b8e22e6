// E2B's mcp option natively: Sandbox.create({ mcp }) makes a sandbox of the
// bundled mcp-gateway template and starts the gateway in it with the MCP
// servers given (here one stdio server, inline); getMcpUrl() and
// getMcpToken() are what an MCP client needs (docs/mcp.md, "The gateway").
// The request goes to the sandbox's port 50005 through loopbackUrl (no
// *.localhost name to resolve).
// SPDX-License-Identifier: Apache-2.0
import { Sandbox, SandboxError } from 'agent-sandbox'

// a stdio MCP server with one tool (newline-delimited JSON-RPC)
const server = [
  'import json, sys',
  'for line in sys.stdin:',
  '    m = json.loads(line)',
  '    if "id" not in m: continue',
  '    r = {"tools": [{"name": "hello", "inputSchema": {"type": "object"}}]} if m["method"] == "tools/list" else {}',
  '    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\\n"); sys.stdout.flush()'
].join('\n')

const sbx = await Sandbox.create({ mcp: { 'github/example/hello': { runCmd: `python3 -c '${server}'` } }, timeoutMs: 60_000 })
try {
  console.log('url', sbx.getMcpUrl())
  const token = await sbx.getMcpToken()
  const res = await fetch(`${await sbx.loopbackUrl(50005)}/mcp`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })
  })
  console.log('tools', (await res.json()).result.tools.map((t) => t.name).join(','))
} finally {
  await sbx.kill()
}

// a gateway that does not start: the sandbox is killed, the create rejects
try {
  await Sandbox.create({ mcp: { exa: { apiKey: 'k' } } })
} catch (e) {
  console.log('refused', e instanceof SandboxError, e.message.split(':')[0])
}
