// Type-checked (never run) by node.types: the declarations describe the API
// strictly (the errors below are expected ones: @ts-expect-error fails the
// check when no error is there).
// SPDX-License-Identifier: Apache-2.0
import { Sandbox, CommandExitError, SandboxError, AgentTurnError, AgentSession, type AgentEvent, type AgentTurn, type AgentInfo, FileType, sandboxed, Session, Template, type CommandResult, type EntryInfo, type Execution, type JsonValue, type GitStatus, GitUpstreamError, Volume, type VolumeEntryStat, Secrets, type SecretInfo, type SandboxSwapInfo } from 'agent-sandbox'
import Default from 'agent-sandbox'

async function main(): Promise<void> {
  const sbx: Sandbox = await Sandbox.create({ template: 'base', timeoutMs: 60_000, envs: { A: '1' }, metadata: { k: 'v' } })
  const other: Sandbox = await Default.create('base')
  const r: CommandResult = await sbx.commands.run('echo hi', { onStdout: (d: string) => { void d }, cwd: '/tmp' })
  const n: number = r.exitCode
  const h = await sbx.commands.run('sleep 1', { background: true })
  const pid: number = h.pid
  for await (const c of h) {
    if (c.type === 'pty') { const b: Uint8Array = c.data; void b } else { const s: string = c.data; void s }
  }
  const text: string = await sbx.files.read('/x')
  const bytes: Uint8Array = await sbx.files.read('/x', { format: 'bytes' })
  const stream: ReadableStream<Uint8Array> = await sbx.files.read('/x', { format: 'stream' })
  const e: EntryInfo = await sbx.files.write('/x', new Uint8Array(3))
  const es: EntryInfo[] = await sbx.files.write([{ path: '/a', data: 'a' }])
  const t: boolean = e.type === FileType.DIR
  const w = await sbx.files.watchDir('/tmp', (ev) => { const name: string = ev.name; void name }, { recursive: true })
  await w.stop()
  const x: Execution = await sbx.runCode('1', { onResult: (res) => { const m: boolean = res.isMainResult; void m } })
  const txt: string | undefined = x.text
  const v: JsonValue = await sbx.run('hello', { name: 'x' })
  const list = await Sandbox.list({ state: 'running' })
  const id: string = list[0].sandboxId
  const pinfo = await sbx.getInfo()
  const mode: 'memory' | 'filesystem' | 'checkpoint' | undefined = pinfo.pauseMode
  // the fork options (issue 20): keepProcesses, forkMany's count, forkMode
  const fk: Sandbox = await sbx.fork({ timeoutMs: 60_000, keepProcesses: false })
  const fmode: 'processes' | 'files' | undefined = fk.forkMode
  const imode: 'processes' | 'files' | undefined = pinfo.forkMode
  const many: Array<Sandbox | Error> = await sbx.forkMany(2, { keepProcesses: true })
  // @ts-expect-error keepProcesses is a boolean
  await sbx.fork({ keepProcesses: 'no' })
  // @ts-expect-error forkMode is read-only
  fk.forkMode = 'files'
  void fmode; void imode; void many
  const sw: SandboxSwapInfo | undefined = pinfo.swap
  const swapped: number | undefined = pinfo.swap?.swappedBytes
  const before: number | undefined = pinfo.swap?.residentBeforeBytes
  // @ts-expect-error swap may be undefined (running, no --pause-swap, E2B)
  const resident: number = pinfo.swap.residentBytes
  void mode, sw, swapped, before, resident
  const ac = new AbortController()
  await sbx.kill({ signal: ac.signal })
  const waited: CommandResult = await h.wait({ check: false, signal: ac.signal })
  await Session.list({ signal: ac.signal })
  await sbx.downloadUrl('/x', { signal: ac.signal })
  try {
    await sbx.commands.run('false', { check: true })
  } catch (err) {
    if (err instanceof CommandExitError) { const code: number = err.exitCode; void code }
    if (err instanceof SandboxError) { const c: string = err.code; const s: number = err.status; void c; void s }
  }
  const f = sandboxed((a: number, b: number) => a + b)
  const sum: number = await f(1, 2)
  // @ts-expect-error: arguments must be JSON values
  await f(1, () => 2)
  await Session.save('n', sbx, { a: 'b' })
  const info = await Session.get('n')
  const md: string | undefined = info.metadata.get('a')
  const tpl = await Template.build('dir', { force: true })
  const cached: boolean | undefined = tpl.cached
  const req = await Template.requestBuild('app:v1', { tags: ['x'], cpuCount: 1 })
  const reqTags: string[] = req.tags
  const hash: string = await Template.filesHash('src', { contextDir: '.', resolveSymlinks: true })
  const link = await Template.filesLink(req.templateId, hash)
  const present: boolean = link.present
  if (link.url) await Template.filesUpload(link.url, 'src', { contextDir: '.', timeoutMs: 1000 })
  await Template.triggerBuild(req.templateId, req.buildId, { fromTemplate: 'base', steps: [] })
  // @ts-expect-error: filesHash takes a source path
  await Template.filesHash(1)
  // @ts-expect-error: no such option
  await Sandbox.create({ tmplate: 'x' })
  // @ts-expect-error: the result of a foreground run has no pid
  r.pid
  const agents: AgentInfo[] = await sbx.agents.list({ port: 9000 })
  const installed: string | null = await sbx.agents.install('codex', { onEvent: (ev: AgentEvent) => { void ev.type } })
  await using session = await sbx.agents.session('codex', { model: 'm', baseUrl: 'http://127.0.0.1:1/v1', env: { K: 'v' }, install: false })
  const isSession: boolean = session instanceof AgentSession
  const turn: AgentTurn = await session.send('hi', { onEvent: async (ev) => { const seq: number = ev.seq; void seq }, signal: ac.signal })
  const fm: string | null = turn.finalMessage
  const exit: number | null = turn.commands[0].exitCode
  for await (const ev of session.stream('again')) { const ty: string = ev.type; void ty }
  for await (const ev of session) { void ev.native }
  const log: AgentEvent[] = await session.events({ after: turn.lastSeq, follow: true })
  await session.cancel()
  const sinfo = await session.info()
  try {
    await session.send('x')
  } catch (err) {
    if (err instanceof AgentTurnError) { const st: string = err.turn.status; void st }
  }
  // @ts-expect-error: approval is one of never, edits, plan
  await sbx.agents.session('codex', { approval: 'sometimes' })
  await (await sbx.agents.connect(session.id)).close()
  void [agents, installed, isSession, fm, exit, log, sinfo]
  const gst: GitStatus = await sbx.git.status('/r')
  const cur: string | undefined = gst.currentBranch
  const gb: string[] = (await sbx.git.branches('/r')).branches
  await sbx.git.clone('https://example.com/r.git', { path: 'r', depth: 1, username: 'u', password: 't' })
  await sbx.git.reset('/r', { mode: 'hard' })
  // @ts-expect-error: a reset mode is one of soft, mixed, hard, merge, keep
  await sbx.git.reset('/r', { mode: 'sideways' })
  await sbx.git.restore('/r', { paths: ['.'], staged: true })
  const gv: string | undefined = await sbx.git.getConfig('user.name', { scope: 'local', path: '/r' })
  try {
    await sbx.git.push('/r')
  } catch (err) {
    if (err instanceof GitUpstreamError) { const res = err.result; void res }
  }
  void [cur, gb, gv]
  const vol: Volume = await Volume.create('data', { sizeMB: 64 })
  const made: VolumeEntryStat = await vol.makeDir('/d', { force: true, mode: 0o700 })
  const listed: VolumeEntryStat[] = await vol.list('/', { depth: 2 })
  const blob: Blob = await vol.readFile('/d/f', { format: 'blob' })
  await vol.updateMetadata('/d', { uid: 1000 })
  // @ts-expect-error: no such format
  await vol.readFile('/d/f', { format: 'json' })
  await Sandbox.create({ volumeMounts: { '/mnt/data': vol, '/mnt/other': 'other' } })
  void [made, listed, blob]
  const gw = await Sandbox.create({ mcp: { 'github/o/r': { runCmd: 'x' } } })
  const mcpUrl: string = gw.getMcpUrl()
  const mcpToken: string = await gw.getMcpToken({ requestTimeoutMs: 1000 })
  const tat: string | undefined = gw.trafficAccessToken
  const sec: SecretInfo = await Secrets.create('k', 'v', { metadata: { env: 'prod' } })
  const secs: SecretInfo[] = await Secrets.list()
  const gone: boolean = await Secrets.delete(sec.id)
  const ver: number = (await Secrets.update('k', 'v2')).version
  const when: Date = (await Secrets.get('k')).createdAt
  const ph: string = Secrets.fill('k')
  // @ts-expect-error: the value is a string
  await Secrets.create('k', 42)
  void [mcpUrl, mcpToken, tat, secs, gone, ver, when, ph]
  await using disposable = await Sandbox.create()
  void disposable
  void [other, waited, n, pid, text, bytes, stream, es, t, txt, v, id, sum, md, cached]
}
void main
