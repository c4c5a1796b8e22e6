// Type declarations of agent-sandbox/compat: the surface of npm `e2b` 2.x
// (docs/node-compat.md).
// SPDX-License-Identifier: Apache-2.0
import { SandboxBase, SandboxInfo, SandboxListOpts, ConnectionOpts, CallOpts, SandboxConnectOpts, SandboxMetrics } from './types'
import * as types from './types'

export {
  ConnectionOpts, SandboxOpts, SandboxConnectOpts, SandboxListOpts, SandboxInfo, SandboxState, SandboxMetrics,
  CommandResult, CommandStartOpts, CommandConnectOpts, ProcessInfo, CommandHandle, Commands, Pty,
  PtyCreateOpts, FileType, FilesystemEventType, WriteInfo, EntryInfo, FilesystemEvent, FilesystemReadOpts,
  FilesystemWriteOpts, WriteEntry, WatchOpts, WatchHandle, Files, SandboxError, TimeoutError,
  InvalidArgumentError, NotEnoughSpaceError, NotFoundError, FileNotFoundError, SandboxNotFoundError,
  AuthenticationError, TemplateError, RateLimitError, BuildError, CommandExitError,
  SandboxNetworkOpts, SandboxNetworkUpdate, SandboxNetworkInfo, SandboxNetworkSelector,
  SandboxNetworkRule, SandboxNetworkRules, SandboxNetworkTransform, SandboxEgressProxyOpts,
  Git, GitRequestOpts, GitCloneOpts, GitInitOpts, GitRemoteAddOpts, GitCommitOpts, GitAddOpts,
  GitResetMode, GitResetOpts, GitRestoreOpts, GitDeleteBranchOpts, GitPushOpts, GitPullOpts, GitConfigScope,
  GitConfigOpts, GitDangerouslyAuthenticateOpts, GitFileStatus, GitStatus, GitBranches, GitAuthError,
  GitUpstreamError, VolumeFileType, VolumeInfo, VolumeAndToken, VolumeEntryStat, VolumeApiOpts,
  VolumeMetadataOpts, VolumeWriteOpts, VolumeReadOpts
} from './types'

/** '0.0.0.0/0': denyOut [ALL_TRAFFIC] is internet off. */
export declare const ALL_TRAFFIC: '0.0.0.0/0'

export declare class SandboxPaginator {
  readonly hasNext: boolean
  readonly nextToken: string | undefined
  nextItems(opts?: ConnectionOpts & CallOpts): Promise<SandboxInfo[]>
}

/** E2B's SnapshotInfo. */
export interface SnapshotInfo {
  snapshotId: string
  names: string[]
}

/** Snapshots: the first nextItems() holds them all (docs/snapshots.md). */
export declare class SnapshotPaginator {
  readonly hasNext: boolean
  readonly nextToken: string | undefined
  nextItems(opts?: ConnectionOpts & CallOpts): Promise<SnapshotInfo[]>
}

/** E2B's `mcp` option: MCP servers by name. Here `github/<owner>/<repo>`
 * entries run (runCmd after installCmd, with envs); E2B's catalog names
 * need Docker images and fail the create (docs/mcp.md, "The gateway"). */
export type McpServer = Record<string, {
  runCmd?: string
  installCmd?: string
  envs?: Record<string, string>
  [k: string]: unknown
}>

export declare class Sandbox extends SandboxBase {
  static create<T extends SandboxBase>(this: types.SandboxClass<T>, opts?: types.SandboxOpts & { mcp?: McpServer }): Promise<T>
  static create<T extends SandboxBase>(this: types.SandboxClass<T>, template: string, opts?: types.SandboxOpts & { mcp?: McpServer }): Promise<T>
  /** https://<50005-host>/mcp: the MCP gateway of a sandbox created with mcp. */
  getMcpUrl(): string
  /** The gateway's bearer token. */
  getMcpToken(): Promise<string | undefined>
  static list(opts?: SandboxListOpts): SandboxPaginator
  static createSnapshot(sandboxId: string, opts?: ConnectionOpts & CallOpts & { name?: string }): Promise<SnapshotInfo>
  static fork(sandboxId: string, opts?: ConnectionOpts & CallOpts & { timeoutMs?: number; count?: number; keepProcesses?: boolean }): Promise<Array<Sandbox | Error>>
  static listSnapshots(opts?: ConnectionOpts & CallOpts & { sandboxId?: string; name?: string }): SnapshotPaginator
  createSnapshot(opts?: CallOpts & { name?: string }): Promise<SnapshotInfo>
  fork(opts?: CallOpts & { timeoutMs?: number; count?: number; keepProcesses?: boolean }): Promise<Array<this | Error>>
  /** Ours: a fork's 'processes' or 'files'; undefined when not a fork (docs/snapshots.md). */
  readonly forkMode: 'processes' | 'files' | undefined
  listSnapshots(opts?: CallOpts & { name?: string }): SnapshotPaginator
  static betaPause(sandboxId: string, opts?: ConnectionOpts & CallOpts): Promise<boolean>
  static getFullInfo(sandboxId: string, opts?: ConnectionOpts & CallOpts): Promise<SandboxInfo>
  readonly trafficAccessToken: string | undefined
  connect(opts?: SandboxConnectOpts): Promise<this>
  betaPause(opts?: CallOpts): Promise<boolean>
  getMetrics(opts?: CallOpts & { start?: Date; end?: Date }): Promise<Array<SandboxMetrics & { memCache?: number }>>
}

