// Type declarations shared by agent-sandbox and agent-sandbox/compat (types
// only: index.d.ts and compat.d.ts export what exists at run time).
// SPDX-License-Identifier: Apache-2.0

/** Where the sandboxes are; unset options come from the environment
 * (ASB_* then E2B_* variables), then the local engine. */
export interface ConnectionOpts {
  apiKey?: string
  apiUrl?: string
  domain?: string
  sandboxUrl?: string
  /** envd at localhost:49983 (E2B's debug mode). */
  debug?: boolean
  /** One request's limit in milliseconds (0: none; default 60 000). */
  requestTimeoutMs?: number
  /** Extra headers of every request. */
  headers?: Record<string, string>
  apiHeaders?: Record<string, string>
  /** Retries of idempotent requests (0 or negative: none; default 3). */
  retries?: number
  userAgent?: string
}

/** Options every call takes. */
export interface CallOpts {
  /** Cancels the call (the Promise rejects with signal.reason). */
  signal?: AbortSignal
  requestTimeoutMs?: number
}

export type SandboxState = 'running' | 'paused'

export interface SandboxOpts extends ConnectionOpts, CallOpts {
  /** Template name or id (default 'base'). */
  template?: string
  /** The sandbox's lifetime in milliseconds (default 300 000). */
  timeoutMs?: number
  metadata?: Record<string, string>
  /** Environment of every command and code run. */
  envs?: Record<string, string>
  /** On timeout: pause instead of kill. */
  autoPause?: boolean
  /** With autoPause: that pause keeps only the files (E2B's keepMemory: false). */
  autoPauseFilesOnly?: boolean
  /** Traffic to its ports resumes it once paused (E2B's autoResume). */
  autoResume?: boolean
  /** E2B's: false is as network.denyOut ['0.0.0.0/0'] (allowOut still applies). Default true. */
  allowInternetAccess?: boolean
  /** E2B's network config. */
  network?: SandboxNetworkOpts
  /** E2B's: volumes to mount, mount path to a volume's name or id (or an object with a name, e.g. E2B's Volume). */
  volumeMounts?: Record<string, string | { name: string } | Volume>
  /** E2B's mcp option: MCP servers by name for the sandbox's mcp-gateway
   * (template 'mcp-gateway' unless one is named; docs/mcp.md). */
  mcp?: Record<string, Record<string, unknown>>
}

/** allowOut/denyOut: a list of CIDRs, IPs, domains ('*.example.com' too), or a callback. */
export type SandboxNetworkSelector =
  | string[]
  | ((ctx: { allTraffic: string; rules: Map<string, SandboxNetworkRule[]> }) => string[])

export interface SandboxNetworkTransform {
  /** Headers set (or replaced) on the domain's HTTP(S) requests at egress. */
  headers?: Record<string, string>
}

export interface SandboxNetworkRule {
  transform?: SandboxNetworkTransform | ((ctx: { iam: { tokens: Record<string, string> } }) => SandboxNetworkTransform)
}

export type SandboxNetworkRules = Record<string, SandboxNetworkRule[]> | Map<string, SandboxNetworkRule[]>

export interface SandboxEgressProxyOpts {
  /** A SOCKS5 proxy, 'host:port'. */
  address: string
  username?: string
  password?: string
}

export interface SandboxNetworkOpts {
  allowOut?: SandboxNetworkSelector
  denyOut?: SandboxNetworkSelector
  rules?: SandboxNetworkRules
  egressProxy?: SandboxEgressProxyOpts
  /** false: the sandbox's URLs need its traffic access token. */
  allowPublicTraffic?: boolean
  /** The Host header its services see (${PORT} is the port). */
  maskRequestHost?: string
  /** The local engine's own limits (not E2B's): egress bytes per second, concurrent connections. */
  egressBytesPerSecond?: number
  maxConnections?: number
}

/** updateNetwork's config: what is left out is cleared. */
export interface SandboxNetworkUpdate {
  allowOut?: SandboxNetworkSelector
  denyOut?: SandboxNetworkSelector
  rules?: SandboxNetworkRules
  egressProxy?: SandboxEgressProxyOpts
  allowInternetAccess?: boolean
  /** The local engine's own limits (not E2B's): egress bytes per second, concurrent connections. */
  egressBytesPerSecond?: number
  maxConnections?: number
}

/** The effective config, as getInfo reports it (never a password). */
export interface SandboxNetworkInfo {
  allowOut?: string[]
  denyOut?: string[]
  rules?: Record<string, Array<{ transform?: SandboxNetworkTransform }>>
  egressProxy?: { address: string; username?: string }
  allowPublicTraffic?: boolean
  maskRequestHost?: string
  /** The local engine's own limits (not E2B's): egress bytes per second, concurrent connections. */
  egressBytesPerSecond?: number
  maxConnections?: number
}

export interface SandboxConnectOpts extends ConnectionOpts, CallOpts {
  /** Extend its life to at least this long from now (never shortens it). */
  timeoutMs?: number
}

export interface SandboxListOpts extends ConnectionOpts, CallOpts {
  metadata?: Record<string, string>
  state?: SandboxState | SandboxState[]
  template?: string
  /** Page size (default and maximum 100). */
  limit?: number
  nextToken?: string
  query?: { metadata?: Record<string, string>; state?: SandboxState[]; template?: string }
}

