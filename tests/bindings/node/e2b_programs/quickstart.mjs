// E2B's README quickstart (JS): a sandbox, a command; the default export;
// a client with its configuration bound.
import { Sandbox, E2B } from 'e2b'
import SandboxDefault from 'e2b'

const sandbox = await Sandbox.create()
const result = await sandbox.commands.run('echo "Hello from E2B!"')
console.log(result.stdout.trim()) // Hello from E2B!
console.log(typeof SandboxDefault, typeof SandboxDefault.Sandbox) // e2b's ESM build: the exports object

const client = new E2B({ apiKey: process.env.E2B_API_KEY })
const other = await client.Sandbox.create({ metadata: { via: 'client' } })
console.log((await other.getInfo()).metadata.via)
const paginator = client.Sandbox.list({ query: { metadata: { via: 'client' } } })
const items = await paginator.nextItems()
console.log(items.map((s) => s.sandboxId === other.sandboxId), paginator.hasNext)
await other.kill()
await sandbox.kill()