/** E2B's Volume: agent-sandbox's with E2B's errors (VolumeNotFoundError,
 * VolumePathNotFoundError, VolumeError). */
export declare class Volume extends types.Volume {}

/** E2B's volume errors (not SandboxErrors, as in E2B). */
export declare class VolumeError extends Error {
  constructor(message: string, detail?: types.ErrorDetail)
  code?: string
  status?: number
  statusCode?: number
}
export declare class VolumeNotFoundError extends VolumeError {}
export declare class VolumePathNotFoundError extends VolumeError {}

export declare class E2B {
  constructor(opts?: ConnectionOpts)
  readonly Sandbox: typeof Sandbox
  readonly Volume: typeof Volume
  /** E2B's client.Template: the builder and its statics with these options. */
  readonly Template: typeof Template
}

export declare class ServiceBusyError extends Error {
  constructor(message: string)
  readonly statusCode: 503
}
export declare class FileUploadError extends types.BuildError {}

// ---- E2B's Template builder (docs/node-compat.md, "Template builder") ----

export type LogEntryLevel = 'debug' | 'info' | 'warn' | 'error'
export declare class LogEntry {
  constructor(timestamp: Date, level: LogEntryLevel, message: string)
  readonly timestamp: Date
  readonly level: LogEntryLevel
  readonly message: string
}
export declare class LogEntryStart extends LogEntry { constructor(timestamp: Date, message: string) }
export declare class LogEntryEnd extends LogEntry { constructor(timestamp: Date, message: string) }
export declare function defaultBuildLogger(options?: { minLevel?: LogEntryLevel }): (logEntry: LogEntry) => void

export declare class ReadyCmd {
  constructor(cmd: string)
  getCmd(): string
}
export declare function waitForPort(port: number): ReadyCmd
export declare function waitForURL(url: string, statusCode?: number): ReadyCmd
export declare function waitForProcess(processName: string): ReadyCmd
export declare function waitForFile(filename: string): ReadyCmd
export declare function waitForTimeout(timeout: number): ReadyCmd

export type TemplateOptions = { fileContextPath?: string; fileIgnorePatterns?: string[] }
export type CopyItem = { src: string | string[]; dest: string; forceUpload?: true; user?: string; mode?: number; resolveSymlinks?: boolean; gzip?: boolean }
export type BuildOptions = ConnectionOpts & {
  alias?: string
  tags?: string[]
  cpuCount?: number
  memoryMB?: number
  skipCache?: boolean
  onBuildLogs?: (logEntry: LogEntry) => void
  signal?: AbortSignal
}
export type BuildInfo = { alias: string; name: string; tags: string[]; templateId: string; buildId: string }
export type TemplateBuildStatus = 'building' | 'waiting' | 'ready' | 'error'
export type BuildStatusReason = { message: string; step?: string; logEntries: LogEntry[] }
export type TemplateBuildStatusResponse = {
  buildID: string
  templateID: string
  status: TemplateBuildStatus
  logEntries: LogEntry[]
  logs: string[]
  reason?: BuildStatusReason
}
export type TemplateTagInfo = { buildId: string; tags: string[] }
export type TemplateTag = { tag: string; buildId: string; createdAt: Date }