export interface SandboxInfo {
  sandboxId: string
  templateId: string
  name?: string
  metadata: Record<string, string>
  startedAt: Date
  endAt: Date
  state: SandboxState
  cpuCount: number
  memoryMB: number
  diskMB: number
  envdVersion: string
  /** As the engine reports it; undefined when it does not say. */
  allowInternetAccess?: boolean
  network?: SandboxNetworkInfo
  /** A paused sandbox's pause mode (docs/lifecycle.md). */
  pauseMode?: 'memory' | 'filesystem' | 'checkpoint'
  /** A fork's 'processes' (it kept its parent's processes) or 'files' (booted fresh on its files). */
  forkMode?: 'processes' | 'files'
  /** Under the engine's --pause-swap, where a sandbox paused with memory
   * has its RAM (getInfo only; undefined when running, paused without
   * memory, without the option, on E2B's cloud): bytes in the swap file,
   * in RAM now, and in RAM just before the pause. */
  swap?: SandboxSwapInfo
  /** E2B's lifecycle.autoResume; undefined when the engine does not say (lists). */
  autoResume?: boolean
  /** E2B's SandboxInfo.lifecycle; undefined in a list's items (E2B's ListedSandbox has none). */
  lifecycle?: { onTimeout: 'pause' | 'kill'; autoResume: boolean }
  /** E2B's SandboxInfo.volumeMounts: the volume mounted at each path ([] when none). */
  volumeMounts: Array<{ name: string; path: string }>
}

export interface SandboxSwapInfo {
  swappedBytes: number
  residentBytes: number
  /** undefined when the engine does not know it (it adopted the paused
   * sandbox from an engine before it) */
  residentBeforeBytes?: number
}

export interface SandboxPage {
  items: SandboxInfo[]
  nextToken?: string
}

export interface SandboxMetrics {
  timestamp: Date
  cpuUsedPct: number
  cpuCount: number
  memUsed: number
  memTotal: number
  diskUsed: number
  diskTotal: number
}

export interface CommandResult {
  exitCode: number
  error?: string
  stdout: string
  stderr: string
}

export type OutputHandler<T> = (data: T) => void | Promise<void>

export interface CommandStartOpts extends CallOpts {
  background?: boolean
  cwd?: string
  user?: string
  envs?: Record<string, string>
  onStdout?: OutputHandler<string>
  onStderr?: OutputHandler<string>
  /** true: keep stdin open (sendStdin); a string or bytes: written, then closed. */
  stdin?: boolean | string | ArrayBuffer | ArrayBufferView
  /** The command's lifetime in milliseconds (0: none; default 60 000). */
  timeoutMs?: number
  /** A tag to find the process by (commands.list()). */
  tag?: string
  /** Reject with CommandExitError on a non-zero exit code. */
  check?: boolean
}

export interface CommandConnectOpts extends CallOpts {
  onStdout?: OutputHandler<string>
  onStderr?: OutputHandler<string>
  timeoutMs?: number
}

export interface ProcessInfo {
  pid: number
  tag?: string
  cmd: string
  args: string[]
  envs: Record<string, string>
  cwd?: string
}

export type OutputChunk =
  | { type: 'stdout'; data: string }
  | { type: 'stderr'; data: string }
  | { type: 'pty'; data: Uint8Array }

/** A command or pty running in the background. */
export declare class CommandHandle implements AsyncIterable<OutputChunk> {
  readonly pid: number
  /** Output so far. */
  readonly stdout: string
  readonly stderr: string
  /** Once it ended. */
  readonly exitCode: number | undefined
  readonly error: string | undefined
  /** A signal that fires rejects this wait; the command runs on. */
  wait(opts?: { check?: boolean; signal?: AbortSignal }): Promise<CommandResult>
  kill(opts?: CallOpts): Promise<boolean>
  sendStdin(data: string | ArrayBuffer | ArrayBufferView, opts?: CallOpts): Promise<void>
  closeStdin(opts?: CallOpts): Promise<void>
  /** Stop receiving output and release the handle; the command runs on. */
  disconnect(): Promise<void>
  close(): Promise<void>
  [Symbol.asyncIterator](): AsyncIterator<OutputChunk>
}

export declare class Commands {
  run(cmd: string, opts?: CommandStartOpts & { background?: false }): Promise<CommandResult>
  run(cmd: string, opts: CommandStartOpts & { background: true }): Promise<CommandHandle>
  run(cmd: string, opts?: CommandStartOpts): Promise<CommandResult | CommandHandle>
  connect(pid: number, opts?: CommandConnectOpts): Promise<CommandHandle>
  list(opts?: CallOpts): Promise<ProcessInfo[]>
  kill(pid: number, opts?: CallOpts): Promise<boolean>
  /** 15 (SIGTERM) or 9 (SIGKILL). */
  signal(pid: number, signal?: number, opts?: CallOpts): Promise<void>
  sendStdin(pid: number, data: string | ArrayBuffer | ArrayBufferView, opts?: CallOpts): Promise<void>
  closeStdin(pid: number, opts?: CallOpts): Promise<void>
}

export interface PtyCreateOpts extends CallOpts {
  cols?: number
  rows?: number
  onData?: OutputHandler<Uint8Array>
  timeoutMs?: number
  user?: string
  envs?: Record<string, string>
  cwd?: string
}

export declare class Pty {
  create(opts?: PtyCreateOpts): Promise<CommandHandle>
  connect(pid: number, opts?: { onData?: OutputHandler<Uint8Array>; timeoutMs?: number } & CallOpts): Promise<CommandHandle>
  sendInput(pid: number, data: string | ArrayBuffer | ArrayBufferView, opts?: CallOpts): Promise<void>
  resize(pid: number, size: { cols: number; rows: number }, opts?: CallOpts): Promise<void>
  kill(pid: number, opts?: CallOpts): Promise<boolean>
}

export declare const FileType: { readonly FILE: 'file'; readonly DIR: 'dir'; readonly SYMLINK: 'symlink' }
export type FileType = (typeof FileType)[keyof typeof FileType]

