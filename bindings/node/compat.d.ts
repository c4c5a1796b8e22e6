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
  static fork(sandboxId: string, opts?: ConnectionOpts & CallOpts & { timeoutMs?: number; count?: number }): Promise<Array<Sandbox | Error>>
  static listSnapshots(opts?: ConnectionOpts & CallOpts & { sandboxId?: string; name?: string }): SnapshotPaginator
  createSnapshot(opts?: CallOpts & { name?: string }): Promise<SnapshotInfo>
  fork(opts?: CallOpts & { timeoutMs?: number; count?: number }): Promise<Array<this | Error>>
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
}

export declare class ServiceBusyError extends Error {
  constructor(message: string)
  readonly statusCode: 503
}
export declare class FileUploadError extends types.BuildError {}

/** require(): the default export is Sandbox (as in e2b's CommonJS build). */
export default Sandbox