/** The steps of a template (each returns the builder, so calls chain). */
export interface TemplateBuilder {
  copy(src: string | string[], dest: string, options?: { forceUpload?: true; user?: string; mode?: number; resolveSymlinks?: boolean; gzip?: boolean }): TemplateBuilder
  copyItems(items: CopyItem[]): TemplateBuilder
  remove(path: string | string[], options?: { force?: boolean; recursive?: boolean; user?: string }): TemplateBuilder
  rename(src: string, dest: string, options?: { force?: boolean; user?: string }): TemplateBuilder
  makeDir(path: string | string[], options?: { mode?: number; user?: string }): TemplateBuilder
  makeSymlink(src: string, dest: string, options?: { user?: string; force?: boolean }): TemplateBuilder
  runCmd(command: string | string[], options?: { user?: string }): TemplateBuilder
  setWorkdir(workdir: string): TemplateBuilder
  setUser(user: string): TemplateBuilder
  pipInstall(packages?: string | string[], options?: { g?: boolean }): TemplateBuilder
  npmInstall(packages?: string | string[], options?: { g?: boolean; dev?: boolean }): TemplateBuilder
  bunInstall(packages?: string | string[], options?: { g?: boolean; dev?: boolean }): TemplateBuilder
  aptInstall(packages: string | string[], options?: { noInstallRecommends?: boolean; fixMissing?: boolean }): TemplateBuilder
  addMcpServer(servers: string | string[]): TemplateBuilder
  gitClone(url: string, path?: string, options?: { branch?: string; depth?: number; user?: string }): TemplateBuilder
  setEnvs(envs: Record<string, string>): TemplateBuilder
  skipCache(): this
  setStartCmd(startCommand: string, readyCommand: string | ReadyCmd): TemplateFinal
  setReadyCmd(readyCommand: string | ReadyCmd): TemplateFinal
  betaDevContainerPrebuild(devcontainerDirectory: string): TemplateBuilder
  betaSetDevContainerStart(devcontainerDirectory: string): TemplateFinal
}
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface TemplateFinal {}
export type TemplateClass = TemplateBuilder | TemplateFinal

/** A template's base (pick one; every from* returns the builder). */
export interface TemplateFromImage {
  fromDebianImage(variant?: string): TemplateBuilder
  fromUbuntuImage(variant?: string): TemplateBuilder
  fromFedoraImage(variant?: string): TemplateBuilder
  fromAlpineImage(variant?: string): TemplateBuilder
  fromArchImage(variant?: string): TemplateBuilder
  fromPythonImage(version?: string): TemplateBuilder
  fromNodeImage(variant?: string): TemplateBuilder
  fromBunImage(variant?: string): TemplateBuilder
  /** E2B's e2bdev/base: here the `base` template. */
  fromBaseImage(): TemplateBuilder
  /** A local image (`oci:/dir[:name]`, `docker-archive:/file.tar`); registry images are refused at build. */
  fromImage(baseImage: string, credentials?: { username: string; password: string }): TemplateBuilder
  fromTemplate(template: string): TemplateBuilder
  fromDockerfile(dockerfileContentOrPath: string): TemplateBuilder
  fromAWSRegistry(image: string, credentials: { accessKeyId: string; secretAccessKey: string; region: string }): TemplateBuilder
  fromGCPRegistry(image: string, credentials: { serviceAccountJSON: object | string }): TemplateBuilder
  skipCache(): this
}

/** Its instance side is TemplateFromImage's and TemplateBuilder's (declaration
 * merging: one declaration of each step). */
export interface TemplateBase extends TemplateFromImage, TemplateBuilder, TemplateFinal {}
export declare class TemplateBase {
  constructor(options?: TemplateOptions)
  protected static resolveOpts<T extends object>(opts?: T): T
  static toJSON(template: TemplateClass, computeHashes?: boolean): Promise<string>
  static toDockerfile(template: TemplateClass): string
  static build(template: TemplateClass, name: string, options?: Omit<BuildOptions, 'alias'>): Promise<BuildInfo>
  /** @deprecated the name as the second argument */
  static build(template: TemplateClass, options: BuildOptions): Promise<BuildInfo>
  static buildInBackground(template: TemplateClass, name: string, options?: Omit<BuildOptions, 'alias'>): Promise<BuildInfo>
  static buildInBackground(template: TemplateClass, options: BuildOptions): Promise<BuildInfo>
  static getBuildStatus(data: Pick<BuildInfo, 'templateId' | 'buildId'>, options?: ConnectionOpts & { logsOffset?: number; signal?: AbortSignal }): Promise<TemplateBuildStatusResponse>
  static exists(name: string, options?: ConnectionOpts): Promise<boolean>
  static aliasExists(alias: string, options?: ConnectionOpts): Promise<boolean>
  static assignTags(targetName: string, tags: string | string[], options?: ConnectionOpts): Promise<TemplateTagInfo>
  static removeTags(name: string, tags: string | string[], options?: ConnectionOpts): Promise<void>
  static getTags(templateId: string, options?: ConnectionOpts): Promise<TemplateTag[]>
}

/** E2B's Template: TemplateBase, also callable as a factory (Template(opts)). */
export declare const Template: typeof TemplateBase & ((options?: TemplateOptions) => TemplateFromImage)

/** require(): the default export is Sandbox (as in e2b's CommonJS build). */
export default Sandbox