export declare const FilesystemEventType: {
  readonly CHMOD: 'chmod'
  readonly CREATE: 'create'
  readonly REMOVE: 'remove'
  readonly RENAME: 'rename'
  readonly WRITE: 'write'
}
export type FilesystemEventType = (typeof FilesystemEventType)[keyof typeof FilesystemEventType]

export interface WriteInfo {
  name: string
  type?: FileType
  path: string
}

export interface EntryInfo extends WriteInfo {
  size: number
  mode: number
  permissions: string
  owner: string
  group: string
  modifiedTime?: Date
  symlinkTarget?: string
}

export interface FilesystemEvent {
  name: string
  type: FilesystemEventType
  entry?: EntryInfo
}

export interface FilesystemRequestOpts extends CallOpts {
  user?: string
}

export interface FilesystemReadOpts extends FilesystemRequestOpts {
  gzip?: boolean
}

export interface FilesystemWriteOpts extends FilesystemRequestOpts {
  gzip?: boolean
  /** The exact size of a streamed upload, when known. */
  size?: number
}

export type WriteData = string | ArrayBuffer | ArrayBufferView | Blob | ReadableStream<Uint8Array>
export interface WriteEntry {
  path: string
  data: WriteData
}

export interface WatchOpts extends FilesystemRequestOpts {
  recursive?: boolean
  includeEntry?: boolean
  /** How long to watch (0 or unset: until stop()). */
  timeoutMs?: number
  onExit?: (err?: unknown) => void | Promise<void>
  /** A polling watch (a PollingWatchHandle): the sandbox keeps the events
   * until getNewEvents() fetches them (E2B's sync watcher). */
  polling?: boolean
}

export declare class WatchHandle implements AsyncIterable<FilesystemEvent> {
  stop(): Promise<void>
  [Symbol.asyncIterator](): AsyncIterator<FilesystemEvent>
}

/** A polling watch: each getNewEvents() has every change made before it. */
export declare class PollingWatchHandle {
  getNewEvents(): Promise<FilesystemEvent[]>
  stop(): Promise<void>
}

export declare class Files {
  read(path: string, opts?: FilesystemReadOpts & { format?: 'text' }): Promise<string>
  read(path: string, opts: FilesystemReadOpts & { format: 'bytes' }): Promise<Uint8Array>
  read(path: string, opts: FilesystemReadOpts & { format: 'blob' }): Promise<Blob>
  read(path: string, opts: FilesystemReadOpts & { format: 'stream' }): Promise<ReadableStream<Uint8Array>>
  write(path: string, data: WriteData, opts?: FilesystemWriteOpts): Promise<EntryInfo>
  write(files: WriteEntry[], opts?: FilesystemWriteOpts): Promise<EntryInfo[]>
  writeFiles(files: WriteEntry[], opts?: FilesystemWriteOpts): Promise<EntryInfo[]>
  list(path: string, opts?: FilesystemRequestOpts & { depth?: number }): Promise<EntryInfo[]>
  exists(path: string, opts?: FilesystemRequestOpts): Promise<boolean>
  getInfo(path: string, opts?: FilesystemRequestOpts): Promise<EntryInfo>
  remove(path: string, opts?: FilesystemRequestOpts): Promise<void>
  rename(oldPath: string, newPath: string, opts?: FilesystemRequestOpts): Promise<EntryInfo>
  makeDir(path: string, opts?: FilesystemRequestOpts): Promise<boolean>
  watchDir(path: string, opts: WatchOpts & { polling: true }): Promise<PollingWatchHandle>
  watchDir(path: string, onEvent?: (event: FilesystemEvent) => void | Promise<void>, opts?: WatchOpts): Promise<WatchHandle>
}

/** A JSON value (what named commands and sandboxed() exchange). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

export declare class Result {
  readonly isMainResult: boolean
  readonly text?: string
  readonly html?: string
  readonly markdown?: string
  readonly svg?: string
  readonly png?: string
  readonly jpeg?: string
  readonly pdf?: string
  readonly latex?: string
  readonly json?: string
  readonly javascript?: string
  readonly data?: JsonValue
  readonly chart?: JsonValue
  readonly extra?: Record<string, string>
  readonly raw: Record<string, string>
  formats(): string[]
  toJSON(): Record<string, string | Record<string, string>>
}

export declare class ExecutionError {
  name: string
  value: string
  traceback: string
}

export declare class OutputMessage {
  readonly line: string
  /** Unix epoch in nanoseconds. */
  readonly timestamp: number
  readonly error: boolean
  toString(): string
}

export interface Logs {
  stdout: string[]
  stderr: string[]
}

export declare class Execution {
  results: Result[]
  logs: Logs
  error?: ExecutionError
  executionCount?: number
  readonly text: string | undefined
  toJSON(): { results: Result[]; logs: Logs; error: ExecutionError | undefined }
}

export interface Context {
  id: string
  language: string
  cwd: string
}

export interface RunCodeOpts extends CallOpts {
  language?: string
  context?: Context | string
  envs?: Record<string, string>
  /** The run's limit (0: none; default 300 000); on timeout the cell is interrupted. */
  timeoutMs?: number
  onStdout?: OutputHandler<OutputMessage>
  onStderr?: OutputHandler<OutputMessage>
  onResult?: OutputHandler<Result>
  onError?: OutputHandler<ExecutionError>
}

export interface NamedCommandArg {
  name: string
  type: 'string' | 'integer' | 'float' | 'boolean' | 'json'
  required: boolean
  default?: string
  description: string
}

export interface NamedCommand {
  name: string
  description: string
  args: NamedCommandArg[]
}

export interface RunCommandOpts extends CallOpts {
  /** The command server's port (default 9000). */
  port?: number
  timeoutMs?: number
}

