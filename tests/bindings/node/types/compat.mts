// An E2B-typed program against agent-sandbox/compat (type-checked only).
// SPDX-License-Identifier: Apache-2.0
import { Template, type TemplateBuilder, type TemplateFinal, waitForPort, defaultBuildLogger, type BuildInfo, type TemplateBuildStatusResponse, type TemplateTag, Sandbox, CommandExitError, SandboxPaginator, E2B, ALL_TRAFFIC, Volume, VolumeNotFoundError, VolumeFileType, type SandboxInfo, type SandboxNetworkInfo, type VolumeEntryStat, type VolumeInfo } from 'agent-sandbox/compat'
import { Sandbox as CodeSandbox, type Execution } from 'agent-sandbox/compat/code-interpreter'

async function main(): Promise<void> {
  const tpl = Template({ fileContextPath: '.' }).fromBaseImage().copy('a.txt', '/app/').runCmd(['true'], { user: 'root' }).setStartCmd('serve', waitForPort(8000))
  const built: BuildInfo = await Template.build(tpl, 'app:v1', { cpuCount: 1, onBuildLogs: defaultBuildLogger({ minLevel: 'debug' }) })
  const status: TemplateBuildStatusResponse = await Template.getBuildStatus(built, { logsOffset: 0 })
  const tags: TemplateTag[] = await Template.getTags(built.templateId)
  const json: string = await Template.toJSON(tpl)
  void status, tags, json, Template.toDockerfile(Template().fromUbuntuImage('24.04'))
  // an instance of the class has every step (TemplateFromImage's and TemplateBuilder's)
  const viaClass: TemplateBuilder = new Template({ fileContextPath: '.' }).fromBaseImage().skipCache().setWorkdir('/app')
  const final: TemplateFinal = viaClass.setReadyCmd('true')
  void final
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
  const net = await Sandbox.create({
    allowInternetAccess: false,
    network: { allowOut: ({ rules }) => [...rules.keys()], denyOut: [ALL_TRAFFIC], egressProxy: { address: '198.18.0.20:1080' }, rules: { 'a.test': [{ transform: { headers: { A: 'b' } } }] } }
  })
  await net.updateNetwork({ allowOut: ['198.18.0.10'], allowInternetAccess: false })
  await Sandbox.updateNetwork(net.sandboxId, {})
  const netInfo: SandboxNetworkInfo | undefined = (await net.getInfo()).network
  const denied: string[] | undefined = netInfo?.denyOut
  void denied
  const ci = await CodeSandbox.create()
  const ex: Execution = await ci.runCode('x = 1; x += 1; x')
  const t: string | undefined = ex.text
  try { await sbx.commands.run('exit 1') } catch (e) { if (e instanceof CommandExitError) void e.stderr }
  const gw: Sandbox = await Sandbox.create({ mcp: { 'github/o/r': { runCmd: 'python3 server.py', envs: { K: 'v' } } } })
  const mcpUrl: string = gw.getMcpUrl()
  const mcpToken: string | undefined = await gw.getMcpToken()
  void [mcpUrl, mcpToken]
  // E2B's Volume
  const vol = await Volume.create('data')
  const st: VolumeEntryStat = await vol.writeFile('/a.txt', 'hi', { uid: 1000, gid: 1000, force: true })
  const isFile: boolean = st.type === VolumeFileType.FILE && st.mtime instanceof Date
  const bytes: Uint8Array = await vol.readFile('/a.txt', { format: 'bytes' })
  const text: string = await vol.readFile('/a.txt')
  const vols: VolumeInfo[] = await client.Volume.list()
  await Sandbox.create({ volumeMounts: { '/mnt/data': vol } })
  try { await Volume.connect('nope') } catch (e) { if (e instanceof VolumeNotFoundError) void e.message }
  const gone: boolean = await Volume.destroy(vol.volumeId)
  // E2B's volume from its token, and SandboxInfo's lifecycle / volumeMounts
  const byToken = new Volume(vol.volumeId, vol.name, vol.token)
  const there: boolean = await byToken.exists('/')
  const info: SandboxInfo = await sbx.getInfo()
  const onTimeout: 'pause' | 'kill' | undefined = info.lifecycle?.onTimeout
  const mountPaths: string[] = info.volumeMounts.map((m) => m.path)
  void [viaClient, t, isFile, bytes, text, vols, gone, there, onTimeout, mountPaths]
  // E2B's fork with count in one call; ours: keepProcesses and forkMode
  const forks: Array<Sandbox | Error> = await sbx.fork({ count: 2, keepProcesses: false })
  const fm: 'processes' | 'files' | undefined = forks[0] instanceof Error ? undefined : forks[0].forkMode
  void fm
}
void main