// ---- agents (docs/agents.md) ----------------------------------------------------------

/** An agent the sandbox's server knows (sandbox.agents.list()). */
export interface AgentInfo {
  name: string
  /** Its npm package ("@openai/codex"). */
  package: string
  installed: boolean
  /** The installed version (undefined: not installed, or unknown). */
  version?: string
  /** The installed command. */
  path?: string
}

/** One event of a session's log: {seq, type, session, turn, time, ...its
 * fields, native: the CLI's own event} (docs/agents.md, the event schema). */
export interface AgentEvent {
  seq: number
  type: string
  session?: string
  turn: number
  time?: string
  native?: JsonValue
  [field: string]: JsonValue | undefined
}

/** A handler of events: an async one holds the next events back (they stay
 * in order); one that throws ends the call with its error (the turn goes on). */
export type AgentEventHandler = (event: AgentEvent) => void | Promise<void>

/** The result of one turn (its turn.completed event). */
export interface AgentTurn {
  status: 'completed' | 'failed' | 'cancelled' | string
  turn: number
  finalMessage: string | null
  error: string | null
  filesChanged: string[]
  commands: { command: string; exitCode: number | null }[]
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens: number; totalTokens: number }
  exitCode: number | null
  /** Read the session's events after this one. */
  lastSeq: number
  /** The whole turn.completed event. */
  event: AgentEvent
}

export interface AgentCallOpts {
  /** The server's port (default 9000). */
  port?: number
  requestTimeoutMs?: number
  signal?: AbortSignal
}

export interface AgentSessionOpts extends AgentCallOpts {
  /** The agent's working directory (default: the server's $HOME). */
  cwd?: string
  model?: string
  /** An OpenAI-compatible endpoint (Anthropic's Messages API for claude). */
  baseUrl?: string
  /** The variable holding the endpoint's key (give its value with env). */
  apiKeyEnv?: string
  /** codex: "responses" (default) or "chat". */
  wireApi?: 'responses' | 'chat'
  /** "never" (default: tools run without asking), "edits", "plan". */
  approval?: 'never' | 'edits' | 'plan'
  /** The agent's own sandbox: "none" (default), "workspace-write", "read-only". */
  sandbox?: 'none' | 'workspace-write' | 'read-only'
  /** More CLI arguments. */
  args?: string[]
  /** More environment for the agent. */
  env?: Record<string, string>
  /** A missing CLI: undefined = the server's default (install at the first
   * turn), true = install, false = refuse (NotFoundError). */
  install?: boolean
}

export interface AgentSendOpts {
  onEvent?: AgentEventHandler
  /** false: a failed turn resolves instead of rejecting with AgentTurnError. */
  check?: boolean
  /** The whole turn (default: no limit); stopping waiting leaves the turn
   * running (cancel() stops it). */
  timeoutMs?: number
  signal?: AbortSignal
}

export interface AgentEventsOpts {
  /** The events after this seq (default 0: all). */
  after?: number
  /** Also wait for the events of the turn in progress, until it ends. */
  follow?: boolean
  onEvent?: AgentEventHandler
  timeoutMs?: number
  signal?: AbortSignal
}

export interface AgentInstallOpts {
  /** The package version (default: latest). */
  version?: string
  /** An npm registry URL the sandbox reaches. */
  registry?: string
  /** A tarball path or URL inside the sandbox to install instead. */
  source?: string
  /** install.started, install.progress, install.completed. */
  onEvent?: AgentEventHandler
  port?: number
  timeoutMs?: number
  signal?: AbortSignal
}

/** A session with a coding agent; it lives in the sandbox, not in this
 * object (connect() attaches to it again). `for await (const ev of
 * session)` follows its log until the turn in progress ends. */
export declare class AgentSession implements AsyncDisposable, AsyncIterable<AgentEvent> {
  /** Use sandbox.agents.session / connect. */
  constructor(made: never, port?: number)
  readonly id: string
  readonly agent: string
  send(prompt: string, opts?: AgentSendOpts): Promise<AgentTurn>
  /** One turn as its events, ending with its turn.completed. */
  stream(prompt: string, opts?: Omit<AgentSendOpts, 'onEvent' | 'check'>): AsyncIterableIterator<AgentEvent>
  events(opts?: AgentEventsOpts): Promise<AgentEvent[]>
  /** The events after `after` and those of the turn in progress, until it ends. */
  follow(opts?: Omit<AgentEventsOpts, 'onEvent' | 'follow'>): AsyncIterableIterator<AgentEvent>
  cancel(opts?: AgentCallOpts): Promise<void>
  /** Status and transcript: {id, agent, status, native_session_id, turns, last_seq, ...}. */
  info(opts?: AgentCallOpts): Promise<{ [field: string]: JsonValue }>
  /** End the session in the sandbox and release the handle. */
  close(opts?: AgentCallOpts): Promise<void>
  [Symbol.asyncIterator](): AsyncIterableIterator<AgentEvent>
  [Symbol.asyncDispose](): Promise<void>
}

/** sandbox.agents. */
export declare class Agents {
  constructor(sandbox: never)
  list(opts?: AgentCallOpts): Promise<AgentInfo[]>
  /** Resolves with the installed version (null: unknown). */
  install(agent: string, opts?: AgentInstallOpts): Promise<string | null>
  session(agent: 'codex' | 'qwen' | 'claude' | 'opencode' | (string & {}), opts?: AgentSessionOpts): Promise<AgentSession>
  connect(sessionId: string, opts?: AgentCallOpts): Promise<AgentSession>
}

/** A Sandbox class (the static calls make instances of the class they are called on). */
export type SandboxClass<T> = new (made: never) => T

/** What agent-sandbox's Sandbox and the compat one share. */
// ---- git (git.h) ------------------------------------------------------------------------

/** How git runs, every sandbox.git call (E2B's GitRequestOpts). */
export interface GitRequestOpts {
  envs?: Record<string, string>
  user?: string
  cwd?: string
  /** git's lifetime (default 60 000; 0: none) */
  timeoutMs?: number
  requestTimeoutMs?: number
  signal?: AbortSignal
}
export interface GitCloneOpts extends GitRequestOpts {
  path?: string
  branch?: string
  depth?: number
  username?: string
  password?: string
  dangerouslyStoreCredentials?: boolean
}
export interface GitInitOpts extends GitRequestOpts { bare?: boolean; initialBranch?: string }
export interface GitRemoteAddOpts extends GitRequestOpts { fetch?: boolean; overwrite?: boolean }
export interface GitCommitOpts extends GitRequestOpts { authorName?: string; authorEmail?: string; allowEmpty?: boolean }
export interface GitAddOpts extends GitRequestOpts { files?: string[]; all?: boolean }
export type GitResetMode = 'soft' | 'mixed' | 'hard' | 'merge' | 'keep'
export interface GitResetOpts extends GitRequestOpts { mode?: GitResetMode; target?: string; paths?: string[] }
export interface GitRestoreOpts extends GitRequestOpts { paths: string[]; staged?: boolean; worktree?: boolean; source?: string }
export interface GitDeleteBranchOpts extends GitRequestOpts { force?: boolean }
export interface GitPushOpts extends GitRequestOpts {
  remote?: string
  branch?: string
  setUpstream?: boolean
  username?: string
  password?: string
}
export interface GitPullOpts extends GitRequestOpts { remote?: string; branch?: string; username?: string; password?: string }
export type GitConfigScope = 'global' | 'local' | 'system'
export interface GitConfigOpts extends GitRequestOpts { scope?: GitConfigScope; path?: string }
export interface GitDangerouslyAuthenticateOpts extends GitRequestOpts {
  username: string
  password: string
  host?: string
  protocol?: string
}
export interface GitFileStatus {
  name: string
  status: string
  indexStatus: string
  workingTreeStatus: string
  staged: boolean
  renamedFrom?: string
}
export interface GitStatus {
  currentBranch?: string
  upstream?: string
  ahead: number
  behind: number
  detached: boolean
  fileStatus: GitFileStatus[]
  isClean: boolean
  hasChanges: boolean
  hasStaged: boolean
  hasUntracked: boolean
  hasConflicts: boolean
  totalCount: number
  stagedCount: number
  unstagedCount: number
  untrackedCount: number
  conflictCount: number
}
export interface GitBranches { branches: string[]; currentBranch?: string }

/** sandbox.git: E2B's git helpers; each call runs the sandbox's git. A git
 * that fails rejects with CommandExitError, GitAuthError or
 * GitUpstreamError (err.result is git's result). */
export declare class Git {
  clone(url: string, opts?: GitCloneOpts): Promise<CommandResult>
  init(path: string, opts?: GitInitOpts): Promise<CommandResult>
  remoteAdd(path: string, name: string, url: string, opts?: GitRemoteAddOpts): Promise<CommandResult>
  remoteGet(path: string, name: string, opts?: GitRequestOpts): Promise<string | undefined>
  status(path: string, opts?: GitRequestOpts): Promise<GitStatus>
  branches(path: string, opts?: GitRequestOpts): Promise<GitBranches>
  createBranch(path: string, branch: string, opts?: GitRequestOpts): Promise<CommandResult>
  checkoutBranch(path: string, branch: string, opts?: GitRequestOpts): Promise<CommandResult>
  deleteBranch(path: string, branch: string, opts?: GitDeleteBranchOpts): Promise<CommandResult>
  add(path: string, opts?: GitAddOpts): Promise<CommandResult>
  commit(path: string, message: string, opts?: GitCommitOpts): Promise<CommandResult>
  reset(path: string, opts?: GitResetOpts): Promise<CommandResult>
  restore(path: string, opts: GitRestoreOpts): Promise<CommandResult>
  push(path: string, opts?: GitPushOpts): Promise<CommandResult>
  pull(path: string, opts?: GitPullOpts): Promise<CommandResult>
  setConfig(key: string, value: string, opts?: GitConfigOpts): Promise<CommandResult>
  getConfig(key: string, opts?: GitConfigOpts): Promise<string | undefined>
  configureUser(name: string, email: string, opts?: GitConfigOpts): Promise<CommandResult>
  dangerouslyAuthenticate(opts: GitDangerouslyAuthenticateOpts): Promise<CommandResult>
}

export declare class SandboxBase implements AsyncDisposable {
  /** Use create, connect or fromSession. */
  constructor(made: never)
  readonly sandboxId: string
  readonly id: string
  readonly sandboxDomain: string
  readonly envdVersion: string
  readonly commands: Commands
  readonly files: Files
  readonly pty: Pty
  /** The coding agents its server runs (docs/agents.md). */
  readonly agents: Agents
  /** Git in the sandbox (E2B's sandbox.git). */
  readonly git: Git

  static create<T extends SandboxBase>(this: SandboxClass<T>, opts?: SandboxOpts): Promise<T>
  static create<T extends SandboxBase>(this: SandboxClass<T>, template: string, opts?: SandboxOpts): Promise<T>
  static connect<T extends SandboxBase>(this: SandboxClass<T>, sandboxId: string, opts?: SandboxConnectOpts): Promise<T>
  static fromSession<T extends SandboxBase>(this: SandboxClass<T>, name: string, opts?: SandboxConnectOpts): Promise<T>
  static listPage(opts?: SandboxListOpts): Promise<SandboxPage>
  static kill(sandboxId: string, opts?: ConnectionOpts & CallOpts): Promise<boolean>
  static getInfo(sandboxId: string, opts?: ConnectionOpts & CallOpts): Promise<SandboxInfo>
  static setTimeout(sandboxId: string, timeoutMs: number, opts?: ConnectionOpts & CallOpts): Promise<void>
  static getMetrics(sandboxId: string, opts?: ConnectionOpts & CallOpts & { start?: Date; end?: Date }): Promise<SandboxMetrics[]>
  static pause(sandboxId: string, opts?: ConnectionOpts & CallOpts): Promise<boolean>
  static updateNetwork(sandboxId: string, network: SandboxNetworkUpdate, opts?: ConnectionOpts & CallOpts): Promise<void>
  /** true, or false if there is no such snapshot; sandboxes on it keep their files. */
  static deleteSnapshot(snapshotId: string, opts?: ConnectionOpts & CallOpts): Promise<boolean>

  kill(opts?: CallOpts): Promise<boolean>
  setTimeout(timeoutMs: number, opts?: CallOpts): Promise<void>
  /** "http://127.0.0.1:<n>" for the port (local engine only). */
  loopbackUrl(port: number, opts?: CallOpts): Promise<string>
  isRunning(opts?: CallOpts): Promise<boolean>
  pause(opts?: CallOpts & { keepMemory?: boolean }): Promise<boolean>
  resume(opts?: CallOpts & { timeoutMs?: number }): Promise<this>
  getInfo(opts?: CallOpts): Promise<SandboxInfo>
  /** Replace the egress rules, live (E2B's updateNetwork). */
  updateNetwork(network: SandboxNetworkUpdate, opts?: CallOpts): Promise<void>
  getMetrics(opts?: CallOpts & { start?: Date; end?: Date }): Promise<SandboxMetrics[]>
  getHost(port: number): string
  getUrl(port: number): string
  downloadUrl(path: string, opts?: { user?: string; useSignatureExpiration?: number; signal?: AbortSignal }): Promise<string>
  uploadUrl(path?: string, opts?: { user?: string; useSignatureExpiration?: number; signal?: AbortSignal }): Promise<string>

  runCode(code: string, opts?: RunCodeOpts): Promise<Execution>
  createCodeContext(opts?: CallOpts & { cwd?: string; language?: string }): Promise<Context>
  listCodeContexts(opts?: CallOpts): Promise<Context[]>
  restartCodeContext(context: Context | string, opts?: CallOpts): Promise<void>
  removeCodeContext(context: Context | string, opts?: CallOpts): Promise<void>

  /** Call a named command of the template: its JSON result. */
  run(name: string, args?: Record<string, JsonValue>, opts?: RunCommandOpts): Promise<JsonValue>
  listCommands(opts?: CallOpts & { port?: number }): Promise<NamedCommand[]>

  saveSession(name: string, metadata?: Record<string, string>, opts?: { signal?: AbortSignal }): Promise<void>
  /** Release the handle (the sandbox keeps running). */
  close(): void
  /** `await using`: kill the sandbox and release the handle. */
  [Symbol.asyncDispose](): Promise<void>
}

export declare class SessionInfo {
  readonly name: string
  readonly sandboxId: string
  readonly templateId: string
  readonly apiUrl: string
  readonly createdAt: Date
  readonly metadata: { get(key: string): string | undefined; has(key: string): boolean }
}

export declare class Session {
  static save(name: string, sandbox: SandboxBase, metadata?: Record<string, string>, opts?: { signal?: AbortSignal }): Promise<void>
  static load(name: string, opts?: SandboxConnectOpts): Promise<SandboxBase>
  static get(name: string, opts?: { signal?: AbortSignal }): Promise<SessionInfo>
  static list(opts?: { signal?: AbortSignal }): Promise<SessionInfo[]>
  static delete(name: string, opts?: { signal?: AbortSignal }): Promise<boolean>
}

export interface TemplateInfo {
  templateId: string
  name: string
  buildId: string
  description: string
  cpuCount: number
  memoryMB: number
  diskMB: number
  createdAt?: Date
  /** After a build: whether an earlier build was reused. */
  cached?: boolean
  buildLog?: string
  raw?: JsonValue
}

/** Where a COPY step's files come from (Template.filesHash / filesUpload). */
export interface TemplateFilesOpts {
  contextDir?: string
  ignorePatterns?: string[]
  resolveSymlinks?: boolean
  signal?: AbortSignal
}

/** A build of E2B's Template builder steps (Template.buildSteps / buildStatus). */
export interface TemplateBuildState {
  templateId: string
  buildId: string
  /** waiting, building, ready or error */
  status: string
  error?: string
  /** E2B's step number of a failure: 0 the base, i + 1 for steps[i]; -1 none */
  errorStep: number
  logs: TemplateBuildLogLine[]
}

/** One line of a build's log. */
export interface TemplateBuildLogLine { timestampMs: number; level: string; message: string }

export declare class Template {
  static build(dir: string, opts?: ConnectionOpts & { force?: boolean; timeoutMs?: number; signal?: AbortSignal }): Promise<TemplateInfo>
  /** Build `name` ("app" or "app:tag") from E2B's builder JSON (an object or
   * its text: fromTemplate/fromImage, steps, startCmd, readyCmd); COPY
   * sources come from contextDir and are uploaded by hash. */
  static buildSteps(name: string, spec: JsonValue | string, opts?: ConnectionOpts & { contextDir?: string; tags?: string[]; ignorePatterns?: string[]; cpuCount?: number; memoryMB?: number; skipCache?: boolean; background?: boolean; timeoutMs?: number; signal?: AbortSignal; onLog?: (line: TemplateBuildLogLine) => void | Promise<void> }): Promise<TemplateBuildState>
  /** buildSteps one call at a time (asb_templates_request_build, _files_hash, _files_link, _files_upload, _trigger_build). */
  static requestBuild(name: string, opts?: ConnectionOpts & { tags?: string[]; cpuCount?: number; memoryMB?: number; timeoutMs?: number; signal?: AbortSignal }): Promise<TemplateBuildState & { tags: string[] }>
  static filesHash(src: string, opts?: ConnectionOpts & TemplateFilesOpts): Promise<string>
  static filesLink(templateId: string, filesHash: string, opts?: ConnectionOpts & CallOpts): Promise<{ present: boolean; url?: string }>
  static filesUpload(url: string, src: string, opts?: ConnectionOpts & TemplateFilesOpts & { timeoutMs?: number }): Promise<string>
  static triggerBuild(templateId: string, buildId: string, spec: JsonValue | string, opts?: ConnectionOpts & CallOpts): Promise<void>
  static buildStatus(templateId: string, buildId: string, opts?: ConnectionOpts & CallOpts & { logsOffset?: number }): Promise<TemplateBuildState>
  static exists(name: string, opts?: ConnectionOpts & CallOpts): Promise<boolean>
  /** Make tags name the build target ("app:v1"; "app": its latest) names. */
  static assignTags(target: string, tags: string | string[], opts?: ConnectionOpts & CallOpts): Promise<void>
  static removeTags(name: string, tags: string | string[], opts?: ConnectionOpts & CallOpts): Promise<void>
  static getTags(templateId: string, opts?: ConnectionOpts & CallOpts): Promise<{ tag: string; buildId: string; createdAt: Date }[]>
  static get(templateId: string, opts?: ConnectionOpts & CallOpts): Promise<TemplateInfo>
  static list(opts?: ConnectionOpts & CallOpts): Promise<TemplateInfo[]>
  static delete(templateId: string, opts?: ConnectionOpts & CallOpts): Promise<void>
}

/** E2B's VolumeFileType. */
export declare const VolumeFileType: {
  readonly UNKNOWN: 'unknown'
  readonly FILE: 'file'
  readonly DIRECTORY: 'directory'
  readonly SYMLINK: 'symlink'
}
export type VolumeFileType = (typeof VolumeFileType)[keyof typeof VolumeFileType]

/** A volume of Volume.list() (E2B's VolumeInfo; sizeMB is ours). */
export interface VolumeInfo {
  volumeId: string
  name: string
  sizeMB: number
}

/** Volume.getInfo(volumeId): with the token of its content API. */
export interface VolumeAndToken extends VolumeInfo {
  token: string
  /** E2B's custom content domain: never set here. */
  domain?: string
}

/** What is at a path of a volume (E2B's VolumeEntryStat). */
export interface VolumeEntryStat {
  name: string
  type: VolumeFileType
  path: string
  size: number
  /** Permission bits (0o644). */
  mode: number
  uid: number
  gid: number
  atime: Date
  mtime: Date
  ctime: Date
  /** A symlink's target. */
  target?: string
}

/** Options of every volume file call (E2B's VolumeApiOpts that apply). */
export interface VolumeApiOpts extends CallOpts {}

/** E2B's VolumeMetadataOpts: the owner as sandboxes see it, the mode. */
export interface VolumeMetadataOpts {
  uid?: number
  gid?: number
  mode?: number
}

/** E2B's VolumeWriteOpts: writeFile: replace an existing file with force; makeDir: mkdir -p. */
export interface VolumeWriteOpts extends VolumeMetadataOpts {
  force?: boolean
}

export interface VolumeReadOpts extends VolumeApiOpts {
  format?: 'text' | 'bytes' | 'blob' | 'stream'
}

/** A secret as the control plane keeps it: never its value. */
export interface SecretInfo {
  /** "sec_…" */
  id: string
  name: string
  /** 1 when created, one more per update. */
  version: number
  createdAt: Date
  updatedAt: Date
  metadata: Record<string, string>
}
export interface SecretsListOpts extends ConnectionOpts, CallOpts {
  /** 1..100 a page (default 100). */
  limit?: number
  nextToken?: string
}

/** Secrets (docs/reference/secret.md): named values the egress proxy puts
 * into requests (network.rules header values `${e2b.secrets.<name>}`). A
 * value goes in and never comes out. */
export declare class Secrets {
  static create(name: string, value: string, opts?: ConnectionOpts & CallOpts & { metadata?: Record<string, string> }): Promise<SecretInfo>
  /** A new value and version; metadata replaces the stored one, left out it is kept. */
  static update(secret: string, value: string, opts?: ConnectionOpts & CallOpts & { metadata?: Record<string, string> }): Promise<SecretInfo>
  /** By id or name; NotFoundError if none. */
  static get(secret: string, opts?: ConnectionOpts & CallOpts): Promise<SecretInfo>
  /** true, or false if there was none. */
  static delete(secret: string, opts?: ConnectionOpts & CallOpts): Promise<boolean>
  static listPage(opts?: SecretsListOpts): Promise<{ items: SecretInfo[]; nextToken?: string }>
  /** Every secret (all pages), oldest first. */
  static list(opts?: ConnectionOpts & CallOpts): Promise<SecretInfo[]>
  /** The placeholder "${e2b.secrets.<name>}" (no call). */
  static fill(name: string): string
}

/** A persistent volume sandboxes mount at create (docs/volumes.md), with E2B's Volume names. */
export declare class Volume {
  /** E2B's `new Volume(volumeId, name, token, domain?)`: a volume from its
   * content token, with no API call (its file calls need only the token;
   * a wrong one rejects at the first). The 4th argument is E2B's domain or
   * this package's connection options. Volume.create() and
   * Volume.connect() make the others. */
  constructor(volumeId: string, name: string, token: string, domainOrOpts?: string | ConnectionOpts)
  readonly volumeId: string
  readonly name: string
  readonly token: string
  /** Its quota in MiB. */
  readonly sizeMB: number
  readonly domain: string | undefined
  /** A new volume (name: 1..63 of [A-Za-z0-9_-]; sizeMB: its quota, default 1024). */
  static create(name: string, opts?: ConnectionOpts & CallOpts & { sizeMB?: number }): Promise<Volume>
  /** The volume of this id or name. */
  static connect(volumeId: string, opts?: ConnectionOpts & CallOpts): Promise<Volume>
  static getInfo(volumeId: string, opts?: ConnectionOpts & CallOpts): Promise<VolumeAndToken>
  static list(opts?: ConnectionOpts & CallOpts): Promise<VolumeInfo[]>
  /** true, or false if there was none; refused while sandboxes mount it. */
  static destroy(volumeId: string, opts?: ConnectionOpts & CallOpts): Promise<boolean>
  list(path: string, opts?: VolumeApiOpts & { depth?: number }): Promise<VolumeEntryStat[]>
  makeDir(path: string, opts?: VolumeWriteOpts & VolumeApiOpts): Promise<VolumeEntryStat>
  getInfo(path: string, opts?: VolumeApiOpts): Promise<VolumeEntryStat>
  exists(path: string, opts?: VolumeApiOpts): Promise<boolean>
  updateMetadata(path: string, metadata: VolumeMetadataOpts, opts?: VolumeApiOpts): Promise<VolumeEntryStat>
  readFile(path: string, opts?: VolumeReadOpts & { format?: 'text' }): Promise<string>
  readFile(path: string, opts: VolumeReadOpts & { format: 'bytes' }): Promise<Uint8Array>
  readFile(path: string, opts: VolumeReadOpts & { format: 'blob' }): Promise<Blob>
  readFile(path: string, opts: VolumeReadOpts & { format: 'stream' }): Promise<ReadableStream<Uint8Array>>
  writeFile(path: string, data: string | ArrayBuffer | ArrayBufferView | Blob | ReadableStream<Uint8Array>, opts?: VolumeWriteOpts & VolumeApiOpts): Promise<VolumeEntryStat>
  remove(path: string, opts?: VolumeApiOpts): Promise<void>
  /** Release the handle (the volume stays). */
  close(): void
}

export interface SandboxedOpts extends ConnectionOpts {
  template?: string
  timeoutMs?: number
  envs?: Record<string, string>
  keepAlive?: boolean
  sandbox?: SandboxBase
  node?: string
  streamOutput?: boolean
  callTimeoutMs?: number
  signal?: AbortSignal
}

type Awaited2<T> = T extends PromiseLike<infer U> ? U : T
export type SandboxedFunction<A extends JsonValue[], R> = ((...args: A) => Promise<Awaited2<R>>) & {
  currentSandbox(): SandboxBase | null
  close(): Promise<void>
}

/** Run fn in a sandbox: its source and JSON arguments are shipped, its
 * result comes back; a throw there rejects with RemoteError. */
export declare function sandboxed<A extends JsonValue[], R>(fn: (...args: A) => R, options?: SandboxedOpts): SandboxedFunction<A, R>

export declare function libraryVersion(): string

export interface ErrorDetail {
  code?: string
  status?: number
  remoteCode?: string
  retryAfter?: number
  reason?: string
}

declare class DetailedError extends Error {
  constructor(message?: string, detail?: ErrorDetail)
  /** The asb_status name ("ASB_ENOTFOUND"). */
  code: string
  /** The HTTP status of the failing reply, 0 if none. */
  status: number
  statusCode?: number
  remoteCode: string
  retryAfter: number
  reason: string
}

export declare class SandboxError extends DetailedError {}
export declare class TimeoutError extends SandboxError {}
export declare class InvalidArgumentError extends SandboxError {}
export declare class NotEnoughSpaceError extends SandboxError {}
export declare class NotFoundError extends SandboxError {}
export declare class FileNotFoundError extends NotFoundError {}
export declare class SandboxNotFoundError extends NotFoundError {}
export declare class SandboxGoneError extends SandboxNotFoundError {}
export declare class TemplateError extends SandboxError {}
export declare class RateLimitError extends SandboxError {}
export declare class PermissionDeniedError extends SandboxError {}
export declare class CommandNotFoundError extends NotFoundError {}
export declare class CommandFailedError extends SandboxError {
  readonly type: string
}
export declare class OperationCancelledError extends SandboxError {}
/** A coding agent's turn that failed (AgentSession.send without check: false). */
export declare class AgentTurnError extends SandboxError {
  readonly turn: AgentTurn
}
export declare class AuthenticationError extends DetailedError {}
/** The git remote wanted credentials, or refused them; result: git's. */
export declare class GitAuthError extends AuthenticationError {
  readonly result?: CommandResult
}
/** push/pull on a branch without an upstream; result: git's. */
export declare class GitUpstreamError extends SandboxError {
  readonly result?: CommandResult
}
export declare class BuildError extends DetailedError {}
export declare class CommandExitError extends SandboxError implements CommandResult {
  constructor(result: CommandResult, detail?: ErrorDetail)
  readonly result: CommandResult
  readonly exitCode: number
  readonly error: string | undefined
  readonly stdout: string
  readonly stderr: string
}
export declare class RemoteError extends Error {
  constructor(name: string, message: string, stack?: string)
  readonly remoteName: string
  readonly remoteStack: string
}
